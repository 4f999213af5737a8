// Tracing and metrics settings.
import { z } from 'zod';
import { booleanish, port } from './values.ts';

/** Traces (OpenTelemetry) and metrics (Prometheus); docs/observability.md lists what they hold. */
export const telemetrySchema = z.strictObject({
  /**
   * OTLP endpoint traces are exported to (the collector's base URL, e.g. http://collector:4318;
   * /v1/traces is appended). Unset: tracing is off and costs nothing (no SDK is started).
   */
  otlpEndpoint: z.string().url().optional(),
  /** OTLP over HTTP with protobuf (the OTLP default) or JSON bodies. */
  otlpProtocol: z.enum(['http/protobuf', 'http/json']).default('http/protobuf'),
  /**
   * Add BullMQ's own spans (its telemetry hook: a producer span per job added, a consumer span
   * per job processed, one per job completion). Off, the turn span is the job's consumer span and
   * the trace context travels in the job's data: half the spans per turn. On, the process also
   * registers OpenTelemetry's AsyncLocalStorage context manager, which BullMQ's hook needs and which
   * makes every promise of a Node 20 process slower (see docs/observability.md for the cost).
   */
  queueSpans: booleanish.default(false),
  /** Share of new traces recorded, 0 to 1 (a caller's traceparent sampled flag decides for its request): lower it to bound tracing's cost under load. */
  sampleRatio: z.coerce.number().min(0).max(1).default(1),
  /** service.name of this process's spans (default: a2a-gateway, or a2a-gateway-worker for a worker-only process). */
  serviceName: z.string().min(1).optional(),
  /** A separate, unauthenticated port serving /metrics, /healthz and /readyz for scrapers and probes (unset: none; workers need it to be scraped). */
  metricsPort: port.optional(),
  /** Address the metrics port listens on (default: host). */
  metricsHost: z.string().min(1).optional(),
});
