// Replay buffers are bounded (issue 12 point 3, docs/replay.md): a task with more events than
// replay.maxEvents keeps exactly that many; a Last-Event-ID from inside the buffer still gets
// exactly the events after it (invariant 7); one from before it gets the Task snapshot, a note
// naming what was skipped, then the events after the snapshot, and the stream ends at the
// terminal event. Over raw SSE (both bindings) and the official SDK client (both bindings).
//
// The burst adapter fills the buffer and then waits for input, so each resume below starts
// while nothing moves; the test's next message then makes the live events.
import { randomBytes } from 'node:crypto';
import { SendMessageRequest, SubscribeToTaskRequest, TaskState, type StreamResponse as SdkStreamResponse } from '@a2a-js/sdk';
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory, type Client } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatInspection, inspectTask, type TaskInspection } from '../src/cli/inspect.ts';
import { compareEventIds } from '../src/events/hub.ts';
import type { StreamResponse, TaskState as WireState } from '../src/protocol/types.ts';
import { rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';
import { openSse, type SseEvent } from './support/sse.ts';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.ts';

const MAX_EVENTS = 8;
const PUSH_HOLD_MAX_EVENTS = 16;
let gw: TestGateway;
let receiver: WebhookReceiver;

beforeAll(async () => {
  gw = await startTestGateway({
    name: 'replay-trim',
    config: {
      replay: { maxEvents: MAX_EVENTS, pushHoldMaxEvents: PUSH_HOLD_MAX_EVENTS },
      push: { allowedHosts: ['127.0.0.1'], sweepIntervalMs: 200, retryInitialDelayMs: 100, retryMaxDelayMs: 300 },
      agents: { burst: { adapter: 'test/fixtures/burst-adapter.mjs', adapterOptions: { stepMs: 30 } } },
    },
  });
  receiver = await startWebhookReceiver();
});

afterAll(async () => {
  await receiver?.close();
  await gw?.close();
});

const eventsKey = (taskId: string): string => `${gw.prefix}:{${taskId}}:events`;

async function buffer(taskId: string): Promise<{ id: string; raw: string }[]> {
  return (await gw.redis.xrange(eventsKey(taskId), '-', '+')).map(([id, fields]) => ({ id, raw: fields[1] as string }));
}

/** Events ever appended to the task: what the buffer holds plus what its bound dropped. */
async function appendedSoFar(taskId: string): Promise<number> {
  const [trimmed] = await gw.redis.hmget(`${gw.prefix}:{${taskId}}:task`, 'eventsTrimmed');
  return Number(trimmed ?? 0) + (await gw.redis.xlen(eventsKey(taskId)));
}

/** 1 for the task's first event ever, 2 for the next, … for an event still in the buffer. */
async function ordinalOf(taskId: string, eventId: string): Promise<number> {
  const entries = await buffer(taskId);
  const index = entries.findIndex((e) => e.id === eventId);
  expect(index, `event ${eventId} is in the buffer`).toBeGreaterThanOrEqual(0);
  return (await appendedSoFar(taskId)) - entries.length + index + 1;
}

async function send(text: string, taskId?: string, pushUrl?: string): Promise<string> {
  const { status, body } = await rpc(gw.jsonRpcUrl, 'SendMessage', {
    message: textMessage(text, taskId === undefined ? {} : { taskId }),
    configuration: { returnImmediately: true, ...(pushUrl === undefined ? {} : { taskPushNotificationConfig: { url: pushUrl } }) },
  });
  expect(status, JSON.stringify(body)).toBe(200);
  return ((body.result as { task: { id: string } }).task).id;
}

async function stateOf(taskId: string): Promise<WireState> {
  const { body } = await rpc(gw.jsonRpcUrl, 'GetTask', { id: taskId, historyLength: 0 });
  return (body.result as { status: { state: WireState } }).status.state;
}

/**
 * A task whose buffer was filled past its bound, now waiting for input: `early` are ids of its
 * first events, which a client saw before the bound dropped them.
 */
async function filledTask(): Promise<{ taskId: string; early: string[] }> {
  const taskId = await send('burst 0');
  await waitFor(async () => ((await stateOf(taskId)) === 'TASK_STATE_INPUT_REQUIRED' ? true : undefined), 20_000, 'the first pause');
  const early = (await buffer(taskId)).map((e) => e.id);
  await send('burst 20', taskId);
  await waitFor(async () => ((await stateOf(taskId)) === 'TASK_STATE_INPUT_REQUIRED' && (await appendedSoFar(taskId)) > early.length + 20 ? true : undefined), 20_000, 'the burst');
  return { taskId, early };
}

type Binding = 'jsonrpc' | 'rest';

async function subscribeRaw(binding: Binding, taskId: string, lastEventId: string) {
  const headers = { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Accept: 'text/event-stream', 'Last-Event-ID': lastEventId };
  if (binding === 'jsonrpc') {
    return openSse(gw.jsonRpcUrl, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SubscribeToTask', params: { id: taskId } }) });
  }
  return openSse(`${gw.restUrl}/tasks/${taskId}:subscribe`, { method: 'POST', headers });
}

function payloadOf(binding: Binding, event: SseEvent): StreamResponse {
  const parsed = JSON.parse(event.data) as Record<string, unknown>;
  if (binding === 'rest') return parsed as unknown as StreamResponse;
  expect(parsed.error, event.data).toBeUndefined();
  return parsed.result as StreamResponse;
}

const stateOfEvent = (event: StreamResponse): WireState | undefined =>
  'statusUpdate' in event ? event.statusUpdate.status.state : 'task' in event ? event.task.status.state : undefined;

describe.each<Binding>(['jsonrpc', 'rest'])('raw SSE over %s', (binding) => {
  it('the buffer stays at its bound; a resume from inside it is exact, one from before it gets snapshot, note, then live events to the end', async () => {
    const { taskId, early } = await filledTask();
    const kept = await buffer(taskId);
    expect(kept).toHaveLength(MAX_EVENTS);
    const trimmedThrough = await gw.redis.hget(`${gw.prefix}:{${taskId}}:task`, 'eventsTrimmedThrough');
    expect(compareEventIds(trimmedThrough as string, (kept[0] as { id: string }).id)).toBeLessThan(0);
    // tasks inspect says what the bound dropped.
    const inspection = await inspectTask(gw.redis, gw.prefix, taskId);
    expect(inspection?.events).toMatchObject({ count: MAX_EVENTS, trimmed: { count: (await appendedSoFar(taskId)) - MAX_EVENTS, throughId: trimmedThrough } });
    expect(formatInspection(inspection as TaskInspection)).toContain(`older ones trimmed (through ${trimmedThrough})`);

    // From inside: exactly the events after the id, nothing else (no snapshot, no note).
    const inside = (kept[2] as { id: string }).id;
    const insideOrdinal = await ordinalOf(taskId, inside);
    const fromInside = await subscribeRaw(binding, taskId, inside);
    await fromInside.reader.waitForEvents(MAX_EVENTS - 3);
    expect(fromInside.reader.events.map((e) => e.id)).toEqual(kept.slice(3).map((e) => e.id));
    expect(fromInside.reader.events.map((e) => JSON.stringify(payloadOf(binding, e)))).toEqual(kept.slice(3).map((e) => e.raw));

    // From before: the snapshot (as a stream start has it), the note, then what follows.
    const before = early[1] as string;
    const fromBefore = await subscribeRaw(binding, taskId, before);
    const [snapshotFrame, noteFrame] = await fromBefore.reader.waitForEvents(2);
    const snapshot = payloadOf(binding, snapshotFrame as SseEvent);
    expect('task' in snapshot && snapshot.task.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    const newest = (kept.at(-1) as { id: string }).id;
    expect(snapshotFrame?.id).toBe(newest);
    const note = payloadOf(binding, noteFrame as SseEvent);
    expect(noteFrame?.id, 'the note is not a buffered event: it has no SSE id').toBeUndefined();
    expect(note).toMatchObject({
      statusUpdate: {
        taskId,
        status: { state: 'TASK_STATE_INPUT_REQUIRED' },
        metadata: { a2aGateway: { replay: { reason: 'REPLAY_BUFFER_TRIMMED', lastEventId: before, trimmedThroughEventId: trimmedThrough, snapshotEventId: newest } } },
      },
    });
    const skipped = (note as unknown as { statusUpdate: { metadata: { a2aGateway: { replay: { eventsTrimmed: number } } } } }).statusUpdate.metadata.a2aGateway.replay;
    expect(skipped.eventsTrimmed).toBe((await appendedSoFar(taskId)) - MAX_EVENTS);

    // Live events reach both streams; both end at the terminal event, and neither misses one.
    const appendedAtResume = await appendedSoFar(taskId);
    await send('finish 3', taskId);
    await Promise.all([fromInside.reader.done, fromBefore.reader.done]);
    const total = await appendedSoFar(taskId);
    const streams = [
      { events: fromInside.reader.events, after: inside, expected: total - insideOrdinal },
      { events: fromBefore.reader.events.slice(2), after: newest, expected: total - appendedAtResume },
    ];
    for (const { events, after, expected } of streams) {
      const ids = events.map((e) => e.id as string);
      expect(ids.every((id, i) => i === 0 || compareEventIds(id, ids[i - 1] as string) > 0), 'in order, no duplicates').toBe(true);
      expect(compareEventIds(ids[0] as string, after)).toBeGreaterThan(0);
      expect(ids, 'every event after the resume point').toHaveLength(expected);
      expect(stateOfEvent(payloadOf(binding, events.at(-1) as SseEvent))).toBe('TASK_STATE_COMPLETED');
    }
    expect(await gw.redis.xlen(eventsKey(taskId))).toBe(MAX_EVENTS);

    // The task has ended: a resume from before its buffer gets the final snapshot and the note, and ends.
    const late = await subscribeRaw(binding, taskId, before);
    await late.reader.done;
    expect(late.reader.events.map((e) => stateOfEvent(payloadOf(binding, e)))).toEqual(['TASK_STATE_COMPLETED', 'TASK_STATE_COMPLETED']);
    expect(late.reader.events[0]?.id).toBe((await buffer(taskId)).at(-1)?.id);
    expect(payloadOf(binding, late.reader.events[1] as SseEvent)).toMatchObject({ statusUpdate: { metadata: { a2aGateway: { replay: { lastEventId: before } } } } });
  });
});

interface Flavour {
  name: string;
  binding: 'JSONRPC' | 'HTTP+JSON';
  version: '1.0' | '0.3';
}

async function sdkClient(flavour: Flavour): Promise<Client> {
  const legacyCompat = { enabled: flavour.version === '0.3' };
  const transport = flavour.binding === 'JSONRPC' ? new JsonRpcTransportFactory({ legacyCompat }) : new RestTransportFactory({ legacyCompat });
  const factory = new ClientFactory({ transports: [transport], cardResolver: new DefaultAgentCardResolver({ legacyCompat }) });
  const cardUrl = `${gw.url}/agents/burst/.well-known/agent-card.json`;
  if (flavour.version === '1.0') return factory.createFromUrl(cardUrl, '');
  const legacyCard = (await (await fetch(`${cardUrl}?A2A-Version=0.3`)).json()) as Record<string, unknown>;
  delete legacyCard.supportedInterfaces;
  return factory.createFromAgentCard(legacyCard as never);
}

const sdkState = (event: SdkStreamResponse): TaskState | undefined =>
  event.payload?.$case === 'statusUpdate' ? event.payload.value.status?.state : event.payload?.$case === 'task' ? event.payload.value.status?.state : undefined;

describe.each<Flavour>([
  { name: '1.0 JSON-RPC', binding: 'JSONRPC', version: '1.0' },
  { name: '1.0 HTTP+JSON', binding: 'HTTP+JSON', version: '1.0' },
  { name: '0.3 JSON-RPC', binding: 'JSONRPC', version: '0.3' },
  { name: '0.3 HTTP+JSON', binding: 'HTTP+JSON', version: '0.3' },
])('the official SDK client ($name)', (flavour) => {
  it('resubscribing from inside the buffer yields exactly the events after the id; from before it, the snapshot, the skip note, then live events to the terminal one', async () => {
    const client = await sdkClient(flavour);
    const { taskId, early } = await filledTask();
    const kept = await buffer(taskId);
    const read = (lastEventId: string): { events: SdkStreamResponse[]; done: Promise<void> } => {
      const events: SdkStreamResponse[] = [];
      const stream = client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: taskId }), { serviceParameters: { 'Last-Event-ID': lastEventId } });
      const done = (async () => {
        for await (const event of stream) events.push(event);
      })();
      return { events, done };
    };
    const inside = read((kept[4] as { id: string }).id);
    const before = read(early[0] as string);
    await expect.poll(() => before.events.length + inside.events.length, { timeout: 20_000 }).toBeGreaterThanOrEqual(2 + MAX_EVENTS - 5);
    await client.sendMessage(
      SendMessageRequest.fromJSON({ message: { messageId: `rt-${randomBytes(6).toString('hex')}`, role: 'ROLE_USER', taskId, parts: [{ text: 'finish 2' }] }, configuration: { returnImmediately: true } }),
    );
    await Promise.all([inside.done, before.done]);
    // finish 2 appends five events: submitted, working, two progress updates, completed.
    const live = 5;
    expect(inside.events.some((e) => e.payload?.$case === 'task'), 'a resume from inside the buffer gets no snapshot').toBe(false);
    expect(inside.events).toHaveLength(MAX_EVENTS - 5 + live);
    expect(inside.events.map(sdkState).at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);

    expect(before.events[0]?.payload?.$case).toBe('task');
    expect(sdkState(before.events[0] as SdkStreamResponse)).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const note = before.events[1]?.payload;
    expect(note?.$case).toBe('statusUpdate');
    const metadata = note?.$case === 'statusUpdate' ? (note.value.metadata as Record<string, unknown> | undefined) : undefined;
    expect(metadata).toMatchObject({ a2aGateway: { replay: { reason: 'REPLAY_BUFFER_TRIMMED', lastEventId: early[0] } } });
    expect(before.events.slice(2)).toHaveLength(live);
    expect(before.events.map(sdkState).at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
  });
});

async function untilPaused(taskId: string, appendedAtLeast: number): Promise<void> {
  await waitFor(
    async () => ((await stateOf(taskId)) === 'TASK_STATE_INPUT_REQUIRED' && (await appendedSoFar(taskId)) >= appendedAtLeast ? true : undefined),
    20_000,
    `task ${taskId} paused after ${appendedAtLeast} events`,
  );
}

describe('push deliveries and the replay bound', () => {
  it('a receiver that is down holds the buffer past maxEvents: once it is back it gets every event, in order; then the buffer comes back to its bound', async () => {
    const path = `/hooks/held-${randomBytes(4).toString('hex')}`;
    receiver.behave({ status: 503, pathPrefix: path });
    const taskId = await send('burst 0', undefined, `${receiver.url}${path}`);
    await untilPaused(taskId, 3);
    await send('burst 6', taskId);
    await untilPaused(taskId, 12);
    // Nothing was delivered, so nothing may go: 12 events, past maxEvents (8), under the cap (16).
    expect(await gw.redis.xlen(eventsKey(taskId))).toBe(12);
    expect(await gw.redis.hget(`${gw.prefix}:{${taskId}}:task`, 'eventsTrimmed')).toBeNull();
    const held = await buffer(taskId);
    receiver.reset();
    const got = await receiver.waitForAccepted(12, path, 20_000);
    expect(got.map((d) => d.body)).toEqual(held.map((e) => e.raw));
    await send('finish 1', taskId);
    await waitFor(async () => ((await stateOf(taskId)) === 'TASK_STATE_COMPLETED' ? true : undefined), 20_000, 'completion');
    const total = await appendedSoFar(taskId);
    const all = await receiver.waitForAccepted(total, path, 20_000);
    expect(all).toHaveLength(total);
    expect(all.slice(-MAX_EVENTS).map((d) => d.body)).toEqual((await buffer(taskId)).map((e) => e.raw));
    expect(await gw.redis.xlen(eventsKey(taskId))).toBe(MAX_EVENTS);
  });

  it('a config its receiver disabled (410) holds nothing; enabled again, it goes on with a snapshot of what it missed', async () => {
    const path = `/hooks/gone-${randomBytes(4).toString('hex')}`;
    receiver.behave({ status: 410, pathPrefix: path });
    const taskId = await send('burst 0', undefined, `${receiver.url}${path}`);
    await untilPaused(taskId, 3);
    await waitFor(async () => (receiver.deliveries.some((d) => d.path === path && d.answered === 410) ? true : undefined), 20_000, 'the 410');
    await waitFor(async () => ((await gw.redis.hget(`${gw.prefix}:{${taskId}}:push`, (await gw.redis.hkeys(`${gw.prefix}:{${taskId}}:push`))[0] as string)) ?? '').includes('disabled') ? true : undefined, 20_000, 'the config disabled');
    await send('burst 12', taskId);
    await untilPaused(taskId, 18);
    expect(await gw.redis.xlen(eventsKey(taskId))).toBe(MAX_EVENTS);
    // The receiver is back and the config is created again under its id: the events it missed were trimmed.
    receiver.reset();
    const configId = (await gw.redis.hkeys(`${gw.prefix}:{${taskId}}:push`))[0] as string;
    const saved = await rpc(gw.jsonRpcUrl, 'CreateTaskPushNotificationConfig', { taskId, id: configId, url: `${receiver.url}${path}` });
    expect(saved.status, JSON.stringify(saved.body)).toBe(200);
    const [snapshot] = await receiver.waitForAccepted(1, path, 20_000);
    expect(snapshot?.json).toMatchObject({ task: { id: taskId, metadata: { a2aGateway: { replay: { reason: 'REPLAY_BUFFER_TRIMMED' } } } } });
  });

  it('past pushHoldMaxEvents the buffer is trimmed all the same, and the receiver gets a Task snapshot naming the skip, then the events after it', async () => {
    const path = `/hooks/capped-${randomBytes(4).toString('hex')}`;
    receiver.behave({ status: 503, pathPrefix: path });
    const taskId = await send('burst 0', undefined, `${receiver.url}${path}`);
    await untilPaused(taskId, 3);
    await send('burst 30', taskId);
    await untilPaused(taskId, 36);
    expect(await gw.redis.xlen(eventsKey(taskId))).toBe(PUSH_HOLD_MAX_EVENTS);
    const trimmedThrough = await gw.redis.hget(`${gw.prefix}:{${taskId}}:task`, 'eventsTrimmedThrough');
    const kept = await buffer(taskId);
    receiver.reset();
    // The delivery in flight when the receiver went away (the task's first event) is sent, then the snapshot.
    const [first, snapshot] = await receiver.waitForAccepted(2, path, 20_000);
    expect(first?.json).toHaveProperty('task');
    expect(snapshot?.json).toMatchObject({
      task: {
        id: taskId,
        status: { state: 'TASK_STATE_INPUT_REQUIRED' },
        metadata: { a2aGateway: { replay: { reason: 'REPLAY_BUFFER_TRIMMED', trimmedThroughEventId: trimmedThrough, snapshotEventId: (kept.at(-1) as { id: string }).id } } },
      },
    });
    await send('finish 2', taskId);
    await waitFor(async () => ((await stateOf(taskId)) === 'TASK_STATE_COMPLETED' ? true : undefined), 20_000, 'completion');
    // After the snapshot: exactly the events appended after it, in order, ending with the terminal one.
    const appendedAfter = (await appendedSoFar(taskId)) - 36;
    const all = await receiver.waitForAccepted(2 + appendedAfter, path, 20_000);
    const after = all.slice(2).map((d) => d.json as unknown as StreamResponse);
    expect(after).toHaveLength(appendedAfter);
    expect(all.slice(2).map((d) => d.body)).toEqual((await buffer(taskId)).slice(-appendedAfter).map((e) => e.raw));
    expect(stateOfEvent(after.at(-1) as StreamResponse)).toBe('TASK_STATE_COMPLETED');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(receiver.accepted(path)).toHaveLength(2 + appendedAfter);
  });
});
