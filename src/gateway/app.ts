// The gateway's HTTP surface: every agent's URL space (its card and its two A2A bindings, at
// /agents/<name>/…, and the default agent's at the root), the agent list, keys, health, the
// admin routes and the console, all one Hono app whose middleware is every request's pipeline,
// in the order declared in createGatewayApp, with one error handler (error-response.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import type { JWK } from 'jose';
import type { RequestFieldPolicy } from '../protocol/unknown-fields.ts';
import type { RedisClient } from '../redis/connection.ts';
import type { AgentEndpoint } from '../agents/agent-endpoint.ts';
import type { ByteRates } from '../limits/byte-rates.ts';
import type { RateLimiter } from '../limits/rate-limiter.ts';
import type { StreamSlots } from '../limits/stream-slots.ts';
import type { Logger } from '../logging/logger.ts';
import type { SseStreams } from '../bindings/sse/sse-writer.ts';
import type { TaskService } from '../tasks/service.ts';
import { A2AError } from '../protocol/errors.ts';
import { shaped } from '../bindings/errors.ts';
import { createExchange, type Exchange, type ExchangeOptions } from '../bindings/http/exchange.ts';
import { checkHeaderCount } from '../bindings/http/header-count.ts';
import type { Admission, RequestEdge } from '../bindings/http/pipeline.ts';
import { checkJsonRpcMethod, handleJsonRpc, JSONRPC_ADMISSION, type JsonRpcBindingOptions } from '../bindings/jsonrpc/index.ts';
import { handleRest, matchRestRoute, restAdmission, type RestRoute } from '../bindings/rest/index.ts';
import { declaredBodyCharge } from '../operations/dispatch.ts';
import { JSONRPC_PATH, REST_BASE_PATH } from '../protocol/endpoints.ts';
import { observeRequest } from '../telemetry/request-observer.ts';
import { registerConsoleRoutes } from '../console/console-routes.ts';
import { registerMcpRoutes, type McpFaceSettings } from '../mcp/mcp-routes.ts';
import { logAccess } from './access-log.ts';
import { registerAdminRoutes } from './admin-routes.ts';
import type { DashboardQueues } from './dashboard-queues.ts';
import { registerAdminV1Routes } from './admin-v1-routes.ts';
import type { ControlService } from '../control/control-service.ts';
import { admit, ADMISSION_STEPS } from './admission.ts';
import { checkAgentListMethod, handleAgentList } from './agent-list.ts';
import { serveCard } from './card-route.ts';
import { applyCors } from './cors.ts';
import { answerError } from './error-response.ts';
import type { GatewayEnv } from './gateway-env.ts';
import { runSteps, type Step } from './steps.ts';
import type { ReadinessProbe } from './readiness.ts';
import { registerReadinessRoute } from './readiness-route.ts';
import type { IssuerStatus } from '../auth/jwt/jwt-verifier.ts';
import { canonicalTarget, targetOf } from './request-path.ts';
import { agentOf, AGENTS_PATH, CARD_PATH, surfaceOf } from './surface.ts';
import { registerJwksRoute } from './well-known-keys.ts';

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
  /** The trusted issuers' state, which /readyz adds for a platform operator (readiness-route.ts). */
  issuerStatus?: () => readonly IssuerStatus[];
  /** The queues the dashboard at /admin/queues shows. */
  dashboardQueues: DashboardQueues;
  /** Serve the operator console at /console/ (console.enabled). */
  console?: boolean;
  /** The control plane's admin API at /admin/v1 (docs/admin-api.md). */
  control?: ControlService;
  /** The MCP face at /mcp (docs/mcp.md), when mcp.enabled. */
  mcp?: McpFaceSettings;
}

export type RequestListener = (request: IncomingMessage, response: ServerResponse) => void;


/** One agent's binding options and what its routes ask of admission, built once. */
interface AgentBinding {
  options: JsonRpcBindingOptions;
  jsonRpc: Admission;
  rest: (route: RestRoute) => Admission;
}

/** Why a request's target was refused (request-path.ts), and the target as it came, for the access log. */
const refusedTargets = new WeakMap<IncomingMessage, { reason: string; raw: string }>();

/** The agent surfaces' 404: written as it is, like any answer (not a refusal: no linger). */
function notFound(response: ServerResponse, message: string): void {
  const body = JSON.stringify({ error: { code: 404, status: 'NOT_FOUND', message, details: [] } });
  response.writeHead(404, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
  response.end(body);
}

/**
 * The gateway's Hono app. Its middleware, in this order, is every request's pipeline:
 *
 *   surface (which agent and binding the canonical path is for; the exchange over Node's
 *   request and response) → access log → target refusal (400) → unknown agent (404)
 *   → CORS (the bindings, /agents; a preflight ends here) → request observation and tracing
 *   (the bindings) → the route's own refusals (404, 405) and what it asks of admission
 *   → header count (431) → admission (admission.ts: declared size 413, content type 415,
 *   credentials 401, version, byte rate 429, the body within its limits, a signed body's
 *   digest) → the handler (a binding, a card, /agents; the root routes, an app of their own whose admin
 *   routes run the same admission steps behind their guard).
 *
 * The steps up to the handler run as one middleware (steps.ts): a step with nothing to wait
 * for costs no promise on the hot path. Every failure, at any step, reaches app.onError
 * (error-response.ts), which answers in the shape of the binding the request was for.
 */
export function createGatewayApp(options: GatewayAppOptions): Hono<GatewayEnv> {
  const app = new Hono<GatewayEnv>();
  const exchangeOptions: ExchangeOptions = { drainBytes: options.refusedBodyDrainBytes };

  const surface: Step = (c) => {
    const { incoming, outgoing } = c.env;
    c.set('exchange', createExchange(incoming, outgoing, exchangeOptions));
    c.set('surface', refusedTargets.has(incoming) ? { kind: 'root', endpoint: options.root } : surfaceOf(c.get('exchange').path, options));
    return undefined;
  };
  const accessLog: Step = (c) => {
    if (!options.accessLog) return undefined;
    const { incoming, outgoing } = c.env;
    const refused = refusedTargets.get(incoming);
    if (refused !== undefined) logAccess(incoming, outgoing, refused.raw.slice(0, 200), undefined, options.logger);
    else {
      const { path } = c.get('exchange');
      logAccess(incoming, outgoing, path, agentOf(c.get('surface'), path, options), options.logger);
    }
    return undefined;
  };
  const targetRefusal: Step = (c) => {
    const refused = refusedTargets.get(c.env.incoming);
    if (refused !== undefined) {
      throw new A2AError('INVALID_REQUEST', `The request target has no single safe reading: it contains ${refused.reason}. Send the plain path (for example /a2a/rest/tasks), percent-encoding only what must be.`, {
        metadata: { reason: 'REQUEST_TARGET_AMBIGUOUS' },
      });
    }
    return undefined;
  };
  const unknownAgent: Step = (c) => {
    const target = c.get('surface');
    if (target.kind !== 'unknown-agent') return undefined;
    notFound(c.env.outgoing, `There is no agent "${target.name}" here. GET ${AGENTS_PATH} lists the agents you may use.`);
    return RESPONSE_ALREADY_SENT;
  };
  // Browser-based A2A clients (inspectors, dashboards) call the bindings and /agents cross-origin.
  const cors: Step = (c) => {
    const kind = c.get('surface').kind;
    const methods = kind === 'jsonrpc' ? 'POST' : kind === 'http+json' ? 'GET, POST, DELETE' : kind === 'agent-list' ? 'GET' : undefined;
    if (methods !== undefined && applyCors(c.env.incoming, c.env.outgoing, options.corsOrigins, methods)) return RESPONSE_ALREADY_SENT;
    return undefined;
  };
  const observe: Step = (c) => {
    const target = c.get('surface');
    if (target.kind === 'jsonrpc' || target.kind === 'http+json') {
      const path = `${target.endpoint.basePath}${target.kind === 'jsonrpc' ? JSONRPC_PATH : REST_BASE_PATH}`;
      observeRequest(c.env.incoming, c.env.outgoing, target.kind, target.endpoint.agent.name, path);
    }
    return undefined;
  };

  // Built once per agent: each has its own body limit, the rest of the edge is shared.
  // Weakly held: an endpoint replaced or removed at run time (an agent changed through the admin API) takes its binding with it.
  const perAgent = new WeakMap<AgentEndpoint, AgentBinding>();
  const bindingOf = (endpoint: AgentEndpoint): AgentBinding => {
    let built = perAgent.get(endpoint);
    if (built === undefined) {
      const edge = { ...options.edge, maxBodyBytes: endpoint.agent.settings.limits.maxBodyBytes };
      const bindingOptions: JsonRpcBindingOptions = {
        service: options.service,
        endpoint,
        rateLimiter: options.rateLimiter,
        ...(options.byteRates === undefined ? {} : { byteRates: options.byteRates }),
        ...(options.streamSlots === undefined ? {} : { streamSlots: options.streamSlots }),
        ...(options.requestFields === undefined ? {} : { requestFields: options.requestFields }),
        edge,
        streams: options.streams,
        logger: options.logger,
      };
      const chargeDeclaredBody = declaredBodyCharge(bindingOptions);
      built = { options: bindingOptions, jsonRpc: { ...JSONRPC_ADMISSION, edge, chargeDeclaredBody }, rest: (route) => ({ ...restAdmission(route), edge, chargeDeclaredBody }) };
      perAgent.set(endpoint, built);
    }
    return built;
  };
  /** The route's own refusals (404, 405) before anything is admitted, and what it asks of admission. */
  const route: Step = (c) => {
    const target = c.get('surface');
    const exchange = c.get('exchange');
    switch (target.kind) {
      case 'jsonrpc':
        checkJsonRpcMethod(exchange);
        admit(c, bindingOf(target.endpoint).jsonRpc);
        break;
      case 'http+json': {
        const matched = matchRestRoute(exchange, target.endpoint.basePath);
        c.set('restRoute', matched);
        c.set('errorShape', { binding: 'http+json', legacy: matched.legacy });
        admit(c, bindingOf(target.endpoint).rest(matched));
        break;
      }
      case 'agent-list':
        checkAgentListMethod(exchange);
        admit(c, { edge: options.edge, content: 'json-if-body', readsBody: false, checkVersion: false });
        break;
      default:
    }
    return undefined;
  };
  const headerCount: Step = (c) => {
    try {
      checkHeaderCount(c.env.incoming, options.edge.maxHeaderCount);
    } catch (error) {
      // The A2A calls refuse it in their own shape; every other surface in the plain one.
      if (c.get('admission') !== undefined) throw error;
      throw shaped(error, { binding: 'plain' });
    }
    // The server leaves Expect: 100-continue to the handlers: an A2A call answers it when it reads the body.
    if (c.get('admission') === undefined && c.env.incoming.headers.expect?.toLowerCase() === '100-continue') c.env.outgoing.writeContinue();
    return undefined;
  };
  /** The handler of every surface; the root routes are an app of their own (rootRoutes below). */
  const agentSurfaces: MiddlewareHandler<GatewayEnv> = async (c) => {
    const target = c.get('surface');
    const exchange: Exchange = c.get('exchange');
    switch (target.kind) {
      case 'jsonrpc':
        await handleJsonRpc(exchange, c.get('admitted'), bindingOf(target.endpoint).options);
        break;
      case 'http+json':
        await handleRest(exchange, c.get('restRoute'), c.get('admitted'), bindingOf(target.endpoint).options);
        break;
      case 'card':
        await serveCard(c.env.incoming, c.env.outgoing, target.endpoint);
        break;
      case 'agent-list':
        await handleAgentList(exchange, c.get('admitted').principal, options);
        break;
      case 'agent-path': {
        const { basePath, agent } = target.endpoint;
        notFound(c.env.outgoing, `Nothing at ${exchange.method} ${exchange.path}. Agent "${agent.name}" serves ${basePath}${CARD_PATH}, ${basePath}${JSONRPC_PATH} and ${basePath}${REST_BASE_PATH}/….`);
        break;
      }
      default:
        rootCalls.set(c.env.incoming, c);
        return rootRoutes.fetch(c.req.raw, c.env);
    }
    return RESPONSE_ALREADY_SENT;
  };

  app.use(runSteps(surface, accessLog, targetRefusal, unknownAgent, cors, observe, route, headerCount, ...ADMISSION_STEPS), agentSurfaces);

  // The root routes are an app of their own: the dashboard's routes need Hono's general router,
  // and on the main app they would cost every A2A call its slower match. A root request reaches
  // them with what the pipeline decided (its exchange and surface).
  const rootCalls = new WeakMap<IncomingMessage, Context<GatewayEnv>>();
  const rootRoutes = new Hono<GatewayEnv>();
  rootRoutes.use(async (c, next) => {
    const pipeline = rootCalls.get(c.env.incoming);
    if (pipeline !== undefined) {
      c.set('exchange', pipeline.get('exchange'));
      c.set('surface', pipeline.get('surface'));
    }
    await next();
  });
  registerJwksRoute(rootRoutes, () => options.publishedKeys);
  if (options.console === true) registerConsoleRoutes(rootRoutes);
  rootRoutes.get('/healthz', (c) => c.json({ status: 'ok' }));
  registerReadinessRoute(rootRoutes, {
    probe: { ...options.readiness, redis: options.redis, logger: options.logger },
    edge: options.edge,
    issuers: options.issuerStatus ?? (() => []),
  });
  registerAdminRoutes(rootRoutes, { queues: options.dashboardQueues, edge: options.edge });
  if (options.control !== undefined) registerAdminV1Routes(rootRoutes, { service: options.control, edge: options.edge });
  if (options.mcp?.settings.enabled === true) {
    const { endpoints, edge, publicUrl, corsOrigins, logger } = options;
    registerMcpRoutes(rootRoutes, { ...options.mcp, endpoints, depsOf: (endpoint) => bindingOf(endpoint).options, edge, publicUrl, corsOrigins, logger });
  }
  rootRoutes.notFound((c) =>
    c.json(
      {
        error: {
          code: 404,
          status: 'NOT_FOUND',
          message: `Nothing at ${c.req.method} ${c.get('exchange').path}. The agent card is at ${CARD_PATH}; the agents are listed at ${AGENTS_PATH}.`,
          details: [],
        },
      },
      404,
    ),
  );
  const onError = (error: Error, c: Context<GatewayEnv>): Response => {
    answerError(error, c.get('surface'), c.get('errorShape'), c.get('exchange'), options.logger);
    return RESPONSE_ALREADY_SENT;
  };
  rootRoutes.onError(onError);
  app.onError(onError);
  return app;
}

/**
 * The gateway's request listener. A request's URL becomes its canonical target before Hono
 * routes it, so the router, the bindings and the admin routes' guards all read one path; a
 * target without one is recorded here and refused by the app's pipeline.
 */
export function createGatewayListener(options: GatewayAppOptions): RequestListener {
  const app = createGatewayApp(options);
  // The bindings read and drain request bodies themselves (exchange.ts): no cleanup of Hono's own.
  const listener = getRequestListener(app.fetch, { autoCleanupIncoming: false, hostname: 'localhost' });
  return (request, response) => {
    const raw = request.url ?? '/';
    const canonical = canonicalTarget(raw, request.headers.host);
    if ('refused' in canonical) {
      refusedTargets.set(request, { reason: canonical.refused, raw });
      request.url = '/';
    } else request.url = targetOf(canonical);
    void listener(request, response);
  };
}
