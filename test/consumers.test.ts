// Consumers and their plans across two gateways on one Redis: the admin API manages them like
// the other kinds (versions, If-Match, audit, platform only); one consumer's requests and new
// tasks, split over both gateways, are refused exactly at its plan's limit with 429, Retry-After
// and a reason naming the plan and the limit, in each binding's shape; its usage (admin API and
// /metrics) equals what was done.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ListTasksRequest } from '@a2a-js/sdk';
import { status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import { carryOut, exportResources, planApply } from '../src/cli/admin-apply.ts';
import { detailsOf, metadataOf, rawGrpc } from './support/grpc.ts';
import { adminCall, violatedFields } from './support/admin-client.ts';
import { a2aCall, jsonRpc, refusalOf, startConsumerCluster, type Answer, type ConsumerCluster } from './support/consumer-cluster.ts';
import { textMessage, waitFor } from './support/harness.ts';
import { createTestIssuer, type TestIssuer } from './support/identity.ts';

let issuer: TestIssuer;
let cluster: ConsumerCluster;
let platform: string;

const unique = (label: string): string => `${label}-${randomBytes(3).toString('hex')}`;
const tokenOf = (sub: string, claims: Record<string, unknown> = {}): Promise<string> => issuer.token({ sub, ...claims });

beforeAll(async () => {
  issuer = await createTestIssuer();
  cluster = await startConsumerCluster('consumers', issuer.config, { default: { adapter: 'demo', adapterOptions: { stepMs: 200 } } }, {
    consumers: { 'configured-team': { members: { issuer: 'test', subjects: ['cfg-user'] }, plan: { name: 'from-file', tasksPerDay: 1 } } },
  });
  platform = await issuer.token({ scope: 'a2a:admin a2a:platform', sub: 'root' });
}, 60_000);

afterAll(async () => {
  await cluster?.close();
});

const putConsumer = (name: string, body: unknown, headers: Record<string, string> = {}) => adminCall(cluster.a.url, 'PUT', `/consumers/${name}`, { token: platform, body, headers });

/** A 429 with Retry-After (whole seconds, >= 1) in the binding's shape; the refusal's message and metadata. */
function expectPlanRefusal(answer: Answer, binding: 'JSON-RPC' | 'REST'): { message: string; metadata: Record<string, string>; retryAfter: number } {
  const text = JSON.stringify(answer.body);
  expect(answer.status, text).toBe(429);
  const retryAfter = Number(answer.headers.get('retry-after'));
  expect(Number.isInteger(retryAfter) && retryAfter >= 1, `Retry-After ${answer.headers.get('retry-after')}`).toBe(true);
  const error = answer.body.error as { code: number; status?: string };
  if (binding === 'JSON-RPC') expect(error.code).toBe(-31429);
  else expect([error.code, error.status]).toEqual([429, 'RESOURCE_EXHAUSTED']);
  return { ...refusalOf(answer), retryAfter };
}

describe('the consumers kind in the admin API', () => {
  it('is created, read, listed, replaced with If-Match, audited and deleted; bad bodies and clashes change nothing', async () => {
    const name = unique('team');
    const body = { description: 'team A', members: { issuer: 'test', subjects: ['ann'] }, plan: { name: 'gold', requestsPerSecond: 5, tasksPerDay: 100 } };
    const created = await putConsumer(name, body);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.headers.get('etag')).toBe('"1"');
    expect(created.body).toMatchObject({ name, version: 1, source: 'store', members: { issuer: 'test', subjects: ['ann'] }, plan: { name: 'gold', requestsPerSecond: 5 } });
    // Read through the other gateway: the control plane is shared.
    const read = await adminCall(cluster.b.url, 'GET', `/consumers/${name}`, { token: platform });
    expect(read.status).toBe(200);
    const listed = await adminCall(cluster.b.url, 'GET', '/consumers', { token: platform });
    expect((listed.body.items as { name: string }[]).map((item) => item.name)).toContain(name);

    expect((await putConsumer(name, body, { 'If-Match': '"7"' })).status).toBe(412);
    const replaced = await putConsumer(name, { ...body, plan: { name: 'silver' } }, { 'If-Match': '"1"' });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ version: 2, plan: { name: 'silver' } });

    const bad = await putConsumer(unique('bad'), { members: { issuer: 'test' }, plan: { tasksPerDay: -1 } });
    expect(bad.status).toBe(400);
    expect(violatedFields(bad.body)).toEqual(expect.arrayContaining(['members.subjects', 'plan.tasksPerDay']));
    const clash = await putConsumer(unique('other'), { members: { issuer: 'test', subjects: ['ann'] } });
    expect(clash.status).toBe(409);
    expect(JSON.stringify(clash.body)).toContain(name);

    // A plan bounds a tenant's callers: a tenant admin may not write one.
    const tenantAdmin = await issuer.token({ scope: 'a2a:admin', sub: 'acme-admin', tenant: 'acme' });
    expect((await adminCall(cluster.a.url, 'PUT', `/consumers/${unique('mine')}`, { token: tenantAdmin, body: { members: { tenant: 'acme' } } })).status).toBe(403);

    const audit = await adminCall(cluster.a.url, 'GET', '/audit', { token: platform });
    expect((audit.body.items as { kind: string; name: string }[]).filter((entry) => entry.kind === 'consumers' && entry.name === name)).toHaveLength(2);
    expect((await adminCall(cluster.a.url, 'DELETE', `/consumers/${name}`, { token: platform, headers: { 'If-Match': '"2"' } })).status).toBe(204);
    expect((await adminCall(cluster.b.url, 'GET', `/consumers/${name}`, { token: platform })).status).toBe(404);
    expect((await adminCall(cluster.b.url, 'GET', `/consumers/${name}/usage`, { token: platform })).status).toBe(404);
  });

  it('is exported and applied like the other kinds (`a2a-gateway admin export` / `apply`)', async () => {
    const name = unique('exported');
    expect((await putConsumer(name, { members: { tenant: unique('t') }, plan: { tasksPerDay: 7 } })).status).toBe(201);
    const target = { baseUrl: cluster.a.url, credentials: { token: platform }, timeoutMs: 10_000 };
    const exported = await exportResources(target);
    const entry = exported.consumers?.find((item) => item.name === name);
    expect(entry).toMatchObject({ name, tenant: '', plan: { tasksPerDay: 7 } });
    // Applied back as it is: nothing to change; with a new plan: replaced at the version read.
    expect((await planApply(target, { consumers: [entry as Record<string, unknown>] }, false)).map((change) => change.action)).toEqual(['unchanged']);
    const changed = { ...entry, plan: { tasksPerDay: 8 } };
    await carryOut(target, await planApply(target, { consumers: [changed] }, false));
    expect((await adminCall(cluster.b.url, 'GET', `/consumers/${name}`, { token: platform })).body).toMatchObject({ version: 2, plan: { tasksPerDay: 8 } });
  });
});

describe('a consumer of the configuration file', () => {
  it('is listed read-only and enforced like a stored one', async () => {
    const listed = await adminCall(cluster.a.url, 'GET', '/consumers', { token: platform });
    expect((listed.body.items as { name: string; source: string }[]).find((item) => item.name === 'configured-team')).toMatchObject({ source: 'config', plan: { name: 'from-file' } });
    expect((await putConsumer('configured-team', { plan: { tasksPerDay: 100 } })).status).toBe(409);
    expect((await putConsumer(unique('thief'), { members: { issuer: 'test', subjects: ['cfg-user'] } })).status).toBe(409);
    const token = await tokenOf('cfg-user');
    const send = (url: string) => jsonRpc(url, token, 'SendMessage', { message: textMessage('echo from file'), configuration: { returnImmediately: true } });
    expect((await send(cluster.a.url)).status).toBe(200);
    expect(refusalOf(await send(cluster.b.url)).metadata).toMatchObject({ consumer: 'configured-team', plan: 'from-file', planLimit: 'tasksPerDay' });
    const usage = await adminCall(cluster.b.url, 'GET', '/consumers/configured-team/usage', { token: platform });
    expect(usage.body).toMatchObject({ today: { tasks: 1 } });
  });
});

describe('requestsPerSecond', () => {
  it('the consumer\'s callers together get the burst over both gateways; the next call is refused in each binding, naming plan and limit', async () => {
    const name = unique('reqs');
    const [ann, bob] = [unique('ann'), unique('bob')];
    expect((await putConsumer(name, { members: { issuer: 'test', subjects: [ann, bob] }, plan: { name: 'bronze', requestsPerSecond: 0.001, burst: 4 } })).status).toBe(201);
    const [annToken, bobToken, outsider] = await Promise.all([tokenOf(ann), tokenOf(bob), tokenOf(unique('carol'))]);
    const calls: [string, string][] = [
      [cluster.a.url, annToken],
      [cluster.b.url, bobToken],
      [cluster.b.url, annToken],
      [cluster.a.url, bobToken],
    ];
    for (const [url, token] of calls) expect((await jsonRpc(url, token, 'ListTasks', {})).status).toBe(200);

    const overRpc = expectPlanRefusal(await jsonRpc(cluster.a.url, annToken, 'ListTasks', {}), 'JSON-RPC');
    expect(overRpc.message).toContain(`Consumer "${name}"`);
    expect(overRpc.message).toContain('plan "bronze"');
    expect(overRpc.message).toContain('requestsPerSecond');
    expect(overRpc.metadata).toMatchObject({ consumer: name, plan: 'bronze', planLimit: 'requestsPerSecond', limitName: 'consumer.requestsPerSecond' });
    expect(overRpc.retryAfter).toBeGreaterThan(100);
    const overRest = expectPlanRefusal(await a2aCall(`${cluster.b.url}/a2a/rest/tasks`, bobToken, undefined, 'GET'), 'REST');
    expect(overRest.metadata).toMatchObject({ plan: 'bronze', planLimit: 'requestsPerSecond' });
    const grpc = rawGrpc(cluster.b.grpc?.address as string);
    try {
      const { error } = await grpc.unary('listTasks', ListTasksRequest.fromJSON({}), metadataOf({ 'a2a-version': '1.0', authorization: `Bearer ${bobToken}` }));
      expect(error?.code).toBe(GrpcStatus.RESOURCE_EXHAUSTED);
      expect(error?.details).toContain('plan "bronze"');
      const details = detailsOf(error as ServiceError);
      expect(details.errorInfo?.metadata).toMatchObject({ consumer: name, planLimit: 'requestsPerSecond' });
      expect(details.retryDelaySeconds).toBeGreaterThan(100);
    } finally {
      grpc.close();
    }
    // Someone who is no consumer's is not held to the plan.
    expect((await jsonRpc(cluster.b.url, outsider, 'ListTasks', {})).status).toBe(200);

    const usage = await adminCall(cluster.b.url, 'GET', `/consumers/${name}/usage`, { token: platform });
    expect(usage.status).toBe(200);
    expect(usage.body).toMatchObject({ consumer: name, plan: 'bronze', today: { requests: 4, tasks: 0 }, month: { requests: 4 } });
  });
});

describe('under concurrency', () => {
  it('calls racing over both gateways get exactly the burst, and new tasks exactly the places of concurrentTasks', async () => {
    const name = unique('racers');
    const subs = [unique('r1'), unique('r2'), unique('r3')];
    expect((await putConsumer(name, { members: { issuer: 'test', subjects: subs }, plan: { requestsPerSecond: 0.001, burst: 7 } })).status).toBe(201);
    const tokens = await Promise.all(subs.map((sub) => tokenOf(sub)));
    const reads = await Promise.all(Array.from({ length: 20 }, (_, i) => jsonRpc(i % 2 === 0 ? cluster.a.url : cluster.b.url, tokens[i % 3] as string, 'ListTasks', {})));
    expect(reads.filter((answer) => answer.status === 200)).toHaveLength(7);
    expect(reads.filter((answer) => answer.status === 429)).toHaveLength(13);

    const tasksName = unique('racing-tasks');
    const taskSubs = [unique('s1'), unique('s2')];
    expect((await putConsumer(tasksName, { members: { issuer: 'test', subjects: taskSubs }, plan: { concurrentTasks: 3 } })).status).toBe(201);
    const taskTokens = await Promise.all(taskSubs.map((sub) => tokenOf(sub)));
    const send = (i: number) =>
      jsonRpc(i % 2 === 0 ? cluster.a.url : cluster.b.url, taskTokens[i % 2] as string, 'SendMessage', { message: textMessage('long 50'), configuration: { returnImmediately: true } });
    const sent = await Promise.all(Array.from({ length: 10 }, (_, i) => send(i)));
    const created = sent.filter((answer) => answer.status === 200);
    expect(created).toHaveLength(3);
    expect(sent.filter((answer) => refusalOf(answer).metadata.planLimit === 'concurrentTasks')).toHaveLength(7);
    const usage = await adminCall(cluster.a.url, 'GET', `/consumers/${tasksName}/usage`, { token: platform });
    expect(usage.body).toMatchObject({ today: { tasks: 3, requests: 10 } });
    for (const [i, answer] of created.entries()) {
      const id = (answer.body.result as { task: { id: string } }).task.id;
      const owner = sent.indexOf(answer) % 2;
      await jsonRpc(i % 2 === 0 ? cluster.b.url : cluster.a.url, taskTokens[owner] as string, 'CancelTask', { id });
    }
  });
});

describe('concurrentTasks and tasksPerDay', () => {
  const send = (url: string, token: string, text: string) => jsonRpc(url, token, 'SendMessage', { message: textMessage(text), configuration: { returnImmediately: true } });
  const taskIdOf = (answer: Answer): string => ((answer.body.result as { task: { id: string } }).task.id);

  it('a third task in progress is refused on either gateway until one ends; nothing of it is stored', async () => {
    const name = unique('busy');
    const sub = unique('dan');
    expect((await putConsumer(name, { members: { issuer: 'test', subjects: [sub] }, plan: { concurrentTasks: 2 } })).status).toBe(201);
    const token = await tokenOf(sub);
    const first = await send(cluster.a.url, token, 'long 50');
    const second = await send(cluster.b.url, token, 'long 50');
    expect([first.status, second.status]).toEqual([200, 200]);
    const refused = expectPlanRefusal(await send(cluster.a.url, token, 'long 50'), 'JSON-RPC');
    expect(refused.message).toContain(`plan "${name}"`);
    expect(refused.metadata).toMatchObject({ planLimit: 'concurrentTasks', limitName: 'consumer.concurrentTasks' });
    const listed = await jsonRpc(cluster.b.url, token, 'ListTasks', {});
    expect((listed.body.result as { tasks: unknown[] }).tasks).toHaveLength(2);

    // One ends (canceled): its place is free for the next task, on the other gateway.
    expect((await jsonRpc(cluster.b.url, token, 'CancelTask', { id: taskIdOf(first) })).status).toBe(200);
    const third = await waitFor(async () => {
      const answer = await send(cluster.b.url, token, 'long 50');
      return answer.status === 200 ? answer : undefined;
    }, 20_000, 'a place after the cancel');
    expectPlanRefusal(await send(cluster.a.url, token, 'long 50'), 'JSON-RPC');
    for (const id of [taskIdOf(second), taskIdOf(third)]) await jsonRpc(cluster.a.url, token, 'CancelTask', { id });
  });

  it('a tenant\'s callers get tasksPerDay new tasks over both gateways, then 429 until the next UTC day; follow-ups still go', async () => {
    const name = unique('daily');
    const tenant = unique('t');
    expect((await putConsumer(name, { members: { tenant }, plan: { name: 'daily-plan', tasksPerDay: 3 } })).status).toBe(201);
    const [eve, fay] = await Promise.all([tokenOf(unique('eve'), { tenant }), tokenOf(unique('fay'), { tenant })]);
    const made: string[] = [];
    for (const [url, token] of [[cluster.a.url, eve], [cluster.b.url, fay], [cluster.a.url, fay]] as const) {
      const answer = await send(url, token, made.length === 0 ? 'dialogue' : 'echo hi');
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      made.push(taskIdOf(answer));
    }
    const refusedRpc = expectPlanRefusal(await send(cluster.b.url, eve, 'echo one more'), 'JSON-RPC');
    expect(refusedRpc.message).toContain('plan "daily-plan"');
    expect(refusedRpc.message).toContain('tasksPerDay 3');
    const untilMidnight = Math.ceil((86_400_000 - (Date.now() % 86_400_000)) / 1000);
    expect(Math.abs(refusedRpc.retryAfter - untilMidnight)).toBeLessThanOrEqual(5);
    const refusedRest = await a2aCall(`${cluster.a.url}/a2a/rest/message:send`, fay, { message: textMessage('echo via rest'), configuration: { returnImmediately: true } });
    expect(expectPlanRefusal(refusedRest, 'REST').metadata).toMatchObject({ planLimit: 'tasksPerDay' });

    // A message to a task it has is no new task (the dialogue asked for a name).
    await waitFor(async () => {
      const task = await jsonRpc(cluster.a.url, eve, 'GetTask', { id: made[0] });
      return (task.body.result as { status: { state: string } }).status.state === 'TASK_STATE_INPUT_REQUIRED' || undefined;
    });
    const followUp = await jsonRpc(cluster.a.url, eve, 'SendMessage', { message: textMessage('Ada', { taskId: made[0] }), configuration: { returnImmediately: true } });
    expect(followUp.status).toBe(200);
    expect(followUp.body.error).toBeUndefined();

    const usage = await adminCall(cluster.a.url, 'GET', `/consumers/${name}/usage`, { token: platform });
    // Requests are the calls its rate admitted: 3 tasks, 2 refused by the task limit, 1 read, 1 follow-up.
    expect(usage.body).toMatchObject({ plan: 'daily-plan', limits: { tasksPerDay: 3, concurrentTasks: 0 }, today: { tasks: 3, requests: 7 }, month: { tasks: 3, requests: 7 } });

    const metrics = await (await fetch(`${cluster.b.url}/metrics`, { headers: { Authorization: `Bearer ${platform}` } })).text();
    expect(metrics).toContain(`a2a_consumer_usage{consumer="${name}",period="today",measure="tasks"} 3`);
    expect(metrics).toContain(`a2a_consumer_usage{consumer="${name}",period="month",measure="requests"} 7`);
  });
});
