// Retrying calls to the downstream agent (p-retry: exponential backoff with jitter, stopped by the
// turn's abort signal) and the delays between polls. There is no retry limit: a downstream that
// stays unreachable is retried until the turn's deadline fires its signal.
import pRetry from 'p-retry';

export { setTimeout as sleep } from 'node:timers/promises';
import { isRetryable } from './errors.ts';

export interface RetryPolicy {
  initialDelayMs: number;
  maxDelayMs: number;
}

export interface RetryOptions extends RetryPolicy {
  signal: AbortSignal;
  /**
   * Told about every failure that will be retried (attempt 1 is the first failure), with the
   * longest the wait before the next try can be (the wait itself is jittered below it).
   */
  onRetry?: (error: Error, attempt: number, retryWithinMs: number) => void;
}

/** The longest wait p-retry takes after failure `attempt` (factor 2, randomize: up to twice the base). */
export function retryWithinMs(policy: RetryPolicy, attempt: number): number {
  return Math.min(policy.maxDelayMs, 2 * policy.initialDelayMs * 2 ** Math.max(0, attempt - 1));
}

/** Runs `call` until it succeeds, fails with an error that retrying cannot fix, or the signal fires. */
export function withRetry<T>(call: () => Promise<T>, options: RetryOptions): Promise<T> {
  return pRetry(call, {
    retries: Number.POSITIVE_INFINITY,
    factor: 2,
    minTimeout: options.initialDelayMs,
    maxTimeout: options.maxDelayMs,
    randomize: true,
    signal: options.signal,
    shouldRetry: ({ error }) => !options.signal.aborted && isRetryable(error),
    onFailedAttempt: ({ error, attemptNumber }) => {
      if (!options.signal.aborted && isRetryable(error)) options.onRetry?.(error, attemptNumber, retryWithinMs(options, attemptNumber));
    },
  });
}

/** Poll delays: start at the initial delay, double while nothing changes, back to the start on a change. */
export class PollBackoff {
  private delayMs: number;

  constructor(private readonly policy: RetryPolicy) {
    this.delayMs = policy.initialDelayMs;
  }

  next(changed: boolean): number {
    this.delayMs = changed ? this.policy.initialDelayMs : Math.min(this.policy.maxDelayMs, this.delayMs * 2);
    return this.delayMs;
  }
}
