// The OpenTelemetry SDK of this process: started only when an OTLP endpoint is configured.
// Without one nothing is started, the API's no-op tracer answers every span call, and the
// queues get no telemetry hook, so tracing off costs nothing on the hot path.
//
// Every trace starts at a request (SERVER), a job that carries no trace of its own (CONSUMER)
// or a producer: root spans of kind INTERNAL are not sampled. Those are BullMQ's housekeeping
// (stall checks, scheduler loops), which would otherwise export a trace every few seconds.
import { context, propagation, SpanKind, trace, type Attributes, type Context, type Link } from '@opentelemetry/api';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  NodeTracerProvider,
  ParentBasedSampler,
  SamplingDecision,
  TraceIdRatioBasedSampler,
  type Sampler,
  type SamplingResult,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-node';
import { BullMQOtel } from 'bullmq-otel';
import type { Telemetry } from 'bullmq';
import { GATEWAY_VERSION } from '../version.ts';

export interface TracingSettings {
  /** The collector's base URL; /v1/traces is appended. */
  otlpEndpoint: string | undefined;
  otlpProtocol: 'http/protobuf' | 'http/json';
  serviceName: string;
  /** Give BullMQ's queues and workers its telemetry hook (producer, consumer and completion spans). */
  queueSpans?: boolean;
  /** Share of new traces recorded (a caller's sampled flag decides for its own); 1 = every one. */
  sampleRatio?: number;
  /** Where spans go instead of OTLP (tests, the bench's sink). */
  exporter?: SpanExporter;
}

export interface TracingHandle {
  readonly enabled: boolean;
  /** Exports what is still buffered. */
  flush(): Promise<void>;
  /** Exports what is buffered and stops the SDK. */
  shutdown(): Promise<void>;
}

const OFF: TracingHandle = { enabled: false, flush: async () => undefined, shutdown: async () => undefined };

/** Samples root spans that start a trace (requests, jobs), `ratio` of them by trace id; drops root housekeeping spans. */
export class TraceStartsSampler implements Sampler {
  private readonly byRatio: Sampler;

  constructor(ratio: number) {
    this.byRatio = new TraceIdRatioBasedSampler(ratio);
  }

  shouldSample(context: Context, traceId: string, name: string, kind: SpanKind, attributes: Attributes, links: Link[]): SamplingResult {
    if (kind === SpanKind.INTERNAL) return { decision: SamplingDecision.NOT_RECORD };
    return this.byRatio.shouldSample(context, traceId, name, kind, attributes, links);
  }

  toString(): string {
    return 'TraceStartsSampler';
  }
}

let provider: NodeTracerProvider | undefined;
let queueTelemetry: Telemetry | undefined;

/** Whether this process exports traces (decides whether span attributes are computed at all). */
export const tracingEnabled = (): boolean => provider !== undefined;

/** The telemetry hook BullMQ queues and workers are given: undefined (no spans, no metadata in jobs) unless tracing and queueSpans are on. */
export const bullmqTelemetry = (): Telemetry | undefined => queueTelemetry;

/** The OTLP traces URL for a collector base URL (the OTLP exporter convention for the generic endpoint). */
export function tracesUrlOf(endpoint: string): string {
  const base = endpoint.replace(/\/+$/, '');
  return base.endsWith('/v1/traces') ? base : `${base}/v1/traces`;
}

/**
 * Starts the SDK once per process: spans batched to the OTLP endpoint, W3C trace context
 * (traceparent, tracestate) and baggage as the propagators. No context manager: the gateway
 * passes each trace context explicitly (spans.ts, TraceContext), because the AsyncLocalStorage
 * one makes every promise of a Node 20 process pay for tracking the active context. Only BullMQ's
 * telemetry hook (queueSpans) needs an active context, so only then is the AsyncLocalStorage
 * manager registered, at that cost (docs/observability.md, Cost).
 */
export function startTracing(settings: TracingSettings): TracingHandle {
  if (settings.otlpEndpoint === undefined && settings.exporter === undefined) return OFF;
  if (provider !== undefined) throw new Error('Tracing is already started in this process; start it once, before the gateway and worker roles.');
  const exporter =
    settings.exporter ??
    (settings.otlpProtocol === 'http/json'
      ? new OtlpJsonExporter({ url: tracesUrlOf(settings.otlpEndpoint as string) })
      : new OtlpProtobufExporter({ url: tracesUrlOf(settings.otlpEndpoint as string) }));
  const started = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': settings.serviceName, 'service.version': GATEWAY_VERSION, 'process.pid': process.pid }),
    sampler: new ParentBasedSampler({ root: new TraceStartsSampler(settings.sampleRatio ?? 1) }),
    // Short batches: a turn's spans reach the collector within a second of it ending.
    spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: 500, maxExportBatchSize: 512, maxQueueSize: 8192 })],
  });
  // null: no context manager; undefined: the SDK's default, AsyncLocalStorage.
  started.register({ contextManager: settings.queueSpans === true ? undefined : null });
  provider = started;
  if (settings.queueSpans === true) queueTelemetry = new BullMQOtel({ tracerName: 'bullmq', version: GATEWAY_VERSION }) as unknown as Telemetry;
  return {
    enabled: true,
    flush: () => started.forceFlush(),
    async shutdown() {
      await started.shutdown();
      if (provider === started) {
        provider = undefined;
        queueTelemetry = undefined;
        // Back to the API's no-ops (tests start and stop tracing more than once per process).
        trace.disable();
        context.disable();
        propagation.disable();
      }
    },
  };
}
