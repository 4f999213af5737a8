// A schedule's firings start tasks of its owner, so a consumer's plan holds for them as for the
// owner's own SendMessage: past the plan's tasks per day or tasks in progress the firing is
// recorded as failed with the plan's reason (naming the consumer, the plan and the limit) and no
// task is stored; the usage counts exactly the tasks started; a place freed lets the next firing start.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCall } from './support/admin-client.ts';
import { jsonRpc, startConsumerCluster, type ConsumerCluster } from './support/consumer-cluster.ts';
import { textMessage, waitFor } from './support/harness.ts';
import { createTestIssuer, type TestIssuer } from './support/identity.ts';

let issuer: TestIssuer;
let cluster: ConsumerCluster;
let platform: string;

const unique = (label: string): string => `${label}-${randomBytes(3).toString('hex')}`;

interface Firing {
  state: string;
  taskId?: string;
  reason?: string;
}

beforeAll(async () => {
  issuer = await createTestIssuer();
  cluster = await startConsumerCluster('consched', issuer.config, { default: { adapter: 'demo', adapterOptions: { stepMs: 200 } } }, {
    schedules: { minIntervalSeconds: 1, lateAfterMs: 1_500 },
  });
  platform = await issuer.token({ scope: 'a2a:admin a2a:platform', sub: 'root' });
}, 60_000);

afterAll(async () => {
  await cluster?.close();
});

/** A consumer of one subject with `plan`; that subject's token. */
async function consumerWith(plan: Record<string, unknown>): Promise<{ name: string; token: string }> {
  const name = unique('sched-team');
  const subject = unique('sched-user');
  const put = await adminCall(cluster.a.url, 'PUT', `/consumers/${name}`, { token: platform, body: { members: { issuer: 'test', subjects: [subject] }, plan } });
  expect(put.status, JSON.stringify(put.body)).toBe(201);
  // Every process's control view (the worker's too) follows the change within a second.
  await new Promise((resolve) => setTimeout(resolve, 1_200));
  return { name, token: await issuer.token({ sub: subject }) };
}

async function call<T>(token: string, method: string, params: Record<string, unknown>): Promise<T> {
  const answer = await jsonRpc(cluster.a.url, token, method, params);
  if (answer.body.error !== undefined) throw new Error(`${method}: ${JSON.stringify(answer.body.error)}`);
  return answer.body.result as T;
}

const firingsOf = async (token: string, id: string): Promise<Firing[]> => (await call<{ firings: Firing[] }>(token, 'GetSchedule', { id })).firings;

/** Waits until the schedule's firings satisfy `done`, then pauses it and gives its firings once no firing is still starting. */
async function fireUntil(token: string, id: string, done: (firings: Firing[]) => boolean, what: string): Promise<Firing[]> {
  await waitFor(async () => (done(await firingsOf(token, id)) ? true : undefined), 30_000, what);
  await call(token, 'PauseSchedule', { id });
  await new Promise((resolve) => setTimeout(resolve, 500)); // a firing decided before the pause finishes starting
  return firingsOf(token, id);
}

describe("a schedule's firings under its owner's consumer plan", () => {
  it('start no more tasks a day than the plan allows; the others fail naming the plan, and usage counts what started', async () => {
    const { name, token } = await consumerWith({ name: 'two-a-day', tasksPerDay: 2 });
    const schedule = await call<{ id: string }>(token, 'CreateSchedule', { message: { parts: [{ text: 'echo scheduled' }] }, cron: '* * * * * *' });
    const firings = await fireUntil(token, schedule.id, (all) => all.filter((f) => f.state === 'failed').length >= 2, 'two refused firings');

    const started = firings.filter((f) => f.state === 'started');
    const failed = firings.filter((f) => f.state === 'failed');
    expect(started).toHaveLength(2);
    for (const firing of failed) {
      expect(firing.reason).toContain(`Consumer "${name}"`);
      expect(firing.reason).toContain('tasksPerDay 2');
      expect(firing.reason).toContain('"two-a-day"');
      // The refused firing stored no task.
      if (firing.taskId !== undefined) expect((await jsonRpc(cluster.a.url, token, 'GetTask', { id: firing.taskId })).body.error).toMatchObject({ code: -32001 });
    }
    const usage = await adminCall(cluster.b.url, 'GET', `/consumers/${name}/usage`, { token: platform });
    expect(usage.body).toMatchObject({ today: { tasks: 2 } });
    // The owner's own send meets the same spent plan.
    const send = await jsonRpc(cluster.b.url, token, 'SendMessage', { message: textMessage('echo one more') });
    expect(send.status).toBe(429);
    expect(JSON.stringify(send.body)).toContain('tasksPerDay 2');
  });

  it('wait for a place among the tasks in progress: refused while the owner has one running, started once it ended', async () => {
    const { name, token } = await consumerWith({ name: 'one-at-a-time', concurrentTasks: 1 });
    const running = await call<{ task: { id: string } }>(token, 'SendMessage', { message: textMessage('long 100'), configuration: { returnImmediately: true } });
    const schedule = await call<{ id: string }>(token, 'CreateSchedule', { message: { parts: [{ text: 'echo scheduled' }] }, cron: '* * * * * *' });
    await waitFor(async () => ((await firingsOf(token, schedule.id)).some((f) => f.state === 'failed') ? true : undefined), 30_000, 'a refused firing');
    const refused = await firingsOf(token, schedule.id);
    expect(refused.filter((f) => f.state === 'started')).toEqual([]);
    expect(refused.find((f) => f.state === 'failed')?.reason).toContain(`Consumer "${name}" reached the limit concurrentTasks 1 of its plan "one-at-a-time"`);

    await call(token, 'CancelTask', { id: running.task.id });
    const firings = await fireUntil(token, schedule.id, (all) => all.some((f) => f.state === 'started'), 'a firing started after the running task ended');
    const started = firings.filter((f) => f.state === 'started');
    expect(started.length).toBeGreaterThanOrEqual(1);
    const task = await call<{ status: { state: string } }>(token, 'GetTask', { id: started[0]?.taskId });
    expect(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']).toContain(task.status.state);
  });
});
