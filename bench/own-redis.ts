// A redis-server of the bench's own, one per gateway it starts: the gateway's Redis is then
// nobody else's, so its CPU (from /proc) and its INFO counters can be charged to that gateway's
// tasks. Persistence is what the issue asks a deployment to run: AOF, fsync once a second.
// The data directory is a temp dir, removed with the server.

import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { cpuTicks, freePort, LOOPBACK } from './gateway-process.ts';

export interface OwnRedis {
  readonly url: string;
  readonly pid: number;
  /** utime+stime clock ticks of redis-server (all its threads, plus an AOF rewrite child if one runs). */
  cpuTicks(): number;
  /** INFO stats + commandstats, read in one call. */
  snapshot(): Promise<RedisCounters>;
  stop(): Promise<void>;
}

export interface RedisCounters {
  /** cmdstat_<name>.calls: top-level commands and, as Redis counts them, commands run inside scripts. */
  calls: Map<string, number>;
  /** total_commands_processed (also counts the commands scripts run). */
  commandsProcessed: number;
  /** total_reads_processed / total_writes_processed: socket reads and writes of client connections. */
  reads: number;
  writes: number;
}

const running = new Map<number, { child: ChildProcess; dir: string }>();

function field(info: string, name: string): number {
  const m = new RegExp(`^${name}:(\\d+)`, 'm').exec(info);
  return m ? Number(m[1]) : Number.NaN;
}

export function parseCounters(info: string): RedisCounters {
  const calls = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls.set(m[1] as string, Number(m[2]));
  return { calls, commandsProcessed: field(info, 'total_commands_processed'), reads: field(info, 'total_reads_processed'), writes: field(info, 'total_writes_processed') };
}

/**
 * after − before. The INFO call that took `before` is counted in `after` (Redis counts a command
 * once it has run), so one `info` call, one command and one read are the probe's own and come off.
 */
export function diffCounters(before: RedisCounters, after: RedisCounters): RedisCounters {
  const calls = new Map<string, number>();
  for (const [name, n] of after.calls) {
    const d = n - (before.calls.get(name) ?? 0) - (name === 'info' ? 1 : 0);
    if (d > 0) calls.set(name, d);
  }
  return { calls, commandsProcessed: after.commandsProcessed - before.commandsProcessed - 1, reads: after.reads - before.reads - 1, writes: after.writes - before.writes - 1 };
}

export async function startOwnRedis(opts: { logDir: string; name: string }): Promise<OwnRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'a2a-bench-redis-'));
  mkdirSync(opts.logDir, { recursive: true });
  const log = createWriteStream(join(opts.logDir, `${opts.name}-redis.log`), { flags: 'w' });
  const args = ['--port', String(port), '--bind', LOOPBACK, '--dir', dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'everysec', '--daemonize', 'no'];
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  child.on('error', (err) => log.write(`[bench] spawn error: ${err.message}\n`));
  child.stdout?.pipe(log, { end: false });
  child.stderr?.pipe(log, { end: false });
  if (child.pid === undefined) throw new Error('failed to spawn redis-server (is it installed?)');
  const pid = child.pid;
  running.set(pid, { child, dir });
  const url = `redis://${LOOPBACK}:${port}`;
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false, retryStrategy: () => null });
  // Refused connects while redis-server boots are expected; the loop below retries them.
  client.on('error', () => undefined);
  const stop = async (): Promise<void> => {
    client.disconnect();
    await stopRedisChild(pid);
  };
  try {
    for (let i = 0; ; i++) {
      if (child.exitCode !== null) throw new Error(`redis-server exited (${child.exitCode}) at start; see ${opts.name}-redis.log`);
      try {
        await client.connect();
        await client.ping();
        break;
      } catch (err) {
        if (i >= 100) throw err;
        client.disconnect();
        await sleep(100);
      }
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    url,
    pid,
    cpuTicks: () => cpuTicks(pid),
    snapshot: async () => parseCounters(await client.info('stats', 'commandstats')),
    stop,
  };
}

async function stopRedisChild(pid: number): Promise<void> {
  const entry = running.get(pid);
  if (entry === undefined) return;
  running.delete(pid);
  const { child, dir } = entry;
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM'); // the AOF is thrown away anyway; SIGTERM just lets it exit cleanly
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  }
  rmSync(dir, { recursive: true, force: true });
}

/** Every redis-server still running (an interrupted run): SIGINT handler. */
export async function stopAllOwnRedis(): Promise<void> {
  await Promise.all([...running.keys()].map((pid) => stopRedisChild(pid)));
}

/** Last resort from a process 'exit' handler: kill by PID, remove the data dirs. */
export function killAllOwnRedisSync(): void {
  for (const { child, dir } of running.values()) {
    if (child.exitCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
  running.clear();
}
