// Push subscriptions (gateway extension): an owner's webhook gets every event of each of their
// new tasks, signed and in order, with the subscription and task named in the body, and nothing
// of another owner's (another subject, another tenant, another agent); a context filter narrows
// it to one context. The four methods are owner-scoped (another owner's subscription is not
// found), need a2a:push, validate their input like push configs (SSRF policy, masks) and are
// bounded per owner. A deleted subscription stops. A second gateway sharing the Redis applies a
// subscription created on the first, also after it had read the owner's (empty) set.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agents } from '../src/agents/agents.ts';
import { startGatewayRole, type GatewayHandle } from '../src/gateway/server.ts';
import { createLogger } from '../src/logging/logger.ts';
import { ROOT, rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';
import { createTestIssuer, type TestIssuer } from './support/identity.ts';
import { startWebhookReceiver, type ReceivedDelivery, type WebhookReceiver } from './support/webhook-receiver.ts';

let gw: TestGateway;
let second: GatewayHandle | undefined;
let issuer: TestIssuer;
let receiver: WebhookReceiver;
const HMAC_SECRET = `whsec_${randomBytes(24).toString('base64')}`;
const MAX_PER_OWNER = 4;
const bearer = (token: string): Record<string, string> => ({ Authorization: `Bearer ${token}` });
let alice: Record<string, string>;
let bob: Record<string, string>;

beforeAll(async () => {
  issuer = await createTestIssuer();
  gw = await startTestGateway({
    name: 'subs',
    config: {
      auth: { enabled: true, issuers: [issuer.config] },
      agents: { demo: { adapter: 'demo', adapterOptions: { stepMs: 20 } }, other: { adapter: 'demo', adapterOptions: { stepMs: 20 } } },
      push: { allowedHosts: ['127.0.0.1'], sweepIntervalMs: 200, retryInitialDelayMs: 50, retryMaxDelayMs: 200, maxSubscriptionsPerOwner: MAX_PER_OWNER },
    },
  });
  receiver = await startWebhookReceiver({ jwksUrl: `${gw.url}/.well-known/jwks.json`, hmacSecret: HMAC_SECRET });
  alice = bearer(await issuer.token({ sub: 'alice' }));
  bob = bearer(await issuer.token({ sub: 'bob' }));
});

afterAll(async () => {
  await second?.close();
  await receiver?.close();
  await gw?.close();
});

interface SubscriptionView {
  id: string;
  url: string;
  token?: string;
  authentication?: { scheme: string; credentials?: string };
  contextId?: string;
  tenant?: string;
  createdAt: string;
}

const hookPath = (name: string): string => `/hooks/${name}-${randomBytes(4).toString('hex')}`;

async function rest(path: string, headers: Record<string, string>, init: { method?: string; body?: unknown } = {}, base = gw.restUrl): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${base}${path}`, {
    method: init.method ?? 'GET',
    headers: { 'A2A-Version': '1.0', ...(init.body === undefined ? {} : { 'Content-Type': 'application/json' }), ...headers },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function subscribe(headers: Record<string, string>, body: Record<string, unknown>, base = gw.restUrl): Promise<SubscriptionView> {
  const created = await rest('/subscriptions', headers, { method: 'POST', body }, base);
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  return created.body as unknown as SubscriptionView;
}

async function sendEcho(headers: Record<string, string>, text: string, extra: Record<string, unknown> = {}, url = gw.jsonRpcUrl): Promise<{ id: string; contextId: string }> {
  const { body } = await rpc(url, 'SendMessage', { message: textMessage(`echo ${text}`, extra) }, headers);
  const task = (body.result as { task?: { id: string; contextId: string; status: { state: string } } }).task;
  expect(task?.status.state, JSON.stringify(body)).toBe('TASK_STATE_COMPLETED');
  return { id: task?.id as string, contextId: task?.contextId as string };
}

async function storedEventIds(taskId: string): Promise<string[]> {
  return (await gw.redis.xrange(`${gw.prefix}:{${taskId}}:events`, '-', '+')).map(([id]) => id);
}

/** The task a delivery is for, from its StreamResponse payload. */
function taskOf(delivery: ReceivedDelivery): string {
  const json = delivery.json as Record<string, { id?: string; taskId?: string }>;
  const payload = json.task ?? json.statusUpdate ?? json.artifactUpdate ?? json.message;
  return (json.task === undefined ? payload?.taskId : payload?.id) ?? '';
}

const noteOf = (delivery: ReceivedDelivery): unknown => {
  const json = delivery.json as Record<string, { metadata?: { a2aGateway?: { subscription?: unknown } } }>;
  const payload = json.task ?? json.statusUpdate ?? json.artifactUpdate ?? json.message;
  return payload?.metadata?.a2aGateway?.subscription;
};

/** Waits until the receiver has every stored event of each task at `path`, then checks nothing else came. */
async function expectEveryEvent(path: string, subscriptionId: string, taskIds: string[]): Promise<ReceivedDelivery[]> {
  const expected = new Map<string, string[]>();
  for (const taskId of taskIds) expected.set(taskId, await storedEventIds(taskId));
  const total = [...expected.values()].reduce((n, ids) => n + ids.length, 0);
  const got = await receiver.waitForAccepted(total, path);
  // Settle: nothing more may arrive (no duplicates, no other task).
  await new Promise((resolve) => setTimeout(resolve, 600));
  const all = receiver.accepted(path);
  expect(all).toHaveLength(total);
  for (const [taskId, eventIds] of expected) {
    const mine = all.filter((d) => taskOf(d) === taskId);
    // In order, once each: the webhook-id ends with the event id.
    expect(mine.map((d) => d.webhookId.split('.').at(-1))).toEqual(eventIds);
    for (const delivery of mine) {
      expect(noteOf(delivery)).toEqual({ id: subscriptionId, taskId });
      expect(delivery.ed25519Valid).toBe(true);
    }
  }
  return got;
}

describe('push subscriptions', () => {
  it('the card declares the subscriptions extension', async () => {
    const card = (await (await fetch(`${gw.url}/.well-known/agent-card.json`)).json()) as { capabilities: { extensions?: { uri: string }[] } };
    expect(card.capabilities.extensions?.map((e) => e.uri)).toContain('urn:a2a-gateway:ext:subscriptions:v1');
  });

  it("a subscription gets every event of each of its owner's new tasks, signed, in order, naming itself and the task; none of another owner's", async () => {
    const path = hookPath('all');
    const created = await subscribe(alice, { url: `${receiver.url}${path}`, token: HMAC_SECRET });
    expect(created.id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(created.url).toBe(`${receiver.url}${path}`);
    // Write-only secret, as for push configs.
    expect(created.token).toBe('whsec_********');
    expect(JSON.stringify(created)).not.toContain(HMAC_SECRET);
    const one = await sendEcho(alice, 'one');
    const two = await sendEcho(alice, 'two');
    // Another subject, the same subject in another tenant, the same subject through another agent.
    await sendEcho(bob, 'not yours');
    await sendEcho(bearer(await issuer.token({ sub: 'alice', tenant: 'acme' })), 'other tenant');
    await sendEcho(alice, 'other agent', {}, `${gw.url}/agents/other/a2a/jsonrpc`);
    const got = await expectEveryEvent(path, created.id, [one.id, two.id]);
    expect(got.every((d) => d.hmacValid === true)).toBe(true);
    // The config it put on each task is listed with the task's configs (id sub-<id>), masked.
    const listed = await rpc(gw.jsonRpcUrl, 'ListTaskPushNotificationConfigs', { taskId: one.id }, alice);
    expect((listed.body.result as { configs: { id: string; token?: string }[] }).configs).toEqual([expect.objectContaining({ id: `sub-${created.id}`, token: 'whsec_********' })]);
    await rest(`/subscriptions/${created.id}`, alice, { method: 'DELETE' });
  });

  it('a subscription with a contextId gets the tasks of that context only', async () => {
    const path = hookPath('ctx');
    const contextId = `ctx-${randomBytes(6).toString('hex')}`;
    const created = await subscribe(alice, { url: `${receiver.url}${path}`, contextId });
    expect(created.contextId).toBe(contextId);
    const inside = await sendEcho(alice, 'in context', { contextId });
    await sendEcho(alice, 'elsewhere');
    const insideAgain = await sendEcho(alice, 'in context again', { contextId });
    await expectEveryEvent(path, created.id, [inside.id, insideAgain.id]);
    await rest(`/subscriptions/${created.id}`, alice, { method: 'DELETE' });
  });

  it("get, list and delete are the owner's: another subject, tenant or agent finds nothing; JSON-RPC serves the same methods", async () => {
    const path = hookPath('crud');
    const created = await subscribe(alice, { url: `${receiver.url}${path}`, token: 'opaque', authentication: { scheme: 'Bearer', credentials: 'receiver-secret' } });
    expect(created.token).toBe('********');
    expect(created.authentication).toEqual({ scheme: 'Bearer', credentials: '********' });
    const read = await rest(`/subscriptions/${created.id}`, alice);
    expect(read.body).toEqual(created);
    const viaRpc = await rpc(gw.jsonRpcUrl, 'GetSubscription', { id: created.id }, alice);
    expect(viaRpc.body.result).toEqual(created);
    const listed = await rest('/subscriptions', alice);
    expect((listed.body.subscriptions as SubscriptionView[]).map((s) => s.id)).toContain(created.id);
    // The /v1/ spelling of the same methods.
    expect((await rest(`/v1/subscriptions/${created.id}`, alice)).body).toEqual(created);
    expect(((await rest('/v1/subscriptions', alice)).body.subscriptions as SubscriptionView[]).map((s) => s.id)).toContain(created.id);
    expect(JSON.stringify(listed.body)).not.toContain('receiver-secret');

    const acme = bearer(await issuer.token({ sub: 'alice', tenant: 'acme' }));
    for (const [who, headers, base] of [
      ['bob', bob, gw.restUrl],
      ['alice in tenant acme', acme, `${gw.restUrl}/acme`],
      ['alice through another agent', alice, `${gw.url}/agents/other/a2a/rest`],
    ] as const) {
      const get = await rest(`/subscriptions/${created.id}`, headers, {}, base);
      expect(get.status, who).toBe(404);
      expect(JSON.stringify(get.body), who).toContain('SUBSCRIPTION_NOT_FOUND');
      expect((await rest('/subscriptions', headers, {}, base)).body, who).toEqual({ subscriptions: [] });
      expect((await rest(`/subscriptions/${created.id}`, headers, { method: 'DELETE' }, base)).status, who).toBe(404);
    }
    // Still there for its owner; deleted once; then not found.
    expect((await rest(`/subscriptions/${created.id}`, alice)).status).toBe(200);
    const deleted = await rpc(gw.jsonRpcUrl, 'DeleteSubscription', { id: created.id }, alice);
    expect(deleted.body.result).toEqual({});
    expect((await rest(`/subscriptions/${created.id}`, alice)).status).toBe(404);
    expect((await rest(`/subscriptions/${created.id}`, alice, { method: 'DELETE' })).status).toBe(404);
  });

  it('needs a2a:push', async () => {
    const reader = bearer(await issuer.token({ sub: 'alice', scope: 'a2a:read a2a:write' }));
    const refused = await rest('/subscriptions', reader, { method: 'POST', body: { url: `${receiver.url}/x` } });
    expect(refused.status).toBe(403);
    expect(JSON.stringify(refused.body)).toContain('a2a:push');
    expect((await rest('/subscriptions', reader)).status).toBe(403);
  });

  it('refuses bad input like a push config, and more than push.maxSubscriptionsPerOwner, storing nothing', async () => {
    const carol = bearer(await issuer.token({ sub: `carol-${randomBytes(3).toString('hex')}` }));
    const cases: [Record<string, unknown>, string][] = [
      [{}, 'url'],
      [{ url: 'not a url' }, 'url'],
      [{ url: 'http://169.254.169.254/latest/meta-data' }, 'PUSH_URL_'],
      [{ url: 'http://10.1.2.3/hook' }, 'PUSH_URL_'],
      [{ url: `${receiver.url}/x`, token: '********' }, 'mask'],
      [{ url: `${receiver.url}/x`, token: 'line\r\nbreak' }, 'control characters'],
      [{ url: `${receiver.url}/x`, contextId: '' }, 'contextId'],
    ];
    for (const [body, mentions] of cases) {
      const refused = await rest('/subscriptions', carol, { method: 'POST', body });
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(JSON.stringify(refused.body), JSON.stringify(body)).toContain(mentions);
    }
    expect((await rest('/subscriptions', carol)).body).toEqual({ subscriptions: [] });
    for (let i = 0; i < MAX_PER_OWNER; i++) await subscribe(carol, { url: `${receiver.url}/limit-${i}` });
    const over = await rest('/subscriptions', carol, { method: 'POST', body: { url: `${receiver.url}/limit-over` } });
    expect(over.status).toBe(429);
    expect(JSON.stringify(over.body)).toContain('SUBSCRIPTION_LIMIT');
    expect(JSON.stringify(over.body)).toContain('push.maxSubscriptionsPerOwner');
    expect(((await rest('/subscriptions', carol)).body.subscriptions as unknown[]).length).toBe(MAX_PER_OWNER);
  });

  it('a deleted subscription reaches no new task, and a running task stops sending to it', async () => {
    const dave = bearer(await issuer.token({ sub: `dave-${randomBytes(3).toString('hex')}` }));
    const path = hookPath('deleted');
    const created = await subscribe(dave, { url: `${receiver.url}${path}` });
    // Every delivery waits at the receiver a while, so the task's events queue up behind the first.
    receiver.behave({ delayMs: 400, pathPrefix: path });
    const started = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('long 12'), configuration: { returnImmediately: true } }, dave);
    const taskId = (started.body.result as { task: { id: string } }).task.id;
    await waitFor(() => (receiver.deliveries.some((d) => d.path === path) ? true : undefined), 20_000, 'a first delivery');
    expect((await rest(`/subscriptions/${created.id}`, dave, { method: 'DELETE' })).status).toBe(200);
    await waitFor(async () => {
      const { body } = await rpc(gw.jsonRpcUrl, 'GetTask', { id: taskId }, dave);
      return (body.result as { status: { state: string } }).status.state === 'TASK_STATE_COMPLETED' ? true : undefined;
    }, 30_000, 'the task to finish');
    // Its config is dropped from the task at its next delivery.
    await waitFor(async () => {
      const { body } = await rpc(gw.jsonRpcUrl, 'ListTaskPushNotificationConfigs', { taskId }, dave);
      return (body.result as { configs: unknown[] }).configs.length === 0 ? true : undefined;
    }, 20_000, 'the config to be dropped');
    receiver.reset();
    await new Promise((resolve) => setTimeout(resolve, 600));
    const sent = receiver.deliveries.filter((d) => d.path === path).length;
    expect(sent).toBeLessThan((await storedEventIds(taskId)).length);
    await sendEcho(dave, 'after delete');
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect(receiver.deliveries.filter((d) => d.path === path)).toHaveLength(sent);
  });

  it('a second gateway applies a subscription created on the first, also after it had read the owner had none', async () => {
    const erin = bearer(await issuer.token({ sub: `erin-${randomBytes(3).toString('hex')}` }));
    second = await startGatewayRole({ ...gw.config, port: 0 }, await Agents.load(gw.config, ROOT), createLogger('silent'), { baseDir: ROOT });
    const secondRpc = `${second.url}/a2a/jsonrpc`;
    // The second gateway learns erin has no subscriptions (and keeps that).
    await sendEcho(erin, 'before', {}, secondRpc);
    const path = hookPath('second');
    const created = await subscribe(erin, { url: `${receiver.url}${path}` });
    // The change is announced to every gateway; its copy is dropped on arrival.
    const task = await waitFor(async () => {
      const sent = await sendEcho(erin, 'after', {}, secondRpc);
      const { body } = await rpc(gw.jsonRpcUrl, 'ListTaskPushNotificationConfigs', { taskId: sent.id }, erin);
      return (body.result as { configs: unknown[] }).configs.length > 0 ? sent : undefined;
    }, 10_000, 'the second gateway to apply the subscription');
    await expectEveryEvent(path, created.id, [task.id]);
  });
});
