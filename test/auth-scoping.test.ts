// Task scoping under authentication: a task belongs to (tenant, subject). Another subject of
// the same tenant (B) and the same subject in another tenant (C) can neither read, list,
// follow, cancel nor continue it, cannot tell it apart from a task that never existed, and
// change nothing in Redis trying. Checked over both bindings.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/ids.ts';
import { expectUnchanged, startTestGateway, textMessage, waitFor, type TestGateway, turnJobsSettled, progressFreeFingerprint } from './support/harness.ts';
import { createTestIssuer, type TestIssuer } from './support/identity.ts';

let gw: TestGateway;
let issuer: TestIssuer;
const tokens = { alice: '', bob: '', aliceElsewhere: '' };
/** A's tasks: one finished, one still running while the suite probes it. */
let completed: { id: string; contextId: string; messageId: string };
let running: { id: string; contextId: string };

interface Raw {
  status: number;
  headers: Record<string, string>;
  text: string;
}

/**
 * One HTTP exchange, read as text. A stream is not read to its end: a refusal must not open
 * one, and if a broken build did, the test fails on the status/body instead of hanging.
 */
async function exchange(url: string, init: { method: string; token: string; body?: unknown }): Promise<Raw> {
  const controller = new AbortController();
  const response = await fetch(url, {
    method: init.method,
    headers: {
      'A2A-Version': '1.0',
      Authorization: `Bearer ${init.token}`,
      ...(init.body === undefined ? {} : { 'Content-Type': 'application/json' }),
    },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    signal: controller.signal,
  });
  const headers = Object.fromEntries(response.headers);
  if ((response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    controller.abort();
    return { status: response.status, headers, text: '<event stream>' };
  }
  return { status: response.status, headers, text: await response.text() };
}

const rpcCall = (token: string, method: string, params: unknown): Promise<Raw> =>
  exchange(gw.jsonRpcUrl, { method: 'POST', token, body: { jsonrpc: '2.0', id: 1, method, params } });

type BindingName = 'JSON-RPC' | 'HTTP+JSON';

interface Binding {
  name: BindingName;
  getTask(token: string, id: string): Promise<Raw>;
  listTasks(token: string, contextId?: string): Promise<Raw>;
  cancelTask(token: string, id: string): Promise<Raw>;
  /** Every way this binding offers to subscribe. */
  subscribe(token: string, id: string): Promise<Raw>[];
  sendMessage(token: string, message: Record<string, unknown>): Promise<Raw>;
  streamMessage(token: string, message: Record<string, unknown>): Promise<Raw>;
  /** The Task in a successful answer of getTask/cancelTask. */
  taskOf(raw: Raw): TaskView;
  /** The Task in a successful answer of sendMessage. */
  sentTaskOf(raw: Raw): TaskView;
  tasksOf(raw: Raw): TaskView[];
  /** Asserts the answer is TaskNotFound as this binding spells it. */
  expectTaskNotFound(raw: Raw): void;
}

interface TaskView {
  id: string;
  contextId: string;
  status: { state: string; message?: { parts: { text?: string }[] }; timestamp?: string };
  history?: { role: string; parts: { text?: string }[] }[];
}

const parse = (raw: Raw): Record<string, unknown> => JSON.parse(raw.text) as Record<string, unknown>;

interface TaskList {
  tasks: TaskView[];
  totalSize: number;
}

function listedTasks(list: TaskList): TaskView[] {
  // The total must count only the caller's tasks as well; every list in this suite fits one page.
  expect(list.totalSize).toBe(list.tasks.length);
  return list.tasks;
}

function expectOk(raw: Raw): void {
  expect(raw.status, raw.text).toBe(200);
  expect(parse(raw).error, raw.text).toBeUndefined();
}

const JSON_RPC: Binding = {
  name: 'JSON-RPC',
  getTask: (token, id) => rpcCall(token, 'GetTask', { id }),
  listTasks: (token, contextId) => rpcCall(token, 'ListTasks', contextId === undefined ? {} : { contextId }),
  cancelTask: (token, id) => rpcCall(token, 'CancelTask', { id }),
  subscribe: (token, id) => [rpcCall(token, 'SubscribeToTask', { id })],
  sendMessage: (token, message) => rpcCall(token, 'SendMessage', { message }),
  streamMessage: (token, message) => rpcCall(token, 'SendStreamingMessage', { message }),
  taskOf: (raw) => {
    expectOk(raw);
    return parse(raw).result as TaskView;
  },
  sentTaskOf: (raw) => {
    expectOk(raw);
    return (parse(raw).result as { task: TaskView }).task;
  },
  tasksOf: (raw) => {
    expectOk(raw);
    return listedTasks(parse(raw).result as TaskList);
  },
  expectTaskNotFound(raw) {
    // JSON-RPC errors travel in a 200 response.
    expect(raw.status, raw.text).toBe(200);
    const error = parse(raw).error as { code: number; data: { reason?: string }[] };
    expect(error.code, raw.text).toBe(-32001);
    expect(error.data.map((d) => d.reason)).toContain('TASK_NOT_FOUND');
  },
};

const REST: Binding = {
  name: 'HTTP+JSON',
  getTask: (token, id) => exchange(`${gw.restUrl}/tasks/${id}`, { method: 'GET', token }),
  listTasks: (token, contextId) =>
    exchange(`${gw.restUrl}/tasks${contextId === undefined ? '' : `?contextId=${encodeURIComponent(contextId)}`}`, { method: 'GET', token }),
  cancelTask: (token, id) => exchange(`${gw.restUrl}/tasks/${id}:cancel`, { method: 'POST', token, body: {} }),
  subscribe: (token, id) => [
    exchange(`${gw.restUrl}/tasks/${id}:subscribe`, { method: 'GET', token }),
    exchange(`${gw.restUrl}/tasks/${id}:subscribe`, { method: 'POST', token, body: {} }),
  ],
  sendMessage: (token, message) => exchange(`${gw.restUrl}/message:send`, { method: 'POST', token, body: { message } }),
  streamMessage: (token, message) => exchange(`${gw.restUrl}/message:stream`, { method: 'POST', token, body: { message } }),
  taskOf: (raw) => {
    expectOk(raw);
    return parse(raw) as unknown as TaskView;
  },
  sentTaskOf: (raw) => {
    expectOk(raw);
    return (parse(raw) as { task: TaskView }).task;
  },
  tasksOf: (raw) => {
    expectOk(raw);
    return listedTasks(parse(raw) as unknown as TaskList);
  },
  expectTaskNotFound(raw) {
    expect(raw.status, raw.text).toBe(404);
    const error = (parse(raw) as { error: { code: number; status: string; details: { reason?: string }[] } }).error;
    expect(error.code).toBe(404);
    expect(error.status).toBe('NOT_FOUND');
    expect(error.details.map((d) => d.reason)).toContain('TASK_NOT_FOUND');
  },
};

const BINDINGS = [JSON_RPC, REST];

/**
 * What a client could compare between two answers: status, headers and body, with the task id
 * and the ErrorInfo timestamp (the only parts allowed to differ) masked. The Date header is
 * the server's clock, not an answer about the task.
 */
function observable(raw: Raw, id: string): { status: number; headers: Record<string, string>; body: string } {
  const mask = (value: string): string => value.split(id).join('<task id>').replace(/"timestamp":"[^"]*"/g, '"timestamp":"<time>"');
  const headers = Object.fromEntries(Object.entries(raw.headers).filter(([name]) => name !== 'date').map(([name, value]) => [name, mask(value)]));
  return { status: raw.status, headers, body: mask(raw.text) };
}

/**
 * The keyspace minus what A's running turn writes on its own while the probes run: its
 * progress (status, events, step records, index scores) and BullMQ's own bookkeeping (stall
 * checks, its event log). Everything a probe could plausibly write (a new task, an index
 * member, a cancel request, a queued message, a history entry) still shows.
 */
async function stableSnapshot(): Promise<Map<string, string>> {
  const result = new Map<string, string>();
  for (const [key, fingerprint] of await gw.snapshotKeys()) {
    const name = key.slice(gw.prefix.length + 1);
    if (['turns:stalled-check', 'turns:stalled', 'turns:events'].includes(name)) continue;
    const ownKey = /^\{([^}]+)\}:(\w+)$/.exec(name);
    if (ownKey?.[1] === running.id) {
      result.set(key, await progressFreeFingerprint(gw, key, ownKey[2] ?? '', fingerprint));
      continue;
    }
    if (name.startsWith('{o:') && fingerprint.startsWith('zset ')) {
      result.set(key, `zset ${JSON.stringify((await gw.redis.zrange(key, 0, -1)).sort())}`);
      continue;
    }
    result.set(key, fingerprint);
  }
  return result;
}


async function expectNothingChanged<T>(probes: () => Promise<T>): Promise<T> {
  await turnJobsSettled(gw);
  return expectUnchanged({ snapshotKeys: stableSnapshot }, probes);
}

const progressOf = (task: TaskView): number => Number(/^progress (\d+)\//.exec(task.status.message?.parts[0]?.text ?? '')?.[1] ?? 0);

beforeAll(async () => {
  issuer = await createTestIssuer();
  gw = await startTestGateway({
    name: 'auth-scoping',
    config: { auth: { enabled: true, issuers: [issuer.config] }, shutdownGraceMs: 0 },
    adapterOptions: { stepMs: 50 },
  });
  tokens.alice = await issuer.token({ sub: 'alice', tenant: 'acme' });
  tokens.bob = await issuer.token({ sub: 'bob', tenant: 'acme' });
  tokens.aliceElsewhere = await issuer.token({ sub: 'alice', tenant: 'globex' });

  const message = textMessage('echo hi');
  const echoed = JSON_RPC.sentTaskOf(await JSON_RPC.sendMessage(tokens.alice, message));
  expect(echoed.status.state).toBe('TASK_STATE_COMPLETED');
  completed = { id: echoed.id, contextId: echoed.contextId, messageId: message.messageId as string };
  const started = await rpcCall(tokens.alice, 'SendMessage', { message: textMessage('long 1000'), configuration: { returnImmediately: true } });
  running = JSON_RPC.sentTaskOf(started);
  // Probed only once its turn really runs, so "still running afterwards" means something.
  await waitFor(
    async () => {
      const task = JSON_RPC.taskOf(await JSON_RPC.getTask(tokens.alice, running.id));
      return task.status.state === 'TASK_STATE_WORKING' && progressOf(task) >= 1;
    },
    10_000,
    "A's long task to be working",
  );
});

afterAll(async () => {
  await gw?.close();
});

const INTRUDERS = [
  { who: 'B (another subject, same tenant)', token: () => tokens.bob },
  { who: 'C (the same subject, another tenant)', token: () => tokens.aliceElsewhere },
] as const;

describe.each(BINDINGS)('over $name', (binding) => {
  describe.each(INTRUDERS)('$who', ({ token }) => {
    /** Each probe of A's task, as a function of the id, so the same probe can name a fresh id. */
    const probes: { operation: string; run: (id: string) => Promise<Raw>[] }[] = [
      { operation: 'GetTask', run: (id) => [binding.getTask(token(), id)] },
      { operation: 'CancelTask', run: (id) => [binding.cancelTask(token(), id)] },
      { operation: 'SubscribeToTask', run: (id) => binding.subscribe(token(), id) },
      { operation: 'SendMessage continuing the task', run: (id) => [binding.sendMessage(token(), textMessage('echo hijack', { taskId: id }))] },
      { operation: 'SendStreamingMessage continuing the task', run: (id) => [binding.streamMessage(token(), textMessage('echo hijack', { taskId: id }))] },
    ];

    it.each(probes)('$operation: TaskNotFound, identical to a never-used id, nothing stored', async ({ run }) => {
      await expectNothingChanged(async () => {
        for (const target of [completed.id, running.id]) {
          const unknown = newId();
          const real = await Promise.all(run(target));
          const never = await Promise.all(run(unknown));
          real.forEach((answer, i) => {
            binding.expectTaskNotFound(answer);
            const control = never[i] as Raw;
            binding.expectTaskNotFound(control);
            expect(observable(answer, target)).toEqual(observable(control, unknown));
          });
        }
      });
    });

    it("ListTasks shows none of A's tasks", async () => {
      const listed = await expectNothingChanged(async () => binding.tasksOf(await binding.listTasks(token())));
      const ids = listed.map((t) => t.id);
      expect(ids).not.toContain(completed.id);
      expect(ids).not.toContain(running.id);
      // Filtering by A's context must not reach into A's tasks either.
      const inContext = binding.tasksOf(await binding.listTasks(token(), completed.contextId)).map((t) => t.id);
      expect(inContext).not.toContain(completed.id);
    });
  });

  it("A itself sees both tasks (the refusals above are about the caller, not the ids)", async () => {
    expect(binding.taskOf(await binding.getTask(tokens.alice, completed.id)).id).toBe(completed.id);
    const ids = binding.tasksOf(await binding.listTasks(tokens.alice)).map((t) => t.id);
    expect(ids).toEqual(expect.arrayContaining([completed.id, running.id]));
  });

  it("B's list holds only B's own tasks", async () => {
    const mine = binding.sentTaskOf(await binding.sendMessage(tokens.bob, textMessage('echo bob only')));
    const listed = binding.tasksOf(await binding.listTasks(tokens.bob)).map((t) => t.id);
    expect(listed).toContain(mine.id);
    expect(listed).not.toContain(completed.id);
    expect(listed).not.toContain(running.id);
    const aliceIds = binding.tasksOf(await binding.listTasks(tokens.alice)).map((t) => t.id);
    expect(aliceIds).not.toContain(mine.id);
  });

  it("B's CancelTask leaves A's running task running", async () => {
    binding.expectTaskNotFound(await binding.cancelTask(tokens.bob, running.id));
    const after = binding.taskOf(await binding.getTask(tokens.alice, running.id));
    expect(after.status.state).toBe('TASK_STATE_WORKING');
    // Still advancing: a cancel request that reached the worker would stop the steps.
    const seen = progressOf(after);
    await waitFor(
      async () => progressOf(binding.taskOf(await binding.getTask(tokens.alice, running.id))) > seen,
      10_000,
      "A's task to make progress after B's cancel",
    );
    expect(await gw.redis.hget(`${gw.prefix}:{${running.id}}:task`, 'cancelRequestedAtMs')).toBeNull();
  });

  it("sending A's contextId gives B a task in a context of B's own", async () => {
    const bobs = binding.sentTaskOf(await binding.sendMessage(tokens.bob, textMessage('echo same context', { contextId: completed.contextId })));
    expect(bobs.id).not.toBe(completed.id);
    expect(bobs.contextId).toBe(completed.contextId);
    expect(bobs.status.state).toBe('TASK_STATE_COMPLETED');

    const alicesView = binding.tasksOf(await binding.listTasks(tokens.alice, completed.contextId)).map((t) => t.id);
    expect(alicesView).toContain(completed.id);
    expect(alicesView).not.toContain(bobs.id);
    const bobsView = binding.tasksOf(await binding.listTasks(tokens.bob, completed.contextId)).map((t) => t.id);
    expect(bobsView).toContain(bobs.id);
    expect(bobsView).not.toContain(completed.id);

    binding.expectTaskNotFound(await binding.getTask(tokens.alice, bobs.id));
    // B's message did not land in A's task.
    const history = binding.taskOf(await binding.getTask(tokens.alice, completed.id)).history ?? [];
    expect(history.flatMap((m) => m.parts.map((p) => p.text))).not.toContain('echo same context');
  });

  it("re-sending A's messageId gives B a task of its own, not A's", async () => {
    const bobs = binding.sentTaskOf(await binding.sendMessage(tokens.bob, { ...textMessage('echo hi'), messageId: completed.messageId }));
    expect(bobs.id).not.toBe(completed.id);
    expect(bobs.contextId).not.toBe(completed.contextId);
  });

  it("C naming A's tenant is refused alike for A's task and a never-used id", async () => {
    await expectNothingChanged(async () => {
      const unknown = newId();
      const answers =
        binding.name === 'JSON-RPC'
          ? [rpcCall(tokens.aliceElsewhere, 'GetTask', { id: completed.id, tenant: 'acme' }), rpcCall(tokens.aliceElsewhere, 'GetTask', { id: unknown, tenant: 'acme' })]
          : [
              exchange(`${gw.restUrl}/acme/tasks/${completed.id}`, { method: 'GET', token: tokens.aliceElsewhere }),
              exchange(`${gw.restUrl}/acme/tasks/${unknown}`, { method: 'GET', token: tokens.aliceElsewhere }),
            ];
      const [real, never] = (await Promise.all(answers)) as [Raw, Raw];
      expect(real.status).toBe(403);
      expect(real.text).toContain('TENANT_MISMATCH');
      expect(observable(real, completed.id)).toEqual(observable(never, unknown));
    });
  });
});

describe("A's running task after every probe", () => {
  it('is still WORKING, and its owner can cancel it', async () => {
    const before = JSON_RPC.taskOf(await JSON_RPC.getTask(tokens.alice, running.id));
    expect(before.status.state).toBe('TASK_STATE_WORKING');
    const canceled = JSON_RPC.taskOf(await JSON_RPC.cancelTask(tokens.alice, running.id));
    expect(canceled.status.state).toBe('TASK_STATE_CANCELED');
  });
});
