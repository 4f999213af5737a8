// Pipelines built from a connection's shared prototype (src/redis/lean-pipelines.ts): BullMQ's
// scripts on the store's connection are no longer copied onto every auto-pipeline, and every
// script still runs through explicit pipelines, auto-pipelining and after Redis lost its scripts.
// Against a Redis of the suite's own: it flushes the script cache.
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openRedis, type RedisClient } from '../src/redis/connection.ts';
import { startOwnRedis, type OwnRedis } from './support/redis-server.ts';

let own: OwnRedis;
let client: Redis;
let queue: Queue;

const ECHO = { numberOfKeys: 1, lua: "return {KEYS[1], ARGV[1], redis.call('INCR', KEYS[1])}" };
type Echo = (key: string, value: string) => Promise<[string, string, number]>;
type Scripted<T> = T & Record<'echoKeys' | 'echoLater', Echo>;

beforeAll(async () => {
  own = await startOwnRedis();
  client = openRedis({ redisUrl: own.url, redisClusterNodes: [] }, 'commands') as Redis;
  queue = new Queue('lean', { connection: client, prefix: 'lean' });
  await queue.waitUntilReady();
  client.defineCommand('echoKeys', ECHO);
});

afterAll(async () => {
  await queue.close();
  client.disconnect();
  await own.stop();
});

describe('lean pipelines', () => {
  it("a pipeline holds none of the connection's scripts as its own properties, yet has them all", async () => {
    const scripts = Object.keys((client as unknown as { scriptsSet: object }).scriptsSet);
    // BullMQ's scripts and the suite's own.
    expect(scripts.length).toBeGreaterThan(30);
    const pipeline = client.pipeline() as unknown as Record<string, unknown>;
    const own = new Set(Object.keys(pipeline));
    expect(scripts.filter((name) => own.has(name) || own.has(`${name}Buffer`))).toEqual([]);
    for (const name of scripts) {
      expect(typeof pipeline[name], name).toBe('function');
      expect(typeof pipeline[`${name}Buffer`], name).toBe('function');
    }
  });

  it('scripts run through an explicit pipeline and through auto-pipelining, in order', async () => {
    const explicit = client.pipeline() as Scripted<ReturnType<Redis['pipeline']>>;
    explicit.echoKeys('lean:a', 'one');
    explicit.get('lean:a');
    explicit.echoKeys('lean:a', 'two');
    expect(await explicit.exec()).toEqual([
      [null, ['lean:a', 'one', 1]],
      [null, '1'],
      [null, ['lean:a', 'two', 2]],
    ]);
    const scripted = client as Scripted<Redis>;
    // Issued in one tick: one auto-pipeline carries them.
    const replies = await Promise.all([scripted.echoKeys('lean:b', 'x'), client.incr('lean:b'), scripted.echoKeys('lean:b', 'y')]);
    expect(replies).toEqual([['lean:b', 'x', 1], 2, ['lean:b', 'y', 3]]);
    // BullMQ's own scripts, which its queue runs on the same connection.
    await queue.add('job', { n: 1 });
    expect(await queue.getJobCounts('wait')).toEqual({ wait: 1 });
  });

  it('a script defined after pipelines were built is on the next pipeline', async () => {
    client.pipeline();
    client.defineCommand('echoLater', ECHO);
    const pipeline = client.pipeline() as Scripted<ReturnType<Redis['pipeline']>>;
    pipeline.echoLater('lean:c', 'late');
    expect(await pipeline.exec()).toEqual([[null, ['lean:c', 'late', 1]]]);
  });

  it('after Redis lost its scripts, pipelined and auto-pipelined scripts load them again', async () => {
    await client.script('FLUSH');
    const pipeline = client.pipeline() as Scripted<ReturnType<Redis['pipeline']>>;
    pipeline.echoKeys('lean:d', 'again');
    expect(await pipeline.exec()).toEqual([[null, ['lean:d', 'again', 1]]]);
    await client.script('FLUSH');
    expect(await (client as Scripted<Redis>).echoKeys('lean:d', 'auto')).toEqual(['lean:d', 'auto', 2]);
  });

  it("a Cluster's pipelines are a Cluster's", () => {
    const cluster: RedisClient = openRedis({ redisUrl: own.url, redisClusterNodes: ['127.0.0.1:1'] }, 'commands');
    try {
      expect((cluster.pipeline() as unknown as { isCluster: boolean; redis: unknown }).isCluster).toBe(true);
      expect((cluster.pipeline() as unknown as { redis: unknown }).redis).toBe(cluster);
    } finally {
      cluster.disconnect();
    }
  });
});
