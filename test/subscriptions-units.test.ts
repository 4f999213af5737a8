// Subscriptions' parts on their own: the per-owner bound holds under concurrent creation (real
// Redis), each gateway's copy of an owner's subscriptions is read once and dropped on a change or
// a failed read, and the note a delivery body gets keeps the payload's own metadata.
import { afterAll, describe, expect, it } from 'vitest';
import { SubscriptionDirectory } from '../src/push/subscription-directory.ts';
import { matchingSubscriptions, withSubscriptionNote } from '../src/push/subscription-configs.ts';
import { SubscriptionStore, type StoredSubscription } from '../src/store/push/subscription-store.ts';
import { deletePrefix, openTestRedis, uniquePrefix } from './support/harness.ts';

const redis = openTestRedis();
const prefix = uniquePrefix('subs-units');

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await redis.quit();
});

const subscription = (id: string, contextId?: string): StoredSubscription => ({ id, url: `https://receiver.example/${id}`, createdAtMs: Date.now(), ...(contextId === undefined ? {} : { contextId }) });

describe('subscription store', () => {
  it('never keeps more than the bound, however many are created at once', async () => {
    const store = new SubscriptionStore(redis, prefix);
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => store.save('demo//race', subscription(`s${i}`), 4)));
    const kept = await store.list('demo//race');
    expect(kept.length).toBeLessThanOrEqual(4);
    expect(results.filter((r) => r.kind === 'saved').length).toBe(kept.length);
    // One at a time, the bound is reached exactly.
    for (let i = 0; i < 6; i++) await store.save('demo//serial', subscription(`t${i}`), 4);
    expect((await store.list('demo//serial')).map((s) => s.id)).toEqual(['t0', 't1', 't2', 't3']);
  });

  it("is per owner: one owner's subscription is not another's", async () => {
    const store = new SubscriptionStore(redis, prefix);
    await store.save('demo//alice', subscription('a1'), 4);
    expect(await store.read('demo//bob', 'a1')).toBeUndefined();
    expect(await store.remove('demo//bob', 'a1')).toBe(false);
    expect(await store.exists('demo//alice', 'a1')).toBe(true);
  });
});

describe('subscription directory', () => {
  const fakeStore = (lists: StoredSubscription[][]): { store: SubscriptionStore; reads: () => number } => {
    let reads = 0;
    const store = {
      list: async () => {
        const next = lists[Math.min(reads, lists.length - 1)];
        reads++;
        if (next === undefined) throw new Error('Redis is down');
        return next;
      },
      changedChannel: () => 'changed',
    } as unknown as SubscriptionStore;
    return { store, reads: () => reads };
  };

  it('reads an owner once, again after a change, and keeps no failed read', async () => {
    const { store, reads } = fakeStore([[], [subscription('x')]]);
    const directory = new SubscriptionDirectory(store);
    expect(await directory.forOwner('o')).toEqual([]);
    expect(await directory.forOwner('o')).toEqual([]);
    expect(reads()).toBe(1);
    directory.invalidate('o');
    expect((await directory.forOwner('o')).map((s) => s.id)).toEqual(['x']);
    expect(reads()).toBe(2);

    let fail = true;
    const flaky = new SubscriptionDirectory({
      list: async () => {
        if (fail) throw new Error('Redis is down');
        return [subscription('y')];
      },
      changedChannel: () => 'changed',
    } as unknown as SubscriptionStore);
    await expect(flaky.forOwner('o')).rejects.toThrow('Redis is down');
    fail = false;
    expect((await flaky.forOwner('o')).map((s) => s.id)).toEqual(['y']);
  });

  it('a context filter covers that context only; none covers all', () => {
    const all = subscription('all');
    const one = subscription('one', 'ctx-1');
    expect(matchingSubscriptions([all, one], 'ctx-1')).toEqual([all, one]);
    expect(matchingSubscriptions([all, one], 'ctx-2')).toEqual([all]);
  });
});

describe('the note in a subscription delivery', () => {
  it("names the subscription and the task in the payload's metadata, keeping what was there", () => {
    const event = { statusUpdate: { taskId: 't', contextId: 'c', status: { state: 'TASK_STATE_WORKING' }, metadata: { mine: 1, a2aGateway: { schedule: { id: 's' } } } } };
    expect(JSON.parse(withSubscriptionNote(JSON.stringify(event), 'sub', 't'))).toEqual({
      statusUpdate: { ...event.statusUpdate, metadata: { mine: 1, a2aGateway: { schedule: { id: 's' }, subscription: { id: 'sub', taskId: 't' } } } },
    });
    expect(JSON.parse(withSubscriptionNote('{"task":{"id":"t","contextId":"c","status":{}}}', 'sub', 't')).task.metadata).toEqual({ a2aGateway: { subscription: { id: 'sub', taskId: 't' } } });
    expect(withSubscriptionNote('not json', 'sub', 't')).toBe('not json');
  });
});
