// A new task watched from before its creation (src/events/held-feed.ts): what it publishes
// before its stream attaches is held and delivered first, in order, with no read of the replay
// buffer; past the hold's bound, or when no stream attaches in time, the watch lets go of its
// listener and a stream that attaches later reads the buffer: every event still arrives, once,
// in order. Real scripts publish on a Redis of this suite's own, to a real hub.
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HELD_EVENTS_MAX, holdTaskFeed, type HeldTaskFeed } from '../src/events/held-feed.ts';
import { EventHub, type LiveEvent } from '../src/events/hub.ts';
import type { StreamResponse, TaskStatus } from '../src/protocol/types.ts';
import { ownerKeyOf, TaskStore, type Owner } from '../src/store/task-store.ts';
import { createStoredTask, waitFor } from './support/harness.ts';
import { useOwnRedis } from './support/own-redis-suite.ts';

const owner: Owner = { agent: 'default', tenant: '', subject: 'held-feed' };
const ownerKey = ownerKeyOf(owner);
const unbounded = { maxEvents: 0, maxAgeMs: 0, pushHoldMaxEvents: 0, maxBytes: 0, pushHoldMaxBytes: 0 };

let redis: Redis;
let subscriber: Redis;
let store: TaskStore;
let hub: EventHub;
/** Buffer reads the feeds made (TaskStore.gateway.readEventsAfter). */
let reads = 0;

useOwnRedis((client) => (redis = client));

beforeAll(async () => {
  store = new TaskStore(redis, 'hf', 600, unbounded);
  const read = store.gateway.readEventsAfter.bind(store.gateway);
  store.gateway.readEventsAfter = (...args) => {
    reads += 1;
    return read(...args);
  };
  subscriber = redis.duplicate();
  hub = new EventHub(subscriber, store.channels);
  await hub.start();
});

afterAll(async () => {
  await subscriber?.quit();
});

/** Creates the task (its creation event) and appends `steps` status events under its lease. */
async function createAndRun(taskId: string, steps: number): Promise<(more: number) => Promise<void>> {
  const contextId = `ctx-${taskId}`;
  await createStoredTask(store, { taskId, contextId, owner });
  const lease = await store.turns.acquireLease({ taskId, ownerKey, contextId, workerId: 'w', leaseTtlMs: 60_000, now: new Date() });
  if (lease.kind !== 'acquired') throw new Error(`no lease: ${JSON.stringify(lease)}`);
  const append = async (more: number): Promise<void> => {
    for (let i = 0; i < more; i++) {
      const status: TaskStatus = { state: 'TASK_STATE_WORKING', timestamp: new Date().toISOString(), message: { messageId: `a-${randomBytes(4).toString('hex')}`, role: 'ROLE_AGENT', parts: [{ text: `step ${i}` }] } };
      const event: StreamResponse = { statusUpdate: { taskId, contextId, status } };
      const result = await store.turns.appendEvents({ taskId, ownerKey, contextId, generation: lease.generation, artifacts: undefined, status, events: [event], now: new Date() });
      expect(result.kind).toBe('appended');
    }
  };
  await append(steps);
  return append;
}

const bufferIds = async (taskId: string): Promise<string[]> => (await redis.xrange(store.keys.task(taskId).events, '-', '+')).map(([entryId]) => entryId);

/**
 * Attaches a consumer to `feed`, runs `meanwhile` (more events, say), and waits until it holds
 * exactly what the buffer holds (and nothing trickles in after: no copy from a read and a live
 * one). Returns what it got, its ids against the buffer's, and the buffer reads it took.
 */
async function attachAndDrain(feed: HeldTaskFeed, taskId: string, meanwhile?: () => Promise<void>): Promise<{ delivered: LiveEvent[]; ids: string[]; buffer: string[]; reads: number }> {
  const readsBefore = reads;
  const delivered: LiveEvent[] = [];
  const attached = feed.attach({
    afterId: '',
    onEvent: (event) => delivered.push(event),
    onError: (error) => {
      throw error;
    },
  });
  await meanwhile?.();
  const buffer = await bufferIds(taskId);
  await waitFor(() => (delivered.length >= buffer.length ? true : undefined), 10_000, `${buffer.length} events`);
  await new Promise((resolve) => setTimeout(resolve, 100));
  attached.close();
  return { delivered, ids: delivered.map((event) => event.id), buffer, reads: reads - readsBefore };
}

describe('a feed held from before its task is created', () => {
  it('delivers what the task published before the stream attached, then what follows, in order, reading no buffer', async () => {
    const taskId = `t-${randomBytes(6).toString('hex')}`;
    const feed = holdTaskFeed(hub, store, taskId);
    const append = await createAndRun(taskId, 3);
    // Published and heard before the stream attaches: held.
    await waitFor(async () => ((await bufferIds(taskId)).length === 5 ? true : undefined), 5_000, 'the events stored');
    await new Promise((resolve) => setTimeout(resolve, 100));
    const got = await attachAndDrain(feed, taskId, () => append(2));
    expect(got.ids).toEqual(got.buffer);
    expect(got.ids).toHaveLength(7);
    // The same events, byte for byte, as a stream reading the buffer gets (invariant 7).
    expect(got.delivered.map((event) => event.json)).toEqual((await store.gateway.readEvents(taskId, '')).map((event) => event.json));
    expect(got.delivered[0]?.json.startsWith('{"task":')).toBe(true);
    expect(got.reads).toBe(0);
    expect(hub.listenerCount(taskId)).toBe(0);
  });

  it(`past ${HELD_EVENTS_MAX} events unattached, lets go of its listener; the stream then reads them all from the buffer, once, in order`, async () => {
    const taskId = `t-${randomBytes(6).toString('hex')}`;
    const feed = holdTaskFeed(hub, store, taskId);
    await createAndRun(taskId, HELD_EVENTS_MAX + 4);
    await waitFor(() => (hub.listenerCount(taskId) === 0 ? true : undefined), 5_000, 'the watch to let go');
    const got = await attachAndDrain(feed, taskId);
    expect(got.ids).toEqual(got.buffer);
    expect(got.reads).toBeGreaterThan(0);
  });

  it('not attached in time, lets go of its listener; attached later, it reads the buffer', async () => {
    const taskId = `t-${randomBytes(6).toString('hex')}`;
    const feed = holdTaskFeed(hub, store, taskId, 150);
    const append = await createAndRun(taskId, 2);
    expect(hub.listenerCount(taskId)).toBe(1);
    await waitFor(() => (hub.listenerCount(taskId) === 0 ? true : undefined), 5_000, 'the watch to time out');
    const got = await attachAndDrain(feed, taskId, () => append(1));
    expect(got.ids).toEqual(got.buffer);
    expect(got.reads).toBeGreaterThan(0);
  });

  it('closed unattached (the call made no task of its own), frees its listener at once', async () => {
    const taskId = `t-${randomBytes(6).toString('hex')}`;
    const feed = holdTaskFeed(hub, store, taskId);
    expect(hub.listenerCount(taskId)).toBe(1);
    feed.close();
    expect(hub.listenerCount(taskId)).toBe(0);
    expect(() => feed.attach({ afterId: '', onEvent: () => undefined, onError: () => undefined })).toThrow(/attached or closed/);
  });
});
