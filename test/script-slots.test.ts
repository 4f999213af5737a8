// One script, one slot (docs/redis-slots.md): the slot arithmetic agrees with Redis's own
// CLUSTER KEYSLOT, and the guard every script call of the suite runs under (vitest.config.ts sets
// A2A_CHECK_SCRIPT_SLOTS for this process and the workers it spawns) refuses a call naming keys
// of two slots before anything reaches Redis.
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashTagOf, keySlot } from '../src/redis/key-slot.ts';
import { CrossSlotError, SLOT_CHECK_ENV } from '../src/store/script-slots.ts';
import { RedisKeys } from '../src/store/keys.ts';
import { defineScripts } from '../src/store/scripts.ts';
import { REDIS_URL, uniquePrefix } from './support/harness.ts';
import { startOwnRedis, type OwnRedis } from './support/redis-server.ts';

let cluster: OwnRedis;
let clusterClient: Redis;

beforeAll(async () => {
  cluster = await startOwnRedis({ args: ['--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${process.pid}.conf`] });
  clusterClient = new Redis(cluster.url);
});

afterAll(async () => {
  clusterClient?.disconnect();
  await cluster?.stop();
});

describe('key slots', () => {
  const keys = new RedisKeys('t-slots');
  const samples = [
    'plain',
    '',
    '{}',
    '{}tail',
    'a{b}c{d}',
    'open{never-closed',
    'ünïcødé{täg}',
    keys.task('01JABCDEF').task,
    keys.ownerQuota('agent/tenant/subject%20x'),
    keys.recentTasks(),
  ];

  it('matches CLUSTER KEYSLOT for tags, empty tags and keys without one', async () => {
    for (const key of samples) expect(keySlot(key), key).toBe(Number(await clusterClient.cluster('KEYSLOT', key)));
  });

  it('hashes the first non-empty tag only', () => {
    expect(hashTagOf('p:{abc}:x')).toBe('abc');
    expect(hashTagOf('p:{}:{abc}')).toBe('p:{}:{abc}');
    expect(keySlot('x{t}y')).toBe(keySlot('{t}'));
  });
});

describe('the script guard', () => {
  it('is on for the whole suite', () => {
    expect(process.env[SLOT_CHECK_ENV]).toBe('1');
  });

  it('refuses a call naming keys of two slots, and sends nothing', async () => {
    const redis = new Redis(REDIS_URL);
    try {
      const prefix = uniquePrefix('slots');
      const run = defineScripts(redis);
      const one = `${prefix}:{a}:lock`;
      await redis.set(one, 'token');
      await expect(run('releaseLock', [`${prefix}:{b}:lock`], ['token'])).resolves.toEqual(['NOT_HELD']);
      const keysOfTwoSlots = [`${prefix}:{a}:x`, `${prefix}:{b}:x`];
      await expect(run('quotaRelease', keysOfTwoSlots, ['[]', '{}'])).rejects.toThrow(CrossSlotError);
      await expect(run('quotaRelease', keysOfTwoSlots, ['[]', '{}'])).rejects.toThrow(/more than one hash slot/);
      expect(await redis.exists(...keysOfTwoSlots)).toBe(0);
      await redis.del(one);
    } finally {
      redis.disconnect();
    }
  });

  it('lets a single-Redis script join two slots on a single Redis, and refuses it on a Cluster before anything is sent', async () => {
    const prefix = uniquePrefix('slots-single');
    const redis = new Redis(REDIS_URL);
    const cluster = new Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true });
    try {
      const keys = new RedisKeys(prefix);
      const task = keys.task('01JSLOTS');
      const owner = 'agent/tenant/subject';
      const names = [task.task, task.history, task.events, task.messageIds, task.turns, task.lease, task.artifactChunks];
      const ownerKeys = [keys.idempotency(owner, 'm1'), keys.ownerActiveTasks(owner), keys.ownerQuota(owner), keys.ownerQuotaChecks(owner), keys.ownerTasks(owner), keys.ownerContextTasks(owner, 'c1'), keys.byteBucket(owner, 'stored')];
      const all = [...names, ...ownerKeys, task.pushCursors];
      // Past the one-slot check, Redis runs it: a claim at a cap of one active task, which another task holds, is refused there.
      const claimTerms = ['3600', '1', '0', '0', '0', '0', '0', '0', '0'];
      const createArgs = Array.from({ length: 26 }, () => '');
      createArgs[0] = '01JSLOTS';
      createArgs[7] = '1';
      await redis.zadd(ownerKeys[1] as string, 1, 'other');
      const onSingle = defineScripts(redis);
      const reply = await onSingle('createClaimedTask', all, [...createArgs, ...claimTerms]);
      expect(reply).toEqual(['TOO_MANY_ACTIVE', 1]);
      await expect(defineScripts(cluster)('createClaimedTask', all, [...createArgs, ...claimTerms])).rejects.toThrow(/single Redis only/);
      // A follow-up's joined claim and accept likewise (its keys: the task's, then the owner's).
      await expect(defineScripts(cluster)('acceptClaimedMessage', all.slice(0, 12), [])).rejects.toThrow(/single Redis only/);
      expect(cluster.status).toBe('wait');
      await redis.del(...all);
    } finally {
      redis.disconnect();
      cluster.disconnect();
    }
  });
});
