// `npm run rolling-restart`: a rolling restart under steady load, with processes standing in for
// pods. Starts its own redis-server, GATEWAYS gateways and WORKERS workers on it, keeps clients
// submitting "transfer" tasks (side effects on a ledger file) and "long" ones (longer than the
// workers' shutdownGraceMs, so some are handed back) and following some of them over SSE, and
// meanwhile replaces every process one by one as a Deployment with maxSurge 1 does: start the
// new one, wait until it is ready, SIGTERM the old one, wait for it to exit.
//
// A load balancer is simulated the way Kubernetes behaves: clients send only to gateways whose
// /readyz answered 200 at the last poll (every 100 ms), and gateways run with shutdownDrainMs,
// serving for a moment after SIGTERM while /readyz says 503 (the preStop sleep's role).
//
// It prints, and exits 1 unless each is 0: client errors (a request that failed or answered an
// error, a stream given up; a stream resumed elsewhere with Last-Event-ID is counted apart, as
// that is the drain's design), lost tasks (not COMPLETED at the end), duplicated side effects
// (a charge in the ledger twice: a turn repeated), and processes that did not exit 0 on SIGTERM.
//
// Env: ROLLING_GATEWAYS (3), ROLLING_WORKERS (3), ROLLING_CLIENTS (6), ROLLING_STREAM_SHARE (0.3),
// ROLLING_KEEP=1 keeps the temp dir (logs, ledger, Redis data). Imported, runRollingRestart(options).
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { analyzeLedger, readLedger } from '../chaos/ledger.ts';
import { ProcessGroup, type Role, type RoleProcess } from '../chaos/processes.ts';
import { seededRandom } from '../chaos/random.ts';
import { startRedisServer } from '../chaos/redis-server.ts';
import { StreamWatcher } from '../chaos/streams.ts';
import { buildCompiledSources, COMPILED_SOURCES_ENV, removeCompiledSources } from '../test/support/compiled-sources.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

export interface RollingRestartOptions {
  gateways: number;
  workers: number;
  /** Client loops submitting tasks and polling them to the end, each one task at a time. */
  clients: number;
  /** Share of the transfer tasks also followed over SSE (every long one is; SubscribeToTask, resumed with Last-Event-ID). */
  streamShare: number;
  /** Demo adapter step: a transfer charge's pause, a long task's step. */
  stepMs: number;
  /** Steps of a "long" task: with stepMs, longer than shutdownGraceMs, so a worker hands it back. */
  longSteps: number;
  /** Steps of each anchor task (one per gateway, followed over SSE through every restart). */
  anchorSteps: number;
  /** The workers' shutdownGraceMs. */
  shutdownGraceMs: number;
  /** The gateways' shutdownDrainMs: serving, not ready, before they stop accepting. */
  shutdownDrainMs: number;
  /** Steady load before the first restart and after the last. */
  settleMs: number;
  keepDir: boolean;
  log: (line: string) => void;
}

export const DEFAULT_ROLLING_RESTART_OPTIONS: RollingRestartOptions = {
  gateways: 3,
  workers: 3,
  clients: 6,
  streamShare: 0.3,
  stepMs: 100,
  longSteps: 40,
  anchorSteps: 300,
  shutdownGraceMs: 2_000,
  shutdownDrainMs: 1_500,
  settleMs: 3_000,
  keepDir: false,
  log: (line) => process.stdout.write(`${line}\n`),
};

export interface RollingRestartResult {
  restarts: number;
  tasks: number;
  requests: number;
  clientErrors: string[];
  resumedStreams: number;
  streams: number;
  lostTasks: string[];
  duplicatedTurns: string[];
  uncleanExits: string[];
  dir: string;
}

const TERMINAL = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED']);

async function rpc(gateway: string, method: string, params: Record<string, unknown>): Promise<{ result?: Record<string, unknown>; error?: { code: number; message: string } }> {
  const response = await fetch(`${gateway}/a2a/jsonrpc`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(15_000),
  });
  const body = (await response.json()) as { result?: Record<string, unknown>; error?: { code: number; message: string } };
  if (body.error === undefined && response.status !== 200) throw new Error(`HTTP ${response.status}`);
  return body;
}

/** The gateways a load balancer sends to: those whose /readyz answered 200 at the last poll. */
class ReadyGateways {
  private ready: string[] = [];
  private readonly controller = new AbortController();
  private readonly polling: Promise<void>;

  constructor(private readonly group: ProcessGroup) {
    this.polling = this.poll();
  }

  list(): string[] {
    return this.ready;
  }

  private async poll(): Promise<void> {
    while (!this.controller.signal.aborted) {
      const alive = this.group.gatewayUrls();
      const answers = await Promise.all(alive.map((url) => fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1_000) }).then((r) => r.status === 200, () => false)));
      this.ready = alive.filter((_, index) => answers[index]);
      await sleep(100);
    }
  }

  async stop(): Promise<void> {
    this.controller.abort();
    await this.polling;
  }
}

export async function runRollingRestart(partial: Partial<RollingRestartOptions> = {}): Promise<RollingRestartResult> {
  const o = { ...DEFAULT_ROLLING_RESTART_OPTIONS, ...partial };
  const dir = mkdtempSync(join(tmpdir(), 'a2a-rolling-'));
  const logDir = join(dir, 'logs');
  mkdirSync(logDir);
  const ledgerFile = join(dir, 'ledger.txt');
  // Processes start from plain JavaScript, as the compiled gateway does; a test run already built it.
  const ownBuild = process.env[COMPILED_SOURCES_ENV] === undefined ? buildCompiledSources().dir : undefined;
  if (ownBuild !== undefined) process.env[COMPILED_SOURCES_ENV] = ownBuild;
  const redisDir = join(dir, 'redis');
  mkdirSync(redisDir);
  const redis = await startRedisServer(redisDir);
  const group = new ProcessGroup({
    root: ROOT,
    logDir,
    readyTimeoutMs: 60_000,
    env: {
      A2A_REDIS_URL: redis.url,
      A2A_KEY_PREFIX: 'rolling',
      A2A_LOG_LEVEL: 'warn',
      A2A_DATA_DIR: join(dir, 'data'),
      A2A_ADAPTER: 'demo',
      A2A_ADAPTER_OPTIONS: JSON.stringify({ stepMs: o.stepMs, ledgerFile }),
      A2A_AUTH_ENABLED: 'false',
      A2A_RATE_LIMIT_PER_SECOND: '0',
      A2A_MAX_ACTIVE_TASKS: '0',
      A2A_MAX_STREAMS_PER_OWNER: '0',
      A2A_SHUTDOWN_GRACE_MS: String(o.shutdownGraceMs),
      A2A_SHUTDOWN_DRAIN_MS: String(o.shutdownDrainMs),
    },
  });
  const result: RollingRestartResult = { restarts: 0, tasks: 0, requests: 0, clientErrors: [], resumedStreams: 0, streams: 0, lostTasks: [], duplicatedTurns: [], uncleanExits: [], dir };
  const random = seededRandom(1);
  const ready = new ReadyGateways(group);
  const streams = new StreamWatcher({ gateways: () => ready.list(), random: random.fork('streams'), maxIdleDrops: 20 });
  const submitted: string[] = [];
  const loadController = new AbortController();
  try {
    // Side by side (the group kills every child it spawned, ready or not, when the run ends): the
    // start-ups are CPU-bound, so on two cores this takes about half the wall time of one by one.
    const roles: Role[] = [...Array.from({ length: o.gateways }, (): Role => 'serve'), ...Array.from({ length: o.workers }, (): Role => 'worker')];
    await Promise.all(roles.map((role) => group.spawn(role)));
    while (ready.list().length < o.gateways) await sleep(50);
    o.log(`up: ${o.gateways} gateways, ${o.workers} workers, Redis ${redis.url}; load: ${o.clients} clients`);

    /** One request to a ready gateway; a failure is a client error (no retry: a client would see it). */
    const call = async (method: string, params: Record<string, unknown>): Promise<Record<string, unknown> | undefined> => {
      const live = ready.list();
      const gateway = live[random.int(0, live.length - 1)];
      if (gateway === undefined) {
        result.clientErrors.push(`${method}: no ready gateway`);
        return undefined;
      }
      result.requests += 1;
      try {
        const body = await rpc(gateway, method, params);
        if (body.error !== undefined) {
          result.clientErrors.push(`${method} on ${gateway}: ${body.error.code} ${body.error.message}`);
          return undefined;
        }
        return body.result;
      } catch (error) {
        const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message;
        result.clientErrors.push(`${method} on ${gateway}: ${cause}`);
        return undefined;
      }
    };

    const client = async (index: number): Promise<void> => {
      const own = random.fork(`client-${index}`);
      for (let n = 0; !loadController.signal.aborted; n += 1) {
        const text = own.next() < 0.25 ? `long ${o.longSteps}` : `transfer ${own.int(1, 3)}`;
        const sent = await call('SendMessage', { message: { messageId: `c${index}-${n}`, role: 'ROLE_USER', parts: [{ text }] }, configuration: { returnImmediately: true } });
        const taskId = (sent?.task as { id?: string } | undefined)?.id;
        if (taskId === undefined) {
          await sleep(200);
          continue;
        }
        submitted.push(taskId);
        // Every long task is followed (its stream is open across restarts), and a share of the rest.
        if (text.startsWith('long') || own.next() < o.streamShare) streams.watch(taskId, text.split(' ')[0] ?? 'task');
        for (;;) {
          await sleep(250);
          const task = await call('GetTask', { id: taskId, historyLength: 0 });
          const state = (task?.status as { state?: string } | undefined)?.state;
          if (state !== undefined && TERMINAL.has(state)) break;
          if (task === undefined && loadController.signal.aborted) break;
        }
      }
    };
    const clients = Array.from({ length: o.clients }, (_, index) => client(index));
    // Anchors: one long task per gateway, followed over SSE for the whole restart phase, so every
    // gateway's SIGTERM ends open streams that must resume elsewhere.
    for (let index = 0; index < o.gateways; index += 1) {
      const sent = await call('SendMessage', { message: { messageId: `anchor-${index}`, role: 'ROLE_USER', parts: [{ text: `long ${o.anchorSteps}` }] }, configuration: { returnImmediately: true } });
      const taskId = (sent?.task as { id?: string } | undefined)?.id;
      if (taskId !== undefined) {
        submitted.push(taskId);
        streams.watch(taskId, 'anchor');
      }
    }

    await sleep(o.settleMs);
    const replace = async (old: RoleProcess, role: Role): Promise<void> => {
      const started = Date.now();
      const fresh = await group.spawn(role);
      if (role === 'serve') while (!ready.list().includes(fresh.url)) await sleep(50);
      await old.kill('SIGTERM');
      const how = await old.exited;
      if (how !== '0') result.uncleanExits.push(`${old.name} exited ${how} on SIGTERM (log: ${old.logFile})`);
      result.restarts += 1;
      o.log(`  ${old.name} → ${fresh.name} (${((Date.now() - started) / 1000).toFixed(1)} s, ${old.name} exited ${how})`);
    };
    for (const old of [...group.alive('serve')]) await replace(old, 'serve');
    for (const old of [...group.alive('worker')]) await replace(old, 'worker');
    await sleep(o.settleMs);

    loadController.abort();
    await Promise.all(clients);
    await streams.finish(60_000);
    // Every task submitted ends COMPLETED: the demo's transfer and long skills do, unless lost.
    const deadline = Date.now() + 60_000;
    const pending = new Set(submitted);
    while (pending.size > 0 && Date.now() < deadline) {
      const gateway = ready.list()[0];
      for (const taskId of [...pending]) {
        if (gateway === undefined) break;
        const body = await rpc(gateway, 'GetTask', { id: taskId, historyLength: 0 }).catch(() => undefined);
        const state = (body?.result?.status as { state?: string } | undefined)?.state;
        if (state === 'TASK_STATE_COMPLETED') pending.delete(taskId);
        else if (state !== undefined && TERMINAL.has(state)) {
          result.lostTasks.push(`${taskId}: ${state}`);
          pending.delete(taskId);
        }
      }
      if (pending.size > 0) await sleep(500);
    }
    for (const taskId of pending) result.lostTasks.push(`${taskId}: not finished 60 s after the load stopped`);
    result.tasks = submitted.length;
    result.streams = streams.records.length;
    for (const record of streams.records) {
      result.resumedStreams += record.resumes;
      // 'skipped': the task ended before the stream opened, so there was nothing to follow.
      if (record.outcome !== 'terminal' && record.outcome !== 'skipped') result.clientErrors.push(`stream of ${record.taskId}: ${record.outcome} (${record.note ?? ''})`);
    }
    const ledger = analyzeLedger(readLedger(ledgerFile));
    result.duplicatedTurns.push(...ledger.duplicateKeys, ...ledger.doubleChargeKeys);
    for (const exit of group.unexpectedExits) result.uncleanExits.push(`${exit.name} exited ${exit.how} unasked (log: ${exit.logFile})`);
  } finally {
    loadController.abort();
    await ready.stop();
    await group.killAll();
    await redis.stop();
    if (ownBuild !== undefined) {
      removeCompiledSources(ownBuild);
      delete process.env[COMPILED_SOURCES_ENV];
    }
    const failed = result.clientErrors.length + result.lostTasks.length + result.duplicatedTurns.length + result.uncleanExits.length > 0;
    if (!o.keepDir && !failed) rmSync(dir, { recursive: true, force: true });
  }
  return result;
}

export function formatRollingRestart(result: RollingRestartResult): string {
  const list = (items: string[]): string => (items.length === 0 ? '' : `\n    ${items.slice(0, 10).join('\n    ')}${items.length > 10 ? `\n    … ${items.length - 10} more` : ''}`);
  return [
    `rolling restart: ${result.restarts} processes replaced one by one with SIGTERM, ${result.tasks} tasks, ${result.requests} requests, ${result.streams} streams`,
    `  client errors (other than resumed streams): ${result.clientErrors.length}${list(result.clientErrors)}`,
    `  resumed streams (Last-Event-ID, elsewhere): ${result.resumedStreams}`,
    `  lost tasks:                                 ${result.lostTasks.length}${list(result.lostTasks)}`,
    `  duplicated turns (ledger charges repeated): ${result.duplicatedTurns.length}${list(result.duplicatedTurns)}`,
    `  processes not exiting 0 on SIGTERM:         ${result.uncleanExits.length}${list(result.uncleanExits)}`,
    ...(result.clientErrors.length + result.lostTasks.length + result.duplicatedTurns.length + result.uncleanExits.length > 0 ? [`  logs, ledger and Redis data kept in ${result.dir}`] : []),
  ].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const number = (name: string, fallback: number): number => (process.env[name] === undefined ? fallback : Number(process.env[name]));
  const result = await runRollingRestart({
    gateways: number('ROLLING_GATEWAYS', DEFAULT_ROLLING_RESTART_OPTIONS.gateways),
    workers: number('ROLLING_WORKERS', DEFAULT_ROLLING_RESTART_OPTIONS.workers),
    clients: number('ROLLING_CLIENTS', DEFAULT_ROLLING_RESTART_OPTIONS.clients),
    streamShare: number('ROLLING_STREAM_SHARE', DEFAULT_ROLLING_RESTART_OPTIONS.streamShare),
    keepDir: process.env.ROLLING_KEEP === '1',
  });
  process.stdout.write(`${formatRollingRestart(result)}\n`);
  process.exitCode = result.clientErrors.length + result.lostTasks.length + result.duplicatedTurns.length + result.uncleanExits.length === 0 ? 0 : 1;
}
