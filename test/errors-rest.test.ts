// Invariant 11 over the HTTP+JSON binding: every malformed, oversized, hostile or impossible
// request gets the spec's HTTP status (5.4) and a google.rpc.Status body (11.6) with an
// ErrorInfo for A2A errors and a BadRequest for validation, and leaves every Redis key of the
// gateway exactly as it was.
//
// Setup creates real state to protect (a completed task, a task waiting for input, a task of
// tenant "acme"), then stops the in-process worker: BullMQ's worker refreshes its
// `stalled-check` key every second, which would make "nothing changed" unprovable. The last
// test shows that a good request does show up in the fingerprint.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postChunked, seedQuietFixtures, type Json, type RawResponse, type TaskRef } from './support/raw-http.ts';
import { startTestGateway, textMessage, type TestGateway, expectUnchanged } from './support/harness.ts';

const ERROR_INFO = 'type.googleapis.com/google.rpc.ErrorInfo';
const BAD_REQUEST = 'type.googleapis.com/google.rpc.BadRequest';
const V1 = { 'A2A-Version': '1.0' };
const JSON_V1 = { 'Content-Type': 'application/json', 'A2A-Version': '1.0' };


let gw: TestGateway;
let completed: TaskRef;
let waitingForInput: TaskRef;
let acme: TaskRef;

const randomId = (): string => `missing-${randomBytes(8).toString('hex')}`;

async function http(
  method: string,
  path: string,
  options: { body?: unknown; raw?: string; headers?: Record<string, string> } = {},
): Promise<RawResponse> {
  const init: RequestInit = { method, headers: options.headers ?? (options.body === undefined && options.raw === undefined ? V1 : JSON_V1) };
  if (options.raw !== undefined) init.body = options.raw;
  else if (options.body !== undefined) init.body = JSON.stringify(options.body);
  const response = await fetch(`${gw.restUrl}${path}`, init);
  const text = await response.text();
  let parsed: Json;
  try {
    parsed = JSON.parse(text) as Json;
  } catch {
    throw new Error(`${method} ${path} answered ${response.status} with a non-JSON body: ${text.slice(0, 200)}`);
  }
  return { status: response.status, contentType: response.headers.get('content-type'), body: parsed };
}


const fingerprint = async (): Promise<Record<string, string>> => Object.fromEntries(await gw.snapshotKeys());
const unchanged = <T>(request: () => Promise<T>): Promise<T> => expectUnchanged(gw, request);

interface Expected {
  status: number;
  /** google.rpc.Code name in error.status */
  grpc?: string;
  /** A2A error: the ErrorInfo reason (domain a2a-protocol.org is checked too). */
  reason?: string;
  /** The exact set of fields the BadRequest detail must name (order ignored). */
  fields?: string[];
}

function expectRestError(response: RawResponse, expected: Expected): Json {
  const { body } = response;
  expect(response.status).toBe(expected.status);
  expect(response.contentType ?? '').toMatch(/^application\/json(;|$)/);
  expect(Object.keys(body)).toEqual(['error']);
  const error = body.error as Json;
  expect(error.code).toBe(expected.status);
  expect(typeof error.status).toBe('string');
  expect(error.status).toMatch(/^[A-Z_]+$/);
  if (expected.grpc !== undefined) expect(error.status).toBe(expected.grpc);
  expect(typeof error.message).toBe('string');
  expect(error.message.length).toBeGreaterThan(0);
  expect(Array.isArray(error.details)).toBe(true);
  for (const detail of error.details as Json[]) {
    expect(typeof detail['@type']).toBe('string');
    expect(detail['@type']).toMatch(/^type\.googleapis\.com\/google\.rpc\.[A-Za-z]+$/);
  }
  if (expected.reason !== undefined) {
    const info = (error.details as Json[]).find((d) => d['@type'] === ERROR_INFO);
    expect(info, 'A2A errors carry a google.rpc.ErrorInfo (spec 11.6)').toBeDefined();
    expect(info?.reason).toBe(expected.reason);
    expect(info?.domain).toBe('a2a-protocol.org');
  }
  if (expected.fields !== undefined) {
    const badRequest = (error.details as Json[]).find((d) => d['@type'] === BAD_REQUEST);
    expect(badRequest, 'validation errors carry a google.rpc.BadRequest').toBeDefined();
    const violations = badRequest?.fieldViolations as { field: string; description: string }[];
    expect(violations.map((v) => v.field).sort()).toEqual([...expected.fields].sort());
    for (const violation of violations) {
      expect(typeof violation.description).toBe('string');
      expect(violation.description.length).toBeGreaterThan(0);
    }
  }
  return error;
}

const invalid = (fields: string[]): Expected => ({ status: 400, grpc: 'INVALID_ARGUMENT', fields });
const taskNotFound: Expected = { status: 404, grpc: 'NOT_FOUND', reason: 'TASK_NOT_FOUND' };
const unsupported: Expected = { status: 400, grpc: 'FAILED_PRECONDITION', reason: 'UNSUPPORTED_OPERATION' };
const pushNotSupported: Expected = { status: 400, grpc: 'FAILED_PRECONDITION', reason: 'PUSH_NOTIFICATION_NOT_SUPPORTED' };
const versionNotSupported: Expected = { status: 400, grpc: 'FAILED_PRECONDITION', reason: 'VERSION_NOT_SUPPORTED' };

/** The error with everything that legitimately depends on the task id or the clock taken out. */
function normalizedError(body: Json, taskId: string): unknown {
  const error = JSON.parse(JSON.stringify(body.error).split(taskId).join('<task-id>')) as Json;
  for (const detail of error.details as Json[]) delete detail.metadata?.timestamp;
  return error;
}

beforeAll(async () => {
  // Push notifications off: this suite pins PushNotificationNotSupportedError's wire shape (test/push-*.test.ts cover them on).
  gw = await startTestGateway({ name: 'errors-rest', config: { push: { enabled: false } } });
  ({ completed, waitingForInput, acme } = await seedQuietFixtures(gw));
});

afterAll(async () => {
  await gw?.close();
});

describe('request body errors (400)', () => {
  it('malformed JSON', async () => {
    const response = await unchanged(() => http('POST', '/message:send', { raw: '{"message": {"messageId": "m1",' }));
    expectRestError(response, { status: 400, grpc: 'INVALID_ARGUMENT' });
  });

  it('a JSON array instead of an object', async () => {
    const response = await unchanged(() => http('POST', '/message:send', { body: [{ message: textMessage('in an array') }] }));
    expectRestError(response, { status: 400, grpc: 'INVALID_ARGUMENT' });
  });

  it('an empty body on message:send names the body', async () => {
    const response = await unchanged(() => http('POST', '/message:send', { raw: '' }));
    expectRestError(response, invalid(['(body)']));
  });

  it('a missing message names message', async () => {
    const response = await unchanged(() => http('POST', '/message:send', { body: { configuration: { returnImmediately: true } } }));
    expectRestError(response, invalid(['message']));
  });

  it('empty parts names message.parts (send and stream)', async () => {
    for (const path of ['/message:send', '/message:stream']) {
      const response = await unchanged(() => http('POST', path, { body: { message: { ...textMessage('x'), parts: [] } } }));
      expectRestError(response, invalid(['message.parts']));
    }
  });

  it('a part with two contents (text and url) names that part', async () => {
    const message = { ...textMessage('x'), parts: [{ text: 'ok' }, { text: 'hi', url: 'https://example.com/a.txt' }] };
    const response = await unchanged(() => http('POST', '/message:send', { body: { message } }));
    expectRestError(response, invalid(['message.parts[1]']));
  });

  it.each(['ROLE_AGENT', 'ROLE_ROBOT'])('role %s names message.role', async (role) => {
    const response = await unchanged(() => http('POST', '/message:send', { body: { message: textMessage('x', { role }) } }));
    expectRestError(response, invalid(['message.role']));
  });

  it('a numeric messageId names message.messageId', async () => {
    const response = await unchanged(() => http('POST', '/message:send', { body: { message: textMessage('x', { messageId: 42 }) } }));
    expectRestError(response, invalid(['message.messageId']));
  });

  it('hostile nesting (5000 levels in a data part) is 400 JSON_TOO_DEEP before parsing, not 500', async () => {
    const depth = 5000;
    const deep = `${'['.repeat(depth)}1${']'.repeat(depth)}`;
    const raw = `{"message":{"messageId":"deep-1","role":"ROLE_USER","parts":[{"data":${deep}}]}}`;
    const response = await unchanged(() => http('POST', '/message:send', { raw }));
    expectRestError(response, { status: 400, grpc: 'INVALID_ARGUMENT' });
    expect(JSON.stringify(response.body.error.details)).toContain('JSON_TOO_DEEP');
  });
});

describe('query and path errors (400)', () => {
  it('ListTasks ?pageSize=150&historyLength=-5&status=TASK_STATE_RUNNING names all three', async () => {
    const response = await unchanged(() => http('GET', '/tasks?pageSize=150&historyLength=-5&status=TASK_STATE_RUNNING'));
    expectRestError(response, invalid(['pageSize', 'historyLength', 'status']));
  });

  it.each([
    ['pageSize=0', 'pageSize'],
    ['pageSize=101', 'pageSize'],
    ['pageSize=ten', 'pageSize'],
    ['pageToken=zzz', 'pageToken'],
    ['includeArtifacts=maybe', 'includeArtifacts'],
    ['statusTimestampAfter=yesterday', 'statusTimestampAfter'],
  ])('ListTasks ?%s names %s', async (query, field) => {
    const response = await unchanged(() => http('GET', `/tasks?${query}`));
    expectRestError(response, invalid([field]));
  });

  it.each(['-1', 'abc', '1.5'])('GetTask ?historyLength=%s names historyLength', async (value) => {
    const response = await unchanged(() => http('GET', `/tasks/${completed.id}?historyLength=${value}`));
    expectRestError(response, invalid(['historyLength']));
  });

  it('an id in the body differing from the URL names id', async () => {
    const response = await unchanged(() => http('POST', `/tasks/${waitingForInput.id}:cancel`, { body: { id: completed.id } }));
    expectRestError(response, invalid(['id']));
  });

  it('malformed percent-encoding in the path is 400, not 500', async () => {
    for (const path of ['/tasks/%E0%A4%A', '/%ZZ/tasks']) {
      const response = await unchanged(() => http('GET', path));
      expectRestError(response, { status: 400 });
    }
  });
});

describe('transport-level refusals', () => {
  it('a body over 1 MiB is 413 with a google.rpc.Status body, closing the connection', async () => {
    const body = JSON.stringify({ message: textMessage('x'.repeat(1_100_000)) });
    const response = await unchanged(async () => {
      const res = await fetch(`${gw.restUrl}/message:send`, { method: 'POST', headers: JSON_V1, body });
      expect(res.headers.get('connection')).toBe('close');
      return { status: res.status, contentType: res.headers.get('content-type'), body: (await res.json()) as Json };
    });
    expectRestError(response, { status: 413 });
    const next = await http('GET', `/tasks/${completed.id}`);
    expect(next.status).toBe(200);
    expect(next.body.id).toBe(completed.id);
  });

  it('a chunked body over 1 MiB (no Content-Length) is 413 too', async () => {
    const payload = new TextEncoder().encode(JSON.stringify({ message: textMessage('y'.repeat(1_100_000)) }));
    const response = await unchanged(() => postChunked(`${gw.restUrl}/message:send`, payload, JSON_V1));
    expectRestError(response, { status: 413 });
  });

  it.each(['text/plain', 'application/x-www-form-urlencoded'])('Content-Type %s is 415', async (contentType) => {
    const body = JSON.stringify({ message: textMessage('plain') });
    const response = await unchanged(() => http('POST', '/message:send', { raw: body, headers: { 'Content-Type': contentType, ...V1 } }));
    expectRestError(response, { status: 415 });
  });

  it.each([
    ['GET', '/message:send'],
    ['PUT', '/message:send'],
    ['GET', '/message:stream'],
    ['DELETE', '/tasks/some-task'],
    ['POST', '/tasks'],
    ['GET', '/tasks/some-task:cancel'],
    ['PUT', '/tasks/some-task/pushNotificationConfigs/cfg'],
    ['POST', '/extendedAgentCard'],
    ['GET', '/acme/message:send'],
  ])('%s %s (wrong method on a known path) is 405', async (method, path) => {
    const body = method === 'GET' ? undefined : { message: textMessage('wrong method') };
    const response = await unchanged(() => http(method, path, { body }));
    expectRestError(response, { status: 405 });
  });

  it.each([
    ['GET', '/nope'],
    ['POST', '/message:sendd'],
    ['GET', '/tasks/a/b/c'],
    ['POST', '/tasks/some-task:explode'],
    ['GET', '/acme/other/tasks'],
  ])('%s %s (unknown path) is 404', async (method, path) => {
    const body = method === 'GET' ? undefined : { message: textMessage('nowhere') };
    const response = await unchanged(() => http(method, path, { body }));
    const error = expectRestError(response, { status: 404 });
    // Not a task lookup: nothing here may look like TaskNotFound.
    expect((error.details as Json[]).some((d) => d.reason === 'TASK_NOT_FOUND')).toBe(false);
  });
});

describe('A2A-Version (spec 3.6)', () => {
  it('a missing A2A-Version means 0.3: a 1.0 route is then VERSION_NOT_SUPPORTED', async () => {
    const get = await unchanged(() => http('GET', `/tasks/${completed.id}`, { headers: {} }));
    expectRestError(get, versionNotSupported);
    const post = await unchanged(() => http('POST', '/message:send', { body: { message: textMessage('no version') }, headers: { 'Content-Type': 'application/json' } }));
    expectRestError(post, versionNotSupported);
  });

  it.each(['0.3', '2.0', '1'])('A2A-Version %s on a 1.0 route is VERSION_NOT_SUPPORTED', async (version) => {
    const response = await unchanged(() =>
      http('POST', '/message:send', { body: { message: textMessage('wrong version') }, headers: { 'Content-Type': 'application/json', 'A2A-Version': version } }),
    );
    const error = expectRestError(response, versionNotSupported);
    const info = (error.details as Json[]).find((d) => d['@type'] === ERROR_INFO);
    expect(info?.metadata.requestedVersion).toBe(version);
  });

  it('A2A-Version 1.0.5 is 1.0 and is served', async () => {
    const response = await unchanged(() => http('GET', `/tasks/${completed.id}`, { headers: { 'A2A-Version': '1.0.5' } }));
    expect(response.status).toBe(200);
    expect(response.body.id).toBe(completed.id);
  });

  it('?A2A-Version=1.0 as a query parameter is served', async () => {
    const response = await unchanged(() => http('GET', `/tasks/${completed.id}?A2A-Version=1.0`, { headers: {} }));
    expect(response.status).toBe(200);
    expect(response.body.id).toBe(completed.id);
  });
});

describe('task errors', () => {
  it.each([
    ['GET', ''],
    ['POST', ':cancel'],
    ['POST', ':subscribe'],
    ['GET', ':subscribe'],
  ])('%s /tasks/{unknown}%s is 404 TASK_NOT_FOUND as JSON', async (method, suffix) => {
    const id = randomId();
    const response = await unchanged(() => http(method, `/tasks/${id}${suffix}`));
    const error = expectRestError(response, taskNotFound);
    const info = (error.details as Json[]).find((d) => d['@type'] === ERROR_INFO);
    expect(info?.metadata.taskId).toBe(id);
  });

  it('a follow-up to an unknown task is 404 TASK_NOT_FOUND', async () => {
    const response = await unchanged(() => http('POST', '/message:send', { body: { message: textMessage('hello?', { taskId: randomId() }) } }));
    expectRestError(response, taskNotFound);
  });

  it("continuing a task with another contextId than the task's names message.contextId", async () => {
    const message = textMessage('Ada', { taskId: waitingForInput.id, contextId: `ctx-${randomBytes(6).toString('hex')}` });
    const response = await unchanged(() => http('POST', '/message:send', { body: { message } }));
    expectRestError(response, invalid(['message.contextId']));
  });

  it('a message to a completed task is 400 UNSUPPORTED_OPERATION (send and stream)', async () => {
    for (const path of ['/message:send', '/message:stream']) {
      const response = await unchanged(() => http('POST', path, { body: { message: textMessage('more', { taskId: completed.id }) } }));
      expectRestError(response, unsupported);
    }
  });

  it('cancel of a completed task is 400 TASK_NOT_CANCELABLE', async () => {
    const response = await unchanged(() => http('POST', `/tasks/${completed.id}:cancel`));
    const error = expectRestError(response, { status: 400, grpc: 'FAILED_PRECONDITION', reason: 'TASK_NOT_CANCELABLE' });
    const info = (error.details as Json[]).find((d) => d['@type'] === ERROR_INFO);
    expect(info?.metadata.state).toBe('TASK_STATE_COMPLETED');
  });

  it('subscribe to a completed task is 400 UNSUPPORTED_OPERATION as JSON (POST and GET)', async () => {
    for (const method of ['POST', 'GET']) {
      const response = await unchanged(() => http(method, `/tasks/${completed.id}:subscribe`));
      expectRestError(response, unsupported);
    }
  });
});

describe('tenants', () => {
  it('the owner tenant sees its task, with the tenant in the path (control)', async () => {
    const response = await unchanged(() => http('GET', `/acme/tasks/${acme.id}`));
    expect(response.status).toBe(200);
    expect(response.body.id).toBe(acme.id);
  });

  it("another tenant's task is 404, indistinguishable from a random id", async () => {
    for (const prefix of ['/other', '']) {
      const foreign = await unchanged(() => http('GET', `${prefix}/tasks/${acme.id}`));
      const random = randomId();
      const missing = await unchanged(() => http('GET', `${prefix}/tasks/${random}`));
      expectRestError(foreign, taskNotFound);
      expectRestError(missing, taskNotFound);
      expect(normalizedError(foreign.body, acme.id)).toEqual(normalizedError(missing.body, random));
    }
  });

  it("cancel and subscribe of another tenant's task are 404", async () => {
    for (const suffix of [':cancel', ':subscribe']) {
      const response = await unchanged(() => http('POST', `/other/tasks/${acme.id}${suffix}`));
      expectRestError(response, taskNotFound);
    }
  });

  it('a tenant in the body differing from the URL tenant is 400 naming tenant', async () => {
    const response = await unchanged(() => http('POST', '/acme/message:send', { body: { tenant: 'other', message: textMessage('which tenant?') } }));
    expectRestError(response, invalid(['tenant']));
    const cancel = await unchanged(() => http('POST', `/acme/tasks/${acme.id}:cancel`, { body: { tenant: 'other' } }));
    expectRestError(cancel, invalid(['tenant']));
  });

  it('the same tenant in the body and the URL is accepted (reaches the task)', async () => {
    const response = await unchanged(() => http('POST', `/acme/tasks/${acme.id}:cancel`, { body: { tenant: 'acme' } }));
    expectRestError(response, { status: 400, grpc: 'FAILED_PRECONDITION', reason: 'TASK_NOT_CANCELABLE' });
  });
});

describe('capabilities', () => {
  it('message:send with configuration.taskPushNotificationConfig is PUSH_NOTIFICATION_NOT_SUPPORTED', async () => {
    const body = { message: textMessage('notify me'), configuration: { taskPushNotificationConfig: { url: 'https://example.com/hook' } } };
    const response = await unchanged(() => http('POST', '/message:send', { body }));
    expectRestError(response, pushNotSupported);
  });

  it.each([
    ['POST', '/tasks/{id}/pushNotificationConfigs', { url: 'https://example.com/hook' }],
    ['GET', '/tasks/{id}/pushNotificationConfigs', undefined],
    ['GET', '/tasks/{id}/pushNotificationConfigs/cfg-1', undefined],
    ['DELETE', '/tasks/{id}/pushNotificationConfigs/cfg-1', undefined],
    ['POST', '/acme/tasks/{id}/pushNotificationConfigs', { url: 'https://example.com/hook' }],
    ['GET', '/acme/tasks/{id}/pushNotificationConfigs', undefined],
  ])('%s %s is PUSH_NOTIFICATION_NOT_SUPPORTED', async (method, template, body) => {
    const path = template.replace('{id}', completed.id);
    const response = await unchanged(() => http(method, path, { body }));
    expectRestError(response, pushNotSupported);
  });

  it('a part with mediaType image/png is CONTENT_TYPE_NOT_SUPPORTED', async () => {
    const message = { ...textMessage('x'), parts: [{ url: 'https://example.com/cat.png', mediaType: 'image/png' }] };
    const response = await unchanged(() => http('POST', '/message:send', { body: { message } }));
    const error = expectRestError(response, { status: 400, grpc: 'INVALID_ARGUMENT', reason: 'CONTENT_TYPE_NOT_SUPPORTED' });
    const info = (error.details as Json[]).find((d) => d['@type'] === ERROR_INFO);
    expect(info?.metadata.mediaType).toBe('image/png');
  });

  it.each(['/extendedAgentCard', '/acme/extendedAgentCard'])('GET %s is UNSUPPORTED_OPERATION', async (path) => {
    const response = await unchanged(() => http('GET', path));
    expectRestError(response, unsupported);
  });
});

describe('control', () => {
  // Runs last: it changes state on purpose, to show the fingerprint above would have caught a write.
  it('a valid message:send does change the snapshot', async () => {
    const before = await fingerprint();
    const response = await http('POST', '/message:send', { body: { message: textMessage('accepted'), configuration: { returnImmediately: true } } });
    expect(response.status).toBe(200);
    const after = await fingerprint();
    expect(after).not.toEqual(before);
    expect(Object.keys(after).some((key) => key.includes(`{${response.body.task.id}}`))).toBe(true);
  });
});
