// The Cluster plumbing on a real Redis Cluster (the run's own 3+3, or the one
// A2A_TEST_REDIS_CLUSTER_NODES names): slots computed as Redis does, scans and cross-task reads
// over every master, sharded live delivery subscribed per watched task, SPUBLISH in the scripts,
// hash-tagged turn queues. The gateway suites run on a Cluster through `npm run test:cluster`.
import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTurnQueue } from '../queues/turns.ts';
import { configSchema } from '../src/config/schema.ts';
import { EventHub, type LiveEvent } from '../src/events/hub.ts';
import { openRedis, type RedisTarget } from '../src/redis/connection.ts';
import { pipelineAcrossSlots, scanKeys } from '../src/redis/cross-slot.ts';
import { keySlot } from '../src/redis/key-slot.ts';
import { RedisKeys } from '../src/store/keys.ts';
import { scriptSource, type ScriptName } from '../src/store/scripts.ts';
import { deletePrefix, REDIS_URL, uniquePrefix, waitFor } from './support/harness.ts';
import { startRedisCluster, type OwnRedisCluster } from './support/redis-cluster.ts';

let own: OwnRedisCluster | undefined;
let target: RedisTarget;
let redis: Cluster;
const prefix = uniquePrefix('cluster');
const keys = new RedisKeys(prefix);
const taskIds = Array.from({ length: 40 }, (_, i) => `01HZCLUSTERTEST${String(i).padStart(11, '0')}`);

beforeAll(async () => {
  let seeds = process.env.A2A_TEST_REDIS_CLUSTER_NODES ?? '';
  if (seeds === '') {
    own = await startRedisCluster();
    seeds = own.seeds;
  }
  target = { redisUrl: REDIS_URL, redisClusterNodes: seeds.split(',') };
  redis = openRedis(target, 'commands') as Cluster;
  await new Promise<void>((resolve) => (redis.status === 'ready' ? resolve() : redis.once('ready', () => resolve())));
}, 60_000);

afterAll(async () => {
  await deletePrefix(redis, prefix);
  redis.disconnect();
  await own?.stop();
});

describe('Redis Cluster plumbing', () => {
  it('opens a Cluster connection when redisClusterNodes is set, and refuses a seed that is not host:port', () => {
    expect(redis.isCluster).toBe(true);
    expect(configSchema.parse({ redisClusterNodes: '10.0.0.1:7000, 10.0.0.2:7001' }).redisClusterNodes).toEqual(['10.0.0.1:7000', '10.0.0.2:7001']);
    expect(configSchema.parse({}).redisClusterNodes).toEqual([]);
    expect(() => configSchema.parse({ redisClusterNodes: '10.0.0.1' })).toThrow(/not host:port/);
  });

  it('runs Cluster connections without auto-pipelining (its callback can throw uncatchably while slots move) and with retries that outlast a failover', () => {
    // 'commands' asks for auto-pipelining on a single Redis; on a Cluster it stays off.
    expect(redis.options.enableAutoPipelining).toBe(false);
    expect(redis.options.redisOptions?.enableAutoPipelining).toBeUndefined();
    const { maxRedirections = 16, retryDelayOnFailover = 100 } = redis.options;
    expect(maxRedirections * retryDelayOnFailover).toBeGreaterThanOrEqual(15_000);
  });

  it('computes every kind of key slot as CLUSTER KEYSLOT does', async () => {
    const samples = [
      keys.task(taskIds[0] as string).task,
      keys.eventChannel(taskIds[1] as string),
      keys.taskCancelChannel(taskIds[2] as string),
      keys.ownerQuota('agent%3Ademo'),
      keys.recentTasks(),
      `${prefix}:no-tag-at-all`,
      `${prefix}:{}:empty-tag`,
      'héllo{wörld}',
    ];
    for (const key of samples) expect(keySlot(key), key).toBe(Number(await redis.cluster('KEYSLOT', key)));
    // Channels of a task are in its slot: its scripts may SPUBLISH on them.
    expect(keySlot(keys.eventChannel(taskIds[0] as string))).toBe(keySlot(keys.task(taskIds[0] as string).task));
    expect(keySlot(keys.taskCancelChannel(taskIds[0] as string))).toBe(keySlot(keys.task(taskIds[0] as string).task));
  });

  it('scans every master, and reads many tasks in one pipeline per node, answers in order', async () => {
    await Promise.all(taskIds.map((id, i) => redis.hset(keys.task(id).task, 'n', String(i))));
    const masters = redis.nodes('master');
    expect(masters.length).toBeGreaterThanOrEqual(3);
    const found: string[] = [];
    for await (const batch of scanKeys(redis, `${prefix}:*:task`, 100)) found.push(...batch);
    expect(found.sort()).toEqual(taskIds.map((id) => keys.task(id).task).sort());
    // One master alone holds only its share: a plain SCAN would miss the rest.
    const [, onFirst] = await (masters[0] as NonNullable<(typeof masters)[0]>).scan('0', 'MATCH', `${prefix}:*:task`, 'COUNT', 1000);
    expect(onFirst.length).toBeLessThan(taskIds.length);

    const replies = await pipelineAcrossSlots(redis, taskIds.map((id) => keys.task(id).task), (pipeline, i) => {
      pipeline.hget(keys.task(taskIds[i] as string).task, 'n');
      pipeline.exists(keys.task(taskIds[i] as string).task);
    });
    expect(replies.map((group) => group.map(([error, value]) => (error === null ? value : error.message)))).toEqual(taskIds.map((_, i) => [String(i), 1]));
  });

  it('delivers SPUBLISHed task events to a listener once its subscription is confirmed, and unsubscribes when the last listener leaves', async () => {
    const subscriber = openRedis(target, 'events');
    const hub = new EventHub(subscriber, keys);
    await hub.start();
    expect(hub.subscribesPerTask).toBe(true);
    expect(hub.watchesEveryTask).toBe(false);
    const taskId = taskIds[5] as string;
    const channel = keys.eventChannel(taskId);
    const received: LiveEvent[] = [];
    const stop = hub.listen(taskId, (event) => received.push(event));
    const second = hub.listen(taskId, () => undefined);
    await hub.listening(taskId);
    const owner = redis.nodes('master').find((node) => node.options.port === ownerPortOf(channel));
    expect(owner).toBeDefined();
    const subscribers = async (): Promise<number> => Number(((await owner?.call('PUBSUB', 'SHARDNUMSUB', channel)) as [string, number])[1]);
    expect(await subscribers()).toBe(1); // one SSUBSCRIBE however many local listeners
    await redis.spublish(channel, '1-0\n{"statusUpdate":{"taskId":"x","status":{"state":"TASK_STATE_WORKING"}}}');
    await waitFor(() => received.length === 1 || undefined, 5_000, 'the sharded event');
    expect(received[0]).toMatchObject({ id: '1-0', state: 'TASK_STATE_WORKING' });
    stop();
    expect(await subscribers()).toBe(1);
    second();
    await waitFor(async () => (await subscribers()) === 0 || undefined, 5_000, 'the SSUNSUBSCRIBE');
    subscriber.disconnect();
  });

  it("has every listener re-read what it missed once ioredis moved the shard subscriptions ('subscribersReady' after a failover)", async () => {
    const subscriber = openRedis(target, 'events');
    const hub = new EventHub(subscriber, keys);
    await hub.start();
    const taskId = taskIds[6] as string;
    let gaps = 0;
    const stop = hub.listen(taskId, () => undefined, () => {
      gaps += 1;
    });
    await hub.listening(taskId);
    // What ioredis's subscriber group says once it re-sent the SSUBSCRIBEs to a shard's new master:
    // events the shard published meanwhile reached no one, so each listener must read them back.
    subscriber.emit('subscribersReady');
    await waitFor(() => gaps === 1 || undefined, 5_000, 'the catch-up after the subscriptions moved');
    stop();
    subscriber.disconnect();
  });

  it('runs every script with SPUBLISH, never PUBLISH, on a Cluster', () => {
    const publishing: ScriptName[] = ['createTask', 'acceptMessage', 'acquireLease', 'appendEvents', 'finishTurn', 'cancelTask', 'acknowledgeCancel', 'suspendTurn', 'surfaceQuestion'];
    for (const name of publishing) {
      const lua = scriptSource(name, redis) ?? '';
      expect(lua, name).toContain("redis.call('SPUBLISH', ");
      expect(lua, name).not.toMatch(/'PUBLISH'/);
    }
  });

  it("keeps each agent's turn queue in one slot", async () => {
    const queue = createTurnQueue(redis, prefix, 'demo');
    await queue.add('turn', { taskId: taskIds[0] as string, turn: 1, ownerKey: 'o', contextId: 'c' }, { jobId: 'j1' });
    const queueKeys: string[] = [];
    for await (const batch of scanKeys(redis, `${prefix}:*turns-demo*`, 100)) queueKeys.push(...batch);
    expect(queueKeys.length).toBeGreaterThan(1);
    expect(new Set(queueKeys.map(keySlot)).size).toBe(1);
    expect(queueKeys[0]).toContain(`${prefix}:{turnq:demo}:turns-demo:`);
    await queue.obliterate({ force: true });
    await queue.close();
  });
});

function ownerPortOf(key: string): number | undefined {
  const nodeKey = redis.slots[keySlot(key)]?.[0];
  return nodeKey === undefined ? undefined : Number(nodeKey.slice(nodeKey.lastIndexOf(':') + 1));
}
