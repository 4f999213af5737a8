// The gateway role: the HTTP server (and the gRPC port), the task service and the Redis
// connections they need, assembled from configuration by small builders, each of which
// registers what it starts with the lifecycle (src/app/lifecycle.ts), so stopping, and
// unwinding a start that failed half-way, are written once.
import { configuredAgentsOf } from '../agents/agent-settings.ts';
import { connectLiveAgents } from '../control/live-agents.ts';
import { keepEndpointsLive } from './live-endpoints.ts';
import { keepCardSecurityLive } from './live-card-security.ts';
import { DashboardQueues } from './dashboard-queues.ts';
import type { LocalTurnStarter } from '../../queues/turns.ts';
import type { ServedCard } from '../../agent-card/card.ts';
import { Lifecycle } from '../app/lifecycle.ts';
import type { AgentEndpoint } from '../agents/agent-endpoint.ts';
import type { Agents } from '../agents/agents.ts';
import type { DevIssuer } from '../auth/dev-issuer.ts';
import { publicJwkOf } from '../auth/keys/key-file.ts';
import { createGrpcService } from '../bindings/grpc/index.ts';
import { GrpcStreams } from '../bindings/grpc/grpc-streams.ts';
import { SseStreams } from '../bindings/sse/sse-writer.ts';
import { publicUrlOf } from '../config/load.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { EventHub } from '../events/hub.ts';
import { RateLimiter } from '../limits/rate-limiter.ts';
import { StreamSlots } from '../limits/stream-slots.ts';
import { UnauthenticatedLimiter } from '../limits/unauthenticated-limiter.ts';
import type { Logger } from '../logging/logger.ts';
import { OPERATIONS } from '../operations/registry.ts';
import type { PushResolver } from '../push/receiver-policy.ts';
import type { TaskStore } from '../store/task-store.ts';
import type { TaskService } from '../tasks/service.ts';
import { createGatewayListener } from './app.ts';
import { mcpFaceSettingsOf } from '../mcp/face-settings.ts';
import { createGatewayAuthenticator } from './gateway-auth.ts';
import { buildEndpoints, cardSecurityOf } from './gateway-cards.ts';
import { registerGatewayMetrics } from './gateway-metrics.ts';
import { openGatewayRedis } from './gateway-redis.ts';
import { openGrpcPort } from './grpc-port.ts';
import { listenHttp } from './http-server.ts';
import { checkReadiness, type Readiness } from './readiness.ts';
import { loadGatewaySecrets } from './startup-checks.ts';
import { buildTaskService } from './task-service-setup.ts';
import { controlReadiness, startControlPlane, type ControlPlane } from '../control/control-plane.ts';
import { ControlService } from '../control/control-service.ts';
import { consumerPlans } from '../consumers/consumer-plans.ts';
import { readConsumerUsage } from '../consumers/consumer-usage.ts';
import { reportConsumerUsage } from '../consumers/consumer-metrics.ts';

/** A gateway role running inside a lifecycle, which stops it. */
export interface GatewayRole {
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
  /** True from the start of a shutdown: /readyz answers 503 while the gateway drains (shutdownDrainMs). */
  readonly draining: boolean;
  /** What /readyz answers (also served on the metrics port). */
  checkReady(): Promise<Readiness>;
}

/** A gateway role started on its own (startGatewayRole): close() drains and stops it. */
export interface GatewayHandle extends GatewayRole {
  close(): Promise<void>;
}

export interface GatewayRoleOptions {
  /** Directory relative paths in the configuration (jwksFile, cardSigningKeyFile) are resolved against. */
  baseDir?: string;
  /** How webhook receivers' host names are resolved when a config is registered (tests inject one). */
  pushResolver?: PushResolver;
  /** The process's control plane (src/app/process.ts starts one for all its roles); none: the role starts its own. */
  control?: ControlPlane;
  /** The process's own workers (its worker role), when it runs them: new tasks' first turns start there when a place is free. */
  localTurns?: LocalTurnStarter;
}

/** Starts the gateway role in a lifecycle of its own. */
export async function startGatewayRole(config: GatewayConfig, agents: Agents, logger: Logger, options: GatewayRoleOptions = {}): Promise<GatewayHandle> {
  const lifecycle = new Lifecycle(logger);
  const role = await lifecycle.build((built) => buildGatewayRole(built, config, agents, logger, options));
  return {
    ...role,
    get draining() {
      return lifecycle.draining;
    },
    close: () => lifecycle.stop(),
  };
}

/** Assembles the gateway role; every component it starts is registered with the lifecycle. */
export async function buildGatewayRole(lifecycle: Lifecycle, config: GatewayConfig, agents: Agents, logger: Logger, options: GatewayRoleOptions = {}): Promise<GatewayRole> {
  const baseDir = options.baseDir ?? process.cwd();
  // Keys first: a bad key file is a configuration error, reported before anything connects.
  const { proxyTrust, keys, pushSigningKeys, grpcTls } = await loadGatewaySecrets(config, baseDir);
  const control = options.control ?? (await startControlPlane(lifecycle, config, logger));
  const redis = openGatewayRedis(lifecycle, config, logger);
  const { commands } = redis;
  const tasks = await buildTaskService(lifecycle, { config, agents, redis, logger, pushResolver: options.pushResolver, localTurns: options.localTurns });
  const { service, queues, pushQueue, scheduleQueue, byteRates } = tasks;
  const streams = new SseStreams(config.heartbeatMs, config.sseMaxBufferedBytes);
  const dashboardQueues = new DashboardQueues((agent) => queues.of(agent), [...(pushQueue === undefined ? [] : [pushQueue]), ...(scheduleQueue === undefined ? [] : [scheduleQueue])], agents.list().map((agent) => agent.name));
  registerGatewayMetrics(lifecycle, { commands, streams, dashboardQueues });
  const rateLimiter = new RateLimiter(commands, config.keyPrefix, config.limits.requestBytesPerToken);
  // Consumers' plans are admitted after each caller's own rate (src/consumers).
  const consumers = consumerPlans(control.view, commands, config.keyPrefix, config.limits, config.consumers);
  rateLimiter.consumers = consumers.gate;
  lifecycle.register({ name: 'consumer usage metrics', stop: reportConsumerUsage(consumers) });
  // One count of open streams across the gateways, whichever binding serves them; its slots go back once the streams ended.
  const streamSlots = new StreamSlots(commands, config.keyPrefix, config.limits);
  lifecycle.register({ name: 'stream slots', stop: () => streamSlots.close() });
  const unauthenticated = new UnauthenticatedLimiter(commands, config.keyPrefix, config.limits);

  const readiness = { queue: queues.of(agents.defaultName), draining: () => lifecycle.draining, control: () => controlReadiness(control.view) };
  const checkReady = (): Promise<Readiness> => checkReadiness({ redis: commands, ...readiness, logger });
  lifecycle.register({
    name: 'gateway readiness',
    ready: checkReady,
    // Not ready first, still serving: load balancers and Kubernetes take this gateway out of
    // rotation (their next /readyz sees 503) before it stops accepting.
    drain: () => (config.shutdownDrainMs > 0 ? new Promise<void>((resolve) => setTimeout(resolve, config.shutdownDrainMs)) : undefined),
  });
  const http = await listenHttp(lifecycle, config, { proxyTrust, streams, logger });
  const publicUrl = publicUrlOf(config, http.port);
  const grpcStreams = new GrpcStreams(config.sseMaxBufferedBytes);
  const storedBodyLimits = control.view.list('agents').map((stored) => stored.spec.limits.maxBodyBytes ?? config.maxBodyBytes);
  const grpcListener = await openGrpcPort(lifecycle, config, { agents, streams: grpcStreams, tls: grpcTls, storedBodyLimits });
  const grpcAddress = grpcListener === undefined ? undefined : (config.grpcPublicAddress ?? `${new URL(publicUrl).hostname}:${grpcListener.port}`);
  const { authenticator, jwt } = createGatewayAuthenticator(config, keys.devIssuer, commands, baseDir, logger, control.view);
  if (jwt !== undefined) lifecycle.register({ name: 'issuer discovery', stop: () => jwt.close() });
  const security = authenticator.enabled ? cardSecurityOf(authenticator.acceptsSignatures, jwt, authenticator.acceptsApiKeys === true) : undefined;
  const { root, endpoints, rootCard, endpointOf } = await buildEndpoints({
    agents,
    publicUrl,
    grpcAddress,
    security,
    keys,
    pushNotifications: pushQueue !== undefined,
    schedules: scheduleQueue !== undefined,
    logger,
  });
  if (security !== undefined) keepCardSecurityLive(control.view, () => security.openIdConnect, () => [root, ...endpoints.values()]);

  const configuredAgents = configuredAgentsOf(config);
  const liveAgents = connectLiveAgents({ view: control.view, agents, configuredNames: Object.keys(configuredAgents), logger });
  keepEndpointsLive(liveAgents, endpoints, endpointOf, logger);
  const showAgents = (): void => dashboardQueues.setAgents(agents.list().map((agent) => agent.name));
  liveAgents.subscribe({ added: showAgents, removed: showAgents });
  // The stored agents are served from the first request, like the configured ones.
  await liveAgents.settled();

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
  http.serve(
    createGatewayListener({
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
      readiness,
      ...(jwt === undefined ? {} : { issuerStatus: () => jwt.issuerStatus() }),
      dashboardQueues,
      console: config.console.enabled,
      control: new ControlService(
        control,
        { partners: config.auth.partners, issuers: config.auth.issuers, agents: configuredAgents, agentAdapters: config.storedAgentAdapters, consumers: config.consumers ?? {} },
        Date.now,
        () => liveAgents.settled(),
        (name) => readConsumerUsage(consumers, name),
      ),
      mcp: mcpFaceSettingsOf(config, keys.devIssuer, commands, jwt === undefined ? undefined : () => jwt.currentIssuers()),
    }),
  );

  return {
    url: publicUrl,
    port: http.port,
    card: rootCard,
    endpoints,
    grpc: grpcListener === undefined || grpcAddress === undefined ? undefined : { port: grpcListener.port, address: grpcAddress },
    service,
    store: tasks.store,
    hub: tasks.hub,
    devIssuer: keys.devIssuer,
    get draining() {
      return lifecycle.draining;
    },
    checkReady,
  };
}
