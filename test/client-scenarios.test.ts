// One scenario list, five official clients, one gateway: the SDK's 1.0 client over JSON-RPC,
// over HTTP+JSON and over gRPC, and its 0.3 client (the compat transports a 0.3 deployment
// uses) over JSON-RPC and over HTTP+JSON. Each runs send, stream, multi-turn, cancel, list,
// subscribe with resume (Last-Event-ID; `last-event-id` metadata on gRPC), push configs and a
// direct Message (of a second agent, which gRPC reaches by the tenant its card's interface
// names); a recording fetch (a recording interceptor on gRPC) proves each call went over its
// binding in its version. A 0.3 client and a 1.0 client then watch the same task.
import { randomBytes } from 'node:crypto';
import {
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetTaskPushNotificationConfigRequest,
  ListTaskPushNotificationConfigsRequest,
  GetTaskRequest,
  ListTasksRequest,
  SendMessageRequest,
  SubscribeToTaskRequest,
  TaskPushNotificationConfig,
  TaskState,
  type AgentCard,
  type Message,
  type StreamResponse,
  type Task,
} from '@a2a-js/sdk';
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory, type Client } from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import { UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { decodeErrorInfo, decodeStatus } from '@a2a-js/sdk/errors/grpc';
import { A2AService } from '@a2a-js/sdk/server/grpc';
import { credentials, InterceptingCall, makeGenericClientConstructor, Metadata, status as GrpcStatus, type Interceptor, type ServiceError } from '@grpc/grpc-js';
import { createParser } from 'eventsource-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareEventIds } from '../src/events/hub.ts';
import { startTestGateway, type TestGateway } from './support/harness.ts';

let gw: TestGateway;
/** A loopback port nothing listens on: configs point there, and no delivery matters here. */
const DEAD_PORT = 9;

beforeAll(async () => {
  gw = await startTestGateway({
    name: 'scenarios',
    config: {
      grpcPort: 0,
      push: { allowedHosts: ['127.0.0.1'] },
      agents: {
        demo: { adapter: 'demo', adapterOptions: { stepMs: 40 } },
        direct: { adapter: 'test/fixtures/direct-reply-adapter.mjs' },
      },
    },
  });
});

afterAll(async () => {
  await gw?.close();
});

/** A fetch that records each call's URL and A2A-Version, and the SSE ids of each stream it carried. */
function recordingFetch(): { fetch: typeof fetch; calls: { url: string; version: string | null }[]; streams: string[][] } {
  const calls: { url: string; version: string | null }[] = [];
  const streams: string[][] = [];
  const recording: typeof fetch = async (input, init) => {
    calls.push({ url: String(input instanceof Request ? input.url : input), version: new Headers(init?.headers).get('a2a-version') });
    const response = await fetch(input, init);
    if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream') || response.body === null) return response;
    const [forClient, forRecord] = response.body.tee();
    const ids: string[] = [];
    streams.push(ids);
    const parser = createParser({ onEvent: (event) => ids.push(event.id ?? '') });
    void (async () => {
      const decoder = new TextDecoder();
      try {
        for await (const chunk of forRecord as unknown as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(chunk, { stream: true }));
      } catch {
        // The client went away: the recording ends with it.
      }
    })();
    return new Response(forClient, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
  return { fetch: recording, calls, streams };
}

/** The event id a gRPC stream event carries (what SSE sends as `id:`). */
const grpcEventIdOf = (event: StreamResponse): string => {
  const metadata = event.payload?.value.metadata as { a2aGateway?: { eventId?: string } } | undefined;
  return metadata?.a2aGateway?.eventId ?? '';
};

/** The gRPC counterpart of recordingFetch: each call's method path and a2a-version, and the event ids of each stream. */
function recordingInterceptor(recorded: ReturnType<typeof recordingFetch>): Interceptor {
  return (options, nextCall) =>
    new InterceptingCall(nextCall(options), {
      start(metadata, _listener, next) {
        recorded.calls.push({ url: options.method_definition.path, version: metadata.get('a2a-version').map(String)[0] ?? null });
        const ids: string[] = [];
        if (options.method_definition.responseStream) recorded.streams.push(ids);
        next(metadata, {
          onReceiveMessage(message: StreamResponse, nextMessage: (message: StreamResponse) => void) {
            if (options.method_definition.responseStream) ids.push(grpcEventIdOf(message));
            nextMessage(message);
          },
        });
      },
    });
}

interface Flavour {
  name: string;
  binding: 'JSONRPC' | 'HTTP+JSON' | 'GRPC';
  version: '1.0' | '0.3';
}

const FLAVOURS: Flavour[] = [
  { name: '1.0 JSON-RPC', binding: 'JSONRPC', version: '1.0' },
  { name: '1.0 HTTP+JSON', binding: 'HTTP+JSON', version: '1.0' },
  { name: '1.0 gRPC', binding: 'GRPC', version: '1.0' },
  { name: '0.3 JSON-RPC', binding: 'JSONRPC', version: '0.3' },
  { name: '0.3 HTTP+JSON', binding: 'HTTP+JSON', version: '0.3' },
];

/**
 * A client as that kind of deployment builds it: a 1.0 client from the 1.0 card; a 0.3 client
 * from the 0.3 card URL (?A2A-Version=0.3, 0.3-shaped), read without the 1.0 interfaces it
 * also embeds, through the SDK's 0.3 compatibility transports.
 */
async function clientFor(flavour: Flavour, agent: string): Promise<{ client: Client; recorded: ReturnType<typeof recordingFetch> }> {
  const recorded = recordingFetch();
  const legacyCompat = { enabled: flavour.version === '0.3' };
  const transport =
    flavour.binding === 'GRPC'
      ? new GrpcTransportFactory({ grpcCallOptions: { interceptors: [recordingInterceptor(recorded)] } })
      : flavour.binding === 'JSONRPC'
        ? new JsonRpcTransportFactory({ fetchImpl: recorded.fetch, legacyCompat })
        : new RestTransportFactory({ fetchImpl: recorded.fetch, legacyCompat });
  const factory = new ClientFactory({ transports: [transport], cardResolver: new DefaultAgentCardResolver({ legacyCompat }) });
  const cardUrl = `${gw.url}/agents/${agent}/.well-known/agent-card.json`;
  if (flavour.version === '1.0') return { client: await factory.createFromUrl(cardUrl, ''), recorded };
  const legacyCard = (await (await fetch(`${cardUrl}?A2A-Version=0.3`)).json()) as Record<string, unknown>;
  expect(legacyCard.protocolVersion).toBe('0.3.0');
  delete legacyCard.supportedInterfaces;
  return { client: await factory.createFromAgentCard(legacyCard as unknown as AgentCard), recorded };
}

const newMessageId = (): string => `sc-${randomBytes(8).toString('hex')}`;
const request = (text: string, extra: Record<string, unknown> = {}, configuration?: Record<string, unknown>): SendMessageRequest =>
  SendMessageRequest.fromJSON({ message: { messageId: newMessageId(), role: 'ROLE_USER', parts: [{ text }], ...extra }, ...(configuration === undefined ? {} : { configuration }) });
const textOf = (parts: Message['parts'] | undefined): string => (parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
const asTask = (result: Task | Message): Task => {
  expect('status' in result, JSON.stringify(result)).toBe(true);
  return result as Task;
};
const stateOf = (event: StreamResponse): TaskState | undefined =>
  event.payload?.$case === 'statusUpdate' ? event.payload.value.status?.state : event.payload?.$case === 'task' ? event.payload.value.status?.state : undefined;
const progressOf = (event: StreamResponse): number | undefined => {
  const text = event.payload?.$case === 'statusUpdate' ? textOf(event.payload.value.status?.message?.parts) : '';
  const match = /^progress (\d+)\//.exec(text);
  return match === null ? undefined : Number(match[1]);
};

async function collect(stream: AsyncGenerator<StreamResponse>, stopAfter = Number.POSITIVE_INFINITY): Promise<StreamResponse[]> {
  const events: StreamResponse[] = [];
  for await (const event of stream) {
    events.push(event);
    if (events.length >= stopAfter) break;
  }
  return events;
}

/** A CreateTaskPushNotificationConfig call over gRPC without the SDK's client: the error as it travels. */
async function rawGrpcCreatePushConfig(config: Record<string, unknown>): Promise<ServiceError> {
  const Client = makeGenericClientConstructor(A2AService, 'A2AService');
  const raw = new Client(gw.gateway.grpc?.address as string, credentials.createInsecure()) as unknown as Record<string, (...args: unknown[]) => void> & { close(): void };
  const metadata = new Metadata();
  metadata.set('a2a-version', '1.0');
  try {
    return await new Promise<ServiceError>((resolve, reject) => {
      raw.createTaskPushNotificationConfig?.(TaskPushNotificationConfig.fromJSON(config), metadata, (error: ServiceError | null) =>
        error === null ? reject(new Error('the call succeeded')) : resolve(error),
      );
    });
  } finally {
    raw.close();
  }
}

describe.each(FLAVOURS)('the official $name client', (flavour) => {
  let client: Client;
  let recorded: ReturnType<typeof recordingFetch>;
  const contextId = `ctx-${randomBytes(6).toString('hex')}`;

  beforeAll(async () => {
    ({ client, recorded } = await clientFor(flavour, 'demo'));
  });

  it(`speaks ${flavour.version} over ${flavour.binding} only`, async () => {
    await client.sendMessage(request('echo which wire', { contextId }));
    const bindingPath = flavour.binding === 'GRPC' ? '/lf.a2a.v1.A2AService/' : flavour.binding === 'JSONRPC' ? '/a2a/jsonrpc' : '/a2a/rest/';
    const calls = recorded.calls.filter((call) => !call.url.endsWith('agent-card.json'));
    expect(calls.length).toBeGreaterThan(0);
    for (const call of calls) {
      expect(call.url).toContain(bindingPath);
      expect(call.version).toBe(flavour.version);
      if (flavour.binding === 'HTTP+JSON') expect(call.url.includes('/a2a/rest/v1/')).toBe(flavour.version === '0.3');
    }
  });

  it('send: a blocking message completes with its artifact', async () => {
    const task = asTask(await client.sendMessage(request('echo hello there', { contextId })));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(task.artifacts.find((a) => a.artifactId === 'echo')?.parts)).toBe('echo hello there');
    expect(textOf(task.status?.message?.parts)).toBe('echo complete');
  });

  it('stream: the Task first, artifact chunks in order, and the stream ends at COMPLETED', async () => {
    const events = await collect(client.sendMessageStream(request('stream one two three', { contextId })));
    expect(events[0]?.payload?.$case).toBe('task');
    const chunks = events.flatMap((e) => (e.payload?.$case === 'artifactUpdate' ? [textOf(e.payload.value.artifact?.parts)] : []));
    expect(chunks.join('').replace(/\s+/g, ' ').trim()).toBe('one two three');
    expect(stateOf(events.at(-1) as StreamResponse)).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('multi-turn: a question, then the answer to the same task completes it', async () => {
    const asked = asTask(await client.sendMessage(request('dialogue', { contextId })));
    expect(asked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const answered = asTask(await client.sendMessage(request('Ada', { taskId: asked.id, contextId })));
    expect(answered.id).toBe(asked.id);
    expect(answered.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(answered.artifacts.map((a) => textOf(a.parts)).join(' ')).toContain('Ada');
  });

  it('cancel: a running task is canceled', async () => {
    const started = asTask(await client.sendMessage(request('long 200', { contextId }, { returnImmediately: true })));
    const canceled = await client.cancelTask(CancelTaskRequest.fromJSON({ id: started.id }));
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect((await client.getTask(GetTaskRequest.fromJSON({ id: started.id }))).status?.state).toBe(TaskState.TASK_STATE_CANCELED);
  });

  it(flavour.version === '1.0' ? 'list: the tasks of the context' : 'list: 0.3 has no ListTasks, and its client says so', async () => {
    if (flavour.version === '0.3') {
      await expect(async () => client.listTasks(ListTasksRequest.fromJSON({ contextId }))).rejects.toThrow();
      return;
    }
    const listed = await client.listTasks(ListTasksRequest.fromJSON({ contextId }));
    expect(listed.tasks.length).toBeGreaterThanOrEqual(5);
    expect(listed.tasks.every((t) => t.contextId === contextId)).toBe(true);
  });

  it('subscribe with resume: a dropped subscription resumed with Last-Event-ID misses nothing and repeats nothing', async () => {
    const started = asTask(await client.sendMessage(request('long 12', { contextId }, { returnImmediately: true })));
    const streamsBefore = recorded.streams.length;
    const controller = new AbortController();
    const first = await collect(client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: started.id }), { signal: controller.signal }), 3);
    controller.abort();
    const ids = recorded.streams[streamsBefore] ?? [];
    await expect.poll(() => ids.length).toBeGreaterThanOrEqual(3);
    const lastSeen = ids[2] as string;
    expect(lastSeen).toMatch(/^\d+-\d+$/);
    const rest = await collect(client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: started.id }), { serviceParameters: { 'Last-Event-ID': lastSeen } }));
    expect(stateOf(rest.at(-1) as StreamResponse)).toBe(TaskState.TASK_STATE_COMPLETED);
    // A resumed stream continues the sequence: no new Task snapshot, no repeats, no gaps.
    expect(rest.some((e) => e.payload?.$case === 'task')).toBe(false);
    const progress = [...first, ...rest].map(progressOf).filter((n): n is number => n !== undefined);
    expect(progress).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    const resumedIds = recorded.streams[streamsBefore + 1] ?? [];
    expect(resumedIds.every((id) => compareEventIds(id, lastSeen) > 0)).toBe(true);
  });

  it('push configs: created, read, listed and deleted by the client; an unknown task is TaskNotFound on the wire', async () => {
    const task = asTask(await client.sendMessage(request('echo for push', { contextId })));
    const hook = `http://127.0.0.1:${DEAD_PORT}/hook`;
    const created = await client.createTaskPushNotificationConfig(
      TaskPushNotificationConfig.fromJSON({ taskId: task.id, id: 'hook', url: hook, authentication: { scheme: 'Bearer', credentials: 's3cret' } }),
    );
    expect(created).toMatchObject({ taskId: task.id, id: 'hook', url: hook });
    const read = await client.getTaskPushNotificationConfig(GetTaskPushNotificationConfigRequest.fromJSON({ taskId: task.id, id: 'hook' }));
    expect(read).toMatchObject({ taskId: task.id, id: 'hook', url: hook });
    const listed = await client.listTaskPushNotificationConfig(ListTaskPushNotificationConfigsRequest.fromJSON({ taskId: task.id }));
    expect(listed.configs.map((c) => c.id)).toEqual(['hook']);
    await client.deleteTaskPushNotificationConfig(DeleteTaskPushNotificationConfigRequest.fromJSON({ taskId: task.id, id: 'hook' }));
    const after = await client.listTaskPushNotificationConfig(ListTaskPushNotificationConfigsRequest.fromJSON({ taskId: task.id }));
    expect(after.configs).toEqual([]);
    // The same create for a task that does not exist, raw over the same binding and version.
    if (flavour.binding === 'GRPC') {
      const raw = await rawGrpcCreatePushConfig({ taskId: 'no-such-task', url: hook, tenant: 'agents/demo' });
      expect(raw.code).toBe(GrpcStatus.NOT_FOUND);
      const [info] = decodeStatus(raw.metadata.get('grpc-status-details-bin')[0] as Buffer).details.map((detail) => decodeErrorInfo(detail.value));
      expect(info).toMatchObject({ reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org' });
      return;
    }
    const base = `${gw.url}/agents/demo/a2a`;
    const headers = { 'Content-Type': 'application/json', ...(flavour.version === '1.0' ? { 'A2A-Version': '1.0' } : {}) };
    const raw =
      flavour.binding === 'JSONRPC'
        ? await fetch(`${base}/jsonrpc`, {
            method: 'POST',
            headers,
            body: JSON.stringify({
              jsonrpc: '2.0',
              id: 1,
              ...(flavour.version === '1.0'
                ? { method: 'CreateTaskPushNotificationConfig', params: { taskId: 'no-such-task', url: hook } }
                : { method: 'tasks/pushNotificationConfig/set', params: { taskId: 'no-such-task', pushNotificationConfig: { url: hook } } }),
            }),
          })
        : await fetch(`${base}/rest${flavour.version === '1.0' ? '' : '/v1'}/tasks/no-such-task/pushNotificationConfigs`, {
            method: 'POST',
            headers,
            body: JSON.stringify(flavour.version === '1.0' ? { url: hook } : { pushNotificationConfig: { url: hook } }),
          });
    const body = (await raw.json()) as { error?: { code: number; status?: string }; code?: number };
    const code = flavour.binding === 'JSONRPC' ? body.error?.code : flavour.version === '0.3' ? body.code : undefined;
    if (code !== undefined) expect(code).toBe(-32001);
    else expect(body.error?.status).toBe('NOT_FOUND');
  });

  it('a direct Message: returned by send, the only frame of a stream', async () => {
    const { client: direct } = await clientFor(flavour, 'direct');
    const reply = await direct.sendMessage(request('reply over the wire'));
    expect('status' in reply).toBe(false);
    expect(textOf((reply as Message).parts)).toBe('You said: over the wire');
    const events = await collect(direct.sendMessageStream(request('reply streamed')));
    expect(events.map((e) => e.payload?.$case)).toEqual(['message']);
  });

  it('errors arrive as the SDK error types: a terminal task refuses a message with UnsupportedOperation', async () => {
    const done = asTask(await client.sendMessage(request('echo done', { contextId })));
    await expect(client.sendMessage(request('more', { taskId: done.id }))).rejects.toBeInstanceOf(UnsupportedOperationError);
  });
});

describe('a 0.3 client and a 1.0 client watch the same task', () => {
  it('both see the same events in the same order, each in its own wire form, and both end at COMPLETED', async () => {
    const { client: modern } = await clientFor(FLAVOURS[0] as Flavour, 'demo');
    const { client: legacy } = await clientFor(FLAVOURS[2] as Flavour, 'demo');
    const started = asTask(await modern.sendMessage(request('long 8', {}, { returnImmediately: true })));
    const [seenModern, seenLegacy] = await Promise.all([
      collect(modern.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: started.id }))),
      collect(legacy.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: started.id }))),
    ]);
    for (const seen of [seenModern, seenLegacy]) expect(stateOf(seen.at(-1) as StreamResponse)).toBe(TaskState.TASK_STATE_COMPLETED);
    // Each started from a snapshot taken when it subscribed; from the later of the two on, they agree.
    const tail = (seen: StreamResponse[]): string[] => seen.filter((e) => e.payload?.$case !== 'task').map((e) => `${e.payload?.$case}:${progressOf(e) ?? stateOf(e) ?? ''}`);
    const a = tail(seenModern);
    const b = tail(seenLegacy);
    const shorter = a.length <= b.length ? a : b;
    const longer = a.length <= b.length ? b : a;
    expect(longer.slice(longer.length - shorter.length)).toEqual(shorter);
    expect(shorter.length).toBeGreaterThan(0);
    // A 1.0 read and a 0.3 read of the finished task say the same.
    const [readModern, readLegacy] = await Promise.all([modern.getTask(GetTaskRequest.fromJSON({ id: started.id })), legacy.getTask(GetTaskRequest.fromJSON({ id: started.id }))]);
    expect(readLegacy.status?.state).toBe(readModern.status?.state);
    expect(readLegacy.artifacts.map((x) => textOf(x.parts))).toEqual(readModern.artifacts.map((x) => textOf(x.parts)));
  });
});
