// The token buckets of the limits (src/limits), shared by every gateway and worker through Redis:
// one take is one takeToken script on one bucket, and two takes a request owes at once (its
// request token and its body's bytes) are one takeTokenPair script. Callers name a bucket by
// what it limits (an owner's request rate, one of an owner's byte rates, a client address's
// failed authentications), and the bucket's key, in the owner's slot where it has one, is laid
// out here (keys.ts).
import type { RedisClient } from '../../redis/connection.ts';
import { RedisKeys } from '../keys.ts';
import { takeTokenPairScript, takeTokenScript, type TokenTake } from '../limit-scripts.ts';
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

/** A take a request owes, with the refusal its caller gets when the bucket cannot pay it. */
export interface OwedTake {
  bucket: TokenBucket;
  perSecond: number;
  burst: number;
  /** Tokens taken; a cost over the burst costs the whole bucket. */
  cost: number;
  refusal: (waitMs: number) => Error;
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

  /**
   * Takes every owed take or none, in one script call (one or two takes, each bucket in the
   * owner's slot), and throws the refusal of the bucket that waits longest.
   */
  async takeAll(takes: readonly OwedTake[]): Promise<void> {
    const [first, second] = takes;
    if (first === undefined) return;
    if (second === undefined) {
      const take = await this.take(first.bucket, { perSecond: first.perSecond, burst: first.burst, cost: first.cost });
      if (!take.taken) throw first.refusal(take.waitMs);
      return;
    }
    if (takes.length > 2) throw new Error('takeAll takes at most two buckets at once');
    const take = await this.call(
      takeTokenPairScript,
      { first: this.keyOf(first.bucket), second: this.keyOf(second.bucket) },
      {
        firstPerSecond: first.perSecond,
        firstBurst: first.burst,
        firstCost: first.cost,
        secondPerSecond: second.perSecond,
        secondBurst: second.burst,
        secondCost: second.cost,
      },
    );
    if (!take.taken) throw (take.waiting === 0 ? first : second).refusal(take.waitMs);
  }

  private keyOf(bucket: TokenBucket): string {
    if ('rate' in bucket) return this.keys.rateBucket(bucket.rate);
    if ('bytes' in bucket) return this.keys.byteBucket(bucket.bytes, bucket.kind);
    return this.keys.unauthenticatedBucket(bucket.unauthenticated);
  }
}
