// The operator's routes on the gateway's port: /metrics (Prometheus text) and the queue
// dashboard (Bull Board) under /admin/queues. Their guard is a middleware on the Hono routes
// themselves, so whatever request Hono routes to one of them passes through it first; the
// listener hands Hono the request's canonical path (request-path.ts), which is also the one
// every other decision is taken on. Credentials are judged like the bindings' (header count,
// then JWT or a signed request from the headers); a caller without them gets 401, one without
// the scopes the surface needs 403 naming them (admin-access.ts says which), both answered by
// the gateway's error handler.
import type { DashboardQueues } from './dashboard-queues.ts';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { HonoAdapter } from '@bull-board/hono';
import { serveStatic } from '@hono/node-server/serve-static';
import { Hono, type MiddlewareHandler } from 'hono';
import { anonymousPrincipal } from '../auth/principal.ts';
import type { RequestEdge } from '../bindings/http/pipeline.ts';
import { noteRequest } from '../bindings/http/request-notes.ts';
import { checkDeclaredLength } from '../bindings/http/request-body.ts';
import { LimitExceededError } from '../limits/limit-refusal.ts';
import { metricsRegistry } from '../telemetry/metrics.ts';
import { authorizeAdminSurface, type AdminSurface } from './admin-access.ts';
import { admit, ADMISSION_STEPS } from './admission.ts';
import type { GatewayEnv } from './gateway-env.ts';
import { runSteps, type Step } from './steps.ts';

export const METRICS_PATH = '/metrics';
export const QUEUE_DASHBOARD_PATH = '/admin/queues';

export interface AdminRouteOptions {
  /** The queues the dashboard shows (they follow the agents added and removed through the admin API). */
  queues: DashboardQueues;
  /** Header count, credentials and the default body limit, as the bindings judge them. */
  edge: RequestEdge;
}

/**
 * The admission steps the bindings take (credentials from the headers, no body read), then the
 * surface's scopes; a refusal goes to the gateway's error handler (error-response.ts). A body
 * the dashboard will read must declare its length, within the default body limit: the
 * dashboard reads it whole.
 */
function guard(surface: AdminSurface, options: AdminRouteOptions): MiddlewareHandler<GatewayEnv> {
  const start: Step = (c) => {
    noteRequest(c.get('exchange').response, { operation: surface });
    admit(c, { edge: options.edge, content: 'json-if-body', readsBody: false, checkVersion: false });
    return undefined;
  };
  const scopes: Step = (c) => {
    const exchange = c.get('exchange');
    authorizeAdminSurface(c.get('admitted').principal ?? anonymousPrincipal(undefined), surface, exchange.method, `${exchange.method} ${exchange.path}`);
    if (exchange.hasBody) {
      if (exchange.header('content-length') === undefined) {
        throw new LimitExceededError('maxBodyBytes', 'INVALID_REQUEST', `${surface} requests with a body must declare its length (Content-Length), at most ${options.edge.maxBodyBytes} bytes (maxBodyBytes).`, {
          httpStatus: 411,
          metadata: { reason: 'LENGTH_REQUIRED', maxBytes: String(options.edge.maxBodyBytes) },
        });
      }
      checkDeclaredLength(exchange.request, options.edge.maxBodyBytes);
    }
    return undefined;
  };
  return runSteps(start, ...ADMISSION_STEPS, scopes);
}

/** Bull Board's routes below QUEUE_DASHBOARD_PATH, showing `queues` (its retry and clean actions are safe: turns are fenced by their lease, and the reconciler re-queues an open task whose job was removed). */
function queueDashboard(queues: DashboardQueues): Hono {
  const serverAdapter = new HonoAdapter(serveStatic);
  serverAdapter.setBasePath(QUEUE_DASHBOARD_PATH);
  const board = createBullBoard({
    queues: queues.list().map((queue) => new BullMQAdapter(queue)),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'a2a-gateway queues' } },
  });
  queues.onChange((list) => board.replaceQueues(list.map((queue) => new BullMQAdapter(queue))));
  return serverAdapter.registerPlugin();
}

/** Mounts /metrics and the queue dashboard on `app`, each behind its guard. */
export function registerAdminRoutes(app: Hono<GatewayEnv>, options: AdminRouteOptions): void {
  const admin = new Hono<GatewayEnv>();
  admin.get(METRICS_PATH, guard('metrics', options), async () => {
    const text = await metricsRegistry.metrics();
    return new Response(text, { status: 200, headers: { 'Content-Type': metricsRegistry.contentType, 'Cache-Control': 'no-store' } });
  });
  // The guard is the dashboard's first middleware: every route of it, at any depth, runs it first.
  const dashboard = new Hono<GatewayEnv>();
  dashboard.use('*', guard('queue dashboard', options));
  dashboard.route('/', queueDashboard(options.queues));
  admin.route(QUEUE_DASHBOARD_PATH, dashboard);
  app.route('/', admin);
}
