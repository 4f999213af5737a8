// GET /healthz and /readyz for a process that runs workers only (healthPort), so a platform can
// probe workers the way it probes gateways, which answer both on their own port. Ready means
// Redis answers a PING within a second and the process is not shutting down.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Redis } from 'ioredis';
import { checkReadiness } from '../gateway/readiness.ts';
import type { Logger } from '../logging/logger.ts';

export interface HealthServer {
  /** The port it listens on (the one asked for, or the one picked for port 0). */
  port: number;
  /** From now on /readyz answers 503: the process is draining. */
  markStopping(): void;
  close(): Promise<void>;
}

export async function startHealthServer(options: { host: string; port: number; redis: Redis; logger: Logger }): Promise<HealthServer> {
  let stopping = false;
  const server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    const answer = (status: number, body: Record<string, string>): void => {
      response.writeHead(status, { 'Content-Type': 'application/json', ...(status === 503 ? { 'Retry-After': '1' } : {}) });
      response.end(JSON.stringify(body));
    };
    if (request.method !== 'GET' && request.method !== 'HEAD') return answer(405, { status: 'method not allowed' });
    if (path === '/healthz') return answer(200, { status: 'ok' });
    if (path !== '/readyz') return answer(404, { status: 'not found: this port serves /healthz and /readyz only' });
    if (stopping) return answer(503, { status: 'unavailable', reason: 'shutting down' });
    void checkReadiness(options.redis, options.logger).then((readiness) =>
      readiness.ready ? answer(200, { status: 'ok' }) : answer(503, { status: 'unavailable', reason: readiness.reason }),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
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
