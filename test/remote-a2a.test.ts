// The a2a adapter in front of a real downstream agent (the official SDK's server in a child
// process, test/fixtures/downstream-agent): what a caller of the gateway sees, driven with the
// official client, and what the downstream received.
import { randomBytes } from 'node:crypto';
import { CancelTaskRequest, GetTaskRequest, ListTasksRequest, SendMessageRequest, TaskState, type Message, type Part, type StreamResponse, type Task } from '@a2a-js/sdk';
import { ClientFactory, type Client } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRemoteA2aAdapter } from '../adapters/remote-a2a/index.ts';
import type { DownstreamState } from '../adapters/remote-a2a/downstream-state.ts';
import { downstreamMessageId } from '../adapters/remote-a2a/message-id.ts';
import { loadAdapter } from '../adapters/module-loader.ts';
import type { StepRecord } from '../src/store/task-store.ts';
import { spawnDownstreamAgent, type DownstreamAgentProcess } from './support/downstream-agent.ts';
import { ROOT, startTestGateway, waitFor, type TestGateway } from './support/harness.ts';

const FAST = { retryInitialDelayMs: 50, retryMaxDelayMs: 500, pollInitialDelayMs: 50, pollMaxDelayMs: 300 };

const newMessageId = (): string => `rt-${randomBytes(8).toString('hex')}`;

function request(text: string, options: { taskId?: string; configuration?: Record<string, unknown> } = {}): SendMessageRequest {
  return SendMessageRequest.fromJSON({
    message: { messageId: newMessageId(), role: 'ROLE_USER', parts: [{ text }], ...(options.taskId === undefined ? {} : { taskId: options.taskId }) },
    ...(options.configuration === undefined ? {} : { configuration: options.configuration }),
  });
}

const partText = (part: Part): string => (part.content?.$case === 'text' ? part.content.value : '');
const messageText = (message: Message | undefined): string => (message?.parts ?? []).map(partText).join('');
const artifactText = (task: Task, id: string): string => (task.artifacts.find((a) => a.artifactId === id)?.parts ?? []).map(partText).join('');

function asTask(result: Task | Message): Task {
  expect('status' in result, `expected a Task, got ${JSON.stringify(result)}`).toBe(true);
  return result as Task;
}

async function collect(stream: AsyncGenerator<StreamResponse>): Promise<StreamResponse[]> {
  const events: StreamResponse[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

/** What the adapter keeps about the downstream task (ctx.adapterState). */
async function downstreamOf(gw: TestGateway, taskId: string): Promise<DownstreamState | undefined> {
  const raw = await gw.redis.hget(`${gw.prefix}:{${taskId}}:task`, 'adapter:downstream');
  return raw === null ? undefined : (JSON.parse(raw) as DownstreamState);
}

async function stepsOf(gw: TestGateway, taskId: string): Promise<Record<string, StepRecord>> {
  const raw = await gw.redis.hgetall(`${gw.prefix}:{${taskId}}:steps`);
  return Object.fromEntries(Object.entries(raw).map(([field, json]) => [field, JSON.parse(json) as StepRecord]));
}

async function waitForState(client: Client, taskId: string, states: TaskState[], timeoutMs = 20_000): Promise<Task> {
  return waitFor(
    async () => {
      const task = await client.getTask(GetTaskRequest.fromJSON({ id: taskId }));
      return task.status !== undefined && states.includes(task.status.state) ? task : undefined;
    },
    timeoutMs,
    `task ${taskId} to reach ${states.join(' or ')}`,
  );
}

describe('a2a adapter in front of a streaming 1.0 agent (JSON-RPC first)', () => {
  let downstream: DownstreamAgentProcess;
  let gw: TestGateway;
  let client: Client;

  beforeAll(async () => {
    downstream = await spawnDownstreamAgent();
    gw = await startTestGateway({ name: 'remote-a2a', config: { adapter: 'a2a', adapterOptions: { url: downstream.url, ...FAST } } });
    client = await new ClientFactory().createFromUrl(gw.url);
  }, 60_000);

  afterAll(async () => {
    await gw?.close();
    await downstream?.close();
  });

  it('blocking SendMessage: the downstream echo becomes our completed task, and the downstream got the message once', async () => {
    const task = asTask(await client.sendMessage(request('echo hello remote')));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifactText(task, 'echo')).toBe('echo hello remote');
    expect(messageText(task.status?.message)).toBe('echo complete');
    const state = await downstreamOf(gw, task.id);
    expect(state).toMatchObject({ turn: 1, state: 'TASK_STATE_COMPLETED' });
    // The send was journalled with the downstream task id as its reference, and its messageId derives from the step key.
    const send = (await stepsOf(gw, task.id))['1:send'];
    expect(send?.state).toBe('done');
    expect(send?.reference).toBe(state?.taskId);
    const stats = await downstream.stats();
    expect(stats.messages[downstreamMessageId(send?.idempotencyKey ?? '')]).toBe(1);
  });

  it('streaming: downstream artifact chunks arrive as our chunks, in order, append and lastChunk kept', async () => {
    const events = await collect(client.sendMessageStream(request('stream 6 40')));
    const chunks = events.flatMap((e) => (e.payload?.$case === 'artifactUpdate' ? [e.payload.value] : []));
    expect(chunks.map((c) => c.artifact?.parts.map(partText).join(''))).toEqual(['w1 ', 'w2 ', 'w3 ', 'w4 ', 'w5 ', 'w6 ']);
    expect(chunks.map((c) => c.append)).toEqual([false, true, true, true, true, true]);
    expect(chunks.map((c) => c.lastChunk)).toEqual([false, false, false, false, false, true]);
    const statuses = events.flatMap((e) => (e.payload?.$case === 'statusUpdate' ? [e.payload.value] : []));
    expect(statuses.some((s) => messageText(s.status?.message) === 'streaming 6 chunks')).toBe(true);
    expect(statuses.at(-1)?.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const taskId = chunks[0]?.taskId ?? '';
    const task = await client.getTask(GetTaskRequest.fromJSON({ id: taskId }));
    expect(artifactText(task, 'stream')).toBe('w1 w2 w3 w4 w5 w6 ');
  });

  it('INPUT_REQUIRED: the question (with its data part) is ours, and the answer continues the same downstream task', async () => {
    const asked = asTask(await client.sendMessage(request('ask')));
    expect(asked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(messageText(asked.status?.message)).toBe('What is your name?');
    const dataPart = asked.status?.message?.parts.find((p) => p.content?.$case === 'data');
    expect(dataPart?.content?.$case === 'data' ? dataPart.content.value : undefined).toEqual({ form: { fields: ['name'] } });
    const first = await downstreamOf(gw, asked.id);
    expect(first).toMatchObject({ turn: 1, state: 'TASK_STATE_INPUT_REQUIRED' });

    const answered = asTask(await client.sendMessage(request('Ada', { taskId: asked.id })));
    expect(answered.id).toBe(asked.id);
    expect(answered.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifactText(answered, 'answer')).toBe('Hello, Ada');
    const second = await downstreamOf(gw, asked.id);
    // The same downstream task, not a new one.
    expect(second).toMatchObject({ turn: 2, taskId: first?.taskId, contextId: first?.contextId, state: 'TASK_STATE_COMPLETED' });
  });

  it('AUTH_REQUIRED: ours too, and the next message continues the downstream task', async () => {
    const stream = client.sendMessageStream(request('authorize'));
    let taskId = '';
    for await (const event of stream) {
      if (event.payload?.$case === 'task') taskId = event.payload.value.id;
      if (event.payload?.$case === 'statusUpdate' && event.payload.value.status?.state === TaskState.TASK_STATE_AUTH_REQUIRED) break;
    }
    const waiting = await waitForState(client, taskId, [TaskState.TASK_STATE_AUTH_REQUIRED]);
    expect(messageText(waiting.status?.message)).toContain('Sign in');
    const done = asTask(await client.sendMessage(request('done', { taskId })));
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifactText(done, 'answer')).toBe('authorized');
  });

  it('CancelTask cancels the downstream task too', async () => {
    const started = asTask(await client.sendMessage(request('slow 60000', { configuration: { returnImmediately: true } })));
    const state = await waitFor(async () => (await stepsOf(gw, started.id))['1:send']?.reference, 20_000, 'the downstream task id in the step journal');
    const canceled = await client.cancelTask(CancelTaskRequest.fromJSON({ id: started.id }));
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    const stats = await downstream.stats();
    expect(stats.cancels).toContain(state);
  });

  it('a message that interrupts a remote turn (input policy interrupt) cancels its downstream task; the next turn starts a new one in the same context', async () => {
    const interrupting = await startTestGateway({
      name: 'remote-a2a-interrupt',
      config: { agents: { remote: { adapter: 'a2a', adapterOptions: { url: downstream.url, ...FAST }, inputPolicy: 'interrupt' } } },
    });
    try {
      const remote = await new ClientFactory().createFromUrl(interrupting.url);
      const started = asTask(await remote.sendMessage(request('slow 60000', { configuration: { returnImmediately: true } })));
      const first = await waitFor(async () => (await stepsOf(interrupting, started.id))['1:send']?.reference, 20_000, 'the first downstream task id');
      const answered = asTask(await remote.sendMessage(request('echo instead', { taskId: started.id })));
      expect(answered.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(artifactText(answered, 'echo')).toBe('echo instead');
      expect((await downstream.stats()).cancels).toContain(first);
      const state = await downstreamOf(interrupting, started.id);
      expect(state?.turn).toBe(2);
      expect(state?.taskId).not.toBe(first);
      const firstContext = (await new ClientFactory().createFromUrl(downstream.url)).getTask(GetTaskRequest.fromJSON({ id: first }));
      expect(state?.contextId).toBe((await firstContext).contextId);
    } finally {
      await interrupting.close();
    }
  });

  it('a downstream failure fails ours with its reason; a rejection rejects ours with its reason', async () => {
    const failed = asTask(await client.sendMessage(request('fail disk full')));
    expect(failed.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(messageText(failed.status?.message)).toMatch(/^The downstream agent failed task \S+: disk full$/);
    const rejected = asTask(await client.sendMessage(request('reject not my job')));
    expect(rejected.status?.state).toBe(TaskState.TASK_STATE_REJECTED);
    expect(messageText(rejected.status?.message)).toMatch(/^The downstream agent rejected task \S+: not my job$/);
  });

  it('a direct Message reply is our direct Message too: SendMessage returns it, a stream carries it alone, a re-send gets the same one', async () => {
    const sent = request('direct hi there');
    const reply = await client.sendMessage(sent);
    expect('status' in reply, `expected a Message, got ${JSON.stringify(reply)}`).toBe(false);
    const message = reply as Message;
    expect(message.role).toBe(2 /* ROLE_AGENT */);
    expect(messageText(message)).toBe('direct: hi there');
    expect(message.parts.map((p) => p.content?.$case)).toEqual(['text', 'data']);
    expect(message.taskId).toBe('');
    // The same messageId again: the same Message, from the store, without a second downstream call.
    const again = (await client.sendMessage(sent)) as Message;
    expect(again.messageId).toBe(message.messageId);
    // Streamed: exactly one frame, the Message, then the stream closes.
    const events = await collect(client.sendMessageStream(request('direct streamed')));
    expect(events.map((e) => e.payload?.$case)).toEqual(['message']);
    expect(messageText(events[0]?.payload?.$case === 'message' ? events[0].payload.value : undefined)).toBe('direct: streamed');
    // The gateway kept the exchange as a completed task, marked as a direct reply.
    const listed = await client.listTasks(ListTasksRequest.fromJSON({ contextId: message.contextId, historyLength: 2 }));
    const kept = listed.tasks.find((t) => t.history.some((m) => m.messageId === sent.message?.messageId));
    expect(kept?.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect((kept?.metadata as { a2aGateway?: { directReply?: boolean } } | undefined)?.a2aGateway?.directReply).toBe(true);
    expect((await downstreamOf(gw, kept?.id as string))?.taskId).toBeNull();
    const send = (await stepsOf(gw, kept?.id as string))['1:send'];
    expect((await downstream.stats()).messages[downstreamMessageId(send?.idempotencyKey ?? '')]).toBe(1);
  });

  it('an agent configured with skills "from downstream" publishes the downstream\'s skills on its own card, under the gateway\'s security', async () => {
    const agents = await startTestGateway({
      name: 'remote-a2a-card',
      config: { agents: { remote: { adapter: 'a2a', adapterOptions: { url: downstream.url, ...FAST }, card: { skills: 'from downstream' } } } },
    });
    try {
      const card = (await (await fetch(`${agents.url}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })).json()) as {
        skills: { id: string; securityRequirements?: unknown }[];
        description: string;
      };
      // Authentication is off in this suite, so the extended card's "audit" is public too.
      expect(card.skills.map((s) => s.id)).toEqual(['echo', 'stream', 'audit']);
      expect(card.skills.every((s) => s.securityRequirements === undefined)).toBe(true);
      expect(card.description).toContain('scripted A2A agent');
      // Callers are pointed at the gateway, never at the downstream.
      expect(JSON.stringify(card)).not.toContain(downstream.url);
      // Without the setting too, the agent publishes the downstream's skills (and name).
      const plain = (await (await fetch(`${gw.url}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })).json()) as { name: string; skills: { id: string }[] };
      expect(plain.skills.map((s) => s.id)).toEqual(['echo', 'stream', 'audit']);
      expect(plain.name).toBe('downstream test agent');
    } finally {
      await agents.close();
    }
  });

  it('describe(): the downstream skills under our card (its per-skill security dropped), extended skills apart, refreshed when stale', async () => {
    const adapter = createRemoteA2aAdapter({ url: downstream.url, cardRefreshSeconds: 1 });
    const described = await adapter.describe?.();
    expect(described?.skills.map((s) => s.id)).toEqual(['echo', 'stream']);
    expect(described?.skills[1]).toEqual({ id: 'stream', name: 'Stream', description: 'Streams an artifact in chunks.', tags: ['test', 'streaming'], examples: ['stream 5 100'], inputModes: ['text/plain'], outputModes: ['text/plain'] });
    expect(JSON.stringify(described)).not.toContain('securityRequirements');
    expect(described?.extendedSkills?.map((s) => s.id)).toEqual(['audit']);
    expect(described?.description).toContain('scripted A2A agent');

    await fetch(`${downstream.url}/_test/skills`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ skills: [{ id: 'translate', name: 'Translate' }] }) });
    try {
      // Cached until cardRefreshSeconds have passed, then read again.
      expect((await adapter.describe?.())?.skills.map((s) => s.id)).toEqual(['echo', 'stream']);
      const refreshed = await waitFor(async () => {
        const d = await adapter.describe?.();
        return d?.skills[0]?.id === 'translate' ? d : undefined;
      }, 10_000, 'the refreshed skills');
      expect(refreshed.skills.map((s) => s.id)).toEqual(['translate']);
    } finally {
      await fetch(`${downstream.url}/_test/skills`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ skills: [{ id: 'echo', name: 'Echo' }, { id: 'stream', name: 'Stream' }] }),
      });
    }
  });
});

describe('a2a adapter in front of other downstream kinds', () => {
  const started: { close(): Promise<void> }[] = [];

  afterAll(async () => {
    for (const s of started.reverse()) await s.close();
  });

  async function gatewayFor(downstream: DownstreamAgentProcess, name: string): Promise<{ gw: TestGateway; client: Client }> {
    started.push(downstream);
    const gw = await startTestGateway({ name, config: { adapter: 'a2a', adapterOptions: { url: downstream.url, ...FAST } } });
    started.push(gw);
    return { gw, client: await new ClientFactory().createFromUrl(gw.url) };
  }

  it('a 0.3 agent (0.3 card, 0.3 JSON-RPC) through the SDK compat client: streaming, questions and answers', async () => {
    const downstream = await spawnDownstreamAgent({ protocol: '0.3' });
    const card = (await (await fetch(`${downstream.url}/.well-known/agent-card.json`)).json()) as Record<string, unknown>;
    expect(card.protocolVersion).toBe('0.3.0');
    expect(card.supportedInterfaces).toBeUndefined();
    const { gw, client } = await gatewayFor(downstream, 'remote-a2a-v03');
    const events = await collect(client.sendMessageStream(request('stream 4 30')));
    const chunks = events.flatMap((e) => (e.payload?.$case === 'artifactUpdate' ? [e.payload.value] : []));
    expect(chunks.map((c) => c.artifact?.parts.map(partText).join(''))).toEqual(['w1 ', 'w2 ', 'w3 ', 'w4 ']);
    expect(chunks.at(-1)?.lastChunk).toBe(true);

    const asked = asTask(await client.sendMessage(request('ask')));
    expect(asked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const answered = asTask(await client.sendMessage(request('Grace', { taskId: asked.id })));
    expect(artifactText(answered, 'answer')).toBe('Hello, Grace');
    expect((await downstreamOf(gw, asked.id))?.turn).toBe(2);
    // Every call spoke 0.3 (the agent's only interface).
    expect(Object.keys((await downstream.stats()).requests)).toEqual(['jsonrpc 0.3']);
  });

  it('a non-streaming agent is polled: the task completes with its artifact', async () => {
    const downstream = await spawnDownstreamAgent({ streaming: false });
    const { gw, client } = await gatewayFor(downstream, 'remote-a2a-poll');
    const task = asTask(await client.sendMessage(request('slow 800')));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifactText(task, 'slow')).toBe('done after 800 ms');
    const send = (await stepsOf(gw, task.id))['1:send'];
    expect((await downstream.stats()).messages[downstreamMessageId(send?.idempotencyKey ?? '')]).toBe(1);
  });

  it('an agent whose card lists HTTP+JSON first is called over HTTP+JSON', async () => {
    const downstream = await spawnDownstreamAgent({ bindings: ['rest', 'jsonrpc'] });
    const adapter = await loadAdapter('a2a', { url: `${downstream.url}/.well-known/agent-card.json` }, ROOT);
    started.push(downstream);
    // The card URL form of `url` works too; the transport is chosen from the card's order.
    const { DownstreamAgent } = await import('../adapters/remote-a2a/downstream-agent.ts');
    const connection = await new DownstreamAgent({ url: downstream.url, fetch, refreshMs: 60_000 }).connection();
    expect(connection.client.transport.protocolName).toBe('HTTP+JSON');
    expect((await adapter.describe?.())?.skills.map((s) => s.id)).toEqual(['echo', 'stream']);
    const gw = await startTestGateway({ name: 'remote-a2a-rest', config: { adapter: 'a2a', adapterOptions: { url: downstream.url, ...FAST } } });
    started.push(gw);
    const client = await new ClientFactory().createFromUrl(gw.url);
    const task = asTask(await client.sendMessage(request('echo over rest')));
    expect(artifactText(task, 'echo')).toBe('echo over rest');
    expect(Object.keys((await downstream.stats()).requests)).toEqual(['rest 1.0']);
  });
});

describe('a2a adapter options', () => {
  const load = (options: Record<string, unknown>): Promise<unknown> => loadAdapter('a2a', options as never, ROOT);

  it('a bad option stops the load with one line naming it (and never a secret)', async () => {
    await expect(load({})).rejects.toThrow(/^a2a adapter: option url: /);
    await expect(load({ url: 'ftp://x' })).rejects.toThrow('option url: must be an http or https URL');
    await expect(load({ url: 'http://127.0.0.1:1', cardRefreshSeconds: 0 })).rejects.toThrow('option cardRefreshSeconds');
    await expect(load({ url: 'http://127.0.0.1:1', stepMs: 20 })).rejects.toThrow(/option \(options\): Unrecognized key: "stepMs"/);
    await expect(load({ url: 'http://127.0.0.1:1', credentials: { type: 'basic' } })).rejects.toThrow('option credentials.type: type must be one of bearer, oauth2-client-credentials, signature');
    await expect(load({ url: 'http://127.0.0.1:1', credentials: { type: 'bearer' } })).rejects.toThrow('option credentials.tokenEnv: set exactly one of tokenEnv and tokenFile');
    await expect(load({ url: 'http://127.0.0.1:1', credentials: { type: 'bearer', tokenEnv: 'A2A_TEST_UNSET_TOKEN_VARIABLE' } })).rejects.toThrow(
      'option credentials.tokenEnv: the environment variable A2A_TEST_UNSET_TOKEN_VARIABLE is not set',
    );
    await expect(load({ url: 'http://127.0.0.1:1', credentials: { type: 'signature', keyId: 'k', privateKeyFile: 'no/such/key.json' } })).rejects.toThrow(
      /^a2a adapter: option credentials.privateKeyFile: cannot read .*no\/such\/key.json \(ENOENT\)$/,
    );
    for (const options of [{}, { url: 'http://127.0.0.1:1', credentials: { type: 'bearer' } }]) {
      const error = (await load(options).catch((e: unknown) => e)) as Error;
      expect(error.message).not.toContain('\n');
    }
  });
});
