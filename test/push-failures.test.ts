// Push delivery when receivers misbehave: down then up, 500, 429 with Retry-After, timeouts,
// 410, other 4xx, redirects, retries past the horizon, dead letters and their replay, and the
// per-receiver circuit breaker. Real HTTP receivers, real Redis, real BullMQ.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';
import { startWebhookReceiver, type ReceivedDelivery, type WebhookReceiver } from './support/webhook-receiver.ts';

let gw: TestGateway;
let receiver: WebhookReceiver;

const PUSH = {
  allowedHosts: ['127.0.0.1'],
  sweepIntervalMs: 200,
  retryInitialDelayMs: 100,
  retryMaxDelayMs: 300,
  retryHorizonMs: 2_500,
  timeoutMs: 400,
  breakerFailureThreshold: 1_000,
};

beforeAll(async () => {
  gw = await startTestGateway({ name: 'pushfail', config: { push: PUSH } });
  receiver = await startWebhookReceiver({ jwksUrl: `${gw.url}/.well-known/jwks.json` });
});

afterAll(async () => {
  await receiver?.close();
  await gw?.close();
});

const hookPath = (name: string): string => `/hooks/${name}-${randomBytes(4).toString('hex')}`;

async function storedEvents(taskId: string, on: TestGateway = gw): Promise<{ id: string; json: string }[]> {
  return (await on.redis.xrange(`${on.prefix}:{${taskId}}:events`, '-', '+')).map(([id, fields]) => ({ id, json: fields[1] ?? '' }));
}

/** Starts a task whose events go to `path`; returns its id once it is finished. */
async function runTask(text: string, path: string, on: TestGateway = gw): Promise<string> {
  const { body } = await rpc(on.jsonRpcUrl, 'SendMessage', {
    message: textMessage(text),
    configuration: { taskPushNotificationConfig: { id: 'hook', url: `${receiver.url}${path}` } },
  });
  expect(body.error).toBeUndefined();
  return (body.result as { task: { id: string } }).task.id;
}

const toPath = (path: string) => (d: ReceivedDelivery) => d.path === path;

/** One delivery per webhook-id, in arrival order: what a receiver that dedups keeps. */
function deduplicated(deliveries: ReceivedDelivery[]): ReceivedDelivery[] {
  const seen = new Set<string>();
  return deliveries.filter((d) => (seen.has(d.webhookId) ? false : (seen.add(d.webhookId), true)));
}

async function deadLetters(taskId?: string, on: TestGateway = gw): Promise<{ id: string; taskId: string; lastError: string; lastStatus?: number; attempts: number; configDisabled?: boolean; replays: number }[]> {
  const { body } = await rpc(on.jsonRpcUrl, 'ListPushDeadLetters', taskId === undefined ? {} : { taskId });
  expect(body.error).toBeUndefined();
  return (body.result as { deadLetters: never[] }).deadLetters;
}

describe('push delivery through receiver failures', () => {
  it('a receiver down for a while then up gets everything, in order, each event under one id [guarantee:push.at-least-once]', async () => {
    const path = hookPath('down');
    await receiver.down();
    const taskId = await runTask('stream one two three four five', path);
    const stored = await storedEvents(taskId);
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    await receiver.up();
    const got = await receiver.waitForAccepted(stored.length, path);
    expect(got.map((d) => d.body)).toEqual(stored.map((e) => e.json));
    expect(new Set(got.map((d) => d.webhookId)).size).toBe(stored.length);
    expect(got.every((d) => d.ed25519Valid === true)).toBe(true);
  });

  it('500 answers are retried under the same webhook-id; later events wait their turn', async () => {
    const path = hookPath('500');
    receiver.behave({ status: 500, times: 3, pathPrefix: path });
    const taskId = await runTask('echo retry me', path);
    const stored = await storedEvents(taskId);
    await receiver.waitForAccepted(stored.length, path);
    const all = receiver.deliveries.filter(toPath(path));
    expect(all.slice(0, 4).map((d) => d.answered)).toEqual([500, 500, 500, 200]);
    expect(new Set(all.slice(0, 4).map((d) => d.webhookId)).size).toBe(1);
    expect(all.slice(3).map((d) => d.body)).toEqual(stored.map((e) => e.json));
  });

  it("429 with Retry-After waits at least what the receiver asked for", async () => {
    const path = hookPath('429');
    receiver.behave({ status: 429, times: 1, retryAfterSeconds: 1, pathPrefix: path });
    const taskId = await runTask('echo slow down', path);
    const stored = await storedEvents(taskId);
    await receiver.waitForAccepted(stored.length, path);
    const [refused, retried] = receiver.deliveries.filter(toPath(path));
    expect(refused?.answered).toBe(429);
    expect(retried?.webhookId).toBe(refused?.webhookId);
    expect((retried?.atMs ?? 0) - (refused?.atMs ?? 0)).toBeGreaterThanOrEqual(950);
  });

  it('a receiver slower than push.timeoutMs is retried, then delivered', async () => {
    const path = hookPath('timeout');
    receiver.behave({ delayMs: 1_000, times: 1, pathPrefix: path });
    const taskId = await runTask('echo wait', path);
    const stored = await storedEvents(taskId);
    const got = await receiver.waitForAccepted(stored.length + 1, path); // the slow answer came too late to count
    expect(deduplicated(got).map((d) => d.body)).toEqual(stored.map((e) => e.json));
  });

  it('410 disables the config: nothing more is sent, List leaves it out, the dead letter says so', async () => {
    const path = hookPath('410');
    receiver.behave({ status: 410, pathPrefix: path });
    const taskId = await runTask('stream a b c d', path);
    await waitFor(async () => (await deadLetters(taskId)).length > 0 || undefined, 10_000, 'the dead letter');
    await new Promise((resolve) => setTimeout(resolve, 800));
    receiver.reset();
    expect(receiver.deliveries.filter(toPath(path))).toHaveLength(1);
    const [letter] = await deadLetters(taskId);
    expect(letter).toMatchObject({ taskId, lastStatus: 410, configDisabled: true });
    const listed = (await rpc(gw.jsonRpcUrl, 'ListTaskPushNotificationConfigs', { taskId })).body.result as { configs: unknown[] };
    expect(listed.configs).toEqual([]);
    // Creating it again enables it: the events after that point are sent.
    const again = await rpc(gw.jsonRpcUrl, 'CreateTaskPushNotificationConfig', { taskId, id: 'hook', url: `${receiver.url}${path}` });
    expect(again.body.error).toBeUndefined();
  });

  it('another 4xx fails fast: one try, dead-lettered, and the next events still go', async () => {
    const path = hookPath('400');
    receiver.behave({ status: 400, times: 1, pathPrefix: path });
    const taskId = await runTask('echo bad request', path);
    const stored = await storedEvents(taskId);
    await receiver.waitForAccepted(stored.length - 1, path);
    const all = receiver.deliveries.filter(toPath(path));
    expect(all.map((d) => d.answered)).toEqual([400, ...stored.slice(1).map(() => 200)]);
    expect(all.map((d) => d.body)).toEqual(stored.map((e) => e.json));
    const letters = await deadLetters(taskId);
    expect(letters).toHaveLength(1);
    expect(letters[0]).toMatchObject({ lastStatus: 400, attempts: 1 });
  });

  it('a redirect is a failure and is never followed', async () => {
    const path = hookPath('302');
    receiver.behave({ status: 302, times: 1, pathPrefix: path });
    const taskId = await runTask('echo moved', path);
    await waitFor(async () => (await deadLetters(taskId)).length > 0 || undefined, 10_000, 'the dead letter');
    const letter = (await deadLetters(taskId))[0];
    expect(letter?.lastStatus).toBe(302);
    expect(letter?.lastError).toMatch(/redirect/);
    // The receiver sent no Location: a followed redirect would have shown up as a second request for the same id.
    expect(receiver.deliveries.filter(toPath(path)).filter((d) => d.webhookId === letter?.id)).toHaveLength(1);
  });

  it('retries end at the horizon with a dead letter; an operator replays it under the same id [guarantee:push.at-least-once]', async () => {
    // A gateway of its own with a shorter horizon: every event of the task waits it out in turn.
    // 1.5 s still holds several retries (100–300 ms apart) where the test needs three; the
    // suite's 2.5 s must outlast the down receiver of the first test.
    const hgw = await startTestGateway({ name: 'pushhzn', config: { push: { ...PUSH, retryHorizonMs: 1_500 } } });
    onTestFinished(() => hgw.close());
    const path = hookPath('horizon');
    receiver.behave({ status: 503, pathPrefix: path });
    const taskId = await runTask('echo never', path, hgw);
    const stored = await storedEvents(taskId, hgw);
    // Every event is dead-lettered in turn (the chain moves on after each).
    const letters = await waitFor(async () => {
      const found = await deadLetters(taskId, hgw);
      return found.length === stored.length ? found : undefined;
    }, 30_000, 'every event dead-lettered');
    receiver.reset();
    for (const letter of letters) {
      expect(letter.lastStatus).toBe(503);
      expect(letter.attempts).toBeGreaterThan(2);
      expect(letter.lastError).toMatch(/horizon/);
    }
    const first = letters.find((l) => l.id.endsWith(`.${stored[0]?.id}`));
    expect(first).toBeDefined();
    const replay = await rpc(hgw.jsonRpcUrl, 'ReplayPushDeadLetter', { id: first?.id });
    expect(replay.body.result).toMatchObject({ id: first?.id, replay: 1, state: 'queued' });
    const delivered = await receiver.waitForAccepted(1, path);
    expect(delivered[0]?.webhookId).toBe(first?.id);
    expect(delivered[0]?.body).toBe(stored[0]?.json);
    await waitFor(async () => ((await deadLetters(taskId, hgw)).some((l) => l.id === first?.id) ? undefined : true), 10_000, 'the replayed dead letter to leave the list');
    // REST route too, and an unknown id is refused.
    const rest = await fetch(`${hgw.restUrl}/push/deadLetters?taskId=${taskId}`, { headers: { 'A2A-Version': '1.0' } });
    expect(((await rest.json()) as { deadLetters: unknown[] }).deadLetters).toHaveLength(stored.length - 1);
    const unknown = await fetch(`${hgw.restUrl}/push/deadLetters/nope.x.1-0:replay`, { method: 'POST', headers: { 'A2A-Version': '1.0' } });
    expect(unknown.status).toBe(404);
  });
});

describe('circuit breaker per receiver', () => {
  let breakerGw: TestGateway;
  let dead: WebhookReceiver;

  beforeAll(async () => {
    breakerGw = await startTestGateway({
      name: 'pushbrk',
      config: { push: { ...PUSH, retryHorizonMs: 60_000, breakerFailureThreshold: 3, breakerCooldownMs: 3_000 } },
    });
    dead = await startWebhookReceiver();
  });

  afterAll(async () => {
    await dead?.close();
    await breakerGw?.close();
  });

  it('after the threshold the receiver is left alone for the cooldown, then probed; its recovery lets everything through', async () => {
    dead.behave({ status: 503 });
    const ids: string[] = [];
    for (let i = 0; i < 4; i += 1) {
      const { body } = await rpc(breakerGw.jsonRpcUrl, 'SendMessage', {
        message: textMessage(`echo task ${i}`),
        configuration: { taskPushNotificationConfig: { url: `${dead.url}/hook/${i}` } },
      });
      ids.push((body.result as { task: { id: string } }).task.id);
    }
    await waitFor(() => dead.deliveries.length >= 3 || undefined, 10_000, 'three failures');
    // Requests already on their way when the circuit opened still arrive: wait until none has for a while.
    let seen = -1;
    await waitFor(async () => {
      const now = dead.deliveries.length;
      if (now === seen) return true;
      seen = now;
      await new Promise((resolve) => setTimeout(resolve, 400));
      return undefined;
    }, 5_000, 'the requests in flight to land');
    const whenOpen = dead.deliveries.length;
    expect(whenOpen).toBeLessThan(8);
    // Four chains with retries every 100–300 ms would send ~10 requests in a second; an open circuit sends none.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(dead.deliveries.length).toBe(whenOpen);
    dead.reset();
    const total = (await Promise.all(ids.map(async (id) => (await breakerGw.redis.xlen(`${breakerGw.prefix}:{${id}}:events`))))).reduce((a, b) => a + b, 0);
    await dead.waitForAccepted(total, undefined, 20_000);
    for (const [i, id] of ids.entries()) {
      const stored = (await breakerGw.redis.xrange(`${breakerGw.prefix}:{${id}}:events`, '-', '+')).map(([, f]) => f[1]);
      expect(deduplicated(dead.accepted(`/hook/${i}`)).map((d) => d.body)).toEqual(stored);
    }
  });
});
