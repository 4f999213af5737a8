// Push deliveries survive crashes: a worker process SIGKILLed mid-delivery and a gateway
// restarted while deliveries are pending lose nothing (every event reaches the receiver, in
// order, each under one webhook-id); a delivery marked in flight whose job was never added (a
// crash between the two) is found by the sweeper; events whose live announcement nobody heard
// are found by the sweeper too.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agents } from '../src/agents/agents.ts';
import { startGatewayRole, type GatewayHandle } from '../src/gateway/server.ts';
import { createLogger } from '../src/logging/logger.ts';
import { PushKeys } from '../src/store/push/push-keys.ts';
import { PushStore } from '../src/store/push/push-store.ts';
import { startWorkerRole } from '../src/runtime/worker-role.ts';
import { ROOT, rpc, spawnWorkerProcess, startTestGateway, textMessage, waitFor, type TestGateway, type WorkerProcess } from './support/harness.ts';
import { startWebhookReceiver, type ReceivedDelivery, type WebhookReceiver } from './support/webhook-receiver.ts';

const PUSH = { allowedHosts: ['127.0.0.1'], sweepIntervalMs: 200, retryInitialDelayMs: 100, retryMaxDelayMs: 300, timeoutMs: 1_000 };

let gw: TestGateway;
let receiver: WebhookReceiver;
const workers: WorkerProcess[] = [];
let workerEnv: Record<string, string>;
let restarted: GatewayHandle | undefined;

beforeAll(async () => {
  gw = await startTestGateway({ name: 'pushrec', inProcessWorker: false, config: { push: PUSH } });
  receiver = await startWebhookReceiver({ jwksUrl: `${gw.url}/.well-known/jwks.json` });
  const configFile = join(gw.config.dataDir, 'worker.json');
  await writeFile(configFile, JSON.stringify({ push: PUSH }));
  // Same data directory: the worker signs with the key the gateway publishes.
  workerEnv = { A2A_CONFIG: configFile, A2A_DATA_DIR: gw.config.dataDir, A2A_ADAPTER_OPTIONS: '{"stepMs":30}' };
}, 60_000);

afterAll(async () => {
  for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.kill('SIGKILL');
  await Promise.all(workers.map((w) => w.exited));
  await receiver?.close();
  await restarted?.close();
  await gw?.close();
}, 60_000);

async function storedEvents(taskId: string): Promise<{ id: string; json: string }[]> {
  return (await gw.redis.xrange(`${gw.prefix}:{${taskId}}:events`, '-', '+')).map(([id, fields]) => ({ id, json: fields[1] ?? '' }));
}

/** What a receiver that dedups on webhook-id keeps, and proof no event came under two ids. */
function dedupedBodies(deliveries: ReceivedDelivery[]): string[] {
  const idsByBody = new Map<string, Set<string>>();
  const seen = new Set<string>();
  const bodies: string[] = [];
  for (const d of deliveries) {
    idsByBody.set(d.body, (idsByBody.get(d.body) ?? new Set()).add(d.webhookId));
    if (seen.has(d.webhookId)) continue;
    seen.add(d.webhookId);
    bodies.push(d.body);
  }
  for (const ids of idsByBody.values()) expect(ids.size).toBe(1);
  return bodies;
}

async function isTerminal(taskId: string): Promise<boolean> {
  const state = await gw.redis.hget(`${gw.prefix}:{${taskId}}:task`, 'state');
  return state === 'TASK_STATE_COMPLETED' || state === 'TASK_STATE_FAILED';
}

describe('push delivery across crashes', () => {
  it('a SIGKILLed worker and a restarted gateway lose no delivery', async () => {
    workers.push(await spawnWorkerProcess(gw.prefix, workerEnv));
    receiver.behave({ delayMs: 120 }); // deliveries are slower than events: a backlog builds up
    const path = '/crash';
    const words = Array.from({ length: 25 }, (_, i) => `w${i}`).join(' ');
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', {
      message: textMessage(`stream ${words}`),
      configuration: { returnImmediately: true, taskPushNotificationConfig: { url: `${receiver.url}${path}` } },
    });
    const taskId = (body.result as { task: { id: string } }).task.id;
    await waitFor(() => receiver.deliveries.length >= 4 || undefined, 20_000, 'some deliveries');
    workers[0]?.kill('SIGKILL');
    await workers[0]?.exited;
    const atKill = receiver.deliveries.length;

    // The gateway restarts meanwhile, on the same port (nothing of push delivery lives in it).
    const agents = await Agents.load(gw.config, ROOT);
    await gw.gateway.close();
    restarted = await startGatewayRole({ ...gw.config, port: gw.gateway.port }, agents, createLogger('silent'), { baseDir: ROOT });
    {
      receiver.reset();
      workers.push(await spawnWorkerProcess(gw.prefix, workerEnv));
      await waitFor(() => isTerminal(taskId), 30_000, 'the task to finish on the new worker');
      const stored = await storedEvents(taskId);
      await waitFor(() => new Set(receiver.accepted(path).map((d) => d.webhookId)).size >= stored.length || undefined, 30_000, 'every event delivered');
      expect(atKill).toBeLessThan(stored.length);
      expect(dedupedBodies(receiver.accepted(path))).toEqual(stored.map((e) => e.json));
      expect(receiver.accepted(path).every((d) => d.ed25519Valid === true)).toBe(true);
    }
  }, 90_000);

  it('a delivery marked in flight whose job was never added is sent by the sweeper', async () => {
    for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.kill('SIGKILL');
    await Promise.all(workers.map((w) => w.exited));
    const path = '/lost-job';
    // No worker runs: the task stays SUBMITTED with one event, its creation.
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', {
      message: textMessage('echo lost'),
      configuration: { returnImmediately: true, taskPushNotificationConfig: { url: `${receiver.url}${path}` } },
    });
    const taskId = (body.result as { task: { id: string } }).task.id;
    // What a dispatcher that crashed right after pushNext leaves: the event in flight, no job.
    const store = new PushStore(gw.redis, gw.prefix);
    const next = await store.next(taskId, true);
    expect(next.kind === 'ok' && next.deliveries.map((d) => d.kind)).toEqual(['new']);
    const worker = await startWorkerRole({ ...gw.config, push: { ...gw.config.push, ...PUSH } }, await Agents.load(gw.config, ROOT), createLogger('silent'), { baseDir: ROOT });
    try {
      await waitFor(() => isTerminal(taskId), 20_000, 'the task to finish');
      const stored = await storedEvents(taskId);
      await waitFor(() => new Set(receiver.accepted(path).map((d) => d.webhookId)).size >= stored.length || undefined, 20_000, 'every event delivered');
      expect(dedupedBodies(receiver.accepted(path))).toEqual(stored.map((e) => e.json));
    } finally {
      await worker.close();
    }
  }, 60_000);

  it('events nobody heard live (no worker subscribed) are found by the sweeper', async () => {
    const path = '/unheard';
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', {
      message: textMessage('echo unheard'),
      configuration: { returnImmediately: true, taskPushNotificationConfig: { url: `${receiver.url}${path}` } },
    });
    const taskId = (body.result as { task: { id: string } }).task.id;
    // Its creation event and the "config attached" note were published before any worker listened.
    const worker = await startWorkerRole({ ...gw.config, push: { ...gw.config.push, ...PUSH, sweepIntervalMs: 300 } }, await Agents.load(gw.config, ROOT), createLogger('silent'), { baseDir: ROOT });
    try {
      await waitFor(() => isTerminal(taskId), 20_000, 'the task to finish');
      const stored = await storedEvents(taskId);
      await waitFor(() => new Set(receiver.accepted(path).map((d) => d.webhookId)).size >= stored.length || undefined, 20_000, 'every event delivered');
      expect(dedupedBodies(receiver.accepted(path))).toEqual(stored.map((e) => e.json));
      // Fully delivered and finished: its outbox entry goes.
      const shard = new PushKeys(gw.prefix);
      await waitFor(async () => ((await gw.redis.zscore(shard.outbox(shard.shardOf(taskId)), taskId)) === null ? true : undefined), 10_000, 'the outbox entry to go');
    } finally {
      await worker.close();
    }
  }, 60_000);
});
