// The gateway role: HTTP server, task service and the Redis connections it needs. Its
// connection count is fixed (commands, one event subscriber, the queue) whatever the load.
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { resolve } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { RedisClient } from '../redis/connection.ts';
import { AgentCards } from '../agents/agent-cards.ts';
import { serveAgentCard, type ServedCard } from '../../agent-card/card.ts';
import { signAgentCard } from '../../agent-card/sign.ts';
import type { Agents } from '../agents/agents.ts';
import { AUTHENTICATION_OFF, createAuthenticator, type Authenticator } from '../auth/authenticator.ts';
import type { DevIssuer } from '../auth/dev-issuer.ts';
import { JwtVerifier } from '../auth/jwt/jwt-verifier.ts';
import { loadGatewayKeys } from '../auth/keys/gateway-keys.ts';
import { RequestSignatureVerifier } from '../auth/signatures/verify-request.ts';
import { RateLimiter } from '../limits/rate-limiter.ts';
import { StreamSlots } from '../limits/stream-slots.ts';
import { StorageQuota } from '../limits/storage-quota.ts';
import { ByteRates } from '../limits/byte-rates.ts';
import { UnauthenticatedLimiter } from '../limits/unauthenticated-limiter.ts';
import { createProxyTrust } from '../bindings/http/proxy-trust.ts';
import { defaultMaxConnections, guardConnections } from './connection-guard.ts';
import { AssignmentStore } from '../coordination/assignment-store.ts';
import { Delegator } from '../coordination/delegator.ts';
import { TurnQueues } from '../../queues/turns.ts';
import { publicUrlOf } from '../config/load.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { EventHub } from '../events/hub.ts';
import type { Logger } from '../logging/logger.ts';
import { openRedis } from '../redis/connection.ts';
import { replayBoundOf } from '../store/replay-bound.ts';
import { TaskStore } from '../store/task-store.ts';
import { recentTaskIndexOf } from '../store/recent-tasks.ts';
import { TaskService } from '../tasks/service.ts';
import { SseStreams } from '../bindings/sse/sse-writer.ts';
import type { AgentEndpoint } from '../agents/agent-endpoint.ts';
import { createGatewayListener, type RequestListener } from './app.ts';
import { publicJwkOf } from '../auth/keys/key-file.ts';
import { PushConfigs } from '../push/push-configs.ts';
import { PushStore } from '../push/push-store.ts';
import { ReceiverPolicy, type PushResolver } from '../push/receiver-policy.ts';
import { loadPushSigningKeys } from '../push/signing-key.ts';
import { PushDeadLetters } from '../push/dead-letters.ts';
import { createPushQueue } from '../../queues/push.ts';
import { createScheduleQueue } from '../../queues/schedules.ts';
import { ScheduleService } from '../schedules/schedule-service.ts';
import { ScheduleStore } from '../schedules/schedule-store.ts';
import { SCHEDULES_EXTENSION_URI } from '../extensions/schedules.ts';
import { OPERATIONS } from '../operations/registry.ts';
import { createGrpcService } from '../bindings/grpc/index.ts';
import { grpcServiceOf } from '../bindings/grpc/messages.ts';
import { GrpcStreams } from '../bindings/grpc/grpc-streams.ts';
import { agentTenantOf } from '../bindings/grpc/call-metadata.ts';
import { listenGrpc, type GrpcListener } from './grpc-server.ts';
import { openStreams, queueJobs, startProcessMetrics } from '../telemetry/metrics.ts';
import { probeRedisRoundTrips } from '../telemetry/redis-probe.ts';
import type { Queue } from 'bullmq';
import { checkReadiness, type Readiness } from './readiness.ts';
import { ReplicaAck, replicaAckOf } from '../redis/replica-ack.ts';

export interface GatewayHandle {
  url: string;
  port: number;
  /** The default agent's card at the root URL (undefined while a downstream agent it describes is unreachable). */
  card: ServedCard | undefined;
  /** Every agent's endpoint, by name (its cards at /agents/<name>/…). */
  endpoints: ReadonlyMap<string, AgentEndpoint>;
  /** The gRPC binding, when grpcPort is not "off": its bound port and the host:port the cards declare. */
  grpc: { port: number; address: string } | undefined;
  service: TaskService;
  /** The task store the service was built on (its keys, for tools and tests that look at Redis). */
  store: TaskStore;
  hub: EventHub;
  /** The local development issuer, when no issuer is configured (npm run token). */
  devIssuer: DevIssuer | undefined;
  /** True from the start of close(): /readyz answers 503 while the gateway drains (shutdownDrainMs). */
  readonly draining: boolean;
  /** What /readyz answers (also served on the metrics port). */
  checkReady(): Promise<Readiness>;
  close(): Promise<void>;
}

export interface GatewayRoleOptions {
  /** Directory relative paths in the configuration (jwksFile, cardSigningKeyFile) are resolved against. */
  baseDir?: string;
  /** How webhook receivers' host names are resolved when a config is registered (tests inject one). */
  pushResolver?: PushResolver;
}

export async function startGatewayRole(config: GatewayConfig, agents: Agents, logger: Logger, options: GatewayRoleOptions = {}): Promise<GatewayHandle> {
  const baseDir = options.baseDir ?? process.cwd();
  refuseDevelopmentIssuerInProduction(config);
  let proxyTrust;
  try {
    proxyTrust = createProxyTrust(config.trustProxy);
  } catch (error) {
    throw new Error(`trustProxy (A2A_TRUST_PROXY): ${(error as Error).message}; give true, false, or proxy addresses and CIDR ranges.`);
  }
  // Keys first: a bad key file is a configuration error, reported before anything connects.
  const keys = await loadGatewayKeys(config, baseDir);
  // Receivers verify webhook signatures with its public half, published beside the card's key.
  const pushSigningKeys = config.push.enabled ? await loadPushSigningKeys(config, baseDir) : undefined;
  const grpcTls = config.grpcPort === 'off' ? undefined : await loadGrpcTls(config, baseDir);
  // Connections that answer clients wait for a lost Redis at most redisOutageGraceMs, and for
  // a silent one at most redisCommandTimeoutMs, then fail with 503 + Retry-After (see
  // redis/connection.ts); the subscriber reconnects forever.
  const outage = { outageGraceMs: config.redisOutageGraceMs };
  const clientFacing = { ...outage, commandTimeoutMs: config.redisCommandTimeoutMs };
  const commands = openRedis(config, 'commands', {}, clientFacing);
  const subscriber = openRedis(config, 'events');
  const queueConnection = openRedis(config, 'queue', {}, clientFacing);
  for (const [role, connection] of [['commands', commands], ['events', subscriber], ['queue', queueConnection]] as const) {
    connection.on('error', (error: Error) => logger.warn('Redis connection error; reconnecting', { role, error: error.message }));
  }
  const store = new TaskStore(commands, config.keyPrefix, config.retentionSeconds, replayBoundOf(config.replay), recentTaskIndexOf(config));
  const hub = new EventHub(subscriber, store.keys, outage);
  await hub.start();
  // The queues re-emit their connection's errors, which the handler above already logs; without
  // a listener BullMQ would print each one to stderr while Redis is down.
  // On the store's connection: a new task's job add then rides in the same write as its create script (TaskStore.createTask).
  const queues = new TurnQueues(commands, config.keyPrefix, (error: Error) => logger.debug('turn queue error', { error: error.message }));
  const assignments = new AssignmentStore(commands, store.keys, store.replay);
  const pushStore = config.push.enabled ? new PushStore(commands, config.keyPrefix) : undefined;
  const push =
    pushStore === undefined
      ? undefined
      : new PushConfigs({
          store: pushStore,
          policy: new ReceiverPolicy({ allowedHosts: config.push.allowedHosts, maxUrlLength: config.push.maxUrlLength, resolve: options.pushResolver }),
          maxConfigsPerTask: config.push.maxConfigsPerTask,
          // Workers start the new config's deliveries at once; their sweeper would find it anyway.
          onIndexed: (taskId) => void commands.publish(pushStore.keys.attachedChannel(), taskId).catch(() => undefined),
        });
  const scheduleQueue = config.schedules.enabled ? createScheduleQueue(queueConnection, config.keyPrefix) : undefined;
  scheduleQueue?.on('error', (error: Error) => logger.debug('schedule queue error', { error: error.message }));
  const pushQueue = pushStore === undefined ? undefined : createPushQueue(queueConnection, config.keyPrefix);
  pushQueue?.on('error', (error: Error) => logger.debug('push queue error', { error: error.message }));
  // Per-owner byte rates: request bodies at the bindings, stored messages in the task service.
  const byteRates = new ByteRates(commands, store.keys, config.limits);
  const service = new TaskService({
    push,
    schedules: scheduleQueue === undefined ? undefined : new ScheduleService(new ScheduleStore(commands, config.keyPrefix), scheduleQueue, config.schedules),
    pushDeadLetters: pushStore === undefined || pushQueue === undefined ? undefined : new PushDeadLetters(pushStore, pushQueue, config.push.maxDeadLetters),
    store,
    assignments,
    // The gateway cancels assignments, forwards answers and starts freed slots; only workers create assignments.
    delegator: Delegator.forAgents(config, agents, { store, assignments, queues }),
    hub,
    queues,
    agents,
    blockingTimeoutMs: config.blockingTimeoutMs,
    cancelWaitMs: config.cancelWaitMs,
    idempotencyTtlSeconds: config.idempotencyTtlSeconds,
    maxQueuedTurns: config.maxQueuedTurns,
    listBounds: {
      maxPageBytes: config.limits.maxListPageBytes,
      maxScannedEntries: config.limits.maxListScannedEntries,
      maxConcurrentPerOwner: config.limits.maxConcurrentListsPerOwner,
    },
    quota: new StorageQuota(commands, store.keys, config.limits),
    byteRates,
    replicaAck: new ReplicaAck(commands, replicaAckOf(config)),
  });

  const streams = new SseStreams(config.heartbeatMs, config.sseMaxBufferedBytes);
  // Metrics: RedisClient-wide queue depths are read here at scrape time (every gateway reports the
  // same Redis, so a dashboard takes max() over gateways, not sum()); the rest is this process's.
  startProcessMetrics();
  const dashboardQueues: Queue[] = [...agents.list().map((agent) => queues.of(agent.name)), ...(pushQueue === undefined ? [] : [pushQueue]), ...(scheduleQueue === undefined ? [] : [scheduleQueue])];
  const unregisterMetrics = [
    openStreams.register(async () => [{ labels: {}, value: streams.size }]),
    queueJobs.register(() => readQueueDepths(dashboardQueues)),
    probeRedisRoundTrips(commands, 'gateway'),
  ];
  let draining = false;
  let handler: RequestListener | undefined;
  const httpServer = createServer(
    {
      // Only the request (headers, then body) is timed; once it has arrived, a response may
      // last as long as it needs (SSE streams, blocking SendMessage). Node answers 408 and
      // closes the connection. Node requires headersTimeout <= requestTimeout.
      requestTimeout: config.requestTimeoutMs,
      headersTimeout: Math.min(config.headersTimeoutMs, config.requestTimeoutMs),
      keepAliveTimeout: config.keepAliveTimeoutMs,
      // How often Node looks for requests past those timeouts (its default, 30 s, would let a
      // stalled body live up to 30 s longer than requestTimeoutMs).
      connectionsCheckingInterval: Math.min(1_000, config.headersTimeoutMs),
    },
    (request, response) => {
    if (handler !== undefined) {
      handler(request, response);
      return;
    }
      // Only between listen() and the card being built: tell the client to come back.
      response.writeHead(503, { 'Retry-After': '1', 'Content-Type': 'application/json' });
      response.end('{"error":{"code":503,"status":"UNAVAILABLE","message":"starting up; retry shortly","details":[]}}');
    },
  );
  // Expect: 100-continue goes to the same handler, which sends the 100 only once the headers
  // passed its checks (a refused request's body is then never sent).
  httpServer.on('checkContinue', (request, response) => httpServer.emit('request', request, response));
  // Node itself sets no count: past maxHeadersCount Node 20 drops fields silently and Node 24+
  // answers a bare 431 (no body, no binding's error shape). Every field is kept (their bytes are
  // bounded by Node's maxHeaderSize) and the gateway refuses too many with its own 431 in the
  // binding's shape (bindings/http/header-count.ts).
  httpServer.maxHeadersCount = 0;
  guardConnections(httpServer, {
    maxConnections: config.maxConnections ?? defaultMaxConnections(),
    maxConnectionsPerAddress: config.maxConnectionsPerAddress,
    isTrustedProxy: (address) => proxyTrust.trustsAddress(address),
    logger,
  });
  const releaseConnections = (): void => {
    subscriber.disconnect();
    queueConnection.disconnect();
    commands.disconnect();
  };
  let port: number;
  try {
    port = await new Promise<number>((resolve, reject) => {
      httpServer.once('error', reject);
      httpServer.listen(config.port, config.host, () => resolve((httpServer.address() as AddressInfo).port));
    });
  } catch (error) {
    await queues.close();
    releaseConnections();
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new Error(`${config.host}:${config.port} is already in use; stop what listens there or set A2A_PORT to a free port.`);
    }
    throw error;
  }
  const publicUrl = publicUrlOf(config, port);
  // The gRPC binding listens before the cards are built: they name its port.
  const grpcStreams = new GrpcStreams(config.sseMaxBufferedBytes);
  let grpcListener: GrpcListener | undefined;
  if (config.grpcPort !== 'off') {
    try {
      grpcListener = await listenGrpc(
        {
          host: config.grpcHost ?? config.host,
          port: config.grpcPort,
          maxReceiveBytes: Math.max(...agents.list().map((agent) => agent.settings.limits.maxBodyBytes)),
          keepaliveMs: config.heartbeatMs,
          streams: grpcStreams,
          tls: grpcTls,
        },
        grpcServiceOf(OPERATIONS).definition,
      );
    } catch (error) {
      httpServer.close();
      await queues.close();
      releaseConnections();
      throw error;
    }
  }
  const grpcAddress = grpcListener === undefined ? undefined : (config.grpcPublicAddress ?? `${new URL(publicUrl).hostname}:${grpcListener.port}`);
  const authenticator = createGatewayAuthenticator(config, keys.devIssuer, commands, baseDir, logger);
  if (!authenticator.enabled) {
    logger.warn('authentication is OFF (auth.enabled=false): every caller is anonymous and the agent card declares no security');
  } else if (keys.devIssuer !== undefined) {
    logger.warn(
      `NO TOKEN ISSUER CONFIGURED: accepting tokens of the local DEVELOPMENT issuer, whose key is in ${keys.devIssuer.keyFile}; anyone who can read that file can mint tokens. For local use only: configure auth.issuers before exposing this gateway (it refuses to start like this when NODE_ENV=production or production=true).`,
    );
  }
  // The cards name the bound port when port 0 asked for any free one, so they are built now.
  const security = authenticator.enabled ? { signedRequests: authenticator.acceptsSignatures } : undefined;
  const finish = async (built: ServedCard['card']): Promise<ServedCard> => {
    built.capabilities.pushNotifications = push !== undefined;
    // The schedules extension is declared on every card by the registry; without schedules it goes.
    if (scheduleQueue === undefined && built.capabilities.extensions !== undefined) {
      built.capabilities.extensions = built.capabilities.extensions.filter((extension) => extension.uri !== SCHEDULES_EXTENSION_URI);
    }
    if (keys.cardSigningKey !== undefined) {
      built.signatures = [await signAgentCard(built, { privateJwk: keys.cardSigningKey }, { jku: `${publicUrl}/.well-known/jwks.json` })];
    }
    return serveAgentCard(built);
  };
  const endpointAt = (name: string, basePath: string): AgentEndpoint => {
    const agent = agents.get(name) as NonNullable<ReturnType<Agents['get']>>;
    // On gRPC (one port for all agents) an agent other than the root one is named by the tenant its interface declares.
    const grpc = grpcAddress === undefined ? undefined : { address: grpcAddress, ...(basePath === '' ? {} : { tenant: agentTenantOf(name) }) };
    return { agent, basePath, cards: new AgentCards({ agent, baseUrl: `${publicUrl}${basePath}`, security, finish, logger, grpc }) };
  };
  const endpoints = new Map(agents.list().map((agent) => [agent.name, endpointAt(agent.name, `/agents/${encodeURIComponent(agent.name)}`)]));
  const root = endpointAt(agents.defaultName, '');
  let rootCard: ServedCard | undefined;
  try {
    // Every agent's card is built once now, so a broken configuration shows at start; one whose
    // skills come from a downstream agent that cannot be reached yet is retried on first request.
    for (const endpoint of [root, ...endpoints.values()]) {
      const built = await endpoint.cards.cards().catch((error: Error) => {
        if (endpoint.agent.settings.card.skills !== 'from downstream') throw error;
        logger.warn('the card of an agent could not be built yet; retried on the first request for it', { agent: endpoint.agent.name, error: error.message });
        return undefined;
      });
      if (endpoint === root) rootCard = built?.card;
    }
  } catch (error) {
    httpServer.close();
    await grpcListener?.close();
    await queues.close();
    releaseConnections();
    throw error;
  }
  const rateLimiter = new RateLimiter(commands, store.keys, config.limits.requestBytesPerToken);
  // One count of open streams across the gateways, whichever binding serves them.
  const streamSlots = new StreamSlots(commands, store.keys, config.limits);
  const unauthenticated = new UnauthenticatedLimiter(commands, store.keys, config.limits);
  grpcListener?.serve(
    createGrpcService({
      registry: OPERATIONS,
      service,
      root,
      endpoints,
      rateLimiter,
      byteRates,
      streamSlots,
      authentication: { authenticator, unauthenticated },
      jsonLimits: config.jsonLimits,
      streams: grpcStreams,
      logger,
      accessLog: config.accessLog,
    }),
  );
  handler = createGatewayListener({
    service,
    root,
    endpoints,
    publishedKeys: pushSigningKeys === undefined ? keys.publishedKeys : [...keys.publishedKeys, ...[pushSigningKeys.current, ...pushSigningKeys.previous].map(publicJwkOf)],
    rateLimiter,
    byteRates,
    streamSlots,
    requestFields: { strict: config.protocol.strictRequestFields, logger },
    edge: {
      maxHeaderCount: config.maxHeaderCount,
      maxBodyBytes: config.maxBodyBytes,
      jsonLimits: config.jsonLimits,
      authenticator,
      unauthenticated,
      proxyTrust,
      publicUrl: new URL(publicUrl),
    },
    refusedBodyDrainBytes: config.refusedBodyDrainBytes,
    publicUrl,
    redis: commands,
    logger,
    streams,
    corsOrigins: config.corsOrigins,
    accessLog: config.accessLog,
    readiness: { queue: queues.of(agents.defaultName), draining: () => draining },
    dashboardQueues,
    console: config.console.enabled,
  });

  return {
    url: publicUrl,
    port,
    card: rootCard,
    endpoints,
    grpc: grpcListener === undefined || grpcAddress === undefined ? undefined : { port: grpcListener.port, address: grpcAddress },
    service,
    store,
    hub,
    devIssuer: keys.devIssuer,
    get draining() {
      return draining;
    },
    checkReady: () => checkReadiness({ redis: commands, queue: queues.of(agents.defaultName), draining: () => draining, logger }),
    async close() {
      // Not ready first, still serving: load balancers and Kubernetes take this gateway out of
      // rotation (their next /readyz sees 503) before it stops accepting.
      draining = true;
      if (config.shutdownDrainMs > 0) await new Promise((resolve) => setTimeout(resolve, config.shutdownDrainMs));
      for (const unregister of unregisterMetrics) unregister();
      // Stop accepting, tell every stream's client to reconnect (elsewhere) shortly, and let
      // idle keep-alive connections go; in-flight requests are cut after that.
      const closed = new Promise<void>((resolve) => httpServer.close(() => resolve()));
      // gRPC streams end with UNAVAILABLE and the event id to resume from, SSE ones with retry:.
      const grpcClosed = grpcListener?.close();
      streams.endAll(1_000);
      httpServer.closeIdleConnections();
      await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);
      httpServer.closeAllConnections();
      await closed;
      await grpcClosed;
      await streamSlots.close();
      await queues.close();
      await pushQueue?.close().catch(() => undefined);
      await scheduleQueue?.close().catch(() => undefined);
      await store.flushIndexesWithin(1_000);
      subscriber.disconnect();
      queueConnection.disconnect();
      await commands.quit().catch(() => undefined);
    },
  };
}

/**
 * With no issuer configured the gateway trusts a development issuer whose key lies in dataDir:
 * fine on a laptop, a hole in production. Production (NODE_ENV=production or production=true)
 * must name its issuers.
 */
function refuseDevelopmentIssuerInProduction(config: GatewayConfig): void {
  if (!config.production || !config.auth.enabled || config.auth.issuers.length > 0) return;
  throw new Error(
    'refusing to start: production mode (NODE_ENV=production or production=true) and no token issuer is configured, so only the development issuer would be trusted; configure auth.issuers in the A2A_CONFIG file (see docs/security.md).',
  );
}

/** The gRPC binding's certificate and key, when both are configured; one without the other is a configuration error. */
async function loadGrpcTls(config: GatewayConfig, baseDir: string): Promise<{ certChain: Buffer; privateKey: Buffer } | undefined> {
  const { grpcTlsCertFile: certFile, grpcTlsKeyFile: keyFile } = config;
  if (certFile === undefined && keyFile === undefined) return undefined;
  if (certFile === undefined || keyFile === undefined) {
    throw new Error('grpcTlsCertFile and grpcTlsKeyFile (A2A_GRPC_TLS_CERT_FILE, A2A_GRPC_TLS_KEY_FILE) go together: set both for TLS on the gRPC port, or neither for plaintext HTTP/2.');
  }
  const read = async (file: string, what: string): Promise<Buffer> => {
    const path = resolve(baseDir, file);
    try {
      return await readFile(path);
    } catch (error) {
      throw new Error(`${what} ${path} cannot be read (${(error as Error).message}).`);
    }
  };
  return { certChain: await read(certFile, 'grpcTlsCertFile'), privateKey: await read(keyFile, 'grpcTlsKeyFile') };
}

function createGatewayAuthenticator(config: GatewayConfig, devIssuer: DevIssuer | undefined, redis: RedisClient, baseDir: string, logger: Logger): Authenticator {
  const { auth } = config;
  if (!auth.enabled) return AUTHENTICATION_OFF;
  const issuers = devIssuer === undefined ? auth.issuers : [devIssuer.issuerConfig()];
  const jwt = new JwtVerifier({
    issuers,
    clockToleranceSeconds: auth.clockToleranceSeconds,
    jwksCacheSeconds: auth.jwksCacheSeconds,
    verifiedTokenCacheEntries: auth.verifiedTokenCacheEntries,
    baseDir,
    logger,
  });
  const signatures =
    auth.partners.length === 0
      ? undefined
      : new RequestSignatureVerifier({
          partners: auth.partners,
          redis,
          keyPrefix: config.keyPrefix,
          maxAgeSeconds: auth.signatureMaxAgeSeconds,
          clockToleranceSeconds: auth.clockToleranceSeconds,
        });
  return createAuthenticator(jwt, signatures);
}

const QUEUE_STATES = ['waiting', 'prioritized', 'delayed', 'active', 'failed'] as const;

/** Each queue's job counts by state (one Redis call per queue), for a2a_queue_jobs. */
async function readQueueDepths(queues: readonly Queue[]): Promise<{ labels: { queue: string; state: string }; value: number }[]> {
  const counts = await Promise.all(queues.map(async (queue) => ({ queue: queue.name, counts: await queue.getJobCounts(...QUEUE_STATES) })));
  return counts.flatMap(({ queue, counts: byState }) => QUEUE_STATES.map((state) => ({ labels: { queue, state }, value: byState[state] ?? 0 })));
}
