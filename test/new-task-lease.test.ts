// A new task's first lease, taken in the call that creates it (include/createTask.lua, for a turn
// that starts where the task was accepted), is written and answered from what that call has
// just written, none of it read back. It must be exactly what a worker's acquireLease would
// have taken right after the create: the same lease reply, the same task hash, the same events,
// the same lease key. Checked side by side, on a Redis of this suite's own, with a deadline and
// without, for a top-level task and for a sub-agent's.
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { DEFAULT_REPLAY_BOUND } from '../src/store/replay-bound.ts';
import { ownerKeyOf, TaskStore, type Owner } from '../src/store/task-store.ts';
import { storedTaskInput } from './support/harness.ts';
import { useOwnRedis } from './support/own-redis-suite.ts';

const owner: Owner = { agent: 'default', tenant: '', subject: 'new-task-lease' };
const ownerKey = ownerKeyOf(owner);

let redis: Redis;
useOwnRedis((client) => (redis = client));

let counter = 0;

/** What one task left in Redis, its own ids replaced by `ID` so two tasks compare. */
async function footprint(store: TaskStore, taskId: string, messageId: string): Promise<Record<string, unknown>> {
  const keys = store.keys.task(taskId);
  const same = (text: string): string => text.replaceAll(taskId, 'ID').replaceAll(messageId, 'MESSAGE');
  const hash = await redis.hgetall(keys.task);
  const events = (await redis.xrange(keys.events, '-', '+')).map(([, fields]) => same(fields[1] ?? ''));
  return {
    hash: Object.fromEntries(Object.entries(hash).map(([field, value]) => [same(field), same(value)])),
    events,
    history: (await redis.lrange(keys.history, 0, -1)).map(same),
    turns: Object.fromEntries(Object.entries(await redis.hgetall(keys.turns)).map(([turn, record]) => [turn, same(record)])),
    lease: await redis.get(keys.lease),
    leaseTtlOver55s: (await redis.pttl(keys.lease)) > 55_000,
  };
}

describe("a new task's first lease, taken in its create", () => {
  const variants = [
    { name: 'a top-level task, no deadline', turnDeadlineMs: 0, links: undefined },
    { name: 'a top-level task with a turn deadline', turnDeadlineMs: 90_000, links: undefined },
    { name: "a sub-agent's task", turnDeadlineMs: 30_000, links: { parentTaskId: 'coordinator-1', role: 'reviewer', readOnly: true } },
  ];

  it.each(variants)('is what acquireLease would take next: $name', async ({ turnDeadlineMs, links }) => {
    const store = new TaskStore(redis, `ntl${(counter += 1)}`, 600, DEFAULT_REPLAY_BOUND);
    const now = new Date();
    const contextId = `ctx-${counter}`;
    const terms = { workerId: 'worker-1', leaseTtlMs: 60_000, turnDeadlineMs, maxTurnAttempts: 3 };
    const input = (taskId: string) => ({
      ...storedTaskInput({ taskId, contextId, owner, text: 'echo side by side', messageId: `m-${taskId}` }),
      now,
      callerScopes: ['a2a:read', 'a2a:write'],
      callerExtensions: ['https://example.test/ext'],
      ...(links === undefined ? {} : { links }),
    });
    // In the create's call.
    const taken = await store.gateway.createTask({ ...input('task-a'), takeLease: terms });
    expect(taken.kind).toBe('created');
    // Created, then taken by a worker's call, as a turn started where it was accepted would be.
    const plain = await store.gateway.createTask(input('task-b'));
    expect(plain.kind).toBe('created');
    expect(plain.kind === 'created' && plain.lease).toBeUndefined();
    const acquired = await store.turns.acquireLease({ taskId: 'task-b', ownerKey, contextId, ...terms, withoutJob: true, now });
    expect(acquired.kind).toBe('acquired');
    const lease = taken.kind === 'created' ? taken.lease : undefined;
    expect(lease?.kind).toBe('acquired');
    expect(JSON.parse(JSON.stringify(lease).replaceAll('task-a', 'ID').replaceAll('m-ID', 'MESSAGE'))).toEqual(
      JSON.parse(JSON.stringify(acquired).replaceAll('task-b', 'ID').replaceAll('m-ID', 'MESSAGE')),
    );
    expect(await footprint(store, 'task-a', 'm-task-a')).toEqual(await footprint(store, 'task-b', 'm-task-b'));
  });
});
