// The composition root: what one process runs, built from its configuration and the roles its
// command asks for (`start`: gateway and workers, `serve`: the gateway, `worker`: workers), all
// in one lifecycle. Telemetry and the probe ports come first, so they outlast the roles at
// shutdown: the spans of the last turns are exported and the probes answer (503 "shutting
// down") until the roles are done; the workers come before the gateway, so in one process the
// gateway drains and stops before the running turns are given their grace. With both roles, the
// gateway starts new tasks' first turns on this process's workers (localTurns).
import type { Agents } from '../agents/agents.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { buildGatewayRole, type GatewayRole } from '../gateway/server.ts';
import type { Logger } from '../logging/logger.ts';
import { buildWorkerRole, type WorkerRole } from '../runtime/worker-role.ts';
import { startMetricsServer, type MetricsServerHandle } from '../telemetry/metrics-server.ts';
import { startObservability } from '../telemetry/observability.ts';
import { Lifecycle } from './lifecycle.ts';
import { startControlPlane } from '../control/control-plane.ts';

export interface ProcessSetup {
  config: GatewayConfig;
  roles: GatewayConfig['roles'];
  agents: Agents;
  logger: Logger;
  /** Directory relative paths in the configuration are resolved against. */
  baseDir: string;
}

export interface ComposedProcess {
  /** Stops everything this process runs (lifecycle.stop(), on SIGTERM). */
  lifecycle: Lifecycle;
  gateway: GatewayRole | undefined;
  worker: WorkerRole | undefined;
  /** A worker process's probe port (healthPort), when it has no metrics port of its own to be probed on. */
  health: MetricsServerHandle | undefined;
  /** The metrics port's /metrics URL, when telemetry.metricsPort is set. */
  metricsUrl: string | undefined;
}

/** Builds and starts the process's roles; a part that fails to start stops those already started, then the error is thrown. */
export async function composeProcess(setup: ProcessSetup): Promise<ComposedProcess> {
  const { config, roles, agents, logger, baseDir } = setup;
  const lifecycle = new Lifecycle(logger);
  const parts = await lifecycle.build(async () => {
    const metricsUrl = await startTelemetry(lifecycle, config, roles);
    const health = !roles.gateway && roles.worker ? await startHealthPort(lifecycle, config) : undefined;
    // One view of the control-plane resources for all the process's roles: the process is not
    // ready before it holds them, and it outlives the roles at shutdown.
    const control = await startControlPlane(lifecycle, config, logger);
    const worker = roles.worker ? await buildWorkerRole(lifecycle, config, agents, logger, { baseDir, control }) : undefined;
    const gateway = roles.gateway ? await buildGatewayRole(lifecycle, config, agents, logger, { baseDir, control, localTurns: worker?.localTurns }) : undefined;
    return { gateway, worker, health, metricsUrl };
  });
  return { lifecycle, ...parts };
}

/**
 * Tracing first, so the roles' queues and workers get BullMQ's telemetry hook; then the metrics
 * port, when one is set (its /readyz is ready when every role is). Stopping it flushes the spans
 * still buffered.
 */
async function startTelemetry(lifecycle: Lifecycle, config: GatewayConfig, roles: GatewayConfig['roles']): Promise<string | undefined> {
  const observability = startObservability(config, roles);
  let metricsPort: MetricsServerHandle | undefined;
  lifecycle.register({ name: 'telemetry', drain: () => metricsPort?.markStopping(), stop: () => observability.close() });
  metricsPort = await observability.openMetricsPort([lifecycle]);
  return metricsPort === undefined ? undefined : `http://${config.telemetry.metricsHost ?? config.host}:${metricsPort.port}/metrics`;
}

/** A worker process's /healthz and /readyz on healthPort, when it is set. */
async function startHealthPort(lifecycle: Lifecycle, config: GatewayConfig): Promise<MetricsServerHandle | undefined> {
  if (config.healthPort === undefined) return undefined;
  const health = await startMetricsServer({ host: config.host, port: config.healthPort, readiness: () => lifecycle.checkReady(), metrics: false, portSetting: 'A2A_HEALTH_PORT' });
  lifecycle.register({ name: 'health server', drain: () => health.markStopping(), stop: () => health.close() });
  return health;
}
