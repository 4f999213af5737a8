// The gateway's one error handler (app.onError): whatever step of the pipeline failed (the
// target, the header count, credentials, limits, the body, the operation), the refusal is
// written in the shape of the surface the request was for: a JSON-RPC error object (in a 200
// unless the refusal is the transport's), a google.rpc.Status or a 0.3 error body on HTTP+JSON,
// a plain error elsewhere. It is written through the exchange, so a refusal sent while the
// body is still arriving lingers and closes the connection (bindings/http/exchange.ts).
import { toA2AError, unshaped, type ErrorShape } from '../bindings/errors.ts';
import { ClientGoneError, type Exchange } from '../bindings/http/exchange.ts';
import { noteRequest } from '../bindings/http/request-notes.ts';
import { jsonRpcErrorBody } from '../bindings/jsonrpc/index.ts';
import { restErrorBody } from '../bindings/rest/index.ts';
import { LEGACY_PROTOCOL_VERSION, servedVersionOf } from '../protocol/version.ts';
import { legacyRestErrorBody } from '../compat/v0_3/index.ts';
import type { Logger } from '../logging/logger.ts';
import type { A2AError } from '../protocol/errors.ts';
import { LimitExceededError } from '../limits/limit-refusal.ts';
import { METRICS_PATH, QUEUE_DASHBOARD_PATH } from './admin-routes.ts';
import type { Surface } from './surface.ts';

/** The shape of a failure no step described further: the surface's. */
export function shapeOf(surface: Surface, exchange: Pick<Exchange, 'header' | 'query'>): ErrorShape {
  if (surface.kind === 'jsonrpc') return { binding: 'jsonrpc', requestId: null };
  if (surface.kind === 'http+json') {
    // Before its route is matched, a request is answered in the version it asked for.
    return { binding: 'http+json', legacy: servedVersionOf(exchange.header('a2a-version'), exchange.query.get('A2A-Version') ?? undefined) === LEGACY_PROTOCOL_VERSION };
  }
  return { binding: 'http+json', legacy: false };
}

/** What the logs call a failed request of this surface. */
function failureLabel(surface: Surface, path: string): { failed: string; gone: string } {
  if (surface.kind === 'jsonrpc') return { failed: 'JSON-RPC request failed', gone: 'JSON-RPC client went away before its request arrived' };
  if (surface.kind === 'http+json') return { failed: 'HTTP+JSON request failed', gone: 'HTTP+JSON client went away before its request arrived' };
  if (surface.kind === 'agent-list') return { failed: 'GET /agents failed', gone: 'client went away before its request arrived' };
  const admin = path === METRICS_PATH || path.startsWith(QUEUE_DASHBOARD_PATH);
  return { failed: admin ? 'admin route failed' : 'request handler failed', gone: 'client went away before its request arrived' };
}

function bodyOf(error: A2AError, shape: ErrorShape): { status: number; body: unknown; headers: Record<string, string> } {
  if (shape.binding === 'jsonrpc') {
    // JSON-RPC errors travel in a 200 response; only transport-level refusals keep their HTTP status.
    const status = error.httpStatus ?? (error.mapping.transport ? error.mapping.httpStatus : 200);
    return { status, body: jsonRpcErrorBody(shape.requestId, error), headers: error.httpHeaders() };
  }
  const status = error.httpStatus ?? error.mapping.httpStatus;
  if (shape.binding === 'plain') return { status, body: { error: { ...(restErrorBody(error).error as object), details: [] } }, headers: {} };
  return { status, body: shape.legacy ? legacyRestErrorBody(error) : restErrorBody(error), headers: error.httpHeaders() };
}

/**
 * Answers `thrown` on `exchange` in its shape: the one noted on it (shaped()), else the one the
 * request's route decided (`routed`), else its surface's.
 */
export function answerError(thrown: unknown, surface: Surface, routed: ErrorShape | undefined, exchange: Exchange, logger: Logger): void {
  const { failure, shape: noted } = unshaped(thrown);
  const shape = noted ?? routed ?? shapeOf(surface, exchange);
  const label = failureLabel(surface, exchange.path);
  if (failure instanceof ClientGoneError) {
    // Nobody is left to answer; not the gateway's failure.
    logger.debug(label.gone, { path: exchange.path });
    return;
  }
  const error = toA2AError(failure);
  if (error.kind === 'INTERNAL') logger.error(label.failed, { path: exchange.path, error: String((failure as Error).stack ?? failure) });
  const { response } = exchange;
  if (response.headersSent) {
    response.end();
    return;
  }
  noteRequest(response, { errorCode: error.mapping.jsonRpcCode, errorReason: error.metadata.reason ?? error.kind });
  const { status, body, headers } = bodyOf(error, shape);
  exchange.sendJson(status, body, headers, { flood: error instanceof LimitExceededError && error.limit === 'limits.unauthenticatedPerSecond' });
}
