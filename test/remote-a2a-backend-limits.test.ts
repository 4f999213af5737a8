// The remote adapter against a downstream that sends too much or too slowly: every answer is read
// through the agent's backendLimits, and past one the turn fails with a reason naming the limit
// (setting and value), the message is not sent downstream again, and the worker goes on serving.
import { randomBytes } from 'node:crypto';
import { GetTaskRequest, SendMessageRequest, TaskState, type Message, type Part, type Task } from '@a2a-js/sdk';
import { ClientFactory, type Client } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, waitFor, type TestGateway } from './support/harness.ts';
import { startHostileDownstream, type HostileDownstream } from './support/hostile-downstream.ts';

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

async function setup(name: string, streaming: boolean): Promise<Setup> {
  const downstream = await startHostileDownstream({ streaming });
  closers.push(() => downstream.close());
  const gateway = await startTestGateway({ name, config: { adapter: 'a2a', adapterOptions: { url: downstream.url, ...FAST }, backendLimits: LIMITS } });
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
