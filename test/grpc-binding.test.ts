// The gRPC binding's error paths and steps, called raw (the SDK's codec, not its client): every
// refusal has the spec's status code (5.4) and a google.rpc.Status with ErrorInfo (domain
// a2a-protocol.org) in `grpc-status-details-bin`, and changes nothing in Redis. Credentials come
// from `authorization` metadata (bearer only: a signature is refused as such), the version from
// `a2a-version`, the agent from `a2a-agent` metadata or an `agents/<name>` tenant; owner
// scoping, scopes, per-agent size and rate limits, extensions and shutdown behave as on HTTP.
import { randomBytes } from 'node:crypto';
import { AgentCard, CancelTaskRequest, GetExtendedAgentCardRequest, GetTaskRequest, ListTasksRequest, SendMessageRequest, SubscribeToTaskRequest, type ListTasksResponse, type SendMessageResponse, type Task } from '@a2a-js/sdk';
import { ClientFactory, DefaultAgentCardResolver } from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import { LegacyA2AService } from '@a2a-js/sdk/compat/v0_3/server/grpc';
import { credentials, makeGenericClientConstructor, status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agents } from '../src/agents/agents.ts';
import { startGatewayRole } from '../src/gateway/server.ts';
import { createLogger } from '../src/logging/logger.ts';
import { ASSIGNMENTS_EXTENSION_URI } from '../src/extensions/assignments.ts';
import { compareEventIds } from '../src/events/hub.ts';
import { expectUnchanged, ROOT, startTestGateway, type TestGateway } from './support/harness.ts';
import { detailsOf, eventIdOf, metadataOf, rawGrpc } from './support/grpc.ts';
import { createTestIssuer, type TestIssuer } from './support/identity.ts';

let gw: TestGateway;
let issuer: TestIssuer;
let grpc: ReturnType<typeof rawGrpc>;
const tokens = { alice: '', bob: '', reader: '' };
let aliceTask: Task;

const message = (text: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  messageId: `g-${randomBytes(8).toString('hex')}`,
  role: 'ROLE_USER',
  parts: [{ text }],
  ...extra,
});
const as = (token: string, more: Record<string, string> = {}) => metadataOf({ 'a2a-version': '1.0', authorization: `Bearer ${token}`, ...more });

beforeAll(async () => {
  issuer = await createTestIssuer();
  gw = await startTestGateway({
    name: 'grpc',
    config: {
      grpcPort: 0,
      auth: { enabled: true, issuers: [issuer.config] },
      agents: {
        demo: { adapter: 'demo', adapterOptions: { stepMs: 20 } },
        tight: { adapter: 'demo', limits: { maxBodyBytes: 2048, requestsPerSecond: 0.001, burst: 3 } },
      },
    },
  });
  tokens.alice = await issuer.token({ sub: 'alice' });
  tokens.bob = await issuer.token({ sub: 'bob' });
  tokens.reader = await issuer.token({ sub: 'alice', scope: 'a2a:read' });
  grpc = rawGrpc(gw.gateway.grpc?.address as string);
  const sent = await grpc.unary<SendMessageResponse>('sendMessage', SendMessageRequest.fromJSON({ message: message('echo owned by alice') }), as(tokens.alice));
  expect(sent.error).toBeUndefined();
  expect(sent.response?.payload?.$case).toBe('task');
  aliceTask = sent.response?.payload?.value as Task;
});

afterAll(async () => {
  grpc?.close();
  await gw?.close();
});

describe('the card', () => {
  it('declares a GRPC interface at host:port, 1.0 only; each named agent with the tenant that reaches it', async () => {
    const card = (await (await fetch(`${gw.url}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })).json()) as { supportedInterfaces: Record<string, string>[] };
    const grpcInterfaces = card.supportedInterfaces.filter((i) => i.protocolBinding === 'GRPC');
    expect(grpcInterfaces).toEqual([{ url: gw.gateway.grpc?.address, protocolBinding: 'GRPC', protocolVersion: '1.0' }]);
    expect(gw.gateway.grpc?.address).toMatch(/^127\.0\.0\.1:\d+$/);
    const tight = (await (await fetch(`${gw.url}/agents/tight/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })).json()) as { supportedInterfaces: Record<string, string>[] };
    expect(tight.supportedInterfaces.filter((i) => i.protocolBinding === 'GRPC')).toEqual([{ url: gw.gateway.grpc?.address, protocolBinding: 'GRPC', protocolVersion: '1.0', tenant: 'agents/tight' }]);
  });
});

describe("the SDK's gRPC client with a bearer token", () => {
  it('authenticates with serviceParameters.authorization (metadata), and reaches a named agent through its card', async () => {
    const factory = new ClientFactory({ transports: [new GrpcTransportFactory()], cardResolver: new DefaultAgentCardResolver() });
    const client = await factory.createFromUrl(`${gw.url}/agents/tight/.well-known/agent-card.json`, '');
    const withToken = { serviceParameters: { authorization: `Bearer ${tokens.alice}` } };
    const reply = await client.sendMessage(SendMessageRequest.fromJSON({ message: message('echo from the SDK') }), withToken);
    expect('status' in reply).toBe(true);
    const task = reply as Task;
    // The task is the tight agent's: the default agent does not know it.
    const other = await grpc.unary('getTask', GetTaskRequest.fromJSON({ id: task.id }), as(tokens.alice));
    expect(other.error?.code).toBe(GrpcStatus.NOT_FOUND);
    await expect(client.getTask(GetTaskRequest.fromJSON({ id: task.id }))).rejects.toThrow(/credentials/);
  });
});

describe('unary answers', () => {
  it('GetExtendedAgentCard answers the extended card, converted to the proto message whole (interfaces, security, skills)', async () => {
    const { error, response } = await grpc.unary<AgentCard>('getExtendedAgentCard', GetExtendedAgentCardRequest.fromJSON({}), as(tokens.alice));
    expect(error).toBeUndefined();
    const served = gw.gateway.card?.card as unknown as Record<string, unknown>;
    const json = AgentCard.toJSON(response as AgentCard) as Record<string, unknown>;
    expect(json.name).toBe(served.name);
    expect(json.supportedInterfaces).toEqual(served.supportedInterfaces);
    expect(json.securitySchemes).toEqual(served.securitySchemes);
    expect((json.skills as unknown[]).length).toBeGreaterThanOrEqual((served.skills as unknown[]).length);
  });
});

describe('refusals', () => {
  it('no credentials: UNAUTHENTICATED, reason CREDENTIALS_MISSING, nothing stored', async () => {
    await expectUnchanged(gw, async () => {
      const { error } = await grpc.unary('sendMessage', SendMessageRequest.fromJSON({ message: message('echo anonymous') }), metadataOf({ 'a2a-version': '1.0' }));
      expect(error?.code).toBe(GrpcStatus.UNAUTHENTICATED);
      expect(detailsOf(error as NonNullable<typeof error>).errorInfo).toMatchObject({ reason: 'UNAUTHENTICATED', domain: 'a2a-protocol.org', metadata: { reason: 'CREDENTIALS_MISSING' } });
    });
  });

  it('an invalid token: UNAUTHENTICATED; an HTTP message signature is refused as not applying to gRPC', async () => {
    await expectUnchanged(gw, async () => {
      const forged = await grpc.unary('getTask', GetTaskRequest.fromJSON({ id: aliceTask.id }), as(`${tokens.alice.slice(0, -4)}AAAA`));
      expect(forged.error?.code).toBe(GrpcStatus.UNAUTHENTICATED);
      const signed = await grpc.unary('getTask', GetTaskRequest.fromJSON({ id: aliceTask.id }), metadataOf({ 'a2a-version': '1.0', signature: 'sig1=:AAAA:', 'signature-input': 'sig1=("@method");keyid="acme-key-1"' }));
      expect(signed.error?.code).toBe(GrpcStatus.UNAUTHENTICATED);
      expect(signed.error?.details).toMatch(/do not accept HTTP message signatures/);
      expect(detailsOf(signed.error as NonNullable<typeof signed.error>).errorInfo?.metadata).toMatchObject({ reason: 'SIGNATURES_NOT_ACCEPTED_ON_GRPC' });
    });
  });

  it('the wrong scope: PERMISSION_DENIED naming the scope, nothing stored', async () => {
    await expectUnchanged(gw, async () => {
      const { error } = await grpc.unary('sendMessage', SendMessageRequest.fromJSON({ message: message('echo read-only') }), as(tokens.reader));
      expect(error?.code).toBe(GrpcStatus.PERMISSION_DENIED);
      expect(detailsOf(error as NonNullable<typeof error>).errorInfo?.metadata).toMatchObject({ reason: 'SCOPE_MISSING', requiredScope: 'a2a:write', operation: 'SendMessage' });
    });
  });

  it('an unsupported version, or none (which means 0.3): VersionNotSupported as FAILED_PRECONDITION (spec 5.4), nothing stored', async () => {
    await expectUnchanged(gw, async () => {
      for (const version of ['2.0', undefined]) {
        const metadata = metadataOf({ authorization: `Bearer ${tokens.alice}`, ...(version === undefined ? {} : { 'a2a-version': version }) });
        const { error } = await grpc.unary('sendMessage', SendMessageRequest.fromJSON({ message: message('echo versioned') }), metadata);
        expect(error?.code, String(version)).toBe(GrpcStatus.FAILED_PRECONDITION);
        expect(detailsOf(error as NonNullable<typeof error>).errorInfo?.reason).toBe('VERSION_NOT_SUPPORTED');
        expect(error?.details).toMatch(/A2A-Version: 1\.0/);
      }
    });
  });

  it("the 0.3 proto's service (a2a.v1.A2AService) answers VersionNotSupported naming what to use instead, for unary and streaming methods", async () => {
    const Legacy = makeGenericClientConstructor(LegacyA2AService, 'LegacyA2AService');
    const legacy = new Legacy(gw.gateway.grpc?.address as string, credentials.createInsecure()) as unknown as Record<string, (...args: unknown[]) => unknown> & { close(): void };
    try {
      const unary = await new Promise<ServiceError>((resolve) => legacy.sendMessage?.({}, metadataOf({ authorization: `Bearer ${tokens.alice}` }), (error: ServiceError) => resolve(error)));
      const stream = await new Promise<ServiceError>((resolve) => {
        const call = legacy.sendStreamingMessage?.({}, metadataOf({ authorization: `Bearer ${tokens.alice}` })) as { on(event: string, listener: (value: ServiceError) => void): void };
        call.on('error', resolve);
      });
      for (const error of [unary, stream]) {
        expect(error.code).toBe(GrpcStatus.FAILED_PRECONDITION);
        expect(detailsOf(error).errorInfo).toMatchObject({ reason: 'VERSION_NOT_SUPPORTED', metadata: { requestedVersion: '0.3', binding: 'GRPC' } });
        expect(error.details).toMatch(/lf\.a2a\.v1\.A2AService/);
      }
    } finally {
      legacy.close();
    }
  });

  it('an unknown task, or another owner\'s: NOT_FOUND with ErrorInfo TASK_NOT_FOUND, the same for both', async () => {
    const unknown = await grpc.unary('getTask', GetTaskRequest.fromJSON({ id: 'no-such-task' }), as(tokens.alice));
    expect(unknown.error?.code).toBe(GrpcStatus.NOT_FOUND);
    expect(detailsOf(unknown.error as NonNullable<typeof unknown.error>).errorInfo).toMatchObject({ reason: 'TASK_NOT_FOUND', metadata: { taskId: 'no-such-task' } });
    await expectUnchanged(gw, async () => {
      for (const [method, request] of [
        ['getTask', GetTaskRequest.fromJSON({ id: aliceTask.id })],
        ['cancelTask', CancelTaskRequest.fromJSON({ id: aliceTask.id })],
      ] as const) {
        const theirs = await grpc.unary(method, request, as(tokens.bob));
        expect(theirs.error?.code, method).toBe(GrpcStatus.NOT_FOUND);
        expect(detailsOf(theirs.error as NonNullable<typeof theirs.error>).errorInfo?.reason).toBe('TASK_NOT_FOUND');
      }
      const subscribed = await grpc.stream('subscribeToTask', SubscribeToTaskRequest.fromJSON({ id: aliceTask.id }), as(tokens.bob)).done;
      expect(subscribed.events).toEqual([]);
      expect(subscribed.error?.code).toBe(GrpcStatus.NOT_FOUND);
      const listed = await grpc.unary<ListTasksResponse>('listTasks', ListTasksRequest.fromJSON({}), as(tokens.bob));
      expect(listed.response?.tasks).toEqual([]);
    });
    const mine = await grpc.unary<Task>('getTask', GetTaskRequest.fromJSON({ id: aliceTask.id }), as(tokens.alice));
    expect(mine.response?.id).toBe(aliceTask.id);
  });

  it('a bad request: INVALID_ARGUMENT with BadRequest field violations; bytes that are no message: INVALID_ARGUMENT; nothing stored', async () => {
    await expectUnchanged(gw, async () => {
      const noParts = await grpc.unary('sendMessage', SendMessageRequest.fromJSON({ message: { messageId: 'm-empty', role: 'ROLE_USER', parts: [] } }), as(tokens.alice));
      expect(noParts.error?.code).toBe(GrpcStatus.INVALID_ARGUMENT);
      expect(detailsOf(noParts.error as NonNullable<typeof noParts.error>).fieldViolations.map((v) => v.field)).toContain('message.parts');
      // Field 1 (message) announced as 255 bytes long, then nothing.
      const garbage = await grpc.unaryBytes('sendMessage', Buffer.from([0x0a, 0xff, 0x01]), as(tokens.alice));
      expect(garbage.error?.code).toBe(GrpcStatus.INVALID_ARGUMENT);
      expect(garbage.error?.details).toMatch(/not a valid SendMessageRequest/);
      const badResume = await grpc.stream('subscribeToTask', SubscribeToTaskRequest.fromJSON({ id: aliceTask.id }), as(tokens.alice, { 'last-event-id': 'yesterday' })).done;
      expect(badResume.error?.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    });
  });

  it('an unknown agent is NOT_FOUND; agent and tenant naming different agents is INVALID_ARGUMENT', async () => {
    const unknown = await grpc.unary('getTask', GetTaskRequest.fromJSON({ id: aliceTask.id }), as(tokens.alice, { 'a2a-agent': 'nobody' }));
    expect(unknown.error?.code).toBe(GrpcStatus.NOT_FOUND);
    expect(unknown.error?.details).toMatch(/no agent "nobody"/);
    const both = await grpc.unary('getTask', GetTaskRequest.fromJSON({ id: aliceTask.id, tenant: 'agents/tight' }), as(tokens.alice, { 'a2a-agent': 'demo' }));
    expect(both.error?.code).toBe(GrpcStatus.INVALID_ARGUMENT);
  });
});

describe('agents, limits and extensions', () => {
  it("agents are separate on gRPC as on HTTP: the default agent's task is not the tight agent's, by metadata or by tenant", async () => {
    const viaMetadata = await grpc.unary('getTask', GetTaskRequest.fromJSON({ id: aliceTask.id }), as(tokens.alice, { 'a2a-agent': 'demo' }));
    expect(viaMetadata.error).toBeUndefined();
    const viaTenant = await grpc.unary('getTask', GetTaskRequest.fromJSON({ id: aliceTask.id, tenant: 'agents/demo' }), as(tokens.alice));
    expect(viaTenant.error).toBeUndefined();
    // The gateway's HTTP path for the same agent sees the same task.
    const http = await fetch(`${gw.url}/agents/demo/a2a/rest/tasks/${aliceTask.id}`, { headers: { 'A2A-Version': '1.0', Authorization: `Bearer ${tokens.alice}` } });
    expect(http.status).toBe(200);
    const elsewhere = await grpc.unary('getTask', GetTaskRequest.fromJSON({ id: aliceTask.id, tenant: 'agents/tight' }), as(tokens.alice));
    expect(elsewhere.error?.code).toBe(GrpcStatus.NOT_FOUND);
  });

  it("a message larger than the agent's maxBodyBytes is RESOURCE_EXHAUSTED before anything is stored", async () => {
    await expectUnchanged(gw, async () => {
      const { error } = await grpc.unary('sendMessage', SendMessageRequest.fromJSON({ message: message(`echo ${'x'.repeat(4096)}`) }), as(tokens.alice, { 'a2a-agent': 'tight' }));
      expect(error?.code).toBe(GrpcStatus.RESOURCE_EXHAUSTED);
      expect(detailsOf(error as NonNullable<typeof error>).errorInfo?.metadata).toMatchObject({ reason: 'MESSAGE_TOO_LARGE', maxBytes: '2048' });
    });
  });

  it("the agent's rate limit counts gRPC calls: past its burst, RESOURCE_EXHAUSTED with RetryInfo", async () => {
    const token = await issuer.token({ sub: `rate-${randomBytes(4).toString('hex')}` });
    const codes: number[] = [];
    let retryDelay: number | undefined;
    for (let i = 0; i < 5; i++) {
      const { error } = await grpc.unary('listTasks', ListTasksRequest.fromJSON({}), as(token, { 'a2a-agent': 'tight' }));
      codes.push(error?.code ?? GrpcStatus.OK);
      if (error !== undefined) retryDelay = detailsOf(error).retryDelaySeconds;
    }
    expect(codes).toEqual([GrpcStatus.OK, GrpcStatus.OK, GrpcStatus.OK, GrpcStatus.RESOURCE_EXHAUSTED, GrpcStatus.RESOURCE_EXHAUSTED]);
    expect(retryDelay).toBeGreaterThan(0);
  });

  it('a2a-extensions metadata activates a declared extension, echoed in the response metadata', async () => {
    const { error, headers } = await grpc.unary('getTask', GetTaskRequest.fromJSON({ id: aliceTask.id }), as(tokens.alice, { 'a2a-extensions': `${ASSIGNMENTS_EXTENSION_URI}, urn:unknown:ext` }));
    expect(error).toBeUndefined();
    expect(headers?.get('a2a-extensions')).toEqual([ASSIGNMENTS_EXTENSION_URI]);
  });
});

describe('streams', () => {
  it('SendStreamingMessage: every event carries its id; SubscribeToTask with last-event-id resumes exactly after it', async () => {
    const first = await grpc.stream('sendStreamingMessage', SendMessageRequest.fromJSON({ message: message('long 6') }), as(tokens.alice)).done;
    expect(first.error).toBeUndefined();
    const ids = first.events.map(eventIdOf);
    expect(ids.every((id) => /^\d+-\d+$/.test(id))).toBe(true);
    expect(first.events.at(-1)?.payload?.$case).toBe('statusUpdate');
    const taskId = (first.events[0]?.payload?.value as Task).id;
    const resumed = await grpc.stream('subscribeToTask', SubscribeToTaskRequest.fromJSON({ id: taskId }), as(tokens.alice, { 'last-event-id': ids[2] as string })).done;
    expect(resumed.error).toBeUndefined();
    expect(resumed.events.map(eventIdOf)).toEqual(ids.slice(3));
  });

  it('gateway shutdown ends open streams with UNAVAILABLE, a retry delay and the last event id; resuming from it elsewhere misses nothing', async () => {
    const config = { ...gw.config, port: 0, grpcPort: 0 as const };
    const second = await startGatewayRole(config, await Agents.load(config, ROOT), createLogger('silent'), { baseDir: ROOT });
    const other = rawGrpc(second.grpc?.address as string);
    try {
      const started = await grpc.unary<SendMessageResponse>('sendMessage', SendMessageRequest.fromJSON({ message: message('long 30'), configuration: { returnImmediately: true } }), as(tokens.alice));
      const taskId = (started.response?.payload?.value as Task).id;
      let seen = 0;
      let closing: Promise<void> | undefined;
      const watched = other.stream('subscribeToTask', SubscribeToTaskRequest.fromJSON({ id: taskId }), as(tokens.alice), () => {
        seen += 1;
        if (seen === 4) closing = second.close();
      });
      const cut = await watched.done;
      await closing;
      expect(cut.error?.code).toBe(GrpcStatus.UNAVAILABLE);
      const details = detailsOf(cut.error as NonNullable<typeof cut.error>);
      expect(details.retryDelaySeconds).toBe(1);
      expect(details.errorInfo?.metadata).toMatchObject({ reason: 'SHUTTING_DOWN', taskId });
      // The hint names the last event written; grpc-js may surface the status before the last
      // messages, so the client resumes from the last one it received (at or before that).
      const written = details.errorInfo?.metadata.lastEventId as string;
      const lastReceived = eventIdOf(cut.events.at(-1) as (typeof cut.events)[number]);
      expect(compareEventIds(lastReceived, written)).toBeLessThanOrEqual(0);
      const rest = await grpc.stream('subscribeToTask', SubscribeToTaskRequest.fromJSON({ id: taskId }), as(tokens.alice, { 'last-event-id': lastReceived })).done;
      expect(rest.error).toBeUndefined();
      const all = [...cut.events, ...rest.events].map(eventIdOf);
      expect(new Set(all).size).toBe(all.length);
      const stored = (await gw.redis.xrange(`${gw.prefix}:{${taskId}}:events`, '-', '+')).map(([id]) => id);
      expect(all.slice(1)).toEqual(stored.slice(stored.indexOf(all[1] as string)));
      expect(rest.events.at(-1)?.payload?.$case).toBe('statusUpdate');
    } finally {
      other.close();
      await second.close().catch(() => undefined);
    }
  });
});

describe('failed authentications over gRPC', () => {
  it("count against the peer's address like HTTP ones: past unauthenticatedBurst, RESOURCE_EXHAUSTED with RetryInfo instead of UNAUTHENTICATED", async () => {
    const limited = await startTestGateway({
      name: 'grpc-unauth',
      config: { grpcPort: 0, auth: { enabled: true, issuers: [issuer.config] }, limits: { requestsPerSecond: 0, maxActiveTasks: 0, unauthenticatedPerSecond: 0.001, unauthenticatedBurst: 2 } },
    });
    const raw = rawGrpc(limited.gateway.grpc?.address as string);
    try {
      const codes: number[] = [];
      let retryDelay: number | undefined;
      for (const metadata of [metadataOf({ 'a2a-version': '1.0' }), as('not-a-token'), metadataOf({ 'a2a-version': '1.0', signature: 'sig1=:AAAA:' }), metadataOf({ 'a2a-version': '1.0' })]) {
        const { error } = await raw.unary('getTask', GetTaskRequest.fromJSON({ id: 'x' }), metadata);
        codes.push(error?.code ?? GrpcStatus.OK);
        if (error?.code === GrpcStatus.RESOURCE_EXHAUSTED) retryDelay = detailsOf(error).retryDelaySeconds;
      }
      expect(codes).toEqual([GrpcStatus.UNAUTHENTICATED, GrpcStatus.UNAUTHENTICATED, GrpcStatus.RESOURCE_EXHAUSTED, GrpcStatus.RESOURCE_EXHAUSTED]);
      expect(retryDelay).toBeGreaterThan(0);
      // A caller with valid credentials is never counted or refused by it.
      const { error } = await raw.unary('getTask', GetTaskRequest.fromJSON({ id: 'x' }), as(tokens.alice));
      expect(error?.code).toBe(GrpcStatus.NOT_FOUND);
    } finally {
      raw.close();
      await limited.close();
    }
  });
});
