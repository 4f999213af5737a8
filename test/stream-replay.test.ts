// Invariants 5 and 7 over real SSE, real Redis and the real worker: a dropped client resumes
// with Last-Event-ID and gets exactly the events it missed (in order, no duplicates, no fresh
// snapshot), then live ones, and the stream closes after the terminal event; every stream of a
// task sees the same sequence; idle streams get heartbeats; a closed client frees its hub
// listener at once; closing connections never stops the task.
//
// "The replay buffer" below is read straight from Redis (XRANGE of the task's events stream):
// the tests compare what clients saw with what is stored, never with a hand-written list.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isTerminal, type StreamResponse, type TaskState } from '../src/protocol/types.ts';
import { rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';
import { openSse, type SseEvent, type SseReader } from './support/sse.ts';

const STREAM_HEADERS = { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Accept: 'text/event-stream' };
const RPC_ID = 'sub-1';

interface Stored {
  id: string;
  event: StreamResponse;
  /** The JSON exactly as stored in the stream entry. */
  raw: string;
}

type Binding = 'jsonrpc' | 'rest-post' | 'rest-get';

let fast: TestGateway; // demo steps of 40 ms: tasks that make progress while we watch
let quiet: TestGateway; // demo steps of 60 s: tasks on which nothing happens during a test
let burst: TestGateway; // demo steps of 0 ms: events arrive while a resume is still catching up

/** Everything in the task's replay buffer strictly after `afterId` ('' = all of it). */
async function buffer(gw: TestGateway, taskId: string, afterId = ''): Promise<Stored[]> {
  const key = `${gw.prefix}:{${taskId}}:events`;
  const entries = await gw.redis.xrange(key, afterId === '' ? '-' : `(${afterId}`, '+');
  return entries.map(([id, fields]) => {
    const raw = fields[fields.indexOf('r') + 1] as string;
    return { id, raw, event: JSON.parse(raw) as StreamResponse };
  });
}

async function bufferLength(gw: TestGateway, taskId: string): Promise<number> {
  return gw.redis.xlen(`${gw.prefix}:{${taskId}}:events`);
}

/** Creates a task without waiting for its turn; returns its id. */
async function startTask(gw: TestGateway, text: string): Promise<string> {
  const { status, body } = await rpc(gw.jsonRpcUrl, 'SendMessage', {
    message: textMessage(text),
    configuration: { returnImmediately: true },
  });
  expect(status).toBe(200);
  const task = (body.result as { task?: { id?: string } } | undefined)?.task;
  expect(typeof task?.id).toBe('string');
  return task?.id as string;
}

async function taskState(gw: TestGateway, taskId: string): Promise<TaskState> {
  const { body } = await rpc(gw.jsonRpcUrl, 'GetTask', { id: taskId });
  const task = (body.result as { task?: unknown; status?: { state: TaskState } }) ?? {};
  const state = task.status?.state;
  expect(state, `GetTask ${taskId}: ${JSON.stringify(body)}`).toBeDefined();
  return state as TaskState;
}

async function cancel(gw: TestGateway, taskId: string): Promise<TaskState> {
  const { body } = await rpc(gw.jsonRpcUrl, 'CancelTask', { id: taskId });
  return ((body.result as { status?: { state: TaskState } }) ?? {}).status?.state as TaskState;
}

/** Opens a SubscribeToTask stream over the given binding, optionally resuming after an id. */
async function subscribe(
  gw: TestGateway,
  taskId: string,
  options: { binding?: Binding; lastEventId?: string } = {},
): Promise<{ response: Response; reader: SseReader }> {
  const binding = options.binding ?? 'jsonrpc';
  const headers: Record<string, string> = { ...STREAM_HEADERS };
  if (options.lastEventId !== undefined) headers['Last-Event-ID'] = options.lastEventId;
  if (binding === 'jsonrpc') {
    return openSse(gw.jsonRpcUrl, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: RPC_ID, method: 'SubscribeToTask', params: { id: taskId } }),
    });
  }
  const url = `${gw.restUrl}/tasks/${taskId}:subscribe`;
  if (binding === 'rest-get') {
    delete headers['Content-Type'];
    return openSse(url, { method: 'GET', headers });
  }
  return openSse(url, { method: 'POST', headers });
}

/** The StreamResponse carried by one SSE event of the given binding. */
function payload(event: SseEvent, binding: Binding): StreamResponse {
  expect(event.event, `unexpected SSE event type in ${event.data}`).toBeUndefined();
  const parsed = JSON.parse(event.data) as Record<string, unknown>;
  if (binding !== 'jsonrpc') return parsed as unknown as StreamResponse;
  expect(parsed.jsonrpc).toBe('2.0');
  expect(parsed.id).toBe(RPC_ID);
  expect(parsed.error, `JSON-RPC error in the stream: ${event.data}`).toBeUndefined();
  return parsed.result as StreamResponse;
}

function stateOfEvent(event: StreamResponse): TaskState | undefined {
  if ('statusUpdate' in event) return event.statusUpdate.status.state;
  if ('task' in event) return event.task.status.state;
  return undefined;
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error as Error);
      },
    );
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Ids strictly increasing (Redis Stream order): in order and without duplicates. */
function expectStrictlyIncreasing(ids: (string | undefined)[]): void {
  const parsed = ids.map((id) => {
    expect(id).toMatch(/^\d+-\d+$/);
    const [ms, seq] = (id as string).split('-').map(Number) as [number, number];
    return { ms, seq };
  });
  for (let i = 1; i < parsed.length; i++) {
    const a = parsed[i - 1] as { ms: number; seq: number };
    const b = parsed[i] as { ms: number; seq: number };
    expect(b.ms > a.ms || (b.ms === a.ms && b.seq > a.seq), `${String(ids[i - 1])} then ${String(ids[i])}`).toBe(true);
  }
}

beforeAll(async () => {
  fast = await startTestGateway({ name: 'replay', adapterOptions: { stepMs: 40 } });
  quiet = await startTestGateway({ name: 'replay-quiet', adapterOptions: { stepMs: 60_000 } });
  burst = await startTestGateway({ name: 'replay-burst', adapterOptions: { stepMs: 0 } });
});

afterAll(async () => {
  await fast?.close();
  await quiet?.close();
  await burst?.close();
});

describe('resume with Last-Event-ID (invariant 7)', () => {
  async function dropAndResume(first: Binding, resume: Binding): Promise<void> {
    const taskId = await startTask(fast, 'long 30');

    // First connection: the snapshot, then a few events; then the client drops.
    const one = await subscribe(fast, taskId, { binding: first });
    expect(one.response.status).toBe(200);
    expect(one.response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    await one.reader.waitForEvents(6, 30_000);
    one.reader.abort();
    await one.reader.done;
    const seen1 = one.reader.events.slice();
    const opening = payload(seen1[0] as SseEvent, first);
    expect('task' in opening, 'a fresh subscription starts with the Task snapshot').toBe(true);
    if ('task' in opening) expect(opening.task.id).toBe(taskId);
    expectStrictlyIncreasing(seen1.map((e) => e.id));
    const lastId = (seen1.at(-1) as SseEvent).id as string;

    // The dropped client's listener is gone, and the task goes on without it.
    await waitFor(() => fast.gateway.hub.listenerCount(taskId) === 0 || undefined, 20_000, 'the dropped listener to be freed');
    await waitFor(async () => ((await buffer(fast, taskId, lastId)).length >= 3 ? true : undefined), 30_000, 'events while disconnected');
    const missed = await buffer(fast, taskId, lastId);
    const stateAtResume = stateOfEvent((await buffer(fast, taskId)).map((s) => s.event).filter((e) => stateOfEvent(e) !== undefined).at(-1) as StreamResponse);

    // Second connection resumes after the last id it saw.
    const two = await subscribe(fast, taskId, { binding: resume, lastEventId: lastId });
    expect(two.response.status).toBe(200);
    expect(two.response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    await two.reader.waitForEvents(1, 30_000);
    // Once an event arrived, the catch-up read is over: anything stored after this point can
    // only reach the client through live delivery.
    const storedAtFirstResumed = await buffer(fast, taskId, lastId);
    await withTimeout(two.reader.done, 60_000, 'the resumed stream to close after the terminal event');
    const seen2 = two.reader.events.slice();
    const resumed = seen2.map((e) => payload(e, resume));

    // Exactly the missed events, then the live ones: same ids, same content as the buffer.
    const expected = await buffer(fast, taskId, lastId);
    expect(seen2.map((e) => e.id)).toEqual(expected.map((s) => s.id));
    expect(resumed).toEqual(expected.map((s) => s.event));
    expectStrictlyIncreasing(seen2.map((e) => e.id));
    // It continues the sequence: no fresh Task snapshot at its start (DESIGN.md).
    expect(resumed.some((e) => 'task' in e)).toBe(false);
    expect(seen2.slice(0, missed.length).map((e) => e.id)).toEqual(missed.map((s) => s.id));
    // Live events followed the replayed ones (the task was still running when we resumed).
    expect(stateAtResume).toBe('TASK_STATE_WORKING');
    expect(seen2.length).toBeGreaterThan(storedAtFirstResumed.length);
    // It closed after the terminal event, and that event is the last one.
    const finalState = stateOfEvent(resumed.at(-1) as StreamResponse);
    expect(finalState).toBe('TASK_STATE_COMPLETED');
    expect(resumed.slice(0, -1).every((e) => !isTerminal(stateOfEvent(e) ?? 'TASK_STATE_WORKING'))).toBe(true);

    // Both connections together: everything stored after the first snapshot's id, once each.
    const afterSnapshot = await buffer(fast, taskId, seen1[0]?.id as string);
    const full = await buffer(fast, taskId);
    expect(full.map((s) => s.id)).toContain(seen1[0]?.id);
    const union = [...seen1.slice(1), ...seen2];
    expect(union.map((e) => e.id)).toEqual(afterSnapshot.map((s) => s.id));
    expect([...seen1.slice(1).map((e) => payload(e, first)), ...resumed]).toEqual(afterSnapshot.map((s) => s.event));
    expect(fast.gateway.hub.listenerCount(taskId)).toBe(0);
  }

  it('JSON-RPC: a dropped SubscribeToTask resumes with exactly the missed events, then live ones, then closes [guarantee:stream.replay]', async () => {
    await dropAndResume('jsonrpc', 'jsonrpc');
  }, 180_000);

  it('HTTP+JSON: POST :subscribe dropped, GET :subscribe resumes the same way', async () => {
    await dropAndResume('rest-post', 'rest-get');
  }, 180_000);

  it('resuming a task that completed meanwhile delivers the rest, including the terminal event, then closes', async () => {
    const taskId = await startTask(fast, 'long 6');
    await waitFor(async () => ((await taskState(fast, taskId)) === 'TASK_STATE_COMPLETED' ? true : undefined), 60_000, 'the task to complete');
    const full = await buffer(fast, taskId);
    expect(full.length).toBeGreaterThanOrEqual(8);
    const from = full[Math.floor(full.length / 2)] as Stored;
    const rest = await buffer(fast, taskId, from.id);
    expect(rest.length).toBeGreaterThan(1);

    for (const binding of ['jsonrpc', 'rest-post'] as const) {
      const stream = await subscribe(fast, taskId, { binding, lastEventId: from.id });
      expect(stream.response.status).toBe(200);
      expect(stream.response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      await withTimeout(stream.reader.done, 30_000, `the ${binding} stream of a completed task to close`);
      const seen = stream.reader.events;
      expect(seen.map((e) => e.id)).toEqual(rest.map((s) => s.id));
      expect(seen.map((e) => payload(e, binding))).toEqual(rest.map((s) => s.event));
      expect(stateOfEvent(payload(seen.at(-1) as SseEvent, binding))).toBe('TASK_STATE_COMPLETED');
    }

    // Without Last-Event-ID the same completed task is refused (spec 3.1.6): the resume is what differs.
    const { body } = await rpc(fast.jsonRpcUrl, 'SubscribeToTask', { id: taskId });
    expect((body.error as { code?: number } | undefined)?.code).toBe(-32004);
    expect(fast.gateway.hub.listenerCount(taskId)).toBe(0);
  }, 120_000);

  it('resuming from the terminal event itself closes at once with nothing to deliver', async () => {
    // A client that got the terminal event but lost the connection before seeing it close.
    const taskId = await startTask(fast, 'long 2');
    await waitFor(async () => ((await taskState(fast, taskId)) === 'TASK_STATE_COMPLETED' ? true : undefined), 60_000, 'the task to complete');
    const last = (await buffer(fast, taskId)).at(-1) as Stored;
    expect(stateOfEvent(last.event)).toBe('TASK_STATE_COMPLETED');
    const stream = await subscribe(fast, taskId, { lastEventId: last.id });
    expect(stream.response.status).toBe(200);
    try {
      await withTimeout(stream.reader.done, 10_000, 'a resume after the terminal event to close');
    } finally {
      stream.reader.abort();
    }
    expect(stream.reader.events).toEqual([]);
    await waitFor(() => fast.gateway.hub.listenerCount(taskId) === 0 || undefined, 20_000, 'no listener left');
  }, 60_000);

  it('SendStreamingMessage ids are resumable through SubscribeToTask', async () => {
    const one = await openSse(fast.jsonRpcUrl, {
      method: 'POST',
      headers: STREAM_HEADERS,
      body: JSON.stringify({ jsonrpc: '2.0', id: RPC_ID, method: 'SendStreamingMessage', params: { message: textMessage('long 10') } }),
    });
    expect(one.response.status).toBe(200);
    await one.reader.waitForEvents(3, 30_000);
    one.reader.abort();
    await one.reader.done;
    const seen1 = one.reader.events.slice();
    const opening = payload(seen1[0] as SseEvent, 'jsonrpc');
    expect('task' in opening).toBe(true);
    const taskId = 'task' in opening ? opening.task.id : '';
    expect(taskId).not.toBe('');

    // The send stream's ids are the buffer's ids, from its first stored event on.
    const head = (await buffer(fast, taskId)).slice(0, seen1.length);
    expect(seen1.map((e) => e.id)).toEqual(head.map((s) => s.id));
    expect(seen1.map((e) => payload(e, 'jsonrpc'))).toEqual(head.map((s) => s.event));

    const lastId = (seen1.at(-1) as SseEvent).id as string;
    const two = await subscribe(fast, taskId, { lastEventId: lastId });
    expect(two.response.status).toBe(200);
    await withTimeout(two.reader.done, 60_000, 'the resumed stream to close');
    const seen2 = two.reader.events;
    const rest = await buffer(fast, taskId, lastId);
    expect(seen2.map((e) => e.id)).toEqual(rest.map((s) => s.id));
    expect(seen2.map((e) => payload(e, 'jsonrpc'))).toEqual(rest.map((s) => s.event));
    expect(seen2.some((e) => 'task' in payload(e, 'jsonrpc'))).toBe(false);
    expect(stateOfEvent(payload(seen2.at(-1) as SseEvent, 'jsonrpc'))).toBe('TASK_STATE_COMPLETED');
    // Together: the whole buffer, once each, in order.
    const full = await buffer(fast, taskId);
    expect([...seen1, ...seen2].map((e) => e.id)).toEqual(full.map((s) => s.id));
  }, 120_000);

  it('resumes that race a fast-producing task get no gaps and no duplicates', async () => {
    // Long catch-ups (several 500-event pages) while new events keep being published: the
    // feed must hold live events back during the reads and drop the ones a read already gave.
    const taskId = await startTask(burst, 'long 1000');
    await waitFor(async () => ((await bufferLength(burst, taskId)) >= 50 ? true : undefined), 60_000, 'the first events');
    const streams: { afterId: string; stream: { response: Response; reader: SseReader } }[] = [];
    for (let round = 0; round < 6; round++) {
      const stored = await buffer(burst, taskId);
      if (stored.length > 0 && isTerminal(stateOfEvent(stored.at(-1)?.event as StreamResponse) ?? 'TASK_STATE_WORKING')) break;
      for (const from of [stored[0], stored[Math.floor(stored.length / 2)], stored.at(-1)]) {
        const afterId = (from as Stored).id;
        streams.push({ afterId, stream: await subscribe(burst, taskId, { binding: round % 2 === 0 ? 'jsonrpc' : 'rest-post', lastEventId: afterId }) });
      }
      await sleep(150);
    }
    expect(streams.length).toBeGreaterThanOrEqual(3);
    await withTimeout(Promise.all(streams.map((s) => s.stream.reader.done)), 120_000, 'every resumed stream to close');
    for (const [index, { afterId, stream }] of streams.entries()) {
      const binding: Binding = Math.floor(index / 3) % 2 === 0 ? 'jsonrpc' : 'rest-post';
      const expected = await buffer(burst, taskId, afterId);
      const ids = stream.reader.events.map((e) => e.id);
      expect(new Set(ids).size, `duplicates in stream ${index}`).toBe(ids.length);
      expect(ids, `stream ${index} resumed after ${afterId}`).toEqual(expected.map((s) => s.id));
      expect(stream.reader.events.map((e) => payload(e, binding))).toEqual(expected.map((s) => s.event));
    }
    expect(burst.gateway.hub.listenerCount(taskId)).toBe(0);
  }, 180_000);

  it('an invalid Last-Event-ID is InvalidParams before any stream starts', async () => {
    const taskId = await startTask(quiet, 'long 100');
    try {
      for (const bad of ['abc', '12345', '1-2-3', '-1-0']) {
        const response = await fetch(quiet.jsonRpcUrl, {
          method: 'POST',
          headers: { ...STREAM_HEADERS, 'Last-Event-ID': bad },
          body: JSON.stringify({ jsonrpc: '2.0', id: 'bad-1', method: 'SubscribeToTask', params: { id: taskId } }),
        });
        expect(response.headers.get('content-type'), `Last-Event-ID ${bad}`).toMatch(/^application\/json/);
        const body = (await response.json()) as { id?: unknown; error?: { code?: number; data?: unknown } };
        expect(body.id).toBe('bad-1');
        expect(body.error?.code, `Last-Event-ID ${bad}: ${JSON.stringify(body)}`).toBe(-32602);
        expect(JSON.stringify(body.error?.data)).toContain('Last-Event-ID');
      }
      const rest = await fetch(`${quiet.restUrl}/tasks/${taskId}:subscribe`, {
        method: 'POST',
        headers: { ...STREAM_HEADERS, 'Last-Event-ID': 'abc' },
      });
      expect(rest.status).toBe(400);
      expect(rest.headers.get('content-type')).toMatch(/^application\/json/);
      const restBody = (await rest.json()) as { error?: { status?: string } };
      expect(restBody.error?.status).toBe('INVALID_ARGUMENT');
      // Nothing was started: no listener, and the task is untouched.
      expect(quiet.gateway.hub.listenerCount(taskId)).toBe(0);
    } finally {
      expect(await cancel(quiet, taskId)).toBe('TASK_STATE_CANCELED');
    }
  }, 60_000);
});

describe('all streams of a task see the same sequence (invariant 7)', () => {
  it('five subscribers of one task get identical ids and data [guarantee:stream.replay]', async () => {
    const taskId = await startTask(fast, 'long 30');
    const streams = await Promise.all(Array.from({ length: 5 }, () => subscribe(fast, taskId)));
    await withTimeout(Promise.all(streams.map((s) => s.reader.done)), 90_000, 'all five streams to close');

    const snapshotIds: string[] = [];
    for (const { reader } of streams) {
      const [first, ...rest] = reader.events;
      expect('task' in payload(first as SseEvent, 'jsonrpc')).toBe(true);
      snapshotIds.push(first?.id as string);
      // Each stream: exactly the buffer after its own snapshot.
      const expected = await buffer(fast, taskId, first?.id as string);
      expect(rest.map((e) => e.id)).toEqual(expected.map((s) => s.id));
      expect(rest.map((e) => payload(e, 'jsonrpc'))).toEqual(expected.map((s) => s.event));
      expect(stateOfEvent(payload(rest.at(-1) as SseEvent, 'jsonrpc'))).toBe('TASK_STATE_COMPLETED');
    }
    // From the latest snapshot on, the five are byte-for-byte the same sequence, whether an
    // event reached a given stream by replay or live.
    const latest = [...snapshotIds].sort((a, b) => {
      const [am, as] = a.split('-').map(Number) as [number, number];
      const [bm, bs] = b.split('-').map(Number) as [number, number];
      return am - bm || as - bs;
    }).at(-1) as string;
    const common = await buffer(fast, taskId, latest);
    expect(common.length).toBeGreaterThanOrEqual(5);
    const commonIds = new Set(common.map((s) => s.id));
    const sequences = streams.map(({ reader }) =>
      reader.events.filter((e) => commonIds.has(e.id as string)).map((e) => ({ id: e.id, data: e.data })),
    );
    for (const sequence of sequences) {
      expect(sequence).toHaveLength(common.length);
      expect(sequence).toEqual(sequences[0]);
    }
    expect(fast.gateway.hub.listenerCount(taskId)).toBe(0);
  }, 120_000);
});

describe('idle streams and closed clients', () => {
  it('an idle stream gets SSE comment heartbeats while no events happen', async () => {
    const taskId = await startTask(quiet, 'long 100');
    const stream = await subscribe(quiet, taskId);
    try {
      await stream.reader.waitForEvents(1, 30_000);
      // Let the turn start (its WORKING event) and reach the client; then the task is quiet.
      await waitFor(async () => ((await taskState(quiet, taskId)) === 'TASK_STATE_WORKING' ? true : undefined), 30_000, 'WORKING');
      const afterSnapshot = await buffer(quiet, taskId, stream.reader.events[0]?.id as string);
      await stream.reader.waitForEvents(1 + afterSnapshot.length, 30_000);
      const eventsBefore = stream.reader.events.length;
      const storedBefore = await bufferLength(quiet, taskId);
      const commentsBefore = stream.reader.comments.length;

      await waitFor(() => stream.reader.comments.length >= commentsBefore + 2 || undefined, 30_000, 'two heartbeat comments');
      expect(stream.reader.events.length).toBe(eventsBefore);
      expect(await bufferLength(quiet, taskId)).toBe(storedBefore);
      for (const comment of stream.reader.comments.slice(commentsBefore)) expect(comment.trim()).toBe('keep-alive');
    } finally {
      stream.reader.abort();
      expect(await cancel(quiet, taskId)).toBe('TASK_STATE_CANCELED');
    }
  }, 90_000);

  it('200 closed clients free their listeners at once, without waiting for the task\'s next event', async () => {
    const taskId = await startTask(quiet, 'long 200');
    try {
      await waitFor(async () => ((await taskState(quiet, taskId)) === 'TASK_STATE_WORKING' ? true : undefined), 30_000, 'WORKING');
      const totalBefore = quiet.gateway.hub.listenerCount();
      expect(quiet.gateway.hub.listenerCount(taskId)).toBe(0);

      const streams = await Promise.all(Array.from({ length: 200 }, () => subscribe(quiet, taskId)));
      await withTimeout(Promise.all(streams.map((s) => s.reader.waitForEvents(1, 60_000))), 90_000, 'the first event of 200 streams');
      for (const { response } of streams) expect(response.status).toBe(200);
      expect(quiet.gateway.hub.listenerCount(taskId)).toBe(200);
      expect(quiet.gateway.hub.listenerCount()).toBe(totalBefore + 200);

      const storedBefore = await bufferLength(quiet, taskId);
      for (const { reader } of streams) reader.abort();
      await Promise.all(streams.map((s) => s.reader.done));
      await waitFor(() => quiet.gateway.hub.listenerCount(taskId) === 0 || undefined, 30_000, 'all 200 listeners to be freed');
      // Freed by the disconnects themselves: the task produced no event meanwhile.
      expect(await bufferLength(quiet, taskId)).toBe(storedBefore);
      expect(quiet.gateway.hub.listenerCount()).toBe(totalBefore);
    } finally {
      expect(await cancel(quiet, taskId)).toBe('TASK_STATE_CANCELED');
    }
  }, 180_000);

  it('closing every stream of a task leaves it running (a connection is not a turn)', async () => {
    // The task is created by a streaming send, and watched by two more subscribers.
    const sender = await openSse(quiet.jsonRpcUrl, {
      method: 'POST',
      headers: STREAM_HEADERS,
      body: JSON.stringify({ jsonrpc: '2.0', id: RPC_ID, method: 'SendStreamingMessage', params: { message: textMessage('long 100') } }),
    });
    await sender.reader.waitForEvents(1, 30_000);
    const opening = payload(sender.reader.events[0] as SseEvent, 'jsonrpc');
    const taskId = 'task' in opening ? opening.task.id : '';
    expect(taskId).not.toBe('');
    try {
      await waitFor(async () => ((await taskState(quiet, taskId)) === 'TASK_STATE_WORKING' ? true : undefined), 30_000, 'WORKING');
      const watchers = await Promise.all([subscribe(quiet, taskId), subscribe(quiet, taskId, { binding: 'rest-post' })]);
      await Promise.all(watchers.map((w) => w.reader.waitForEvents(1, 30_000)));
      expect(quiet.gateway.hub.listenerCount(taskId)).toBe(3);

      for (const stream of [sender, ...watchers]) stream.reader.abort();
      await waitFor(() => quiet.gateway.hub.listenerCount(taskId) === 0 || undefined, 30_000, 'all listeners to be freed');
      // Give a wrongly wired disconnect→cancel path time to show itself.
      await sleep(1_500);
      expect(await taskState(quiet, taskId)).toBe('TASK_STATE_WORKING');
      const states = (await buffer(quiet, taskId)).map((s) => stateOfEvent(s.event)).filter((s) => s !== undefined);
      expect(states).not.toContain('TASK_STATE_CANCELED');
      expect(states.at(-1)).toBe('TASK_STATE_WORKING');
    } finally {
      // Only CancelTask stops it.
      expect(await cancel(quiet, taskId)).toBe('TASK_STATE_CANCELED');
    }
  }, 90_000);
});
