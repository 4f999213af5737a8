// Per-address limit on requests that fail authentication, shared by every gateway through one
// token bucket per client address in Redis (the store's takeToken script). Only failures are
// counted: a caller with valid credentials never touches the bucket, so a noisy neighbour
// behind the same NAT cannot lock out its valid users. Once an address runs dry, this process
// remembers it until the bucket refills and answers that address's next failures with 429
// without asking Redis again.
import type { RedisClient } from '../redis/connection.ts';
import { A2AError } from '../protocol/errors.ts';
import { LimitExceededError } from './limit-refusal.ts';
import { TokenBuckets, type TokenTake } from '../store/limits/token-buckets.ts';

export interface UnauthenticatedLimit {
  /** Failed authentications per second and address; 0 turns the limit off. */
  unauthenticatedPerSecond: number;
  unauthenticatedBurst: number;
}

/** Addresses remembered as over their limit; the oldest is forgotten first past this many. */
const MAX_REMEMBERED_ADDRESSES = 10_000;

export class UnauthenticatedLimiter {
  private readonly buckets: TokenBuckets;
  /** Address → epoch ms until which its failures are answered 429 locally. */
  private readonly blockedUntil = new Map<string, number>();

  constructor(
    redis: RedisClient,
    prefix: string,
    private readonly limit: UnauthenticatedLimit,
    private readonly now: () => number = Date.now,
  ) {
    this.buckets = new TokenBuckets(redis, prefix);
  }

  get enabled(): boolean {
    return this.limit.unauthenticatedPerSecond > 0;
  }

  /**
   * The answer to a request from `address` that failed authentication with `refusal`: the
   * refusal itself, or 429 + Retry-After once the address is past its limit.
   */
  async refusalFor(address: string, refusal: A2AError): Promise<A2AError> {
    if (!this.enabled) return refusal;
    const now = this.now();
    const until = this.blockedUntil.get(address);
    if (until !== undefined) {
      if (until > now) return this.tooMany(until - now);
      this.blockedUntil.delete(address);
    }
    let take: TokenTake;
    try {
      take = await this.buckets.take({ unauthenticated: address }, { perSecond: this.limit.unauthenticatedPerSecond, burst: this.limit.unauthenticatedBurst });
    } catch {
      // The request is refused either way; an unreachable Redis must not turn a 401 into a 503.
      return refusal;
    }
    if (take.taken) return refusal;
    const waitMs = Math.max(1, take.waitMs);
    if (this.blockedUntil.size >= MAX_REMEMBERED_ADDRESSES) {
      const oldest = this.blockedUntil.keys().next().value;
      if (oldest !== undefined) this.blockedUntil.delete(oldest);
    }
    this.blockedUntil.set(address, now + waitMs);
    return this.tooMany(waitMs);
  }

  private tooMany(waitMs: number): LimitExceededError {
    const retryAfterSeconds = Math.max(1, Math.ceil(waitMs / 1000));
    const { unauthenticatedPerSecond, unauthenticatedBurst } = this.limit;
    return new LimitExceededError(
      'limits.unauthenticatedPerSecond',
      'RESOURCE_EXHAUSTED',
      `Too many requests without valid credentials from this address: the limit is ${unauthenticatedPerSecond} per second with bursts of ${unauthenticatedBurst} (limits.unauthenticatedPerSecond, limits.unauthenticatedBurst). Retry after ${retryAfterSeconds} s with valid credentials.`,
      { retryAfterSeconds, metadata: { reason: 'UNAUTHENTICATED_RATE_LIMITED' } },
    );
  }
}
