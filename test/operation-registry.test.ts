// The operation registry: every operation is declared once (name, schema, scope, streaming,
// routes, handler), and each binding (JSON-RPC, HTTP+JSON, gRPC, and 0.3's) exposes exactly the
// registry's operations, each behind the scope the registry declares. The card's scope text and the 405/404 answers come from it too.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { scopeText } from '../agent-card/card.ts';
import { anonymousPrincipal } from '../src/auth/principal.ts';
import { requireScope } from '../src/auth/scopes.ts';
import { SCOPES } from '../src/protocol/scopes.ts';
import { LEGACY_REST_ROUTER, REST_ROUTER, REST_ROUTES } from '../src/bindings/rest/routes.ts';
import { LEGACY_TRANSLATIONS } from '../src/compat/v0_3/index.ts';
import { GATEWAY_EXTENSIONS } from '../src/extensions/gateway-extensions.ts';
import { A2A_OPERATIONS } from '../src/operations/a2a-operations.ts';
import { defineUnary, type Operation } from '../src/operations/definition.ts';
import { OPERATOR_OPERATIONS } from '../src/operations/operator-operations.ts';
import { inCatalogOrder, OPERATIONS, OperationRegistry } from '../src/operations/registry.ts';
import { OPERATION_SPECS } from '../src/protocol/operations/catalog.ts';
import { unarySpec, type RestRoute } from '../src/protocol/operations/spec.ts';
import { startTestGateway, textMessage, type TestGateway } from './support/harness.ts';
import * as sdk from '@a2a-js/sdk';
import { A2AService } from '@a2a-js/sdk/server/grpc';
import { credentials, makeGenericClientConstructor, status as GrpcStatus } from '@grpc/grpc-js';
import { grpcServiceOf } from '../src/bindings/grpc/messages.ts';
import { detailsOf, metadataOf, rawGrpc } from './support/grpc.ts';
import { createTestIssuer, type TestIssuer } from './support/identity.ts';

/** Valid params for each operation, so that what a refusal says is about the caller, not the request. */
const SAMPLE_PARAMS: Record<string, () => Record<string, unknown>> = {
  SendMessage: () => ({ message: textMessage('echo registry') }),
  SendStreamingMessage: () => ({ message: textMessage('echo registry') }),
  GetTask: () => ({ id: 'no-such-task' }),
  ListTasks: () => ({}),
  CancelTask: () => ({ id: 'no-such-task' }),
  SubscribeToTask: () => ({ id: 'no-such-task' }),
  CreateTaskPushNotificationConfig: () => ({ taskId: 'no-such-task', url: 'https://receiver.example/hook' }),
  GetTaskPushNotificationConfig: () => ({ taskId: 'no-such-task', id: 'cfg' }),
  ListTaskPushNotificationConfigs: () => ({ taskId: 'no-such-task' }),
  DeleteTaskPushNotificationConfig: () => ({ taskId: 'no-such-task', id: 'cfg' }),
  GetExtendedAgentCard: () => ({}),
  ListTaskAssignments: () => ({ id: 'no-such-task' }),
  CreateSchedule: () => ({ message: { parts: [{ text: 'echo registry' }] }, at: '2099-01-01T00:00:00Z' }),
  GetSchedule: () => ({ id: 'no-such-schedule' }),
  ListSchedules: () => ({}),
  PauseSchedule: () => ({ id: 'no-such-schedule' }),
  ResumeSchedule: () => ({ id: 'no-such-schedule' }),
  DeleteSchedule: () => ({ id: 'no-such-schedule' }),
  CreateSubscription: () => ({ url: 'https://receiver.example/hook' }),
  GetSubscription: () => ({ id: 'no-such-subscription' }),
  ListSubscriptions: () => ({}),
  DeleteSubscription: () => ({ id: 'no-such-subscription' }),
  ListPushDeadLetters: () => ({}),
  ReplayPushDeadLetter: () => ({ id: 'no-such-dead-letter' }),
  ListOperatorTasks: () => ({}),
  InspectOperatorTask: () => ({ id: 'no-such-task' }),
  CancelOperatorTask: () => ({ id: 'no-such-task' }),
  SubscribeToOperatorTask: () => ({ id: 'no-such-task' }),
  WatchOperatorTasks: () => ({}),
};

/** The same, in the 0.3 JSON-RPC form, for the operations that have one. */
const SAMPLE_LEGACY_PARAMS: Record<string, () => Record<string, unknown>> = {
  SendMessage: () => ({ message: { kind: 'message', messageId: `m-${Date.now()}`, role: 'user', parts: [{ kind: 'text', text: 'echo registry' }] } }),
  SendStreamingMessage: () => ({ message: { kind: 'message', messageId: `m-${Date.now()}`, role: 'user', parts: [{ kind: 'text', text: 'echo registry' }] } }),
  GetTask: () => ({ id: 'no-such-task' }),
  CancelTask: () => ({ id: 'no-such-task' }),
  SubscribeToTask: () => ({ id: 'no-such-task' }),
  CreateTaskPushNotificationConfig: () => ({ taskId: 'no-such-task', pushNotificationConfig: { url: 'https://receiver.example/hook' } }),
  GetTaskPushNotificationConfig: () => ({ id: 'no-such-task', pushNotificationConfigId: 'cfg' }),
  ListTaskPushNotificationConfigs: () => ({ id: 'no-such-task' }),
  DeleteTaskPushNotificationConfig: () => ({ id: 'no-such-task', pushNotificationConfigId: 'cfg' }),
  GetExtendedAgentCard: () => ({}),
};

const names = OPERATIONS.operations.map((operation) => operation.name);
const legacyOperations = OPERATIONS.operations.filter((operation) => operation.legacy !== undefined);

describe('the declarations', () => {
  it('declare each operation once, with a known scope, and every operation has sample params here', () => {
    expect(new Set(names).size).toBe(names.length);
    expect(names).toEqual([
      ...A2A_OPERATIONS.map((o) => o.name),
      ...GATEWAY_EXTENSIONS.flatMap((e) => e.methods.map((m) => m.name)),
      ...OPERATOR_OPERATIONS.map((o) => o.name),
    ]);
    expect(Object.keys(SAMPLE_PARAMS).sort()).toEqual([...names].sort());
    for (const operation of OPERATIONS.operations) expect(SCOPES).toContain(operation.scope);
  });

  it('the 0.3 layer translates exactly the operations that declare 0.3 names, and 0.3 had all of A2A but ListTasks', () => {
    expect(Object.keys(LEGACY_TRANSLATIONS).sort()).toEqual(legacyOperations.map((o) => o.name).sort());
    expect(Object.keys(SAMPLE_LEGACY_PARAMS).sort()).toEqual(legacyOperations.map((o) => o.name).sort());
    expect(A2A_OPERATIONS.filter((o) => o.legacy === undefined).map((o) => o.name)).toEqual(['ListTasks']);
    expect(LEGACY_REST_ROUTER.allowedMethods('/v1/message:send')).toEqual(['POST']);
  });

  it('the A2A operations carry what a gRPC service needs; streaming ones answer with a stream of StreamResponse', () => {
    for (const operation of A2A_OPERATIONS) {
      expect(operation.grpc?.method).toBe(operation.name);
      expect(operation.grpc?.requestType).toMatch(/^[A-Z]\w+$/);
      if (operation.streaming) expect(operation.grpc?.responseType).toBe('StreamResponse');
    }
    expect(A2A_OPERATIONS.filter((o) => o.streaming).map((o) => o.name)).toEqual(['SendStreamingMessage', 'SubscribeToTask']);
  });

  it("the gRPC service is exactly the registry's gRPC mappings, and they are exactly a2a.proto's A2AService (the SDK's generated service)", () => {
    const { definition } = grpcServiceOf(OPERATIONS);
    const served = Object.values(definition).map((method) => method.path).sort();
    const declared = OPERATIONS.operations.flatMap((operation) => (operation.grpc === undefined ? [] : [`/lf.a2a.v1.A2AService/${operation.grpc.method}`])).sort();
    expect(served).toEqual(declared);
    expect(served).toEqual(Object.values(A2AService).map((method) => method.path).sort());
    // Extension and operator methods are not in the proto, so gRPC does not carry them.
    expect(OPERATIONS.operations.filter((operation) => operation.grpc !== undefined).map((o) => o.name)).toEqual(A2A_OPERATIONS.map((o) => o.name));
    for (const method of Object.values(definition)) {
      const operation = OPERATIONS.operations.find((o) => method.path.endsWith(`/${o.name}`)) as Operation;
      expect(method.responseStream, operation.name).toBe(operation.streaming);
    }
  });

  it('refuses a registry with an operation declared twice, a route declared twice, or an unknown scope', () => {
    const op = (name: string, scope: string, path: string): Operation =>
      defineUnary(unarySpec({ name, scope: scope as 'a2a:read', request: z.object({}), rest: [{ method: 'GET', path }], restBody: 'none' }), async () => ({})) as Operation;
    expect(() => new OperationRegistry([op('A', 'a2a:read', '/a'), op('A', 'a2a:read', '/b')])).toThrow(/declared twice/);
    expect(() => new OperationRegistry([op('A', 'a2a:read', '/a'), op('B', 'a2a:read', '/a')])).toThrow(/route GET \/a is declared twice/);
    expect(() => new OperationRegistry([op('A', 'a2a:everything', '/a')])).toThrow(/not one of/);
    expect(() => new OperationRegistry([op('A', undefined as unknown as string, '/a')])).toThrow(/not one of/);
  });

  it('serves exactly the specs of the catalog, in its order, each with one handler', () => {
    expect(names).toEqual(OPERATION_SPECS.map((spec) => spec.name));
    const spec = (name: string) => unarySpec({ name, scope: 'a2a:read', request: z.object({}), rest: [], restBody: 'none' });
    const handled = (of: ReturnType<typeof spec>): Operation => defineUnary(of, async () => ({})) as Operation;
    const [a, b, c] = [spec('A'), spec('B'), spec('C')];
    expect(inCatalogOrder([handled(b), handled(a)], [a, b]).map((o) => o.name)).toEqual(['A', 'B']);
    expect(() => inCatalogOrder([handled(a)], [a, b])).toThrow(/B is declared but has no handler/);
    expect(() => inCatalogOrder([handled(a), handled(b), handled(c)], [a, b])).toThrow(/C has a handler but no spec/);
    expect(() => inCatalogOrder([handled(a), handled(b), handled(b)], [a, b])).toThrow(/two handlers/);
    expect(() => inCatalogOrder([handled(a), handled(spec('B'))], [a, b])).toThrow(/B is defined over another spec/);
  });

  it('an operation whose scope is unknown is refused at the scope check, never let through', () => {
    const caller = anonymousPrincipal(undefined);
    expect(() => requireScope(caller, 'Mystery', undefined)).toThrow(/declares no known scope/);
    expect(() => requireScope(caller, 'Mystery', 'a2a:everything' as 'a2a:read')).toThrow(/declares no known scope/);
  });

  it('the HTTP+JSON routes are exactly the registry routes, and each matches its operation', () => {
    expect(REST_ROUTES.map((r) => `${r.method} ${r.path} ${r.operation}`)).toEqual(
      OPERATIONS.operations.flatMap((o) => o.rest.map((r) => `${r.method} ${r.path} ${o.name}`)),
    );
    for (const route of REST_ROUTES) {
      const match = REST_ROUTER.match(route.method, concretePath(route, { id: 'abc', taskId: 'abc' }));
      expect(match !== undefined && match !== 'method-not-allowed' ? match.operation.name : match).toBe(route.operation);
    }
  });

  it("the card's scope text names every operation under the scope the registry declares", () => {
    const text = scopeText();
    for (const [name, scope] of Object.entries(OPERATIONS.scopes())) {
      const clause = text.split('; ').find((part) => part.startsWith(scope === 'a2a:admin' ? 'a2a:admin implies' : `${scope} for`)) ?? '';
      expect(clause, `${name} under ${scope}`).toContain(name);
    }
    expect(text).toContain('a2a:admin implies a2a:read, a2a:write, a2a:push and a2a:operator');
    expect(text).toContain('every tenant\'s with a2a:platform');
  });
});

function concretePath(route: Pick<RestRoute, 'path'>, params: Record<string, unknown>): string {
  return route.path.replace(/\{([a-zA-Z]+)\}/g, (_, name: string) => encodeURIComponent(String(params[name] ?? 'x')));
}

describe('over the wire', () => {
  let gw: TestGateway;
  let issuer: TestIssuer;
  let admin: string;
  let nobody: string;

  beforeAll(async () => {
    issuer = await createTestIssuer();
    gw = await startTestGateway({ name: 'registry', config: { grpcPort: 0, auth: { enabled: true, issuers: [issuer.config] } } });
    admin = await issuer.token({ scope: 'a2a:admin' });
    // Credentials that grant no operation scope at all.
    nobody = await issuer.token({ scope: 'profile' });
  });

  afterAll(async () => {
    await gw?.close();
  });

  const headers = (token: string): Record<string, string> => ({ 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${token}` });

  async function callJsonRpc(token: string, method: string, params: Record<string, unknown>): Promise<{ status: number; body: Record<string, unknown>; contentType: string }> {
    const controller = new AbortController();
    const response = await fetch(gw.jsonRpcUrl, { method: 'POST', headers: headers(token), body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }), signal: controller.signal });
    const contentType = response.headers.get('content-type') ?? '';
    if (contentType.startsWith('text/event-stream')) {
      controller.abort();
      return { status: response.status, body: {}, contentType };
    }
    return { status: response.status, body: (await response.json()) as Record<string, unknown>, contentType };
  }

  async function callRest(token: string, route: (typeof REST_ROUTES)[number], params: Record<string, unknown>): Promise<{ status: number; body: Record<string, unknown>; contentType: string }> {
    const controller = new AbortController();
    const path = concretePath(route, params);
    const body = route.method === 'POST' ? JSON.stringify(params) : undefined;
    const response = await fetch(`${gw.restUrl}${path}`, { method: route.method, headers: headers(token), ...(body === undefined ? {} : { body }), signal: controller.signal });
    const contentType = response.headers.get('content-type') ?? '';
    if (contentType.startsWith('text/event-stream')) {
      controller.abort();
      return { status: response.status, body: {}, contentType };
    }
    return { status: response.status, body: (await response.json()) as Record<string, unknown>, contentType };
  }

  it('JSON-RPC serves every registry operation by its name, behind its declared scope', async () => {
    for (const operation of OPERATIONS.operations) {
      const params = (SAMPLE_PARAMS[operation.name] as () => Record<string, unknown>)();
      const refused = await callJsonRpc(nobody, operation.name, params);
      expect(refused.status, operation.name).toBe(403);
      const error = refused.body.error as { code: number; data: { metadata?: Record<string, string> }[] };
      expect(error.code, operation.name).toBe(-31403);
      expect(error.data[0]?.metadata).toMatchObject({ reason: 'SCOPE_MISSING', requiredScope: operation.scope, operation: operation.name });
      const served = await callJsonRpc(admin, operation.name, params);
      expect((served.body.error as { code?: number } | undefined)?.code, operation.name).not.toBe(-32601);
      if (operation.streaming && served.contentType.startsWith('text/event-stream')) expect(served.status).toBe(200);
    }
  });

  it('gRPC serves every registry operation with a gRPC mapping as its A2AService method, behind its declared scope; other methods are UNIMPLEMENTED', async () => {
    const grpc = rawGrpc(gw.gateway.grpc?.address as string);
    const as = (token: string) => metadataOf({ 'a2a-version': '1.0', authorization: `Bearer ${token}` });
    try {
      for (const [handlerName, method] of Object.entries(A2AService)) {
        const operation = OPERATIONS.operations.find((o) => method.path === `/lf.a2a.v1.A2AService/${o.grpc?.method}`) as Operation;
        const codec = (sdk as unknown as Record<string, { fromJSON(json: unknown): unknown }>)[operation.grpc?.requestType as string];
        const request = codec?.fromJSON((SAMPLE_PARAMS[operation.name] as () => Record<string, unknown>)());
        const call = async (token: string) => {
          if (!method.responseStream) return (await grpc.unary(handlerName, request, as(token))).error;
          const opened = grpc.stream(handlerName, request, as(token), () => opened.call.cancel());
          return (await opened.done).error;
        };
        const refused = await call(nobody);
        expect(refused?.code, operation.name).toBe(GrpcStatus.PERMISSION_DENIED);
        expect(detailsOf(refused as NonNullable<typeof refused>).errorInfo?.metadata).toMatchObject({ reason: 'SCOPE_MISSING', requiredScope: operation.scope, operation: operation.name });
        const served = await call(admin);
        expect(served?.code, operation.name).not.toBe(GrpcStatus.UNIMPLEMENTED);
        expect(served?.code, operation.name).not.toBe(GrpcStatus.PERMISSION_DENIED);
        expect(served?.code, operation.name).not.toBe(GrpcStatus.INTERNAL);
      }
      // A method the registry has but gRPC does not carry (an extension's), and one nobody has.
      for (const name of ['ListTaskAssignments', 'GetAgentCard']) {
        const Client = makeGenericClientConstructor(
          { [name]: { ...A2AService.getTask, path: `/lf.a2a.v1.A2AService/${name}` } } as unknown as typeof A2AService,
          'Probe',
        );
        const probe = new Client(gw.gateway.grpc?.address as string, credentials.createInsecure()) as unknown as Record<string, (...args: unknown[]) => void> & { close(): void };
        const code = await new Promise<number | undefined>((resolve) => probe[name]?.(sdk.GetTaskRequest.fromJSON({ id: 'x' }), as(admin), (error: { code: number } | null) => resolve(error?.code)));
        probe.close();
        expect(code, name).toBe(GrpcStatus.UNIMPLEMENTED);
      }
    } finally {
      grpc.close();
    }
  });

  it('JSON-RPC knows no method the registry does not declare (0.3 names without A2A-Version 0.3, other spellings)', async () => {
    for (const method of ['message/send', 'sendMessage', 'tasks/list', 'ListSchedulesX', 'GetAgentCard']) {
      const answer = await callJsonRpc(admin, method, {});
      expect((answer.body.error as { code: number }).code, method).toBe(-32601);
    }
  });

  it('0.3 JSON-RPC (no A2A-Version) serves every 0.3 method of the registry behind its declared scope, and no other', async () => {
    for (const operation of legacyOperations) {
      const params = (SAMPLE_LEGACY_PARAMS[operation.name] as () => Record<string, unknown>)();
      const method = operation.legacy?.jsonRpcMethod as string;
      const response = await fetch(gw.jsonRpcUrl, { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${nobody}` }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
      expect(response.status, method).toBe(403);
      const error = ((await response.json()) as { error: { data: { metadata?: Record<string, string> }[] } }).error;
      expect(error.data[0]?.metadata, method).toMatchObject({ reason: 'SCOPE_MISSING', requiredScope: operation.scope, operation: operation.name });
    }
    for (const method of ['tasks/list', 'message/sendX', 'ListTaskAssignments']) {
      const response = await fetch(gw.jsonRpcUrl, { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${admin}` }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: {} }) });
      expect(((await response.json()) as { error: { code: number } }).error.code, method).toBe(method === 'ListTaskAssignments' ? -32009 : -32601);
    }
  });

  it('0.3 HTTP+JSON (no A2A-Version) serves every 0.3 route of the registry behind its declared scope', async () => {
    for (const operation of legacyOperations) {
      for (const route of operation.legacy?.rest ?? []) {
        const controller = new AbortController();
        const response = await fetch(`${gw.restUrl}${concretePath(route, { id: 'no-such-task', taskId: 'no-such-task' })}`, {
          method: route.method,
          headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${nobody}` },
          ...(route.method === 'POST' ? { body: JSON.stringify(operation.name.startsWith('Send') ? { message: { messageId: 'm', role: 'ROLE_USER', content: [{ text: 'echo' }] } } : { pushNotificationConfig: { url: 'https://receiver.example/hook' } }) } : {}),
          signal: controller.signal,
        });
        const label = `${route.method} ${route.path}`;
        expect(response.status, label).toBe(403);
        // 0.3 errors are bare: {code, message, data}.
        expect(((await response.json()) as { code: number }).code, label).toBe(-31403);
      }
    }
  });

  it('HTTP+JSON serves every registry route, behind the declared scope; other paths are 404 and other methods 405', async () => {
    for (const route of REST_ROUTES) {
      const operation = OPERATIONS.byName(route.operation) as Operation;
      const params = (SAMPLE_PARAMS[route.operation] as () => Record<string, unknown>)();
      const refused = await callRest(nobody, route, params);
      expect(refused.status, `${route.method} ${route.path}`).toBe(403);
      const error = refused.body.error as { details: { metadata?: Record<string, string> }[] };
      expect(error.details[0]?.metadata).toMatchObject({ reason: 'SCOPE_MISSING', requiredScope: operation.scope, operation: operation.name });
      const served = await callRest(admin, route, params);
      expect(served.status, `${route.method} ${route.path}`).not.toBe(405);
      // Served: at most the task is not found (never "no operation here").
      if (served.status === 404) expect((served.body.error as { details: { reason?: string }[] }).details[0]?.reason).toBe('TASK_NOT_FOUND');
    }
    const unknown = await fetch(`${gw.restUrl}/tasks:everything`, { headers: headers(admin) });
    expect(unknown.status).toBe(404);
    const wrongMethod = await fetch(`${gw.restUrl}/message:send`, { method: 'DELETE', headers: headers(admin) });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toBe('POST');
  });
});
