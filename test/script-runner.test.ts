// How the store's scripts reach Redis (src/store/scripts.ts): by EVALSHA on the connection as
// it is, not as ioredis custom commands, which ioredis copies into every pipeline it builds
// (one per tick under auto-pipelining); and still when Redis has lost its script cache.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openRedis } from '../src/redis/connection.ts';
import { defineScripts, loadMissingScripts } from '../src/store/scripts.ts';
import { startOwnRedis, type OwnRedis } from './support/redis-server.ts';

let own: OwnRedis;
let client: Redis;

beforeAll(async () => {
  own = await startOwnRedis();
  client = openRedis({ redisUrl: own.url, redisClusterNodes: [] }, 'commands') as Redis;
});

afterAll(async () => {
  client?.disconnect();
  await own?.stop();
});

it('adds no command to the connection, so its pipelines carry none of the scripts', async () => {
  const run = defineScripts(client);
  await client.set('lock', 'me');
  expect(await run('releaseLock', ['lock'], ['me'])).toEqual(['RELEASED']);
  expect('releaseLock' in client).toBe(false);
  expect('releaseLock' in client.pipeline()).toBe(false);
  expect(await client.exists('lock')).toBe(0);
});

it('runs a script Redis does not hold (a restart emptied its cache) and after it is loaded again', async () => {
  const run = defineScripts(client);
  await client.script('FLUSH');
  await client.set('lock2', 'me');
  expect(await run('releaseLock', ['lock2'], ['someone else'])).toEqual(['NOT_HELD']);
  expect(await run('releaseLock', ['lock2'], ['me'])).toEqual(['RELEASED']);
  await loadMissingScripts(client);
  await client.set('lock3', 'me');
  expect(await run('releaseLock', ['lock3'], ['me'])).toEqual(['RELEASED']);
});
