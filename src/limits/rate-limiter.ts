// Per-owner request rate limit: one token bucket per owner (a principal using one agent) in
// Redis, shared by every gateway instance (src/store/lua/takeToken-1.lua).
import type { Redis } from 'ioredis';
import { LimitExceededError } from './limit-refusal.ts';
import type { RedisKeys } from '../store/keys.ts';
import { defineScripts, type ScriptRunner } from '../store/scripts.ts';
import { ownerKeyOf, type Owner } from '../store/task-store.ts';

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
  ) {
    this.run = defineScripts(redis);
  }

  /** Takes one token from the owner's bucket, or throws RESOURCE_EXHAUSTED with a retry hint. */
  async take(owner: Owner, limit: RateLimit): Promise<void> {
    if (limit.requestsPerSecond <= 0) return;
    const key = this.keys.rateBucket(ownerKeyOf(owner));
    const [taken, waitMs] = await this.run('takeToken', [key], [limit.requestsPerSecond, limit.burst]);
    if (Number(taken) === 1) return;
    const retryAfterSeconds = Math.max(1, Math.ceil(Number(waitMs) / 1000));
    throw new LimitExceededError(
      'limits.requestsPerSecond',
      'RESOURCE_EXHAUSTED',
      `Too many requests to agent "${owner.agent}": the limit is ${limit.requestsPerSecond} per second with bursts of ${limit.burst} (limits.requestsPerSecond, limits.burst, or the agent's limits). Retry after ${retryAfterSeconds} s.`,
      { retryAfterSeconds, metadata: { reason: 'RATE_LIMITED' } },
    );
  }
}
