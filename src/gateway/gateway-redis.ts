// The gateway role's Redis connections. Their count is fixed whatever the load: commands, one
// event subscriber, the queue. Connections that answer clients wait for a lost Redis at most
// redisOutageGraceMs, and for a silent one at most redisCommandTimeoutMs, then fail with 503 +
// Retry-After (see redis/connection.ts); the subscriber reconnects forever.
import type { Lifecycle } from '../app/lifecycle.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { Logger } from '../logging/logger.ts';
import { openRedis, type RedisClient } from '../redis/connection.ts';

export interface GatewayRedis {
  commands: RedisClient;
  /** The event hub's subscriber. */
  subscriber: RedisClient;
  /** The turn, push and schedule queues' connection. */
  queue: RedisClient;
}

export function openGatewayRedis(lifecycle: Lifecycle, config: GatewayConfig, logger: Logger): GatewayRedis {
  const clientFacing = { outageGraceMs: config.redisOutageGraceMs, commandTimeoutMs: config.redisCommandTimeoutMs };
  const redis: GatewayRedis = {
    commands: openRedis(config, 'commands', {}, clientFacing),
    subscriber: openRedis(config, 'events'),
    queue: openRedis(config, 'queue', {}, clientFacing),
  };
  for (const [role, connection] of [['commands', redis.commands], ['events', redis.subscriber], ['queue', redis.queue]] as const) {
    connection.on('error', (error: Error) => logger.warn('Redis connection error; reconnecting', { role, error: error.message }));
  }
  lifecycle.register({
    name: 'gateway Redis connections',
    async stop() {
      redis.subscriber.disconnect();
      redis.queue.disconnect();
      await redis.commands.quit().catch(() => undefined);
    },
  });
  return redis;
}
