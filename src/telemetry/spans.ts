// The gateway's own spans: names, attribute keys and the few helpers the code that knows the A2A
// facts (bindings, turn runner, adapters, webhook sender) calls. Attribute keys follow the
// OpenTelemetry GenAI conventions where one exists (invoke_agent and chat spans, gen_ai.agent.name,
// gen_ai.conversation.id, gen_ai.request.model, gen_ai.usage.*), the HTTP and error conventions
// (http.request.method, http.response.status_code, url.full, error.type), and an `a2a.*`
// namespace for what A2A adds (there is no A2A convention yet). docs/observability.md lists them.
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import { GATEWAY_VERSION } from '../version.ts';
import { tracingEnabled } from './tracing.ts';

export const tracer = trace.getTracer('a2a-gateway', GATEWAY_VERSION);

/** Attribute keys of the gateway's spans. */
export const A2A = {
  method: 'a2a.method',
  binding: 'a2a.binding',
  taskId: 'a2a.task.id',
  contextId: 'a2a.context.id',
  agent: 'a2a.agent',
  state: 'a2a.task.state',
  /** The JSON-RPC error code (-32001, -31429, …), on both bindings. */
  errorCode: 'a2a.error.code',
  /** The error's kind (TASK_NOT_FOUND, RESOURCE_EXHAUSTED, …) and, for refusals, metadata.reason. */
  errorReason: 'a2a.error.reason',
  turn: 'a2a.turn',
  attempt: 'a2a.turn.attempt',
  adapter: 'a2a.adapter',
  workerId: 'a2a.worker.id',
  pushConfigId: 'a2a.push.config_id',
} as const;

export const GEN_AI = {
  operationName: 'gen_ai.operation.name',
  agentName: 'gen_ai.agent.name',
  conversationId: 'gen_ai.conversation.id',
  providerName: 'gen_ai.provider.name',
  requestModel: 'gen_ai.request.model',
  responseModel: 'gen_ai.response.model',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  finishReasons: 'gen_ai.response.finish_reasons',
} as const;

/**
 * The trace context a piece of work runs in, passed along explicitly (request → task service →
 * job data → turn → adapter → downstream call): no AsyncLocalStorage context manager is
 * registered, since on Node 20 it makes every promise of the process pay (docs/observability.md).
 * Undefined while tracing is off or where no trace was started.
 */
export type TraceContext = Context | undefined;

/**
 * Runs `work` in a new span, a child of `parent` (a new trace when there is none), ending it when
 * `work` settles; a throw marks it as an error. `work` gets the span and the context its own
 * children start from. With tracing off this is a plain call: no span object, no attributes.
 */
export async function inSpan<T>(
  name: string,
  options: { kind?: SpanKind; attributes?: Attributes; parent: TraceContext },
  work: (span: Span | undefined, context: TraceContext) => Promise<T>,
): Promise<T> {
  if (!tracingEnabled()) return work(undefined, undefined);
  const parent = options.parent ?? ROOT_CONTEXT;
  const span = tracer.startSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes }, parent);
  try {
    return await work(span, trace.setSpan(parent, span));
  } catch (error) {
    markError(span, error);
    throw error;
  } finally {
    span.end();
  }
}

/** Records an error on a span: status ERROR, error.type, and the exception event. */
export function markError(span: Span | undefined, error: unknown, type?: string): void {
  if (span === undefined) return;
  const message = error instanceof Error ? error.message : String(error);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
  span.setAttribute('error.type', type ?? (error instanceof Error ? error.name : 'Error'));
  if (error instanceof Error) span.recordException(error);
}

/** A context's trace as W3C headers (traceparent, tracestate); empty while tracing is off or outside a trace. */
export function traceHeaders(traceContext: TraceContext): Record<string, string> {
  const carrier: Record<string, string> = {};
  if (traceContext !== undefined && tracingEnabled() && trace.getSpan(traceContext) !== undefined) propagation.inject(traceContext, carrier);
  return carrier;
}

/** A context's trace as W3C headers for a queue job or a stored message to carry; undefined while tracing is off or outside a trace. */
export function traceCarrier(traceContext: TraceContext): Record<string, string> | undefined {
  const carrier = traceHeaders(traceContext);
  return carrier.traceparent === undefined ? undefined : carrier;
}

/** The context W3C trace headers name (a job's carrier, a request's or a call's headers); the root context when they name none. */
export function contextOfCarrier(carrier: Record<string, string | string[] | undefined> | undefined): Context {
  return carrier === undefined || !tracingEnabled() ? ROOT_CONTEXT : propagation.extract(ROOT_CONTEXT, carrier);
}

/**
 * A CLIENT span around an outgoing HTTP call whose headers may already carry the caller's trace
 * (an adapter passes ctx.traceHeaders() down through an SDK that only forwards headers): the
 * span is that trace's child, and the headers then carry the span itself, so the receiver's
 * spans join the trace under the call. Headers without a traceparent start no trace of their own.
 */
export function inClientSpan<T>(name: string, attributes: Attributes, headers: Headers | Record<string, string>, work: (span: Span | undefined) => Promise<T>): Promise<T> {
  const read = (key: string): string | undefined => (headers instanceof Headers ? (headers.get(key) ?? undefined) : headers[key]);
  const traceparent = read('traceparent');
  if (!tracingEnabled() || traceparent === undefined) return work(undefined);
  const tracestate = read('tracestate');
  const parent = contextOfCarrier(tracestate === undefined ? { traceparent } : { traceparent, tracestate });
  return inSpan(name, { kind: SpanKind.CLIENT, attributes, parent }, (span, own) => {
    for (const [key, value] of Object.entries(traceHeaders(own))) {
      if (headers instanceof Headers) headers.set(key, value);
      else headers[key] = value;
    }
    return work(span);
  });
}

/** The span a context holds, if any (e.g. BullMQ's consumer span around a job). */
export const spanOf = (traceContext: TraceContext): Span | undefined => (traceContext === undefined ? undefined : trace.getSpan(traceContext));

/**
 * Runs `work` with `traceContext` as the active context, for third-party instrumentation that
 * reads it (BullMQ's hook, telemetry.queueSpans); without a context manager, a plain call.
 */
export function withActive<T>(traceContext: TraceContext, work: () => T): T {
  return traceContext === undefined ? work() : context.with(traceContext, work);
}

/** The trace context of whatever runs now: only ever set when a context manager is registered (telemetry.queueSpans, for BullMQ's hook). */
export const activeContext = (): TraceContext => (tracingEnabled() ? context.active() : undefined);

/** A span's trace and span ids, for log lines; empty while tracing is off or without a span. */
export function traceIdsOf(span: Span | undefined): { traceId?: string; spanId?: string } {
  const spanContext = span?.spanContext();
  if (spanContext === undefined || !trace.isSpanContextValid(spanContext)) return {};
  return { traceId: spanContext.traceId, spanId: spanContext.spanId };
}

export { SpanKind };
