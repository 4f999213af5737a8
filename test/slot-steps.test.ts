// The cross-slot writes as single-slot steps (docs/redis-slots.md): claim in the owner's slot,
// create or change the task in its own, index afterwards. A crash between two steps (simulated by
// running a step alone) leaves something the next attempt or the next claim completes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownerKeyOf, TaskStore, type Owner } from '../src/store/task-store.ts';
import { defineScripts } from '../src/store/scripts.ts';
import { newId } from '../src/ids.ts';
import { rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';

const owner: Owner = { agent: 'default', tenant: '', subject: 'anonymous' };
const ownerKey = ownerKeyOf(owner);
let gw: TestGateway;
let store: TaskStore;

beforeAll(async () => {
  gw = await startTestGateway({ name: 'slot-steps', config: { limits: { requestsPerSecond: 0, maxActiveTasks: 1, unauthenticatedPerSecond: 0 } } });
  store = new TaskStore(gw.redis, gw.prefix);
});

afterAll(async () => {
  await gw?.close();
});

type TaskView = { id: string; status: { state: string } };
const taskOf = (body: Record<string, unknown>): TaskView => (body.result as { task: TaskView }).task;

describe('crash between the owner claim and the task write', () => {
  it('a claim whose task was never created is completed by the re-sent message, under the claimed id', async () => {
    const message = textMessage('echo claimed, then the gateway died');
    const claimedId = newId();
    const nowMs = Date.now();
    // Step 1 alone, exactly as createTask runs it: the process dies before step 2.
    const run = defineScripts(gw.redis);
    const claimed = await run(
      'claimTask',
      [
        store.keys.idempotency(ownerKey, message.messageId as string),
        store.keys.ownerActiveTasks(ownerKey),
        store.keys.ownerQuota(ownerKey),
        store.keys.ownerQuotaChecks(ownerKey),
        store.keys.ownerTasks(ownerKey),
        store.keys.ownerContextTasks(ownerKey, 'lost-context'),
        store.keys.byteBucket(ownerKey, 'stored'),
      ],
      [claimedId, nowMs, 3600, 1, 0, 0, 0, 0, 0, 0, 0],
    );
    expect(claimed[0]).toBe('CLAIMED');
    expect(await gw.redis.exists(store.keys.task(claimedId).task)).toBe(0);

    // The client re-sends: the same task id, created now, and its turn runs.
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message });
    const task = taskOf(body);
    expect(task.id).toBe(claimedId);
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    // Once more: a plain duplicate now.
    expect(taskOf((await rpc(gw.jsonRpcUrl, 'SendMessage', { message })).body).id).toBe(claimedId);
    // It finished: its active entry goes with the owner's next index write.
    await waitFor(async () => ((await gw.redis.zscore(store.keys.ownerActiveTasks(ownerKey), claimedId)) === null ? true : undefined), 10_000, 'the active entry to go');
    expect(await gw.redis.zscore(store.keys.ownerTasks(ownerKey), claimedId)).not.toBeNull();
  });
});

describe('crash between the task write and the owner index', () => {
  it('an active entry of a task that finished (its drop lost) is dropped by the next claim at the cap', async () => {
    const first = taskOf((await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('echo first') })).body);
    expect(first.status.state).toBe('TASK_STATE_COMPLETED');
    const active = store.keys.ownerActiveTasks(ownerKey);
    await waitFor(async () => ((await gw.redis.zscore(active, first.id)) === null ? true : undefined), 10_000, 'the finish to leave the active set');
    // The process that finished it died before its note reached the owner's slot.
    const created = Number(await gw.redis.hget(store.keys.task(first.id).task, 'createdAtMs'));
    await gw.redis.zadd(active, created, first.id);

    // At the cap of 1, yet the next task is accepted: the claim looked at the entry's task.
    const second = taskOf((await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('echo second') })).body);
    expect(second.status.state).toBe('TASK_STATE_COMPLETED');
  });

  it('a fresh claim whose task is still being created holds its slot', async () => {
    const active = store.keys.ownerActiveTasks(ownerKey);
    await gw.redis.zadd(active, Date.now(), 'being-created');
    try {
      const refused = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('echo at the cap') });
      expect(JSON.stringify(refused.body.error)).toContain('ACTIVE_TASK_LIMIT');
    } finally {
      await gw.redis.zrem(active, 'being-created');
    }
  });
});
