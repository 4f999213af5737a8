// The HTTP+JSON binding (spec 11): resource routes from ./routes.ts, google.rpc.Status errors,
// SSE for streams. Translates wire shapes only; the operations live in ../operations.ts.
import type { Logger } from '../../logging/logger.ts';
import { A2AError } from '../../protocol/errors.ts';
import { toA2AError } from '../errors.ts';
import { ClientGoneError, type Exchange } from '../http/exchange.ts';
import { lastEventIdOf } from '../http/last-event-id.ts';
import { admitRequest, type RequestEdge } from '../http/pipeline.ts';
import { noteRequest } from '../http/request-notes.ts';
import {
  isStreamOperation,
  isUnaryOperation,
  runUnaryOperation,
  startStreamOperation,
  type OperationDeps,
} from '../operations.ts';
import type { SseStreams } from '../sse/sse-writer.ts';
import { pipeTaskStream } from '../sse/task-stream.ts';
import { allowedMethods, matchRestRoute, REST_BASE_PATH, type RouteMatch } from './routes.ts';

export interface RestBindingOptions extends OperationDeps {
  /** The per-request steps before the operation (size, type, credentials, body bounds). */
  edge: RequestEdge;
  /** This gateway's open streams (heartbeats, shutdown). */
  streams: SseStreams;
  logger: Logger;
}

export function restErrorBody(error: A2AError): Record<string, unknown> {
  const status = error.httpStatus ?? error.mapping.httpStatus;
  // An unknown path is NOT_FOUND on the HTTP binding, whatever gRPC would call an unknown method.
  const statusName = status === 404 ? 'NOT_FOUND' : status === 405 ? 'UNIMPLEMENTED' : error.mapping.grpcStatus;
  return { error: { code: status, status: statusName, message: error.message, details: error.details() } };
}

function respondError(exchange: Exchange, error: A2AError): void {
  exchange.sendJson(error.httpStatus ?? error.mapping.httpStatus, restErrorBody(error), error.httpHeaders());
}

const NUMBER_QUERY = new Set(['historyLength', 'pageSize']);
const BOOLEAN_QUERY = new Set(['includeArtifacts']);

/** Query strings carry everything as text (spec 11.5); give the schemas typed values. */
function queryParams(query: URLSearchParams): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  for (const [name, value] of query) {
    if (name === 'A2A-Version') continue;
    if (NUMBER_QUERY.has(name) && /^-?\d+$/.test(value)) params[name] = Number(value);
    else if (BOOLEAN_QUERY.has(name) && (value === 'true' || value === 'false')) params[name] = value === 'true';
    else params[name] = value;
  }
  return params;
}

/** The body as an object; its Content-Type was checked before it was read (http/content-type.ts). */
function parseJsonBody(text: string, required: boolean): Record<string, unknown> {
  if (text.trim() === '') {
    if (required) throw new A2AError('INVALID_PARAMS', 'the request body is empty; send a JSON object', { violations: [{ field: '(body)', description: 'is required' }] });
    return {};
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new A2AError('PARSE_ERROR', 'Invalid JSON payload: the body is not valid JSON');
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new A2AError('INVALID_REQUEST', 'the request body must be a JSON object');
  }
  return body as Record<string, unknown>;
}

/** Builds the operation's params from path, query and body; path values win and must agree. */
const BODY_REQUIRED = new Set(['SendMessage', 'SendStreamingMessage', 'CreateTaskPushNotificationConfig', 'CreateSchedule']);

function paramsFor(exchange: Exchange, match: RouteMatch, bodyText: string): Record<string, unknown> {
  const { route } = match;
  const fromBody = route.method === 'POST' ? parseJsonBody(bodyText, BODY_REQUIRED.has(route.operation)) : {};
  const params: Record<string, unknown> = { ...queryParams(exchange.query), ...fromBody };
  for (const [name, value] of Object.entries(match.params)) {
    // On push-config routes the path's {taskId} is the task and {id} the config.
    if (params[name] !== undefined && params[name] !== value) {
      throw new A2AError('INVALID_PARAMS', `${name} in the body differs from the URL`, {
        violations: [{ field: name, description: `is "${String(params[name])}" in the body but "${value}" in the URL` }],
      });
    }
    params[name] = value;
  }
  if (match.tenant !== undefined) {
    if (params.tenant !== undefined && params.tenant !== match.tenant) {
      throw new A2AError('INVALID_PARAMS', 'tenant in the body differs from the URL', {
        violations: [{ field: 'tenant', description: 'must match the tenant in the URL path' }],
      });
    }
    params.tenant = match.tenant;
  }
  return params;
}

/** Handles one request below the endpoint's REST base (`<agent base>/a2a/rest`). */
export async function handleRest(exchange: Exchange, options: RestBindingOptions): Promise<void> {
  try {
    const base = `${options.endpoint.basePath}${REST_BASE_PATH}`;
    const path = exchange.path.slice(base.length) || '/';
    let match: ReturnType<typeof matchRestRoute>;
    try {
      match = matchRestRoute(exchange.method, path);
    } catch (error) {
      // decodeURIComponent of a path segment such as "%E0%A4%A": the client's mistake, not ours.
      if (error instanceof URIError) throw new A2AError('INVALID_REQUEST', `The path ${base}${path} has malformed percent-encoding.`);
      throw error;
    }
    if (match === undefined) {
      throw new A2AError('METHOD_NOT_FOUND', `No A2A operation at ${exchange.method} ${base}${path}; see openapi.yaml for the routes.`);
    }
    if (match === 'method-not-allowed') {
      exchange.response.setHeader('Allow', allowedMethods(path).join(', '));
      throw new A2AError('METHOD_NOT_FOUND', `${exchange.method} is not allowed on ${base}${path}`, { httpStatus: 405 });
    }
    const { principal, body: bodyText } = await admitRequest(exchange, options.edge, {
      content: 'json-if-body',
      readsBody: match.route.method === 'POST',
      checkVersion: true,
    });
    const params = paramsFor(exchange, match, bodyText);
    const named = params.id ?? params.taskId;
    noteRequest(exchange.response, { operation: match.route.operation, taskId: typeof named === 'string' ? named : undefined });
    const operation = match.route.operation;
    if (isUnaryOperation(operation)) {
      const result = await runUnaryOperation(operation, params, principal, options);
      exchange.sendJson(200, result ?? {});
      return;
    }
    if (isStreamOperation(operation)) {
      const plan = await startStreamOperation(operation, params, lastEventIdOf(exchange), principal, options);
      pipeTaskStream({
        service: options.service,
        response: exchange.response,
        streams: options.streams,
        plan,
        frame: (json) => json,
        frameError: (error) => ({ event: 'error', data: JSON.stringify(restErrorBody(toA2AError(error))) }),
      });
      return;
    }
    throw new A2AError('METHOD_NOT_FOUND', `Operation ${operation} is not available`);
  } catch (error) {
    if (error instanceof ClientGoneError) {
      // Nobody is left to answer; not the gateway's failure.
      options.logger.debug('HTTP+JSON client went away before its request arrived', { path: exchange.path });
      return;
    }
    const a2a = toA2AError(error);
    if (a2a.kind === 'INTERNAL') options.logger.error('HTTP+JSON request failed', { error: String((error as Error).stack ?? error) });
    respondError(exchange, a2a);
  }
}
