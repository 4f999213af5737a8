// The replay bound at the store level, against a Redis of the test's own (MONITOR must see only
// this test's commands): the trim runs inside the script that appends, never as a command of
// its own; a stale write trims nothing; the age bound; push cursors hold the buffer up to the
// cap; and a feed that falls behind the buffer while it catches up is told so instead of
// skipping silently.
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import type { EventHub, LiveEvent } from '../src/events/hub.ts';
import { openTaskFeed } from '../src/events/task-feed.ts';
import type { StreamResponse, TaskStatus } from '../src/protocol/types.ts';
import { loadConfig } from '../src/config/load.ts';
import { DEFAULT_REPLAY_BOUND, replayBoundOf, type ReplayBound } from '../src/store/replay-bound.ts';
import { ownerKeyOf, StaleLeaseError, TaskStore, type Owner } from '../src/store/task-store.ts';
import { createStoredTask, waitFor } from './support/harness.ts';
import { useOwnRedis } from './support/own-redis-suite.ts';
import { openMonitor } from './support/monitor.ts';

const owner: Owner = { agent: 'default', tenant: '', subject: 'replay-bound' };
const ownerKey = ownerKeyOf(owner);
const prefix = 'rb';

let redis: Redis;

const id = (label: string): string => `${label}-${randomBytes(6).toString('hex')}`;
const bound = (overrides: Partial<ReplayBound>): ReplayBound => ({ maxEvents: 0, maxAgeMs: 0, pushHoldMaxEvents: 0, maxBytes: 0, pushHoldMaxBytes: 0, ...overrides });

useOwnRedis((client) => (redis = client));

/** A task whose turn holds a lease in `store`: appends go through its fenced appendEvents. */
async function runningTask(
  store: TaskStore,
): Promise<{ taskId: string; contextId: string; generation: number; appended: string[]; append: (n: number, generation?: number) => Promise<void> }> {
  const taskId = id('task');
  const contextId = id('ctx');
  await createStoredTask(store, { taskId, contextId, owner });
  const lease = await store.turns.acquireLease({ taskId, ownerKey, contextId, workerId: 'w', leaseTtlMs: 60_000, now: new Date() });
  if (lease.kind !== 'acquired') throw new Error(`no lease: ${JSON.stringify(lease)}`);
  const appended = (await redis.xrange(store.keys.task(taskId).events, '-', '+')).map(([entryId]) => entryId);
  const append = async (n: number, generation = lease.generation): Promise<void> => {
    for (let i = 0; i < n; i++) {
      const status: TaskStatus = { state: 'TASK_STATE_WORKING', timestamp: new Date().toISOString(), message: { messageId: id('a'), role: 'ROLE_AGENT', parts: [{ text: `step ${i}` }] } };
      const event: StreamResponse = { statusUpdate: { taskId, contextId, status } };
      const result = await store.turns.appendEvents({ taskId, ownerKey, contextId, generation, artifacts: undefined, status, events: [event], now: new Date() });
      if (result.kind === 'appended') appended.push(result.eventId);
    }
  };
  return { taskId, contextId, generation: lease.generation, appended, append };
}

const ids = async (store: TaskStore, taskId: string): Promise<string[]> => (await redis.xrange(store.keys.task(taskId).events, '-', '+')).map(([entryId]) => entryId);
const trimmedFields = async (store: TaskStore, taskId: string) => redis.hmget(store.keys.task(taskId).task, 'eventsTrimmedThrough', 'eventsTrimmed');

describe('the replay bound (store level, own Redis)', () => {
  it('trims inside the appending script: MONITOR sees every XTRIM run by Lua, and the stream never passes its bound', async () => {
    const store = new TaskStore(redis, prefix, 600, bound({ maxEvents: 5 }));
    const task = await runningTask(store);
    const monitor = await openMonitor(redis);
    const trims: string[] = [];
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if ((args[0] ?? '').toUpperCase() === 'XTRIM') trims.push(source);
    });
    const watcher = redis.duplicate();
    let longest = 0;
    let watching = true;
    const watching$ = (async () => {
      while (watching) longest = Math.max(longest, await watcher.xlen(store.keys.task(task.taskId).events));
    })();
    await task.append(30);
    watching = false;
    await watching$;
    await waitFor(() => (trims.length >= 26 ? true : undefined), 10_000, 'the monitor lines');
    monitor.disconnect();
    watcher.disconnect();
    expect(trims.length).toBeGreaterThanOrEqual(26);
    expect(new Set(trims)).toEqual(new Set(['lua']));
    expect(longest).toBeLessThanOrEqual(5);
    const kept = await ids(store, task.taskId);
    expect(kept).toHaveLength(5);
    // What is kept is the newest five, and the newest dropped event is recorded exactly.
    expect(kept).toEqual(task.appended.slice(-5));
    expect(await trimmedFields(store, task.taskId)).toEqual([task.appended.at(-6), String(task.appended.length - 5)]);
  });

  it('an append that trims reads each event it drops once: the drop is counted from what finding the cut read', async () => {
    // Reading a megabyte event into Lua costs Redis a fresh allocation of that size: reading the
    // dropped events a second time to count their bytes doubled the trim's cost (abuse row 14b).
    for (const replay of [{ maxEvents: 3 }, { maxBytes: 1 }, { maxEvents: 4, maxBytes: 1 }]) {
      const store = new TaskStore(redis, prefix, 600, bound(replay));
      const task = await runningTask(store);
      await task.append(5);
      const monitor = await openMonitor(redis);
      const ranges: string[][] = [];
      monitor.on('monitor', (_time: string, args: string[], source: string) => {
        if (source === 'lua' && (args[0] ?? '').toUpperCase() === 'XRANGE') ranges.push(args.slice(2));
      });
      const before = await ids(store, task.taskId);
      await task.append(1);
      await redis.ping();
      await waitFor(() => (ranges.length > 0 ? true : undefined), 5_000, 'the monitor lines');
      monitor.disconnect();
      const dropped = before.length + 1 - (await ids(store, task.taskId)).length;
      expect(dropped, JSON.stringify(replay)).toBeGreaterThan(0);
      // One read from the oldest event finds the cut; none reads up to the cut again.
      expect(ranges, JSON.stringify(replay)).toHaveLength(1);
      const k = store.keys.task(task.taskId);
      const [bytes] = await redis.hmget(k.task, 'eventsBytes');
      const held = (await redis.xrange(k.events, '-', '+')).reduce((sum, [, fields]) => sum + Buffer.byteLength(fields[1] as string), 0);
      expect(Number(bytes), JSON.stringify(replay)).toBe(held);
    }
  });

  it('a stale write trims nothing, even over a lowered bound; the next fenced append trims', async () => {
    const wide = new TaskStore(redis, prefix, 600, bound({ maxEvents: 50 }));
    const task = await runningTask(wide);
    await task.append(6);
    const narrow = new TaskStore(redis, prefix, 600, bound({ maxEvents: 3 }));
    const k = narrow.keys.task(task.taskId);
    const eventsBefore = await redis.xrange(k.events, '-', '+');
    const hashBefore = await redis.hgetall(k.task);
    const status: TaskStatus = { state: 'TASK_STATE_WORKING', timestamp: new Date().toISOString() };
    await expect(
      narrow.turns.appendEvents({ taskId: task.taskId, ownerKey, contextId: task.contextId, generation: task.generation - 1, artifacts: undefined, status, events: [{ statusUpdate: { taskId: task.taskId, contextId: task.contextId, status } }], now: new Date() }),
    ).rejects.toBeInstanceOf(StaleLeaseError);
    expect(await redis.xrange(k.events, '-', '+')).toEqual(eventsBefore);
    expect(await redis.hgetall(k.task)).toEqual(hashBefore);
    const narrowed = await runningTaskAppend(narrow, task);
    expect(narrowed).toHaveLength(3);
  });

  it('drops events older than maxAgeMs from an open task, by the Redis clock', async () => {
    const store = new TaskStore(redis, prefix, 600, bound({ maxAgeMs: 400 }));
    const task = await runningTask(store);
    await task.append(3);
    const old = await ids(store, task.taskId);
    expect(old).toHaveLength(5);
    await new Promise((resolve) => setTimeout(resolve, 600));
    await task.append(1);
    const kept = await ids(store, task.taskId);
    expect(kept).toHaveLength(1);
    expect(await trimmedFields(store, task.taskId)).toEqual([old.at(-1), '5']);
  });

  it('keeps what a push cursor has not been sent, up to pushHoldMaxEvents; a settled cursor lets it go', async () => {
    const store = new TaskStore(redis, prefix, 600, bound({ maxEvents: 4, pushHoldMaxEvents: 10 }));
    const task = await runningTask(store);
    const cursors = store.keys.task(task.taskId).pushCursors;
    const [firstId] = await ids(store, task.taskId);
    // A receiver got the task's first event and nothing since.
    await redis.hset(cursors, 'd:slow', firstId as string, 'i:slow', '');
    await task.append(6);
    // Everything after the slow receiver's cursor stays (7 of 8), past maxEvents.
    expect(await ids(store, task.taskId)).toEqual(task.appended.slice(1));
    expect((await trimmedFields(store, task.taskId))[0]).toBe(firstId);
    // Past the cap the events go all the same.
    await task.append(6);
    expect(await ids(store, task.taskId)).toHaveLength(10);
    // Once the receiver caught up, the buffer comes back to its bound on the next append.
    await redis.hset(cursors, 'd:slow', (await ids(store, task.taskId)).at(-1) as string);
    await task.append(1);
    expect(await ids(store, task.taskId)).toHaveLength(4);
  });

  it('a feed that falls behind the buffer while catching up is handed over to its consumer, who continues after a snapshot', async () => {
    const store = new TaskStore(redis, prefix, 600, bound({ maxEvents: 4 }));
    const task = await runningTask(store);
    const [, second] = await ids(store, task.taskId);
    // A hub whose live delivery the test drives: nothing is published live, then a gap.
    let onGap: (() => void) | undefined;
    const hub = { listen: (_taskId: string, _onEvent: unknown, gap: () => void) => ((onGap = gap), () => undefined) } as unknown as EventHub;
    const delivered: LiveEvent[] = [];
    const behind: string[] = [];
    let continueAfter = '';
    const feed = openTaskFeed({
      hub,
      store,
      taskId: task.taskId,
      afterId: second as string,
      liveOnly: true,
      onEvent: (event) => delivered.push(event),
      onError: (error) => {
        throw error;
      },
      onBehindBuffer: async (lastDeliveredId) => {
        behind.push(lastDeliveredId);
        return continueAfter;
      },
    });
    await task.append(10);
    const kept = await ids(store, task.taskId);
    continueAfter = kept[1] as string;
    onGap?.();
    await waitFor(() => (delivered.length >= 2 ? true : undefined), 10_000, 'the events after the snapshot');
    feed.close();
    expect(behind).toEqual([second]);
    expect(delivered.map((e) => e.id)).toEqual(kept.slice(2));
  });
});

/** One fenced append with `store`'s bound on a task made by another store; the buffer's ids after it. */
async function runningTaskAppend(store: TaskStore, task: { taskId: string; contextId: string; generation: number }): Promise<string[]> {
  const status: TaskStatus = { state: 'TASK_STATE_WORKING', timestamp: new Date().toISOString() };
  await store.turns.appendEvents({ taskId: task.taskId, ownerKey, contextId: task.contextId, generation: task.generation, artifacts: undefined, status, events: [{ statusUpdate: { taskId: task.taskId, contextId: task.contextId, status } }], now: new Date() });
  return ids(store, task.taskId);
}

describe('the replay settings', () => {
  it('default to a bound every demo task fits in, and come from the environment', () => {
    expect(replayBoundOf(loadConfig({}).config.replay)).toEqual(DEFAULT_REPLAY_BOUND);
    const { config } = loadConfig({ A2A_REPLAY_MAX_EVENTS: '6', A2A_REPLAY_MAX_AGE_SECONDS: '60', A2A_REPLAY_PUSH_HOLD_MAX_EVENTS: '9' });
    expect(replayBoundOf(config.replay)).toEqual({ maxEvents: 6, maxAgeMs: 60_000, pushHoldMaxEvents: 9, maxBytes: DEFAULT_REPLAY_BOUND.maxBytes, pushHoldMaxBytes: DEFAULT_REPLAY_BOUND.pushHoldMaxBytes });
    expect(() => loadConfig({ A2A_REPLAY_MAX_EVENTS: '-1' })).toThrow(/A2A_REPLAY_MAX_EVENTS/);
  });
});
