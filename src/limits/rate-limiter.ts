// Per-principal request rate limit: one token bucket per owner in Redis, shared by every
// gateway instance (src/store/lua/takeToken-1.lua).
import type { Redis } from 'ioredis';
import type { Principal } from '../auth/principal.ts';
import { A2AError } from '../protocol/errors.ts';
import type { RedisKeys } from '../store/keys.ts';
import { defineScripts, type ScriptRunner } from '../store/scripts.ts';
import { ownerKeyOf } from '../store/task-store.ts';

export interface RateLimit {
  /** Tokens added per second; 0 turns the limit off. */
  requestsPerSecond: number;
  burst: number;
}

export class RateLimiter {
  private readonly run: ScriptRunner;

  constructor(
    redis: Redis,
    private readonly keys: RedisKeys,
    private readonly limit: RateLimit,
  ) {
    this.run = defineScripts(redis);
  }

  get enabled(): boolean {
    return this.limit.requestsPerSecond > 0;
  }

  /** Takes one token for the principal, or throws RESOURCE_EXHAUSTED with a retry hint. */
  async take(principal: Principal): Promise<void> {
    if (!this.enabled) return;
    const key = this.keys.rateBucket(ownerKeyOf({ tenant: principal.tenant, subject: principal.subject }));
    const [taken, waitMs] = await this.run('takeToken', [key], [this.limit.requestsPerSecond, this.limit.burst]);
    if (Number(taken) === 1) return;
    const retryAfterSeconds = Math.max(1, Math.ceil(Number(waitMs) / 1000));
    throw new A2AError(
      'RESOURCE_EXHAUSTED',
      `Too many requests: the limit is ${this.limit.requestsPerSecond} per second with bursts of ${this.limit.burst} (limits.requestsPerSecond, limits.burst). Retry after ${retryAfterSeconds} s.`,
      { retryAfterSeconds, metadata: { reason: 'RATE_LIMITED' } },
    );
  }
}
