// Live checks of openapi.yaml against a running gateway: every documented path and method is
// served (not the router's "No A2A operation" 404 nor a 405), answers with a status the
// document lists for it, in a documented media type, with a body that validates against the
// documented schema (JSON Schema 2020-12, as OpenAPI 3.1 defines it, via ajv), and the first
// Server-Sent Event of a stream validates against the documented event data. The static
// agreement of the document with the router's table is test/openapi.test.ts.
//
// The gateway here runs with authentication, limits and card signing off (the harness
// default), so the sweep sees no 401/403/429 and an empty /.well-known/jwks.json; those are
// checked against the document by test/openapi-security.test.ts.
//
// Fixtures: one completed task per tenant ("" and "acme"); tenant-prefixed paths use tenant
// "acme" with that tenant's task, so they reach the operation instead of TASK_NOT_FOUND.
// Push-notification config ids are "cfg-1".
//
// Beyond the sweep: a coordinator (the demo's `fanout` skill) has its assignments listed by
// the gateway extension ListTaskAssignments on both bindings, validated against the documented
// schema; JSON-RPC's transport refusals (405, 413, 415, and 503 from a gateway whose turn
// queue is full) are answered as documented, headers included; and every example in the
// document is valid against its own schema.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REST_ROUTES } from '../src/bindings/rest/routes.ts';
import { rpc, startTestGateway, textMessage, type TestGateway } from './support/harness.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const SPEC_PATH = fileURLToPath(new URL('../openapi.yaml', import.meta.url));
const DOC: Json = parse(readFileSync(SPEC_PATH, 'utf8')) as Json;
const DOC_ID = 'https://a2a-gateway.test/openapi.json';
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
const TENANT = 'acme';
const CONFIG_ID = 'cfg-1';
const V1 = { 'A2A-Version': '1.0' };

// ----- The document --------------------------------------------------------------------------

const escapePointer = (segment: string): string => encodeURIComponent(segment.replace(/~/g, '~0').replace(/\//g, '~1'));
const unescapePointer = (segment: string): string => decodeURIComponent(segment).replace(/~1/g, '/').replace(/~0/g, '~');

/** Follows `$ref`s (local ones only) from the object at `pointer`; returns the target and its pointer. */
function deref(pointer: string): { node: Json; pointer: string } {
  let current = pointer;
  for (let hops = 0; hops < 10; hops++) {
    let node: unknown = DOC;
    for (const segment of current.split('/').slice(1)) node = (node as Json | undefined)?.[unescapePointer(segment)];
    if (node === undefined || node === null || typeof node !== 'object') throw new Error(`openapi.yaml has nothing at #${current}`);
    const ref = (node as Json).$ref;
    if (typeof ref !== 'string') return { node: node as Json, pointer: current };
    if (!ref.startsWith('#/')) throw new Error(`non-local $ref ${ref} at #${current}`);
    current = ref.slice(1);
  }
  throw new Error(`$ref loop at #${pointer}`);
}

interface DocumentedOperation {
  method: string;
  path: string;
  operationId: string;
  pointer: string;
  operation: Json;
}

// The admin API (/admin/v1) needs a running control plane with resources to act on: test/admin-api*.test.ts serve it.
const OPERATIONS: DocumentedOperation[] = Object.entries(DOC.paths as Json).filter(([path]) => !path.startsWith('/admin/v1/')).flatMap(([path, item]) =>
  HTTP_METHODS.filter((method) => (item as Json)[method] !== undefined).map((method) => ({
    method: method.toUpperCase(),
    path,
    operationId: String((item as Json)[method].operationId),
    pointer: `/paths/${escapePointer(path)}/${method}`,
    operation: (item as Json)[method] as Json,
  })),
);

const ajv = new Ajv2020({ strict: false, allErrors: true });
// The formats openapi.yaml uses; an unknown format would otherwise be ignored with a warning.
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;
ajv.addFormat('date-time', { type: 'string', validate: (value: string) => RFC3339.test(value) && !Number.isNaN(Date.parse(value)) });
ajv.addFormat('uri', {
  type: 'string',
  validate: (value: string) => {
    try {
      return /^[a-z][a-z0-9+.-]*:/i.test(value) && new URL(value).href.length > 0;
    } catch {
      return false;
    }
  },
});
ajv.addFormat('int32', { type: 'number', validate: (value: number) => Number.isInteger(value) && value >= -(2 ** 31) && value < 2 ** 31 });
// The whole document is the schema resource, so `#/components/schemas/...` refs resolve in it.
ajv.addSchema({ ...DOC, $id: DOC_ID });

const validators = new Map<string, ValidateFunction>();
function validatorAt(pointer: string): ValidateFunction {
  let validate = validators.get(pointer);
  if (validate === undefined) {
    const found = ajv.getSchema(`${DOC_ID}#${pointer}`);
    if (found === undefined) throw new Error(`no schema at #${pointer}`);
    validate = found;
    validators.set(pointer, validate);
  }
  return validate;
}

/** Validates `value` against the schema at `pointer`; returns ajv's errors as text ('' when valid). */
function schemaErrors(pointer: string, value: unknown): string {
  const validate = validatorAt(pointer);
  return validate(value) ? '' : ajv.errorsText(validate.errors, { separator: '\n' });
}

const schemaPointer = (name: string): string => `/components/schemas/${name}`;

/** The documented response for a status: exact code, then `4XX`-style range, then `default`. */
function documentedResponse(operation: DocumentedOperation, status: number): { node: Json; pointer: string } | undefined {
  const responses = operation.operation.responses as Json;
  const key = [String(status), `${String(status)[0]}XX`, `${String(status)[0]}xx`, 'default'].find((k) => responses[k] !== undefined);
  return key === undefined ? undefined : deref(`${operation.pointer}/responses/${escapePointer(key)}`);
}

// ----- Requests ------------------------------------------------------------------------------

interface Observed {
  status: number;
  headers: Headers;
  /** The media type without parameters, '' when absent. */
  mediaType: string;
  text: string;
  /** The first Server-Sent Event of a `text/event-stream` answer. */
  firstEvent: EventSourceMessage | undefined;
  /** Whether the server ended the stream within `lingerMs` after its first event. */
  endedAfterFirst: boolean;
}

/**
 * Sends a request; a `text/event-stream` answer is read up to its first event, then the
 * connection is aborted (the task goes on: a connection is not a turn).
 */
async function send(
  url: string,
  method: string,
  options: { body?: unknown; headers?: Record<string, string>; lingerMs?: number } = {},
): Promise<Observed> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error(`no answer from ${method} ${url} in 20 s`)), 20_000);
  try {
    const headers: Record<string, string> = { ...V1, ...(options.headers ?? {}) };
    const init: RequestInit = { method, headers, signal: controller.signal };
    if (options.body !== undefined) {
      headers['Content-Type'] ??= 'application/json';
      init.body = JSON.stringify(options.body);
    }
    const response = await fetch(url, init);
    const mediaType = (response.headers.get('content-type') ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
    if (mediaType !== 'text/event-stream') {
      return { status: response.status, headers: response.headers, mediaType, text: await response.text(), firstEvent: undefined, endedAfterFirst: false };
    }
    // Headers are in: read only until the first complete event, then hang up.
    let firstEvent: EventSourceMessage | undefined;
    let text = '';
    const parser = createParser({
      onEvent: (event) => {
        firstEvent ??= event;
      },
    });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    /** Reads one chunk; false once the server ended the stream. */
    const read = async (): Promise<boolean> => {
      const { done, value } = await reader.read();
      if (done) return false;
      const chunk = decoder.decode(value, { stream: true });
      text += chunk;
      parser.feed(chunk);
      return true;
    };
    let open = true;
    while (firstEvent === undefined && open) open = await read();
    if (open && options.lingerMs !== undefined) {
      // Keep listening a little: does the server end the stream on its own?
      let lingerTimer: NodeJS.Timeout | undefined;
      const expiry = new Promise<'expired'>((resolve) => {
        lingerTimer = setTimeout(() => resolve('expired'), options.lingerMs);
      });
      for (;;) {
        const next = read();
        next.catch(() => undefined); // the abort below rejects a read still pending
        const outcome = await Promise.race([next, expiry]);
        if (outcome === 'expired') break;
        if (!outcome) {
          open = false;
          break;
        }
      }
      clearTimeout(lingerTimer);
    }
    controller.abort();
    await reader.cancel().catch(() => undefined);
    return { status: response.status, headers: response.headers, mediaType, text, firstEvent, endedAfterFirst: !open };
  } finally {
    clearTimeout(timer);
  }
}

let gw: TestGateway;
/** A completed task of the default tenant ('') and of tenant "acme". */
const completed: Record<string, { id: string; contextId: string }> = {};

/** Runs a blocking SendMessage over JSON-RPC and returns the task once it is `state`. */
async function taskIn(state: string, text: string, tenant: string | undefined): Promise<{ id: string; contextId: string }> {
  const params = { message: textMessage(text), ...(tenant === undefined ? {} : { tenant }) };
  const { status, body } = await rpc(gw.jsonRpcUrl, 'SendMessage', params);
  expect(status).toBe(200);
  const task = (body.result as Json | undefined)?.task as Json | undefined;
  expect(task?.status?.state, JSON.stringify(body)).toBe(state);
  return { id: task?.id as string, contextId: task?.contextId as string };
}

/** The concrete URL for a documented path: tenant "acme", that tenant's task, config "cfg-1". */
function concretePath(path: string): string {
  const tenant = path.includes('{tenant}') ? TENANT : '';
  const taskId = completed[tenant]?.id;
  if (taskId === undefined) throw new Error(`no fixture task for tenant "${tenant}"`);
  const concrete = path
    .replace('{tenant}', encodeURIComponent(TENANT))
    .replace(/\/pushNotificationConfigs\/\{id\}/, `/pushNotificationConfigs/${encodeURIComponent(CONFIG_ID)}`)
    .replace(/\{(id|taskId)\}/g, encodeURIComponent(taskId));
  if (/[{}]/.test(concrete)) throw new Error(`openapi.yaml path ${path} has a parameter this test does not fill in`);
  return concrete;
}

/** A minimal valid body for an operation whose request body is required, by its schema. */
function requestBodyFor(operation: DocumentedOperation): unknown {
  if (operation.operation.requestBody === undefined) return undefined;
  const { node: requestBody, pointer } = deref(`${operation.pointer}/requestBody`);
  if (requestBody.required !== true) return undefined;
  const schemaRef = String(requestBody.content?.['application/json']?.schema?.$ref ?? '');
  let body: unknown;
  switch (schemaRef) {
    case '#/components/schemas/SendMessageRequest':
      body = { message: textMessage('echo hi'), configuration: { returnImmediately: true } };
      break;
    case '#/components/schemas/TaskPushNotificationConfig':
      body = { url: 'https://example.com/hook' };
      break;
    case '#/components/schemas/CreateSubscriptionRequest':
      body = { url: 'https://example.com/hook' };
      break;
    case '#/components/schemas/CreateScheduleRequest':
      body = { message: { parts: [{ text: 'echo hi' }] }, cron: '0 9 * * *' };
      break;
    case '#/components/schemas/McpMessage':
      body = { jsonrpc: '2.0', id: 1, method: 'ping' };
      break;
    case '#/components/schemas/JsonRpcRequest':
      body = { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: completed['']?.id } };
      break;
    default:
      throw new Error(`${operation.operationId}: no test body for a required request body of schema ${schemaRef || '(inline)'}`);
  }
  // The test's own request must be one the document accepts.
  expect(schemaErrors(`${pointer}/content/application~1json/schema`, body), `request body of ${operation.operationId}`).toBe('');
  return body;
}

// ----- Assertions ----------------------------------------------------------------------------

const ROUTER_MISS = /No A2A operation|Nothing at/;

/** Operations whose 2xx body (or first event) was validated against the document. */
const validated2xx = new Set<string>();
/** What each operation of the sweep answered, for the negative controls. */
const observations = new Map<string, Observed>();

function expectServedAsDocumented(operation: DocumentedOperation, observed: Observed): void {
  const label = `${operation.method} ${operation.path} (${operation.operationId}) answered ${observed.status}: ${observed.text.slice(0, 400)}`;

  // 1. The server has the route.
  expect(observed.status, label).not.toBe(405);
  if (observed.status === 404) expect(observed.text, label).not.toMatch(ROUTER_MISS);

  // 2. The status is one the document lists.
  const response = documentedResponse(operation, observed.status);
  expect(response, `${label}\n(documented: ${Object.keys(operation.operation.responses as Json).join(', ')})`).toBeDefined();
  if (response === undefined) return;

  // The media type is one the document lists for that status; no content means no body.
  const content = response.node.content as Json | undefined;
  if (content === undefined) {
    expect(observed.text, `${label}: documented without content, but has a body`).toBe('');
    return;
  }
  expect(Object.keys(content), label).toContain(observed.mediaType);

  // 3. The body validates against the documented schema (errors too: they are documented).
  const mediaPointer = `${response.pointer}/content/${escapePointer(observed.mediaType)}`;
  if (observed.mediaType === 'application/json') {
    let body: unknown;
    expect(() => (body = JSON.parse(observed.text)), label).not.toThrow();
    const errors = schemaErrors(`${mediaPointer}/schema`, body);
    expect(errors, `${label}\nschema errors: ${errors}`).toBe('');
    if (observed.status >= 200 && observed.status < 300) validated2xx.add(operation.operationId);
  } else if (observed.mediaType === 'text/event-stream') {
    const eventSchema = content[observed.mediaType]['x-sse-event-data'] as Json | undefined;
    expect(eventSchema, `${label}: no x-sse-event-data schema documented`).toBeDefined();
    expect(observed.firstEvent, `${label}: the stream sent no event`).toBeDefined();
    const data = JSON.parse(observed.firstEvent?.data ?? 'null') as unknown;
    const errors = schemaErrors(deref(`${mediaPointer}/x-sse-event-data`).pointer, data);
    expect(errors, `${label}\nevent schema errors: ${errors}`).toBe('');
    // The documented example shows whether events carry an SSE `id:` (a Last-Event-ID to resume from).
    const example = content[observed.mediaType].example as unknown;
    expect(typeof example, `${label}: no text/event-stream example documented`).toBe('string');
    const documentedIds = /^id: ?\S/m.test(example as string);
    expect((observed.firstEvent?.id ?? '') !== '', `${label}: the example ${documentedIds ? 'shows' : 'shows no'} \`id:\` lines`).toBe(documentedIds);
    if (observed.status >= 200 && observed.status < 300) validated2xx.add(operation.operationId);
  }
}

/**
 * A refusal is one the document lists for the operation: its status, every required documented
 * header present and every documented header valid, a documented media type and a valid body.
 * (Unlike expectServedAsDocumented, a 405 is allowed: JSON-RPC documents one.)
 */
function expectRefusalAsDocumented(operation: DocumentedOperation, observed: Observed): void {
  const label = `${operation.method} ${operation.path} answered ${observed.status}: ${observed.text.slice(0, 400)}`;
  const response = documentedResponse(operation, observed.status);
  expect(response, `${label} (not documented)`).toBeDefined();
  if (response === undefined) return;
  for (const name of Object.keys((response.node.headers ?? {}) as Json)) {
    const { node: header, pointer } = deref(`${response.pointer}/headers/${escapePointer(name)}`);
    const value = observed.headers.get(name);
    if (header.required === true) expect(value, `${label}: documented header ${name} is required`).not.toBeNull();
    if (value === null) continue;
    const typed = header.schema?.type === 'integer' ? Number(value) : value;
    const errors = schemaErrors(`${pointer}/schema`, typed);
    expect(errors, `${label}: header ${name}: ${value}\n${errors}`).toBe('');
  }
  const content = response.node.content as Json | undefined;
  expect(Object.keys(content ?? {}), label).toContain(observed.mediaType);
  let body: unknown;
  expect(() => (body = JSON.parse(observed.text)), label).not.toThrow();
  const errors = schemaErrors(`${response.pointer}/content/${escapePointer(observed.mediaType)}/schema`, body);
  expect(errors, `${label}\nschema errors: ${errors}`).toBe('');
}

// ----- Tests ---------------------------------------------------------------------------------

beforeAll(async () => {
  gw = await startTestGateway({ name: 'openapi-live' });
  completed[''] = await taskIn('TASK_STATE_COMPLETED', 'echo hi', undefined);
  completed[TENANT] = await taskIn('TASK_STATE_COMPLETED', 'echo hi', TENANT);
});

afterAll(async () => {
  await gw?.close();
});

describe('openapi.yaml against the live gateway', () => {
  it('documents a non-trivial set of operations', () => {
    // Agent card, JWKS, liveness, readiness, metrics, the agent list, JSON-RPC, MCP, and every HTTP+JSON route with and without /{tenant}.
    expect(REST_ROUTES.length).toBeGreaterThanOrEqual(12);
    expect(OPERATIONS.length).toBe(8 + REST_ROUTES.length * 2);
  });

  for (const operation of OPERATIONS) {
    it(`${operation.method} ${operation.path} (${operation.operationId}) is served as documented`, async () => {
      const body = requestBodyFor(operation);
      const observed = await send(`${gw.url}${concretePath(operation.path)}`, operation.method, { body });
      observations.set(operation.operationId, observed);
      expectServedAsDocumented(operation, observed);
    });
  }

  it('validated a 2xx body or event of every operation that can succeed here', () => {
    // Push notifications and the extended card are not supported (400 by design); cancel and
    // subscribe of a completed task are refused (spec 3.1.5, 3.1.6). Everything else succeeds.
    const expected = [
      'GetAgentCard',
      'GetJsonWebKeySet',
      'Liveness',
      'Readiness',
      'JsonRpc',
      'SendMessage',
      'SendStreamingMessage',
      'ListTasks',
      'GetTask',
      'SendMessageTenant',
      'SendStreamingMessageTenant',
      'ListTasksTenant',
      'GetTaskTenant',
      // The gateway extension: a task that delegated nothing has an empty list.
      'ListTaskAssignments',
      'ListTaskAssignmentsTenant',
    ];
    expect([...validated2xx].sort()).toEqual(expect.arrayContaining(expected.sort()));
  });

  it('streams a live task from every subscribe route as documented (200, event ids, StreamResponse)', async () => {
    // The sweep subscribes to completed tasks (refused, 400); a task waiting for input is live.
    const waiting: Record<string, { id: string }> = {
      '': await taskIn('TASK_STATE_INPUT_REQUIRED', 'dialogue', undefined),
      [TENANT]: await taskIn('TASK_STATE_INPUT_REQUIRED', 'dialogue', TENANT),
    };
    const subscribes = OPERATIONS.filter((op) => op.operationId.startsWith('SubscribeToTask'));
    expect(subscribes.map((op) => op.operationId).sort()).toEqual(['SubscribeToTask', 'SubscribeToTaskGet', 'SubscribeToTaskGetTenant', 'SubscribeToTaskTenant']);
    for (const operation of subscribes) {
      const tenant = operation.path.includes('{tenant}') ? TENANT : '';
      const path = operation.path.replace('{tenant}', TENANT).replace('{id}', waiting[tenant]?.id as string);
      const observed = await send(`${gw.url}${path}`, operation.method, { lingerMs: 500 });
      expect(observed.status, `${operation.operationId}: ${observed.text.slice(0, 300)}`).toBe(200);
      // Spec 3.1.6: the stream ends at a terminal state only; an interrupted task keeps it open.
      expect(observed.endedAfterFirst, `${operation.operationId} ended the stream of an INPUT_REQUIRED task`).toBe(false);
      expectServedAsDocumented(operation, observed);
      const first = JSON.parse(observed.firstEvent?.data ?? '{}') as Json;
      expect(first.task?.id, operation.operationId).toBe(waiting[tenant]?.id);
      expect(first.task?.status?.state, operation.operationId).toBe('TASK_STATE_INPUT_REQUIRED');
    }
    // Whereas SendStreamingMessage ends its stream at INPUT_REQUIRED (as documented), which
    // also shows the check above can see a stream end.
    const streamed = await send(`${gw.restUrl}/message:stream`, 'POST', { body: { message: textMessage('dialogue') }, lingerMs: 15_000 });
    expect(streamed.status).toBe(200);
    expect(streamed.endedAfterFirst, streamed.text).toBe(true);
    expect(streamed.text).toContain('TASK_STATE_INPUT_REQUIRED');
  });

  it('streams JSON-RPC SendStreamingMessage as documented (JsonRpcStreamResponse events)', async () => {
    const operation = OPERATIONS.find((op) => op.operationId === 'JsonRpc') as DocumentedOperation;
    const body = { jsonrpc: '2.0', id: 'stream-1', method: 'SendStreamingMessage', params: { message: textMessage('echo hi') } };
    expect(schemaErrors(schemaPointer('JsonRpcRequest'), body)).toBe('');
    const observed = await send(`${gw.url}/a2a/jsonrpc`, 'POST', { body });
    expect(observed.status).toBe(200);
    expect(observed.mediaType).toBe('text/event-stream');
    expectServedAsDocumented(operation, observed);
    const first = JSON.parse(observed.firstEvent?.data ?? '{}') as Json;
    expect(first.id).toBe('stream-1');
    expect(first.result?.task?.id).toEqual(expect.any(String));
  });

  it('lists a coordinator’s assignments as documented (ListTaskAssignments, a gateway extension), on both bindings', async () => {
    // "fanout 2 a b c d": two specialists ("stream a b", "stream c d"), then a reviewer.
    const coordinators: Record<string, { id: string }> = {
      '': await taskIn('TASK_STATE_COMPLETED', 'fanout 2 a b c d', undefined),
      [TENANT]: await taskIn('TASK_STATE_COMPLETED', 'fanout 2 a b c d', TENANT),
    };
    const operations = OPERATIONS.filter((op) => op.operationId.startsWith('ListTaskAssignments'));
    expect(operations.map((op) => op.operationId).sort()).toEqual(['ListTaskAssignments', 'ListTaskAssignmentsTenant']);
    const rpcOperation = OPERATIONS.find((op) => op.operationId === 'JsonRpc') as DocumentedOperation;
    const rpcCall = (params: Json, id: string): Promise<Observed> =>
      send(`${gw.url}/a2a/jsonrpc`, 'POST', { body: { jsonrpc: '2.0', id, method: 'ListTaskAssignments', params } });

    for (const [tenant, coordinator] of Object.entries(coordinators)) {
      const operation = operations.find((op) => op.path.includes('{tenant}') === (tenant !== '')) as DocumentedOperation;
      const url = operation.path.replace('{tenant}', TENANT).replace('{id}', encodeURIComponent(coordinator.id));
      const observed = await send(`${gw.url}${url}`, 'GET');
      expect(observed.status, `${operation.operationId}: ${observed.text}`).toBe(200);
      expectServedAsDocumented(operation, observed);
      const listed = JSON.parse(observed.text) as Json;
      expect(listed.taskId).toBe(coordinator.id);
      const assignments = listed.assignments as Json[];
      expect(assignments.map((a) => [a.delegation, a.index, a.role, a.kind]), operation.operationId).toEqual([
        ['fanout', 0, 'specialist', 'work'],
        ['fanout', 1, 'specialist', 'work'],
        ['fanout#review', 0, 'reviewer', 'review'],
      ]);
      for (const assignment of assignments) {
        expect(assignment, operation.operationId).toMatchObject({ state: 'completed', taskState: 'TASK_STATE_COMPLETED' });
        expect(Date.parse(assignment.queuedAt as string)).toBeLessThanOrEqual(Date.parse(assignment.startedAt as string));
        expect(Date.parse(assignment.startedAt as string)).toBeLessThanOrEqual(Date.parse(assignment.settledAt as string));
      }
      // Slots are granted first in, first out, and counted per coordinator.
      expect(assignments.map((a) => a.startOrder)).toEqual([1, 2, 3]);

      // Each assignment is an ordinary task of the caller, linked to its coordinator, which delegated nothing itself.
      for (const assignment of assignments) {
        const childUrl = `${gw.url}/a2a/rest${tenant === '' ? '' : `/${TENANT}`}/tasks/${encodeURIComponent(assignment.taskId as string)}`;
        const child = JSON.parse((await send(childUrl, 'GET')).text) as Json;
        expect(child.id).toBe(assignment.taskId);
        expect(child.metadata?.a2aGateway?.parentTaskId).toBe(coordinator.id);
        const own = await send(`${childUrl}/assignments`, 'GET');
        expectServedAsDocumented(operation, own);
        expect(JSON.parse(own.text)).toEqual({ taskId: assignment.taskId, assignments: [] });
      }

      // JSON-RPC answers the same list (ListTaskAssignmentsResponse as result).
      const viaRpc = await rpcCall(tenant === '' ? { id: coordinator.id } : { id: coordinator.id, tenant }, `assign-${tenant}`);
      expect(viaRpc.status).toBe(200);
      expectServedAsDocumented(rpcOperation, viaRpc);
      const rpcBody = JSON.parse(viaRpc.text) as Json;
      expect(rpcBody.id).toBe(`assign-${tenant}`);
      expect(schemaErrors(schemaPointer('ListTaskAssignmentsResponse'), rpcBody.result)).toBe('');
      expect(rpcBody.result).toEqual(listed);
    }

    // A task that delegated nothing: 200 with an empty list.
    const plain = await send(`${gw.restUrl}/tasks/${encodeURIComponent(completed['']?.id as string)}/assignments`, 'GET');
    expect(JSON.parse(plain.text)).toEqual({ taskId: completed['']?.id, assignments: [] });

    // An unknown task, and another tenant's coordinator: 404 TASK_NOT_FOUND, like GetTask.
    for (const [tenant, id] of [['', 'no-such-task'], [TENANT, 'no-such-task'], [TENANT, coordinators['']?.id as string]] as const) {
      const operation = operations.find((op) => op.path.includes('{tenant}') === (tenant !== '')) as DocumentedOperation;
      const observed = await send(`${gw.url}${operation.path.replace('{tenant}', TENANT).replace('{id}', encodeURIComponent(id))}`, 'GET');
      expect(observed.status, `${operation.operationId} ${id}: ${observed.text}`).toBe(404);
      expectServedAsDocumented(operation, observed);
      expect((JSON.parse(observed.text) as Json).error.details[0].reason).toBe('TASK_NOT_FOUND');
    }
    const missing = await rpcCall({ id: 'no-such-task' }, 'assign-404');
    expect(missing.status).toBe(200);
    expectServedAsDocumented(rpcOperation, missing);
    expect((JSON.parse(missing.text) as Json).error.code).toBe(-32001);

    // Negative controls: the documented schema rejects assignments that break its rules.
    const sample = (JSON.parse((await send(`${gw.restUrl}/tasks/${encodeURIComponent(coordinators['']?.id as string)}/assignments`, 'GET')).text) as Json).assignments[0] as Json;
    expect(schemaErrors(schemaPointer('TaskAssignment'), sample)).toBe('');
    const doctored: Array<[string, (a: Json) => void, RegExp]> = [
      ['an unknown state', (a) => (a.state = 'done'), /state must be equal to one of the allowed values/],
      ['an unknown kind', (a) => (a.kind = 'other'), /kind must be equal to one of the allowed values/],
      ['a start order of 0', (a) => (a.startOrder = 0), /startOrder must be >= 1/],
      ['no queuedAt', (a) => delete a.queuedAt, /must have required property 'queuedAt'/],
      ['a settled assignment without settledAt', (a) => delete a.settledAt, /must have required property 'settledAt'/],
      ['a started assignment without startOrder', (a) => delete a.startOrder, /must have property startOrder when property startedAt is present/],
      ['a running assignment with settledAt', (a) => (a.state = 'running'), /must NOT be valid/],
      ['an input-required assignment without its question', (a) => (a.state = 'input-required'), /must have required property 'question'/],
      ['a question outside input-required', (a) => (a.question = 'why?'), /must NOT be valid/],
      ['an undocumented property', (a) => (a.message = 'done'), /must NOT have additional properties/],
      ['a task state that is no TaskState', (a) => (a.taskState = 'completed'), /taskState must be equal to one of the allowed values/],
    ];
    for (const [what, edit, reason] of doctored) {
      const assignment = structuredClone(sample);
      edit(assignment);
      expect(schemaErrors(schemaPointer('TaskAssignment'), assignment), what).toMatch(reason);
    }
  });

  it('answers JSON-RPC transport refusals as documented: 405 and 413 with -32600, 415 with -32005 and 503 with Retry-After', async () => {
    const operation = OPERATIONS.find((op) => op.operationId === 'JsonRpc') as DocumentedOperation;
    const request = { jsonrpc: '2.0', id: 'transport', method: 'GetTask', params: { id: completed['']?.id } };

    const wrongMethod = await send(`${gw.url}/a2a/jsonrpc`, 'GET');
    expect(wrongMethod.status, wrongMethod.text).toBe(405);
    expect(wrongMethod.headers.get('allow')).toBe('POST');
    expectRefusalAsDocumented(operation, wrongMethod);

    const tooLarge = await send(`${gw.url}/a2a/jsonrpc`, 'POST', {
      body: { jsonrpc: '2.0', id: 'big', method: 'SendMessage', params: { message: textMessage('x'.repeat(gw.config.maxBodyBytes + 1)) } },
    });
    expect(tooLarge.status, tooLarge.text.slice(0, 300)).toBe(413);
    expectRefusalAsDocumented(operation, tooLarge);

    const wrongType = await send(`${gw.url}/a2a/jsonrpc`, 'POST', { body: request, headers: { 'Content-Type': 'text/plain' } });
    expect(wrongType.status, wrongType.text).toBe(415);
    expectRefusalAsDocumented(operation, wrongType);
    for (const observed of [wrongMethod, tooLarge]) {
      expect(JSON.parse(observed.text), 'the request was not read: id null').toMatchObject({ id: null, error: { code: -32600 } });
    }
    expect(JSON.parse(wrongType.text), 'the request was not read: id null').toMatchObject({ id: null, error: { code: -32005 } });

    // 503: a gateway without workers whose turn queue holds its one allowed turn.
    const busy = await startTestGateway({ name: 'openapi-live-busy', inProcessWorker: false, config: { maxQueuedTurns: 1 } });
    try {
      const queued = await rpc(busy.jsonRpcUrl, 'SendMessage', { message: textMessage('echo queued'), configuration: { returnImmediately: true } });
      expect(queued.status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 300)); // the queue depth is re-read at most every 200 ms
      const refused = await send(`${busy.url}/a2a/jsonrpc`, 'POST', { body: { jsonrpc: '2.0', id: 'busy', method: 'SendMessage', params: { message: textMessage('echo one too many') } } });
      expect(refused.status, refused.text).toBe(503);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expectRefusalAsDocumented(operation, refused);
      expect(JSON.parse(refused.text)).toMatchObject({ id: 'busy', error: { code: -32603 } });
      // The HTTP+JSON binding documents its 503 the same way (Retry-After required).
      const restOperation = OPERATIONS.find((op) => op.operationId === 'SendMessage') as DocumentedOperation;
      const restRefused = await send(`${busy.restUrl}/message:send`, 'POST', { body: { message: textMessage('echo rest') } });
      expect(restRefused.status, restRefused.text).toBe(503);
      expectRefusalAsDocumented(restOperation, restRefused);
    } finally {
      await busy.close();
    }

    // Negative controls: what the checks above reject.
    expect(() => expectRefusalAsDocumented(operation, { ...wrongMethod, headers: new Headers() })).toThrow(/Allow is required/);
    expect(() => expectRefusalAsDocumented(operation, { ...wrongMethod, headers: new Headers({ allow: 'GET, POST' }) })).toThrow(/must be equal to constant/);
    expect(() => expectRefusalAsDocumented(operation, { ...wrongType, text: wrongMethod.text })).toThrow(/must contain at least 1 valid item/);
    expect(() => expectRefusalAsDocumented(operation, { ...wrongType, text: JSON.stringify({ ...JSON.parse(wrongType.text), id: 'x' }) })).toThrow(/id must be null/);
    expect(() => expectRefusalAsDocumented(operation, { ...wrongType, status: 418 })).toThrow(/not documented/);
  });

  it('documents examples that are valid against their own schemas', () => {
    let checked = 0;
    const failures: string[] = [];
    const walk = (node: unknown, pointer: string): void => {
      if (node === null || typeof node !== 'object') return;
      const item = node as Json;
      if (typeof item.schema === 'object' && item.schema !== null) {
        const examples: Array<[string, unknown]> = [];
        if ('example' in item) examples.push(['example', item.example]);
        for (const name of Object.keys((item.examples ?? {}) as Json)) examples.push([`examples/${name}`, deref(`${pointer}/examples/${escapePointer(name)}`).node.value]);
        for (const [where, value] of examples) {
          checked += 1;
          const errors = schemaErrors(`${pointer}/schema`, value);
          if (errors !== '') failures.push(`#${pointer}/${where}: ${errors}`);
        }
      }
      for (const [key, value] of Object.entries(item)) {
        if (key === 'example' || key === 'examples') continue;
        walk(value, `${pointer}/${escapePointer(key)}`);
      }
    };
    walk(DOC.paths, '/paths');
    walk(DOC.components, '/components');
    expect(failures).toEqual([]);
    expect(checked).toBeGreaterThanOrEqual(20);
  });

  it('documents SSE examples whose data validates against the documented event schema', () => {
    let checked = 0;
    const walk = (node: unknown, pointer: string): void => {
      if (node === null || typeof node !== 'object') return;
      const media = node as Json;
      if (typeof media['x-sse-event-data'] === 'object' && typeof media.example === 'string') {
        const eventPointer = deref(`${pointer}/x-sse-event-data`).pointer;
        const data = (media.example as string).split('\n').filter((line) => line.startsWith('data:'));
        expect(data.length, pointer).toBeGreaterThan(0);
        for (const line of data) {
          expect(schemaErrors(eventPointer, JSON.parse(line.slice('data:'.length))), `${pointer}: ${line}`).toBe('');
        }
        checked += 1;
      }
      for (const [key, value] of Object.entries(node)) walk(value, `${pointer}/${escapePointer(key)}`);
    };
    walk(DOC, '');
    // JSON-RPC's stream, MessageEventStream, TaskEventStream and the operators' OperatorWatchStream.
    expect(checked).toBe(4);
  });

  it('rejects doctored answers (negative controls for the checks above)', () => {
    const op = (id: string): DocumentedOperation => OPERATIONS.find((o) => o.operationId === id) as DocumentedOperation;
    const seen = (id: string): Observed => {
      const observed = observations.get(id);
      expect(observed, `the sweep recorded ${id}`).toBeDefined();
      return observed as Observed;
    };
    const withJson = (observed: Observed, edit: (body: Json) => void): Observed => {
      const body = JSON.parse(observed.text) as Json;
      edit(body);
      return { ...observed, text: JSON.stringify(body) };
    };
    const getTask = seen('GetTask');
    const streamed = seen('SendStreamingMessage');
    expect(() => expectServedAsDocumented(op('GetTask'), getTask)).not.toThrow();
    expect(() => expectServedAsDocumented(op('SendStreamingMessage'), streamed)).not.toThrow();
    // Each doctored answer must fail for its own reason (the pattern), not for an incidental one.
    const doctored: Array<[string, DocumentedOperation, Observed, RegExp]> = [
      ['an undocumented status', op('GetTask'), { ...getTask, status: 418 }, /documented: 200, /],
      ['an undocumented media type', op('GetTask'), { ...getTask, mediaType: 'text/plain' }, /to include 'text\/plain'/],
      ['a router 404', op('GetTask'), { ...getTask, status: 404, text: '{"error":{"code":404,"status":"NOT_FOUND","message":"No A2A operation at GET /x"}}' }, /not to match/],
      ['a 405', op('GetTask'), { ...getTask, status: 405 }, /expected 405 not to be 405/],
      ['a missing required property', op('GetTask'), withJson(getTask, (b) => delete b.status), /data must have required property/],
      ['a bad enum deep inside a $ref', op('GetTask'), withJson(getTask, (b) => (b.status.state = 'TASK_STATE_DONE')), /data\/status\/state must be equal to one/],
      ['a bad date-time', op('GetTask'), withJson(getTask, (b) => (b.status.timestamp = 'yesterday')), /data\/status\/timestamp must match format/],
      ['a part with two contents', op('GetTask'), withJson(getTask, (b) => (b.artifacts[0].parts[0].url = 'https://example.com/x')), /data\/artifacts\/0\/parts\/0 must/],
      ['a list without nextPageToken', op('ListTasks'), withJson(seen('ListTasks'), (b) => delete b.nextPageToken), /data must have required property/],
      ['a non-empty delete answer', op('DeleteTaskPushNotificationConfig'), { ...seen('GetTask'), status: 200 }, /data must NOT have more than 0 properties/],
      ['an error without status', op('CancelTask'), withJson(seen('CancelTask'), (b) => delete b.error.status), /data\/error must have required property/],
      ['an agent card without interfaces', op('GetAgentCard'), withJson(seen('GetAgentCard'), (b) => delete b.supportedInterfaces), /data must have required property/],
      ['an event that is no StreamResponse', op('SendStreamingMessage'), { ...seen('SendStreamingMessage'), firstEvent: { id: '1-0', event: undefined, data: '{"task":{}}' } }, /data\/task must have required property/],
      ['an event without its id', op('SendStreamingMessage'), { ...streamed, firstEvent: { ...(streamed.firstEvent as EventSourceMessage), id: undefined } }, /the example shows `id:` lines/],
      ['a stream with no event', op('SendStreamingMessage'), { ...seen('SendStreamingMessage'), firstEvent: undefined }, /the stream sent no event/],
      ['a body on a 304', op('GetAgentCard'), { ...seen('GetAgentCard'), status: 304 }, /documented without content, but has a body/],
    ];
    for (const [what, operation, observed, reason] of doctored) {
      expect(() => expectServedAsDocumented(operation, observed), what).toThrow(reason);
    }
  });

  it('serves the agent card as AgentCard with caching headers, and 304 for a matching If-None-Match', async () => {
    const operation = OPERATIONS.find((op) => op.operationId === 'GetAgentCard');
    expect(operation).toBeDefined();
    const first = await send(`${gw.url}/.well-known/agent-card.json`, 'GET');
    expect(first.status).toBe(200);
    expect(first.mediaType).toBe('application/json');
    expect(schemaErrors(schemaPointer('AgentCard'), JSON.parse(first.text))).toBe('');
    const etag = first.headers.get('etag');
    expect(etag).toMatch(/^"[^"]+"$/); // strong
    expect(first.headers.get('cache-control')).toMatch(/max-age=\d+/);
    expect(first.headers.get('last-modified')).not.toBeNull();

    const second = await send(`${gw.url}/.well-known/agent-card.json`, 'GET', { headers: { 'If-None-Match': etag as string } });
    expect(second.status).toBe(304);
    expect(second.text).toBe('');
    expect(second.headers.get('etag')).toBe(etag);
    expect(second.headers.get('cache-control')).toBe(first.headers.get('cache-control'));
    expectServedAsDocumented(operation as DocumentedOperation, second);

    const stale = await send(`${gw.url}/.well-known/agent-card.json`, 'GET', { headers: { 'If-None-Match': '"not-the-etag"' } });
    expect(stale.status).toBe(200);
  });

  it('answers 404 or 405 for what the document does not list, which the checks above detect', async () => {
    const taskId = completed['']?.id as string;
    // A documented path template as a pattern for concrete paths ({name}: one segment, no ':').
    const templateRegExp = (template: string): RegExp =>
      new RegExp(`^${template.split(/\{[A-Za-z]+\}/).map((piece) => piece.replace(/[.*+?^$()|[\]\\]/g, '\\$&')).join('[^/:]+')}$`);
    // The pattern does find documented operations.
    expect(OPERATIONS.filter((op) => op.method === 'GET' && templateRegExp(op.path).test(`/a2a/rest/tasks/${taskId}`)).map((op) => op.operationId)).toEqual(['GetTask']);
    const misses: Array<[string, string, number, RegExp]> = [
      ['GET', '/a2a/rest/nope', 404, /No A2A operation/],
      ['GET', `/a2a/rest/${TENANT}/nope`, 404, /No A2A operation/],
      ['POST', '/a2a/rest/message:sendd', 404, /No A2A operation/],
      ['GET', '/a2a/nope', 404, /Nothing at/],
      ['DELETE', `/a2a/rest/tasks/${taskId}`, 405, /not allowed/],
    ];
    for (const [method, path, status, message] of misses) {
      const observed = await send(`${gw.url}${path}`, method);
      expect(observed.status, `${method} ${path}`).toBe(status);
      expect(observed.text, `${method} ${path}`).toMatch(message);
      // The document has no operation for it (matching its path templates)...
      const documented = OPERATIONS.filter((op) => op.method === method && templateRegExp(op.path).test(path));
      expect(documented.map((op) => op.operationId), `${method} ${path}`).toEqual([]);
      // ...and the route check rejects such an answer, whatever the document said about it.
      const pseudo: DocumentedOperation = { method, path, operationId: 'Undocumented', pointer: '/paths/none', operation: { responses: { default: {} } } };
      expect(() => expectServedAsDocumented(pseudo, observed), `${method} ${path}`).toThrow(/not to match|expected 405 not to be 405/);
    }
  });
});
