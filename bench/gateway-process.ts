// Child-process management for the benchmark: start the gateway (exactly as `npm start` does)
// and the SDK echo server as separate processes, wait for readiness, read their memory/CPU from
// /proc, and tear everything down by PID — including the Redis keys the gateway wrote.

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { request } from 'undici';

export const LOOPBACK = '127.0.0.1';
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/**
 * `remote`: a second gateway whose a2a adapter fronts the SDK echo server. `sdk-pg`, `sdk-sqlite`:
 * the SDK echo server on its database task store (the durable anchors); `idle-redis`,
 * `idle-baseline`: gateways started only to count what they ask of Redis while idle.
 */
export type ServerName = 'gateway' | 'sdk' | 'sdk-pg' | 'sdk-sqlite' | 'remote' | 'telemetry' | 'stages' | 'wait-off' | 'wait-on' | 'baseline' | 'idle-redis' | 'idle-baseline';

/** Demo adapter step for the gateway child: 10 min, far longer than the idle test needs. */
export const GATEWAY_LONG_STEP_MS = 600_000;

export interface ServerChild {
  readonly name: ServerName;
  readonly pid: number;
  readonly baseUrl: string;
  /** JSON-RPC endpoint both load generators post to. */
  readonly jsonRpcUrl: string;
  readonly logPath: string;
  /** Gateway only: the Redis key prefix it was started with, and the Redis it uses. */
  readonly keyPrefix?: string;
  readonly redisUrl?: string;
  /** Stops the process (SIGTERM, then SIGKILL) and removes whatever state it left behind. */
  stop(): Promise<void>;
}

interface Tracked {
  child: ChildProcess;
  pid: number;
}

// Every child we start, so SIGINT/exit handlers can kill them by PID even mid-run.
const tracked = new Map<number, Tracked>();
// Redis prefixes handed to a gateway and not yet deleted (prefix -> Redis URL), so an
// interrupted start still gets its keys removed.
const pendingPrefixes = new Map<string, string>();

/** Asks the kernel for a free loopback port (tiny race window is acceptable for a benchmark). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, LOOPBACK, () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => (port > 0 ? resolve(port) : reject(new Error('could not allocate a port'))));
    });
  });
}

/** PIDs of a process and all its descendants, via /proc/<pid>/task/<tid>/children. */
export function processTree(pid: number): number[] {
  const out: number[] = [];
  const stack = [pid];
  while (stack.length > 0) {
    const current = stack.pop() as number;
    out.push(current);
    let tids: string[] = [];
    try {
      tids = readdirSync(`/proc/${current}/task`);
    } catch {
      continue; // process already gone
    }
    for (const tid of tids) {
      try {
        const children = readFileSync(`/proc/${current}/task/${tid}/children`, 'utf8').trim();
        if (children) for (const c of children.split(/\s+/)) stack.push(Number(c));
      } catch {
        // thread exited between readdir and read
      }
    }
  }
  return out;
}

function vmRssKb(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/**
 * Resident memory (KB) of a server: the child plus any processes it forked, so a gateway that
 * runs its workers in separate processes is charged for them too. Redis is not included.
 */
export function rssKb(pid: number): number {
  return processTree(pid).reduce((sum, p) => sum + vmRssKb(p), 0);
}

/** Kernel start time (field 22 of /proc/<pid>/stat), used to detect PID reuse before killing. */
function startTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/** SIGKILLs a descendant only if it is still the same process we saw (not a reused PID). */
function killIfSame(pid: number, started: string | undefined): void {
  if (started === undefined || startTime(pid) !== started) return;
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** utime+stime clock ticks (1/100 s on Linux) of the process tree: when a server has gone idle, and what a request costs. */
export function cpuTicks(pid: number): number {
  let total = 0;
  for (const p of processTree(pid)) {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      // Fields after the ")" that closes comm; utime/stime are fields 14/15 overall.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      total += Number(fields[11]) + Number(fields[12]);
    } catch {
      // exited
    }
  }
  return total;
}

/**
 * Waits until the server tree uses < `maxCpuShare` of one core for a full `windowMs`, bounded by
 * `timeoutMs`. Needed because a returnImmediately round leaves queued work behind on the gateway,
 * which would otherwise steal CPU from the SDK round that follows on this shared machine.
 */
export async function waitForQuiet(pid: number, windowMs = 1000, maxCpuShare = 0.05, timeoutMs = 60_000): Promise<number> {
  const ticksPerSec = 100; // CLK_TCK on Linux
  const start = Date.now();
  while (Date.now() - start < timeoutMs) {
    const before = cpuTicks(pid);
    await sleep(windowMs);
    const used = (cpuTicks(pid) - before) / ticksPerSec / (windowMs / 1000);
    if (used < maxCpuShare) return Date.now() - start;
  }
  return Date.now() - start;
}

function tail(path: string, lines = 40): string {
  try {
    return readFileSync(path, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

async function waitReady(url: string, child: ChildProcess, logPath: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`process exited (${child.exitCode ?? child.signalCode}) before ${url} was ready:\n${tail(logPath)}`);
    }
    try {
      const res = await request(url, { method: 'GET', headersTimeout: 1000, bodyTimeout: 1000 });
      await res.body.dump();
      if (res.statusCode === 200) return;
    } catch {
      // not listening yet
    }
    await sleep(150);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${url}:\n${tail(logPath)}`);
}

/** Resolves true if `p` settles within `ms`, false otherwise; never leaves a timer behind. */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  const timer = new AbortController();
  try {
    return await Promise.race([
      p.then(() => true),
      sleep(ms, false, { signal: timer.signal }).catch(() => false),
    ]);
  } finally {
    timer.abort();
  }
}

async function killByPid(entry: Tracked, graceMs = 5000): Promise<void> {
  const { child, pid } = entry;
  // Snapshot descendants first: once the child dies they are re-parented and unreachable.
  const family = processTree(pid)
    .filter((p) => p !== pid)
    .map((p) => ({ pid: p, started: startTime(p) }));
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      // already gone
    }
    if (!(await settlesWithin(exited, graceMs))) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
      await settlesWithin(exited, 2000);
    }
  }
  // Only our own descendants that outlived their parent.
  for (const p of family) killIfSame(p.pid, p.started);
  tracked.delete(pid);
}

/** Synchronous last-resort kill for process 'exit' handlers. */
export function killAllChildrenSync(): void {
  for (const { pid } of tracked.values()) {
    for (const p of processTree(pid).reverse()) killIfSame(p, startTime(p));
  }
  tracked.clear();
}

/** Kills all children we started and removes their Redis keys; used by the SIGINT handler. */
export async function cleanupAll(): Promise<void> {
  await Promise.all([...tracked.values()].map((t) => killByPid(t, 3000)));
  for (const [prefix, url] of [...pendingPrefixes]) {
    await deleteRedisPrefix(url, prefix).catch(() => 0);
  }
}

interface SpawnOptions {
  name: ServerName;
  cwd: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  port: number;
  logDir: string;
  readyTimeoutMs: number;
}

async function spawnServer(opts: SpawnOptions): Promise<{ pid: number; entry: Tracked; logPath: string }> {
  mkdirSync(opts.logDir, { recursive: true });
  const logPath = join(opts.logDir, `${opts.name}.log`);
  const log = createWriteStream(logPath, { flags: 'w' });
  const child = spawn(process.execPath, opts.args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] });
  // Without a listener a spawn failure would be an uncaught 'error'; waitReady reports it instead.
  child.on('error', (err) => log.write(`[bench] spawn error: ${err.message}\n`));
  child.stdout?.pipe(log, { end: false });
  child.stderr?.pipe(log, { end: false });
  if (child.pid === undefined) throw new Error(`failed to spawn ${opts.name}`);
  const entry: Tracked = { child, pid: child.pid };
  tracked.set(child.pid, entry);
  try {
    await waitReady(`http://${LOOPBACK}:${opts.port}/readyz`, child, logPath, opts.readyTimeoutMs);
  } catch (err) {
    await killByPid(entry);
    throw err;
  }
  return { pid: child.pid, entry, logPath };
}

/** SCAN MATCH + UNLINK, so a benchmark run leaves nothing behind in the shared Redis. */
export async function deleteRedisPrefix(redisUrl: string, prefix: string): Promise<number> {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 2, connectTimeout: 3000 });
  let deleted = 0;
  try {
    await redis.connect();
    // The prefix is random per run, so any key containing it is ours; the second pattern
    // catches libraries that wrap the prefix (e.g. hash tags) instead of using "<prefix>:".
    for (const match of [`${prefix}:*`, `*${prefix}*`]) {
      let cursor = '0';
      let rounds = 0;
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', match, 'COUNT', 1000);
        cursor = next;
        if (keys.length > 0) deleted += await redis.unlink(...keys);
        rounds += 1;
      } while (cursor !== '0' && rounds < 1_000_000);
    }
  } finally {
    redis.disconnect();
  }
  pendingPrefixes.delete(prefix);
  return deleted;
}

/** Redis `used_memory` in KB, to put the gateway's off-process memory next to its RSS. */
export async function redisUsedMemoryKb(redisUrl: string): Promise<number> {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 2, connectTimeout: 3000 });
  try {
    await redis.connect();
    const info = await redis.info('memory');
    const m = /^used_memory:(\d+)/m.exec(info);
    return m ? Number(m[1]) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  } finally {
    redis.disconnect();
  }
}

export interface StartOptions {
  repoRoot: string;
  logDir: string;
  redisUrl?: string;
  readyTimeoutMs?: number;
}

export interface GatewayStartOptions extends StartOptions {
  /** Default "gateway"; also names its log file. */
  name?: ServerName;
  /** Extra environment (e.g. A2A_ADAPTER and A2A_ADAPTER_OPTIONS). */
  env?: Record<string, string>;
}

const execFileAsync = promisify(execFile);

/**
 * `npm start`'s first step in `repoRoot`: builds dist/ when a source changed since the last build.
 * Not spawnSync: a build of a minute would stall this process's own Redis connections past their
 * connect timeout.
 */
async function buildDist(repoRoot: string): Promise<void> {
  try {
    await execFileAsync(process.execPath, ['tools/build/build.mjs', '--if-stale'], { cwd: repoRoot });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? (error as Error).message;
    throw new Error(`the gateway in ${repoRoot} did not build: ${stderr.trim()}`);
  }
}

/**
 * BENCH_GATEWAY_NODE_FLAGS: Node options for the gateway process alone (space-separated, e.g.
 * `--max-semi-space-size=64 --trace-gc`), to weigh a runtime setting side by side with the same
 * load; the SDK's servers and the load keep theirs. Unset: the gateway runs as `npm start` runs it.
 */
const gatewayNodeFlags = (): string[] => (process.env.BENCH_GATEWAY_NODE_FLAGS ?? '').split(' ').filter((flag) => flag !== '');

/** Starts the gateway like `npm start`, on a free port with its own Redis key prefix. */
export async function startGateway(opts: GatewayStartOptions): Promise<ServerChild> {
  const port = await freePort();
  const keyPrefix = `bench-${randomBytes(6).toString('hex')}`;
  const redisUrl = opts.redisUrl ?? process.env.A2A_REDIS_URL ?? DEFAULT_REDIS_URL;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    A2A_PORT: String(port),
    A2A_HOST: LOOPBACK,
    A2A_KEY_PREFIX: keyPrefix,
    A2A_REDIS_URL: redisUrl,
    A2A_LOG_LEVEL: 'warn',
    // The load is one caller far past any per-principal limit; the figures compare protocol
    // handling with the SDK's server, which authenticates nothing.
    A2A_AUTH_ENABLED: 'false',
    A2A_RATE_LIMIT_PER_SECOND: '0',
    A2A_MAX_ACTIVE_TASKS: '0',
    // Nor its streams, parallel lists or stored bytes (one caller stands for many).
    A2A_MAX_STREAMS_PER_OWNER: '0',
    A2A_MAX_CONCURRENT_LISTS_PER_OWNER: '0',
    A2A_MAX_STORED_BYTES: '0',
    A2A_MAX_STORED_TASKS: '0',
    // The push scenario's receiver listens on loopback, which webhooks may otherwise not reach.
    A2A_PUSH_ALLOWED_HOSTS: LOOPBACK,
    ...opts.env,
  };
  // The demo `long` skill emits a progress event every stepMs (default 50 ms, at most 1000 steps),
  // so "long 100000" would be neither idle nor long (~50 s of 20 events/s to every subscriber).
  // A long step keeps the idle-subscriber task quiet in WORKING until CancelTask, like the SDK
  // server's. Only the demo's long/stream skills read stepMs; echo — the throughput tests — does
  // not. An explicit A2A_ADAPTER_OPTIONS from the caller wins.
  if (env.A2A_ADAPTER_OPTIONS === undefined || env.A2A_ADAPTER_OPTIONS === '') {
    env.A2A_ADAPTER_OPTIONS = JSON.stringify({ stepMs: GATEWAY_LONG_STEP_MS });
  }
  // What `npm start` runs: the compiled dist/ (built first when stale), not the sources through tsx,
  // whose transform wraps every function it creates in a name-keeping helper call.
  await buildDist(opts.repoRoot);
  pendingPrefixes.set(keyPrefix, redisUrl);
  let started: Awaited<ReturnType<typeof spawnServer>> | undefined;
  try {
    started = await spawnServer({
      name: opts.name ?? 'gateway',
      cwd: opts.repoRoot,
      args: [...gatewayNodeFlags(), 'bin/a2a-gateway.js', 'start'],
      env,
      port,
      logDir: opts.logDir,
      readyTimeoutMs: opts.readyTimeoutMs ?? 60_000,
    });
  } catch (err) {
    await deleteRedisPrefix(redisUrl, keyPrefix).catch(() => 0);
    throw err;
  }
  const { pid, entry, logPath } = started;
  let stopped = false;
  return {
    name: opts.name ?? 'gateway',
    pid,
    baseUrl: `http://${LOOPBACK}:${port}`,
    jsonRpcUrl: `http://${LOOPBACK}:${port}/a2a/jsonrpc`,
    logPath,
    keyPrefix,
    redisUrl,
    async stop() {
      if (stopped) return;
      stopped = true;
      await killByPid(entry);
      await deleteRedisPrefix(redisUrl, keyPrefix);
    },
  };
}

export interface SdkStartOptions extends StartOptions {
  /** Default "sdk"; also names its log file. */
  name?: ServerName;
  /** Extra environment, e.g. BENCH_SDK_STORE and its connection (bench/sdk-store.ts). */
  env?: Record<string, string>;
}

/** Starts bench/sdk-echo-server.ts as a child so it is measured the same way as the gateway. */
export async function startSdkServer(opts: SdkStartOptions): Promise<ServerChild> {
  const port = await freePort();
  const name = opts.name ?? 'sdk';
  const { pid, entry, logPath } = await spawnServer({
    name,
    cwd: opts.repoRoot,
    args: ['--import', 'tsx', join(opts.repoRoot, 'bench', 'sdk-echo-server.ts')],
    env: { ...process.env, ...opts.env, BENCH_SDK_PORT: String(port), BENCH_SDK_HOST: LOOPBACK },
    port,
    logDir: opts.logDir,
    readyTimeoutMs: opts.readyTimeoutMs ?? 30_000,
  });
  let stopped = false;
  return {
    name,
    pid,
    baseUrl: `http://${LOOPBACK}:${port}`,
    jsonRpcUrl: `http://${LOOPBACK}:${port}/a2a/jsonrpc`,
    logPath,
    async stop() {
      if (stopped) return;
      stopped = true;
      await killByPid(entry);
    },
  };
}
