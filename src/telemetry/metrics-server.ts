// A probe port without credentials: /healthz and /readyz for platform probes and, as the metrics
// port (telemetry.metricsPort), /metrics for Prometheus scrapers. It is how a worker process,
// which has no HTTP port of its own, is scraped and probed (healthPort serves the probes alone);
// a gateway may use it to keep scrapers off its API port. Bind it to an address only the
// scrapers and probes reach. From the start of a shutdown /readyz answers 503.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Readiness } from '../gateway/readiness.ts';
import { metricsRegistry } from './metrics.ts';

export interface MetricsServerHandle {
  port: number;
  /** From now on /readyz answers 503: the process is draining. */
  markStopping(): void;
  close(): Promise<void>;
}

export interface ProbeServerOptions {
  host: string;
  port: number;
  readiness: () => Promise<Readiness>;
  /** Serve /metrics too (the metrics port); false: the probes only (healthPort). */
  metrics?: boolean;
  /** The setting that chose the port, named when it is taken. */
  portSetting?: string;
}

export async function startMetricsServer(options: ProbeServerOptions): Promise<MetricsServerHandle> {
  const servesMetrics = options.metrics !== false;
  let stopping = false;
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    const send = (status: number, type: string, body: string, headers: Record<string, string> = {}): void => {
      response.writeHead(status, { 'Content-Type': type, 'Cache-Control': 'no-store', ...headers });
      response.end(body);
    };
    if (request.method !== 'GET' && request.method !== 'HEAD') return send(405, 'application/json', '{"error":"only GET is served here"}', { Allow: 'GET, HEAD' });
    if (path === '/metrics' && servesMetrics) {
      metricsRegistry.metrics().then(
        (text) => send(200, metricsRegistry.contentType, text),
        (error: Error) => send(500, 'text/plain', `metrics could not be collected: ${error.message}`),
      );
      return;
    }
    if (path === '/healthz') return send(200, 'application/json', '{"status":"ok"}');
    if (path === '/readyz') {
      if (stopping) return send(503, 'application/json', '{"status":"unavailable","reason":"shutting down"}', { 'Retry-After': '1' });
      options.readiness().then(
        (readiness) => (readiness.ready ? send(200, 'application/json', '{"status":"ok"}') : send(503, 'application/json', JSON.stringify({ status: 'unavailable', reason: readiness.reason }), { 'Retry-After': '1' })),
        () => send(503, 'application/json', '{"status":"unavailable"}', { 'Retry-After': '1' }),
      );
      return;
    }
    send(404, 'application/json', servesMetrics ? '{"error":"this port serves /metrics, /healthz and /readyz"}' : '{"error":"this port serves /healthz and /readyz"}');
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(error.code === 'EADDRINUSE' ? new Error(`${options.host}:${options.port} is already in use; set ${options.portSetting ?? 'A2A_METRICS_PORT'} to a free port.`) : error),
    );
    server.listen(options.port, options.host, () => resolve((server.address() as AddressInfo).port));
  });
  return {
    port,
    markStopping: () => {
      stopping = true;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
