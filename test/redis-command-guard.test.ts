// Every connection openRedis makes refuses a command larger than redisMaxCommandBytes before
// ioredis queues it: the caller's promise rejects with RedisCommandTooLargeError naming the
// setting, nothing is written, and commands sent in the same tick on the same auto-pipelined
// connection are not disturbed. Without the guard such a command went into ioredis' auto-pipeline,
// where building it could throw out of a callback (RangeError) and end the process.
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { configSchema } from '../src/config/schema.ts';
import { commandBytes } from '../src/redis/command-guard.ts';
import { isRedisCommandTooLargeError, openRedis, RedisCommandTooLargeError, type RedisClient } from '../src/redis/connection.ts';
import { defineScripts } from '../src/store/scripts.ts';
import { deletePrefix, REDIS_URL, uniquePrefix } from './support/harness.ts';
import { onLimitRefusal, type LimitName } from '../src/limits/limit-refusal.ts';

const MAX = 64 * 1024;
let client: RedisClient;
let prefix: string;
const uncaught: unknown[] = [];
const onUncaught = (error: unknown): void => {
  uncaught.push(error);
};

beforeAll(async () => {
  prefix = uniquePrefix('command-guard');
  // The role of the gateway's and worker's commands: auto-pipelined.
  client = openRedis({ redisUrl: REDIS_URL, redisClusterNodes: [], redisMaxCommandBytes: MAX }, 'commands');
  await client.ping();
  process.on('uncaughtException', onUncaught);
});

afterEach(() => {
  expect(uncaught).toEqual([]);
});

afterAll(async () => {
  process.off('uncaughtException', onUncaught);
  await deletePrefix(client, prefix);
  await client.quit();
});

const big = (): string => 'z'.repeat(MAX + 1);

async function refused(command: Promise<unknown>): Promise<RedisCommandTooLargeError> {
  const error = await command.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isRedisCommandTooLargeError(error)).toBe(true);
  return error as RedisCommandTooLargeError;
}

describe('the command size guard', () => {
  it('is a setting with a default below Redis’s proto-max-bulk-len', () => {
    expect(configSchema.parse({}).redisMaxCommandBytes).toBe(256 * 1024 * 1024);
    expect(() => configSchema.parse({ redisMaxCommandBytes: 600 * 1024 * 1024 })).toThrow();
  });

  it('refuses a command past redisMaxCommandBytes, naming the setting, and writes nothing', async () => {
    const key = `${prefix}:big`;
    const noted: LimitName[] = [];
    const stop = onLimitRefusal((limit) => noted.push(limit));
    const error = await refused(client.set(key, big())).finally(stop);
    expect(noted).toEqual(['redisMaxCommandBytes']);
    expect(error.message).toMatch(/redisMaxCommandBytes \(65536 bytes, A2A_REDIS_MAX_COMMAND_BYTES\)/);
    expect(error.command).toBe('set');
    expect(await client.exists(key)).toBe(0);
  });

  it('leaves the other commands of the same tick alone', async () => {
    const [small, large, after] = await Promise.allSettled([client.set(`${prefix}:a`, 'one'), client.set(`${prefix}:b`, big()), client.set(`${prefix}:c`, 'three')]);
    expect(small.status).toBe('fulfilled');
    expect(large.status === 'rejected' && isRedisCommandTooLargeError(large.reason)).toBe(true);
    expect(after.status).toBe('fulfilled');
    expect(await client.mget(`${prefix}:a`, `${prefix}:b`, `${prefix}:c`)).toEqual(['one', null, 'three']);
  });

  it('measures every argument together, Buffers, call() and hash objects included', async () => {
    const half = 'h'.repeat(MAX / 2 + 1);
    await refused(client.hset(`${prefix}:h`, { one: half, two: half }));
    await refused(client.call('SET', `${prefix}:c2`, big()));
    await refused(client.set(`${prefix}:buf`, Buffer.alloc(MAX + 1)));
    expect(await client.exists(`${prefix}:h`, `${prefix}:c2`, `${prefix}:buf`)).toBe(0);
    expect(commandBytes(['é'], MAX)).toBe(2);
  });

  it('guards the store’s Lua scripts (defined on the connection later)', async () => {
    const run = defineScripts(client);
    const error = await refused(run('writeAdapterState', [`${prefix}:{t}:task`], [1, 'adapter:k', big()]));
    expect(error.command).toBe('writeAdapterState');
  });

  it('answers a callback-style caller through its callback', async () => {
    const error = await new Promise<Error | null | undefined>((resolve) => {
      void client.set(`${prefix}:cb`, big(), (e) => resolve(e));
    });
    expect(error).toBeInstanceOf(RedisCommandTooLargeError);
  });

  it('is on every connection openRedis makes, whatever its role', async () => {
    const worker = openRedis({ redisUrl: REDIS_URL, redisClusterNodes: [], redisMaxCommandBytes: MAX }, 'worker');
    try {
      await refused(worker.set(`${prefix}:w-${randomBytes(2).toString('hex')}`, big()));
      // An 'error' event finds a listener even when the role added none.
      expect(worker.listenerCount('error')).toBeGreaterThan(0);
    } finally {
      worker.disconnect();
    }
  });
});
