// The README's examples, run as a newcomer would paste them, against `a2a-gateway start` (the
// `npm start` of the quick start): the curl block through a shell, and the official client
// snippet as an ES module. Only the address changes, to the free port the gateway got.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deletePrefix, REDIS_URL, ROOT, uniquePrefix } from './support/harness.ts';

const README_ADDRESS = 'http://127.0.0.1:8080';
const prefix = uniquePrefix('readme');
let dataDir: string;
let child: ChildProcess | undefined;
let address = '';

/** The first fenced block of a language in the README section under a heading. */
function readmeBlock(heading: string, language: string): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf(`\n## ${heading}\n`);
  expect(start, `README has a "${heading}" section`).toBeGreaterThan(-1);
  const section = readme.slice(start + 1).split(/\n## /)[0] as string;
  const block = new RegExp('```' + language + '\\n([\\s\\S]*?)\\n```').exec(section)?.[1];
  expect(block, `the "${heading}" section has a ${language} block`).toBeDefined();
  return block as string;
}

/** Runs a command in the repository with the gateway's data directory (where the development issuer's key is). */
function run(program: string, args: string[], options: { input?: string; env?: Record<string, string> } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const started = execFile(
      program,
      args,
      { cwd: ROOT, env: { ...process.env, A2A_DATA_DIR: dataDir, A2A_KEY_PREFIX: prefix, A2A_REDIS_URL: REDIS_URL, ...options.env }, timeout: 60_000 },
      (error, stdout, stderr) => (error === null ? resolve(stdout) : reject(new Error(`${error.message}\n${stderr}`))),
    );
    if (options.input !== undefined) started.stdin?.end(options.input);
  });
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'a2a-readme-'));
  child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'start'], {
    cwd: ROOT,
    env: { ...process.env, A2A_PORT: '0', A2A_KEY_PREFIX: prefix, A2A_REDIS_URL: REDIS_URL, A2A_DATA_DIR: dataDir, A2A_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  address = await new Promise<string>((resolve, reject) => {
    child?.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const found = /agent card: (http:\/\/127\.0\.0\.1:\d+)\//.exec(out);
      if (found !== null) resolve(found[1] as string);
    });
    child?.once('exit', (code) => reject(new Error(`start exited with ${code}: ${out}`)));
    setTimeout(() => reject(new Error(`no banner after 60 s: ${out}`)), 60_000).unref();
  });
}, 90_000);

afterAll(async () => {
  child?.kill('SIGTERM');
  if (child !== undefined && child.exitCode === null) await new Promise((resolve) => child?.once('exit', resolve));
  const redis = new Redis(REDIS_URL);
  await deletePrefix(redis, prefix);
  await redis.quit();
  if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
});

describe('the README, as written', () => {
  it('its curl example mints a token and completes a task', async () => {
    const script = readmeBlock('Try it with curl', 'sh');
    expect(script).toContain(README_ADDRESS);
    const stdout = await run('bash', ['-c', `set -e\n${script.replaceAll(README_ADDRESS, address)}`]);
    const reply = JSON.parse(stdout) as { result?: { task?: { status: { state: string }; artifacts?: { parts: { text?: string }[] }[] } } };
    expect(reply.result?.task?.status.state).toBe('TASK_STATE_COMPLETED');
    expect(reply.result?.task?.artifacts?.[0]?.parts[0]?.text).toBe('hello');
  });

  it('its official client snippet runs and gets the completed task', async () => {
    const snippet = readmeBlock('The official client', 'js');
    expect(snippet).toContain(README_ADDRESS);
    const token = (await run(process.execPath, ['--import', 'tsx', 'src/cli/token.ts', '--sub', 'alice'])).trim();
    const stdout = await run(process.execPath, ['--input-type=module'], { input: snippet.replaceAll(README_ADDRESS, address), env: { TOKEN: token } });
    const task = JSON.parse(stdout) as { status: { state: string }; artifacts: { parts: { text?: string }[] }[] };
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(task.artifacts[0]?.parts[0]?.text).toBe('hello');
  });
});
