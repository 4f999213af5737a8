// `a2a-gateway healthcheck`: the container's health probe, with no curl in the image. It asks
// /readyz of the process in the same container and exits 0 (ready) or 1 (not ready, or nothing
// answering). One image runs both roles, so it needs no role argument: the gateway's port
// (A2A_PORT) is asked first and, when nothing listens there, a worker's health port
// (A2A_HEALTH_PORT); the first port that answers decides. bin/a2a-gateway.js runs it without
// loading the rest of the CLI (the gateway and worker modules), as it runs every few seconds.
import { ConfigError, loadConfig } from '../config/load.ts';
import type { GatewayConfig } from '../config/schema.ts';

/** How long one probe may take; a container engine's own timeout is usually a few seconds. */
const PROBE_TIMEOUT_MS = 3_000;

export type HealthVerdict = { ready: true; url: string } | { ready: false; reason: string };

/** The /readyz URLs to ask, in order: the gateway's port, then the health port when one is set. */
export function readinessUrls(config: Pick<GatewayConfig, 'host' | 'port' | 'healthPort'>): string[] {
  // A wildcard bind address is reachable on loopback; a specific one only on itself.
  const host = config.host === '0.0.0.0' || config.host === '::' || config.host === '' ? '127.0.0.1' : config.host;
  const authority = host.includes(':') ? `[${host}]` : host;
  const ports = [config.port, ...(config.healthPort === undefined ? [] : [config.healthPort])];
  return [...new Set(ports)].map((port) => `http://${authority}:${port}/readyz`);
}

function refusedConnection(error: unknown): boolean {
  const cause = (error as { cause?: { code?: string } }).cause;
  return cause?.code === 'ECONNREFUSED' || cause?.code === 'EADDRNOTAVAIL';
}

export async function checkHealth(urls: readonly string[]): Promise<HealthVerdict> {
  const refused: string[] = [];
  for (const url of urls) {
    let response: Response;
    try {
      response = await fetch(url, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
    } catch (error) {
      if (refusedConnection(error)) {
        refused.push(url);
        continue;
      }
      return { ready: false, reason: `${url} did not answer within ${PROBE_TIMEOUT_MS} ms (${(error as Error).message})` };
    }
    const body = await response.text().catch(() => '');
    if (response.status === 200) return { ready: true, url };
    return { ready: false, reason: `${url} answered ${response.status}: ${body.slice(0, 300)}` };
  }
  return { ready: false, reason: `nothing listens at ${refused.join(' or ')}; a worker needs A2A_HEALTH_PORT for a health check` };
}

/** The command: reads the ports from the configuration, prints the verdict, exits 0 or 1. */
export async function runHealthcheckCommand(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  let config;
  try {
    config = loadConfig(env).config;
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`a2a-gateway healthcheck: ${error.message}\n`);
    process.exit(1);
  }
  const verdict = await checkHealth(readinessUrls(config));
  if (!verdict.ready) {
    process.stderr.write(`a2a-gateway healthcheck: not ready: ${verdict.reason}\n`);
    process.exit(1);
  }
  process.stdout.write(`ready (${verdict.url})\n`);
}
