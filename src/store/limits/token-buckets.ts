// The token buckets of the limits (src/limits), shared by every gateway and worker through Redis:
// one take is one takeToken script on one bucket. Callers name a bucket by what it limits (an
// owner's request rate, one of an owner's byte rates, a client address's failed authentications),
// and the bucket's key, in the owner's slot where it has one, is laid out here (keys.ts).
import type { RedisClient } from '../../redis/connection.ts';
import { RedisKeys } from '../keys.ts';
import { takeTokenScript, type TokenTake } from '../limit-scripts.ts';
import { scriptCaller, type ScriptCaller } from '../script-call.ts';

export type { TokenTake };

/** Which bucket: an owner's requests, an owner's bytes of one kind, or one client address's failed authentications. */
export type TokenBucket = { rate: string } | { bytes: string; kind: 'ingress' | 'stored' | 'output' } | { unauthenticated: string };

export interface TokenTakeRequest {
  perSecond: number;
  burst: number;
  /** Tokens taken (1 when left out). */
  cost?: number;
  /** How a cost the bucket cannot hold is taken (see takeTokenScript); left out: refused until the tokens are there. */
  mode?: 'afterTheFact' | 'payFirst';
}

export class TokenBuckets {
  private readonly call: ScriptCaller;
  private readonly keys: RedisKeys;

  constructor(redis: RedisClient, prefix: string) {
    this.keys = new RedisKeys(prefix);
    this.call = scriptCaller(redis);
  }

  /** Takes tokens from one bucket: taken, or the ms until they would be there. */
  take(bucket: TokenBucket, request: TokenTakeRequest): Promise<TokenTake> {
    return this.call(takeTokenScript, { bucket: this.keyOf(bucket) }, request);
  }

  private keyOf(bucket: TokenBucket): string {
    if ('rate' in bucket) return this.keys.rateBucket(bucket.rate);
    if ('bytes' in bucket) return this.keys.byteBucket(bucket.bytes, bucket.kind);
    return this.keys.unauthenticatedBucket(bucket.unauthenticated);
  }
}
