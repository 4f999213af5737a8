// The gateway's HTTP surface: every agent's URL space (its card and its two A2A bindings, at
// /agents/<name>/…, and the default agent's at the root), the agent list, keys and health.
import type { RequestFieldPolicy } from '../protocol/unknown-fields.ts';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import { Hono } from 'hono';
import type { RedisClient } from '../redis/connection.ts';
import type { JWK } from 'jose';
import type { AgentEndpoint } from '../agents/agent-endpoint.ts';
import type { ByteRates } from '../limits/byte-rates.ts';
import type { RateLimiter } from '../limits/rate-limiter.ts';
import type { StreamSlots } from '../limits/stream-slots.ts';
import { registerJwksRoute } from './well-known-keys.ts';
import { createExchange, type Exchange, type ExchangeOptions } from '../bindings/http/exchange.ts';
import { A2AError } from '../protocol/errors.ts';
import { checkHeaderCount } from '../bindings/http/header-count.ts';
import type { RequestEdge } from '../bindings/http/pipeline.ts';
import { checkReadiness, type ReadinessProbe } from './readiness.ts';
import type { Queue } from 'bullmq';
import { registerAdminRoutes } from './admin-routes.ts';
import { canonicalTarget, targetOf } from './request-path.ts';
import { observeRequest } from '../telemetry/request-observer.ts';
import { handleJsonRpc } from '../bindings/jsonrpc/index.ts';
import { handleRest, restErrorBody } from '../bindings/rest/index.ts';
import { JSONRPC_PATH, REST_BASE_PATH } from '../protocol/endpoints.ts';
import type { Logger } from '../logging/logger.ts';
import type { SseStreams } from '../bindings/sse/sse-writer.ts';
import type { TaskService } from '../tasks/service.ts';
import { serveCard } from './card-route.ts';
import { logAccess } from './access-log.ts';
import { applyCors } from './cors.ts';
import { handleAgentList } from './agent-list.ts';
import { registerConsoleRoutes } from '../console/console-routes.ts';

export interface GatewayAppOptions {
  service: TaskService;
  /** The default agent at the root URLs. */
  root: AgentEndpoint;
  /** Every agent at /agents/<name>/…, by name. */
  endpoints: ReadonlyMap<string, AgentEndpoint>;
  /** Public keys served at /.well-known/jwks.json (the card signing key). */
  publishedKeys: JWK[];
  rateLimiter: RateLimiter;
  /** What unknown fields of a JSON-RPC or HTTP+JSON request get (protocol.strictRequestFields). */
  requestFields?: RequestFieldPolicy;
  /** Per-owner byte rates of request bodies (limits.ingressBytesPerSecond). */
  byteRates?: ByteRates;
  /** Open streams per owner and in all on this process (limits.maxStreamsPerOwner, limits.maxStreams). */
  streamSlots?: StreamSlots;
  /** The per-request steps of the bindings and the agent list (pipeline.ts), with the default body limit. */
  edge: RequestEdge;
  /** Body bytes discarded after a refusal before the connection closes (refusedBodyDrainBytes). */
  refusedBodyDrainBytes: number;
  /** Where clients reach this gateway (publicUrl, path included): the agent list's card URLs. */
  publicUrl: string;
  redis: RedisClient;
  logger: Logger;
  streams: SseStreams;
  /** Browser origins allowed to call the bindings and /agents ('*' = any). */
  corsOrigins: readonly string[];
  /** One info line per request when it is finished. */
  accessLog: boolean;
  /** What /readyz checks besides Redis (the turn queue, the shutdown drain). */
  readiness: Omit<ReadinessProbe, 'redis' | 'logger'>;
  /** The queues the dashboard at /admin/queues shows. */
  dashboardQueues: readonly Queue[];
  /** Serve the operator console at /console/ (console.enabled). */
  console?: boolean;
}

export type RequestListener = (request: IncomingMessage, response: ServerResponse) => void;

const AGENTS_PATH = '/agents';
const CARD_PATH = '/.well-known/agent-card.json';

/** The agent a request is for, for the access log. */
function agentNameOf(path: string, options: GatewayAppOptions): string | undefined {
  const route = routeOf(path, options);
  return route === undefined || 'unknownAgent' in route ? undefined : route.endpoint.agent.name;
}

/** Which agent a path belongs to and what it asks of it; undefined when it is no agent's. */
function routeOf(path: string, options: GatewayAppOptions): { endpoint: AgentEndpoint; rest: string } | { unknownAgent: string } | undefined {
  if (!path.startsWith(`${AGENTS_PATH}/`)) return { endpoint: options.root, rest: path };
  const end = path.indexOf('/', AGENTS_PATH.length + 1);
  const segment = path.slice(AGENTS_PATH.length + 1, end < 0 ? undefined : end);
  let name: string;
  try {
    name = decodeURIComponent(segment);
  } catch {
    return { unknownAgent: segment };
  }
  const endpoint = options.endpoints.get(name);
  if (endpoint === undefined) return { unknownAgent: name };
  return { endpoint, rest: end < 0 ? '' : path.slice(end) };
}

/** 400 for a target with no single safe reading (request-path.ts), before anything routes it. */
function refuseTarget(exchange: Exchange, reason: string): void {
  const error = new A2AError('INVALID_REQUEST', `The request target has no single safe reading: it contains ${reason}. Send the plain path (for example /a2a/rest/tasks), percent-encoding only what must be.`, {
    metadata: { reason: 'REQUEST_TARGET_AMBIGUOUS' },
  });
  exchange.sendJson(400, restErrorBody(error), error.httpHeaders());
}

function notFound(response: ServerResponse, message: string): void {
  const body = JSON.stringify({ error: { code: 404, status: 'NOT_FOUND', message, details: [] } });
  response.writeHead(404, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
  response.end(body);
}

/**
 * The gateway's request listener: the A2A bindings, cards and the agent list run directly on
 * Node's request and response (src/bindings/http/exchange.ts says why); Hono serves the rest.
 */
export function createGatewayListener(options: GatewayAppOptions): RequestListener {
  const app = new Hono();
  registerJwksRoute(app, () => options.publishedKeys);
  if (options.console === true) registerConsoleRoutes(app);
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/readyz', async (c) => {
    const readiness = await checkReadiness({ ...options.readiness, redis: options.redis, logger: options.logger });
    return readiness.ready ? c.json({ status: 'ok' }) : c.json({ status: 'unavailable', reason: readiness.reason }, 503, { 'Retry-After': '1' });
  });
  const exchangeOptions: ExchangeOptions = { drainBytes: options.refusedBodyDrainBytes };
  registerAdminRoutes(app, { queues: options.dashboardQueues, edge: options.edge, exchangeOptions, logger: options.logger });
  app.notFound((c) =>
    c.json(
      {
        error: {
          code: 404,
          status: 'NOT_FOUND',
          message: `Nothing at ${c.req.method} ${new URL(c.req.url).pathname}. The agent card is at ${CARD_PATH}; the agents are listed at ${AGENTS_PATH}.`,
          details: [],
        },
      },
      404,
    ),
  );
  const honoListener = getRequestListener(app.fetch);
  const fail = (response: ServerResponse, error: unknown): void => {
    options.logger.error('request handler failed', { error: String((error as Error).stack ?? error) });
    if (!response.headersSent) response.writeHead(500, { 'Content-Type': 'application/json' });
    response.end();
  };
  // Built once per agent: each has its own body limit, the rest of the edge is shared.
  const bindingOptions = new Map<AgentEndpoint, Parameters<typeof handleJsonRpc>[1]>();
  const bindingOptionsFor = (endpoint: AgentEndpoint): Parameters<typeof handleJsonRpc>[1] => {
    let built = bindingOptions.get(endpoint);
    if (built === undefined) {
      built = {
        service: options.service,
        endpoint,
        rateLimiter: options.rateLimiter,
        ...(options.byteRates === undefined ? {} : { byteRates: options.byteRates }),
        ...(options.streamSlots === undefined ? {} : { streamSlots: options.streamSlots }),
        ...(options.requestFields === undefined ? {} : { requestFields: options.requestFields }),
        edge: { ...options.edge, maxBodyBytes: endpoint.agent.settings.limits.maxBodyBytes },
        streams: options.streams,
        logger: options.logger,
      };
      bindingOptions.set(endpoint, built);
    }
    return built;
  };
  return (request, response) => {
    // From here on the request's URL is its canonical target: the bindings, the agent routing,
    // Hono and the admin routes' guards all read this one path.
    const canonical = canonicalTarget(request.url ?? '/', request.headers.host);
    if ('refused' in canonical) {
      if (options.accessLog) logAccess(request, response, (request.url ?? '').slice(0, 200), undefined, options.logger);
      refuseTarget(createExchange(request, response, exchangeOptions), canonical.refused);
      return;
    }
    request.url = targetOf(canonical);
    const { path } = canonical;
    if (options.accessLog) logAccess(request, response, path, agentNameOf(path, options), options.logger);
    if (path === AGENTS_PATH || path === `${AGENTS_PATH}/`) {
      if (applyCors(request, response, options.corsOrigins, 'GET')) return;
      handleAgentList(createExchange(request, response, exchangeOptions), options).catch((error: unknown) => fail(response, error));
      return;
    }
    const route = routeOf(path, options);
    if (route !== undefined && 'unknownAgent' in route) {
      notFound(response, `There is no agent "${route.unknownAgent}" here. GET ${AGENTS_PATH} lists the agents you may use.`);
      return;
    }
    const { endpoint, rest } = route as { endpoint: AgentEndpoint; rest: string };
    const isJsonRpc = rest === JSONRPC_PATH || rest === `${JSONRPC_PATH}/`;
    const isRest = rest === REST_BASE_PATH || rest.startsWith(`${REST_BASE_PATH}/`);
    if (!isJsonRpc && !isRest) {
      // The bindings refuse these in their own error shapes (pipeline.ts); cards, health and the rest here.
      try {
        checkHeaderCount(request, options.edge.maxHeaderCount);
      } catch (error) {
        const message = (error as Error).message;
        createExchange(request, response, exchangeOptions).sendJson(431, { error: { code: 431, status: 'INVALID_ARGUMENT', message, details: [] } });
        return;
      }
      // The server leaves Expect: 100-continue to the handlers; the bindings answer it after their header checks.
      if (request.headers.expect?.toLowerCase() === '100-continue') response.writeContinue();
    }
    if (rest === CARD_PATH) {
      serveCard(request, response, endpoint).catch((error: unknown) => fail(response, error));
      return;
    }
    if (isJsonRpc || isRest) {
      // Browser-based A2A clients (inspectors, dashboards) call the bindings cross-origin.
      if (applyCors(request, response, options.corsOrigins, isJsonRpc ? 'POST' : 'GET, POST, DELETE')) return;
      const handle = isJsonRpc ? handleJsonRpc : handleRest;
      observeRequest(request, response, isJsonRpc ? 'jsonrpc' : 'http+json', endpoint.agent.name, `${endpoint.basePath}${isJsonRpc ? JSONRPC_PATH : REST_BASE_PATH}`);
      handle(createExchange(request, response, exchangeOptions), bindingOptionsFor(endpoint)).catch((error: unknown) => fail(response, error));
      return;
    }
    if (endpoint !== options.root) {
      notFound(response, `Nothing at ${request.method ?? 'GET'} ${path}. Agent "${endpoint.agent.name}" serves ${endpoint.basePath}${CARD_PATH}, ${endpoint.basePath}${JSONRPC_PATH} and ${endpoint.basePath}${REST_BASE_PATH}/….`);
      return;
    }
    void honoListener(request, response);
  };
}


