// The openai adapter through the real gateway (real Redis, real HTTP), against a local
// OpenAI-compatible server the tests start (never the internet). Driven with the official A2A
// client, and with raw HTTP where the wire shape or the stored state is the point.
import { randomBytes } from 'node:crypto';
import { CancelTaskRequest, GetTaskRequest, SendMessageRequest, TaskState, type Part, type StreamResponse, type Task, type TaskArtifactUpdateEvent } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Task as WireTask } from '../src/protocol/types.ts';
import type { TurnRecord } from '../src/store/task-store.ts';
import { startFakeOpenAIServer, type FakeOpenAIServer, type RecordedRequest } from './support/fake-openai-server.ts';
import { rpc, startTestGateway, textMessage, type TestGateway } from './support/harness.ts';

const KEY_ENV = `A2A_TEST_OPENAI_KEY_${randomBytes(3).toString('hex').toUpperCase()}`;
const API_KEY = `sk-test-${randomBytes(12).toString('hex')}`;
const SYSTEM_PROMPT = 'You are the fake assistant of a test.';

let fake: FakeOpenAIServer;

beforeAll(async () => {
  process.env[KEY_ENV] = API_KEY;
  fake = await startFakeOpenAIServer();
});

afterAll(async () => {
  delete process.env[KEY_ENV];
  await fake?.close();
});

const marker = (): string => `#${randomBytes(4).toString('hex')}`;
const partText = (part: Part): string => (part.content?.$case === 'text' ? part.content.value : '');
const artifactText = (task: Task, artifactId = 'reply-1'): string =>
  (task.artifacts.find((a) => a.artifactId === artifactId)?.parts ?? []).map(partText).join('');
const statusText = (task: Task): string => (task.status?.message?.parts ?? []).map(partText).join('');

function sendRequest(text: string, options: { taskId?: string; contextId?: string; returnImmediately?: boolean } = {}): SendMessageRequest {
  return SendMessageRequest.fromJSON({
    message: {
      messageId: `m-${randomBytes(8).toString('hex')}`,
      role: 'ROLE_USER',
      parts: [{ text }],
      ...(options.taskId === undefined ? {} : { taskId: options.taskId }),
      ...(options.contextId === undefined ? {} : { contextId: options.contextId }),
    },
    ...(options.returnImmediately === true ? { configuration: { returnImmediately: true } } : {}),
  });
}

async function sdkClient(gw: TestGateway): Promise<Client> {
  return new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl: fetch })] }).createFromUrl(gw.url);
}

async function send(client: Client, text: string, options: { taskId?: string; contextId?: string } = {}): Promise<Task> {
  const result = await client.sendMessage(sendRequest(text, options));
  expect('status' in result, `expected a Task, got ${JSON.stringify(result)}`).toBe(true);
  return result as Task;
}

async function streamEvents(client: Client, text: string, timeoutMs = 30_000): Promise<StreamResponse[]> {
  const events: StreamResponse[] = [];
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  try {
    for await (const event of client.sendMessageStream(sendRequest(text), { signal: controller.signal })) events.push(event);
  } finally {
    clearTimeout(timer);
  }
  return events;
}

const chunksOf = (events: StreamResponse[]): TaskArtifactUpdateEvent[] => events.flatMap((e) => (e.payload?.$case === 'artifactUpdate' ? [e.payload.value] : []));
const chunkText = (chunk: TaskArtifactUpdateEvent): string => (chunk.artifact?.parts ?? []).map(partText).join('');

/** What a client applying the chunks in order holds at the end (append extends, otherwise replaces). */
function applyChunks(chunks: TaskArtifactUpdateEvent[]): string {
  let text = '';
  for (const chunk of chunks) text = chunk.append ? text + chunkText(chunk) : chunkText(chunk);
  return text;
}

async function wireTask(gw: TestGateway, id: string): Promise<WireTask> {
  const { body } = await rpc(gw.jsonRpcUrl, 'GetTask', { id });
  expect(body.error).toBeUndefined();
  return body.result as WireTask;
}

async function turnRecord(gw: TestGateway, taskId: string, turn = 1): Promise<TurnRecord> {
  return JSON.parse((await gw.redis.hget(`${gw.prefix}:{${taskId}}:turns`, String(turn))) as string) as TurnRecord;
}

function expectedUsage(request: RecordedRequest): { inputTokens: number; outputTokens: number; totalTokens: number } {
  const input = Math.ceil(request.messages.reduce((n, m) => n + m.content.length, 0) / 4);
  const output = Math.max(1, request.replyText.match(/\S+\s*/g)?.length ?? 0);
  return { inputTokens: input, outputTokens: output, totalTokens: input + output };
}

describe('openai adapter, streamed replies', () => {
  let gw: TestGateway;
  let client: Client;

  beforeAll(async () => {
    gw = await startTestGateway({
      name: 'openai',
      config: {
        adapter: 'openai',
        adapterOptions: {
          baseURL: fake.baseURL,
          model: 'fake-model',
          systemPrompt: SYSTEM_PROMPT,
          apiKeyEnv: KEY_ENV,
          temperature: 0.2,
          maxTokens: 256,
          maxRetries: 3,
          retryBaseDelayMs: 100,
          maxRetryDelayMs: 5_000,
          streamIdleTimeoutMs: 1_500,
        },
      },
    });
    client = await sdkClient(gw);
  });

  afterAll(async () => {
    await gw?.close();
  });

  it('blocking SendMessage: COMPLETED with the reply as artifact and final message; the request carries system prompt, input, model, key and options', async () => {
    const m = marker();
    const task = await send(client, `hello blocking ${m}`);
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifactText(task)).toBe(`You said: hello blocking ${m}`);
    expect(statusText(task)).toBe(`You said: hello blocking ${m}`);

    const [request] = fake.requestsFor(m);
    expect(fake.requestsFor(m)).toHaveLength(1);
    expect(request?.model).toBe('fake-model');
    expect(request?.messages).toEqual([
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: `hello blocking ${m}` },
    ]);
    expect(request?.stream).toBe(true);
    expect(request?.includeUsage).toBe(true);
    expect(request?.tools).toEqual(['ask_user']);
    expect(request?.temperature).toBe(0.2);
    expect(request?.maxTokens).toBe(256);
    expect(request?.headers['authorization']).toBe(`Bearer ${API_KEY}`);

    // Usage as the server reported it: on the task and on the turn record.
    const wire = await wireTask(gw, task.id);
    expect(wire.metadata?.['a2aGateway']).toMatchObject({ usage: expectedUsage(request as RecordedRequest) });
    const record = await turnRecord(gw, task.id);
    expect(record.usage).toEqual({ model: 'fake-model', inputTokens: expectedUsage(request as RecordedRequest).inputTokens, outputTokens: expectedUsage(request as RecordedRequest).outputTokens });
    expect(record.budgetSpent).toBe(expectedUsage(request as RecordedRequest).totalTokens);
  });

  it('the API key is never stored, and neither it nor the server address is on the card', async () => {
    const m = marker();
    await send(client, `secret check ${m}`);
    const keys = await gw.snapshotKeys();
    expect(keys.size).toBeGreaterThan(0);
    for (const key of keys.keys()) {
      const type = await gw.redis.type(key);
      const content =
        type === 'hash' ? JSON.stringify(await gw.redis.hgetall(key)) : type === 'list' ? JSON.stringify(await gw.redis.lrange(key, 0, -1)) : type === 'stream' ? JSON.stringify(await gw.redis.xrange(key, '-', '+')) : type === 'string' ? ((await gw.redis.get(key)) ?? '') : type === 'zset' ? JSON.stringify(await gw.redis.zrange(key, 0, -1)) : type === 'set' ? JSON.stringify(await gw.redis.smembers(key)) : '';
      expect(content, key).not.toContain(API_KEY);
    }
    const card = await (await fetch(`${gw.url}/.well-known/agent-card.json`)).text();
    expect(card).not.toContain(API_KEY);
    expect(card).not.toContain(fake.baseURL);
    const parsed = JSON.parse(card) as { skills: { id: string; name: string }[] };
    expect(parsed.skills).toEqual([expect.objectContaining({ id: 'chat', name: 'Chat with fake-model' })]);
  });

  it('SendStreamingMessage: chunks arrive in order, the first replaces, lastChunk only at the end, and the stored artifact is their concatenation', async () => {
    const m = marker();
    const events = await streamEvents(client, `slow=20 words=12 ${m}`);
    const chunks = chunksOf(events);
    expect(chunks.length).toBeGreaterThanOrEqual(2);
    expect(chunks.map((c) => c.artifact?.artifactId)).toEqual(chunks.map(() => 'reply-1'));
    expect(chunks[0]?.append).toBe(false);
    for (const chunk of chunks.slice(1)) expect(chunk.append).toBe(true);
    expect(chunks.map((c) => c.lastChunk)).toEqual(chunks.map((_, i) => i === chunks.length - 1));
    const expected = Array.from({ length: 12 }, (_, i) => `w${i + 1}`).join(' ');
    expect(chunks.map(chunkText).join('')).toBe(expected);
    expect(fake.requestsFor(m)[0]?.replyText).toBe(expected);
    // The last chunk says how the reply ended.
    const last = chunks.at(-1);
    expect(last?.artifact?.metadata).toMatchObject({ model: 'fake-model', finishReason: 'stop', truncated: false });
    const final = events.at(-1)?.payload;
    expect(final?.$case === 'statusUpdate' && final.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);

    const taskId = events[0]?.payload?.$case === 'task' ? events[0].payload.value.id : '';
    const stored = await client.getTask(GetTaskRequest.fromJSON({ id: taskId }));
    expect(artifactText(stored)).toBe(expected);
    expect(stored.artifacts).toHaveLength(1);
  });

  it('tokens that arrive faster than chunks are stored are coalesced: fewer chunks than tokens, the same text', async () => {
    const m = marker();
    const events = await streamEvents(client, `burst=400 ${m}`);
    const chunks = chunksOf(events);
    const expected = Array.from({ length: 400 }, (_, i) => `w${i + 1}`).join(' ');
    expect(applyChunks(chunks)).toBe(expected);
    expect(fake.requestsFor(m)[0]?.chunksSent).toBe(400);
    expect(chunks.length).toBeLessThan(100);
  });

  it('a question through ask_user ends the turn INPUT_REQUIRED; the answer continues the task with the whole history', async () => {
    const m = marker();
    const asked = await send(client, `ask ${m}`);
    expect(asked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(statusText(asked)).toBe('What is your name?');

    const answered = await send(client, `Ada ${m}`, { taskId: asked.id, contextId: asked.contextId });
    expect(answered.id).toBe(asked.id);
    expect(answered.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifactText(answered, 'reply-2')).toBe(`You said: Ada ${m}`);

    const requests = fake.requestsFor(m);
    expect(requests).toHaveLength(2);
    expect(requests[1]?.messages).toEqual([
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: `ask ${m}` },
      { role: 'assistant', content: 'What is your name?' },
      { role: 'user', content: `Ada ${m}` },
    ]);
    expect(requests[1]?.tools).toEqual(['ask_user']);
  });

  it("a second task of the same context sends the first task's exchange before its own input", async () => {
    const m = marker();
    const first = await send(client, `first ${m}`);
    expect(first.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const second = await send(client, `second ${m}`, { contextId: first.contextId });
    expect(second.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(second.id).not.toBe(first.id);
    const request = fake.requestsFor(`second ${m}`)[0];
    expect(request?.messages).toEqual([
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: `first ${m}` },
      { role: 'assistant', content: `You said: first ${m}` },
      { role: 'user', content: `second ${m}` },
    ]);
  });

  it('finish_reason "length" completes, says the reply was cut (artifact metadata and final message), and the notice is not sent back to the model', async () => {
    const m = marker();
    const task = await send(client, `length ${m}`);
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifactText(task)).toBe(`You said: length ${m}`);
    const wire = await wireTask(gw, task.id);
    expect(wire.artifacts?.[0]?.metadata).toMatchObject({ finishReason: 'length', truncated: true });
    const parts = wire.status.message?.parts ?? [];
    expect(parts[0]).toEqual({ text: `You said: length ${m}` });
    expect(parts[1]?.text).toMatch(/cut off.*token limit/);

    await send(client, `after ${m}`, { contextId: task.contextId });
    const followUp = fake.requestsFor(`after ${m}`)[0];
    expect(followUp?.messages[2]).toEqual({ role: 'assistant', content: `You said: length ${m}` });
  });

  it('429 with Retry-After (seconds) is retried after the wait the server asked for, announced in a status, then completes', async () => {
    const m = marker();
    const events = await streamEvents(client, `rate-limit=1 retry-after=1 ${m}`);
    const final = events.at(-1)?.payload;
    expect(final?.$case === 'statusUpdate' && final.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const requests = fake.requestsFor(m);
    expect(requests.map((r) => r.status)).toEqual([429, 200]);
    expect((requests[1]?.startedAtMs ?? 0) - (requests[0]?.startedAtMs ?? 0)).toBeGreaterThanOrEqual(950);
    const retryStatus = events.flatMap((e) => (e.payload?.$case === 'statusUpdate' ? [e.payload.value.status?.message] : [])).find((msg) => msg?.metadata?.['modelRetry'] !== undefined);
    expect(retryStatus?.metadata?.['modelRetry']).toMatchObject({ retry: 1, status: 429, delayMs: 1000 });
    // The client's own retries are off: every request is its first try.
    for (const request of requests) expect(request.headers['x-stainless-retry-count']).toBe('0');
  });

  it('429 with retry-after-ms is honoured to the millisecond', async () => {
    const m = marker();
    const task = await send(client, `rate-limit=2 retry-after-ms=300 ${m}`);
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const requests = fake.requestsFor(m);
    expect(requests.map((r) => r.status)).toEqual([429, 429, 200]);
    for (let i = 1; i < requests.length; i++) expect((requests[i]?.startedAtMs ?? 0) - (requests[i - 1]?.startedAtMs ?? 0)).toBeGreaterThanOrEqual(290);
    const record = await turnRecord(gw, task.id);
    expect(record.steps?.filter((s) => s.name === 'model-retry').map((s) => s.detail?.['delayMs'])).toEqual([300, 300]);
  });

  it('500 twice, then the reply: retried with backoff and completed', async () => {
    const m = marker();
    const task = await send(client, `fail-500=2 ${m}`);
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifactText(task)).toBe(`You said: fail-500=2 ${m}`);
    expect(fake.requestsFor(m).map((r) => r.status)).toEqual([500, 500, 200]);
  });

  it('a server that keeps failing fails the turn after maxRetries, naming the limit', async () => {
    const m = marker();
    const task = await send(client, `fail-500=10 ${m}`);
    expect(task.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(statusText(task)).toMatch(/still failed after 3 retries \(option maxRetries\).*500/);
    expect(fake.requestsFor(m)).toHaveLength(4);
  });

  it('a Retry-After longer than maxRetryDelayMs fails the turn at once instead of holding it', async () => {
    const m = marker();
    const task = await send(client, `rate-limit=1 retry-after=120 ${m}`);
    expect(task.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(statusText(task)).toMatch(/retried after 120 s, longer than maxRetryDelayMs \(5000 ms\)/);
    expect(fake.requestsFor(m)).toHaveLength(1);
  });

  it('400 fails fast with the server’s reason (raw JSON-RPC), without a retry', async () => {
    const m = marker();
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage(`fail-400 ${m}`) });
    expect(body.error).toBeUndefined();
    const task = (body.result as { task: WireTask }).task;
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    expect(task.status.message?.parts[0]?.text).toBe(
      "The model server refused the request (HTTP 400 Invalid value for 'temperature': the fake server refuses this request on purpose.).",
    );
    expect(fake.requestsFor(m)).toHaveLength(1);
  });

  it('401 names the environment variable the key comes from, never the key', async () => {
    const m = marker();
    const task = await send(client, `fail-401 ${m}`);
    expect(task.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(statusText(task)).toContain(`the environment variable ${KEY_ENV}`);
    expect(statusText(task)).not.toContain(API_KEY);
    expect(fake.requestsFor(m)).toHaveLength(1);
  });

  it('a stream cut mid-reply is retried; the retry’s first chunk replaces the partial reply, so no client sees a spliced one', async () => {
    const m = marker();
    const events = await streamEvents(client, `cut slow=10 words=10 ${m}`);
    const requests = fake.requestsFor(m);
    expect(requests).toHaveLength(2);
    expect(requests[0]?.chunksSent).toBeGreaterThan(0);
    const chunks = chunksOf(events);
    const expected = Array.from({ length: 10 }, (_, i) => `w${i + 1}`).join(' ');
    // Two replacing chunks: the first call's first chunk and the retry's first chunk.
    expect(chunks.filter((c) => !c.append)).toHaveLength(2);
    const restart = chunks.findIndex((c, i) => i > 0 && !c.append);
    expect(applyChunks(chunks.slice(0, restart))).toBe(expected.slice(0, applyChunks(chunks.slice(0, restart)).length));
    expect(applyChunks(chunks.slice(restart))).toBe(expected);
    expect(applyChunks(chunks)).toBe(expected);
    expect(chunks.filter((c) => c.lastChunk)).toHaveLength(1);
    const taskId = events[0]?.payload?.$case === 'task' ? events[0].payload.value.id : '';
    expect(artifactText(await client.getTask(GetTaskRequest.fromJSON({ id: taskId })))).toBe(expected);
  });

  it('a stream that ends without finish_reason, reports an error event, or goes silent is retried the same way', async () => {
    for (const script of ['end-early slow=5 words=8', 'stream-error slow=5 words=8', 'stall words=8']) {
      const m = marker();
      const task = await send(client, `${script} ${m}`);
      expect(task.status?.state, script).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(artifactText(task), script).toBe(Array.from({ length: 8 }, (_, i) => `w${i + 1}`).join(' '));
      expect(fake.requestsFor(m), script).toHaveLength(2);
    }
    // The silent stream was given up by the adapter (after streamIdleTimeoutMs), not by the server.
    const stalled = fake.requests.filter((r) => r.lastUserText.startsWith('stall ') && r.tryNumber === 1);
    expect(stalled.at(-1)?.clientDisconnected).toBe(true);
  });

  it('CancelTask aborts the HTTP stream (the server sees the client go) and the task is CANCELED', async () => {
    const m = marker();
    const started = await client.sendMessage(sendRequest(`slow=200 words=100 ${m}`, { returnImmediately: true }));
    const taskId = (started as Task).id;
    await fake.waitFor(() => (fake.requestsFor(m)[0]?.chunksSent ?? 0) >= 2 || undefined, 20_000, 'the reply to start streaming');
    const canceled = await client.cancelTask(CancelTaskRequest.fromJSON({ id: taskId }));
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    const request = await fake.waitFor(() => (fake.requestsFor(m)[0]?.clientDisconnected === true ? fake.requestsFor(m)[0] : undefined), 10_000, 'the server to see the disconnect');
    expect(request.chunksSent).toBeLessThan(100);
    expect(fake.requestsFor(m)).toHaveLength(1);
    const wire = await wireTask(gw, taskId);
    expect(wire.status.state).toBe('TASK_STATE_CANCELED');
    expect(wire.metadata?.['a2aGateway']).toMatchObject({ cancellation: expect.objectContaining({ outcome: expect.any(String) }) });
  });

  it('a server that reports no usage is charged an estimate; nothing is recorded as usage', async () => {
    const m = marker();
    const task = await send(client, `no-usage ${m}`);
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const [request] = fake.requestsFor(m);
    const sentChars = (request?.messages ?? []).reduce((n, msg) => n + msg.content.length, 0);
    const record = await turnRecord(gw, task.id);
    expect(record.budgetSpent).toBe(Math.ceil(sentChars / 4) + Math.ceil((request?.replyText.length ?? 0) / 4));
    expect(record.usage).toBeUndefined();
    const wire = await wireTask(gw, task.id);
    expect((wire.metadata?.['a2aGateway'] as Record<string, unknown> | undefined)?.['usage']).toBeUndefined();
    expect(wire.artifacts?.[0]?.metadata).toMatchObject({ usageReported: false });
  });

  it('a tool the agent does not offer fails the turn, naming it; a skill it does not have is rejected', async () => {
    const m = marker();
    const task = await send(client, `tool=search ${m}`);
    expect(task.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(statusText(task)).toContain('"search"');

    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage(`translate ${m}`, { metadata: { skill: 'translate' } }) });
    const rejected = (body.result as { task: WireTask }).task;
    expect(rejected.status.state).toBe('TASK_STATE_REJECTED');
    expect(rejected.status.message?.parts[0]?.text).toContain('chat');
    expect(fake.requestsFor(`translate ${m}`)).toHaveLength(0);
  });
});

describe('openai adapter, non-streamed replies and no API key', () => {
  let gw: TestGateway;
  let client: Client;
  let savedKey: string | undefined;

  beforeAll(async () => {
    // The default variable, unset while the adapter loads (it reads the key then).
    savedKey = process.env['OPENAI_API_KEY'];
    delete process.env['OPENAI_API_KEY'];
    gw = await startTestGateway({
      name: 'openai-whole',
      config: {
        adapter: 'openai',
        // The default variable, unset here: no Authorization header at all (what Ollama expects).
        adapterOptions: { baseURL: fake.baseURL, model: 'llama3', stream: false, retryBaseDelayMs: 100 },
      },
    });
    client = await sdkClient(gw);
  });

  afterAll(async () => {
    if (savedKey !== undefined) process.env['OPENAI_API_KEY'] = savedKey;
    await gw?.close();
  });

  it('one request, one chunk (replacing and last), usage recorded, and no Authorization header without a key', async () => {
    const m = marker();
    const events = await streamEvents(client, `whole ${m}`);
    const chunks = chunksOf(events);
    expect(chunks).toHaveLength(1);
    expect(chunks[0]).toMatchObject({ append: false, lastChunk: true });
    expect(chunkText(chunks[0] as TaskArtifactUpdateEvent)).toBe(`You said: whole ${m}`);
    const [request] = fake.requestsFor(m);
    expect(request?.stream).toBe(false);
    expect(request?.includeUsage).toBe(false);
    expect(request?.model).toBe('llama3');
    expect(request?.headers['authorization']).toBeUndefined();
    const taskId = events[0]?.payload?.$case === 'task' ? events[0].payload.value.id : '';
    const wire = await wireTask(gw, taskId);
    expect(wire.metadata?.['a2aGateway']).toMatchObject({ usage: expectedUsage(request as RecordedRequest) });
  });

  it('ask_user and retries work the same without streaming', async () => {
    const m = marker();
    const asked = await send(client, `ask ${m}`);
    expect(asked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(statusText(asked)).toBe('What is your name?');
    const retried = await send(client, `fail-500=1 ${m}`);
    expect(retried.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifactText(retried)).toBe(`You said: fail-500=1 ${m}`);
    expect(fake.requestsFor(`fail-500=1 ${m}`).map((r) => r.status)).toEqual([500, 200]);
  });
});

describe('openai adapter, token budget', () => {
  let gw: TestGateway;
  let client: Client;

  beforeAll(async () => {
    gw = await startTestGateway({
      name: 'openai-budget',
      config: { adapter: 'openai', turnBudget: 30, adapterOptions: { baseURL: fake.baseURL, model: 'fake-model', apiKeyEnv: KEY_ENV } },
    });
    client = await sdkClient(gw);
  });

  afterAll(async () => {
    await gw?.close();
  });

  it('a reply within turnBudget completes; one whose tokens pass it fails the turn naming the limit, with the usage still on the task', async () => {
    const small = await send(client, `hi ${marker()}`);
    expect(small.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);

    const m = marker();
    const task = await send(client, `words=40 ${m}`);
    expect(task.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(statusText(task)).toMatch(/ran out of budget.*budget of 30 units \(turnBudget\).*for tokens/);
    const [request] = fake.requestsFor(m);
    const wire = await wireTask(gw, task.id);
    expect(wire.metadata?.['a2aGateway']).toMatchObject({ usage: expectedUsage(request as RecordedRequest) });
    expect((await turnRecord(gw, task.id)).budgetSpent).toBe(expectedUsage(request as RecordedRequest).totalTokens);
  });
});

describe('openai adapter, turn deadline', () => {
  let gw: TestGateway;
  let client: Client;

  beforeAll(async () => {
    gw = await startTestGateway({
      name: 'openai-deadline',
      config: { adapter: 'openai', turnDeadlineMs: 2_000, adapterOptions: { baseURL: fake.baseURL, model: 'fake-model', apiKeyEnv: KEY_ENV } },
    });
    client = await sdkClient(gw);
  });

  afterAll(async () => {
    await gw?.close();
  });

  it('the deadline ends a wait before a retry (the server asked for 10 s, within maxRetryDelayMs)', async () => {
    const m = marker();
    const task = await send(client, `rate-limit=1 retry-after=10 ${m}`);
    expect(task.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(statusText(task)).toMatch(/deadline of 2000 ms/);
    expect(fake.requestsFor(m)).toHaveLength(1);
  });

  it('the deadline aborts a reply still streaming; the server sees the client go', async () => {
    const m = marker();
    const task = await send(client, `slow=200 words=100 ${m}`);
    expect(task.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(statusText(task)).toMatch(/deadline of 2000 ms/);
    await fake.waitFor(() => fake.requestsFor(m)[0]?.clientDisconnected === true || undefined, 10_000, 'the server to see the disconnect');
  });
});
