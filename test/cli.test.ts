// The README contract, as a new user meets it: `start` prints where the card is and a curl
// line that works as printed; a missing Redis or a bad setting is one clear line and exit 1.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { nodeEntryArgs } from './support/compiled-sources.ts';
import { deletePrefix, REDIS_URL, ROOT, uniquePrefix } from './support/harness.ts';

const execFileAsync = promisify(execFile);

function runCli(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [...nodeEntryArgs('src/cli/main.ts'), ...args], { cwd: ROOT, env: { ...process.env, ...env }, timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr });
    });
  });
}

describe('a2a-gateway start', () => {
  const prefix = uniquePrefix('cli');
  let child: ChildProcess | undefined;

  afterAll(async () => {
    child?.kill('SIGTERM');
    const redis = new Redis(REDIS_URL);
    await deletePrefix(redis, prefix);
    await redis.quit();
  });

  it('prints the agent card URL and a curl line that works as printed', async () => {
    child = spawn(process.execPath, [...nodeEntryArgs('src/cli/main.ts'), 'start'], {
      cwd: ROOT,
      env: { ...process.env, A2A_PORT: '0', A2A_KEY_PREFIX: prefix, A2A_REDIS_URL: REDIS_URL, A2A_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    await new Promise<void>((resolve, reject) => {
      child?.stdout?.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes("-d '{")) resolve();
      });
      child?.once('exit', (code) => reject(new Error(`start exited with ${code}: ${out}`)));
      setTimeout(() => reject(new Error(`no banner after 30 s: ${out}`)), 30_000).unref();
    });
    // The development issuer is announced loudly, in the banner (and as a WARN log line).
    expect(out).toMatch(/WARNING: no token issuer is configured; the development issuer is for local use only/);
    const cardUrl = /agent card: (\S+)/.exec(out)?.[1];
    expect(cardUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\.well-known\/agent-card\.json$/);
    const card = (await (await fetch(cardUrl as string)).json()) as { supportedInterfaces: { url: string }[] };
    expect(card.supportedInterfaces[0]?.url).toBe(/JSON-RPC:\s+(\S+)/.exec(out)?.[1]);

    // Run the printed curl line through a shell, exactly as a user would paste it.
    const curlLines = out.split('\n').filter((line) => line.trim().startsWith('curl') || line.trim().startsWith('-d'));
    const command = curlLines.map((line) => line.trim().replace(/\\$/, '')).join(' ');
    const { stdout } = await execFileAsync('bash', ['-c', command], { timeout: 30_000 });
    const reply = JSON.parse(stdout) as { result?: { task?: { status: { state: string }; artifacts?: { parts: { text?: string }[] }[] } } };
    expect(reply.result?.task?.status.state).toBe('TASK_STATE_COMPLETED');
    expect(reply.result?.task?.artifacts?.[0]?.parts[0]?.text).toBe('hello');

    // The console line: its URL serves the console, and the operator token printed under it is
    // an operator token that lists every owner's tasks (the curl line's task among them), which
    // the curl line's own token may not.
    const consoleLine = out.split('\n').findIndex((line) => line.trim().startsWith('console:'));
    const consoleUrl = /console:\s+(\S+?),?\s/.exec(`${out.split('\n')[consoleLine] ?? ''} `)?.[1];
    const operatorToken = out.split('\n')[consoleLine + 1]?.trim() ?? '';
    expect(consoleUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/console\/$/);
    const page = await fetch(consoleUrl as string);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('operator console');
    const listUrl = `${(consoleUrl as string).replace(/\/console\/$/, '')}/a2a/rest/operator/tasks`;
    const headers = { 'A2A-Version': '1.0' };
    const owners = async (): Promise<string[]> => {
      const listed = await fetch(listUrl, { headers: { ...headers, Authorization: `Bearer ${operatorToken}` } });
      expect(listed.status).toBe(200);
      return ((await listed.json()) as { tasks: { owner: string }[] }).tasks.map((task) => task.owner);
    };
    // The index is written within console.recentTasksFlushMs of the task's change.
    await expect.poll(owners, { timeout: 10_000 }).toEqual(expect.arrayContaining([expect.stringMatching(/quickstart$/)]));
    const curlToken = /Authorization: Bearer ([^']+)'/.exec(out)?.[1];
    const refused = await fetch(listUrl, { headers: { ...headers, Authorization: `Bearer ${curlToken}` } });
    expect(refused.status).toBe(403);

    // The operator token is short-lived (the banner lands in logs) and holds what the console
    // and the platform-wide surfaces need; the line under it mints another, as printed.
    const claims = JSON.parse(Buffer.from(operatorToken.split('.')[1] ?? '', 'base64url').toString('utf8')) as { scope: string; exp: number; iat: number };
    expect(claims.scope).toBe('a2a:admin a2a:platform');
    expect(claims.exp - claims.iat).toBe(900);
    expect(out.split('\n')[consoleLine]).toContain('15 min');
    const base = (consoleUrl as string).replace(/\/console\/$/, '');
    expect((await fetch(`${base}/admin/queues/api/queues`, { headers: { Authorization: `Bearer ${operatorToken}` } })).status).toBe(200);
    const mintLine = out.split('\n')[consoleLine + 2]?.trim() ?? '';
    expect(mintLine).toMatch(/^another: npm run -s token -- /);
    const { stdout: minted } = await execFileAsync('bash', ['-c', mintLine.replace(/^another: /, '')], { cwd: ROOT, timeout: 60_000 });
    const mintedClaims = JSON.parse(Buffer.from(minted.trim().split('.')[1] ?? '', 'base64url').toString('utf8')) as { scope: string; exp: number; iat: number };
    expect(mintedClaims).toMatchObject({ scope: 'a2a:admin a2a:platform' });
    expect(mintedClaims.exp - mintedClaims.iat).toBe(900);
    expect((await fetch(listUrl, { headers: { ...headers, Authorization: `Bearer ${minted.trim()}` } })).status).toBe(200);
  });
});

describe('a2a-gateway refuses to start with one clear line', () => {
  it('when Redis is not reachable', async () => {
    const { code, stdout, stderr } = await runCli(['start'], { A2A_REDIS_URL: 'redis://127.0.0.1:1', A2A_PORT: '0' });
    expect(code).toBe(1);
    expect(stdout).toBe('');
    const lines = stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/Redis is not reachable at redis:\/\/127\.0\.0\.1:1 .*A2A_REDIS_URL/);
  });

  it('when a setting is invalid, naming the variable (and once more as a structured line for the log pipeline)', async () => {
    const { code, stderr } = await runCli(['start'], { A2A_PORT: 'eighty', A2A_REDIS_URL: REDIS_URL });
    expect(code).toBe(1);
    const [plain, structured, ...rest] = stderr.trim().split('\n');
    expect(rest).toEqual([]);
    expect(plain).toMatch(/^a2a-gateway: .*A2A_PORT/);
    expect(JSON.parse(structured ?? '')).toMatchObject({ level: 50, msg: 'configuration rejected', failure: 'config-rejected', stage: 'settings', cause: expect.stringContaining('A2A_PORT') });
  });

  it('when production mode would run on the development issuer, naming the fix', async () => {
    for (const env of [{ NODE_ENV: 'production' }, { A2A_PRODUCTION: 'true' }] as Record<string, string>[]) {
      const { code, stdout, stderr } = await runCli(['serve'], { ...env, A2A_PORT: '0', A2A_REDIS_URL: REDIS_URL, A2A_LOG_LEVEL: 'warn', A2A_KEY_PREFIX: uniquePrefix('cli-prod') });
      expect(code).toBe(1);
      expect(stdout).toBe('');
      const lines = stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/refusing to start: production mode .* no token issuer is configured.*configure auth\.issuers/);
    }
  });

  it('when the command is unknown', async () => {
    const { code, stderr } = await runCli(['launch'], {});
    expect(code).toBe(1);
    expect(stderr).toContain('unknown command "launch"');
  });
});
