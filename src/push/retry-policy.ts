// When a failed delivery is tried again: exponential backoff with equal jitter (half the delay
// fixed, half random, so retries of many deliveries to one receiver spread out), or exactly what
// the receiver asked for (Retry-After), and never past the retry horizon.
export interface RetrySettings {
  initialDelayMs: number;
  maxDelayMs: number;
  horizonMs: number;
}

/** The delay before try `attemptsMade + 1` (attemptsMade ≥ 1). */
export function backoffDelayMs(attemptsMade: number, settings: RetrySettings, random: () => number = Math.random): number {
  const ceiling = Math.min(settings.maxDelayMs, settings.initialDelayMs * 2 ** Math.min(30, Math.max(0, attemptsMade - 1)));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/** A retryable failure carrying the delay the policy chose (read by the queue's backoff strategy). */
export class RetryDeliveryError extends Error {
  constructor(
    message: string,
    readonly delayMs: number,
  ) {
    super(message);
    this.name = 'RetryDeliveryError';
  }
}
