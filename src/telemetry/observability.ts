// What one process starts for observability, from its configuration: tracing when an OTLP
// endpoint is set, and the metrics port when one is set. Closing flushes the spans still
// buffered, so the last turns before a shutdown reach the collector.
import type { GatewayConfig } from '../config/schema.ts';
import type { Readiness } from '../gateway/readiness.ts';
import { startMetricsServer, type MetricsServerHandle } from './metrics-server.ts';
import { startTracing, type TracingHandle } from './tracing.ts';

export interface Observability {
  tracing: TracingHandle;
  /** Opens telemetry.metricsPort (when set); /readyz there is ready when every role given is. */
  openMetricsPort(roles: readonly ({ checkReady(): Promise<Readiness> } | undefined)[]): Promise<MetricsServerHandle | undefined>;
  close(): Promise<void>;
}

export function startObservability(config: GatewayConfig, roles: GatewayConfig['roles']): Observability {
  const { telemetry } = config;
  const tracing = startTracing({
    otlpEndpoint: telemetry.otlpEndpoint,
    otlpProtocol: telemetry.otlpProtocol,
    queueSpans: telemetry.queueSpans,
    sampleRatio: telemetry.sampleRatio,
    serviceName: telemetry.serviceName ?? (roles.gateway ? 'a2a-gateway' : 'a2a-gateway-worker'),
  });
  let metricsServer: MetricsServerHandle | undefined;
  return {
    tracing,
    async openMetricsPort(started) {
      if (telemetry.metricsPort === undefined) return undefined;
      const checked = started.filter((role) => role !== undefined);
      metricsServer = await startMetricsServer({
        host: telemetry.metricsHost ?? config.host,
        port: telemetry.metricsPort,
        readiness: async () => {
          for (const role of checked) {
            const readiness = await role.checkReady();
            if (!readiness.ready) return readiness;
          }
          return { ready: true };
        },
      });
      return metricsServer;
    },
    async close() {
      await metricsServer?.close();
      await tracing.shutdown();
    },
  };
}
