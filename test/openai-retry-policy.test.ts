// When a failed model call is retried and how long the adapter waits (adapters/openai/retry-policy.ts),
// judged on the errors the official client really throws.
import { APIConnectionError, APIConnectionTimeoutError, APIError } from 'openai';
import { describe, expect, it } from 'vitest';
import { resolveApiKey } from '../adapters/openai/api-key.ts';
import { backoffMs, decideRetry, requestedDelayMs, sleep, StreamCutError } from '../adapters/openai/retry-policy.ts';

const LIMITS = { maxRetries: 3, maxRetryDelayMs: 10_000, retryBaseDelayMs: 500 };
const keys = resolveApiKey({ apiKeyEnv: 'K' }, { K: 'sk-very-secret' });

function statusError(status: number, headers: Record<string, string> = {}, message = 'boom'): APIError {
  return APIError.generate(status, { error: { message } }, undefined, new Headers(headers));
}

describe('requestedDelayMs', () => {
  it('retry-after-ms wins, then Retry-After in seconds or as a date', () => {
    expect(requestedDelayMs(new Headers({ 'retry-after-ms': '250', 'retry-after': '9' }))).toBe(250);
    expect(requestedDelayMs(new Headers({ 'retry-after': '2' }))).toBe(2000);
    expect(requestedDelayMs(new Headers({ 'retry-after': '0.5' }))).toBe(500);
    const now = Date.parse('2030-01-01T00:00:00Z');
    expect(requestedDelayMs(new Headers({ 'retry-after': 'Tue, 01 Jan 2030 00:00:07 GMT' }), now)).toBe(7000);
    expect(requestedDelayMs(new Headers({ 'retry-after': 'soon' }))).toBeUndefined();
    expect(requestedDelayMs(new Headers())).toBeUndefined();
  });
});

describe('decideRetry', () => {
  it('retries 408, 409, 429 and 5xx, honouring what the server asked for', () => {
    for (const status of [408, 409, 429, 500, 502, 503]) expect(decideRetry(statusError(status), 1, LIMITS, keys).retry, String(status)).toBe(true);
    expect(decideRetry(statusError(429, { 'retry-after': '3' }), 1, LIMITS, keys)).toMatchObject({ retry: true, delayMs: 3000, status: 429 });
  });

  it('without a Retry-After, backs off exponentially with jitter, capped at maxRetryDelayMs', () => {
    expect(backoffMs(1, 500, 10_000, () => 0)).toBe(500);
    expect(backoffMs(2, 500, 10_000, () => 0)).toBe(1000);
    expect(backoffMs(3, 500, 10_000, () => 0)).toBe(2000);
    expect(backoffMs(3, 500, 10_000, () => 1)).toBe(1500);
    expect(backoffMs(10, 500, 10_000, () => 0)).toBe(10_000);
  });

  it('the server’s x-should-retry overrides the status', () => {
    expect(decideRetry(statusError(400, { 'x-should-retry': 'true' }), 1, LIMITS, keys).retry).toBe(true);
    expect(decideRetry(statusError(503, { 'x-should-retry': 'false' }), 1, LIMITS, keys).retry).toBe(false);
  });

  it('other 4xx fail at once with the server’s message; 401/403 point at the key’s source, 404 at baseURL and model', () => {
    expect(decideRetry(statusError(400, {}, 'bad temperature'), 1, LIMITS, keys)).toEqual({
      retry: false,
      status: 400,
      message: 'The model server refused the request (HTTP 400 bad temperature).',
    });
    const unauthorized = decideRetry(statusError(401, {}, 'Incorrect API key provided: sk-very-secret'), 1, LIMITS, keys);
    expect(unauthorized.retry).toBe(false);
    if (!unauthorized.retry) {
      expect(unauthorized.message).toContain('Check the API key in the environment variable K.');
      expect(unauthorized.message).not.toContain('sk-very-secret');
    }
    const missing = decideRetry(statusError(404), 1, LIMITS, keys);
    expect(!missing.retry && missing.message).toContain('baseURL and model');
  });

  it('network errors, timeouts, stream cuts and error events in a stream are retried', () => {
    expect(decideRetry(new APIConnectionError({ message: 'Connection error.', cause: new Error('ECONNREFUSED') }), 1, LIMITS, keys)).toMatchObject({ retry: true, reason: 'Connection error. (ECONNREFUSED)' });
    expect(decideRetry(new APIConnectionTimeoutError(), 1, LIMITS, keys).retry).toBe(true);
    expect(decideRetry(new StreamCutError('the reply stream ended before the model finished'), 1, LIMITS, keys)).toMatchObject({ retry: true, reason: 'the reply stream ended before the model finished' });
    expect(decideRetry(new APIError(undefined, { message: 'overloaded' }, undefined, undefined), 1, LIMITS, keys)).toMatchObject({ retry: true, reason: 'the stream reported an error: overloaded' });
    expect(decideRetry(new TypeError('terminated'), 1, LIMITS, keys)).toMatchObject({ retry: true, reason: 'the reply stream broke: terminated' });
  });

  it('gives up after maxRetries, naming the option and the last failure', () => {
    expect(decideRetry(statusError(500), 3, LIMITS, keys).retry).toBe(true);
    expect(decideRetry(statusError(500), 4, LIMITS, keys)).toEqual({
      retry: false,
      status: 500,
      message: 'The model server still failed after 3 retries (option maxRetries): HTTP 500 boom.',
    });
  });

  it('a server asking for a longer wait than maxRetryDelayMs fails the turn instead of holding it', () => {
    const decision = decideRetry(statusError(429, { 'retry-after': '60' }), 1, LIMITS, keys);
    expect(decision.retry).toBe(false);
    expect(!decision.retry && decision.message).toContain('asked to be retried after 60 s, longer than maxRetryDelayMs (10000 ms)');
  });
});

describe('sleep', () => {
  it('ends early, rejecting with the signal’s reason, when the turn is canceled', async () => {
    const controller = new AbortController();
    const reason = new DOMException('Task canceled', 'AbortError');
    const waiting = sleep(60_000, controller.signal);
    setTimeout(() => controller.abort(reason), 20);
    // A wait that ignored the signal would resolve after a minute instead of rejecting.
    await expect(waiting).rejects.toBe(reason);
  });
});
