// Test harness: real Redis (127.0.0.1:6379 unless A2A_TEST_REDIS_URL or A2A_REDIS_URL), a distinct key prefix
// per gateway, real HTTP on a free port, and real worker child processes where a test needs
// to kill one. Nothing here stands in for Redis or BullMQ. With A2A_TEST_REDIS_CLUSTER_NODES
// (set by vitest.cluster.config.ts, `npm run test:cluster`) everything runs on a Redis Cluster.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Cluster, Redis } from 'ioredis';
import { expect } from 'vitest';
import { Agents } from '../../src/agents/agents.ts';
import { configSchema, type GatewayConfig } from '../../src/config/schema.ts';
import { startGatewayRole, type GatewayHandle } from '../../src/gateway/server.ts';
import { createLogger, type Logger } from '../../src/logging/logger.ts';
import { startWorkerRole, type WorkerHandle } from '../../src/runtime/worker-role.ts';
import type { Owner, TaskStore } from '../../src/store/task-store.ts';
import type { PushResolver } from '../../src/push/receiver-policy.ts';
import { RecentTaskIndex } from '../../src/store/recent-tasks.ts';
import { isCluster, type RedisClient } from '../../src/redis/connection.ts';
import { scanKeys } from '../../src/redis/cross-slot.ts';
import { printed, whenChildReady } from './child-ready.ts';
import { nodeEntryArgs } from './compiled-sources.ts';

export const REDIS_URL = process.env.A2A_TEST_REDIS_URL ?? process.env.A2A_REDIS_URL ?? 'redis://127.0.0.1:6379';
/** Seeds of the Redis Cluster the suite runs on, or '' for the single Redis at REDIS_URL. */
export const REDIS_CLUSTER_NODES = process.env.A2A_TEST_REDIS_CLUSTER_NODES ?? '';

/** A plain connection to what the gateways under test use: the single Redis, or the Cluster. */
export function openTestRedis(): RedisClient {
  if (REDIS_CLUSTER_NODES === '') return new Redis(REDIS_URL);
  return new Cluster(REDIS_CLUSTER_NODES.split(',').map((seed) => ({ host: seed.slice(0, seed.lastIndexOf(':')), port: Number(seed.slice(seed.lastIndexOf(':') + 1)) })));
}
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export function uniquePrefix(name: string): string {
  return `t-${name}-${randomBytes(4).toString('hex')}`;
}

export interface TestGateway {
  prefix: string;
  config: GatewayConfig;
  gateway: GatewayHandle;
  /** In-process worker, when the test asked for one. */
  worker: WorkerHandle | undefined;
  url: string;
  jsonRpcUrl: string;
  restUrl: string;
  /** A plain connection for assertions on what is (not) in Redis. */
  redis: RedisClient;
  /** Every key under this gateway's prefix with a fingerprint of its content. */
  snapshotKeys(): Promise<Map<string, string>>;
  close(): Promise<void>;
}

/** Every per-caller limit off: the suites that test tasks, not limits, run with these (as an explicit setting). */
export const LIMITS_OFF = {
  requestsPerSecond: 0,
  maxActiveTasks: 0,
  unauthenticatedPerSecond: 0,
  maxStreamsPerOwner: 0,
  maxConcurrentListsPerOwner: 0,
  ingressBytesPerSecond: 0,
  storedBytesPerSecond: 0,
  outputBytesPerSecond: 0,
  maxRunningTurnsPerOwner: 0,
  maxRunningTurnsPerTenant: 0,
} as const;

export async function startTestGateway(
  options: {
    name: string;
    inProcessWorker?: boolean;
    /** Raw settings as a config file would hold them (validated by the schema). */
    config?: Record<string, unknown>;
    adapterOptions?: Record<string, unknown>;
    /** How webhook receivers' host names resolve, for gateway and in-process worker alike. */
    pushResolver?: PushResolver;
    /** The log gateway and in-process worker write to (default: one at config.logLevel on stderr). */
    logger?: Logger;
  } = { name: 'gw' },
): Promise<TestGateway> {
  const prefix = uniquePrefix(options.name);
  const config = configSchema.parse({
    // Most suites test tasks, not identity: they run with authentication and limits off, as
    // an explicit setting; the identity suites turn them on.
    auth: { enabled: false },
    limits: LIMITS_OFF,
    cardSigning: false,
    dataDir: join(tmpdir(), `a2a-gateway-test-${prefix}`),
    redisUrl: REDIS_URL,
    redisClusterNodes: REDIS_CLUSTER_NODES,
    keyPrefix: prefix,
    port: 0,
    logLevel: 'silent',
    heartbeatMs: 1_000,
    lockDurationMs: 2_000,
    stalledIntervalMs: 1_000,
    // With several agents configured, each brings its own options.
    ...(options.config?.agents === undefined ? { adapterOptions: { stepMs: 20, ...(options.adapterOptions ?? {}) } } : {}),
    ...(options.config ?? {}),
  });
  const logger = options.logger ?? createLogger(config.logLevel);
  const agents = await Agents.load(config, ROOT);
  const worker = options.inProcessWorker === false ? undefined : await startWorkerRole(config, agents, logger, { baseDir: ROOT, pushResolver: options.pushResolver });
  // As one process running both roles (src/app/process.ts): new tasks' first turns start on its own worker.
  const gateway = await startGatewayRole(config, agents, logger, { baseDir: ROOT, pushResolver: options.pushResolver, localTurns: worker?.localTurns });
  const redis = openTestRedis();
  return {
    prefix,
    config,
    gateway,
    worker,
    url: gateway.url,
    jsonRpcUrl: `${gateway.url}/a2a/jsonrpc`,
    restUrl: `${gateway.url}/a2a/rest`,
    redis,
    snapshotKeys: () => snapshotKeys(redis, prefix),
    async close() {
      await gateway.close();
      await worker?.close();
      await deletePrefix(redis, prefix);
      await redis.quit();
      await rm(config.dataDir, { recursive: true, force: true });
    },
  };
}

export async function snapshotKeys(redis: RedisClient, prefix: string): Promise<Map<string, string>> {
  // The recent-tasks index is written a moment after the change it records (coalesced per
  // process): what this process noted is written out first, so it is not taken for a change.
  await RecentTaskIndex.flushAll();
  const keys: string[] = [];
  for await (const batch of scanKeys(redis, `${prefix}:*`, 1000)) keys.push(...batch);
  const result = new Map<string, string>();
  // BullMQ's own housekeeping (the stall check's marker and its event log) changes on a timer,
  // whatever requests do; everything else under the prefix is compared.
  // Emitted-event digests come and go with a running turn's own progress (appendEvents).
  // So do the push and schedule queues' (workers run them too), the push sweeper's shard locks
  // and the reconciler's lock (taken every reconcileIntervalMs). An owner's byte buckets are
  // charged by what it sent, also when the request is then refused for another reason, and its output bucket by what its running turns store.
  const housekeeping = /:(turns-[^:]+|\{turnq:[^}]+\}:turns-[^:]+|\{pushq\}:push|\{schedq\}:schedules):(stalled-check|stalled|events)$|:\{push:\d+\}:sweeplock$|^[^{]*\{[^}]+\}:emitted$|:reconciler:lock$|:\{o:[^}]+\}:bytes:(ingress|stored|output)$/;
  for (const key of keys.sort()) {
    if (housekeeping.test(key)) continue;
    // Hashes and sets are compared by sorted content: a hashtable-encoded hash is rehashed
    // incrementally by lookups, so a plain read can reorder its DUMP without changing it.
    const type = await redis.type(key);
    // The recent-tasks index by its members: a running turn's own progress moves its task's
    // score (when it last changed) forward; a task added to the index still shows.
    if (key === `${prefix}:{ops}:recent`) result.set(key, `zset members ${JSON.stringify((await redis.zrange(key, 0, -1)).sort())}`);
    else if (type === 'hash') result.set(key, `hash ${JSON.stringify(Object.entries(await redis.hgetall(key)).sort())}`);
    else if (type === 'set') result.set(key, `set ${JSON.stringify((await redis.smembers(key)).sort())}`);
    else result.set(key, `${type} ${(await redis.dumpBuffer(key))?.toString('base64') ?? ''}`);
  }
  return result;
}

/**
 * One key of a task whose turn may be running, without what the turn writes by itself: its
 * status, progress events, turn records' content, step journal, emitted digests and call ids. Whatever a
 * request could write (a new field, a cancel, a queued message, a history entry) still shows.
 * `part` is what follows the task's hash tag (task, events, turns, steps, …).
 */
export async function progressFreeFingerprint(gw: Pick<TestGateway, 'redis'>, key: string, part: string, fingerprint: string): Promise<string> {
  if (part === 'task') {
    const fields = Object.entries(await gw.redis.hgetall(key)).filter(
      ([field]) =>
        // What a running turn changes as it emits (its state, artifacts and their byte counts, the
        // task generation each event bumps).
        !['status', 'state', 'updatedAtMs', 'artifacts', 'outputTurn', 'turnOutputBytes', 'taskOutputBytes', 'eventsBytes', 'artifactChunkBytes', 'generation'].includes(field) &&
        !field.startsWith('artifactBytes:') &&
        !field.startsWith('__call:') &&
        !field.startsWith('__reply:'),
    );
    return `task ${JSON.stringify(fields.sort())}`;
  }
  if (part === 'events') {
    const kept = (await gw.redis.xrange(key, '-', '+'))
      .map(([, fields]) => fields[1] ?? '')
      .filter((json) => json.includes('cancellation') || !/"statusUpdate":.*"state":"TASK_STATE_WORKING"|"artifactUpdate"/.test(json));
    return `events ${JSON.stringify(kept)}`;
  }
  if (part === 'turns') return `turns ${JSON.stringify((await gw.redis.hkeys(key)).sort())}`;
  if (part === 'steps' || part === 'emitted') return part;
  return fingerprint;
}

/**
 * Waits until every turn job left in BullMQ belongs to a task whose turn is queued or running:
 * a finished turn's job is removed just after the task's final state is written, and that
 * clean-up must not land inside a window that proves nothing changed.
 */
export async function turnJobsSettled(gw: Pick<TestGateway, 'redis' | 'prefix'>): Promise<void> {
  await waitFor(
    async () => {
      // Turn queues' keys: `<prefix>:turns-<agent>:…`, or `<prefix>:{turnq:<agent>}:turns-<agent>:…` on a Cluster.
      for await (const keys of scanKeys(gw.redis, `${gw.prefix}:*turns-*:*-t*`, 1000)) {
        for (const key of keys) {
          const taskId = /:turns-[^:]+:([0-9A-Z]{26})-t\d+$/.exec(key)?.[1];
          if (taskId === undefined) continue;
          const state = await gw.redis.hget(`${gw.prefix}:{${taskId}}:task`, 'state');
          if (state !== 'TASK_STATE_SUBMITTED' && state !== 'TASK_STATE_WORKING') return false;
        }
      }
      return true;
    },
    10_000,
    'finished turns to leave the queue',
  );
}

/** How long expectUnchanged lets a just-answered turn's own bookkeeping land before its first snapshot. */
const SETTLE_BEFORE_SNAPSHOT_MS = 100;

/** Runs a request and proves no key under the gateway's prefix appeared, vanished or changed. */
export async function expectUnchanged<T>(gw: Pick<TestGateway, 'snapshotKeys'>, request: () => Promise<T>): Promise<T> {
  // A blocking caller hears its turn's end (pub/sub) a moment before the worker has read the
  // finish's reply and noted the task for the owner's indexes: a test's previous task may still be
  // that moment away. Let it land, so the snapshot holds no change this request did not make.
  await new Promise((resolve) => setTimeout(resolve, SETTLE_BEFORE_SNAPSHOT_MS));
  const before = Object.fromEntries(await gw.snapshotKeys());
  expect(Object.keys(before).length).toBeGreaterThan(0);
  const result = await request();
  expect(Object.fromEntries(await gw.snapshotKeys())).toEqual(before);
  return result;
}

export async function deletePrefix(redis: RedisClient, prefix: string): Promise<void> {
  for await (const batch of scanKeys(redis, `${prefix}:*`, 1000)) {
    // One key per command: a Cluster refuses a multi-key UNLINK across slots.
    if (isCluster(redis)) await Promise.all(batch.map((key) => redis.unlink(key)));
    else await redis.unlink(...batch);
  }
}

export interface WorkerProcess {
  child: ChildProcess;
  pid: number;
  /** Resolves with the exit code or signal once the process ended. */
  exited: Promise<string>;
  kill(signal?: NodeJS.Signals): void;
}

/** A real `a2a-gateway worker` process on the given prefix (for tests that SIGKILL one). */
export async function spawnWorkerProcess(prefix: string, env: Record<string, string> = {}): Promise<WorkerProcess> {
  const child = spawn(process.execPath, [...nodeEntryArgs('src/cli/main.ts'), 'worker'], {
    cwd: ROOT,
    env: {
      ...process.env,
      A2A_REDIS_URL: REDIS_URL,
      A2A_REDIS_CLUSTER_NODES: REDIS_CLUSTER_NODES,
      A2A_KEY_PREFIX: prefix,
      A2A_LOG_LEVEL: 'warn',
      A2A_LOCK_DURATION_MS: '2000',
      A2A_STALLED_INTERVAL_MS: '1000',
      A2A_ADAPTER_OPTIONS: '{"stepMs":20}',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? String(code))));
  await whenChildReady(child, { name: 'worker process', ready: printed('a2a-gateway worker:') });
  return {
    child,
    pid: child.pid as number,
    exited,
    kill: (signal = 'SIGKILL') => {
      child.kill(signal);
    },
  };
}

/** Whether a worker process is still running (not exited, not killed). */
export const isRunning = (worker: WorkerProcess): boolean => worker.child.exitCode === null && worker.child.signalCode === null;

/**
 * Starts worker processes until `workers` holds `count` running ones, the missing ones at once:
 * they start from plain JavaScript (compiled-sources.ts), so two start-ups side by side take about
 * half the wall time of one after the other when a core is free, and no longer when none is.
 */
export async function keepWorkersRunning(workers: WorkerProcess[], prefix: string, env: Record<string, string>, count = 2): Promise<void> {
  while (workers.filter(isRunning).length < count) {
    const missing = count - workers.filter(isRunning).length;
    const started = await Promise.allSettled(Array.from({ length: missing }, () => spawnWorkerProcess(prefix, env)));
    for (const result of started) if (result.status === 'fulfilled') workers.push(result.value);
    const failed = started.find((result): result is PromiseRejectedResult => result.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
  }
}

/** SIGKILLs every worker process still running and waits until all have exited. */
export async function stopWorkerProcesses(workers: readonly WorkerProcess[]): Promise<void> {
  for (const worker of workers) if (isRunning(worker)) worker.kill('SIGKILL');
  await Promise.all(workers.map((worker) => worker.exited));
}

/** JSON-RPC call over raw HTTP (for error paths the official client would not send). */
export async function rpc(
  url: string,
  method: string,
  params: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

export function textMessage(text: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { messageId: `m-${randomBytes(8).toString('hex')}`, role: 'ROLE_USER', parts: [{ text }], ...extra };
}

export async function waitFor<T>(probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 20_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Creates a task straight in the store (for store-level tests), with one user message. */
/** What a test's GatewayOperations.createTask call stores: a one-part user message and test versions, with no caps. */
export function storedTaskInput(input: { taskId: string; contextId: string; owner: Owner; text?: string; messageId?: string; adapter?: string }): Parameters<TaskStore['gateway']['createTask']>[0] {
  const { taskId, contextId } = input;
  return {
    taskId,
    owner: input.owner,
    contextId,
    message: { messageId: input.messageId ?? `m-${taskId}`, role: 'ROLE_USER', parts: [{ text: input.text ?? 'hi' }], taskId, contextId },
    metadata: {},
    idempotencyTtlSeconds: 600,
    versions: { gateway: '0.0.0-test', adapter: input.adapter ?? 'demo@1.0.0', card: '0.0.0-test' },
    maxActiveTasks: 0,
    now: new Date(),
  };
}

export async function createStoredTask(
  store: TaskStore,
  input: { taskId: string; contextId: string; owner: Owner; text?: string; messageId?: string; adapter?: string },
): Promise<{ taskId: string; contextId: string }> {
  const { taskId, contextId } = input;
  const created = await store.gateway.createTask(storedTaskInput(input));
  expect(created.kind).toBe('created');
  return { taskId, contextId };
}
