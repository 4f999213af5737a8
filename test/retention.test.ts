// Terminal tasks and their replay buffers expire after the configured retention; tasks that
// are still open never do; ListTasks forgets expired tasks instead of counting them.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownerKeyOf, TaskStore, type Owner } from '../src/store/task-store.ts';
import { TaskListing } from '../src/store/task-listing.ts';
import { createStoredTask, deletePrefix, REDIS_URL, uniquePrefix, waitFor } from './support/harness.ts';

const owner: Owner = { agent: 'default', tenant: '', subject: 'retention-tester' };
const RETENTION_SECONDS = 1;
let redis: Redis;
let store: TaskStore;
let prefix: string;
let counter = 0;

async function newTask(): Promise<{ taskId: string; contextId: string }> {
  counter += 1;
  const taskId = `task-${counter}`;
  const contextId = 'ctx-retention';
  await createStoredTask(store, { taskId, contextId, owner, messageId: `m-${counter}` });
  return { taskId, contextId };
}

async function finish(taskId: string, contextId: string, state: 'TASK_STATE_COMPLETED' | 'TASK_STATE_INPUT_REQUIRED'): Promise<void> {
  const lease = await store.turns.acquireLease({ taskId, ownerKey: ownerKeyOf(owner), contextId, workerId: 'w', leaseTtlMs: 60_000, now: new Date() });
  if (lease.kind !== 'acquired') throw new Error(`lease: ${lease.kind}`);
  const finished = await store.turns.finishTurn({
    taskId,
    ownerKey: ownerKeyOf(owner),
    contextId,
    generation: lease.generation,
    status: { state, timestamp: new Date().toISOString() },
    agentMessage: undefined,
    turnRecord: { turn: 1, inputMessageIds: [], acceptedAtMs: Date.now() },
    artifacts: [],
    now: new Date(),
  });
  expect(finished.kind).toBe('done');
}

beforeAll(() => {
  redis = new Redis(REDIS_URL);
  prefix = uniquePrefix('retention');
  store = new TaskStore(redis, prefix, RETENTION_SECONDS);
});

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await redis.quit();
});

describe('retention', () => {
  it('expires a completed task with its replay buffer, keeps an open one, and ListTasks forgets it', async () => {
    const done = await newTask();
    await finish(done.taskId, done.contextId, 'TASK_STATE_COMPLETED');
    const waiting = await newTask();
    await finish(waiting.taskId, waiting.contextId, 'TASK_STATE_INPUT_REQUIRED');
    const canceled = await newTask();
    expect((await store.gateway.cancelTask(canceled.taskId, owner, new Date())).kind).toBe('canceled');

    const k = store.keys.task(done.taskId);
    for (const key of [k.task, k.events, k.history, k.turns, k.messageIds]) {
      const ttl = await redis.ttl(key);
      expect(ttl, key).toBeGreaterThan(0);
      expect(ttl, key).toBeLessThanOrEqual(RETENTION_SECONDS);
    }
    expect(await redis.ttl(store.keys.task(waiting.taskId).task)).toBe(-1); // open: never expires
    expect(await redis.ttl(store.keys.task(canceled.taskId).events)).toBeGreaterThan(0);

    // The canceled task was finished last, so it expires last: wait for both.
    const c = store.keys.task(canceled.taskId);
    await waitFor(async () => (await redis.exists(k.task, k.events, c.task, c.events)) === 0 || undefined, 10_000, 'expiry');
    expect(await store.gateway.readTask(done.taskId, owner, undefined)).toBeUndefined();
    expect(await store.gateway.readTask(waiting.taskId, owner, undefined)).toBeDefined();

    const page = await new TaskListing(store, { maxPageBytes: 1 << 20, maxScannedEntries: 100 }).list({ owner, contextId: undefined, state: undefined, pageSize: 10, cursor: undefined, statusTimestampAfterMs: undefined, historyLength: 0, includeArtifacts: false });
    expect(page.tasks.map((t) => t.id)).toEqual([waiting.taskId]);
    expect(page.total).toBe(1);
    expect(await redis.zscore(store.keys.ownerTasks(ownerKeyOf(owner)), done.taskId)).toBeNull();
  });
});
