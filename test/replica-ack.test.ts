// WAIT-acknowledged writes (redisWaitReplicas) against a primary and a replica this file starts
// (never the shared Redis): with the replica following, messages are accepted and the replica
// holds the task; with the replica stopped (SIGSTOP), acceptance fails with 503 + Retry-After
// and a re-send once it follows again is the same task; with the setting off no WAIT is sent.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';
import { startOwnRedis, type OwnRedis } from './support/redis-server.ts';
import { ReplicaAck } from '../src/redis/replica-ack.ts';
import { RedisKeys } from '../src/store/keys.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

let primary: OwnRedis;
let replica: OwnRedis;
let primaryClient: Redis;
let replicaClient: Redis;

const portOf = (url: string): string => new URL(url).port;

/** Calls of WAIT the primary has served since its stats were last reset. */
async function waitCalls(): Promise<number> {
  const stats = await primaryClient.info('commandstats');
  return Number(/cmdstat_wait:calls=(\d+)/.exec(stats)?.[1] ?? 0);
}

async function replicaFollows(): Promise<void> {
  await waitFor(async () => /master_link_status:up/.test(await replicaClient.info('replication')) || undefined, 15_000, 'the replica to follow the primary');
}

beforeAll(async () => {
  primary = await startOwnRedis();
  replica = await startOwnRedis({ args: ['--replicaof', '127.0.0.1', portOf(primary.url)] });
  primaryClient = new Redis(primary.url);
  replicaClient = new Redis(replica.url);
  await replicaFollows();
});

afterAll(async () => {
  replica?.resume();
  primaryClient?.disconnect();
  replicaClient?.disconnect();
  await replica?.stop();
  await primary?.stop();
});

// Long enough for a replica's acknowledgement on a loaded 2-core machine (a WAIT past it fails
// the acceptance), short enough that the stopped replica's refusal comes quickly.
const WAIT_TIMEOUT_MS = 1_500;

const gatewayOn = (name: string, replicas: number): Promise<TestGateway> =>
  startTestGateway({ name, config: { redisUrl: primary.url, redisClusterNodes: [], redisWaitReplicas: replicas, redisWaitTimeoutMs: WAIT_TIMEOUT_MS } });

describe('redisWaitReplicas 1, one replica following', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await gatewayOn('wait-on', 1);
  });
  afterAll(async () => {
    replica.resume();
    await gw?.close();
  });

  it('accepts messages once the replica holds them, and the replica has the finished task', async () => {
    await primaryClient.config('RESETSTAT');
    const sent = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('replicated echo') });
    expect(sent.status).toBe(200);
    const task = (sent.body.result as Json).task as Json;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    // Acceptance (gateway) and the final state (worker) each waited for the replica.
    expect(await waitCalls()).toBeGreaterThanOrEqual(2);
    const taskKey = new RedisKeys(gw.prefix).task(task.id as string).task;
    expect(await replicaClient.hget(taskKey, 'state')).toBe('TASK_STATE_COMPLETED');
  });

  it('refuses with 503 + Retry-After while the replica is stopped; the re-sent message is the same task', async () => {
    const message = textMessage('while the replica sleeps');
    replica.pause();
    let refused: { status: number; body: Json };
    try {
      refused = await rpc(gw.jsonRpcUrl, 'SendMessage', { message, configuration: { returnImmediately: true } });
    } finally {
      replica.resume();
    }
    expect(refused.status).toBe(503);
    const error = refused.body.error as Json;
    expect(error.message).toContain(`Only 0 of the 1 Redis replicas required (redisWaitReplicas) confirmed the write within ${WAIT_TIMEOUT_MS} ms`);
    expect(JSON.stringify(error.data)).toContain('REPLICAS_UNCONFIRMED');
    await replicaFollows();
    const again = await rpc(gw.jsonRpcUrl, 'SendMessage', { message });
    expect(again.status).toBe(200);
    const task = (again.body.result as Json).task as Json;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(task.id).toBe(/^Task (\S+) took the message/.exec(error.message as string)?.[1]);
  });
});

describe('redisWaitReplicas 0 (the default)', () => {
  it('sends no WAIT', async () => {
    const gw = await gatewayOn('wait-off', 0);
    try {
      await primaryClient.config('RESETSTAT');
      const sent = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('unreplicated echo') });
      expect(((sent.body.result as Json).task as Json).status.state).toBe('TASK_STATE_COMPLETED');
      expect(await waitCalls()).toBe(0);
    } finally {
      await gw.close();
    }
  });
});

describe('ReplicaAck', () => {
  it('serves callers that ask at once with one WAIT on the connection that wrote', async () => {
    const connection = new Redis(primary.url);
    try {
      const ack = new ReplicaAck(connection, { replicas: 1, timeoutMs: WAIT_TIMEOUT_MS });
      await Promise.all(Array.from({ length: 8 }, (_, i) => connection.set(`t-replica-ack:${i}`, 'x')));
      await primaryClient.config('RESETSTAT');
      await Promise.all(Array.from({ length: 8 }, (_, i) => ack.confirm([`t-replica-ack:${i}`])));
      expect(await waitCalls()).toBe(1);
      expect(await replicaClient.get('t-replica-ack:7')).toBe('x');
    } finally {
      connection.disconnect();
    }
  });
});
