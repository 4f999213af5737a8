// When a failed model call is tried again, and how long to wait first.
//
// The client's own retries are turned off (maxRetries: 0) and replaced by this policy, which
// keeps the client's rules (408, 409, 429 and 5xx, connection errors and timeouts; the
// server's x-should-retry; Retry-After and retry-after-ms) but adds what a turn needs: the
// wait ends when the turn's signal fires (CancelTask, the turn deadline, shutdown), where the
// client's wait cannot be interrupted; a server asking for a longer wait than
// maxRetryDelayMs fails the turn instead of holding it; and a stream cut mid-reply, which the
// client never retries, counts against the same limit.
import { APIConnectionError, APIError } from 'openai';
import type { ApiKeySource } from './api-key.ts';
import { isBackendLimitError, type BackendLimitError } from '../bounded-response.ts';

/** The reply stream ended or stalled before the model finished (no finish_reason). */
export class StreamCutError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'StreamCutError';
  }
}

export interface RetryLimits {
  maxRetries: number;
  maxRetryDelayMs: number;
  retryBaseDelayMs: number;
}

export type RetryDecision =
  /** Wait `delayMs`, then call again; `reason` says what went wrong, for the status update. */
  | { retry: true; delayMs: number; reason: string; status?: number }
  /** Give up: the turn fails with `message` (no secrets in it). */
  | { retry: false; message: string; status?: number };

/** The delay a response asks for (retry-after-ms, else Retry-After in seconds or as a date). */
export function requestedDelayMs(headers: Headers | undefined, now = Date.now()): number | undefined {
  const ms = headers?.get('retry-after-ms');
  if (ms !== null && ms !== undefined && ms.trim() !== '') {
    const value = Number(ms);
    if (Number.isFinite(value) && value >= 0) return value;
  }
  const after = headers?.get('retry-after');
  if (after === null || after === undefined || after.trim() === '') return undefined;
  const seconds = Number(after);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(after);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Exponential backoff with up to 25 % jitter: base, 2 × base, 4 × base … at most `max`. */
export function backoffMs(retry: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const full = Math.min(maxMs, baseMs * 2 ** Math.max(0, retry - 1));
  return Math.round(full * (1 - random() * 0.25));
}

/**
 * The BackendLimitError behind `error`, if one is: thrown as it is from the stream's reader, or
 * wrapped by the client (an APIConnectionError whose cause it is).
 */
export function backendLimitOf(error: unknown): BackendLimitError | undefined {
  for (let current = error, depth = 0; current !== undefined && current !== null && depth < 5; depth += 1) {
    if (isBackendLimitError(current)) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

function retryableStatus(error: APIError): boolean {
  const header = error.headers?.get('x-should-retry');
  if (header === 'true') return true;
  if (header === 'false') return false;
  const status = error.status as number;
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/** What went wrong, in words for the status update, the failure message and a fallback's log line. */
export function describeFailure(error: unknown, keys: ApiKeySource): string {
  if (error instanceof StreamCutError) return error.message;
  if (error instanceof APIConnectionError) {
    const cause = (error as { cause?: unknown }).cause;
    const detail = cause instanceof Error && cause.message !== error.message ? ` (${cause.message})` : '';
    return keys.redact(`${error.message}${detail}`);
  }
  if (error instanceof APIError) {
    if (error.status === undefined) return keys.redact(`the stream reported an error: ${error.message}`);
    return keys.redact(`HTTP ${error.message}`);
  }
  return keys.redact(`the reply stream broke: ${error instanceof Error ? error.message : String(error)}`);
}

/**
 * Decides about the `retry`-th retry (1 for the first) after `error`. The wait itself is cut
 * short by the turn's signal, which also fires at the turn's deadline.
 */
export function decideRetry(error: unknown, retry: number, limits: RetryLimits, keys: ApiKeySource): RetryDecision {
  // A bound the server's reply went past (backendLimits): asked again, it would send as much again.
  const bound = backendLimitOf(error);
  if (bound !== undefined) return { retry: false, message: `The model server's reply was cut, not retried: ${keys.redact(bound.message)}` };
  const reason = describeFailure(error, keys);
  const status = error instanceof APIError && !(error instanceof APIConnectionError) ? error.status : undefined;
  if (status !== undefined && !(error instanceof APIError && retryableStatus(error))) {
    return { retry: false, status, message: refusal(status, reason, keys) };
  }
  if (retry > limits.maxRetries) {
    return { retry: false, ...(status === undefined ? {} : { status }), message: `The model server still failed after ${limits.maxRetries} retries (option maxRetries): ${reason}.` };
  }
  const asked = error instanceof APIError ? requestedDelayMs(error.headers) : undefined;
  if (asked !== undefined && asked > limits.maxRetryDelayMs) {
    return {
      retry: false,
      ...(status === undefined ? {} : { status }),
      message: `The model server (${reason}) asked to be retried after ${formatMs(asked)}, longer than maxRetryDelayMs (${limits.maxRetryDelayMs} ms); the turn fails rather than wait. Send the message again later, or raise maxRetryDelayMs.`,
    };
  }
  const delayMs = asked ?? backoffMs(retry, limits.retryBaseDelayMs, limits.maxRetryDelayMs);
  return { retry: true, delayMs, reason, ...(status === undefined ? {} : { status }) };
}

function refusal(status: number, reason: string, keys: ApiKeySource): string {
  const base = `The model server refused the request (${reason}).`;
  if (status === 401 || status === 403) return `${base} ${keys.hint}`;
  if (status === 404) return `${base} Check the adapter options baseURL and model.`;
  return base;
}

export function formatMs(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(ms % 1000 === 0 ? 0 : 1)} s` : `${Math.round(ms)} ms`;
}

/** Waits `ms`, rejecting with the signal's reason as soon as it fires. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
