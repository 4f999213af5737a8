// npm run abuse: replays the pre-authentication attacks of the "Hardening" issue against a real
// gateway and worker (separate processes, their own redis-server), on loopback only, bounded in
// time (about two minutes) and connections, and prints what an ordinary user saw meanwhile:
//
//   1  slow bodies: 1,000 connections without credentials, each trickling a 1 MB body
//   2  parse before authenticate: 15 structurally heavy 1 MB bodies a second, no credentials
//      (2b: the same with a valid token, which meets the JSON bounds instead)
//   4  subscribers that never read, three with a 1 MB JSON-RPC id
//   12 a hung Redis (SIGSTOP for 6 s)
//
// The victim calls GetTask over one keep-alive connection about 20 times a second. For attacks
// 1, 2 and 4 its p99 must stay within 5x its quiet p99 (ABUSE_P99_FACTOR); for 12, whose
// victim needs the Redis that hangs, every call must be answered (503) rather than hang, and
// /readyz must say not-ready within a second. Exit status 1 if any of that fails. Attack 2b is
// reported but not judged: it needs a valid token, which is rate-limited per principal.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { loadDevIssuer } from '../src/auth/dev-issuer.ts';
import { startOwnRedis } from '../test/support/redis-server.ts';
import { sampleProcess, startRole, type RoleProcess } from './processes.ts';
import { percentile, Victim } from './victim.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const P99_FACTOR = Number(process.env.ABUSE_P99_FACTOR ?? 5);
const ATTACKER_ADDRESS = '127.0.0.2';

interface Row {
  attack: string;
  p50: number;
  p99: number;
  errors: string;
  rssMb: number;
  fds: number;
  pingMs: string;
  seen: string;
  verdict: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function runAttacker(name: string, options: Record<string, unknown>): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', join(ROOT, 'abuse/attacker.ts'), name, JSON.stringify(options)],
      { cwd: ROOT, timeout: 120_000, maxBuffer: 1 << 20 },
      (error, stdout, stderr) => {
        if (error !== null) reject(new Error(`attacker ${name} failed: ${stderr || error.message}`));
        else resolve(JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as Record<string, unknown>);
      },
    );
  });
}

/** Samples the gateway's memory and descriptors and Redis' PING latency while `during` runs. */
async function observe<T>(gateway: RoleProcess, redis: Redis, during: () => Promise<T>): Promise<{ result: T; rssMb: number; fds: number; pingMs: number | 'timeout' }> {
  let rssMb = 0;
  let fds = 0;
  let pingMs: number | 'timeout' = 0;
  let running = true;
  const sampler = (async () => {
    while (running) {
      const sample = sampleProcess(gateway.pid);
      rssMb = Math.max(rssMb, sample.rssMb);
      fds = Math.max(fds, sample.fds);
      const started = performance.now();
      const answered = await Promise.race([redis.ping().then(() => true, () => false), sleep(1_000).then(() => false)]);
      if (!answered) pingMs = 'timeout';
      else if (pingMs !== 'timeout') pingMs = Math.max(pingMs, Math.round(performance.now() - started));
      await sleep(250);
    }
  })();
  const result = await during();
  running = false;
  await sampler;
  return { result, rssMb, fds, pingMs };
}

const ms = (value: number): number => Math.round(value * 10) / 10;

async function main(): Promise<void> {
  const started = Date.now();
  const redisServer = await startOwnRedis();
  const dataDir = mkdtempSync(join(tmpdir(), 'a2a-abuse-'));
  const env = {
    A2A_REDIS_URL: redisServer.url,
    A2A_KEY_PREFIX: 'abuse',
    A2A_PORT: '0',
    A2A_DATA_DIR: dataDir,
    A2A_LOG_LEVEL: 'error',
    A2A_CARD_SIGNING: 'false',
    // The chatty tasks of attack 4 emit an event every 2 ms.
    A2A_ADAPTER_OPTIONS: '{"stepMs":2}',
  };
  const processes: RoleProcess[] = [];
  const redis = new Redis(redisServer.url, { maxRetriesPerRequest: 0, enableOfflineQueue: false });
  redis.on('error', () => undefined);
  const rows: Row[] = [];
  try {
    const gateway = await startRole(ROOT, 'serve', env);
    processes.push(gateway);
    processes.push(await startRole(ROOT, 'worker', env));
    const issuer = await loadDevIssuer(dataDir);
    const victimToken = await issuer.mint({ sub: 'victim', ttlSeconds: 3600 });
    const attackerToken = await issuer.mint({ sub: 'attacker', ttlSeconds: 3600 });
    const headers = { 'Content-Type': 'application/json', 'A2A-Version': '1.0' };
    const send = async (token: string, text: string, immediately = false): Promise<string> => {
      const response = await fetch(`${gateway.url}/a2a/rest/message:send`, {
        method: 'POST',
        headers: { ...headers, Authorization: `Bearer ${token}` },
        body: JSON.stringify({ message: { messageId: `m-${Date.now()}-${Math.random()}`, role: 'ROLE_USER', parts: [{ text }] }, configuration: { returnImmediately: immediately } }),
      });
      return ((await response.json()) as { task: { id: string } }).task.id;
    };
    const victimTask = await send(victimToken, 'echo the victim\'s task');
    const victim = new Victim(`${gateway.url}/a2a/rest/tasks/${victimTask}`, victimToken);
    victim.start();
    await sleep(2_000);
    victim.take(); // warm-up

    const phase = async (attack: string, run: () => Promise<string>, check: (p99: number, errors: number, calls: number) => string): Promise<void> => {
      process.stderr.write(`abuse: ${attack} …\n`);
      const observed = await observe(gateway, redis, run);
      const window = victim.take();
      const p99 = percentile(window.latenciesMs, 99);
      rows.push({
        attack,
        p50: ms(percentile(window.latenciesMs, 50)),
        p99: ms(p99),
        errors: `${window.errors}/${window.latenciesMs.length}`,
        rssMb: observed.rssMb,
        fds: observed.fds,
        pingMs: String(observed.pingMs),
        seen: observed.result,
        verdict: check(p99, window.errors, window.latenciesMs.length),
      });
      await sleep(2_000);
      victim.take();
    };

    let quietP99 = Number.NaN;
    await phase(
      'quiet',
      async () => {
        await sleep(12_000);
        return '';
      },
      (p99, errors) => {
        quietP99 = p99;
        return errors === 0 ? 'baseline' : 'FAIL: errors without an attack';
      },
    );
    const withinFactor = (p99: number, errors: number): string =>
      errors > 0 ? `FAIL: ${errors} victim errors` : p99 <= P99_FACTOR * Math.max(quietP99, 1) ? `ok (≤ ${P99_FACTOR}× quiet)` : `FAIL: p99 > ${P99_FACTOR}× quiet`;
    const summary = (result: Record<string, unknown>): string =>
      Object.entries(result)
        .map(([key, value]) => `${key} ${String(value)}`)
        .join(', ');

    await phase('1 slow bodies (1,000 conns, no credentials)', async () => {
      const [result, fresh] = await Promise.all([
        runAttacker('slow-bodies', { url: gateway.url, durationMs: 20_000, localAddress: ATTACKER_ADDRESS, connections: 1000 }),
        // Someone else opening a new connection meanwhile.
        (async () => {
          await sleep(10_000);
          const response = await fetch(`${gateway.url}/healthz`).catch(() => undefined);
          return response?.status ?? 0;
        })(),
      ]);
      return `${summary(result)}; a new connection's /healthz: ${fresh}`;
    }, withinFactor);

    await phase('2 heavy 1 MB bodies, 15/s, no credentials', async () => summary(await runAttacker('heavy-bodies', { url: gateway.url, durationMs: 15_000, localAddress: ATTACKER_ADDRESS, perSecond: 15 })), withinFactor);

    // Not one of the attacks (those need no credentials): reported, not judged.
    await phase(
      '2b the same with a valid token',
      async () => summary(await runAttacker('heavy-bodies', { url: gateway.url, durationMs: 15_000, localAddress: ATTACKER_ADDRESS, perSecond: 15, token: attackerToken })),
      (p99, errors) => `info: p99 ${ms(p99 / Math.max(quietP99, 1))}× quiet, ${errors} errors`,
    );

    const chatty = await Promise.all([1, 2, 3].map(() => send(attackerToken, 'long 100000', true)));
    await phase(
      '4 subscribers that never read (3 with a 1 MB id)',
      async () => summary(await runAttacker('slow-subscribers', { url: gateway.url, durationMs: 15_000, localAddress: ATTACKER_ADDRESS, token: attackerToken, taskIds: chatty })),
      withinFactor,
    );
    for (const taskId of chatty) {
      await fetch(`${gateway.url}/a2a/rest/tasks/${taskId}:cancel`, { method: 'POST', headers: { 'A2A-Version': '1.0', Authorization: `Bearer ${attackerToken}` } });
    }

    await phase(
      '12 Redis hung (SIGSTOP 6 s)',
      async () => {
        redisServer.pause();
        let readyMs = 0;
        let readyStatus = 0;
        try {
          await sleep(1_000);
          const readyStarted = performance.now();
          readyStatus = (await fetch(`${gateway.url}/readyz`, { signal: AbortSignal.timeout(5_000) }).catch(() => undefined))?.status ?? 0;
          readyMs = Math.round(performance.now() - readyStarted);
          await sleep(5_000);
        } finally {
          redisServer.resume();
        }
        await sleep(3_000);
        const after = (await fetch(`${gateway.url}/readyz`).catch(() => undefined))?.status ?? 0;
        return `/readyz while hung: ${readyStatus} in ${readyMs} ms; after SIGCONT: ${after}`;
      },
      (p99, errors, calls) => {
        const hung = calls === 0 || p99 > 15_000;
        return hung ? 'FAIL: victim calls hung' : `ok (every call answered; ${errors} got 503 while Redis was stopped)`;
      },
    );
    victim.take();
    await victim.stop();
  } finally {
    for (const role of processes.reverse()) await role.stop();
    redis.disconnect();
    await redisServer.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
  printTable(rows);
  process.stdout.write(`\n(${Math.round((Date.now() - started) / 1000)} s; victim: GetTask over one keep-alive connection, ~20/s; RSS and fds: the gateway process's maximum)\n`);
  if (rows.some((row) => row.verdict.startsWith('FAIL'))) process.exitCode = 1;
}

function printTable(rows: Row[]): void {
  const header = ['attack', 'victim p50 ms', 'victim p99 ms', 'victim errors', 'gateway RSS MB', 'gateway fds', 'Redis PING ms', 'verdict'];
  const cells = rows.map((row) => [row.attack, String(row.p50), String(row.p99), row.errors, String(row.rssMb), String(row.fds), row.pingMs, row.verdict]);
  const widths = header.map((title, i) => Math.max(title.length, ...cells.map((line) => (line[i] as string).length)));
  const line = (values: string[]): string => `| ${values.map((value, i) => value.padEnd(widths[i] as number)).join(' | ')} |`;
  process.stdout.write(`${line(header)}\n|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|\n`);
  for (const row of cells) process.stdout.write(`${line(row)}\n`);
  process.stdout.write('\nwhat the attackers saw:\n');
  for (const row of rows) if (row.seen !== '') process.stdout.write(`  ${row.attack}: ${row.seen}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`abuse: ${String((error as Error).stack ?? error)}\n`);
  process.exit(1);
});
