// The gateway role: HTTP server, task service and the Redis connections it needs. Its
// connection count is fixed (commands, one event subscriber, the queue) whatever the load.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Adapter } from '../../adapters/types.ts';
import { buildAgentCard, serveAgentCard, type ServedCard } from '../../agent-card/card.ts';
import { createTurnQueue } from '../../queues/turns.ts';
import { publicUrlOf } from '../config/load.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { EventHub } from '../events/hub.ts';
import type { Logger } from '../logging/logger.ts';
import { openRedis } from '../redis/connection.ts';
import { TaskStore } from '../store/task-store.ts';
import { TaskService } from '../tasks/service.ts';
import { GATEWAY_VERSION } from '../version.ts';
import { SseStreams } from '../bindings/sse/sse-writer.ts';
import { createGatewayListener, type RequestListener } from './app.ts';

export interface GatewayHandle {
  url: string;
  port: number;
  card: ServedCard;
  service: TaskService;
  hub: EventHub;
  close(): Promise<void>;
}

export async function startGatewayRole(config: GatewayConfig, adapter: Adapter, logger: Logger): Promise<GatewayHandle> {
  // Connections that answer clients wait for a lost Redis at most redisOutageGraceMs, then
  // fail with 503 + Retry-After (see redis/connection.ts); the subscriber reconnects forever.
  const outage = { outageGraceMs: config.redisOutageGraceMs };
  const commands = openRedis(config.redisUrl, 'commands', {}, outage);
  const subscriber = openRedis(config.redisUrl, 'events');
  const queueConnection = openRedis(config.redisUrl, 'queue', {}, outage);
  for (const [role, connection] of [['commands', commands], ['events', subscriber], ['queue', queueConnection]] as const) {
    connection.on('error', (error: Error) => logger.warn('Redis connection error; reconnecting', { role, error: error.message }));
  }
  const store = new TaskStore(commands, config.keyPrefix, config.retentionSeconds);
  const hub = new EventHub(subscriber, store.keys, outage);
  await hub.start();
  const queue = createTurnQueue(queueConnection, config.keyPrefix);
  // The queue re-emits its connection's errors, which the handler above already logs; without
  // a listener BullMQ would print each one to stderr while Redis is down.
  queue.on('error', (error: Error) => logger.debug('turn queue error', { error: error.message }));
  const service = new TaskService({
    store,
    hub,
    queue,
    blockingTimeoutMs: config.blockingTimeoutMs,
    cancelWaitMs: config.cancelWaitMs,
    idempotencyTtlSeconds: config.idempotencyTtlSeconds,
    maxQueuedTurns: config.maxQueuedTurns,
    versions: { gateway: GATEWAY_VERSION, adapter: `${adapter.name}@${adapter.version}`, card: config.agentVersion },
  });

  const streams = new SseStreams(config.heartbeatMs);
  let handler: RequestListener | undefined;
  const httpServer = createServer((request, response) => {
    if (handler !== undefined) {
      handler(request, response);
      return;
    }
    // Only between listen() and the card being built: tell the client to come back.
    response.writeHead(503, { 'Retry-After': '1', 'Content-Type': 'application/json' });
    response.end('{"error":{"code":503,"status":"UNAVAILABLE","message":"starting up; retry shortly","details":[]}}');
  });
  const releaseConnections = (): void => {
    subscriber.disconnect();
    queueConnection.disconnect();
    commands.disconnect();
  };
  // Idle SSE clients must not be cut by Node's default timeouts; heartbeats keep proxies awake.
  httpServer.requestTimeout = 0;
  httpServer.headersTimeout = 60_000;
  httpServer.keepAliveTimeout = 65_000;
  httpServer.maxHeadersCount = 100;
  let port: number;
  try {
    port = await new Promise<number>((resolve, reject) => {
      httpServer.once('error', reject);
      httpServer.listen(config.port, config.host, () => resolve((httpServer.address() as AddressInfo).port));
    });
  } catch (error) {
    await queue.close().catch(() => undefined);
    releaseConnections();
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new Error(`${config.host}:${config.port} is already in use; stop what listens there or set A2A_PORT to a free port.`);
    }
    throw error;
  }
  // The card names the bound port when port 0 asked for any free one, so it is built now.
  const card = serveAgentCard(
    buildAgentCard({
      publicUrl: publicUrlOf(config, port),
      name: config.agentName,
      description: config.agentDescription,
      version: config.agentVersion,
      adapter,
    }),
  );
  handler = createGatewayListener({ service, card, redis: commands, logger, maxBodyBytes: config.maxBodyBytes, streams });

  return {
    url: publicUrlOf(config, port),
    port,
    card,
    service,
    hub,
    async close() {
      // Stop accepting, tell every stream's client to reconnect (elsewhere) shortly, and let
      // idle keep-alive connections go; in-flight requests are cut after that.
      const closed = new Promise<void>((resolve) => httpServer.close(() => resolve()));
      streams.endAll(1_000);
      httpServer.closeIdleConnections();
      await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);
      httpServer.closeAllConnections();
      await closed;
      await queue.close();
      subscriber.disconnect();
      queueConnection.disconnect();
      await commands.quit().catch(() => undefined);
    },
  };
}
