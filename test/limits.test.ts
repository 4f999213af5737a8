// Per-principal limits: the request rate (a token bucket in Redis, shared by every gateway on
// the prefix) and the number of tasks a principal may have queued or running. A refusal is a
// 429 with Retry-After on both bindings and stores nothing.
import { Agents } from '../src/agents/agents.ts';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGatewayRole } from '../src/gateway/server.ts';
import { createLogger } from '../src/logging/logger.ts';
import { expectUnchanged, ROOT, startTestGateway, textMessage, waitFor, type TestGateway, turnJobsSettled, progressFreeFingerprint } from './support/harness.ts';
import { createTestIssuer, type TestIssuer } from './support/identity.ts';

let issuer: TestIssuer;

beforeAll(async () => {
  issuer = await createTestIssuer();
});

interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

/** Each test acts as principals of its own, so no test inherits another's bucket or tasks. */
const freshToken = (label: string): Promise<string> => issuer.token({ sub: `${label}-${randomBytes(4).toString('hex')}` });

/** One request; a stream is never read (a refusal must not open one: its body is then '<stream>'). */
async function call(url: string, method: 'GET' | 'POST', token: string, body?: unknown): Promise<Answer> {
  const controller = new AbortController();
  const response = await fetch(url, {
    method,
    headers: { 'A2A-Version': '1.0', Authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: controller.signal,
  });
  if ((response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    controller.abort();
    return { status: response.status, headers: response.headers, body: { stream: true } };
  }
  return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> };
}

const rpcAt = (base: string, token: string, method: string, params: unknown): Promise<Answer> =>
  call(`${base}/a2a/jsonrpc`, 'POST', token, { jsonrpc: '2.0', id: 1, method, params });

type BindingName = 'JSON-RPC' | 'HTTP+JSON';

interface TaskView {
  id: string;
  status: { state: string };
  history?: { parts: { text?: string }[] }[];
  artifacts?: { parts: { text?: string }[] }[];
}

interface Binding {
  name: BindingName;
  listTasks(base: string, token: string): Promise<Answer>;
  getTask(base: string, token: string, id: string): Promise<Answer>;
  cancelTask(base: string, token: string, id: string): Promise<Answer>;
  send(base: string, token: string, message: Record<string, unknown>, configuration?: Record<string, unknown>): Promise<Answer>;
  stream(base: string, token: string, message: Record<string, unknown>): Promise<Answer>;
  /** The result of a successful call, whatever the envelope. */
  result(answer: Answer): Record<string, unknown>;
}

const JSON_RPC: Binding = {
  name: 'JSON-RPC',
  listTasks: (base, token) => rpcAt(base, token, 'ListTasks', {}),
  getTask: (base, token, id) => rpcAt(base, token, 'GetTask', { id }),
  cancelTask: (base, token, id) => rpcAt(base, token, 'CancelTask', { id }),
  send: (base, token, message, configuration) => rpcAt(base, token, 'SendMessage', { message, ...(configuration === undefined ? {} : { configuration }) }),
  stream: (base, token, message) => rpcAt(base, token, 'SendStreamingMessage', { message }),
  result(answer) {
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.error, JSON.stringify(answer.body)).toBeUndefined();
    return answer.body.result as Record<string, unknown>;
  },
};

const REST: Binding = {
  name: 'HTTP+JSON',
  listTasks: (base, token) => call(`${base}/a2a/rest/tasks`, 'GET', token),
  getTask: (base, token, id) => call(`${base}/a2a/rest/tasks/${id}`, 'GET', token),
  cancelTask: (base, token, id) => call(`${base}/a2a/rest/tasks/${id}:cancel`, 'POST', token, {}),
  send: (base, token, message, configuration) =>
    call(`${base}/a2a/rest/message:send`, 'POST', token, { message, ...(configuration === undefined ? {} : { configuration }) }),
  stream: (base, token, message) => call(`${base}/a2a/rest/message:stream`, 'POST', token, { message }),
  result(answer) {
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return answer.body;
  },
};

const BINDINGS = [JSON_RPC, REST];

interface Detail {
  '@type': string;
  reason?: string;
  metadata?: Record<string, string>;
  retryDelay?: string;
}

/** A 429 as the binding spells it, with Retry-After and a matching RetryInfo; returns the ErrorInfo metadata. */
function expectExhausted(binding: Binding, answer: Answer): Record<string, string> {
  const text = JSON.stringify(answer.body);
  expect(answer.status, text).toBe(429);
  const retryAfter = Number(answer.headers.get('retry-after'));
  expect(Number.isInteger(retryAfter), `Retry-After: ${answer.headers.get('retry-after')}`).toBe(true);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  let details: Detail[];
  if (binding.name === 'JSON-RPC') {
    const error = answer.body.error as { code: number; data: Detail[] };
    expect(error.code, text).toBe(-31429);
    details = error.data;
  } else {
    const error = answer.body.error as { code: number; status: string; details: Detail[] };
    expect(error.code).toBe(429);
    expect(error.status).toBe('RESOURCE_EXHAUSTED');
    details = error.details;
  }
  expect(details.find((d) => d['@type'] === 'type.googleapis.com/google.rpc.RetryInfo')?.retryDelay).toBe(`${retryAfter}s`);
  const info = details.find((d) => d['@type'] === 'type.googleapis.com/google.rpc.ErrorInfo');
  expect(info?.reason, text).toBe('RESOURCE_EXHAUSTED');
  return info?.metadata ?? {};
}

/**
 * The keyspace minus what moves on its own: running turns' progress (status, progress events,
 * step records, index scores) and BullMQ's bookkeeping (stall checks, its event log), plus, when
 * asked, the rate buckets a refused request legitimately updates. A new task, index member,
 * queued job, history entry or active-task entry still shows.
 */
async function stableSnapshot(gw: TestGateway, options: { ignoreRateBuckets?: boolean } = {}): Promise<Map<string, string>> {
  const result = new Map<string, string>();
  for (const [key, fingerprint] of await gw.snapshotKeys()) {
    const name = key.slice(gw.prefix.length + 1);
    if (['turns:stalled-check', 'turns:stalled', 'turns:events'].includes(name)) continue;
    if (options.ignoreRateBuckets === true && /^\{o:[^}]+\}:rate$/.test(name)) continue;
    const part = /^\{(?!o:)[^}]+\}:(\w+)$/.exec(name)?.[1];
    if (part !== undefined) {
      result.set(key, await progressFreeFingerprint(gw, key, part, fingerprint));
    } else if (name.startsWith('{o:') && fingerprint.startsWith('zset ')) {
      result.set(key, `zset ${JSON.stringify((await gw.redis.zrange(key, 0, -1)).sort())}`);
    } else {
      result.set(key, fingerprint);
    }
  }
  return result;
}


async function expectNothingStored<T>(gw: TestGateway, options: { ignoreRateBuckets?: boolean }, request: () => Promise<T>): Promise<T> {
  await turnJobsSettled(gw);
  return expectUnchanged({ snapshotKeys: () => stableSnapshot(gw, options) }, request);
}

describe('rate limit: 1 request per second, bursts of 3', () => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startTestGateway({
      name: 'limits-rate',
      config: { auth: { enabled: true, issuers: [issuer.config] }, limits: { requestsPerSecond: 1, burst: 3, maxActiveTasks: 0 }, shutdownGraceMs: 0 },
    });
    // A task of someone else, so "nothing stored" compares a keyspace with tasks in it.
    expect(JSON_RPC.result(await JSON_RPC.send(gw.url, await freshToken('seed'), textMessage('echo seed'))).task).toBeDefined();
  });

  afterAll(async () => {
    await gw?.close();
  });

  describe.each(BINDINGS)('over $name', (binding) => {
    it('three reads pass, the fourth is 429 with Retry-After and RetryInfo; another principal is unaffected', async () => {
      const token = await freshToken('reader');
      expect(binding.result(await binding.listTasks(gw.url, token)).tasks).toEqual([]);
      expect(binding.result(await binding.listTasks(gw.url, token)).tasks).toEqual([]);
      expect(binding.result(await binding.listTasks(gw.url, token)).tasks).toEqual([]);
      const metadata = expectExhausted(binding, await binding.getTask(gw.url, token, 'any-task'));
      expect(metadata.reason).toBe('RATE_LIMITED');
      expectExhausted(binding, await binding.listTasks(gw.url, token));

      const other = await freshToken('bystander');
      expect(binding.result(await binding.listTasks(gw.url, other)).tasks).toEqual([]);
    });

    it('a refused SendMessage or stream stores nothing, and once the bucket refills requests pass again', async () => {
      const token = await freshToken('writer');
      for (let i = 0; i < 3; i++) binding.result(await binding.listTasks(gw.url, token));
      await expectNothingStored(gw, { ignoreRateBuckets: true }, async () => {
        expect(expectExhausted(binding, await binding.send(gw.url, token, textMessage('echo refused'))).reason).toBe('RATE_LIMITED');
        expect(expectExhausted(binding, await binding.stream(gw.url, token, textMessage('stream refused'))).reason).toBe('RATE_LIMITED');
      });
      const refilled = await waitFor(
        async () => {
          const answer = await binding.listTasks(gw.url, token);
          return answer.status === 200 ? answer : undefined;
        },
        10_000,
        'the bucket to refill',
      );
      // The refused messages created nothing.
      expect(binding.result(refilled).tasks).toEqual([]);
    });
  });

  it('one bucket per principal across both bindings', async () => {
    const token = await freshToken('both');
    JSON_RPC.result(await JSON_RPC.listTasks(gw.url, token));
    REST.result(await REST.listTasks(gw.url, token));
    JSON_RPC.result(await JSON_RPC.listTasks(gw.url, token));
    expectExhausted(REST, await REST.listTasks(gw.url, token));
  });

  it('two gateways on the same prefix share one bucket', async () => {
    const config = { ...gw.config, port: 0 };
    const second = await startGatewayRole(config, await Agents.load(config, ROOT), createLogger('silent'), { baseDir: ROOT });
    try {
      const token = await freshToken('shared');
      JSON_RPC.result(await JSON_RPC.listTasks(gw.url, token));
      JSON_RPC.result(await JSON_RPC.listTasks(second.url, token));
      REST.result(await REST.listTasks(gw.url, token));
      // Each gateway alone has served at most two: only a shared bucket refuses now.
      expectExhausted(REST, await REST.listTasks(second.url, token));
      expectExhausted(JSON_RPC, await JSON_RPC.listTasks(gw.url, token));
    } finally {
      await second.close();
    }
  });
});

describe('active-task cap: 2 tasks queued or running per principal', () => {
  let gw: TestGateway;
  const LONG = 'long 200';
  const immediately = { returnImmediately: true };

  beforeAll(async () => {
    gw = await startTestGateway({
      name: 'limits-active',
      config: { auth: { enabled: true, issuers: [issuer.config] }, limits: { requestsPerSecond: 0, maxActiveTasks: 2 }, shutdownGraceMs: 0 },
      adapterOptions: { stepMs: 50 },
    });
  });

  afterAll(async () => {
    await gw?.close();
  });

  const taskOf = (binding: Binding, answer: Answer): TaskView => binding.result(answer).task as TaskView;

  async function cancel(token: string, id: string): Promise<void> {
    expect((JSON_RPC.result(await JSON_RPC.cancelTask(gw.url, token, id)).status as { state: string }).state).toBe('TASK_STATE_CANCELED');
  }

  it('the third task is refused on both bindings and stores nothing; a re-sent message still returns its task; cancel frees a slot', async () => {
    const token = await freshToken('busy');
    const firstMessage = textMessage(LONG);
    const first = taskOf(JSON_RPC, await JSON_RPC.send(gw.url, token, firstMessage, immediately));
    const second = taskOf(REST, await REST.send(gw.url, token, textMessage(LONG), immediately));
    for (const task of [first, second]) expect(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING']).toContain(task.status.state);

    await expectNothingStored(gw, {}, async () => {
      for (const binding of BINDINGS) {
        expect(expectExhausted(binding, await binding.send(gw.url, token, textMessage(LONG), immediately))).toMatchObject({ reason: 'ACTIVE_TASK_LIMIT', limit: '2' });
        expect(expectExhausted(binding, await binding.stream(gw.url, token, textMessage('stream at the cap'))).reason).toBe('ACTIVE_TASK_LIMIT');
      }
      // Idempotency wins over the cap: the same messageId is the task already accepted, not a new one.
      for (const binding of BINDINGS) expect(taskOf(binding, await binding.send(gw.url, token, firstMessage, immediately)).id).toBe(first.id);
    });

    // The cap is per principal.
    const other = await freshToken('other');
    const others = taskOf(REST, await REST.send(gw.url, other, textMessage(LONG), immediately));
    await cancel(other, others.id);

    await cancel(token, first.id);
    const third = taskOf(REST, await REST.send(gw.url, token, textMessage(LONG), immediately));
    expect(third.id).not.toBe(first.id);
    // Back at the cap.
    expect(expectExhausted(JSON_RPC, await JSON_RPC.send(gw.url, token, textMessage(LONG), immediately)).reason).toBe('ACTIVE_TASK_LIMIT');

    await cancel(token, second.id);
    await cancel(token, third.id);
  });

  it('a task waiting for input does not count; answering it does, so at the cap the answer is refused until a slot frees', async () => {
    const token = await freshToken('dialogue');
    const asked = taskOf(JSON_RPC, await JSON_RPC.send(gw.url, token, textMessage('dialogue')));
    expect(asked.status.state).toBe('TASK_STATE_INPUT_REQUIRED');

    // Two more fit next to it: it is not counted while it waits.
    const [firstLong, secondLong] = [
      taskOf(JSON_RPC, await JSON_RPC.send(gw.url, token, textMessage(LONG), immediately)),
      taskOf(REST, await REST.send(gw.url, token, textMessage(LONG), immediately)),
    ];

    await expectNothingStored(gw, {}, async () => {
      for (const binding of BINDINGS) {
        const answer = await binding.send(gw.url, token, textMessage('Ada', { taskId: asked.id }), immediately);
        expect(expectExhausted(binding, answer).reason).toBe('ACTIVE_TASK_LIMIT');
        const streamed = await binding.stream(gw.url, token, textMessage('Ada', { taskId: asked.id }));
        expect(expectExhausted(binding, streamed).reason).toBe('ACTIVE_TASK_LIMIT');
      }
    });
    const waiting = JSON_RPC.result(await JSON_RPC.getTask(gw.url, token, asked.id)) as unknown as TaskView;
    expect(waiting.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    expect((waiting.history ?? []).flatMap((m) => m.parts.map((p) => p.text))).not.toContain('Ada');

    await cancel(token, firstLong.id);
    const answered = taskOf(REST, await REST.send(gw.url, token, textMessage('Ada', { taskId: asked.id })));
    expect(answered.id).toBe(asked.id);
    expect(answered.status.state).toBe('TASK_STATE_COMPLETED');
    expect((answered.artifacts ?? []).flatMap((a) => a.parts.map((p) => p.text))).toEqual(['Hello, Ada!']);

    await cancel(token, secondLong.id);
  });
});
