// Invariant 11 over the JSON-RPC binding: every malformed, oversized, hostile or merely
// impossible request gets the spec's error (spec 3.3.2, 5.4, 9.5; 3.6 for A2A-Version) in the
// JSON-RPC error shape, and leaves every Redis key of the gateway exactly as it was.
//
// Setup creates real state to protect (a completed task, a task waiting for input, a task of
// tenant "acme"), then stops the in-process worker: BullMQ's worker refreshes its
// `stalled-check` key every second, which would make "nothing changed" unprovable. With the
// worker gone nothing under the prefix moves unless a request writes, and the last test shows
// that a good request does show up in the fingerprint.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postChunked, seedQuietFixtures, type Json, type RawResponse, type TaskRef } from './support/raw-http.ts';
import { startTestGateway, textMessage, type TestGateway, expectUnchanged } from './support/harness.ts';

const ERROR_INFO = 'type.googleapis.com/google.rpc.ErrorInfo';
const BAD_REQUEST = 'type.googleapis.com/google.rpc.BadRequest';

/** A2A-specific JSON-RPC codes and the ErrorInfo reason each must carry (spec 5.4, 11.6). */
const A2A_REASONS: Record<number, string> = {
  [-32001]: 'TASK_NOT_FOUND',
  [-32002]: 'TASK_NOT_CANCELABLE',
  [-32003]: 'PUSH_NOTIFICATION_NOT_SUPPORTED',
  [-32004]: 'UNSUPPORTED_OPERATION',
  [-32005]: 'CONTENT_TYPE_NOT_SUPPORTED',
  [-32009]: 'VERSION_NOT_SUPPORTED',
};


let gw: TestGateway;
let completed: TaskRef;
let waitingForInput: TaskRef;
let acme: TaskRef;

const randomId = (): string => `missing-${randomBytes(8).toString('hex')}`;

async function send(
  body: unknown,
  options: { headers?: Record<string, string>; raw?: boolean; method?: string; query?: string } = {},
): Promise<RawResponse> {
  const headers = options.headers ?? { 'Content-Type': 'application/json', 'A2A-Version': '1.0' };
  const init: RequestInit = { method: options.method ?? 'POST', headers };
  if (init.method !== 'GET') init.body = options.raw === true ? (body as string) : JSON.stringify(body);
  const response = await fetch(`${gw.jsonRpcUrl}${options.query ?? ''}`, init);
  const text = await response.text();
  let parsed: Json;
  try {
    parsed = JSON.parse(text) as Json;
  } catch {
    throw new Error(`response ${response.status} is not JSON: ${text.slice(0, 200)}`);
  }
  return { status: response.status, contentType: response.headers.get('content-type'), body: parsed };
}


const call = (id: string | number, method: string, params: unknown, headers?: Record<string, string>): Promise<RawResponse> =>
  send({ jsonrpc: '2.0', id, method, params }, headers === undefined ? {} : { headers });

const fingerprint = async (): Promise<Record<string, string>> => Object.fromEntries(await gw.snapshotKeys());
const unchanged = <T>(request: () => Promise<T>): Promise<T> => expectUnchanged(gw, request);

interface Expected {
  code: number;
  id: string | number | null;
  status?: number;
  /** The exact set of fields the BadRequest detail must name (order ignored). */
  fields?: string[];
}

function expectRpcError(response: RawResponse, expected: Expected): Json {
  const { body } = response;
  expect(response.status).toBe(expected.status ?? 200);
  expect(response.contentType ?? '').toMatch(/^application\/json(;|$)/);
  expect(body.jsonrpc).toBe('2.0');
  expect(body).not.toHaveProperty('result');
  expect(body).toHaveProperty('id');
  expect(body.id).toStrictEqual(expected.id);
  expect(body.error.code).toBe(expected.code);
  expect(typeof body.error.message).toBe('string');
  expect(body.error.message.length).toBeGreaterThan(0);
  expect(Array.isArray(body.error.data)).toBe(true);
  for (const detail of body.error.data as Json[]) {
    expect(typeof detail['@type']).toBe('string');
    expect(detail['@type']).toMatch(/^type\.googleapis\.com\/google\.rpc\.[A-Za-z]+$/);
  }
  const reason = A2A_REASONS[expected.code];
  if (reason !== undefined) {
    const info = (body.error.data as Json[]).find((d) => d['@type'] === ERROR_INFO);
    expect(info, 'A2A errors carry a google.rpc.ErrorInfo').toBeDefined();
    expect(info?.reason).toBe(reason);
    expect(info?.domain).toBe('a2a-protocol.org');
  }
  if (expected.fields !== undefined) {
    const badRequest = (body.error.data as Json[]).find((d) => d['@type'] === BAD_REQUEST);
    expect(badRequest, 'validation errors carry a google.rpc.BadRequest').toBeDefined();
    const violations = badRequest?.fieldViolations as { field: string; description: string }[];
    expect(violations.map((v) => v.field).sort()).toEqual([...expected.fields].sort());
    for (const violation of violations) {
      expect(typeof violation.description).toBe('string');
      expect(violation.description.length).toBeGreaterThan(0);
    }
  }
  return body.error as Json;
}

/** The error with everything that legitimately depends on the task id or the clock taken out. */
function normalizedError(body: Json, taskId: string): unknown {
  const text = JSON.stringify(body.error).split(taskId).join('<task-id>');
  const error = JSON.parse(text) as Json;
  for (const detail of error.data as Json[]) delete detail.metadata?.timestamp;
  return error;
}

beforeAll(async () => {
  // Push notifications off: this suite pins PushNotificationNotSupportedError's wire shape (test/push-*.test.ts cover them on).
  gw = await startTestGateway({ name: 'errors-rpc', config: { push: { enabled: false } } });
  ({ completed, waitingForInput, acme } = await seedQuietFixtures(gw));
});

afterAll(async () => {
  await gw?.close();
});

describe('JSON-RPC envelope errors', () => {
  it('malformed JSON is -32700 with id null', async () => {
    const response = await unchanged(() => send('{"jsonrpc":"2.0","id":1,"method":"GetTask",', { raw: true }));
    expectRpcError(response, { code: -32700, id: null });
  });

  it('a batch (JSON array) is -32600', async () => {
    const response = await unchanged(() =>
      send([
        { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: completed.id } },
        { jsonrpc: '2.0', id: 2, method: 'SendMessage', params: { message: textMessage('in a batch') } },
      ]),
    );
    expectRpcError(response, { code: -32600, id: null });
  });

  it('jsonrpc "1.0" is -32600 naming jsonrpc, echoing the id', async () => {
    const response = await unchanged(() => send({ jsonrpc: '1.0', id: 'v1', method: 'GetTask', params: { id: completed.id } }));
    expectRpcError(response, { code: -32600, id: 'v1', fields: ['jsonrpc'] });
  });

  it('a missing method is -32600 naming method', async () => {
    const response = await unchanged(() => send({ jsonrpc: '2.0', id: 41, params: { id: completed.id } }));
    expectRpcError(response, { code: -32600, id: 41, fields: ['method'] });
  });

  it('a 0.3 method name ("tasks/get") under A2A-Version 1.0 is -32601, naming the version that has it', async () => {
    const response = await unchanged(() => call('old-name', 'tasks/get', { id: completed.id }));
    const error = expectRpcError(response, { code: -32601, id: 'old-name' });
    expect(error.message).toMatch(/A2A 0\.3 method: send "A2A-Version: 0\.3"/);
  });

  it.each([
    ['a string', 'not an object'],
    ['an array', [{ id: 'x' }]],
    ['null', null],
    ['a number', 7],
  ])('params as %s is -32600 naming params', async (_what, params) => {
    const response = await unchanged(() => send({ jsonrpc: '2.0', id: 'p', method: 'SendMessage', params }));
    expectRpcError(response, { code: -32600, id: 'p', fields: ['params'] });
  });

  it('a notification (no id) is refused: every A2A method has a result', async () => {
    const response = await unchanged(() => send({ jsonrpc: '2.0', method: 'SendMessage', params: { message: textMessage('no id') } }));
    expectRpcError(response, { code: -32600, id: null, fields: ['id'] });
  });
});

describe('SendMessage params validation (-32602)', () => {
  it('a missing message names message', async () => {
    const response = await unchanged(() => call('s1', 'SendMessage', {}));
    expectRpcError(response, { code: -32602, id: 's1', fields: ['message'] });
  });

  it('empty parts names message.parts', async () => {
    const response = await unchanged(() => call('s2', 'SendMessage', { message: { ...textMessage('x'), parts: [] } }));
    expectRpcError(response, { code: -32602, id: 's2', fields: ['message.parts'] });
  });

  it('a part with two contents (text and url) names that part', async () => {
    const message = { ...textMessage('x'), parts: [{ text: 'hi', url: 'https://example.com/a.txt' }] };
    const response = await unchanged(() => call('s3', 'SendMessage', { message }));
    expectRpcError(response, { code: -32602, id: 's3', fields: ['message.parts[0]'] });
  });

  it.each(['ROLE_AGENT', 'ROLE_ROBOT', 'user'])('role %s names message.role', async (role) => {
    const response = await unchanged(() => call('s4', 'SendMessage', { message: textMessage('x', { role }) }));
    expectRpcError(response, { code: -32602, id: 's4', fields: ['message.role'] });
  });

  it('a numeric messageId names message.messageId', async () => {
    const response = await unchanged(() => call(5, 'SendMessage', { message: textMessage('x', { messageId: 12345 }) }));
    expectRpcError(response, { code: -32602, id: 5, fields: ['message.messageId'] });
  });

  it('the same failures arrive over SendStreamingMessage as a plain JSON error, not a stream', async () => {
    const response = await unchanged(() => call('s6', 'SendStreamingMessage', { message: { ...textMessage('x'), parts: [] } }));
    expectRpcError(response, { code: -32602, id: 's6', fields: ['message.parts'] });
  });

  it('hostile nesting (5000 levels of metadata) is refused before parsing: -32600 JSON_TOO_DEEP, not an internal error', async () => {
    const depth = 5000;
    const deep = `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
    const message = JSON.stringify(textMessage('deep')).replace(/}$/, `,"metadata":${deep}}`);
    const raw = `{"jsonrpc":"2.0","id":"deep","method":"SendMessage","params":{"message":${message}}}`;
    const response = await unchanged(() => send(raw, { raw: true }));
    // The body was never parsed, so its id is unknown.
    const error = expectRpcError(response, { code: -32600, id: null });
    expect(JSON.stringify(error.data)).toContain('JSON_TOO_DEEP');
    expect(error.message).toMatch(/deeper than 64 levels \(jsonLimits\.maxDepth\)/);
  });

});

describe('GetTask and ListTasks params validation (-32602)', () => {
  it('GetTask without id names id', async () => {
    const response = await unchanged(() => call('g1', 'GetTask', {}));
    expectRpcError(response, { code: -32602, id: 'g1', fields: ['id'] });
  });

  it.each([
    ['-1', -1],
    ['"abc"', 'abc'],
    ['1.5', 1.5],
  ])('GetTask historyLength %s names historyLength', async (_shown, historyLength) => {
    const response = await unchanged(() => call('g2', 'GetTask', { id: completed.id, historyLength }));
    expectRpcError(response, { code: -32602, id: 'g2', fields: ['historyLength'] });
  });

  it('ListTasks status TASK_STATE_RUNNING names status', async () => {
    const response = await unchanged(() => call('l1', 'ListTasks', { status: 'TASK_STATE_RUNNING' }));
    expectRpcError(response, { code: -32602, id: 'l1', fields: ['status'] });
  });

  it.each([0, 101])('ListTasks pageSize %i names pageSize', async (pageSize) => {
    const response = await unchanged(() => call('l2', 'ListTasks', { pageSize }));
    expectRpcError(response, { code: -32602, id: 'l2', fields: ['pageSize'] });
  });

  it('ListTasks with a pageToken the gateway never issued names pageToken', async () => {
    const response = await unchanged(() => call('l3', 'ListTasks', { pageToken: 'zzz' }));
    expectRpcError(response, { code: -32602, id: 'l3', fields: ['pageToken'] });
  });

  it('ListTasks reports every bad field at once', async () => {
    const response = await unchanged(() => call('l4', 'ListTasks', { pageSize: 150, historyLength: -5, status: 'TASK_STATE_RUNNING' }));
    expectRpcError(response, { code: -32602, id: 'l4', fields: ['pageSize', 'historyLength', 'status'] });
  });
});

describe('transport-level refusals', () => {
  it('a body over 1 MiB is HTTP 413 with a JSON-RPC error body, closing the connection', async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 'big', method: 'SendMessage', params: { message: textMessage('x'.repeat(1_100_000)) } });
    const response = await unchanged(async () => {
      const res = await fetch(gw.jsonRpcUrl, { method: 'POST', headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' }, body });
      // The unread rest of the body leaves the connection unusable; a keep-alive client must not reuse it.
      expect(res.headers.get('connection')).toBe('close');
      return { status: res.status, contentType: res.headers.get('content-type'), body: (await res.json()) as Json };
    });
    expectRpcError(response, { status: 413, code: -32600, id: null });
    // The client's next request (on a new connection) is served normally.
    const next = await call('after-413', 'GetTask', { id: completed.id });
    expect(next.body.result.id).toBe(completed.id);
  });

  it('a body over 1 MiB without Content-Length (chunked) is also 413', async () => {
    const payload = new TextEncoder().encode(JSON.stringify({ jsonrpc: '2.0', id: 'chunked', method: 'SendMessage', params: { message: textMessage('y'.repeat(1_100_000)) } }));
    const response = await unchanged(() => postChunked(gw.jsonRpcUrl, payload, { 'Content-Type': 'application/json', 'A2A-Version': '1.0' }));
    expectRpcError(response, { status: 413, code: -32600, id: null });
  });

  it('Content-Type text/plain is HTTP 415 with -32005 ContentTypeNotSupportedError, judged before the body is read', async () => {
    const body = { jsonrpc: '2.0', id: 'tp', method: 'SendMessage', params: { message: textMessage('plain') } };
    const response = await unchanged(() => send(body, { headers: { 'Content-Type': 'text/plain', 'A2A-Version': '1.0' } }));
    const error = expectRpcError(response, { status: 415, code: -32005, id: null });
    expect(error.message).toContain('text/plain');
  });

  it('GET on the endpoint is HTTP 405', async () => {
    const response = await unchanged(() => send(undefined, { method: 'GET' }));
    expectRpcError(response, { status: 405, code: -32600, id: null });
  });
});

describe('A2A-Version (spec 3.6)', () => {
  it('a missing A2A-Version means 0.3: a 1.0 method is then -32009 VersionNotSupported', async () => {
    const response = await unchanged(() =>
      call('nv', 'SendMessage', { message: textMessage('no version') }, { 'Content-Type': 'application/json' }),
    );
    const error = expectRpcError(response, { code: -32009, id: 'nv' });
    const info = (error.data as Json[]).find((d) => d['@type'] === ERROR_INFO);
    expect(info?.metadata.requestedVersion).toBe('');
  });

  it.each(['0.3', '2.0', '1.1', 'banana'])('A2A-Version %s with a 1.0 method is -32009', async (version) => {
    const response = await unchanged(() =>
      call('ver', 'SendMessage', { message: textMessage('wrong version') }, { 'Content-Type': 'application/json', 'A2A-Version': version }),
    );
    const error = expectRpcError(response, { code: -32009, id: 'ver' });
    const info = (error.data as Json[]).find((d) => d['@type'] === ERROR_INFO);
    expect(info?.metadata.requestedVersion).toBe(version);
  });

  it('A2A-Version 1.0.5 is 1.0 (patch ignored) and is served', async () => {
    const response = await unchanged(() =>
      call('patch', 'GetTask', { id: completed.id }, { 'Content-Type': 'application/json', 'A2A-Version': '1.0.5' }),
    );
    expect(response.status).toBe(200);
    expect(response.body.error).toBeUndefined();
    expect(response.body.id).toBe('patch');
    expect(response.body.result.id).toBe(completed.id);
  });

  it('A2A-Version as a query parameter is honoured', async () => {
    const response = await unchanged(() =>
      send({ jsonrpc: '2.0', id: 'q', method: 'GetTask', params: { id: completed.id } }, { headers: { 'Content-Type': 'application/json' }, query: '?A2A-Version=1.0' }),
    );
    expect(response.body.error).toBeUndefined();
    expect(response.body.result.id).toBe(completed.id);
  });
});

describe('task errors', () => {
  it.each(['GetTask', 'CancelTask', 'SubscribeToTask'])('%s of an unknown task is -32001 as plain JSON', async (method) => {
    const id = randomId();
    const response = await unchanged(() => call(`nf-${method}`, method, { id }));
    const error = expectRpcError(response, { code: -32001, id: `nf-${method}` });
    const info = (error.data as Json[]).find((d) => d['@type'] === ERROR_INFO);
    expect(info?.metadata.taskId).toBe(id);
  });

  it('a follow-up to an unknown task is -32001', async () => {
    const response = await unchanged(() => call('nf-send', 'SendMessage', { message: textMessage('hello?', { taskId: randomId() }) }));
    expectRpcError(response, { code: -32001, id: 'nf-send' });
  });

  it("continuing a task with another contextId than the task's is -32602 naming message.contextId", async () => {
    const message = textMessage('Ada', { taskId: waitingForInput.id, contextId: `ctx-${randomBytes(6).toString('hex')}` });
    const response = await unchanged(() => call('ctx', 'SendMessage', { message }));
    expectRpcError(response, { code: -32602, id: 'ctx', fields: ['message.contextId'] });
  });

  it('a message to a completed task is -32004 (both send methods)', async () => {
    for (const method of ['SendMessage', 'SendStreamingMessage']) {
      const response = await unchanged(() => call(`term-${method}`, method, { message: textMessage('more', { taskId: completed.id }) }));
      expectRpcError(response, { code: -32004, id: `term-${method}` });
    }
  });

  it('CancelTask of a completed task is -32002', async () => {
    const response = await unchanged(() => call('cancel-done', 'CancelTask', { id: completed.id }));
    expectRpcError(response, { code: -32002, id: 'cancel-done' });
  });

  it('SubscribeToTask of a completed task is -32004 as plain JSON', async () => {
    const response = await unchanged(() => call('sub-done', 'SubscribeToTask', { id: completed.id }));
    expectRpcError(response, { code: -32004, id: 'sub-done' });
  });
});

describe('tenants', () => {
  it("the owner tenant does see its task (control for the cases below)", async () => {
    const response = await unchanged(() => call('acme-own', 'GetTask', { tenant: 'acme', id: acme.id }));
    expect(response.body.error).toBeUndefined();
    expect(response.body.result.id).toBe(acme.id);
  });

  it("another tenant's task is -32001, indistinguishable from a random id", async () => {
    for (const tenant of ['other', undefined]) {
      const foreign = await unchanged(() => call('x', 'GetTask', { tenant, id: acme.id }));
      const random = randomId();
      const missing = await unchanged(() => call('x', 'GetTask', { tenant, id: random }));
      expectRpcError(foreign, { code: -32001, id: 'x' });
      expectRpcError(missing, { code: -32001, id: 'x' });
      expect(foreign.status).toBe(missing.status);
      expect(normalizedError(foreign.body, acme.id)).toEqual(normalizedError(missing.body, random));
    }
  });

  it("CancelTask and SubscribeToTask of another tenant's task are -32001", async () => {
    for (const method of ['CancelTask', 'SubscribeToTask']) {
      const response = await unchanged(() => call(method, method, { tenant: 'other', id: acme.id }));
      expectRpcError(response, { code: -32001, id: method });
    }
  });

  it("a follow-up to another tenant's task is -32001", async () => {
    const response = await unchanged(() =>
      call('foreign-follow', 'SendMessage', { tenant: 'other', message: textMessage('let me in', { taskId: acme.id }) }),
    );
    expectRpcError(response, { code: -32001, id: 'foreign-follow' });
  });
});

describe('capabilities', () => {
  it('SendMessage with configuration.taskPushNotificationConfig is -32003', async () => {
    const response = await unchanged(() =>
      call('push', 'SendMessage', {
        message: textMessage('notify me'),
        configuration: { taskPushNotificationConfig: { url: 'https://example.com/hook' } },
      }),
    );
    expectRpcError(response, { code: -32003, id: 'push' });
  });

  it.each([
    ['CreateTaskPushNotificationConfig', () => ({ taskId: completed.id, url: 'https://example.com/hook' })],
    ['GetTaskPushNotificationConfig', () => ({ taskId: completed.id, id: 'cfg-1' })],
    ['ListTaskPushNotificationConfigs', () => ({ taskId: completed.id })],
    ['DeleteTaskPushNotificationConfig', () => ({ taskId: completed.id, id: 'cfg-1' })],
  ])('%s is -32003', async (method, params) => {
    const response = await unchanged(() => call(method, method, params()));
    expectRpcError(response, { code: -32003, id: method });
  });

  it('a part with mediaType image/png is -32005', async () => {
    const message = { ...textMessage('x'), parts: [{ url: 'https://example.com/cat.png', mediaType: 'image/png' }] };
    const response = await unchanged(() => call('png', 'SendMessage', { message }));
    const error = expectRpcError(response, { code: -32005, id: 'png' });
    const info = (error.data as Json[]).find((d) => d['@type'] === ERROR_INFO);
    expect(info?.metadata.mediaType).toBe('image/png');
  });

  it('GetExtendedAgentCard is -32004 (capabilities.extendedAgentCard is false)', async () => {
    const response = await unchanged(() => call('card', 'GetExtendedAgentCard', {}));
    expectRpcError(response, { code: -32004, id: 'card' });
  });
});

describe('control', () => {
  // Runs last: it changes state on purpose, to show the fingerprint above would have caught a write.
  it('a valid SendMessage does change the snapshot', async () => {
    const before = await fingerprint();
    const response = await call('ok', 'SendMessage', { message: textMessage('accepted'), configuration: { returnImmediately: true } });
    expect(response.body.error).toBeUndefined();
    const after = await fingerprint();
    expect(after).not.toEqual(before);
    expect(Object.keys(after).some((key) => key.includes(`{${response.body.result.task.id}}`))).toBe(true);
  });
});
