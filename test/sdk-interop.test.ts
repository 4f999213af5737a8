// Interop with the official A2A client (@a2a-js/sdk): one gateway, the same suite over both
// bindings. Each client is built from the agent card the gateway publishes, with only one
// transport factory registered, and a recording fetch proves every call went over that binding.
import { randomBytes } from 'node:crypto';
import {
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetExtendedAgentCardRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTasksRequest,
  Role,
  SendMessageRequest,
  SubscribeToTaskRequest,
  TaskPushNotificationConfig,
  TaskState,
  type Message,
  type Part,
  type StreamResponse,
  type Task,
} from '@a2a-js/sdk';
import {
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
  type Client,
  type TransportFactory,
} from '@a2a-js/sdk/client';
import {
  A2AError,
  PushNotificationNotSupportedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
  isJsonRpcError,
  isRestError,
} from '@a2a-js/sdk/errors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, waitFor, type TestGateway } from './support/harness.ts';

let gw: TestGateway;

beforeAll(async () => {
  // Push notifications off: this suite pins what the SDK sees of an agent without them (test/push-*.test.ts cover them on).
  gw = await startTestGateway({ name: 'sdk', config: { push: { enabled: false } } });
});

afterAll(async () => {
  await gw?.close();
});

type BindingName = 'JSONRPC' | 'HTTP+JSON';

interface Binding {
  name: BindingName;
  factory: (fetchImpl: typeof fetch) => TransportFactory;
  /** The interface URL the card advertises for this binding. */
  baseUrl: () => string;
}

const BINDINGS: Binding[] = [
  { name: 'JSONRPC', factory: (fetchImpl) => new JsonRpcTransportFactory({ fetchImpl }), baseUrl: () => gw.jsonRpcUrl },
  { name: 'HTTP+JSON', factory: (fetchImpl) => new RestTransportFactory({ fetchImpl }), baseUrl: () => gw.restUrl },
];

/** What each A2A error looks like on each binding (spec 5.4). */
const WIRE: Record<string, { jsonRpcCode: number; httpStatus: number }> = {
  TASK_NOT_FOUND: { jsonRpcCode: -32001, httpStatus: 404 },
  TASK_NOT_CANCELABLE: { jsonRpcCode: -32002, httpStatus: 400 },
  PUSH_NOTIFICATION_NOT_SUPPORTED: { jsonRpcCode: -32003, httpStatus: 400 },
  UNSUPPORTED_OPERATION: { jsonRpcCode: -32004, httpStatus: 400 },
};

const newMessageId = (): string => `sdk-${randomBytes(8).toString('hex')}`;

function sendRequest(
  text: string,
  options: { messageId?: string; taskId?: string; contextId?: string; configuration?: Record<string, unknown> } = {},
): SendMessageRequest {
  return SendMessageRequest.fromJSON({
    message: {
      messageId: options.messageId ?? newMessageId(),
      role: 'ROLE_USER',
      parts: [{ text }],
      ...(options.taskId === undefined ? {} : { taskId: options.taskId }),
      ...(options.contextId === undefined ? {} : { contextId: options.contextId }),
    },
    ...(options.configuration === undefined ? {} : { configuration: options.configuration }),
  });
}

const partText = (part: Part): string => (part.content?.$case === 'text' ? part.content.value : '');
const messageText = (message: Message | undefined): string => (message?.parts ?? []).map(partText).join('');

function asTask(result: Task | Message): Task {
  expect('status' in result, `expected a Task, got ${JSON.stringify(result)}`).toBe(true);
  return result as Task;
}

/** Drains a stream the client opened; fails (and aborts the request) if it does not end by itself. */
async function collect(open: (signal: AbortSignal) => AsyncGenerator<StreamResponse>, timeoutMs = 15_000): Promise<StreamResponse[]> {
  const events: StreamResponse[] = [];
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(new Error(`stream did not end within ${timeoutMs} ms; got ${events.length} events: ${JSON.stringify(events.map(caseOf))}`));
    }, timeoutMs);
  });
  try {
    await Promise.race([
      (async () => {
        for await (const event of open(controller.signal)) events.push(event);
      })(),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
  return events;
}

const caseOf = (event: StreamResponse): string | undefined => event.payload?.$case;

function statusStateOf(event: StreamResponse): TaskState | undefined {
  if (event.payload?.$case === 'statusUpdate') return event.payload.value.status?.state;
  if (event.payload?.$case === 'task') return event.payload.value.status?.state;
  return undefined;
}

async function caught(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to fail, but it succeeded');
}

describe.each(BINDINGS)('official SDK client over $name', (binding) => {
  let client: Client;
  const requestedUrls: string[] = [];

  /** Asserts the SDK's error class, its ErrorInfo reason and the binding's wire code for it. */
  function expectA2AError(error: unknown, errorClass: abstract new (...args: never[]) => A2AError, reason: string): void {
    expect(error).toBeInstanceOf(errorClass);
    const a2a = error as A2AError;
    expect(a2a.reason).toBe(reason);
    const wire = WIRE[reason];
    if (wire === undefined) throw new Error(`no wire mapping for ${reason}`);
    if (binding.name === 'JSONRPC') {
      expect(isJsonRpcError(a2a)).toBe(true);
      if (isJsonRpcError(a2a)) expect(a2a.envelopeCode).toBe(wire.jsonRpcCode);
    } else {
      expect(isRestError(a2a)).toBe(true);
      if (isRestError(a2a)) expect(a2a.statusCode).toBe(wire.httpStatus);
    }
  }

  beforeAll(async () => {
    const recordingFetch: typeof fetch = (input, init) => {
      requestedUrls.push(input instanceof Request ? input.url : String(input));
      return fetch(input, init);
    };
    // Only this binding's factory: the client cannot fall back to the other one.
    const factory = new ClientFactory({ transports: [binding.factory(recordingFetch)] });
    client = await factory.createFromUrl(gw.url);
    expect(client.transport.protocolName).toBe(binding.name);
  });

  it('SendMessage (blocking by default) returns the completed task with its artifact and the user message', async () => {
    const request = sendRequest('echo hello');
    const userMessageId = request.message?.messageId;
    const task = asTask(await client.sendMessage(request));
    expect(task.id).not.toBe('');
    expect(task.contextId).not.toBe('');
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const artifactTexts = task.artifacts.flatMap((a) => a.parts.map(partText));
    expect(artifactTexts.join('')).toContain('hello');
    const userMessages = task.history.filter((m) => m.messageId === userMessageId);
    expect(userMessages).toHaveLength(1);
    expect(userMessages[0]?.role).toBe(Role.ROLE_USER);
    expect(messageText(userMessages[0])).toBe('echo hello');
    expect(userMessages[0]?.taskId).toBe(task.id);
  });

  it('SendMessage with returnImmediately returns before the turn ends; GetTask later shows COMPLETED', async () => {
    const task = asTask(await client.sendMessage(sendRequest('long 10', { configuration: { returnImmediately: true } })));
    expect([TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING]).toContain(task.status?.state);
    const done = await waitFor(
      async () => {
        const current = await client.getTask(GetTaskRequest.fromJSON({ id: task.id }));
        return current.status?.state === TaskState.TASK_STATE_COMPLETED ? current : undefined;
      },
      15_000,
      'the task to complete',
    );
    expect(done.id).toBe(task.id);
    expect(done.artifacts.flatMap((a) => a.parts.map(partText)).join('')).toMatch(/^Completed 10 steps/);
  });

  it('SendStreamingMessage: Task first, appended artifact chunks in order, COMPLETED last, then the stream ends', async () => {
    const events = await collect((signal) => client.sendMessageStream(sendRequest('stream a b c d'), { signal }));
    expect(events.length).toBeGreaterThanOrEqual(6);
    const first = events[0]?.payload;
    expect(first?.$case).toBe('task');
    const taskId = first?.$case === 'task' ? first.value.id : '';
    expect(taskId).not.toBe('');

    const chunks = events.flatMap((e) => (e.payload?.$case === 'artifactUpdate' ? [e.payload.value] : []));
    expect(chunks).toHaveLength(4);
    expect(chunks.map((c) => c.append)).toEqual([false, true, true, true]);
    expect(chunks.map((c) => c.lastChunk)).toEqual([false, false, false, true]);
    expect(chunks.map((c) => c.artifact?.artifactId)).toEqual(['stream', 'stream', 'stream', 'stream']);
    expect(chunks.map((c) => (c.artifact?.parts ?? []).map(partText).join('')).join('')).toBe('a b c d');
    for (const chunk of chunks) expect(chunk.taskId).toBe(taskId);

    const last = events[events.length - 1]?.payload;
    expect(last?.$case).toBe('statusUpdate');
    if (last?.$case === 'statusUpdate') {
      expect(last.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(last.value.taskId).toBe(taskId);
    }
    // Exactly one terminal status, and nothing after it.
    expect(events.filter((e) => statusStateOf(e) === TaskState.TASK_STATE_COMPLETED)).toHaveLength(1);
  });

  it('GetTask honours historyLength: 0 → none, 1 → the last message, unset → all', async () => {
    const sent = asTask(await client.sendMessage(sendRequest('echo history please')));
    const full = await client.getTask(GetTaskRequest.fromJSON({ id: sent.id }));
    expect(full.history.length).toBeGreaterThanOrEqual(2);
    expect(full.history[0]?.role).toBe(Role.ROLE_USER);
    expect(messageText(full.history[0])).toBe('echo history please');

    const none = await client.getTask(GetTaskRequest.fromJSON({ id: sent.id, historyLength: 0 }));
    expect(none.id).toBe(sent.id);
    expect(none.history).toEqual([]);
    expect(none.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);

    const one = await client.getTask(GetTaskRequest.fromJSON({ id: sent.id, historyLength: 1 }));
    expect(one.history).toHaveLength(1);
    expect(one.history[0]?.messageId).toBe(full.history[full.history.length - 1]?.messageId);
  });

  it('ListTasks filters by context and status, pages newest first, and includes artifacts only on request', async () => {
    const first = asTask(await client.sendMessage(sendRequest('echo one')));
    const contextId = first.contextId;
    const second = asTask(await client.sendMessage(sendRequest('echo two', { contextId })));
    // The third stops at INPUT_REQUIRED, so the status filter has something to leave out.
    const third = asTask(await client.sendMessage(sendRequest('dialogue', { contextId })));
    expect(second.contextId).toBe(contextId);
    expect(third.contextId).toBe(contextId);
    expect(third.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);

    const all = await client.listTasks(ListTasksRequest.fromJSON({ contextId }));
    expect(all.tasks.map((t) => t.id)).toEqual([third.id, second.id, first.id]);
    expect(all.totalSize).toBe(3);
    expect(all.nextPageToken).toBe('');
    for (const task of all.tasks) expect(task.contextId).toBe(contextId);
    const stamps = all.tasks.map((t) => Date.parse(t.status?.timestamp ?? ''));
    for (const stamp of stamps) expect(Number.isFinite(stamp)).toBe(true);
    expect([...stamps].sort((a, b) => b - a)).toEqual(stamps);
    // Unset includeArtifacts: the completed echo tasks' artifacts are left out.
    for (const task of all.tasks) expect(task.artifacts).toEqual([]);

    const page1 = await client.listTasks(ListTasksRequest.fromJSON({ contextId, pageSize: 2 }));
    expect(page1.tasks.map((t) => t.id)).toEqual([third.id, second.id]);
    expect(page1.nextPageToken).not.toBe('');
    expect(page1.totalSize).toBe(3);
    const page2 = await client.listTasks(ListTasksRequest.fromJSON({ contextId, pageSize: 2, pageToken: page1.nextPageToken }));
    expect(page2.tasks.map((t) => t.id)).toEqual([first.id]);
    expect(page2.nextPageToken).toBe('');
    expect(page2.totalSize).toBe(3);

    const completed = await client.listTasks(ListTasksRequest.fromJSON({ contextId, status: 'TASK_STATE_COMPLETED' }));
    expect(completed.tasks.map((t) => t.id)).toEqual([second.id, first.id]);
    expect(completed.totalSize).toBe(2);
    for (const task of completed.tasks) expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const waiting = await client.listTasks(ListTasksRequest.fromJSON({ contextId, status: 'TASK_STATE_INPUT_REQUIRED' }));
    expect(waiting.tasks.map((t) => t.id)).toEqual([third.id]);
    expect(waiting.totalSize).toBe(1);

    const withArtifacts = await client.listTasks(ListTasksRequest.fromJSON({ contextId, includeArtifacts: true }));
    const byId = new Map(withArtifacts.tasks.map((t) => [t.id, t]));
    expect(byId.get(first.id)?.artifacts.flatMap((a) => a.parts.map(partText))).toEqual(['echo one']);
    expect(byId.get(second.id)?.artifacts.flatMap((a) => a.parts.map(partText))).toEqual(['echo two']);
    const withoutArtifacts = await client.listTasks(ListTasksRequest.fromJSON({ contextId, includeArtifacts: false }));
    expect(withoutArtifacts.tasks).toHaveLength(3);
    for (const task of withoutArtifacts.tasks) expect(task.artifacts).toEqual([]);

    // A context nobody used lists nothing.
    const empty = await client.listTasks(ListTasksRequest.fromJSON({ contextId: `unused-${newMessageId()}` }));
    expect(empty.tasks).toEqual([]);
    expect(empty.totalSize).toBe(0);
  });

  it('CancelTask cancels a running task; a second cancel is TaskNotCancelableError', async () => {
    const started = asTask(await client.sendMessage(sendRequest('long 200', { configuration: { returnImmediately: true } })));
    expect([TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING]).toContain(started.status?.state);
    const canceled = await client.cancelTask(CancelTaskRequest.fromJSON({ id: started.id }));
    expect(canceled.id).toBe(started.id);
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    // It stays canceled: the turn does not run on and complete.
    const later = await client.getTask(GetTaskRequest.fromJSON({ id: started.id, historyLength: 0 }));
    expect(later.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(later.artifacts).toEqual([]);

    const error = await caught(() => client.cancelTask(CancelTaskRequest.fromJSON({ id: started.id })));
    expectA2AError(error, TaskNotCancelableError, 'TASK_NOT_CANCELABLE');
  });

  it('SubscribeToTask on a running task: Task snapshot first, then status updates, ends after COMPLETED', async () => {
    const started = asTask(await client.sendMessage(sendRequest('long 20', { configuration: { returnImmediately: true } })));
    const events = await collect((signal) => client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: started.id }), { signal }));
    expect(events.length).toBeGreaterThanOrEqual(3);
    const first = events[0]?.payload;
    expect(first?.$case).toBe('task');
    if (first?.$case === 'task') {
      expect(first.value.id).toBe(started.id);
      expect([TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING]).toContain(first.value.status?.state);
    }
    const rest = events.slice(1);
    for (const event of rest) expect(['statusUpdate', 'artifactUpdate']).toContain(caseOf(event));
    const statusUpdates = rest.flatMap((e) => (e.payload?.$case === 'statusUpdate' ? [e.payload.value] : []));
    for (const update of statusUpdates) expect(update.taskId).toBe(started.id);
    expect(statusUpdates.some((u) => u.status?.state === TaskState.TASK_STATE_WORKING)).toBe(true);
    // Progress arrives in order, without repeats.
    const progress = statusUpdates
      .map((u) => /^progress (\d+)\/20$/.exec(messageText(u.status?.message))?.[1])
      .filter((p): p is string => p !== undefined)
      .map(Number);
    expect(progress.length).toBeGreaterThan(0);
    expect(progress[progress.length - 1]).toBe(20);
    for (let i = 1; i < progress.length; i++) expect(progress[i]).toBe((progress[i - 1] ?? 0) + 1);

    const last = events[events.length - 1];
    expect(caseOf(last as StreamResponse)).toBe('statusUpdate');
    expect(statusStateOf(last as StreamResponse)).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('multi-turn: INPUT_REQUIRED with a question, the answer completes the task, a completed task takes no more messages', async () => {
    const asked = asTask(await client.sendMessage(sendRequest('dialogue')));
    expect(asked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(asked.status?.message?.role).toBe(Role.ROLE_AGENT);
    expect(messageText(asked.status?.message)).toBe('What is your name?');

    const answered = asTask(await client.sendMessage(sendRequest('Ada', { taskId: asked.id, contextId: asked.contextId })));
    expect(answered.id).toBe(asked.id);
    expect(answered.contextId).toBe(asked.contextId);
    expect(answered.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(answered.artifacts.flatMap((a) => a.parts.map(partText))).toEqual(['Hello, Ada!']);
    const userTexts = answered.history.filter((m) => m.role === Role.ROLE_USER).map(messageText);
    expect(userTexts).toEqual(['dialogue', 'Ada']);

    const error = await caught(() => client.sendMessage(sendRequest('Bob', { taskId: asked.id, contextId: asked.contextId })));
    expectA2AError(error, UnsupportedOperationError, 'UNSUPPORTED_OPERATION');
    // The refused message changed nothing.
    const after = await client.getTask(GetTaskRequest.fromJSON({ id: asked.id }));
    expect(after.history.map(messageText)).not.toContain('Bob');
    expect(after.artifacts.flatMap((a) => a.parts.map(partText))).toEqual(['Hello, Ada!']);
  });

  it('the same message (same messageId) twice is one task with the message stored once', async () => {
    const messageId = newMessageId();
    const once = asTask(await client.sendMessage(sendRequest('echo twice', { messageId })));
    const twice = asTask(await client.sendMessage(sendRequest('echo twice', { messageId })));
    expect(twice.id).toBe(once.id);
    expect(twice.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const stored = await client.getTask(GetTaskRequest.fromJSON({ id: once.id }));
    expect(stored.history.filter((m) => m.messageId === messageId)).toHaveLength(1);
    expect(stored.artifacts).toHaveLength(1);
  });

  it('GetExtendedAgentCard is UnsupportedOperationError; push-notification configs are PushNotificationNotSupportedError', async () => {
    // The client only asks the server for the extended card when the card offers one; ask the
    // transport directly so the gateway's own answer is what is checked. The Client adds the
    // A2A-Version header itself; a bare transport call must send it explicitly.
    const direct = { serviceParameters: { 'A2A-Version': client.protocolVersion } };
    expect(client.protocolVersion).toBe('1.0');
    expectA2AError(
      await caught(() => client.transport.getExtendedAgentCard(GetExtendedAgentCardRequest.fromJSON({}), direct)),
      UnsupportedOperationError,
      'UNSUPPORTED_OPERATION',
    );
    const card = await client.getAgentCard();
    expect(card.capabilities?.extendedAgentCard).toBe(false);

    const task = asTask(await client.sendMessage(sendRequest('echo push')));
    const config = TaskPushNotificationConfig.fromJSON({ taskId: task.id, id: 'cfg-1', url: 'https://example.com/hook' });
    const getRequest = GetTaskPushNotificationConfigRequest.fromJSON({ taskId: task.id, id: 'cfg-1' });
    const listRequest = ListTaskPushNotificationConfigsRequest.fromJSON({ taskId: task.id });
    const deleteRequest = DeleteTaskPushNotificationConfigRequest.fromJSON({ taskId: task.id, id: 'cfg-1' });

    // Through the client (which refuses create/get/list itself, since the card says
    // pushNotifications: false, and sends delete to the gateway) ...
    for (const call of [
      () => client.createTaskPushNotificationConfig(config),
      () => client.getTaskPushNotificationConfig(getRequest),
      () => client.listTaskPushNotificationConfig(listRequest),
      () => client.deleteTaskPushNotificationConfig(deleteRequest),
    ]) {
      const error = await caught(async () => call());
      expect(error).toBeInstanceOf(PushNotificationNotSupportedError);
      expect((error as A2AError).reason).toBe('PUSH_NOTIFICATION_NOT_SUPPORTED');
    }
    // ... and all four as the gateway answers them on this binding.
    for (const call of [
      () => client.transport.createTaskPushNotificationConfig(config, direct),
      () => client.transport.getTaskPushNotificationConfig(getRequest, direct),
      () => client.transport.listTaskPushNotificationConfig(listRequest, direct),
      () => client.transport.deleteTaskPushNotificationConfig(deleteRequest, direct),
    ]) {
      expectA2AError(await caught(call), PushNotificationNotSupportedError, 'PUSH_NOTIFICATION_NOT_SUPPORTED');
    }
  });

  it('GetTask of an unknown id is TaskNotFoundError', async () => {
    const error = await caught(() => client.getTask(GetTaskRequest.fromJSON({ id: `no-such-task-${newMessageId()}` })));
    expectA2AError(error, TaskNotFoundError, 'TASK_NOT_FOUND');
  });

  it(`every request of this suite went to the ${binding.name} endpoint`, () => {
    expect(requestedUrls.length).toBeGreaterThan(20);
    const base = binding.baseUrl();
    const stray = requestedUrls.filter((url) => !url.startsWith(base));
    expect(stray).toEqual([]);
  });
});

describe('agent card as the SDK reads it', () => {
  it('advertises JSONRPC and HTTP+JSON interfaces at protocol version 1.0 (and 0.3 after them, at the same URLs)', async () => {
    const card = await new DefaultAgentCardResolver().resolve(gw.url);
    const byBinding = new Map(card.supportedInterfaces.filter((i) => i.protocolVersion === '1.0').map((i) => [i.protocolBinding, i]));
    expect(card.supportedInterfaces.map((i) => `${i.protocolBinding} ${i.protocolVersion}`)).toEqual(['JSONRPC 1.0', 'HTTP+JSON 1.0', 'JSONRPC 0.3', 'HTTP+JSON 0.3']);
    expect(byBinding.get('JSONRPC')?.url).toBe(gw.jsonRpcUrl);
    expect(byBinding.get('JSONRPC')?.protocolVersion).toBe('1.0');
    expect(byBinding.get('HTTP+JSON')?.url).toBe(gw.restUrl);
    expect(byBinding.get('HTTP+JSON')?.protocolVersion).toBe('1.0');
    // JSON-RPC is the preferred (first) interface.
    expect(card.supportedInterfaces[0]?.protocolBinding).toBe('JSONRPC');
    expect(card.capabilities?.streaming).toBe(true);
    expect(card.capabilities?.pushNotifications).toBe(false);
    expect(card.skills.map((s) => s.id)).toEqual(expect.arrayContaining(['echo', 'stream', 'dialogue', 'long']));
  });
});
