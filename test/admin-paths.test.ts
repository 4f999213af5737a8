// The admin plane is authorized on the path the router serves. Every spelling of an admin or
// operator route (percent-escapes, dot segments plain and escaped, double encoding, repeated
// slashes, case, trailing slashes, matrix parameters, escaped slashes and backslashes, NUL,
// absolute-form targets) is sent as raw HTTP over a socket, without credentials and with an
// ordinary caller's, for GET and for the PUT that pauses a queue: each is refused (400, 401,
// 403 or 404) and none reaches the dashboard, the metrics or an operator view; no queue is
// paused. An operator's token reaches the dashboard by exactly the spellings that are the same
// path, and the A2A routes answer those spellings as they answer the plain path.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTurnQueue } from '../queues/turns.ts';
import { rpc, startTestGateway, textMessage, type TestGateway } from './support/harness.ts';
import { createTestIssuer, type TestIssuer } from './support/identity.ts';
import { rawHttp, type RawExchange } from './support/raw-http.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

let gw: TestGateway;
let issuer: TestIssuer;
let userToken: string;
let adminToken: string;
let taskId: string;

beforeAll(async () => {
  issuer = await createTestIssuer();
  gw = await startTestGateway({ name: 'admin-paths', config: { auth: { enabled: true, issuers: [issuer.config] }, console: { recentTasksFlushMs: 20 } } });
  userToken = await issuer.token({ sub: 'alice' });
  adminToken = await issuer.token({ sub: 'ops', scope: 'a2a:admin a2a:platform' });
  const sent = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('hello') }, { Authorization: `Bearer ${userToken}` });
  taskId = ((sent.body.result as Json).task as Json).id as string;
});

afterAll(async () => {
  await gw?.close();
});

/** A character's percent-escape, in lower-case hex. */
const hex = (char: string): string => `%${char.charCodeAt(0).toString(16).padStart(2, '0')}`;

/** Spellings of `path` that a lax reader takes for it, and that must be refused or read as exactly `path`. */
function spellings(path: string): string[] {
  const segments = path.slice(1).split('/');
  const withSegment = (i: number, value: string): string => `/${segments.map((segment, j) => (j === i ? value : segment)).join('/')}`;
  const capitalized = (s: string): string => `${s.charAt(0).toUpperCase()}${s.slice(1)}`;
  const found: string[] = [];
  // The segments a guard on the raw path would key on: the first two.
  for (const i of new Set([0, Math.min(1, segments.length - 1)])) {
    const s = segments[i] as string;
    const escaped = hex(s.charAt(0));
    found.push(
      // percent-encoding, lower and upper case hex, one character or all
      withSegment(i, `${escaped}${s.slice(1)}`),
      withSegment(i, `${escaped.toUpperCase()}${s.slice(1)}`),
      withSegment(i, [...s].map(hex).join('')),
      // double encoding
      withSegment(i, `%25${escaped.slice(1)}${s.slice(1)}`),
      // dot segments, plain and encoded
      withSegment(i, `./${s}`),
      withSegment(i, `x/../${s}`),
      withSegment(i, `x/%2e%2e/${s}`),
      withSegment(i, `x/%2E%2E/${s}`),
      withSegment(i, `x/.%2e/${s}`),
      withSegment(i, `%2e/${s}`),
      // repeated slashes
      withSegment(i, `/${s}`),
      // case
      withSegment(i, s.toUpperCase()),
      withSegment(i, capitalized(s)),
      // matrix parameters
      withSegment(i, `${s};x=1`),
      // encoded and raw separators, NUL
      withSegment(i, `%2F${s}`),
      withSegment(i, `%2f${s}`),
      withSegment(i, `\\${s}`),
      withSegment(i, `%5C${s}`),
      withSegment(i, `${s}%00`),
    );
  }
  if (segments.length > 1) found.push(`/${segments[0]}%2F${segments.slice(1).join('/')}`, `/${segments[0]}\\${segments.slice(1).join('/')}`);
  found.push(
    `/.${path}`,
    `/x/..${path}`,
    `/../..${path}`,
    `/${path}`,
    path.toUpperCase(),
    `${path}/`,
    `${path}/.`,
    `${path}/..${path}`,
    `${path}#x`,
    `http://other${path}`,
    `http://other:80${path}`,
    `http://user@127.0.0.1${path}`,
    `https://evil.example${path}`,
  );
  return found;
}

const ADMIN_READS = ['/admin/queues', '/admin/queues/api/queues', '/metrics', '/a2a/rest/operator/tasks', '/a2a/rest/acme/operator/tasks'];
const PAUSES = ['/admin/queues/api/queues/turns-default/pause', '/admin/queues/api/queues/pause'];

/** Whatever an admin or operator surface answers with data: the dashboard's page or API, the metrics, an operator list. */
function reachedAdminSurface(answer: RawExchange): boolean {
  return answer.text.includes('a2a-gateway queues') || answer.text.includes('"queues"') || answer.text.includes('# HELP') || answer.text.includes('"tasks"');
}

const REFUSED = [400, 401, 403, 404];

async function expectRefused(method: string, target: string, headers: Record<string, string> = {}): Promise<void> {
  const answer = await rawHttp(gw.url, { method, target, headers, ...(method === 'PUT' ? { body: '{}' } : {}) });
  expect(REFUSED, `${method} ${target} answered ${answer.status}: ${answer.text.slice(0, 200)}`).toContain(answer.status);
  expect(reachedAdminSurface(answer), `${method} ${target} reached an admin surface`).toBe(false);
}

describe('every spelling of an admin route, without credentials', () => {
  it('the three spellings measured on the old listener are refused', async () => {
    for (const target of ['/admin/%71ueues/api/queues', '/./admin/queues/api/queues', '/x/../admin/queues/api/queues']) {
      const answer = await rawHttp(gw.url, { method: 'GET', target });
      expect(answer.status, target).toBe(401);
      expect(reachedAdminSurface(answer)).toBe(false);
    }
  });

  it('GET: refused for /admin/queues, its API, /metrics and the operator routes', async () => {
    for (const path of ADMIN_READS) for (const target of [path, ...spellings(path)]) await expectRefused('GET', target, { 'A2A-Version': '1.0' });
  });

  it('PUT that pauses a queue: refused by every spelling, and no queue is paused', async () => {
    for (const path of PAUSES) for (const target of [path, ...spellings(path)]) await expectRefused('PUT', target);
    const queue = createTurnQueue(gw.redis, gw.prefix, 'default');
    expect(await queue.isPaused()).toBe(false);
    await queue.close();
  });

  it('POST that cancels through the operator route: refused by every spelling, and the task is not canceled', async () => {
    const path = `/a2a/rest/operator/tasks/${taskId}:cancel`;
    for (const target of [path, ...spellings(path)]) await expectRefused('POST', target, { 'A2A-Version': '1.0' });
    const task = await rpc(gw.jsonRpcUrl, 'GetTask', { id: taskId }, { Authorization: `Bearer ${userToken}` });
    expect(((task.body.result as Json).status as Json).state).toBe('TASK_STATE_COMPLETED');
  });
});

describe('every spelling of an admin route, with an ordinary caller\'s token', () => {
  it('GET and the pausing PUT are refused, and no queue is paused', async () => {
    const headers = { Authorization: `Bearer ${userToken}`, 'A2A-Version': '1.0' };
    for (const path of ['/admin/queues/api/queues', '/metrics', '/a2a/rest/operator/tasks']) for (const target of [path, ...spellings(path)]) await expectRefused('GET', target, headers);
    for (const target of [PAUSES[0] as string, ...spellings(PAUSES[0] as string)]) await expectRefused('PUT', target, headers);
    const queue = createTurnQueue(gw.redis, gw.prefix, 'default');
    expect(await queue.isPaused()).toBe(false);
    await queue.close();
  });
});

describe('one path decision', () => {
  it('an operator reaches the dashboard by the spellings that are its path, and by no other', async () => {
    const headers = { Authorization: `Bearer ${adminToken}` };
    const samePath = ['/admin/queues/api/queues', '/admin/%71ueues/api/queues', '/./admin/queues/api/queues', '/x/../admin/queues/api/queues', '/admin/x/%2E%2E/queues/api/queues', '//admin//queues/api/queues'];
    for (const target of samePath) {
      const answer = await rawHttp(gw.url, { method: 'GET', target, headers });
      expect(answer.status, target).toBe(200);
      expect(JSON.parse(answer.text).queues.length).toBeGreaterThan(0);
    }
    const otherPaths = ['/ADMIN/queues/api/queues', '/admin/Queues/api/queues', '/admin;x=1/queues/api/queues', '/admin/queues;a=b/api/queues', '/admin/%2571ueues/api/queues'];
    for (const target of otherPaths) expect((await rawHttp(gw.url, { method: 'GET', target, headers })).status, target).toBe(404);
    for (const target of ['/admin%2Fqueues/api/queues', '/admin\\queues/api/queues', 'http://other/admin/queues/api/queues', '/admin/queues/api/queues%00']) {
      const answer = await rawHttp(gw.url, { method: 'GET', target, headers });
      expect(answer.status, target).toBe(400);
      expect(JSON.parse(answer.text).error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
      expect(JSON.parse(answer.text).error.details[0].metadata.reason).toBe('REQUEST_TARGET_AMBIGUOUS');
    }
    // An absolute-form target addressed to this gateway is its path.
    const { host } = new URL(gw.url);
    expect((await rawHttp(gw.url, { method: 'GET', target: `http://${host}/admin/queues/api/queues`, headers })).status).toBe(200);
  });

  it('the A2A routes answer the spellings of their path as they answer the path, and refuse the rest alike', async () => {
    const headers = { Authorization: `Bearer ${userToken}`, 'A2A-Version': '1.0' };
    const get = async (target: string): Promise<RawExchange> => rawHttp(gw.url, { method: 'GET', target, headers });
    for (const target of [`/a2a/rest/tasks/${taskId}`, `/a2a/./rest/tasks/${taskId}`, `/a2a//rest/tasks/${taskId}`, `/a2a/%72est/tasks/${taskId}`, `/x/../a2a/rest/tasks/${taskId}`, `/a2a/rest/tasks/x/../${taskId}`]) {
      const answer = await get(target);
      expect(answer.status, target).toBe(200);
      expect(JSON.parse(answer.text).id).toBe(taskId);
    }
    for (const target of [`/A2A/rest/tasks/${taskId}`, `/a2a/rest/TASKS/${taskId}`]) expect((await get(target)).status, target).toBe(404);
    for (const target of [`/a2a%2Frest/tasks/${taskId}`, `/a2a\\rest/tasks/${taskId}`, `/a2a/rest/tasks/${taskId}%00`]) expect((await get(target)).status, target).toBe(400);
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: taskId } });
    for (const target of ['/a2a/jsonrpc', '/a2a/./jsonrpc', '//a2a/%6Asonrpc']) {
      const answer = await rawHttp(gw.url, { method: 'POST', target, headers, body });
      expect(answer.status, target).toBe(200);
      expect(JSON.parse(answer.text).result.id).toBe(taskId);
    }
  });

  it('a target past Node\'s header size bound is refused before the gateway reads it', async () => {
    const answer = await rawHttp(gw.url, { method: 'GET', target: `/admin/queues/${'a/'.repeat(20_000)}` });
    expect(answer.status).toBe(431);
  });
});
