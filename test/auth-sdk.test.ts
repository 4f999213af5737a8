// The official client (@a2a-js/sdk) against a secured gateway, over both bindings: without
// credentials it gets a 401 it can recognise; with the SDK's own authenticating fetch every
// operation works, the extended card is served, and its retry hook recovers from a rejected
// token on the 401 + WWW-Authenticate challenge.
import { randomBytes } from 'node:crypto';
import {
  CancelTaskRequest,
  GetExtendedAgentCardRequest,
  GetTaskRequest,
  ListTasksRequest,
  SendMessageRequest,
  SubscribeToTaskRequest,
  TaskState,
  type Message,
  type Part,
  type StreamResponse,
  type Task,
} from '@a2a-js/sdk';
import {
  ClientFactory,
  JsonRpcTransportFactory,
  RestTransportFactory,
  createAuthenticatingFetchWithRetry,
  type AuthenticationHandler,
  type Client,
  type TransportFactory,
} from '@a2a-js/sdk/client';
import { isJsonRpcError, isRestError } from '@a2a-js/sdk/errors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectUnchanged, startTestGateway, type TestGateway, turnJobsSettled } from './support/harness.ts';
import { createTestIssuer, type TestIssuer } from './support/identity.ts';

let gw: TestGateway;
let issuer: TestIssuer;
let token: string;

beforeAll(async () => {
  issuer = await createTestIssuer();
  gw = await startTestGateway({ name: 'auth-sdk', config: { auth: { enabled: true, issuers: [issuer.config] }, shutdownGraceMs: 0 } });
  token = await issuer.token({ sub: 'sdk-user' });
});

afterAll(async () => {
  await gw?.close();
});

type BindingName = 'JSONRPC' | 'HTTP+JSON';

const BINDINGS: { name: BindingName; factory: (fetchImpl: typeof fetch) => TransportFactory }[] = [
  { name: 'JSONRPC', factory: (fetchImpl) => new JsonRpcTransportFactory({ fetchImpl }) },
  { name: 'HTTP+JSON', factory: (fetchImpl) => new RestTransportFactory({ fetchImpl }) },
];

/** A client built from the published card with only this binding, so it cannot fall back to the other. */
async function clientOver(binding: (typeof BINDINGS)[number], fetchImpl: typeof fetch): Promise<Client> {
  const client = await new ClientFactory({ transports: [binding.factory(fetchImpl)] }).createFromUrl(gw.url);
  expect(client.transport.protocolName).toBe(binding.name);
  return client;
}

const bearerFetch = (value: () => string): typeof fetch =>
  createAuthenticatingFetchWithRetry(fetch, {
    headers: async () => ({ Authorization: `Bearer ${value()}` }),
    shouldRetryWithHeaders: async () => undefined,
  });

function sendRequest(text: string, configuration?: Record<string, unknown>): SendMessageRequest {
  return SendMessageRequest.fromJSON({
    message: { messageId: `sdk-${randomBytes(8).toString('hex')}`, role: 'ROLE_USER', parts: [{ text }] },
    ...(configuration === undefined ? {} : { configuration }),
  });
}

const partText = (part: Part): string => (part.content?.$case === 'text' ? part.content.value : '');
const messageText = (message: Message | undefined): string => (message?.parts ?? []).map(partText).join('');

function asTask(result: Task | Message): Task {
  expect('status' in result, `expected a Task, got ${JSON.stringify(result)}`).toBe(true);
  return result as Task;
}

async function caught(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to fail, but it succeeded');
}

/** Drains a stream; aborts it (and fails) if it does not end by itself. */
async function collect(open: (signal: AbortSignal) => AsyncGenerator<StreamResponse>, timeoutMs = 15_000): Promise<StreamResponse[]> {
  const events: StreamResponse[] = [];
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  try {
    for await (const event of open(controller.signal)) events.push(event);
  } finally {
    clearTimeout(timer);
  }
  expect(controller.signal.aborted, `stream did not end within ${timeoutMs} ms`).toBe(false);
  return events;
}

function stateOf(event: StreamResponse | undefined): TaskState | undefined {
  if (event?.payload?.$case === 'statusUpdate') return event.payload.value.status?.state;
  if (event?.payload?.$case === 'task') return event.payload.value.status?.state;
  return undefined;
}

/** The keyspace without BullMQ's own bookkeeping: the idle worker rewrites its stall check every second. */
async function stableSnapshot(): Promise<Map<string, string>> {
  const keys = await gw.snapshotKeys();
  for (const key of [...keys.keys()]) if (/:turns-[^:]+:(stalled|stalled-check|events)$/.test(key)) keys.delete(key);
  return keys;
}


async function expectNothingStored(calls: () => Promise<void>): Promise<void> {
  await turnJobsSettled(gw);
  await expectUnchanged({ snapshotKeys: stableSnapshot }, calls);
}

describe.each(BINDINGS)('official SDK client over $name', (binding) => {
  let client: Client;

  beforeAll(async () => {
    client = await clientOver(binding, bearerFetch(() => token));
  });

  /** The SDK's view of a 401 on this binding. */
  function expectUnauthenticated(error: unknown): void {
    if (binding.name === 'JSONRPC') {
      expect(isJsonRpcError(error), String(error)).toBe(true);
      if (isJsonRpcError(error)) expect(error.envelopeCode).toBe(-31401);
    } else {
      expect(isRestError(error), String(error)).toBe(true);
      if (isRestError(error)) expect(error.statusCode).toBe(401);
    }
    expect(String((error as Error).message)).toMatch(/credentials|Bearer/);
  }

  it('without credentials every call fails with the 401 surfaced as an error, and nothing is stored', async () => {
    const anonymous = await clientOver(binding, fetch);
    // Seed so "nothing stored" compares a keyspace that exists.
    asTask(await client.sendMessage(sendRequest('echo seed')));
    await expectNothingStored(async () => {
      expectUnauthenticated(await caught(() => anonymous.sendMessage(sendRequest('echo no token'))));
      expectUnauthenticated(await caught(() => anonymous.getTask(GetTaskRequest.fromJSON({ id: 'any' }))));
      expectUnauthenticated(await caught(() => anonymous.listTasks(ListTasksRequest.fromJSON({}))));
      expectUnauthenticated(await caught(() => anonymous.getAgentCard()));
    });
  });

  it('sendMessage (blocking) returns the completed task', async () => {
    const task = asTask(await client.sendMessage(sendRequest('echo hello sdk')));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(task.artifacts.flatMap((a) => a.parts.map(partText))).toEqual(['echo hello sdk']);
  });

  it('sendMessageStream streams the task to COMPLETED', async () => {
    const events = await collect((signal) => client.sendMessageStream(sendRequest('stream a b c'), { signal }));
    expect(events[0]?.payload?.$case).toBe('task');
    const text = events.flatMap((e) => (e.payload?.$case === 'artifactUpdate' ? (e.payload.value.artifact?.parts ?? []).map(partText) : [])).join('');
    expect(text).toBe('a b c');
    expect(stateOf(events[events.length - 1])).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('getTask and listTasks see the caller’s task', async () => {
    const sent = asTask(await client.sendMessage(sendRequest('echo find me')));
    const read = await client.getTask(GetTaskRequest.fromJSON({ id: sent.id }));
    expect(read.id).toBe(sent.id);
    expect(read.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(messageText(read.history[0])).toBe('echo find me');
    const listed = await client.listTasks(ListTasksRequest.fromJSON({ contextId: sent.contextId }));
    expect(listed.tasks.map((t) => t.id)).toEqual([sent.id]);
  });

  it('cancelTask cancels a running task', async () => {
    const started = asTask(await client.sendMessage(sendRequest('long 200', { returnImmediately: true })));
    const canceled = await client.cancelTask(CancelTaskRequest.fromJSON({ id: started.id }));
    expect(canceled.id).toBe(started.id);
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
  });

  it('resubscribeTask follows a running task to COMPLETED', async () => {
    const started = asTask(await client.sendMessage(sendRequest('long 20', { returnImmediately: true })));
    const events = await collect((signal) => client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: started.id }), { signal }));
    const first = events[0]?.payload;
    expect(first?.$case).toBe('task');
    if (first?.$case === 'task') expect(first.value.id).toBe(started.id);
    expect(stateOf(events[events.length - 1])).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('getAgentCard returns the extended card, which adds the transfer skill', async () => {
    const card = await client.getAgentCard();
    expect(card.skills.map((s) => s.id)).toEqual(expect.arrayContaining(['echo', 'long', 'transfer']));
    // The same card when the transport is asked directly (the Client only asks because the public card offers it).
    const direct = await client.transport.getExtendedAgentCard(GetExtendedAgentCardRequest.fromJSON({}), {
      serviceParameters: { 'A2A-Version': client.protocolVersion },
    });
    expect(direct.skills.map((s) => s.id)).toContain('transfer');
  });

  it("the retry hook: a rejected token's 401 + WWW-Authenticate leads to a retry with a good token, which is kept", async () => {
    const expired = await issuer.token({ sub: 'sdk-user', exp: Math.floor(Date.now() / 1000) - 3600 });
    let current = expired;
    const challenges: { status: number; challenge: string | null; sent: string | null }[] = [];
    const handler: AuthenticationHandler = {
      headers: async () => ({ Authorization: `Bearer ${current}` }),
      shouldRetryWithHeaders: async (request, response) => {
        if (response.status !== 401) return undefined;
        challenges.push({
          status: response.status,
          challenge: response.headers.get('www-authenticate'),
          sent: new Headers(request.headers).get('authorization'),
        });
        return { Authorization: `Bearer ${token}` };
      },
      onSuccessfulRetry: async (headers) => {
        current = (headers.Authorization ?? '').replace(/^Bearer /, '');
      },
    };
    const retrying = await clientOver(binding, createAuthenticatingFetchWithRetry(fetch, handler));

    const task = asTask(await retrying.sendMessage(sendRequest('echo after retry')));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(challenges).toHaveLength(1);
    expect(challenges[0]?.sent).toBe(`Bearer ${expired}`);
    expect(challenges[0]?.challenge).toMatch(/^Bearer realm="a2a-gateway", error="invalid_token"/);
    expect(current).toBe(token);

    // The kept token is used from now on: no second challenge.
    expect((await retrying.getTask(GetTaskRequest.fromJSON({ id: task.id }))).id).toBe(task.id);
    expect(challenges).toHaveLength(1);
  });
});

describe('the public agent card', () => {
  it('with authentication on: declares bearer security and the extended card, and withholds transfer', async () => {
    const response = await fetch(`${gw.url}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } });
    expect(response.status).toBe(200);
    const card = (await response.json()) as {
      capabilities: { extendedAgentCard?: boolean };
      securitySchemes?: Record<string, { httpAuthSecurityScheme?: { scheme?: string } }>;
      securityRequirements?: { schemes: Record<string, unknown> }[];
      skills: { id: string }[];
    };
    expect(card.capabilities.extendedAgentCard).toBe(true);
    expect(card.securitySchemes?.bearer?.httpAuthSecurityScheme?.scheme).toBe('Bearer');
    expect(card.securityRequirements).toEqual(expect.arrayContaining([expect.objectContaining({ schemes: expect.objectContaining({ bearer: expect.anything() }) })]));
    const skills = card.skills.map((s) => s.id);
    expect(skills).toContain('echo');
    expect(skills).not.toContain('transfer');
  });

  it('with authentication off: no security declared and no extended card', async () => {
    const open = await startTestGateway({ name: 'auth-sdk-open', config: { auth: { enabled: false } } });
    try {
      const card = (await (await fetch(`${open.url}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })).json()) as Record<string, unknown> & {
        capabilities: { extendedAgentCard?: boolean };
      };
      expect(card).not.toHaveProperty('securitySchemes');
      expect(card).not.toHaveProperty('securityRequirements');
      expect(card.capabilities.extendedAgentCard).toBe(false);
    } finally {
      await open.close();
    }
  });
});
