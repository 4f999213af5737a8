// The replay buffer is bounded in bytes as well as in events (replay.maxBytes, docs/replay.md):
// a task of few but large events cannot hold more than maxBytes in Redis. The byte trim records
// what it dropped exactly as the count trim does, so a resume from before the buffer gets the
// same documented answer (the snapshot, then the REPLAY_BUFFER_TRIMMED note), and push configs
// hold what they were not sent up to pushHoldMaxBytes. Runs on a Redis Cluster too.
import { randomBytes } from 'node:crypto';
import { SendMessageRequest, SubscribeToTaskRequest, TaskState, type StreamResponse as SdkStreamResponse } from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/load.ts';
import type { StreamResponse, TaskStatus } from '../src/protocol/types.ts';
import { replayBoundOf, type ReplayBound } from '../src/store/replay-bound.ts';
import { ownerKeyOf, TaskStore, type Owner } from '../src/store/task-store.ts';
import type { RedisClient } from '../src/redis/connection.ts';
import { createStoredTask, deletePrefix, openTestRedis, startTestGateway, uniquePrefix, waitFor, type TestGateway } from './support/harness.ts';

const owner: Owner = { agent: 'default', tenant: '', subject: 'replay-bytes' };
const ownerKey = ownerKeyOf(owner);
const KIB = 1024;

let redis: RedisClient;
const prefix = uniquePrefix('replay-bytes');

beforeAll(() => {
  redis = openTestRedis();
});

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await redis.quit();
});

const id = (label: string): string => `${label}-${randomBytes(6).toString('hex')}`;
const bound = (overrides: Partial<ReplayBound>): ReplayBound => ({ maxEvents: 0, maxAgeMs: 0, pushHoldMaxEvents: 0, maxBytes: 0, pushHoldMaxBytes: 0, ...overrides });

/** A task whose turn holds a lease in `store`; `append(n, size)` adds n status updates of about `size` bytes each. */
async function runningTask(store: TaskStore): Promise<{ taskId: string; appended: string[]; append: (n: number, size: number) => Promise<void> }> {
  const taskId = id('task');
  const contextId = id('ctx');
  await createStoredTask(store, { taskId, contextId, owner });
  const lease = await store.turns.acquireLease({ taskId, ownerKey, contextId, workerId: 'w', leaseTtlMs: 60_000, now: new Date() });
  if (lease.kind !== 'acquired') throw new Error(`no lease: ${JSON.stringify(lease)}`);
  const appended = (await redis.xrange(store.keys.task(taskId).events, '-', '+')).map(([entryId]) => entryId);
  const append = async (n: number, size: number): Promise<void> => {
    for (let i = 0; i < n; i++) {
      const status: TaskStatus = { state: 'TASK_STATE_WORKING', timestamp: new Date().toISOString(), message: { messageId: id('m'), role: 'ROLE_AGENT', parts: [{ text: 'b'.repeat(size) }] } };
      const event: StreamResponse = { statusUpdate: { taskId, contextId, status } };
      const result = await store.turns.appendEvents({ taskId, ownerKey, contextId, generation: lease.generation, artifacts: undefined, status, events: [event], now: new Date() });
      if (result.kind === 'appended') appended.push(result.eventId);
    }
  };
  return { taskId, appended, append };
}

/** The buffer's entries: id and stored size. */
async function buffer(store: TaskStore, taskId: string): Promise<{ id: string; bytes: number }[]> {
  return (await redis.xrange(store.keys.task(taskId).events, '-', '+')).map(([entryId, fields]) => ({ id: entryId, bytes: Buffer.byteLength(fields[1] as string) }));
}

const sum = (entries: { bytes: number }[]): number => entries.reduce((total, entry) => total + entry.bytes, 0);

async function counters(store: TaskStore, taskId: string): Promise<{ through: string | null; trimmed: number; bytes: number }> {
  const [through, trimmed, bytes] = await redis.hmget(store.keys.task(taskId).task, 'eventsTrimmedThrough', 'eventsTrimmed', 'eventsBytes');
  return { through: through ?? null, trimmed: Number(trimmed ?? 0), bytes: Number(bytes ?? 0) };
}

describe('the byte bound (store level)', () => {
  it('keeps at most maxBytes of events, the oldest going first, and records what went as the count bound does', async () => {
    const store = new TaskStore(redis, prefix, 600, bound({ maxBytes: 8 * KIB }));
    const task = await runningTask(store);
    for (let round = 0; round < 6; round++) {
      await task.append(5, 1000);
      const kept = await buffer(store, task.taskId);
      expect(sum(kept)).toBeLessThanOrEqual(8 * KIB);
      // Not a byte more is dropped than needed: one more event would not fit.
      const dropped = task.appended.length - kept.length;
      expect(kept.map((entry) => entry.id)).toEqual(task.appended.slice(dropped));
      const state = await counters(store, task.taskId);
      expect(state.bytes).toBe(sum(kept));
      if (dropped > 0) expect(state).toMatchObject({ through: task.appended[dropped - 1], trimmed: dropped });
    }
    const kept = await buffer(store, task.taskId);
    expect(sum(kept) + 1100).toBeGreaterThan(8 * KIB);
    expect(task.appended.length - kept.length).toBeGreaterThan(20);
  });

  it('the newest event stays, however large; the next append lets it go', async () => {
    const store = new TaskStore(redis, prefix, 600, bound({ maxBytes: 4 * KIB }));
    const task = await runningTask(store);
    await task.append(1, 20 * KIB);
    expect((await buffer(store, task.taskId)).map((entry) => entry.id)).toEqual([task.appended.at(-1)]);
    await task.append(1, 100);
    const kept = await buffer(store, task.taskId);
    expect(kept.map((entry) => entry.id)).toEqual([task.appended.at(-1)]);
    expect((await counters(store, task.taskId)).bytes).toBe(sum(kept));
  });

  it('what a push config was not sent stays past maxBytes, up to pushHoldMaxBytes', async () => {
    const store = new TaskStore(redis, prefix, 600, bound({ maxBytes: 4 * KIB, pushHoldMaxBytes: 12 * KIB }));
    const task = await runningTask(store);
    const [first] = task.appended;
    await redis.hset(store.keys.task(task.taskId).pushCursors, 'd:slow', first as string, 'i:slow', '');
    await task.append(8, 1000);
    // Held: everything after the slow receiver's cursor, past maxBytes.
    expect((await buffer(store, task.taskId)).map((entry) => entry.id)).toEqual(task.appended.slice(1));
    expect(sum(await buffer(store, task.taskId))).toBeGreaterThan(4 * KIB);
    await task.append(12, 1000);
    const held = await buffer(store, task.taskId);
    expect(sum(held)).toBeLessThanOrEqual(12 * KIB);
    expect(sum(held)).toBeGreaterThan(4 * KIB);
    expect((await counters(store, task.taskId)).bytes).toBe(sum(held));
  });

  it('the settings come from the environment', () => {
    const { config } = loadConfig({ A2A_REPLAY_MAX_BYTES: '65536', A2A_REPLAY_PUSH_HOLD_MAX_BYTES: '131072' });
    expect(replayBoundOf(config.replay)).toMatchObject({ maxBytes: 65_536, pushHoldMaxBytes: 131_072 });
    expect(replayBoundOf(loadConfig({}).config.replay)).toMatchObject({ maxBytes: 16 * KIB * KIB, pushHoldMaxBytes: 64 * KIB * KIB });
    expect(() => loadConfig({ A2A_REPLAY_MAX_BYTES: '-1' })).toThrow(/A2A_REPLAY_MAX_BYTES/);
  });
});

describe('resuming from a buffer the byte bound trimmed', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({
      name: 'replay-bytes-gw',
      config: { replay: { maxBytes: 4 * KIB }, agents: { burst: { adapter: 'test/fixtures/burst-adapter.mjs', adapterOptions: { stepMs: 30 } } } },
    });
  }, 30_000);
  afterAll(async () => {
    await gw?.close();
  });

  const sdkState = (event: SdkStreamResponse): TaskState | undefined =>
    event.payload?.$case === 'statusUpdate' ? event.payload.value.status?.state : event.payload?.$case === 'task' ? event.payload.value.status?.state : undefined;

  it('from before the buffer: the snapshot, the REPLAY_BUFFER_TRIMMED note, then live events; from inside: exactly the events after the id [guarantee:stream.replay]', async () => {
    const client = await new ClientFactory().createFromUrl(`${gw.url}/agents/burst/.well-known/agent-card.json`, '');
    const eventsKey = (taskId: string): string => `${gw.prefix}:{${taskId}}:events`;
    const first = await client.sendMessage(
      SendMessageRequest.fromJSON({ message: { messageId: id('rb'), role: 'ROLE_USER', parts: [{ text: 'burst 60' }] }, configuration: { returnImmediately: true } }),
    );
    const taskId = (first as { id: string }).id;
    const early = await waitFor(async () => {
      const entries = await gw.redis.xrange(eventsKey(taskId), '-', '+');
      return entries[0]?.[0];
    });
    await waitFor(async () => {
      const [trimmed] = await gw.redis.hmget(`${gw.prefix}:{${taskId}}:task`, 'eventsTrimmed');
      const [state] = await gw.redis.hmget(`${gw.prefix}:{${taskId}}:task`, 'state');
      return Number(trimmed ?? 0) > 0 && state === 'TASK_STATE_INPUT_REQUIRED' ? true : undefined;
    });
    const kept = await gw.redis.xrange(eventsKey(taskId), '-', '+');
    // Bounded by bytes only: far fewer than maxEvents (2,000) are kept.
    expect(kept.reduce((total, [, fields]) => total + Buffer.byteLength(fields[1] as string), 0)).toBeLessThanOrEqual(4 * KIB);
    const read = (lastEventId: string): { events: SdkStreamResponse[]; done: Promise<void> } => {
      const events: SdkStreamResponse[] = [];
      const stream = client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: taskId }), { serviceParameters: { 'Last-Event-ID': lastEventId } });
      const done = (async () => {
        for await (const event of stream) events.push(event);
      })();
      return { events, done };
    };
    const insideFrom = kept.length - 3;
    const inside = read(kept[insideFrom]?.[0] as string);
    const before = read(early);
    await expect.poll(() => before.events.length + inside.events.length, { timeout: 20_000 }).toBeGreaterThanOrEqual(2 + 2);
    await client.sendMessage(SendMessageRequest.fromJSON({ message: { messageId: id('rb'), role: 'ROLE_USER', taskId, parts: [{ text: 'finish 2' }] }, configuration: { returnImmediately: true } }));
    await Promise.all([inside.done, before.done]);
    // finish 2 appends five events: submitted, working, two progress updates, completed.
    const live = 5;
    expect(inside.events.some((e) => e.payload?.$case === 'task')).toBe(false);
    expect(inside.events).toHaveLength(2 + live);
    expect(before.events[0]?.payload?.$case).toBe('task');
    const note = before.events[1]?.payload;
    const metadata = note?.$case === 'statusUpdate' ? (note.value.metadata as Record<string, unknown> | undefined) : undefined;
    expect(metadata).toMatchObject({ a2aGateway: { replay: { reason: 'REPLAY_BUFFER_TRIMMED', lastEventId: early } } });
    expect(before.events.slice(2)).toHaveLength(live);
    expect(before.events.map(sdkState).at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
  }, 60_000);
});
