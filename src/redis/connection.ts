import { Redis, type RedisOptions } from 'ioredis';

export type RedisRole = 'commands' | 'events' | 'cancel' | 'queue' | 'worker';

/**
 * One place that opens Redis connections, so every role reconnects the same way: with
 * backoff and without a cap on retries, because a gateway must survive a Redis restart.
 */
export function openRedis(url: string, role: RedisRole, extra: RedisOptions = {}): Redis {
  return new Redis(url, {
    connectionName: `a2a-gateway:${role}`,
    // BullMQ requires null for its blocking connections; for ours it means a command
    // waits for the reconnect instead of failing after a few retries.
    maxRetriesPerRequest: null,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
    // Batches the commands issued in one tick into one write; not for blocking connections.
    enableAutoPipelining: role === 'commands' || role === 'queue',
    ...extra,
  });
}

/** Resolves when Redis answers PING, or rejects with a message that names the URL and the remedy. */
export async function checkRedisReachable(url: string, timeoutMs = 3_000): Promise<void> {
  const probe = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: timeoutMs,
  });
  let cause: Error | undefined;
  probe.on('error', (error: Error) => {
    cause ??= error;
  });
  try {
    await probe.connect();
    await probe.ping();
  } catch (error) {
    throw new Error(
      `Redis is not reachable at ${url} (${(cause ?? (error as Error)).message}). Start it (e.g. \`redis-server --appendonly yes\`) or set A2A_REDIS_URL to a reachable Redis.`,
    );
  } finally {
    probe.disconnect();
  }
}
