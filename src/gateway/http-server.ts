// The gateway's HTTP server: Node's own timeouts and connection guard around a request
// listener that is set once the cards are built (until then it answers 503 + Retry-After).
// Draining stops it accepting, tells every SSE client to reconnect elsewhere shortly and lets
// idle keep-alive connections go; stopping cuts what is still in flight after a moment.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Lifecycle } from '../app/lifecycle.ts';
import type { ProxyTrust } from '../bindings/http/proxy-trust.ts';
import type { SseStreams } from '../bindings/sse/sse-writer.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { Logger } from '../logging/logger.ts';
import type { RequestListener } from './app.ts';
import { defaultMaxConnections, guardConnections } from './connection-guard.ts';

export interface HttpListener {
  port: number;
  /** Starts answering requests with this listener. */
  serve(listener: RequestListener): void;
}

/** How long requests in flight may take to finish once the server stopped accepting, before they are cut. */
const IN_FLIGHT_GRACE_MS = 2_000;
/** How long SSE clients are told to wait before they reconnect (to another gateway). */
const SSE_RETRY_MS = 1_000;

export async function listenHttp(lifecycle: Lifecycle, config: GatewayConfig, options: { proxyTrust: ProxyTrust; streams: SseStreams; logger: Logger }): Promise<HttpListener> {
  let listener: RequestListener | undefined;
  const server = createServer(
    {
      // Only the request (headers, then body) is timed; once it has arrived, a response may
      // last as long as it needs (SSE streams, blocking SendMessage). Node answers 408 and
      // closes the connection. Node requires headersTimeout <= requestTimeout.
      requestTimeout: config.requestTimeoutMs,
      headersTimeout: Math.min(config.headersTimeoutMs, config.requestTimeoutMs),
      keepAliveTimeout: config.keepAliveTimeoutMs,
      // How often Node looks for requests past those timeouts (its default, 30 s, would let a
      // stalled body live up to 30 s longer than requestTimeoutMs).
      connectionsCheckingInterval: Math.min(1_000, config.headersTimeoutMs),
    },
    (request, response) => {
      if (listener !== undefined) {
        listener(request, response);
        return;
      }
      // Only between listen() and the cards being built: tell the client to come back.
      response.writeHead(503, { 'Retry-After': '1', 'Content-Type': 'application/json' });
      response.end('{"error":{"code":503,"status":"UNAVAILABLE","message":"starting up; retry shortly","details":[]}}');
    },
  );
  // Expect: 100-continue goes to the same listener, which sends the 100 only once the headers
  // passed its checks (a refused request's body is then never sent).
  server.on('checkContinue', (request, response) => server.emit('request', request, response));
  // Node itself sets no count: past maxHeadersCount Node 20 drops fields silently and Node 24+
  // answers a bare 431 (no body, no binding's error shape). Every field is kept (their bytes are
  // bounded by Node's maxHeaderSize) and the gateway refuses too many with its own 431 in the
  // binding's shape (bindings/http/header-count.ts).
  server.maxHeadersCount = 0;
  guardConnections(server, {
    maxConnections: config.maxConnections ?? defaultMaxConnections(),
    maxConnectionsPerAddress: config.maxConnectionsPerAddress,
    isTrustedProxy: (address) => options.proxyTrust.trustsAddress(address),
    logger: options.logger,
  });
  let port = 0;
  let closing: { closed: Promise<void>; graceOver: Promise<void> } | undefined;
  const stopAccepting = (): NonNullable<typeof closing> => {
    if (closing !== undefined) return closing;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    options.streams.endAll(SSE_RETRY_MS);
    server.closeIdleConnections();
    closing = { closed, graceOver: new Promise<void>((resolve) => setTimeout(resolve, IN_FLIGHT_GRACE_MS).unref()) };
    return closing;
  };
  await lifecycle.start({
    name: 'HTTP server',
    start: async () => {
      try {
        port = await new Promise<number>((resolve, reject) => {
          server.once('error', reject);
          server.listen(config.port, config.host, () => resolve((server.address() as AddressInfo).port));
        });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
          throw new Error(`${config.host}:${config.port} is already in use; stop what listens there or set A2A_PORT to a free port.`);
        }
        throw error;
      }
    },
    drain: () => {
      stopAccepting();
    },
    async stop() {
      const { closed, graceOver } = stopAccepting();
      await Promise.race([closed, graceOver]);
      server.closeAllConnections();
      await closed;
    },
  });
  return {
    port,
    serve(next) {
      listener = next;
    },
  };
}
