// The remote adapter's credentials are pinned to the origin it was configured for: a card naming
// an interface on another origin is refused (naming both) unless allowedOrigins lists it, and a
// redirect to another origin is not followed, so no credential reaches it; a redirect on the
// same origin is followed as before.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { SendMessageRequest, TaskState, type Message, type Part, type Task } from '@a2a-js/sdk';
import { ClientFactory, type Client } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDownstreamFetch } from '../adapters/remote-a2a/downstream-fetch.ts';
import { parseRemoteA2aOptions } from '../adapters/remote-a2a/options.ts';
import { MAX_REDIRECTS, OriginPin } from '../adapters/remote-a2a/origin-pin.ts';
import { startTestGateway } from './support/harness.ts';
import { listen, startHostileDownstream, type HostileDownstream } from './support/hostile-downstream.ts';

const TOKEN = `origin-secret-${randomBytes(6).toString('hex')}`;
const FAST = { retryInitialDelayMs: 50, retryMaxDelayMs: 300, pollInitialDelayMs: 50, pollMaxDelayMs: 300, requestTimeoutMs: 5_000 };
const CREDENTIALS = { type: 'bearer', tokenEnv: 'A2A_TEST_ORIGIN_TOKEN' };

const partText = (part: Part): string => (part.content?.$case === 'text' ? part.content.value : '');
const messageText = (message: Message | undefined): string => (message?.parts ?? []).map(partText).join('');

const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

/** The other origin: it answers like a downstream, and records what reached it. */
let elsewhere: HostileDownstream;

beforeAll(async () => {
  process.env.A2A_TEST_ORIGIN_TOKEN = TOKEN;
  elsewhere = await startHostileDownstream({ streaming: false });
  closers.push(() => elsewhere.close());
});

async function downstream(options: Parameters<typeof startHostileDownstream>[0]): Promise<HostileDownstream> {
  const started = await startHostileDownstream(options);
  closers.push(() => started.close());
  return started;
}

async function gatewayFor(name: string, adapterOptions: Record<string, unknown>): Promise<Client> {
  const gateway = await startTestGateway({ name, config: { adapter: 'a2a', adapterOptions: { ...FAST, credentials: CREDENTIALS, ...adapterOptions } } });
  closers.push(() => gateway.close());
  return new ClientFactory().createFromUrl(gateway.url);
}

async function send(client: Client, text: string): Promise<Task> {
  const result = await client.sendMessage(SendMessageRequest.fromJSON({ message: { messageId: `or-${randomBytes(8).toString('hex')}`, role: 'ROLE_USER', parts: [{ text }] } }));
  expect('status' in result).toBe(true);
  return result as Task;
}

const leakedTo = (server: HostileDownstream): string[] => server.calls.filter((call) => call.authorization?.includes(TOKEN) === true).map((call) => call.path);

describe('a card naming an interface on another origin', () => {
  it('is refused, naming both origins and the option, and nothing is sent there', async () => {
    const agent = await downstream({ streaming: false, interfaceUrl: () => `${elsewhere.url}/rpc` });
    const client = await gatewayFor('remote-origin-card', { url: agent.url });
    const callsBefore = elsewhere.calls.length;
    const task = await send(client, 'hello');
    expect(task.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    const reason = messageText(task.status?.message);
    expect(reason).toContain(elsewhere.origin);
    expect(reason).toContain(agent.origin);
    expect(reason).toContain('allowedOrigins');
    expect(elsewhere.calls.length).toBe(callsBefore);
    expect(leakedTo(elsewhere)).toEqual([]);
  });

  it('is used when allowedOrigins lists that origin', async () => {
    const agent = await downstream({ streaming: false, interfaceUrl: () => `${elsewhere.url}/rpc` });
    const client = await gatewayFor('remote-origin-allowed', { url: agent.url, allowedOrigins: [elsewhere.origin] });
    const task = await send(client, 'hello there');
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    // The operator said so: the credential goes there.
    expect(elsewhere.calls.some((call) => call.method === 'SendMessage' && call.authorization === `Bearer ${TOKEN}` && call.body.includes('hello there'))).toBe(true);
  });

  it('allowedOrigins takes origins only', () => {
    expect(() => parseRemoteA2aOptions({ url: 'https://agent.example.com', allowedOrigins: ['https://other.example.com/path'] }, '.')).toThrow(/allowedOrigins\.0: must be an origin/);
    expect(parseRemoteA2aOptions({ url: 'https://agent.example.com', allowedOrigins: ['https://other.example.com:8443'] }, '.').allowedOrigins).toEqual(['https://other.example.com:8443']);
  });
});

describe('redirects', () => {
  let agent: HostileDownstream;
  let client: Client;

  beforeAll(async () => {
    agent = await downstream({ streaming: false, redirectTo: elsewhere.url });
    // Even an allowed origin gets no credential by redirect: a downstream served there names it in its card.
    client = await gatewayFor('remote-origin-redirect', { url: agent.url, allowedOrigins: [elsewhere.origin] });
  }, 30_000);

  it('one to another origin is refused, naming both, and carries no credential there', async () => {
    const callsBefore = elsewhere.calls.length;
    const task = await send(client, 'hostile:redirect-away');
    expect(task.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    const reason = messageText(task.status?.message);
    expect(reason).toContain(`the downstream at ${agent.origin} redirected a call to ${elsewhere.origin}`);
    expect(elsewhere.calls.length).toBe(callsBefore);
    expect(agent.sends('hostile:redirect-away')).toBe(1);
  });

  it('one on the same origin is followed, with the credential', async () => {
    const task = await send(client, 'hostile:redirect-same');
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const moved = agent.calls.find((call) => call.path === '/rpc-moved' && call.body.includes('hostile:redirect-same'));
    expect(moved?.authorization).toBe(`Bearer ${TOKEN}`);
  });
});

describe('the downstream fetch', () => {
  it('follows at most MAX_REDIRECTS redirects of one call, then gives up naming the count', async () => {
    let hits = 0;
    const loop = createServer((request, response) => {
      hits += 1;
      request.resume();
      response.writeHead(302, { Location: `/hop-${hits}` }).end();
    });
    const base = await listen(loop);
    closers.push(() => new Promise<void>((resolve) => loop.close(() => resolve())));
    const downstreamFetch = createDownstreamFetch({ credentials: undefined, requestTimeoutMs: 5_000, pin: new OriginPin(base) });
    await expect(downstreamFetch(`${base}/start`, { method: 'GET' })).rejects.toThrow(`redirected a call more than ${MAX_REDIRECTS} times`);
    expect(hits).toBe(MAX_REDIRECTS + 1);
  });
});
