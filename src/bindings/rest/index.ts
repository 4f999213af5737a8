// The HTTP+JSON binding (spec 11): routes from the operation registry (./routes.ts),
// google.rpc.Status errors, SSE for streams; with A2A-Version 0.3 (or none) the registry's 0.3
// routes (`/v1/…`) in the 0.3 wire form (src/compat/v0_3). Translates wire shapes only; the operations are
// declared in src/operations and run by its dispatcher.
import type { Logger } from '../../logging/logger.ts';
import type { Operation } from '../../operations/definition.ts';
import { openStream, runUnary, type OperationDeps } from '../../operations/dispatch.ts';
import { A2AError } from '../../protocol/errors.ts';
import { jsonNameOf } from '../../protocol/protojson.ts';
import { shaped, toA2AError } from '../errors.ts';
import type { Exchange } from '../http/exchange.ts';
import { lastEventIdOf } from '../http/last-event-id.ts';
import { exchangeContext } from '../http/extensions.ts';
import type { AdmittedRequest, RequestEdge } from '../http/pipeline.ts';
import { noteRequest, noteResult } from '../http/request-notes.ts';
import type { SseStreams } from '../sse/sse-writer.ts';
import { pipeTaskStream } from '../sse/task-stream.ts';
import { REST_BASE_PATH } from '../../protocol/endpoints.ts';
import { LEGACY_REST_ROUTER, REST_ROUTER, type RestRouter, type RouteMatch } from './routes.ts';
import { LEGACY_TRANSLATIONS, legacyRestErrorBody, legacyStreamFrame } from '../../compat/v0_3/index.ts';
import { LEGACY_EXTENSIONS_HEADER } from '../../extensions/activation.ts';
import type { RequestContext } from '../../operations/dispatch.ts';
import { withJsonNames } from '../../protocol/protojson.ts';
import { LEGACY_PROTOCOL_VERSION, PROTOCOL_VERSION, servedVersionOf, wrongVersionFor } from '../../protocol/version.ts';

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

const NUMBER_QUERY = new Set(['historyLength', 'pageSize']);
const BOOLEAN_QUERY = new Set(['includeArtifacts']);

/** Query strings carry everything as text (spec 11.5); give the schemas typed values. Proto names (`history_length`) count as JSON names. */
function queryParams(query: URLSearchParams): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  for (const [given, value] of query) {
    if (given === 'A2A-Version') continue;
    const name = jsonNameOf(given);
    if (Object.hasOwn(params, name)) {
      throw new A2AError('INVALID_PARAMS', `the query parameter ${name} is given twice`, { violations: [{ field: name, description: `is given twice (as "${given}" among others); send it once` }] });
    }
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

/** The task a request names, for the access log. */
function taskIdOf(params: Record<string, unknown>): string | undefined {
  const named = params.id ?? params.taskId ?? (params.message as { taskId?: unknown } | undefined)?.taskId;
  return typeof named === 'string' ? named.slice(0, 256) : undefined;
}

/** Whether the binding reads a body for this route: POST routes of operations that take one. */
const readsBody = (match: RouteMatch): boolean => match.route.method === 'POST' && match.operation.restBody !== 'none';

/** Builds the operation's params from path, query and body; path values win and must agree. */
function paramsFor(exchange: Exchange, match: RouteMatch, bodyText: string): Record<string, unknown> {
  const fromBody = readsBody(match) ? parseJsonBody(bodyText, match.operation.restBody === 'required') : {};
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

/** Runs a matched operation and writes its answer: JSON, or an SSE stream. */
async function serve(
  exchange: Exchange,
  operation: Operation,
  params: Record<string, unknown>,
  principal: RequestContext['principal'],
  options: RestBindingOptions,
  body: { bytes: number; charged: boolean },
): Promise<void> {
  const requestBytes = body.bytes;
  const paidBeforeBody = body.charged;
  if (!operation.streaming) {
    const result = await runUnary(operation, params, { principal, requestBytes, paidBeforeBody, answersSpliced: true, ...exchangeContext(exchange) }, options);
    noteResult(exchange.response, result);
    exchange.sendJson(200, result ?? {});
    return;
  }
  const plan = await openStream(operation, params, { principal, requestBytes, paidBeforeBody, lastEventId: lastEventIdOf(exchange), answersSpliced: true, ...exchangeContext(exchange) }, options);
  pipeTaskStream({
    service: options.service,
    response: exchange.response,
    streams: options.streams,
    plan,
    frame: (json) => json,
    frameError: (error) => ({ event: 'error', data: JSON.stringify(restErrorBody(toA2AError(error))) }),
  });
}

/** Runs a matched 0.3 operation: the request and result translated, errors in the 0.3 shape. */
async function serveLegacy(exchange: Exchange, match: RouteMatch, bodyText: string, principal: RequestContext['principal'], options: RestBindingOptions, paidBeforeBody: boolean): Promise<void> {
  const { operation } = match;
  const translation = LEGACY_TRANSLATIONS[operation.name];
  if (translation === undefined) throw new A2AError('METHOD_NOT_FOUND', `${operation.name} has no A2A 0.3 form.`);
  // 0.3 clients send an empty POST as the literal `null` (the proto's reference SDKs do).
  const body = readsBody(match) && bodyText.trim() !== 'null' ? parseJsonBody(bodyText, false) : {};
  const params = translation.fromRest({ path: match.params, query: queryParams(exchange.query), body: withJsonNames(body) as Record<string, unknown> });
  noteRequest(exchange.response, { operation: operation.name, taskId: taskIdOf(params) });
  const context: RequestContext = { principal, requestBytes: Buffer.byteLength(bodyText), paidBeforeBody, lastEventId: lastEventIdOf(exchange), ...exchangeContext(exchange, LEGACY_EXTENSIONS_HEADER) };
  if (!operation.streaming) {
    const result = translation.result(await runUnary(operation, params, context, options), 'proto');
    exchange.sendJson(200, result ?? {});
    return;
  }
  const plan = await openStream(operation, params, context, options);
  pipeTaskStream({
    service: options.service,
    response: exchange.response,
    streams: options.streams,
    plan,
    frame: (json) => legacyStreamFrame(json, 'proto', plan.closesOn),
    frameError: (error) => ({ event: 'error', data: JSON.stringify(legacyRestErrorBody(toA2AError(error))) }),
  });
}

/**
 * The route a request takes: a 0.3 request (A2A-Version 0.3, or none) takes the 0.3 routes
 * (`/v1/…`); one that matches none of them but a 1.0 route takes that one, whose version step
 * then asks for A2A-Version 1.0 (what a request without the header always got).
 */
function routeOf(exchange: Exchange, path: string, legacyRequested: boolean): { match: ReturnType<RestRouter['match']>; router: RestRouter; legacy: boolean } {
  if (legacyRequested) {
    const match = LEGACY_REST_ROUTER.match(exchange.method, path);
    if (match !== undefined) return { match, router: LEGACY_REST_ROUTER, legacy: true };
  }
  return { match: REST_ROUTER.match(exchange.method, path), router: REST_ROUTER, legacy: false };
}

/** The operation a request below the REST base names, and whether it is served in 0.3. */
export interface RestRoute {
  match: RouteMatch;
  legacy: boolean;
}

/** What the admission steps take for a route: a JSON body where the route reads one, and the version. */
export const restAdmission = (route: RestRoute): { content: 'json-if-body'; readsBody: boolean; checkVersion: true } => ({
  content: 'json-if-body',
  readsBody: readsBody(route.match),
  checkVersion: true,
});

/** Matches a request below the endpoint's REST base (`<agent base>/a2a/rest`): 404 and 405 in the shape of the version asked for. */
export function matchRestRoute(exchange: Exchange, basePath: string): RestRoute {
  let legacy = servedVersionOf(exchange.header('a2a-version'), exchange.query.get('A2A-Version') ?? undefined) === LEGACY_PROTOCOL_VERSION;
  try {
    const base = `${basePath}${REST_BASE_PATH}`;
    const path = exchange.path.slice(base.length) || '/';
    let route: ReturnType<typeof routeOf>;
    try {
      route = routeOf(exchange, path, legacy);
    } catch (error) {
      // decodeURIComponent of a path segment such as "%E0%A4%A": the client's mistake, not ours.
      if (error instanceof URIError) throw new A2AError('INVALID_REQUEST', `The path ${base}${path} has malformed percent-encoding.`);
      throw error;
    }
    const { match, router } = route;
    if (match === undefined) {
      throw new A2AError('METHOD_NOT_FOUND', `No A2A operation at ${exchange.method} ${base}${path}; see openapi.yaml for the routes${legacy ? ' (this request, without A2A-Version 1.0, was matched against the 0.3 routes and the 1.0 ones)' : ''}.`);
    }
    legacy = route.legacy;
    if (match === 'method-not-allowed') {
      exchange.response.setHeader('Allow', router.allowedMethods(path).join(', '));
      throw new A2AError('METHOD_NOT_FOUND', `${exchange.method} is not allowed on ${base}${path}`, { httpStatus: 405 });
    }
    return { match, legacy };
  } catch (error) {
    throw shaped(error, { binding: 'http+json', legacy });
  }
}

/** Handles one request below the endpoint's REST base, its route matched and the request admitted by the gateway's pipeline (gateway/app.ts). */
export async function handleRest(exchange: Exchange, route: RestRoute, admitted: AdmittedRequest, options: RestBindingOptions): Promise<void> {
  const { match, legacy } = route;
  try {
    const base = `${options.endpoint.basePath}${REST_BASE_PATH}`;
    const { principal, version, body: bodyText, paidBeforeBody } = admitted;
    const body = { bytes: Buffer.byteLength(bodyText), charged: paidBeforeBody };
    if (legacy) {
      await serveLegacy(exchange, match, bodyText, principal, options, body.charged);
      return;
    }
    if (version !== PROTOCOL_VERSION) {
      throw wrongVersionFor(`${exchange.method} ${base}${match.route.path}`, { header: exchange.header('a2a-version'), query: exchange.query.get('A2A-Version') ?? undefined }, PROTOCOL_VERSION);
    }
    const params = paramsFor(exchange, match, bodyText);
    noteRequest(exchange.response, { operation: match.operation.name, taskId: taskIdOf(params) });
    await serve(exchange, match.operation, params, principal, options, body);
  } catch (error) {
    // The gateway's error handler answers it (gateway/error-response.ts), in the version's shape.
    throw shaped(error, { binding: 'http+json', legacy });
  }
}
