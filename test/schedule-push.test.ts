// A schedule with a push config: every task it starts gets that config (id schedule-<id>) from its
// first event, so the webhook receives every event of each fired task, signed; the schedule shows
// the config with its secrets masked; a config the receiver policy refuses (or a mask in place of
// a secret) refuses the schedule, storing nothing; without push notifications the field is
// refused. The owner's subscriptions apply to fired tasks too.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpc, startTestGateway, waitFor, type TestGateway } from './support/harness.ts';
import { startWebhookReceiver, type ReceivedDelivery, type WebhookReceiver } from './support/webhook-receiver.ts';

let gw: TestGateway;
let receiver: WebhookReceiver;
const HMAC_SECRET = `whsec_${randomBytes(24).toString('base64')}`;

beforeAll(async () => {
  gw = await startTestGateway({
    name: 'schedpush',
    config: {
      schedules: { minIntervalSeconds: 1, lateAfterMs: 1_500 },
      push: { allowedHosts: ['127.0.0.1'], sweepIntervalMs: 200, retryInitialDelayMs: 50, retryMaxDelayMs: 200 },
    },
  });
  receiver = await startWebhookReceiver({ jwksUrl: `${gw.url}/.well-known/jwks.json`, hmacSecret: HMAC_SECRET });
});

afterAll(async () => {
  await receiver?.close();
  await gw?.close();
});

interface Schedule {
  id: string;
  firedCount: number;
  firings: { state: string; taskId?: string }[];
  taskPushNotificationConfig?: { url: string; token?: string; authentication?: { scheme: string; credentials?: string } };
}

async function call<T>(method: string, params: Record<string, unknown>, url = gw.jsonRpcUrl): Promise<T> {
  const { body } = await rpc(url, method, params);
  if (body.error !== undefined) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
  return body.result as T;
}

async function storedEventIds(taskId: string): Promise<string[]> {
  return (await gw.redis.xrange(`${gw.prefix}:{${taskId}}:events`, '-', '+')).map(([id]) => id);
}

function taskOf(delivery: ReceivedDelivery): string {
  const json = delivery.json as Record<string, { id?: string; taskId?: string }>;
  return (json.task === undefined ? (json.statusUpdate ?? json.artifactUpdate ?? json.message)?.taskId : json.task.id) ?? '';
}

/** Fires a schedule every second until it has started `count` tasks, then pauses it; the started tasks' ids once they completed. */
async function firedTasks(scheduleId: string, count: number): Promise<string[]> {
  await waitFor(async () => ((await call<Schedule>('GetSchedule', { id: scheduleId })).firings.filter((f) => f.state === 'started').length >= count ? true : undefined), 20_000, 'the firings');
  await call('PauseSchedule', { id: scheduleId });
  await new Promise((resolve) => setTimeout(resolve, 500)); // a firing decided before the pause finishes starting
  const taskIds = (await call<Schedule>('GetSchedule', { id: scheduleId })).firings.flatMap((f) => (f.state === 'started' && f.taskId !== undefined ? [f.taskId] : []));
  for (const id of taskIds) {
    await waitFor(async () => ((await call<{ status: { state: string } }>('GetTask', { id })).status.state === 'TASK_STATE_COMPLETED' ? true : undefined), 20_000, 'a fired task to complete');
  }
  return taskIds;
}

describe('a schedule with a push config', () => {
  it('each task it starts delivers every event to the webhook, signed; reads mask the secret', async () => {
    const path = `/hooks/sched-${randomBytes(4).toString('hex')}`;
    const created = await call<Schedule>('CreateSchedule', {
      message: { parts: [{ text: 'echo scheduled' }] },
      cron: '* * * * * *',
      taskPushNotificationConfig: { url: `${receiver.url}${path}`, token: HMAC_SECRET, authentication: { scheme: 'Bearer', credentials: 'receiver-secret' } },
    });
    expect(created.taskPushNotificationConfig).toEqual({ url: `${receiver.url}${path}`, token: 'whsec_********', authentication: { scheme: 'Bearer', credentials: '********' } });
    expect(JSON.stringify(await call('GetSchedule', { id: created.id }))).not.toContain(HMAC_SECRET);
    const taskIds = await firedTasks(created.id, 2);
    expect(taskIds.length).toBeGreaterThanOrEqual(2);
    const expected = new Map<string, string[]>();
    for (const id of taskIds) expected.set(id, await storedEventIds(id));
    const total = [...expected.values()].reduce((n, ids) => n + ids.length, 0);
    await receiver.waitForAccepted(total, path);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const got = receiver.accepted(path);
    expect(got).toHaveLength(total);
    for (const [taskId, eventIds] of expected) {
      const mine = got.filter((d) => taskOf(d) === taskId);
      expect(mine.map((d) => d.webhookId.split('.').at(-1))).toEqual(eventIds);
      // The delivery id names the task and the schedule's config.
      expect(mine.every((d) => d.webhookId.startsWith(`${taskId}.schedule-${created.id}.`))).toBe(true);
    }
    expect(got.every((d) => d.ed25519Valid === true && d.hmacValid === true && d.headers.authorization === 'Bearer receiver-secret')).toBe(true);
    await call('DeleteSchedule', { id: created.id });
  });

  it("the owner's subscriptions apply to the tasks a schedule starts", async () => {
    const path = `/hooks/sched-sub-${randomBytes(4).toString('hex')}`;
    const subscription = await call<{ id: string }>('CreateSubscription', { url: `${receiver.url}${path}` });
    const created = await call<Schedule>('CreateSchedule', { message: { parts: [{ text: 'echo for the subscription' }] }, cron: '* * * * * *' });
    const taskIds = await firedTasks(created.id, 1);
    const total = (await Promise.all(taskIds.map(storedEventIds))).reduce((n, ids) => n + ids.length, 0);
    const got = await receiver.waitForAccepted(total, path);
    expect(new Set(got.map(taskOf))).toEqual(new Set(taskIds));
    expect(got.every((d) => d.webhookId.includes(`.sub-${subscription.id}.`))).toBe(true);
    await call('DeleteSchedule', { id: created.id });
    await call('DeleteSubscription', { id: subscription.id });
  });

  it('a push config the receiver policy refuses, or a mask for a secret, refuses the schedule; nothing is stored', async () => {
    const before = await call<{ schedules: unknown[] }>('ListSchedules', {});
    for (const [config, mentions] of [
      [{ url: 'http://169.254.169.254/hook' }, 'PUSH_URL_'],
      [{ url: 'not a url' }, 'taskPushNotificationConfig.url'],
      [{ url: `${receiver.url}/x`, token: 'whsec_********' }, 'taskPushNotificationConfig.token'],
    ] as const) {
      const { body } = await rpc(gw.jsonRpcUrl, 'CreateSchedule', { message: { parts: [{ text: 'echo no' }] }, cron: '0 9 * * *', taskPushNotificationConfig: config });
      expect((body.error as { code: number }).code, JSON.stringify(config)).toBe(-32602);
      expect(JSON.stringify(body.error), JSON.stringify(config)).toContain(mentions);
    }
    expect((await call<{ schedules: unknown[] }>('ListSchedules', {})).schedules).toHaveLength(before.schedules.length);
  });

  it('without push notifications, a schedule with a push config is refused', async () => {
    const off = await startTestGateway({ name: 'schedpush-off', inProcessWorker: false, config: { push: { enabled: false } } });
    try {
      const { body } = await rpc(off.jsonRpcUrl, 'CreateSchedule', { message: { parts: [{ text: 'echo no' }] }, cron: '0 9 * * *', taskPushNotificationConfig: { url: `${receiver.url}/x` } });
      expect((body.error as { code: number }).code).toBe(-32003);
      expect((await call<{ schedules: unknown[] }>('ListSchedules', {}, off.jsonRpcUrl)).schedules).toEqual([]);
      const subscription = await rpc(off.jsonRpcUrl, 'CreateSubscription', { url: `${receiver.url}/x` });
      expect((subscription.body.error as { code: number }).code).toBe(-32003);
      // Nor does its card declare the subscriptions extension.
      const card = (await (await fetch(`${off.url}/.well-known/agent-card.json`)).json()) as { capabilities: { extensions?: { uri: string }[] } };
      expect(card.capabilities.extensions?.map((e) => e.uri)).not.toContain('urn:a2a-gateway:ext:subscriptions:v1');
    } finally {
      await off.close();
    }
  });
});
