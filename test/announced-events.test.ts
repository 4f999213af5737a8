// An event stored as more than 64 KiB (a large artifact update) is announced on the task's
// channel by its id alone, and a gateway that watches the task reads it from the replay buffer
// (include/appendEvent.lua, src/events/hub.ts). Streams still get every event whole, in order,
// byte for byte as stored; what the task publishes while such a read is in flight waits behind
// it; an announced event gone from the buffer before it was read makes the task's listeners
// re-read from what they last got.
import { SendMessageRequest, type StreamResponse } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareEventIds, EventHub, type LiveEvent } from '../src/events/hub.ts';
import { REDIS_CLUSTER_NODES, REDIS_URL, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';
import { openSse } from './support/sse.ts';

const ANNOUNCE_WHOLE_MAX = 65_536;
/** Five appended chunks of about 100 kB each: every artifact update past the announce bound. */
const MAKE = 'make 5 100000 done';
const JSON_HEADERS = { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Accept: 'text/event-stream' };
const onSingleRedis = REDIS_CLUSTER_NODES === '';

let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({ name: 'announced', config: { agents: { big: { adapter: 'test/fixtures/large-artifacts-adapter.mjs' } } } });
});

afterAll(async () => {
  await gw?.close();
});

/** The task's replay buffer: each entry's id and stored JSON. */
async function bufferOf(taskId: string): Promise<{ id: string; json: string }[]> {
  return (await gw.gateway.store.gateway.readEvents(taskId, '')).map((event) => ({ id: event.id, json: event.json }));
}

describe('a stream of a task whose events are large', () => {
  it('gets every event whole and in order, as stored, while the channel carried the large ones by id only', async () => {
    // What every gateway's pattern subscription receives (single Redis: sharded channels differ).
    const heard: Buffer[] = [];
    const listener = onSingleRedis ? new Redis(REDIS_URL) : undefined;
    if (listener !== undefined) {
      listener.on('pmessageBuffer', (_pattern: Buffer, _channel: Buffer, message: Buffer) => heard.push(message));
      await listener.psubscribe(gw.gateway.store.keys.eventChannelPattern());
    }
    try {
      const { response, reader } = await openSse(gw.jsonRpcUrl, {
        method: 'POST',
        headers: JSON_HEADERS,
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendStreamingMessage', params: { message: textMessage(MAKE) } }),
      });
      expect(response.status).toBe(200);
      await reader.done;
      const results = reader.events.map((event) => ({ id: event.id, result: (JSON.parse(event.data) as { result: Record<string, unknown> }).result }));
      const taskId = (results[0]?.result.task as { id: string }).id;
      const stored = await bufferOf(taskId);
      // Every stored event reached the stream once, in the buffer's order, with its id and its JSON.
      expect(results.map((r) => r.id)).toEqual(stored.map((event) => event.id));
      expect(results.map((r) => JSON.stringify(r.result))).toEqual(stored.map((event) => event.json));
      const large = stored.filter((event) => Buffer.byteLength(event.json) > ANNOUNCE_WHOLE_MAX);
      expect(large.length, 'artifact updates past the bound').toBe(5);
      if (listener !== undefined) {
        await waitFor(() => (heard.length >= stored.length ? true : undefined), 5_000, 'every announcement');
        expect(Math.max(...heard.map((message) => message.length)), 'largest message published').toBeLessThanOrEqual(ANNOUNCE_WHOLE_MAX + 64);
        expect(heard.filter((message) => !message.includes(0x0a)).map(String), 'announced by id alone').toEqual(large.map((event) => event.id));
      }
    } finally {
      await listener?.quit();
    }
  });

  it('reads the same through the official client, on both bindings', async () => {
    for (const transport of [new JsonRpcTransportFactory(), new RestTransportFactory()]) {
      const client = await new ClientFactory({ transports: [transport] }).createFromUrl(gw.url);
      const seen: StreamResponse[] = [];
      for await (const event of client.sendMessageStream(SendMessageRequest.fromJSON({ message: { messageId: `m-${Date.now()}-${Math.random()}`, role: 'ROLE_USER', parts: [{ text: MAKE }] } }))) {
        seen.push(event as StreamResponse);
      }
      const kinds = seen.map((event) => event.payload?.$case);
      expect(kinds.filter((kind) => kind === 'artifactUpdate')).toHaveLength(5);
      const last = seen.at(-1)?.payload;
      expect(last?.$case).toBe('statusUpdate');
      const updates = seen.flatMap((event) => (event.payload?.$case === 'artifactUpdate' ? [event.payload.value] : []));
      // Each chunk whole: the adapter's text for chunk i holds " i " and is about 100 kB.
      updates.forEach((update, i) => {
        const part = update.artifact?.parts[0]?.content;
        const text = part?.$case === 'text' ? part.value : '';
        expect(Buffer.byteLength(text)).toBeGreaterThan(ANNOUNCE_WHOLE_MAX);
        expect(text).toContain(`" \\ ${i} `);
        expect(update.append).toBe(i > 0);
      });
    }
  });
});

describe('the event hub given an event announced by id', () => {
  /** A hub of our own on the test's Redis, announcing reads through `read`; published to by `publisher`. */
  async function hubWith(read: ((taskId: string, id: string) => Promise<string | undefined>) | undefined) {
    const subscriber = new Redis(REDIS_URL);
    const publisher = new Redis(REDIS_URL);
    const keys = gw.gateway.store.keys;
    const hub = new EventHub(subscriber, keys, read === undefined ? {} : { readAnnounced: read });
    await hub.start();
    return {
      hub,
      publish: (taskId: string, message: string) => publisher.publish(keys.eventChannel(taskId), message),
      close: async () => {
        await subscriber.quit();
        await publisher.quit();
      },
    };
  }

  it.runIf(onSingleRedis)('delivers what the task publishes during the read after the announced event', async () => {
    let release: (json: string) => void = () => undefined;
    const reads: string[] = [];
    const { hub, publish, close } = await hubWith((_taskId, id) => {
      reads.push(id);
      return new Promise((resolve) => (release = resolve));
    });
    try {
      const received: LiveEvent[] = [];
      hub.listen('held-task', (event) => received.push(event));
      await publish('held-task', '5-1');
      await publish('held-task', '5-2\n{"statusUpdate":{"taskId":"held-task","status":{"state":"TASK_STATE_WORKING"}}}');
      await publish('other-task', '5-3\n{"statusUpdate":{}}');
      await waitFor(() => (reads.length === 1 ? true : undefined), 5_000, 'the read of the announced event');
      // The event published after the announced one waits for it.
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(received).toEqual([]);
      release('{"artifactUpdate":{"taskId":"held-task"}}');
      await waitFor(() => (received.length === 2 ? true : undefined), 5_000, 'both events');
      expect(received.map((event) => [event.id, event.json, event.state])).toEqual([
        ['5-1', '{"artifactUpdate":{"taskId":"held-task"}}', undefined],
        ['5-2', '{"statusUpdate":{"taskId":"held-task","status":{"state":"TASK_STATE_WORKING"}}}', 'TASK_STATE_WORKING'],
      ]);
      expect(reads).toEqual(['5-1']);
    } finally {
      await close();
    }
  });

  it.runIf(onSingleRedis)('tells the task\'s listeners of a gap when the event is gone before it was read, or the read failed', async () => {
    let answer: () => Promise<string | undefined> = async () => undefined;
    const { hub, publish, close } = await hubWith(() => answer());
    try {
      const received: string[] = [];
      let gaps = 0;
      let otherGaps = 0;
      hub.listen('gone-task', (event) => received.push(event.id), () => (gaps += 1));
      hub.listen('quiet-task', () => undefined, () => (otherGaps += 1));
      await publish('gone-task', '6-1');
      await waitFor(() => (gaps === 1 ? true : undefined), 5_000, 'the gap of a trimmed event');
      answer = () => Promise.reject(new Error('connection lost'));
      await publish('gone-task', '6-2');
      await publish('gone-task', '6-3\n{"statusUpdate":{}}');
      await waitFor(() => (gaps === 2 && received.length === 1 ? true : undefined), 5_000, 'the gap of a failed read, then the next event');
      expect(received).toEqual(['6-3']);
      expect(otherGaps, 'listeners of other tasks').toBe(0);
    } finally {
      await close();
    }
  });

  it.runIf(onSingleRedis)('does not read an announced event that every listener of the task has had already', async () => {
    const reads: string[] = [];
    const { hub, publish, close } = await hubWith(async (_taskId, id) => {
      reads.push(id);
      return '{"artifactUpdate":{"taskId":"after-task"}}';
    });
    try {
      const received: string[] = [];
      // A wait that starts after 8-2 (a large creation event, say): 8-1 and 8-2 are behind it.
      hub.listen('after-task', (event) => received.push(event.id), undefined, undefined, (id) => compareEventIds(id, '8-2') > 0);
      await publish('after-task', '8-1');
      await publish('after-task', '8-2');
      await publish('after-task', '8-3');
      await waitFor(() => (received.length === 1 ? true : undefined), 5_000, 'the event after');
      expect(received).toEqual(['8-3']);
      expect(reads).toEqual(['8-3']);
      // A second listener that wants everything: announced events are read for it again.
      hub.listen('after-task', () => undefined);
      await publish('after-task', '8-1');
      await waitFor(() => (reads.length === 2 ? true : undefined), 5_000, 'the read for the second listener');
    } finally {
      await close();
    }
  });

  it.runIf(onSingleRedis)('without a reader, tells the listeners of a gap at once', async () => {
    const { hub, publish, close } = await hubWith(undefined);
    try {
      let gaps = 0;
      hub.listen('no-reader-task', () => undefined, () => (gaps += 1));
      await publish('no-reader-task', '7-1');
      await waitFor(() => (gaps === 1 ? true : undefined), 5_000, 'the gap');
    } finally {
      await close();
    }
  });
});
