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
 * Runs `work` in a new span (a child of the active one), ending it when `work` settles; a throw
 * marks it as an error. With tracing off this is a plain call: no span object, no attributes.
 */
export async function inSpan<T>(name: string, options: { kind?: SpanKind; attributes?: Attributes; parent?: Context }, work: (span: Span | undefined) => Promise<T>): Promise<T> {
  if (!tracingEnabled()) return work(undefined);
  return tracer.startActiveSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes }, options.parent ?? context.active(), async (span) => {
    try {
      return await work(span);
    } catch (error) {
      markError(span, error);
      throw error;
    } finally {
      span.end();
    }
  });
}

/** Records an error on a span: status ERROR, error.type, and the exception event. */
export function markError(span: Span | undefined, error: unknown, type?: string): void {
  if (span === undefined) return;
  const message = error instanceof Error ? error.message : String(error);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
  span.setAttribute('error.type', type ?? (error instanceof Error ? error.name : 'Error'));
  if (error instanceof Error) span.recordException(error);
}

/** Adds the active trace context (traceparent, tracestate) to outgoing request headers; nothing while tracing is off. */
export function injectTraceHeaders(headers: Record<string, string> | Headers): void {
  if (!tracingEnabled()) return;
  if (headers instanceof Headers) {
    propagation.inject(context.active(), headers, { set: (carrier, key, value) => carrier.set(key, value) });
  } else {
    propagation.inject(context.active(), headers);
  }
}

/** The active trace context as W3C headers (traceparent, tracestate), for a queue job to carry; undefined while tracing is off or outside a span. */
export function traceCarrier(): Record<string, string> | undefined {
  if (!tracingEnabled() || trace.getActiveSpan() === undefined) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent === undefined ? undefined : carrier;
}

/** The context a job's trace carrier names (the root context when it carries none). */
export function contextOfCarrier(carrier: Record<string, string> | undefined): Context {
  return carrier === undefined ? ROOT_CONTEXT : propagation.extract(ROOT_CONTEXT, carrier);
}

/** Whether a span is active here (e.g. BullMQ's consumer span around a job). */
export const hasActiveSpan = (): boolean => trace.getActiveSpan() !== undefined;

/** The trace context a caller sent (W3C traceparent), or the root context. */
export function callerContext(headers: Record<string, string | string[] | undefined>): Context {
  return propagation.extract(context.active(), headers);
}

/** The active span's trace and span ids, for log lines; undefined while tracing is off or outside a span. */
export function activeTraceIds(): { traceId: string; spanId: string } | undefined {
  if (!tracingEnabled()) return undefined;
  const spanContext = trace.getActiveSpan()?.spanContext();
  if (spanContext === undefined || !trace.isSpanContextValid(spanContext)) return undefined;
  return { traceId: spanContext.traceId, spanId: spanContext.spanId };
}

export { SpanKind };
