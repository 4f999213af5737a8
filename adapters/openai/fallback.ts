// Which failures of a model endpoint count against its health and, before the first token, move
// the call to the next endpoint; and how each move is told (one log line, one counter).
//
// The counters go to the process's Prometheus registry: the openai adapter is built in and runs
// in the worker process, which serves that registry on /metrics like the rest of the worker's.
import { APIConnectionError, APIConnectionTimeoutError, APIError } from 'openai';
import { Counter } from 'prom-client';
import type { Logger } from '../types.ts';
import { metricsRegistry } from '../../src/telemetry/metrics.ts';
import { StreamCutError, backendLimitOf } from './retry-policy.ts';

/** Why an endpoint was given up on: a bounded label set. */
export type EndpointFault = 'connection' | 'timeout' | '429' | '5xx' | 'stream-cut';

export const modelFallbacks = new Counter({
  name: 'a2a_model_fallbacks_total',
  help: 'Model calls of the openai adapter moved to another endpoint before the first token, by endpoint left, endpoint taken and reason (connection, timeout, 429, 5xx, stream-cut).',
  labelNames: ['from', 'to', 'reason'] as const,
  registers: [metricsRegistry],
});

export const modelEndpointCoolDowns = new Counter({
  name: 'a2a_model_endpoint_cooldowns_total',
  help: 'Times an endpoint of the openai adapter was taken out for a cool-down (endpointFailures failures in a row, or a failed probe), by endpoint.',
  labelNames: ['endpoint'] as const,
  registers: [metricsRegistry],
});

/**
 * The fault `error` shows in the endpoint, or undefined when it says nothing about the endpoint's
 * health (a refusal such as 400/401/404 would be the same anywhere; a reply past backendLimits
 * is the server's content, not its health).
 */
export function endpointFault(error: unknown): EndpointFault | undefined {
  if (backendLimitOf(error) !== undefined) return undefined;
  if (error instanceof StreamCutError) return 'stream-cut';
  if (error instanceof APIConnectionTimeoutError) return 'timeout';
  if (error instanceof APIConnectionError) return 'connection';
  if (error instanceof APIError) {
    if (error.status === undefined) return 'stream-cut';
    if (error.status === 429) return '429';
    if (error.status === 408) return 'timeout';
    if (error.status >= 500) return '5xx';
  }
  return undefined;
}

/** One line and one count for a call moved from `from` to `to`. */
export function noteFallback(logger: Logger, from: string, to: string, reason: EndpointFault, detail: string): void {
  modelFallbacks.inc({ from, to, reason });
  logger.warn('model endpoint failed before the first token; falling back', { from, to, reason, cause: detail });
}

/** One line and one count for an endpoint taken out for `coolDownMs`. */
export function noteCoolDown(logger: Logger, endpoint: string, coolDownMs: number, reason: EndpointFault): void {
  modelEndpointCoolDowns.inc({ endpoint });
  logger.warn('model endpoint cooled down', { endpoint, coolDownMs, reason });
}
