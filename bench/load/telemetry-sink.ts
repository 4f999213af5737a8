// The local sink of the telemetry scenario: an OTLP/HTTP endpoint that accepts every export
// (counting requests and bytes, decoding nothing), and a scraper that reads a gateway's
// /metrics once a second (Prometheus scrapes every 15 s by default; once a second is the
// pessimistic case). Both run in the bench process on loopback.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface TelemetrySink {
  /** The OTLP endpoint to configure (A2A_OTLP_ENDPOINT). */
  url: string;
  exports: number;
  bytes: number;
  close(): Promise<void>;
}

export async function startTelemetrySink(): Promise<TelemetrySink> {
  const sink = { url: '', exports: 0, bytes: 0, close: async () => undefined as void };
  const server = createServer((request, response) => {
    request.on('data', (chunk: Buffer) => {
      sink.bytes += chunk.length;
    });
    request.on('end', () => {
      sink.exports += 1;
      response.writeHead(200, { 'Content-Type': 'application/x-protobuf' });
      response.end();
    });
  });
  const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
  sink.url = `http://127.0.0.1:${port}`;
  sink.close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return sink;
}

/** Scrapes `metricsUrl` every `intervalMs` until stopped; returns how many scrapes succeeded. */
export function scrapeEvery(metricsUrl: string, intervalMs = 1_000): { stop(): number } {
  let scrapes = 0;
  const timer = setInterval(() => {
    fetch(metricsUrl)
      .then(async (response) => {
        await response.text();
        if (response.ok) scrapes += 1;
      })
      .catch(() => undefined);
  }, intervalMs);
  return {
    stop: () => {
      clearInterval(timer);
      return scrapes;
    },
  };
}
