// Push configs, dead letters and schedules under authentication: each needs its scope (a2a:push
// for configs, a2a:operator to list dead letters and a2a:admin to replay them, each within the
// operator's tenant, a2a:write / a2a:read for schedules), another
// owner's task or schedule is answered exactly like a missing one, and a dead letter is seen and
// replayed only through its own agent's URLs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';
import { createTestIssuer, type TestIssuer } from './support/identity.ts';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.ts';

let gw: TestGateway;
let issuer: TestIssuer;
let receiver: WebhookReceiver;
const bearer = (token: string): Record<string, string> => ({ Authorization: `Bearer ${token}` });
let alice: Record<string, string>;
let bob: Record<string, string>;
let reader: Record<string, string>;
let admin: Record<string, string>;
let operator: Record<string, string>;
let acmeAdmin: Record<string, string>;

beforeAll(async () => {
  issuer = await createTestIssuer();
  gw = await startTestGateway({
    name: 'pushauth',
    config: {
      auth: { enabled: true, issuers: [issuer.config] },
      agents: { demo: { adapter: 'demo', adapterOptions: { stepMs: 20 } }, other: { adapter: 'demo', adapterOptions: { stepMs: 20 } } },
      push: { allowedHosts: ['127.0.0.1'], sweepIntervalMs: 200, retryInitialDelayMs: 50, retryMaxDelayMs: 100, retryHorizonMs: 300 },
    },
  });
  receiver = await startWebhookReceiver();
  alice = bearer(await issuer.token({ sub: 'alice' }));
  bob = bearer(await issuer.token({ sub: 'bob' }));
  reader = bearer(await issuer.token({ sub: 'alice', scope: 'a2a:read a2a:write' }));
  admin = bearer(await issuer.token({ sub: 'ops', scope: 'a2a:admin' }));
  operator = bearer(await issuer.token({ sub: 'viewer', scope: 'a2a:operator' }));
  acmeAdmin = bearer(await issuer.token({ sub: 'acme-ops', tenant: 'acme', scope: 'a2a:admin' }));
});

afterAll(async () => {
  await receiver?.close();
  await gw?.close();
});

const errorOf = (body: Record<string, unknown>): { code: number; data: { metadata?: Record<string, string> }[] } => body.error as never;

describe('push and schedules under authentication', () => {
  it('push configs need a2a:push, and another owner’s task is not found', async () => {
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('echo mine') }, alice);
    const taskId = (body.result as { task: { id: string } }).task.id;
    const noScope = await rpc(gw.jsonRpcUrl, 'CreateTaskPushNotificationConfig', { taskId, url: `${receiver.url}/x` }, reader);
    expect(noScope.status).toBe(403);
    expect(errorOf(noScope.body).data[0]?.metadata).toMatchObject({ reason: 'SCOPE_MISSING', requiredScope: 'a2a:push' });
    const foreign = await rpc(gw.jsonRpcUrl, 'ListTaskPushNotificationConfigs', { taskId }, bob);
    const missing = await rpc(gw.jsonRpcUrl, 'ListTaskPushNotificationConfigs', { taskId: 'no-such-task' }, bob);
    expect(errorOf(foreign.body).code).toBe(-32001);
    expect(errorOf(missing.body).code).toBe(-32001);
    expect((await rpc(gw.jsonRpcUrl, 'CreateTaskPushNotificationConfig', { taskId, url: `${receiver.url}/x` }, alice)).body.error).toBeUndefined();
    // Through another agent's URLs the task does not exist.
    const elsewhere = await rpc(`${gw.url}/agents/other/a2a/jsonrpc`, 'ListTaskPushNotificationConfigs', { taskId }, alice);
    expect(errorOf(elsewhere.body).code).toBe(-32001);
  });

  it("push configs are their tenant's: the same subject in another tenant finds none of the four methods' configs, on either binding", async () => {
    const acme = bearer(await issuer.token({ sub: 'carol', tenant: 'acme' }));
    const globex = bearer(await issuer.token({ sub: 'carol', tenant: 'globex' }));
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { tenant: 'acme', message: textMessage('echo tenant') }, acme);
    const taskId = (body.result as { task: { id: string } }).task.id;
    const created = await rpc(gw.jsonRpcUrl, 'CreateTaskPushNotificationConfig', { tenant: 'acme', taskId, id: 'hook', url: `${receiver.url}/tenant` }, acme);
    expect(created.body.result).toMatchObject({ tenant: 'acme', taskId, id: 'hook' });
    for (const [method, params] of [
      ['CreateTaskPushNotificationConfig', { taskId, id: 'hook', url: `${receiver.url}/stolen` }],
      ['GetTaskPushNotificationConfig', { taskId, id: 'hook' }],
      ['ListTaskPushNotificationConfigs', { taskId }],
      ['DeleteTaskPushNotificationConfig', { taskId, id: 'hook' }],
    ] as const) {
      // In its own tenant the task does not exist; naming the other tenant is refused before any lookup.
      const own = await rpc(gw.jsonRpcUrl, method, { tenant: 'globex', ...params }, globex);
      expect(errorOf(own.body).code, `${method} in globex`).toBe(-32001);
      const named = await rpc(gw.jsonRpcUrl, method, { tenant: 'acme', ...params }, globex);
      expect(errorOf(named.body).data[0]?.metadata, `${method} naming acme`).toMatchObject({ reason: 'TENANT_MISMATCH' });
    }
    const rest = (tenant: string, token: Record<string, string>, init: RequestInit = {}): Promise<Response> =>
      fetch(`${gw.restUrl}/${tenant}/tasks/${taskId}/pushNotificationConfigs${init.method === 'DELETE' ? '/hook' : ''}`, { ...init, headers: { 'A2A-Version': '1.0', ...token } });
    expect((await rest('globex', globex)).status).toBe(404);
    expect((await rest('globex', globex, { method: 'DELETE' })).status).toBe(404);
    expect((await rest('acme', globex, { method: 'DELETE' })).status).toBe(403);
    // Nothing the other tenant tried changed the config.
    const listed = (await (await rest('acme', acme)).json()) as { configs: { id: string; url: string; tenant?: string }[] };
    expect(listed.configs).toEqual([expect.objectContaining({ id: 'hook', url: `${receiver.url}/tenant`, tenant: 'acme' })]);
  });

  it("dead letters are listed with a2a:operator and replayed with a2a:admin, only through their agent and within the operator's tenant", async () => {
    receiver.behave({ status: 400, pathPrefix: '/dead' });
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('echo dead'), configuration: { taskPushNotificationConfig: { url: `${receiver.url}/dead` } } }, alice);
    const taskId = (body.result as { task: { id: string } }).task.id;
    const letters = await waitFor(async () => {
      const listed = await rpc(gw.jsonRpcUrl, 'ListPushDeadLetters', { taskId }, admin);
      const found = (listed.body.result as { deadLetters: { id: string; owner: { subject: string; agent: string } }[] }).deadLetters;
      return found.length > 0 ? found : undefined;
    }, 15_000, 'a dead letter');
    receiver.reset();
    expect(letters[0]?.owner).toMatchObject({ agent: 'demo', subject: 'user:test:alice' });
    // Holding every other scope is not enough.
    const owner = await rpc(gw.jsonRpcUrl, 'ListPushDeadLetters', { taskId }, alice);
    expect(owner.status).toBe(403);
    expect(errorOf(owner.body).data[0]?.metadata).toMatchObject({ reason: 'SCOPE_MISSING', requiredScope: 'a2a:operator' });
    // A read-only operator sees them and cannot replay them.
    const viewed = await rpc(gw.jsonRpcUrl, 'ListPushDeadLetters', { taskId }, operator);
    // (The task's later events may have been dead-lettered meanwhile: the earlier ones are all there.)
    expect((viewed.body.result as { deadLetters: { id: string }[] }).deadLetters.map((letter) => letter.id)).toEqual(expect.arrayContaining(letters.map((letter) => letter.id)));
    const replayByViewer = await rpc(gw.jsonRpcUrl, 'ReplayPushDeadLetter', { id: letters[0]?.id }, operator);
    expect(replayByViewer.status).toBe(403);
    expect(errorOf(replayByViewer.body).data[0]?.metadata).toMatchObject({ reason: 'SCOPE_MISSING', requiredScope: 'a2a:admin' });
    // Another tenant's admin sees none of them and cannot replay them.
    const acmeListed = await rpc(gw.jsonRpcUrl, 'ListPushDeadLetters', {}, acmeAdmin);
    expect((acmeListed.body.result as { deadLetters: unknown[] }).deadLetters).toEqual([]);
    const acmeReplay = await rpc(gw.jsonRpcUrl, 'ReplayPushDeadLetter', { id: letters[0]?.id }, acmeAdmin);
    expect(errorOf(acmeReplay.body).code).toBe(-32001);
    // Another agent's URLs see none of them and cannot replay them.
    const other = await rpc(`${gw.url}/agents/other/a2a/jsonrpc`, 'ListPushDeadLetters', { taskId }, admin);
    expect((other.body.result as { deadLetters: unknown[] }).deadLetters).toEqual([]);
    const replayElsewhere = await rpc(`${gw.url}/agents/other/a2a/jsonrpc`, 'ReplayPushDeadLetter', { id: letters[0]?.id }, admin);
    expect(errorOf(replayElsewhere.body).code).toBe(-32001);
    const replay = await rpc(gw.jsonRpcUrl, 'ReplayPushDeadLetter', { id: letters[0]?.id }, admin);
    expect(replay.body.result).toMatchObject({ id: letters[0]?.id, state: 'queued' });
  });

  it('schedules need a2a:write to create and are the caller’s own', async () => {
    const at = new Date(Date.now() + 3_600_000).toISOString();
    const refused = await rpc(gw.jsonRpcUrl, 'CreateSchedule', { message: { parts: [{ text: 'echo later' }] }, at }, bearer(await issuer.token({ sub: 'alice', scope: 'a2a:read' })));
    expect(refused.status).toBe(403);
    expect(errorOf(refused.body).data[0]?.metadata).toMatchObject({ requiredScope: 'a2a:write', operation: 'CreateSchedule' });
    const created = await rpc(gw.jsonRpcUrl, 'CreateSchedule', { message: { parts: [{ text: 'echo later' }] }, at }, alice);
    const id = (created.body.result as { id: string }).id;
    for (const method of ['GetSchedule', 'PauseSchedule', 'DeleteSchedule']) {
      const foreign = await rpc(gw.jsonRpcUrl, method, { id }, bob);
      expect(errorOf(foreign.body).code, method).toBe(-32001);
    }
    expect((await rpc(gw.jsonRpcUrl, 'ListSchedules', {}, bob)).body.result).toMatchObject({ schedules: [] });
    expect((await rpc(`${gw.url}/agents/other/a2a/jsonrpc`, 'GetSchedule', { id }, alice)).body.error).toBeDefined();
    expect((await rpc(gw.jsonRpcUrl, 'GetSchedule', { id }, alice)).body.result).toMatchObject({ id, state: 'active' });
  });
});
