// A new task's first job add rides in the same write as its create script (GatewayOperations.createTask,
// queueFirstTurn): one round trip less on the busiest path. Persist before announce must still
// hold: Redis runs what follows the script only after it, so the job can never exist before its
// task. Checked with a stand-in for the job add that asks Redis, on the store's connection,
// whether the task is there yet, and with a re-send, which must not queue again.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { newId } from '../src/ids.ts';
import { TaskStore, type Owner } from '../src/store/task-store.ts';
import { deletePrefix, REDIS_URL, storedTaskInput, uniquePrefix } from './support/harness.ts';

const prefix = uniquePrefix('first-turn');
const owner: Owner = { agent: 'default', tenant: '', subject: 'pipelined' };
let redis: Redis;
let store: TaskStore;

beforeAll(() => {
  redis = new Redis(REDIS_URL, { enableAutoPipelining: true });
  store = new TaskStore(redis, prefix, 1);
});

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await redis.quit();
});

function create(taskId: string, messageId: string, queueFirstTurn: (active: number) => Promise<void>): ReturnType<TaskStore['gateway']['createTask']> {
  return store.gateway.createTask({ ...storedTaskInput({ taskId, contextId: 'ctx', owner, messageId, text: 'echo pipelined' }), queueFirstTurn });
}

it('queues the first turn behind the create script, in its write, and the task is stored when the queueing command runs', async () => {
  const taskId = newId();
  const messageId = `m-${newId()}`;
  const seen: { active: number; taskExisted: number }[] = [];
  let sentInTick = false;
  const created = await create(taskId, messageId, async (active) => {
    // Issued on the store's connection in the tick the script was sent in (auto-pipelining: one write).
    const exists = redis.exists(store.keys.task(taskId).task);
    sentInTick = true;
    seen.push({ active, taskExisted: await exists });
  });
  expect(created.kind).toBe('created');
  expect(created.kind === 'created' && created.enqueued).toBe(true);
  expect(sentInTick).toBe(true);
  expect(seen).toEqual([{ active: 1, taskExisted: 1 }]);

  // The same message again: the task is the first one, and nothing is queued alongside.
  let queuedAgain = false;
  const again = await create(newId(), messageId, async () => {
    queuedAgain = true;
  });
  expect(again).toEqual({ kind: 'duplicate', taskId });
  expect(queuedAgain).toBe(false);
});

it('a failed queueing fails the call, after the task is stored (the caller re-sends the same message to queue it)', async () => {
  const taskId = newId();
  await expect(create(taskId, `m-${newId()}`, () => Promise.reject(new Error('queue unreachable')))).rejects.toThrow('queue unreachable');
  expect(await redis.exists(store.keys.task(taskId).task)).toBe(1);
});
