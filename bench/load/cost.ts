// What a round of tasks cost a server, all of it: CPU of the server's process tree (the gateway
// and its worker processes; an SDK server), of the gateway's own redis-server, and of the
// PostgreSQL processes an SDK anchor works through; and, on a gateway's own Redis, the commands
// and socket reads/writes it served. Divided by the tasks the round finished. Beside it, what the
// load generator (this process) spent driving the round: it shares the machine's cores, so it
// bounds what a server can reach there (report-anchors.ts, the targets' budget).

import { readFileSync } from 'node:fs';
import { cpuTicks, waitForQuiet } from '../gateway-process.ts';
import { diffCounters, type OwnRedis, type RedisCounters } from '../own-redis.ts';

const TICK_MS = 10; // CLK_TCK is 100 on Linux

export interface CostSources {
  /** Root of the server's process tree. */
  pid: number;
  redis?: OwnRedis;
  /** PIDs of database processes working for this server (PostgreSQL backends); read at both ends of a round. */
  dbPids?: () => Promise<number[]>;
}

export interface Cost {
  tasks: number;
  /** redis / db are NaN when the server has none measured (an SDK server; a gateway on a shared Redis). */
  cpuMs: { server: number; redis: number; db: number };
  /** The server's cost per task: server + redis + db, the client left out. */
  cpuMsPerTask: number;
  /** CPU the load generator spent from the round's start to the end of its load (not counted in cpuMsPerTask). */
  clientCpuMs: number;
  /** Only on a gateway's own Redis: counters per task. */
  redis?: RedisPerTask;
}

export interface RedisPerTask {
  /** commandstats calls per task: top-level commands and the commands scripts ran. */
  calls: number;
  /** EVALSHA + EVAL + FCALL per task: the script invocations among those calls. */
  scripts: number;
  reads: number;
  writes: number;
  /** The most frequent commands, calls per task, largest first. */
  top: Array<[string, number]>;
}

function pidTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0; // exited: what it used is lost, which undercounts (said in the notes)
  }
}

async function dbTicks(src: CostSources): Promise<Map<number, number>> {
  const pids = src.dbPids ? await src.dbPids().catch(() => []) : [];
  return new Map(pids.map((p) => [p, pidTicks(p)]));
}

export function perTask(diff: RedisCounters, tasks: number, topN = 8): RedisPerTask {
  const per = (n: number): number => n / Math.max(1, tasks);
  const scripts = ['evalsha', 'eval', 'evalsha_ro', 'eval_ro', 'fcall', 'fcall_ro'].reduce((n, c) => n + (diff.calls.get(c) ?? 0), 0);
  const total = [...diff.calls.values()].reduce((a, b) => a + b, 0);
  const top = [...diff.calls].sort((a, b) => b[1] - a[1]).slice(0, topN).map(([c, n]): [string, number] => [c, per(n)]);
  return { calls: per(total), scripts: per(scripts), reads: per(diff.reads), writes: per(diff.writes), top };
}

export interface CostMeter {
  /**
   * Ends the round once the server has gone quiet, so the trailing work (job bookkeeping after the
   * answer; tasks whose callers the load generator cut off at the deadline) is in the figures; the
   * caller counts those tasks too. Waiting costs a second or so of the server's idle CPU.
   */
  finish(tasks: number): Promise<Cost>;
}

/** This process's CPU, every thread, in ms. */
function ownCpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

export async function startCost(src: CostSources): Promise<CostMeter> {
  const client0 = ownCpuMs();
  const server0 = cpuTicks(src.pid);
  const redis0 = src.redis?.cpuTicks() ?? 0;
  const db0 = await dbTicks(src);
  const counters0 = await src.redis?.snapshot();
  return {
    async finish(tasks) {
      // Read before the wait for the server's quiet: the load has ended, the waiting is not the load's.
      const clientCpuMs = ownCpuMs() - client0;
      await waitForQuiet(src.pid, 300, 0.05, 15_000);
      const server = (cpuTicks(src.pid) - server0) * TICK_MS;
      const redis = src.redis ? (src.redis.cpuTicks() - redis0) * TICK_MS : Number.NaN;
      // A backend born during the round counts from zero; one gone by the end is lost.
      let db = src.dbPids ? 0 : Number.NaN;
      for (const [pid, ticks] of await dbTicks(src)) db += (ticks - (db0.get(pid) ?? 0)) * TICK_MS;
      const total = [server, redis, db].filter((v) => Number.isFinite(v)).reduce((a, b) => a + b, 0);
      const cost: Cost = { tasks, cpuMs: { server, redis, db }, cpuMsPerTask: total / Math.max(1, tasks), clientCpuMs };
      if (src.redis && counters0) cost.redis = perTask(diffCounters(counters0, await src.redis.snapshot()), tasks);
      return cost;
    },
  };
}

export const describeCost = (c: Cost): string =>
  `${c.cpuMsPerTask.toFixed(2)} CPU ms/task (server ${c.cpuMs.server} ms` +
  (Number.isFinite(c.cpuMs.redis) ? `, Redis ${c.cpuMs.redis} ms` : '') +
  (Number.isFinite(c.cpuMs.db) ? `, database ${c.cpuMs.db} ms` : '') +
  `, ${c.tasks} tasks; load generator ${(c.clientCpuMs / Math.max(1, c.tasks)).toFixed(2)} ms/task)` +
  (c.redis ? `, Redis ${c.redis.calls.toFixed(1)} calls/task (${c.redis.scripts.toFixed(1)} scripts), ${c.redis.reads.toFixed(1)} reads ${c.redis.writes.toFixed(1)} writes/task` : '');

/**
 * Runs one round with a meter on it: `run` calls `begin` when the measured part starts (after any
 * priming), and the round's result gets its cost, per task as `tasks` counts them.
 */
export async function withCost<R extends object>(src: CostSources, run: (begin: () => Promise<void>) => Promise<R>, tasks: (r: R) => number): Promise<R & { cost?: Cost }> {
  let meter: CostMeter | undefined;
  const result = await run(async () => {
    meter = await startCost(src);
  });
  return meter === undefined ? result : { ...result, cost: await meter.finish(tasks(result)) };
}
