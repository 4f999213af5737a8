// The operator's routes on the gateway's port, for callers holding a2a:admin: /metrics
// (Prometheus text) and the queue dashboard (Bull Board) under /admin/queues. Credentials are
// judged like the bindings' (header count, then JWT or a signed request from the headers);
// a caller without the scope gets 403 naming it, one without credentials 401.
import type { Queue } from 'bullmq';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { HonoAdapter } from '@bull-board/hono';
import { serveStatic } from '@hono/node-server/serve-static';
import type { Hono } from 'hono';
import { anonymousPrincipal } from '../auth/principal.ts';
import { requireScope } from '../auth/scopes.ts';
import { toA2AError } from '../bindings/errors.ts';
import { ClientGoneError, type Exchange } from '../bindings/http/exchange.ts';
import { admitRequest, type RequestEdge } from '../bindings/http/pipeline.ts';
import { noteRequest } from '../bindings/http/request-notes.ts';
import { restErrorBody } from '../bindings/rest/index.ts';
import type { Logger } from '../logging/logger.ts';
import { metricsRegistry } from '../telemetry/metrics.ts';

export const METRICS_PATH = '/metrics';
export const QUEUE_DASHBOARD_PATH = '/admin/queues';

export const isAdminPath = (path: string): boolean => path === METRICS_PATH || path === QUEUE_DASHBOARD_PATH || path.startsWith(`${QUEUE_DASHBOARD_PATH}/`);

/** Answers with this process's metrics in the Prometheus text format. */
export async function sendMetrics(exchange: Pick<Exchange, 'response'>): Promise<void> {
  const text = await metricsRegistry.metrics();
  exchange.response.writeHead(200, { 'Content-Type': metricsRegistry.contentType, 'Cache-Control': 'no-store' });
  exchange.response.end(text);
}

/**
 * Admits an admin request and calls `serve`, or answers the refusal. Only headers are judged:
 * the dashboard's own POSTs keep their body for the dashboard to read.
 */
export async function serveAdmin(exchange: Exchange, edge: RequestEdge, logger: Logger, serve: () => Promise<void> | void): Promise<void> {
  try {
    const admitted = await admitRequest(exchange, edge, { content: 'json-if-body', readsBody: false, checkVersion: false });
    requireScope(admitted.principal ?? anonymousPrincipal(undefined), `${exchange.method} ${exchange.path}`, 'a2a:admin');
    noteRequest(exchange.response, { operation: exchange.path === METRICS_PATH ? 'metrics' : 'queue dashboard' });
    await serve();
  } catch (error) {
    if (error instanceof ClientGoneError) return;
    const a2a = toA2AError(error);
    if (a2a.kind === 'INTERNAL') logger.error('admin route failed', { path: exchange.path, error: String((error as Error).stack ?? error) });
    if (exchange.response.headersSent) {
      exchange.response.end();
      return;
    }
    exchange.sendJson(a2a.httpStatus ?? a2a.mapping.httpStatus, restErrorBody(a2a), a2a.httpHeaders());
  }
}

/** Mounts Bull Board on `app` under /admin/queues, showing `queues` (its retry and clean actions are safe: turns are fenced by their lease, and the reconciler re-queues an open task whose job was removed). */
export function mountQueueDashboard(app: Hono, queues: readonly Queue[]): void {
  const serverAdapter = new HonoAdapter(serveStatic);
  serverAdapter.setBasePath(QUEUE_DASHBOARD_PATH);
  createBullBoard({
    queues: queues.map((queue) => new BullMQAdapter(queue)),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'a2a-gateway queues' } },
  });
  app.route(QUEUE_DASHBOARD_PATH, serverAdapter.registerPlugin());
}
