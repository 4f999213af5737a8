// The remote adapter against a downstream that sends too much or too slowly: every answer is read
// through the agent's backendLimits, and past one the turn fails with a reason naming the limit
// (setting and value), the message is not sent downstream again, and the worker goes on serving.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { GetTaskRequest, SendMessageRequest, TaskState, type Message, type Part, type Task } from '@a2a-js/sdk';
import { ClientFactory, type Client } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, waitFor, type TestGateway } from './support/harness.ts';
import { listen, startHostileDownstream, type HostileDownstream } from './support/hostile-downstream.ts';

const KIB = 1024;
const LIMITS = { maxResponseBytes: 256 * KIB, maxEventBytes: 64 * KIB, maxStreamBytes: 1000 * KIB, bodyTimeoutMs: 800, streamIdleTimeoutMs: 800 };
const FAST = { retryInitialDelayMs: 50, retryMaxDelayMs: 300, pollInitialDelayMs: 50, pollMaxDelayMs: 300, requestTimeoutMs: 10_000 };

const partText = (part: Part): string => (part.content?.$case === 'text' ? part.content.value : '');
const messageText = (message: Message | undefined): string => (message?.parts ?? []).map(partText).join('');
const TERMINAL = new Set([TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED]);

const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

interface Setup {
  downstream: HostileDownstream;
  gateway: TestGateway;
  client: Client;
}

async function setup(name: string, streaming: boolean, adapterOptions: Record<string, unknown> = {}): Promise<Setup> {
  const downstream = await startHostileDownstream({ streaming });
  closers.push(() => downstream.close());
  const gateway = await startTestGateway({ name, config: { adapter: 'a2a', adapterOptions: { url: downstream.url, ...FAST, ...adapterOptions }, backendLimits: LIMITS } });
  closers.push(() => gateway.close());
  return { downstream, gateway, client: await new ClientFactory().createFromUrl(gateway.url) };
}

/** Sends `text` and waits for the task to end. */
async function run(client: Client, text: string): Promise<Task> {
  const sent = await client.sendMessage(
    SendMessageRequest.fromJSON({ message: { messageId: `bl-${randomBytes(8).toString('hex')}`, role: 'ROLE_USER', parts: [{ text }] }, configuration: { returnImmediately: true } }),
  );
  expect('status' in sent).toBe(true);
  const id = (sent as Task).id;
  return waitFor(
    async () => {
      const task = await client.getTask(GetTaskRequest.fromJSON({ id }));
      return TERMINAL.has(task.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED) ? task : undefined;
    },
    20_000,
    `task "${text}" to end`,
  );
}

async function expectFailedOnLimit(s: Setup, mode: string, limit: keyof typeof LIMITS): Promise<void> {
  const text = `hostile:${mode} ${randomBytes(4).toString('hex')}`;
  const task = await run(s.client, text);
  expect(task.status?.state).toBe(TaskState.TASK_STATE_FAILED);
  const reason = messageText(task.status?.message);
  expect(reason).toContain(`backendLimits.${limit}`);
  expect(reason).toContain(String(LIMITS[limit]));
  // Sent once: a backend that broke a bound would break it again, and a resend is a second downstream task.
  expect(s.downstream.sends(text)).toBe(1);
  // The worker is still there, and serves the next turn.
  expect((await run(s.client, 'calm')).status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
}

describe('a downstream whose answers are not streamed', () => {
  let s: Setup;
  beforeAll(async () => {
    s = await setup('remote-limits-plain', false);
  }, 30_000);

  it('a huge body fails the turn naming maxResponseBytes', () => expectFailedOnLimit(s, 'huge-body', 'maxResponseBytes'), 30_000);
  it('a body that hangs fails the turn naming bodyTimeoutMs', () => expectFailedOnLimit(s, 'hang', 'bodyTimeoutMs'), 30_000);
});

describe('a downstream that streams', () => {
  let s: Setup;
  beforeAll(async () => {
    s = await setup('remote-limits-stream', true);
  }, 30_000);

  it('one giant event fails the turn naming maxEventBytes', () => expectFailedOnLimit(s, 'giant-event', 'maxEventBytes'), 30_000);
  it('an endless stream fails the turn naming maxStreamBytes', () => expectFailedOnLimit(s, 'endless', 'maxStreamBytes'), 30_000);
  it('a stream gone silent fails the turn naming streamIdleTimeoutMs', () => expectFailedOnLimit(s, 'hang', 'streamIdleTimeoutMs'), 30_000);
});

describe('an OAuth2 token endpoint', () => {
  it('whose answer is huge fails the turn naming maxResponseBytes, and the downstream is never called', async () => {
    // Up to 8 MiB of a token answer that never closes its JSON string.
    let tokenRequests = 0;
    const tokens = createServer((request, response) => {
      tokenRequests += 1;
      request.resume();
      response.writeHead(200, { 'Content-Type': 'application/json' });
      response.write('{"token_type":"Bearer","access_token":"');
      const chunk = 't'.repeat(64 * KIB);
      let written = 0;
      const write = (): void => {
        while (!response.destroyed && written < 8 * KIB * KIB) {
          written += chunk.length;
          if (!response.write(chunk)) return;
        }
        if (!response.destroyed) response.end('"}');
      };
      response.on('drain', write);
      write();
    });
    const tokenBase = await listen(tokens);
    closers.push(() => new Promise<void>((resolve) => tokens.close(() => resolve())));
    process.env.A2A_TEST_LIMITS_CLIENT_SECRET = 'secret';
    const s = await setup('remote-limits-token', false, {
      credentials: { type: 'oauth2-client-credentials', tokenUrl: `${tokenBase}/token`, clientId: 'gateway', clientSecretEnv: 'A2A_TEST_LIMITS_CLIENT_SECRET' },
    });
    // The gateway also asks the downstream for its card (Adapter.describe) at start and again
    // every few seconds while that fails, each time with a token: only the turn's asks count here.
    const beforeTurn = tokenRequests;
    const task = await run(s.client, 'calm');
    expect(task.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(messageText(task.status?.message)).toContain(`backendLimits.maxResponseBytes (${LIMITS.maxResponseBytes} bytes)`);
    // One for the turn, which does not ask again, and at most one more for a describe retry meanwhile.
    expect(tokenRequests - beforeTurn).toBeLessThanOrEqual(2);
    expect(s.downstream.sends('calm')).toBe(0);
  }, 30_000);
});
