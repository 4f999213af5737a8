// Redis memory of one open task's replay buffer over a long task (gateway only, no server: the
// bound lives in the store's scripts, so this drives TurnOperations.appendEvents directly, the path
// an adapter's events take). Two tasks get the same `events` progress updates (about 250 bytes
// each, like the demo's `long` skill): one under the replay bound, one with it off. At each
// checkpoint it reads MEMORY USAGE (SAMPLES 0: every entry counted) of the task's events stream
// and hash. With the bound the figure stops growing at maxEvents; without it it grows linearly.
import { performance } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { DEFAULT_REPLAY_BOUND, type ReplayBound } from '../../src/store/replay-bound.ts';
import { ownerKeyOf, TaskStore, type Owner } from '../../src/store/task-store.ts';
import type { StreamResponse, TaskStatus } from '../../src/protocol/types.ts';

export interface ReplayMemorySample {
  events: number;
  /** MEMORY USAGE of the events stream, KB. */
  streamKb: number;
  /** MEMORY USAGE of the task hash, KB (it holds the bound's bookkeeping). */
  taskHashKb: number;
  streamLength: number;
}

export interface ReplayMemoryRun {
  bound: ReplayBound;
  samples: ReplayMemorySample[];
  appendsPerSec: number;
}

export interface ReplayMemoryResult {
  events: number;
  trimmed: ReplayMemoryRun;
  untrimmed: ReplayMemoryRun;
}

const owner: Owner = { agent: 'bench', tenant: '', subject: 'replay-memory' };
/** Appends in flight at once (one task, like an adapter with a fast event source and pipelining). */
const IN_FLIGHT = 16;

async function runOne(redis: Redis, prefix: string, bound: ReplayBound, events: number, checkpoints: number): Promise<ReplayMemoryRun> {
  const store = new TaskStore(redis, prefix, 600, bound);
  const taskId = `bench-${randomBytes(6).toString('hex')}`;
  const contextId = `ctx-${taskId}`;
  const ownerKey = ownerKeyOf(owner);
  await store.gateway.createTask({
    taskId,
    owner,
    contextId,
    message: { messageId: `m-${taskId}`, role: 'ROLE_USER', parts: [{ text: 'long 100000' }], taskId, contextId },
    metadata: {},
    idempotencyTtlSeconds: 600,
    versions: { gateway: 'bench', adapter: 'bench@1', card: 'bench' },
    maxActiveTasks: 0,
    now: new Date(),
  });
  const lease = await store.turns.acquireLease({ taskId, ownerKey, contextId, workerId: 'bench', leaseTtlMs: 600_000, now: new Date() });
  if (lease.kind !== 'acquired') throw new Error(`replay-memory: no lease on ${taskId}: ${lease.kind}`);
  const k = store.keys.task(taskId);
  const samples: ReplayMemorySample[] = [];
  const sample = async (done: number): Promise<void> => {
    const [stream, hash, length] = await Promise.all([
      redis.call('MEMORY', 'USAGE', k.events, 'SAMPLES', '0') as Promise<number>,
      redis.call('MEMORY', 'USAGE', k.task, 'SAMPLES', '0') as Promise<number>,
      redis.xlen(k.events),
    ]);
    samples.push({ events: done, streamKb: Number(stream) / 1024, taskHashKb: Number(hash) / 1024, streamLength: length });
  };
  const progress = (i: number): { status: TaskStatus; event: StreamResponse } => {
    const status: TaskStatus = {
      state: 'TASK_STATE_WORKING',
      timestamp: new Date().toISOString(),
      message: { messageId: `p-${taskId}-${i}`, role: 'ROLE_AGENT', parts: [{ text: `progress ${i + 1}/${events}` }], taskId, contextId, metadata: { progress: i + 1, total: events } },
    };
    return { status, event: { statusUpdate: { taskId, contextId, status } } };
  };
  const every = Math.max(1, Math.floor(events / checkpoints));
  let next = 0;
  let elapsedMs = 0;
  for (let checkpoint = every; checkpoint <= events; checkpoint += every) {
    const from = performance.now();
    // IN_FLIGHT appenders take the next index below the checkpoint, so each sample is taken at it exactly.
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < checkpoint) {
          const { status, event } = progress(next++);
          await store.turns.appendEvents({ taskId, ownerKey, contextId, generation: lease.generation, artifacts: undefined, status, events: [event], now: new Date() });
        }
      }),
    );
    elapsedMs += performance.now() - from;
    await sample(checkpoint);
  }
  // The bench's own keys go when it ends (nothing else uses this prefix).
  await redis.del(k.task, k.events, k.history, k.messageIds, k.turns, k.lease, k.emitted, store.keys.ownerTasks(ownerKey), store.keys.ownerContextTasks(ownerKey, contextId), store.keys.ownerActiveTasks(ownerKey), store.keys.idempotency(ownerKey, `m-${taskId}`));
  return { bound, samples, appendsPerSec: (next / elapsedMs) * 1000 };
}

export async function runReplayMemory(options: { redisUrl: string; events: number; checkpoints: number; bound?: ReplayBound }): Promise<ReplayMemoryResult> {
  const redis = new Redis(options.redisUrl);
  const prefix = `bench-replay-${randomBytes(4).toString('hex')}`;
  try {
    const trimmed = await runOne(redis, prefix, options.bound ?? DEFAULT_REPLAY_BOUND, options.events, options.checkpoints);
    const untrimmed = await runOne(redis, prefix, { maxEvents: 0, maxAgeMs: 0, pushHoldMaxEvents: 0, maxBytes: 0, pushHoldMaxBytes: 0 }, options.events, options.checkpoints);
    return { events: options.events, trimmed, untrimmed };
  } finally {
    await redis.quit();
  }
}
