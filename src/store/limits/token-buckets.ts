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
import type { TokenReserve } from './token-reserve.ts';

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

  /**
   * @param reserve where takeAll keeps tokens taken ahead of this process's next requests
   *   (token-reserve.ts); none: every take goes to Redis.
   */
  constructor(
    redis: RedisClient,
    prefix: string,
    private readonly reserve?: TokenReserve,
  ) {
    this.keys = new RedisKeys(prefix);
    this.call = scriptCaller(redis);
  }

  /** Takes tokens from one bucket: taken, or the ms until they would be there. */
  take(bucket: TokenBucket, request: TokenTakeRequest): Promise<TokenTake> {
    return this.call(takeTokenScript, { bucket: this.keyOf(bucket) }, request);
  }

  /**
   * Charges `cost` after the fact (always taken; the bucket may go into debt) and answers the ms
   * until the bucket is out of debt (0: it is not). With a reserve, a charge it can pay costs no
   * call, and a charge that goes to Redis takes a top-up beside it when the bucket still holds
   * one after the charge (near the limit it takes the exact charge alone, as without a reserve).
   */
  async charge(bucket: TokenBucket, { perSecond, burst, cost }: { perSecond: number; burst: number; cost: number }): Promise<number> {
    const key = this.keyOf(bucket);
    const reserve = this.reserve;
    if (reserve !== undefined && reserve.available(key) >= cost) {
      reserve.spend(key, cost);
      return 0;
    }
    const topUp = reserve?.startTopUp(key, cost, burst) ?? 0;
    let held = 0;
    try {
      const take = await this.call(takeTokenScript, { bucket: key }, { perSecond, burst, cost, mode: 'afterTheFact', topUp: topUp > 0 ? topUp : undefined });
      if (!take.taken) return take.waitMs;
      held = take.toppedUp;
      return take.debtMs;
    } finally {
      if (topUp > 0) reserve?.finishTopUp(key, held);
    }
  }

  /**
   * Takes every owed take or none, in one script call (one or two takes, each bucket in the
   * owner's slot), and throws the refusal of the bucket that waits longest. With a reserve, takes
   * it can pay cost no call, and a call tops it up (token-reserve.ts).
   */
  async takeAll(takes: readonly OwedTake[]): Promise<void> {
    if (takes.length > 2) throw new Error('takeAll takes at most two buckets at once');
    if (takes.length === 0) return;
    const reserve = this.reserve;
    if (reserve === undefined) return throwIf(await this.takeFromRedis(takes, undefined));
    const keys = takes.map((take) => this.keyOf(take.bucket));
    // What the reserve holds pays those takes now; the others go to Redis (a refusal there gives them back: both or neither).
    const paidHere = takes.map((take, i) => reserve.available(keys[i] as string) >= take.cost);
    takes.forEach((take, i) => {
      if (paidHere[i] === true) reserve.spend(keys[i] as string, take.cost);
    });
    const rest = takes.filter((_, i) => paidHere[i] !== true);
    if (rest.length === 0) return;
    const restKeys = keys.filter((_, i) => paidHere[i] !== true);
    const topUps = rest.map((take, i) => reserve.startTopUp(restKeys[i] as string, take.cost, take.burst));
    let topped = false;
    try {
      if (topUps.some((topUp) => topUp > 0)) topped = (await this.takeFromRedis(rest, topUps)) === undefined;
      // Near the limit the top-up is refused: the request's own cost alone may still be there.
      const refusal = topped ? undefined : await this.takeFromRedis(rest, undefined);
      if (refusal !== undefined) {
        takes.forEach((take, i) => {
          if (paidHere[i] === true) reserve.giveBack(keys[i] as string, take.cost);
        });
        throw refusal;
      }
    } finally {
      topUps.forEach((topUp, i) => {
        if (topUp > 0) reserve.finishTopUp(restKeys[i] as string, topped ? topUp : 0);
      });
    }
  }

  /** The takes (each with its `extra` tokens, if any) in one script call: undefined when taken, else the refusal of the bucket that waits longest. */
  private async takeFromRedis(takes: readonly OwedTake[], extra: readonly number[] | undefined): Promise<Error | undefined> {
    const [first, second] = takes as [OwedTake, OwedTake | undefined];
    const firstCost = first.cost + (extra?.[0] ?? 0);
    if (second === undefined) {
      const take = await this.take(first.bucket, { perSecond: first.perSecond, burst: first.burst, cost: firstCost });
      return take.taken ? undefined : first.refusal(take.waitMs);
    }
    const take = await this.call(
      takeTokenPairScript,
      { first: this.keyOf(first.bucket), second: this.keyOf(second.bucket) },
      {
        firstPerSecond: first.perSecond,
        firstBurst: first.burst,
        firstCost,
        secondPerSecond: second.perSecond,
        secondBurst: second.burst,
        secondCost: second.cost + (extra?.[1] ?? 0),
      },
    );
    return take.taken ? undefined : (take.waiting === 0 ? first : second).refusal(take.waitMs);
  }

  private keyOf(bucket: TokenBucket): string {
    if ('rate' in bucket) return this.keys.rateBucket(bucket.rate);
    if ('bytes' in bucket) return this.keys.byteBucket(bucket.bytes, bucket.kind);
    return this.keys.unauthenticatedBucket(bucket.unauthenticated);
  }
}

function throwIf(refusal: Error | undefined): void {
  if (refusal !== undefined) throw refusal;
}
