// The gRPC binding's SERVER span, as request-observer.ts starts one per HTTP request: its parent
// is the caller's W3C traceparent (gRPC metadata carries it as HTTP headers do), and the context
// holding it goes with the call (RequestContext.trace) to the turns it opens. Named and
// attributed after the RPC conventions (rpc.system grpc, rpc.service, rpc.method,
// rpc.grpc.status_code) plus the gateway's a2a.* keys.
import { status as GrpcStatus } from '@grpc/grpc-js';
import { trace } from '@opentelemetry/api';
import { A2A, contextOfCarrier, SpanKind, tracer, type TraceContext } from './spans.ts';
import { tracingEnabled } from './tracing.ts';

export interface ObservedCall {
  /** The context holding the call's span (undefined with tracing off). */
  trace: TraceContext;
  /** Ends the span with the status the call ended with and what the steps learnt; once. */
  end(code: number, notes: { agent?: string; taskId?: string }): void;
}

/** Starts a call's span; `header` reads the call's metadata (traceparent, tracestate). */
export function observeGrpcCall(path: string, operation: string, header: (name: string) => string | undefined): ObservedCall {
  if (!tracingEnabled()) return { trace: undefined, end: () => undefined };
  const carrier: Record<string, string> = {};
  for (const name of ['traceparent', 'tracestate']) {
    const value = header(name);
    if (value !== undefined) carrier[name] = value;
  }
  const caller = contextOfCarrier(carrier);
  const [service = '', method = operation] = path.replace(/^\//, '').split('/');
  const span = tracer.startSpan(
    `${service}/${method}`,
    { kind: SpanKind.SERVER, attributes: { 'rpc.system': 'grpc', 'rpc.service': service, 'rpc.method': method, [A2A.binding]: 'grpc', [A2A.method]: operation } },
    caller,
  );
  let ended = false;
  return {
    trace: trace.setSpan(caller, span),
    end(code, notes) {
      if (ended) return;
      ended = true;
      span.setAttribute('rpc.grpc.status_code', code);
      if (notes.agent !== undefined) span.setAttribute(A2A.agent, notes.agent);
      if (notes.taskId !== undefined) span.setAttribute(A2A.taskId, notes.taskId);
      if (code !== GrpcStatus.OK) span.setAttribute('error.type', GrpcStatus[code] ?? String(code));
      // RPC server convention: only the server's own failures mark its span as an error.
      if (code === GrpcStatus.UNKNOWN || code === GrpcStatus.INTERNAL || code === GrpcStatus.UNAVAILABLE || code === GrpcStatus.DATA_LOSS || code === GrpcStatus.DEADLINE_EXCEEDED) span.setStatus({ code: 2 });
      span.end();
    },
  };
}
