// openapi.yaml's security against the product. Statically: every A2A operation (the JSON-RPC
// endpoint and every /a2a/rest route) documents 401, 403 and 429 with its binding's error body,
// names the scope src/auth/scopes.ts requires of it, and the public routes clear `security`.
// Live, against a gateway with authentication ON (and one with a tiny rate limit): refusals
// over both bindings are answered with a status the document lists for that operation, with
// the documented headers (WWW-Authenticate, Accept-Signature, Retry-After) and a body that
// validates against the documented schema; a 403 for a missing scope challenges a bearer
// caller with RFC 6750 `insufficient_scope` naming the scope, and nobody else; and
// /.well-known/jwks.json (card signing on) validates against its documented schema and holds
// the key the agent card is signed with.
// Schemas come from the parser's `dereference` and are compiled with ajv (JSON Schema 2020-12).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dereference } from '@readme/openapi-parser';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { decodeProtectedHeader } from 'jose';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATIONS } from '../src/operations/registry.ts';

const OPERATION_SCOPES = OPERATIONS.scopes();
import { REST_ROUTES } from '../src/bindings/rest/routes.ts';
import { JSONRPC_PATH, REST_BASE_PATH } from '../src/protocol/endpoints.ts';
import { startTestGateway, textMessage, type TestGateway } from './support/harness.ts';
import { createTestIssuer, createTestPartner, type TestIssuer, type TestPartner } from './support/identity.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const SPEC_PATH = fileURLToPath(new URL('../openapi.yaml', import.meta.url));
/** The document as written ($refs intact), for what it names. */
const RAW: Json = parse(readFileSync(SPEC_PATH, 'utf8')) as Json;
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
const PUBLIC_PATHS = ['/.well-known/agent-card.json', '/.well-known/jwks.json', '/healthz', '/readyz'];
const TENANT_BASE = `${REST_BASE_PATH}/{tenant}`;
const V1 = { 'A2A-Version': '1.0' };
const REALM = 'realm="a2a-gateway"';

/** Every documented operation of the raw document. */
const RAW_OPERATIONS = Object.entries(RAW.paths as Json).flatMap(([path, item]) =>
  HTTP_METHODS.filter((method) => (item as Json)[method] !== undefined).map((method) => ({
    path,
    method,
    operation: (item as Json)[method] as Json,
  })),
);
const isA2A = (path: string): boolean => path === JSONRPC_PATH || path.startsWith(`${REST_BASE_PATH}/`);
/** The operations the document describes: its JSON-RPC methods and its HTTP+JSON routes' operations. */
const DOCUMENTED_OPERATIONS = [
  ...new Set([
    ...(RAW.components.schemas.JsonRpcMethod.enum as string[]),
    ...REST_ROUTES.filter((route) => (RAW.paths as Json)[`${REST_BASE_PATH}${route.path}`]?.[route.method.toLowerCase()] !== undefined).map((route) => route.operation),
  ]),
];
/** The scope the operation registry declares of each of `operations` (undefined: it requires none). */
const scopesOf = (operations: readonly string[]): Record<string, string | undefined> =>
  Object.fromEntries(operations.map((operation) => [operation, OPERATION_SCOPES[operation]]));

// ----- Schemas -------------------------------------------------------------------------------

/** The dereferenced document: every $ref replaced by its target (no cycles in this document). */
let DOC: Json;

const ajv = new Ajv2020({ strict: false, allErrors: true });
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;
ajv.addFormat('date-time', { type: 'string', validate: (value: string) => RFC3339.test(value) && !Number.isNaN(Date.parse(value)) });
ajv.addFormat('uri', { type: 'string', validate: (value: string) => URL.canParse(value) && /^[a-z][a-z0-9+.-]*:/i.test(value) });
ajv.addFormat('int32', { type: 'number', validate: (value: number) => Number.isInteger(value) && value >= -(2 ** 31) && value < 2 ** 31 });

const compiled = new Map<object, ValidateFunction>();
/** Validates `value` against a (dereferenced) schema object; ajv's errors as text, '' when valid. */
function schemaErrors(schema: Json, value: unknown): string {
  let validate = compiled.get(schema);
  if (validate === undefined) {
    validate = ajv.compile(schema);
    compiled.set(schema, validate);
  }
  return validate(value) ? '' : ajv.errorsText(validate.errors, { separator: '\n' });
}

/** The dereferenced response an operation documents for exactly this status. */
function documentedResponse(path: string, method: string, status: number): Json | undefined {
  const operation = (DOC.paths as Json)[path]?.[method.toLowerCase()] as Json | undefined;
  if (operation === undefined) throw new Error(`openapi.yaml documents no ${method} ${path}`);
  return (operation.responses as Json)[String(status)] as Json | undefined;
}

// ----- Requests ------------------------------------------------------------------------------

interface Observed {
  status: number;
  headers: Headers;
  mediaType: string;
  text: string;
}

/** One exchange read as text; a stream is never read (a refusal must not open one). */
async function send(url: string, method: string, options: { body?: unknown; rawBody?: string; headers?: Record<string, string> } = {}): Promise<Observed> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error(`no answer from ${method} ${url} in 20 s`)), 20_000);
  try {
    const headers: Record<string, string> = { ...V1, ...(options.headers ?? {}) };
    const body = options.rawBody ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
    if (body !== undefined) headers['Content-Type'] ??= 'application/json';
    const response = await fetch(url, { method, headers, signal: controller.signal, ...(body === undefined ? {} : { body }) });
    const mediaType = (response.headers.get('content-type') ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
    if (mediaType === 'text/event-stream') {
      controller.abort();
      return { status: response.status, headers: response.headers, mediaType, text: '<event stream>' };
    }
    return { status: response.status, headers: response.headers, mediaType, text: await response.text() };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The answer is one the document lists for `METHOD path` (a documented path template): its
 * status, every required documented header present and every documented header's value valid,
 * a documented media type, and a body valid against that status's schema.
 */
function expectAsDocumented(path: string, method: string, observed: Observed): void {
  const label = `${method} ${path} answered ${observed.status}: ${observed.text.slice(0, 400)}`;
  const response = documentedResponse(path, method, observed.status);
  expect(response, `${label}\n(not documented for this operation)`).toBeDefined();
  if (response === undefined) return;
  for (const [name, header] of Object.entries((response.headers ?? {}) as Json)) {
    const value = observed.headers.get(name);
    if (header.required === true) expect(value, `${label}: documented header ${name} is required`).not.toBeNull();
    if (value === null) continue;
    const typed = header.schema?.type === 'integer' ? Number(value) : value;
    const errors = schemaErrors(header.schema as Json, typed);
    expect(errors, `${label}: header ${name}: ${value}\n${errors}`).toBe('');
  }
  const content = response.content as Json | undefined;
  expect(content, `${label}: documented without content`).toBeDefined();
  expect(Object.keys(content ?? {}), label).toContain(observed.mediaType);
  let body: unknown;
  expect(() => (body = JSON.parse(observed.text)), label).not.toThrow();
  const errors = schemaErrors((content as Json)[observed.mediaType].schema as Json, body);
  expect(errors, `${label}\nschema errors: ${errors}`).toBe('');
}

let issuer: TestIssuer;
let partner: TestPartner;
/** Authentication on, a partner registered, card signing on; no limits. */
let gw: TestGateway;
/** Authentication on and a rate limit of one request per principal (then ~100 s to wait). */
let limited: TestGateway;
const tokens = { read: '', push: '', all: '' };

const bearer = (token: string): Record<string, string> => ({ Authorization: `Bearer ${token}` });
const rpcBody = (method: string, params: unknown, id: string | number = 1): Json => ({ jsonrpc: '2.0', id, method, params });

beforeAll(async () => {
  [DOC, issuer] = await Promise.all([dereference(SPEC_PATH, { dereference: { circular: false } }) as Promise<Json>, createTestIssuer()]);
  partner = createTestPartner('acme', ['a2a:read', 'a2a:write']);
  tokens.read = await issuer.token({ scope: 'a2a:read' });
  tokens.push = await issuer.token({ scope: 'a2a:push' });
  tokens.all = await issuer.token({ scope: 'a2a:admin' });
  [gw, limited] = await Promise.all([
    startTestGateway({
      name: 'openapi-security',
      config: { auth: { enabled: true, issuers: [issuer.config], partners: [partner.config] }, cardSigning: true },
    }),
    startTestGateway({
      name: 'openapi-security-limits',
      config: { auth: { enabled: true, issuers: [issuer.config] }, limits: { requestsPerSecond: 0.01, burst: 1, maxActiveTasks: 0 } },
    }),
  ]);
});

afterAll(async () => {
  await Promise.all([gw?.close(), limited?.close()]);
});

// ----- Static --------------------------------------------------------------------------------

describe('openapi.yaml documents the security it enforces', () => {
  it('declares the two schemes and requires one of them by default', () => {
    const schemes = RAW.components?.securitySchemes as Json;
    expect(Object.keys(schemes).sort()).toEqual(['bearer', 'partnerSignature']);
    expect(schemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
    expect(schemes.partnerSignature).toMatchObject({ type: 'apiKey', in: 'header', name: 'Signature' });
    for (const fact of ['ed25519', 'ecdsa-p256-sha256', '"@method"', '"@target-uri"', '"content-digest"', '`created`', '`keyid`', '`nonce`', 'RFC 9530']) {
      expect(schemes.partnerSignature.description as string, fact).toContain(fact);
    }
    expect(RAW.security).toEqual([{ bearer: [] }, { partnerSignature: [] }]);
  });

  it("states in the bearer scheme's scope table exactly the scopes src/auth/scopes.ts requires of the documented operations", () => {
    const description = RAW.components.securitySchemes.bearer.description as string;
    const table: Record<string, string> = {};
    for (const [, scope, operations] of description.matchAll(/^\| `(a2a:\w+)` \| ([^|]+) \|$/gm)) {
      for (const operation of (operations as string).split(',').map((o) => o.trim())) {
        if (operation !== 'all of the above') table[operation] = scope as string;
      }
    }
    expect(table).toEqual(scopesOf(DOCUMENTED_OPERATIONS));
    // a2a:admin grants everything, and alone the operators' extensions (listed after it).
    expect(description).toMatch(/^\| `a2a:admin` \| all of the above(, \w+)* \|$/m);
  });

  it('leaves exactly the public routes open (security: [])', () => {
    const open = RAW_OPERATIONS.filter(({ operation }) => Array.isArray(operation.security) && operation.security.length === 0).map(({ path }) => path);
    expect(open.sort()).toEqual([...PUBLIC_PATHS].sort());
    // Outside the bindings only the agent list (any authenticated caller), the MCP face and /metrics (a2a:admin) ask for credentials.
    // The admin API (/admin/v1) needs a2a:admin, like the agent list needs credentials (test/admin-api.test.ts).
    const notA2A = RAW_OPERATIONS.filter(({ path }) => !isA2A(path) && !path.startsWith('/admin/v1/')).map(({ path }) => path);
    expect(notA2A.sort(), 'every route outside the bindings but the agent list, /mcp and /metrics is public').toEqual([...PUBLIC_PATHS, '/agents', '/mcp', '/metrics'].sort());
  });

  it('documents 401, 403 and 429 with the binding-specific shared responses on every A2A operation', () => {
    // Which routes must be documented at all is test/openapi.test.ts's business.
    const a2a = RAW_OPERATIONS.filter(({ path }) => isA2A(path));
    expect(a2a.length).toBeGreaterThanOrEqual(25);
    const wrong: string[] = [];
    for (const { path, method, operation } of a2a) {
      const prefix = path === JSONRPC_PATH ? 'JsonRpc' : '';
      const want: Record<string, string> = {
        '401': `${prefix}Unauthenticated`,
        '403': `${prefix}PermissionDenied`,
        '429': `${prefix}TooManyRequests`,
      };
      for (const [status, name] of Object.entries(want)) {
        const ref = (operation.responses as Json)[status]?.$ref as string | undefined;
        if (ref !== `#/components/responses/${name}`) wrong.push(`${method.toUpperCase()} ${path} ${status}: ${String(ref)}, expected ${name}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('gives those responses their headers and their binding’s error body', () => {
    const responses = DOC.components.responses as Json;
    for (const name of ['Unauthenticated', 'JsonRpcUnauthenticated']) {
      expect(responses[name].headers['WWW-Authenticate'].required, name).toBe(true);
      expect(responses[name].headers['Accept-Signature'], name).toBeDefined();
    }
    for (const name of ['TooManyRequests', 'JsonRpcTooManyRequests']) expect(responses[name].headers['Retry-After'].required, name).toBe(true);
    // A 403 may challenge (a bearer caller without the scope), so its WWW-Authenticate is optional.
    for (const name of ['PermissionDenied', 'JsonRpcPermissionDenied']) {
      const header = responses[name].headers['WWW-Authenticate'] as Json;
      expect(header.required, name).toBe(false);
      expect(header.schema.pattern as string, name).toContain('error="insufficient_scope"');
      expect(schemaErrors(header.schema as Json, header.example), `${name}: its example`).toBe('');
    }
    // The raw document: REST bodies are ErrorStatus, JSON-RPC ones JsonRpcErrorResponse.
    const raw = RAW.components.responses as Json;
    for (const name of ['Unauthenticated', 'PermissionDenied', 'TooManyRequests']) {
      expect(raw[name].content['application/json'].schema.allOf[0].$ref, name).toBe('#/components/schemas/ErrorStatus');
      expect(raw[`JsonRpc${name}`].content['application/json'].schema.allOf[0].$ref, name).toBe('#/components/schemas/JsonRpcErrorResponse');
    }
    // Every example in those responses is valid against its own schema.
    for (const name of ['Unauthenticated', 'PermissionDenied', 'TooManyRequests']) {
      for (const full of [name, `JsonRpc${name}`]) {
        const media = responses[full].content['application/json'] as Json;
        expect(schemaErrors(media.schema as Json, media.example), full).toBe('');
      }
    }
  });

  it("pins in PermissionDeniedErrorInfo the reasons, and exactly the operations and scopes src/auth/scopes.ts can name", () => {
    const metadata = RAW.components.schemas.PermissionDeniedErrorInfo.allOf[1].properties.metadata as Json;
    const [scopeMissing, tenantMismatch] = metadata.oneOf as Json[];
    expect(scopeMissing?.properties.reason.const).toBe('SCOPE_MISSING');
    expect(scopeMissing?.required).toEqual(expect.arrayContaining(['reason', 'requiredScope', 'operation']));
    expect([...(scopeMissing?.properties.operation.enum as string[])].sort()).toEqual(Object.keys(OPERATION_SCOPES).sort());
    expect([...(scopeMissing?.properties.requiredScope.enum as string[])].sort()).toEqual([...new Set(Object.values(OPERATION_SCOPES))].sort());
    expect(tenantMismatch?.properties.reason.const).toBe('TENANT_MISMATCH');
  });

  it('names on every HTTP+JSON operation the scope it needs (a2a:admin as the alternative), and per method on JSON-RPC', () => {
    const wrong: string[] = [];
    let checked = 0;
    for (const route of REST_ROUTES) {
      const scope = OPERATION_SCOPES[route.operation];
      for (const base of [REST_BASE_PATH, TENANT_BASE]) {
        const operation = (RAW.paths as Json)[`${base}${route.path}`]?.[route.method.toLowerCase()] as Json | undefined;
        if (operation === undefined) continue; // an undocumented route fails test/openapi.test.ts
        checked += 1;
        const label = `${route.method} ${base}${route.path}`;
        if (operation?.['x-required-scope'] !== scope) wrong.push(`${label}: x-required-scope ${String(operation?.['x-required-scope'])}, expected ${scope}`);
        const expected = [{ bearer: [scope] }, { bearer: ['a2a:admin'] }, { partnerSignature: [scope] }, { partnerSignature: ['a2a:admin'] }];
        if (JSON.stringify(operation?.security) !== JSON.stringify(expected)) wrong.push(`${label}: security ${JSON.stringify(operation?.security)}`);
      }
    }
    expect(wrong).toEqual([]);
    expect(checked).toBeGreaterThanOrEqual(24);
    const rpc = (RAW.paths as Json)[JSONRPC_PATH].post as Json;
    // One entry per documented JSON-RPC method, each the scope the gateway requires.
    expect(rpc['x-required-scopes']).toEqual(scopesOf(RAW.components.schemas.JsonRpcMethod.enum as string[]));
    expect(rpc.security).toEqual([{ bearer: [] }, { partnerSignature: [] }]);
  });
});

// ----- Live ----------------------------------------------------------------------------------

describe('refusals of an authenticating gateway are served as documented', () => {
  it('401 without credentials, on HTTP+JSON routes and JSON-RPC, with both challenges', async () => {
    const challenge = `Bearer ${REALM}, Signature ${REALM}`;
    const cases: Array<[string, string, string, unknown]> = [
      ['/a2a/rest/message:send', 'POST', '/a2a/rest/message:send', { message: textMessage('hi') }],
      ['/a2a/rest/message:stream', 'POST', '/a2a/rest/message:stream', { message: textMessage('hi') }],
      ['/a2a/rest/tasks', 'GET', '/a2a/rest/tasks', undefined],
      ['/a2a/rest/tasks/{id}', 'GET', '/a2a/rest/tasks/some-task', undefined],
      ['/a2a/rest/{tenant}/tasks/{id}:cancel', 'POST', '/a2a/rest/acme/tasks/some-task:cancel', undefined],
      ['/a2a/rest/extendedAgentCard', 'GET', '/a2a/rest/extendedAgentCard', undefined],
      [JSONRPC_PATH, 'POST', JSONRPC_PATH, rpcBody('SendMessage', { message: textMessage('hi') }, 'req-7')],
      [JSONRPC_PATH, 'POST', JSONRPC_PATH, rpcBody('GetExtendedAgentCard', {})],
    ];
    for (const [path, method, url, body] of cases) {
      const observed = await send(`${gw.url}${url}`, method, { body });
      expect(observed.status, `${method} ${url}: ${observed.text}`).toBe(401);
      expect(observed.headers.get('www-authenticate'), `${method} ${url}`).toBe(challenge);
      expectAsDocumented(path, method, observed);
      const parsed = JSON.parse(observed.text) as Json;
      const details = (path === JSONRPC_PATH ? parsed.error.data : parsed.error.details) as Json[];
      expect(details[0]?.metadata?.reason, `${method} ${url}`).toBe('CREDENTIALS_MISSING');
      // Credentials are judged from the headers, before the body is read: the id is unknown.
      if (path === JSONRPC_PATH) expect(parsed.id, 'the JSON-RPC request was not read: id null').toBeNull();
    }
  });

  it('401 for a refused bearer token (invalid_token challenge) and a refused signature (Signature challenge, Accept-Signature)', async () => {
    const expired = await issuer.token({ scope: 'a2a:read', exp: Math.floor(Date.now() / 1000) - 3600 });
    for (const [path, url, body] of [
      ['/a2a/rest/tasks', '/a2a/rest/tasks', undefined],
      [JSONRPC_PATH, JSONRPC_PATH, rpcBody('ListTasks', {})],
    ] as const) {
      const method = body === undefined ? 'GET' : 'POST';
      const observed = await send(`${gw.url}${url}`, method, { body, headers: bearer(expired) });
      expect(observed.status, observed.text).toBe(401);
      expect(observed.headers.get('www-authenticate')).toMatch(/^Bearer realm="a2a-gateway", error="invalid_token", error_description="[^"]+"$/);
      expectAsDocumented(path, method, observed);
      expect(observed.text).toContain('TOKEN_EXPIRED');
    }

    // A partner's signature over another body than the one sent: the digest does not match.
    const signedFor = JSON.stringify(rpcBody('ListTasks', {}));
    const headers = await partner.sign(gw.jsonRpcUrl, signedFor);
    const observed = await send(gw.jsonRpcUrl, 'POST', { rawBody: JSON.stringify(rpcBody('ListTasks', { pageSize: 1 })), headers });
    expect(observed.status, observed.text).toBe(401);
    expect(observed.headers.get('www-authenticate')).toBe(`Signature ${REALM}`);
    expect(observed.headers.get('accept-signature')).toBe('sig1=("@method" "@target-uri" "content-digest");created');
    expectAsDocumented(JSONRPC_PATH, 'POST', observed);
    expect(observed.text).toContain('DIGEST_MISMATCH');
  });

  it('403 SCOPE_MISSING for a token without the scope, with an insufficient_scope challenge naming it (RFC 6750 §3.1)', async () => {
    // [documented path, method, URL, body, the token's scopes, the scope the operation needs, the operation]
    const cases: Array<[string, string, string, unknown, keyof typeof tokens, string, string]> = [
      ['/a2a/rest/message:send', 'POST', '/a2a/rest/message:send', { message: textMessage('hi') }, 'read', 'a2a:write', 'SendMessage'],
      ['/a2a/rest/message:stream', 'POST', '/a2a/rest/message:stream', { message: textMessage('hi') }, 'read', 'a2a:write', 'SendStreamingMessage'],
      ['/a2a/rest/tasks/{id}:cancel', 'POST', '/a2a/rest/tasks/some-task:cancel', undefined, 'read', 'a2a:write', 'CancelTask'],
      ['/a2a/rest/{tenant}/message:send', 'POST', '/a2a/rest/acme/message:send', { message: textMessage('hi') }, 'read', 'a2a:write', 'SendMessage'],
      ['/a2a/rest/tasks/{taskId}/pushNotificationConfigs', 'GET', '/a2a/rest/tasks/some-task/pushNotificationConfigs', undefined, 'read', 'a2a:push', 'ListTaskPushNotificationConfigs'],
      ['/a2a/rest/tasks/{id}/assignments', 'GET', '/a2a/rest/tasks/some-task/assignments', undefined, 'push', 'a2a:read', 'ListTaskAssignments'],
      // The scope is checked before the tenant: another tenant's path still names the scope.
      ['/a2a/rest/{tenant}/tasks/{id}/assignments', 'GET', '/a2a/rest/acme/tasks/some-task/assignments', undefined, 'push', 'a2a:read', 'ListTaskAssignments'],
      [JSONRPC_PATH, 'POST', JSONRPC_PATH, rpcBody('SendMessage', { message: textMessage('hi') }), 'read', 'a2a:write', 'SendMessage'],
      [JSONRPC_PATH, 'POST', JSONRPC_PATH, rpcBody('CancelTask', { id: 'some-task' }, 'req-403'), 'read', 'a2a:write', 'CancelTask'],
      [JSONRPC_PATH, 'POST', JSONRPC_PATH, rpcBody('ListTaskAssignments', { id: 'some-task' }), 'push', 'a2a:read', 'ListTaskAssignments'],
    ];
    for (const [path, method, url, body, token, scope, operation] of cases) {
      const label = `${method} ${url} (${operation})`;
      const observed = await send(`${gw.url}${url}`, method, { body, headers: bearer(tokens[token]) });
      expect(observed.status, `${label}: ${observed.text}`).toBe(403);
      const challenge = observed.headers.get('www-authenticate');
      expect(challenge, label).toMatch(/^Bearer realm="a2a-gateway", error="insufficient_scope", error_description="[^"]+", scope="[^"]+"$/);
      expect(challenge, `${label}: the challenge names the scope to ask for`).toContain(`scope="${scope}"`);
      expectAsDocumented(path, method, observed);
      // The operation's documented scope is the one the refusal names.
      const documented = path === JSONRPC_PATH ? RAW.paths[path].post['x-required-scopes'][(body as Json).method] : RAW.paths[path][method.toLowerCase()]['x-required-scope'];
      expect(documented, label).toBe(scope);
      const parsed = JSON.parse(observed.text) as Json;
      const details = (path === JSONRPC_PATH ? parsed.error.data : parsed.error.details) as Json[];
      expect(details[0]?.metadata, label).toMatchObject({ reason: 'SCOPE_MISSING', requiredScope: scope, operation });
      if (path === JSONRPC_PATH) expect(parsed.id, `${label}: the refusal echoes the request id`).toBe((body as Json).id);
    }
  });

  it('403 SCOPE_MISSING for a partner-signed request carries no challenge', async () => {
    // The partner has a2a:read and a2a:write, not a2a:push.
    const body = JSON.stringify(rpcBody('ListTaskPushNotificationConfigs', { taskId: 'some-task' }, 'signed-403'));
    const headers = await partner.sign(gw.jsonRpcUrl, body);
    const observed = await send(gw.jsonRpcUrl, 'POST', { rawBody: body, headers });
    expect(observed.status, observed.text).toBe(403);
    expect(observed.headers.get('www-authenticate'), 'no bearer token, no bearer challenge').toBeNull();
    expectAsDocumented(JSONRPC_PATH, 'POST', observed);
    const parsed = JSON.parse(observed.text) as Json;
    expect(parsed.error.data[0].metadata).toMatchObject({ reason: 'SCOPE_MISSING', requiredScope: 'a2a:push', operation: 'ListTaskPushNotificationConfigs' });
  });

  it('403 TENANT_MISMATCH for another tenant than the caller’s, on HTTP+JSON and JSON-RPC, without a challenge', async () => {
    for (const [path, method, url, body] of [
      ['/a2a/rest/{tenant}/tasks', 'GET', '/a2a/rest/acme/tasks', undefined],
      ['/a2a/rest/{tenant}/tasks/{id}/assignments', 'GET', '/a2a/rest/acme/tasks/some-task/assignments', undefined],
      [JSONRPC_PATH, 'POST', JSONRPC_PATH, rpcBody('ListTasks', { tenant: 'acme' })],
      [JSONRPC_PATH, 'POST', JSONRPC_PATH, rpcBody('ListTaskAssignments', { id: 'some-task', tenant: 'acme' })],
    ] as const) {
      const label = `${method} ${url}`;
      const observed = await send(`${gw.url}${url}`, method, { body, headers: bearer(tokens.all) });
      expect(observed.status, observed.text).toBe(403);
      expect(observed.headers.get('www-authenticate'), `${label}: the scope is there, so there is nothing to challenge`).toBeNull();
      expectAsDocumented(path, method, observed);
      const parsed = JSON.parse(observed.text) as Json;
      const metadata = ((path === JSONRPC_PATH ? parsed.error.data : parsed.error.details) as Json[])[0]?.metadata as Json;
      expect(metadata?.reason, label).toBe('TENANT_MISMATCH');
      expect(metadata, label).not.toHaveProperty('requiredScope');
    }
  });

  it('429 past the rate limit, with Retry-After, on HTTP+JSON and JSON-RPC', async () => {
    const first = await send(`${limited.restUrl}/tasks`, 'GET', { headers: bearer(tokens.read) });
    expect(first.status, first.text).toBe(200);
    for (const [path, method, url, body] of [
      ['/a2a/rest/tasks', 'GET', '/a2a/rest/tasks', undefined],
      ['/a2a/rest/tasks/{id}', 'GET', '/a2a/rest/tasks/some-task', undefined],
      [JSONRPC_PATH, 'POST', JSONRPC_PATH, rpcBody('GetTask', { id: 'some-task' })],
    ] as const) {
      const observed = await send(`${limited.url}${url}`, method, { body, headers: bearer(tokens.read) });
      expect(observed.status, `${method} ${url}: ${observed.text}`).toBe(429);
      expect(Number(observed.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expectAsDocumented(path, method, observed);
      expect(observed.text).toContain('RATE_LIMITED');
    }
  });

  it('/.well-known/jwks.json holds the card signing key and the webhook signing key, as documented', async () => {
    const observed = await send(`${gw.url}/.well-known/jwks.json`, 'GET');
    expect(observed.status).toBe(200);
    expectAsDocumented('/.well-known/jwks.json', 'GET', observed);
    const { keys: published } = JSON.parse(observed.text) as { keys: Json[] };
    // The card signing key, and the Ed25519 key webhook deliveries are signed with (push is on).
    expect(published).toHaveLength(2);
    expect(published.filter((k) => k.kty === 'OKP' && k.crv === 'Ed25519' && k.alg === 'EdDSA')).toHaveLength(1);
    const keys = published.filter((k) => k.kty === 'EC');

    // The agent card is public, signed with that key, and declares both schemes.
    const cardAnswer = await send(`${gw.url}/.well-known/agent-card.json`, 'GET');
    expectAsDocumented('/.well-known/agent-card.json', 'GET', cardAnswer);
    const card = JSON.parse(cardAnswer.text) as Json;
    expect(Object.keys(card.securitySchemes as Json).sort()).toEqual(['apiKey', 'bearer', 'partnerSignature']);
    expect(card.signatures).toHaveLength(1);
    const header = decodeProtectedHeader({ protected: card.signatures[0].protected, signature: card.signatures[0].signature } as never);
    expect(header).toMatchObject({ alg: keys[0]?.alg, kid: keys[0]?.kid, jku: `${gw.url}/.well-known/jwks.json` });

    // The public routes need no credentials on an authenticating gateway.
    for (const path of PUBLIC_PATHS) expect((await send(`${gw.url}${path}`, 'GET')).status, path).toBe(200);
  });

  it('rejects doctored answers (negative controls for the checks above)', async () => {
    const unauthenticated = await send(`${gw.restUrl}/tasks`, 'GET');
    const rpcUnauthenticated = await send(gw.jsonRpcUrl, 'POST', { body: rpcBody('ListTasks', {}) });
    const scopeMissing = await send(`${gw.restUrl}/message:send`, 'POST', { body: { message: textMessage('hi') }, headers: bearer(tokens.read) });
    const rpcScopeMissing = await send(gw.jsonRpcUrl, 'POST', { body: rpcBody('CancelTask', { id: 'some-task' }), headers: bearer(tokens.read) });
    const tenantMismatch = await send(`${gw.restUrl}/acme/tasks`, 'GET', { headers: bearer(tokens.all) });
    expect(() => expectAsDocumented('/a2a/rest/message:send', 'POST', scopeMissing)).not.toThrow();
    expect(() => expectAsDocumented(JSONRPC_PATH, 'POST', rpcScopeMissing)).not.toThrow();
    expect(() => expectAsDocumented('/a2a/rest/{tenant}/tasks', 'GET', tenantMismatch)).not.toThrow();
    const withChallenge = (observed: Observed, challenge: string): Observed => ({ ...observed, headers: new Headers({ 'www-authenticate': challenge }) });
    const jwks = await send(`${gw.url}/.well-known/jwks.json`, 'GET');
    expect(() => expectAsDocumented('/a2a/rest/tasks', 'GET', unauthenticated)).not.toThrow();
    const headersWithout = (observed: Observed, name: string): Headers => {
      const headers = new Headers(observed.headers);
      headers.delete(name);
      return headers;
    };
    const editJson = (observed: Observed, edit: (body: Json) => void): Observed => {
      const body = JSON.parse(observed.text) as Json;
      edit(body);
      return { ...observed, text: JSON.stringify(body) };
    };
    const doctored: Array<[string, string, string, Observed, RegExp]> = [
      ['a 401 without WWW-Authenticate', '/a2a/rest/tasks', 'GET', { ...unauthenticated, headers: headersWithout(unauthenticated, 'www-authenticate') }, /WWW-Authenticate is required/],
      ['a 401 whose challenge names another realm', '/a2a/rest/tasks', 'GET', { ...unauthenticated, headers: new Headers({ 'www-authenticate': 'Bearer realm="other"' }) }, /must match pattern/],
      ['a 401 answered with a 403 body', '/a2a/rest/tasks', 'GET', editJson(unauthenticated, (b) => (b.error.status = 'PERMISSION_DENIED')), /must be equal to constant/],
      ['a 401 without its ErrorInfo reason', '/a2a/rest/tasks', 'GET', editJson(unauthenticated, (b) => delete b.error.details[0].metadata.reason), /must contain at least 1 valid item/],
      ['a REST error body on JSON-RPC', JSONRPC_PATH, 'POST', { ...rpcUnauthenticated, text: unauthenticated.text }, /must have required property 'jsonrpc'/],
      ['a JSON-RPC 401 with a REST code', JSONRPC_PATH, 'POST', editJson(rpcUnauthenticated, (b) => (b.error.code = 401)), /must be equal to constant/],
      ['a 429 without Retry-After', '/a2a/rest/tasks', 'GET', { ...unauthenticated, status: 429 }, /Retry-After is required/],
      ['a 403 challenging with invalid_token', '/a2a/rest/message:send', 'POST', withChallenge(scopeMissing, 'Bearer realm="a2a-gateway", error="invalid_token", error_description="x"'), /must match pattern/],
      ['a 403 challenge without the scope', '/a2a/rest/message:send', 'POST', withChallenge(scopeMissing, 'Bearer realm="a2a-gateway", error="insufficient_scope", error_description="x"'), /must match pattern/],
      ['a 403 challenge naming a2a:admin', JSONRPC_PATH, 'POST', withChallenge(rpcScopeMissing, 'Bearer realm="a2a-gateway", error="insufficient_scope", error_description="x", scope="a2a:admin"'), /must match pattern/],
      ['a SCOPE_MISSING 403 without requiredScope', '/a2a/rest/message:send', 'POST', editJson(scopeMissing, (b) => delete b.error.details[0].metadata.requiredScope), /must contain at least 1 valid item/],
      ['a JSON-RPC 403 without metadata.reason', JSONRPC_PATH, 'POST', editJson(rpcScopeMissing, (b) => delete b.error.data[0].metadata.reason), /must contain at least 1 valid item/],
      ['a 403 naming an operation that needs no scope', '/a2a/rest/message:send', 'POST', editJson(scopeMissing, (b) => (b.error.details[0].metadata.operation = 'GetAgentCard')), /must contain at least 1 valid item/],
      ['a TENANT_MISMATCH 403 naming a scope', '/a2a/rest/{tenant}/tasks', 'GET', editJson(tenantMismatch, (b) => (b.error.details[0].metadata.requiredScope = 'a2a:read')), /must contain at least 1 valid item/],
      ['a JWK with a private member', '/.well-known/jwks.json', 'GET', { ...jwks, text: JSON.stringify({ keys: [{ kty: 'EC', crv: 'P-256', x: 'a', y: 'b', kid: 'k', alg: 'ES256', use: 'sig', d: 'secret' }] }) }, /must NOT be valid/],
      ['an EC JWK without y', '/.well-known/jwks.json', 'GET', { ...jwks, text: JSON.stringify({ keys: [{ kty: 'EC', crv: 'P-256', x: 'a', kid: 'k', alg: 'ES256', use: 'sig' }] }) }, /must match exactly one schema in oneOf/],
      ['a 401 on a public route', '/.well-known/jwks.json', 'GET', unauthenticated, /not documented for this operation/],
    ];
    for (const [what, path, method, observed, reason] of doctored) {
      expect(() => expectAsDocumented(path, method, observed), what).toThrow(reason);
    }
  });
});
