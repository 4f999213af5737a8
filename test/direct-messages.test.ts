// Direct messages (spec 3.1.1): an adapter that declares directMessages answers a new task's
// first turn with a Message. SendMessage returns that Message, SendStreamingMessage streams it
// as its only frame and closes, a re-sent messageId gets the same Message back (it is stored in
// the task's slot), and where the client already holds the task the message completes it.
import { randomBytes } from 'node:crypto';
import { SendMessageRequest, type Message, type StreamResponse, type Task } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory, RestTransportFactory, type Client } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Adapter } from '../adapters/types.ts';
import { runTestTurn } from '../adapters/testing/index.ts';
import { loadAdapter } from '../adapters/module-loader.ts';
import { compareEventIds } from '../src/events/hub.ts';
import type { JsonObject } from '../src/protocol/types.ts';
import { ROOT, rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';
import { openSse } from './support/sse.ts';

let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({
    name: 'direct',
    config: {
      agents: {
        direct: { adapter: 'test/fixtures/direct-reply-adapter.mjs' },
        // The same adapter without the declaration: a Message outcome breaks its contract.
        undeclared: { adapter: 'test/fixtures/direct-reply-adapter.mjs', adapterOptions: { directMessages: false } },
      },
    },
  });
});

afterAll(async () => {
  await gw?.close();
});

const newMessageId = (): string => `dm-${randomBytes(8).toString('hex')}`;
const request = (text: string, extra: Record<string, unknown> = {}): SendMessageRequest =>
  SendMessageRequest.fromJSON({ message: { messageId: newMessageId(), role: 'ROLE_USER', parts: [{ text }], ...extra } });
const textOf = (message: Message): string => message.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');

async function collect(stream: AsyncGenerator<StreamResponse>): Promise<StreamResponse[]> {
  const events: StreamResponse[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

interface WireTask {
  id: string;
  contextId: string;
  status: { state: string; message?: { parts: { text?: string }[] } };
  history?: { role: string; messageId: string }[];
  metadata?: { a2aGateway?: { directReply?: boolean } };
}

describe.each([
  ['JSON-RPC', () => new JsonRpcTransportFactory()],
  ['HTTP+JSON', () => new RestTransportFactory()],
] as const)('with the official client over %s', (_name, transport) => {
  let client: Client;

  beforeAll(async () => {
    client = await new ClientFactory({ transports: [transport()] }).createFromUrl(gw.url);
  });

  it('SendMessage returns the Message; the same messageId again returns the same Message', async () => {
    const sent = request('reply hello');
    const reply = await client.sendMessage(sent);
    expect('status' in reply, JSON.stringify(reply)).toBe(false);
    const message = reply as Message;
    expect(textOf(message)).toBe('You said: hello');
    expect(message.role).toBe(2 /* ROLE_AGENT */);
    expect(message.contextId).not.toBe('');
    expect(message.taskId).toBe('');
    const again = (await client.sendMessage(sent)) as Message;
    expect(again.messageId).toBe(message.messageId);
    expect(textOf(again)).toBe('You said: hello');
  });

  it('SendStreamingMessage streams exactly the Message and closes; a re-send streams the same one', async () => {
    const sent = request('parts');
    const events = await collect(client.sendMessageStream(sent));
    expect(events.map((e) => e.payload?.$case)).toEqual(['message']);
    const message = events[0]?.payload?.$case === 'message' ? events[0].payload.value : undefined;
    expect(message?.parts.map((p) => p.content?.$case)).toEqual(['text', 'data']);
    const again = await collect(client.sendMessageStream(sent));
    expect(again.map((e) => (e.payload?.$case === 'message' ? e.payload.value.messageId : e.payload?.$case))).toEqual([message?.messageId]);
  });

  it('a turn that answers with a task streams it as before: the held frames come first, in order', async () => {
    const events = await collect(client.sendMessageStream(request('task the answer')));
    expect(events[0]?.payload?.$case).toBe('task');
    expect(events.map((e) => e.payload?.$case)).toContain('artifactUpdate');
    const last = events.at(-1);
    expect(last?.payload?.$case === 'statusUpdate' ? last.payload.value.status?.state : undefined).toBe(3 /* COMPLETED */);
  });

  it('where the client holds the task already (a later turn), the message completes the task', async () => {
    const asked = (await client.sendMessage(request('ask'))) as Task;
    expect(asked.status?.state).toBe(6 /* INPUT_REQUIRED */);
    const answered = (await client.sendMessage(request('the blue one', { taskId: asked.id }))) as Task;
    expect('status' in answered).toBe(true);
    expect(answered.status?.state).toBe(3 /* COMPLETED */);
    expect(textOf(answered.status?.message as Message)).toBe('Chosen: the blue one');
  });
});

describe('over raw HTTP', () => {
  it('JSON-RPC result is {message} and HTTP+JSON body is {message}; the Message carries the context, not a task id', async () => {
    const viaRpc = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('reply raw') });
    const result = viaRpc.body.result as { message?: Record<string, unknown>; task?: unknown };
    expect(result.task).toBeUndefined();
    expect(result.message).toMatchObject({ role: 'ROLE_AGENT', parts: [{ text: 'You said: raw' }] });
    expect(result.message?.taskId).toBeUndefined();
    expect(typeof result.message?.contextId).toBe('string');
    const viaRest = await fetch(`${gw.restUrl}/message:send`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
      body: JSON.stringify({ message: textMessage('reply rest') }),
    });
    expect(viaRest.status).toBe(200);
    expect(((await viaRest.json()) as { message: { parts: unknown } }).message.parts).toEqual([{ text: 'You said: rest' }]);
  });

  it('the stream is one SSE event with an id, then the response ends', async () => {
    const { response, reader } = await openSse(gw.jsonRpcUrl, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'stream-1', method: 'SendStreamingMessage', params: { message: textMessage('reply streamed') } }),
    });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    await reader.done;
    expect(reader.events).toHaveLength(1);
    expect(reader.events[0]?.id).toMatch(/^\d+-\d+$/);
    expect(JSON.parse(reader.events[0]?.data ?? '{}')).toMatchObject({ jsonrpc: '2.0', id: 'stream-1', result: { message: { parts: [{ text: 'You said: streamed' }] } } });
  });

  it('is stored in the task slot before it is announced: the exchange is a completed task marked directReply, its history the two messages', async () => {
    const message = textMessage('reply kept');
    const reply = (await rpc(gw.jsonRpcUrl, 'SendMessage', { message })).body.result as { message: { messageId: string; contextId: string } };
    const listed = (await rpc(gw.jsonRpcUrl, 'ListTasks', { contextId: reply.message.contextId, historyLength: 10 })).body.result as { tasks: WireTask[] };
    expect(listed.tasks).toHaveLength(1);
    const task = listed.tasks[0] as WireTask;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(task.metadata?.a2aGateway?.directReply).toBe(true);
    expect(task.history?.map((m) => m.messageId)).toEqual([message.messageId, reply.message.messageId]);
    const stored = JSON.parse((await gw.redis.hget(`${gw.prefix}:{${task.id}}:task`, 'directReply')) ?? '{}') as Record<string, unknown>;
    expect(stored).toMatchObject({ messageId: reply.message.messageId, role: 'ROLE_AGENT', contextId: reply.message.contextId });
    expect(stored.taskId).toBeUndefined();
  });

  it('concurrent copies of one message, sent while the turn runs, all get the same Message', async () => {
    const message = textMessage('slow-reply 300');
    const replies = await Promise.all([1, 2, 3].map(() => rpc(gw.jsonRpcUrl, 'SendMessage', { message })));
    const ids = replies.map((r) => (r.body.result as { message: { messageId: string } }).message.messageId);
    expect(new Set(ids).size).toBe(1);
  });

  it('returnImmediately answers with the task (the turn has not decided yet); the task then holds the direct reply', async () => {
    const sent = (await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('slow-reply 200'), configuration: { returnImmediately: true } })).body.result as { task: WireTask };
    expect(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING']).toContain(sent.task.status.state);
    const done = await waitFor(async () => {
      const task = (await rpc(gw.jsonRpcUrl, 'GetTask', { id: sent.task.id })).body.result as WireTask;
      return task.status.state === 'TASK_STATE_COMPLETED' ? task : undefined;
    });
    expect(done.metadata?.a2aGateway?.directReply).toBe(true);
    expect(done.status.message?.parts).toEqual([{ text: 'slow reply' }]);
  });

  it('a turn that showed progress first completes its task with the message (the stream already carried the task)', async () => {
    const { reader } = await openSse(gw.jsonRpcUrl, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'SendStreamingMessage', params: { message: textMessage('late') } }),
    });
    await reader.done;
    const results = reader.events.map((e) => (JSON.parse(e.data) as { result: Record<string, unknown> }).result);
    expect(Object.keys(results[0] ?? {})).toEqual(['task']);
    expect(results.some((r) => 'message' in r)).toBe(false);
    const final = results.at(-1) as { statusUpdate: { status: { state: string; message: { parts: unknown } }; metadata?: unknown } };
    expect(final.statusUpdate.status).toMatchObject({ state: 'TASK_STATE_COMPLETED', message: { parts: [{ text: 'late answer' }] } });
    expect(final.statusUpdate.metadata).toBeUndefined();
    const ids = reader.events.map((e) => e.id as string);
    // The held frames were released in order, each with its own id.
    expect([...ids].sort(compareEventIds)).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    const blocking = (await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('late') })).body.result as { task?: WireTask };
    expect(blocking.task?.status.state).toBe('TASK_STATE_COMPLETED');
  });

  it('an adapter that does not declare directMessages and answers with a Message fails its turn, naming the contract', async () => {
    const answer = await rpc(`${gw.url}/agents/undeclared/a2a/jsonrpc`, 'SendMessage', { message: textMessage('reply nope') });
    const task = (answer.body.result as { task: WireTask }).task;
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    expect(task.status.message?.parts[0]?.text).toMatch(/does not declare directMessages: true/);
  });
});

describe('the adapter test harness', () => {
  it('checks a Message outcome as the gateway does: accepted when declared, a broken contract otherwise', async () => {
    const createAdapter = (options: JsonObject = {}): Promise<Adapter> => loadAdapter('test/fixtures/direct-reply-adapter.mjs', options, ROOT);
    const adapter = await createAdapter();
    const { outcome } = await runTestTurn(adapter, { input: 'reply hi', extensions: ['urn:example:ext:v1'] });
    expect(outcome).toEqual({ state: 'message', message: 'You said: hi' });
    const seen = await runTestTurn(adapter, { input: 'extensions', extensions: ['urn:example:ext:v1'] });
    expect(seen.outcome).toEqual({ state: 'message', message: '["urn:example:ext:v1"]' });
    await expect(runTestTurn(await createAdapter({ directMessages: false }), { input: 'reply hi' })).rejects.toThrow(/does not declare directMessages: true/);
  });
});
