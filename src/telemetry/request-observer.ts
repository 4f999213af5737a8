// What every A2A request leaves behind when its response ends: a count and a latency sample in
// the metrics, and (tracing on) its SERVER span, whose parent is the caller's traceparent. The
// context holding the span is noted on the response; the binding passes it on with the call
// (RequestContext.trace), so the queue job it enqueues, and through it the turn, are in the same
// trace. Attributes come from what the binding noted (request-notes.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { noteRequest, notesOf } from '../bindings/http/request-notes.ts';
import { requestDuration, requestsTotal } from './metrics.ts';
import { A2A, contextOfCarrier, SpanKind, tracer } from './spans.ts';
import { tracingEnabled } from './tracing.ts';

/** The A2A bindings over HTTP, and the MCP face (/mcp), whose operations are MCP methods. */
export type Binding = 'jsonrpc' | 'http+json' | 'mcp';

/** Starts observing a binding request (agent undefined: /mcp, all agents'); tracing on, notes the context holding its span (notesOf(response).trace). */
export function observeRequest(request: IncomingMessage, response: ServerResponse, binding: Binding, agent: string | undefined, path: string): void {
  const startedAt = process.hrtime.bigint();
  noteRequest(response, { arrivedAtNs: startedAt });
  const caller = tracingEnabled() ? contextOfCarrier(request.headers) : undefined;
  const span = caller !== undefined
    ? tracer.startSpan(
        `${request.method ?? 'POST'} ${path}`,
        {
          kind: SpanKind.SERVER,
          attributes: { 'http.request.method': request.method ?? 'POST', 'url.path': path, [A2A.binding]: binding, ...(agent === undefined ? {} : { [A2A.agent]: agent }) },
        },
        caller,
      )
    : undefined;
  if (span !== undefined) noteRequest(response, { traceId: span.spanContext().traceId, trace: trace.setSpan(caller ?? ROOT_CONTEXT, span) });
  response.once('close', () => {
    const notes = notesOf(response);
    const method = notes.operation ?? 'unknown';
    const status = String(response.statusCode);
    requestsTotal.inc({ method, binding, status });
    requestDuration.observe({ method, binding }, Number(process.hrtime.bigint() - startedAt) / 1e9);
    if (span === undefined) return;
    // RPC convention: the span is named after the method once the binding knows it.
    if (notes.operation !== undefined) span.updateName(notes.operation);
    span.setAttribute('http.response.status_code', response.statusCode);
    if (notes.operation !== undefined) span.setAttribute(A2A.method, notes.operation);
    if (binding !== 'http+json') span.setAttributes({ 'rpc.system': 'jsonrpc', ...(notes.operation === undefined ? {} : { 'rpc.method': notes.operation }) });
    if (notes.taskId !== undefined) span.setAttribute(A2A.taskId, notes.taskId);
    if (notes.contextId !== undefined) span.setAttribute(A2A.contextId, notes.contextId);
    if (notes.state !== undefined) span.setAttribute(A2A.state, notes.state);
    if (notes.errorCode !== undefined) {
      span.setAttributes({ [A2A.errorCode]: notes.errorCode, 'error.type': notes.errorReason ?? String(notes.errorCode) });
      if (notes.errorReason !== undefined) span.setAttribute(A2A.errorReason, notes.errorReason);
    }
    // HTTP server convention: only 5xx marks the server's span as an error; a refusal is the caller's.
    if (response.statusCode >= 500) span.setStatus({ code: 2 });
    if (!response.writableFinished) span.setAttribute('a2a.client_gone', true);
    span.end();
  });
}
