// A 1 MB message is stored once (issue 14, item 5): a new task's creation event in the replay
// buffer refers to the task's history instead of holding the message again, and every reader of
// the buffer (SSE replay, the store's event reads behind gRPC and SDK resubscribes, push
// delivery, the operators' timeline) gets the event byte for byte as it was published live.
// Measured on a Redis of the test's own: the bytes of every key the echo left (MEMORY USAGE).
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readTimeline } from '../src/operator/task-timeline.ts';
import { PushKeys } from '../src/store/push/push-keys.ts';
import { PushStore } from '../src/store/push/push-store.ts';
import type { StreamResponse } from '../src/protocol/types.ts';
import { creationEvent, inflate, INLINE_MESSAGE_BYTES, refersToHistory } from '../src/store/creation-event.ts';
import { TaskStore } from '../src/store/task-store.ts';
import { startTestGateway, textMessage, type TestGateway } from './support/harness.ts';
import { startOwnRedis, type OwnRedis } from './support/redis-server.ts';
import { openSse, type SseEvent } from './support/sse.ts';

const MESSAGE_BYTES = 1_000_000;
const STREAM_HEADERS = { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Accept: 'text/event-stream' };

let own: OwnRedis;
let redis: Redis;
let gw: TestGateway;
/** What the scripts published on each task's event channel, as every gateway's pattern subscription receives it. */
let announcer: Redis;
const announced = new Map<string, string[]>();

beforeAll(async () => {
  own = await startOwnRedis();
  redis = new Redis(own.url);
  gw = await startTestGateway({ name: 'stored-once', config: { redisUrl: own.url, maxBodyBytes: 4 * 1024 * 1024, sseMaxBufferedBytes: 16 * 1024 * 1024 }, adapterOptions: { stepMs: 5 } });
  announcer = new Redis(own.url);
  announcer.on('pmessage', (_pattern: string, channel: string, message: string) => {
    const taskId = channel.slice(channel.indexOf('{') + 1, -1);
    announced.set(taskId, [...(announced.get(taskId) ?? []), message]);
  });
  await announcer.psubscribe(`${gw.prefix}:ev:*`);
});

afterAll(async () => {
  await gw?.close();
  await announcer?.quit();
  await redis?.quit();
  await own?.stop();
});

/** Bytes Redis uses for every key under the prefix (MEMORY USAGE, all samples). */
async function storedBytes(): Promise<{ total: number; byKey: Record<string, number> }> {
  const byKey: Record<string, number> = {};
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${gw.prefix}:*`, 'COUNT', 500);
    cursor = next;
    for (const key of keys) byKey[key.slice(gw.prefix.length + 1)] = Number(await redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
  } while (cursor !== '0');
  return { total: Object.values(byKey).reduce((a, b) => a + b, 0), byKey };
}

const resultOf = (event: SseEvent): string => {
  // The JSON-RPC envelope around the event, as the SSE binding writes it.
  const head = event.data.indexOf('"result":');
  expect(head, event.data.slice(0, 200)).toBeGreaterThan(0);
  return event.data.slice(head + '"result":'.length, -1);
};

describe('the message stored once', () => {
  it('a 1 MB echo keeps the message once in Redis, and every reader gets the events as they were published', async () => {
    const message = textMessage(`echo ${'m'.repeat(MESSAGE_BYTES)}`);
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendStreamingMessage', params: { message } });
    const live = await openSse(gw.jsonRpcUrl, { method: 'POST', headers: STREAM_HEADERS, body });
    await live.reader.done;
    const liveEvents = live.reader.events.map((event) => ({ id: event.id ?? '', json: resultOf(event) }));
    const created = JSON.parse(liveEvents[0]?.json ?? 'null') as StreamResponse;
    expect('task' in created && created.task.status.state).toBe('TASK_STATE_SUBMITTED');
    const taskId = 'task' in created ? created.task.id : '';
    const state = JSON.parse(liveEvents.at(-1)?.json ?? 'null') as StreamResponse;
    expect('statusUpdate' in state && state.statusUpdate.status.state).toBe('TASK_STATE_COMPLETED');

    // Stored: the creation event refers to the history.
    const raw = await redis.xrange(`${gw.prefix}:{${taskId}}:events`, '-', '+');
    expect(refersToHistory(raw[0]?.[1][1] ?? '')).toBe(true);
    // Announced by its id alone: every gateway's subscription gets a few bytes, not the megabyte.
    expect(announced.get(taskId)?.[0]).toBe(liveEvents[0]?.id);
    const { total, byKey } = await storedBytes();
    // Before: history 1.0 MB, creation event 1.0 MB, the echo's artifact event 1.0 MB and its
    // artifact in the task hash 1.0 MB (about 4.1 MB). The caller's message is now one of them.
    expect(total, JSON.stringify(byKey)).toBeLessThan(3.3 * MESSAGE_BYTES);
    expect(byKey[`{${taskId}}:events`] ?? 0).toBeLessThan(1.2 * MESSAGE_BYTES);

    // Readers: the store's event reads (SSE and gRPC replay, SDK resubscribes use them).
    const store = new TaskStore(redis, gw.prefix);
    const read = await store.gateway.readEvents(taskId, '');
    expect(read.map((e) => ({ id: e.id, json: e.json }))).toEqual(liveEvents);
    const after = await store.gateway.readEventsAfter(taskId, '', 100);
    expect(after.events.map((e) => e.json)).toEqual(liveEvents.map((e) => e.json));

    // SSE replay over the wire: SubscribeToTask from before the first event.
    const replay = await openSse(gw.jsonRpcUrl, {
      method: 'POST',
      headers: { ...STREAM_HEADERS, 'Last-Event-ID': '0-1' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SubscribeToTask', params: { id: taskId } }),
    });
    await replay.reader.done;
    const replayed = replay.reader.events.map((event) => ({ id: event.id ?? '', json: resultOf(event) }));
    expect(replayed[0]).toEqual(liveEvents[0]);

    // The operators' timeline (tasks inspect).
    const timeline = await readTimeline(redis, gw.prefix, taskId, 50);
    expect(timeline.entries.map((e) => JSON.stringify(e.event))).toEqual(liveEvents.map((e) => e.json));

    // Push delivery: the outbox step's event JSON for a cursor before the creation event.
    const push = new PushStore(redis, gw.prefix);
    await redis.hset(new PushKeys(gw.prefix).task(taskId).configs, 'c1', JSON.stringify({ id: 'c1', taskId, url: 'https://receiver.test.example/hook' }));
    const next = await push.next(taskId, true);
    expect(next.kind === 'ok' && next.deliveries[0]?.eventJson).toBe(liveEvents[0]?.json);
    const settled = await push.settle(taskId, 'c1', next.kind === 'ok' ? (next.deliveries[0]?.eventId ?? '') : '', 'delivered');
    expect(settled?.eventJson).toBe(liveEvents[1]?.json);
  });

  it('keeps a small first message in the event too, and puts a big one back byte for byte', () => {
    const task = { id: 't', contextId: 'c', status: { state: 'TASK_STATE_SUBMITTED' as const, timestamp: 'now' }, history: [textMessage('small') as never] };
    const small = creationEvent(task, JSON.stringify(task.history[0]));
    expect(small.stored).toBe(small.published);
    expect(small.stored).toBe(JSON.stringify({ task }));
    // A context id of multi-byte characters before the history: the script's splice counts bytes, the readers' characters.
    const big = { ...task, contextId: 'ç-ü-✓-𝄞', history: [textMessage('x'.repeat(INLINE_MESSAGE_BYTES)) as never], metadata: { note: '"history":[]' } };
    const messageJson = JSON.stringify(big.history[0]);
    const event = creationEvent(big, messageJson);
    expect(refersToHistory(event.stored)).toBe(true);
    expect(event.published).toBeUndefined();
    expect(event.stored.length).toBeLessThan(JSON.stringify({ task: big }).length - INLINE_MESSAGE_BYTES);
    expect(inflate(event.stored, messageJson)).toBe(JSON.stringify({ task: big }));
    // What createTask-7.lua publishes: the bytes after the mark's ':' up to messageAtByte, the message, the rest.
    const bytes = Buffer.from(event.stored);
    const spliced = Buffer.concat([bytes.subarray(bytes.indexOf(':') + 1, event.messageAtByte), Buffer.from(messageJson), bytes.subarray(event.messageAtByte)]);
    expect(spliced.toString()).toBe(JSON.stringify({ task: big }));
  });

  it('publishes a mid-sized first message put together by the script, the same bytes a replay reads', async () => {
    // Over INLINE_MESSAGE_BYTES (kept once) and under the announcement bound (sent whole to subscribers).
    const text = `echo ${'é'.repeat(8_000)}`;
    const message = textMessage(text, { contextId: `ctx-ç-✓-${Date.now()}` });
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendStreamingMessage', params: { message } });
    const live = await openSse(gw.jsonRpcUrl, { method: 'POST', headers: STREAM_HEADERS, body });
    await live.reader.done;
    const first = live.reader.events[0];
    const created = JSON.parse(resultOf(first as SseEvent)) as StreamResponse;
    expect('task' in created && created.task.history?.[0]?.parts).toEqual([{ text }]);
    expect('task' in created && created.task.contextId).toBe(message.contextId);
    const taskId = 'task' in created ? created.task.id : '';
    const raw = await redis.xrange(`${gw.prefix}:{${taskId}}:events`, '-', '+');
    expect(refersToHistory(raw[0]?.[1][1] ?? '')).toBe(true);
    const store = new TaskStore(redis, gw.prefix);
    const replayed = await store.gateway.readEvents(taskId, '');
    expect({ id: replayed[0]?.id, json: replayed[0]?.json }).toEqual({ id: first?.id, json: resultOf(first as SseEvent) });
    // Published whole, put together by the script: the bytes a replay reads.
    expect(announced.get(taskId)?.[0]).toBe(`${first?.id ?? ''}\n${replayed[0]?.json ?? ''}`);
  });
});
