// The outbox's live path (src/push/push-role.ts): a worker hears every task's events on its
// pattern subscription and starts the deliveries of a task that has configs at once. A task's
// creation event alone starts nothing (no config can exist before its task). With the sweeper
// set a long way off, every event of a task with a config still reaches its receiver promptly:
// only the live path can have carried them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpc, startTestGateway, textMessage, type TestGateway } from './support/harness.ts';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.ts';

let gw: TestGateway;
let receiver: WebhookReceiver;

beforeAll(async () => {
  gw = await startTestGateway({
    name: 'push-live',
    // The sweeper would find what the live path missed, only two minutes later.
    config: { push: { allowedHosts: ['127.0.0.1'], sweepIntervalMs: 120_000, retryInitialDelayMs: 100, retryMaxDelayMs: 400 } },
  });
  receiver = await startWebhookReceiver({ jwksUrl: `${gw.url}/.well-known/jwks.json` });
});

afterAll(async () => {
  await receiver?.close();
  await gw?.close();
});

describe('push deliveries started by the live events', () => {
  it('reach the receiver within seconds when a task with a config moves again after a quiet spell, with the sweeper minutes away', async () => {
    const path = '/hooks/live';
    const events = async (taskId: string): Promise<string[]> => (await gw.redis.xrange(`${gw.prefix}:{${taskId}}:events`, '-', '+')).map(([, fields]) => fields[1] ?? '');
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', {
      message: textMessage('dialogue'),
      configuration: { taskPushNotificationConfig: { url: `${receiver.url}${path}` } },
    });
    const task = (body.result as { task: { id: string; status: { state: string } } }).task;
    expect(task.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    await receiver.waitForAccepted((await events(task.id)).length, path, 8_000);
    // Every delivery of the first turn is settled: nothing is in flight for the task now.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const answer = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('Ada', { taskId: task.id }) });
    expect((answer.body.result as { task: { status: { state: string } } }).task.status.state).toBe('TASK_STATE_COMPLETED');
    const stored = await events(task.id);
    const got = await receiver.waitForAccepted(stored.length, path, 8_000);
    expect(got.map((delivery) => delivery.body)).toEqual(stored);
  });
});
