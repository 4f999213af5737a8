// Per-owner request rate limit: one token bucket per owner (a principal using one agent) in
// Redis, shared by every gateway instance (the store's takeToken script).
import type { ConsumerGate } from '../consumers/consumer-gate.ts';
import type { RedisClient } from '../redis/connection.ts';
import { LimitExceededError } from './limit-refusal.ts';
import { TokenBuckets, type OwedTake } from '../store/limits/token-buckets.ts';
import { TokenReserve } from '../store/limits/token-reserve.ts';
import { ownerKeyOf, type Owner } from '../store/task-store.ts';

export interface RateLimit {
  /** Tokens added per second; 0 turns the limit off. */
  requestsPerSecond: number;
  burst: number;
}

export class RateLimiter {
  private readonly buckets: TokenBuckets;
  /** The consumer plans admitted after the caller's own rate (set by the gateway when it has a control plane). */
  consumers: ConsumerGate | undefined;

  /**
   * @param requestBytesPerToken a request costs one token more per this many body bytes (0 =
   *   every request costs one), so a principal's byte rate is bounded as well as its request rate.
   */
  constructor(
    redis: RedisClient,
    prefix: string,
    private readonly requestBytesPerToken = 0,
  ) {
    // A request's tokens and body bytes: taken ahead in small batches (token-reserve.ts), so most requests cost no round trip for them.
    this.buckets = new TokenBuckets(redis, prefix, new TokenReserve());
  }

  /** Tokens a request with a body of `requestBytes` costs: 1, and 1 more per requestBytesPerToken, at most the burst. */
  costOf(requestBytes: number, limit: RateLimit): number {
    if (this.requestBytesPerToken <= 0) return 1;
    return Math.min(limit.burst, 1 + Math.floor(requestBytes / this.requestBytesPerToken));
  }

  /**
   * Charges an answer's bytes after the fact (one token per requestBytesPerToken): never refuses
   * this answer, but the owner's next requests wait while the bucket refills.
   */
  async chargeAnswer(owner: Owner, limit: RateLimit, answerBytes: number): Promise<void> {
    if (limit.requestsPerSecond <= 0 || this.requestBytesPerToken <= 0) return;
    const cost = Math.min(limit.burst, Math.floor(answerBytes / this.requestBytesPerToken));
    if (cost <= 0) return;
    await this.buckets.take({ rate: ownerKeyOf(owner) }, { perSecond: limit.requestsPerSecond, burst: limit.burst, cost, mode: 'afterTheFact' });
  }

  /**
   * The most answer bytes chargeAnswer takes after the read (0 = no bound, the rate is off): a
   * larger answer would cost more than the owner's whole bucket, so it is paid first (payAnswer).
   */
  answerPayAfterBytes(limit: RateLimit): number {
    if (limit.requestsPerSecond <= 0 || this.requestBytesPerToken <= 0) return 0;
    return limit.burst * this.requestBytesPerToken;
  }

  /**
   * Pays for an answer before it is built, in full (one token per requestBytesPerToken, not
   * capped at the burst): taken when the owner's bucket holds the cost, or is full (but for the
   * request's own token) when the cost is more than it can hold, which leaves the bucket that
   * much below zero; else throws
   * RESOURCE_EXHAUSTED with a retry hint, and the answer is not built.
   */
  async payAnswer(owner: Owner, limit: RateLimit, answerBytes: number): Promise<void> {
    if (limit.requestsPerSecond <= 0 || this.requestBytesPerToken <= 0) return;
    const cost = Math.ceil(answerBytes / this.requestBytesPerToken);
    if (cost <= 0) return;
    const take = await this.buckets.take({ rate: ownerKeyOf(owner) }, { perSecond: limit.requestsPerSecond, burst: limit.burst, cost, mode: 'payFirst' });
    if (take.taken) return;
    const retryAfterSeconds = Math.max(1, Math.ceil(take.waitMs / 1000));
    throw new LimitExceededError(
      'limits.requestsPerSecond',
      'RESOURCE_EXHAUSTED',
      `This answer is too large for the rate of agent "${owner.agent}" now: about ${answerBytes} bytes cost ${cost} tokens (limits.requestBytesPerToken), and the limit is ${limit.requestsPerSecond} per second with bursts of ${limit.burst} (limits.requestsPerSecond, limits.burst, or the agent's limits); it was not read. Retry after ${retryAfterSeconds} s.`,
      { retryAfterSeconds, metadata: { reason: 'RATE_LIMITED' } },
    );
  }

  /**
   * Takes a request's tokens from the owner's bucket, or throws RESOURCE_EXHAUSTED with a retry
   * hint. `beside` is another take the request owes now (its body's bytes): both are taken in one
   * script call, or neither.
   */
  async take(owner: Owner, limit: RateLimit, requestBytes = 0, beside?: OwedTake): Promise<void> {
    const own = this.requestTake(owner, limit, requestBytes);
    await this.buckets.takeAll([own, beside].filter((take): take is OwedTake => take !== undefined));
  }

  /** A request's tokens as a take it owes (undefined when the rate is off). */
  private requestTake(owner: Owner, limit: RateLimit, requestBytes: number): OwedTake | undefined {
    if (limit.requestsPerSecond <= 0) return undefined;
    const cost = this.costOf(requestBytes, limit);
    return {
      bucket: { rate: ownerKeyOf(owner) },
      perSecond: limit.requestsPerSecond,
      burst: limit.burst,
      cost,
      refusal: (waitMs) => {
        const retryAfterSeconds = Math.max(1, Math.ceil(waitMs / 1000));
        return new LimitExceededError(
          'limits.requestsPerSecond',
          'RESOURCE_EXHAUSTED',
          `Too many requests to agent "${owner.agent}": the limit is ${limit.requestsPerSecond} per second with bursts of ${limit.burst} (limits.requestsPerSecond, limits.burst, or the agent's limits)${cost > 1 ? `, and this request's ${requestBytes}-byte body costs ${cost} (limits.requestBytesPerToken)` : ''}. Retry after ${retryAfterSeconds} s.`,
          { retryAfterSeconds, metadata: { reason: 'RATE_LIMITED' } },
        );
      },
    };
  }
}
