// What `npm pack` ships, installed the way a user installs it: into an empty project outside the
// repository, production dependencies only (no tsx, no TypeScript). Its `a2a-gateway` command
// starts a gateway from the compiled JavaScript, a TypeScript adapter written against the
// package's exported types compiles with `tsc --strict`, and a TypeScript adapter module without
// tsx installed stops the start with a line naming the fix. Also, in the checkout: `npm start`'s
// only process is the gateway, so stopping npm stops the gateway.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeEntryArgs } from './support/compiled-sources.ts';
import { REDIS_URL, ROOT, rpc, textMessage, uniquePrefix, waitFor } from './support/harness.ts';
import { freePort } from './support/redis-server.ts';

const run = promisify(execFile);
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
let project: string;
let dataDir: string;
const children: ChildProcess[] = [];

const ADAPTER = `import type { Adapter, AdapterContext, TurnOutcome } from 'a2a-gateway/adapter';
import { runTestTurn } from 'a2a-gateway/adapter/testing';

export function createAdapter(): Adapter {
  return {
    name: 'count',
    version: '1.0.0',
    skills: [{ id: 'count', name: 'Count', description: 'Counts characters.', tags: ['example'] }],
    async run(ctx: AdapterContext): Promise<TurnOutcome> {
      const text = ctx.input.flatMap((message) => message.parts).map((part) => part.text ?? '').join('');
      return { state: 'completed', message: String(text.length) };
    },
  };
}

export const check: typeof runTestTurn = runTestTurn;
`;

function startCommand(command: string, args: string[], env: Record<string, string>, cwd: string): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const child = spawn(command, args, { cwd, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? tmpdir(), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

const readyStatus = (port: number): Promise<number | 'refused'> =>
  fetch(`http://127.0.0.1:${port}/readyz`).then((response) => response.status, () => 'refused' as const);

beforeAll(async () => {
  // The package ships dist/: build it when a source changed since the last build (npm ci built it).
  await run(process.execPath, [join(ROOT, 'tools/build/build.mjs'), '--if-stale'], { cwd: ROOT, timeout: 240_000 });
  project = mkdtempSync(join(tmpdir(), 'a2a-package-'));
  dataDir = mkdtempSync(join(tmpdir(), 'a2a-package-data-'));
  const packed = await run(npm, ['pack', '--ignore-scripts', '--json', '--pack-destination', project], { cwd: ROOT, timeout: 120_000 });
  const [{ filename }] = JSON.parse(packed.stdout) as [{ filename: string }];
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'my-gateway', type: 'module', private: true }));
  await run(npm, ['install', '--omit=dev', '--no-audit', '--no-fund', '--prefer-offline', '--save-exact', join(project, filename)], { cwd: project, timeout: 240_000 });
}, 600_000);

afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  if (project !== undefined) rmSync(project, { recursive: true, force: true });
  if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
});

describe('the packed package, installed into an empty project', () => {
  it('ships compiled JavaScript with types, and installs without tsx or TypeScript', () => {
    const installed = join(project, 'node_modules', 'a2a-gateway');
    expect(existsSync(join(installed, 'dist/src/cli/main.js'))).toBe(true);
    expect(existsSync(join(installed, 'dist/adapters/types.d.ts'))).toBe(true);
    expect(existsSync(join(installed, 'src')), 'the TypeScript sources stay in the repository').toBe(false);
    expect(existsSync(join(project, 'node_modules', 'tsx'))).toBe(false);
    expect(existsSync(join(project, 'node_modules', 'typescript'))).toBe(false);
  });

  it('starts a gateway with its a2a-gateway command', async () => {
    const port = await freePort();
    const started = Date.now();
    const gateway = startCommand(join(project, 'node_modules', '.bin', 'a2a-gateway'), ['start'], { A2A_REDIS_URL: REDIS_URL, A2A_PORT: String(port), A2A_KEY_PREFIX: uniquePrefix('package'), A2A_DATA_DIR: dataDir }, project);
    await waitFor(async () => (await readyStatus(port)) === 200 || (gateway.child.exitCode !== null ? Promise.reject(new Error(gateway.output())) : undefined), 60_000, 'the installed gateway to be ready');
    // Reported, not asserted: the time depends on the machine's load.
    console.info(`installed package: /readyz 200 after ${Date.now() - started} ms`);
    expect(gateway.output()).toContain('agent card: http://127.0.0.1:');
    gateway.child.kill('SIGTERM');
    expect(await gateway.exited).toBe(0);
  });

  it('compiles a TypeScript adapter written against its exported types with tsc --strict', async () => {
    // One tsc run checks both a correct adapter and a wrong use of the types (a second run would
    // pay the compiler's start and the package's types again): the correct one must have no
    // diagnostic, the wrong one must have one, so the check is real.
    writeFileSync(join(project, 'count-adapter.ts'), ADAPTER);
    writeFileSync(join(project, 'wrong-adapter.ts'), ADAPTER.replace("state: 'completed'", "state: 'finished'"));
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, types: [] }, files: ['count-adapter.ts', 'wrong-adapter.ts'] }),
    );
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const failed = await run(process.execPath, [tsc, '--strict', '-p', project], { cwd: project, timeout: 120_000 }).then(
      () => ({ stdout: '' }),
      (error: { stdout: string }) => error,
    );
    const diagnostics = failed.stdout.split('\n').filter((line) => /error TS\d+/.test(line));
    expect(diagnostics.length, failed.stdout).toBeGreaterThan(0);
    expect(diagnostics.filter((line) => !line.startsWith('wrong-adapter.ts(')), failed.stdout).toEqual([]);
    expect(failed.stdout).toContain('wrong-adapter.ts');
  });

  it('refuses a TypeScript adapter module when tsx is not installed, naming the fix', async () => {
    writeFileSync(join(project, 'count-adapter.ts'), ADAPTER);
    const gateway = startCommand(
      join(project, 'node_modules', '.bin', 'a2a-gateway'),
      ['start'],
      { A2A_REDIS_URL: REDIS_URL, A2A_PORT: '0', A2A_KEY_PREFIX: uniquePrefix('package-ts'), A2A_DATA_DIR: dataDir, A2A_ADAPTER: join(project, 'count-adapter.ts') },
      project,
    );
    expect(await gateway.exited).toBe(1);
    expect(gateway.output()).toMatch(/count-adapter\.ts is TypeScript, and loading it needs tsx.*npm install --save-exact tsx.*compile the adapter to JavaScript/s);
  });
});

describe('npm start in the checkout', () => {
  it('runs the gateway as npm\'s own child, so stopping npm stops the gateway', async () => {
    const port = await freePort();
    const npmStart = startCommand(npm, ['start'], { A2A_REDIS_URL: REDIS_URL, A2A_PORT: String(port), A2A_KEY_PREFIX: uniquePrefix('npm-start'), A2A_DATA_DIR: dataDir }, ROOT);
    await waitFor(async () => (await readyStatus(port)) === 200 || (npmStart.child.exitCode !== null ? Promise.reject(new Error(npmStart.output())) : undefined), 120_000, 'npm start to be ready');
    const script = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.start ?? '';
    expect(script).toMatch(/exec node bin\/a2a-gateway\.js start$/);
    npmStart.child.kill('SIGTERM');
    await npmStart.exited;
    // The gateway drained and exited: nothing listens on its port any more.
    await waitFor(async () => (await readyStatus(port)) === 'refused', 40_000, 'the gateway to stop after npm was stopped');
    expect(npmStart.output()).toContain('"msg":"shutting down"');
  });

  it('loads a TypeScript adapter module in the compiled gateway, registering tsx only for it', async () => {
    const adapterDir = mkdtempSync(join(tmpdir(), 'a2a-ts-adapter-'));
    try {
      // An adapter's own project is an ES module one, as the package is.
      writeFileSync(join(adapterDir, 'package.json'), JSON.stringify({ name: 'count-adapter', type: 'module', private: true }));
      writeFileSync(join(adapterDir, 'count-adapter.ts'), ADAPTER.replace(/^import \{ runTestTurn \}.*$/m, '').replace(/^export const check.*$/m, '').replace("from 'a2a-gateway/adapter'", `from '${join(ROOT, 'adapters/types.ts')}'`));
      const port = await freePort();
      const gateway = startCommand(
        process.execPath,
        [...nodeEntryArgs('src/cli/main.ts'), 'start'],
        { A2A_REDIS_URL: REDIS_URL, A2A_PORT: String(port), A2A_KEY_PREFIX: uniquePrefix('ts-adapter'), A2A_DATA_DIR: dataDir, A2A_AUTH_ENABLED: 'false', A2A_ADAPTER: join(adapterDir, 'count-adapter.ts') },
        ROOT,
      );
      await waitFor(async () => (await readyStatus(port)) === 200 || (gateway.child.exitCode !== null ? Promise.reject(new Error(gateway.output())) : undefined), 60_000, 'the gateway with a TypeScript adapter');
      const { body } = await rpc(`http://127.0.0.1:${port}/a2a/jsonrpc`, 'SendMessage', { message: textMessage('four') });
      expect((body.result as { task: { status: { state: string; message: { parts: { text: string }[] } } } }).task.status).toMatchObject({ state: 'TASK_STATE_COMPLETED', message: { parts: [{ text: '4' }] } });
      gateway.child.kill('SIGTERM');
      expect(await gateway.exited).toBe(0);
    } finally {
      rmSync(adapterDir, { recursive: true, force: true });
    }
  });
});
