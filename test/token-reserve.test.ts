// A gateway's reserve of request tokens (src/store/limits/token-reserve.ts): most takes are paid
// from what the process took ahead, and the shared bucket still bounds the owner: no process
// gets a token the bucket did not give, a take the bucket could pay alone is never refused for
// the reserve's sake, and a refused pair spends neither bucket. Output charged after the fact is
// paid from a reserve too, topped up only while the bucket holds it beside the charge.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisKeys } from '../src/store/keys.ts';
import { TokenBuckets, type OwedTake } from '../src/store/limits/token-buckets.ts';
import { RESERVE_TTL_MS, TokenReserve } from '../src/store/limits/token-reserve.ts';
import { REDIS_URL, uniquePrefix } from './support/harness.ts';

let redis: Redis;
const prefix = uniquePrefix('token-reserve');
const keys = new RedisKeys(prefix);

beforeAll(() => {
  redis = new Redis(REDIS_URL);
});

afterAll(async () => {
  const left = await redis.keys(`${prefix}:*`);
  if (left.length > 0) await redis.del(...left);
  redis.disconnect();
});

class Refused extends Error {}

/** A take of `cost` bytes from an owner's ingress bucket of `burst` that refills one byte a second (nothing, within a test). */
const ingress = (owner: string, cost: number, burst: number): OwedTake => ({
  bucket: { bytes: owner, kind: 'ingress' },
  perSecond: 1,
  burst,
  cost,
  refusal: () => new Refused(`${owner}: ${cost} refused`),
});

const rate = (owner: string, burst: number): OwedTake => ({
  bucket: { rate: owner },
  perSecond: 1,
  burst,
  cost: 1,
  refusal: () => new Refused(`${owner}: request refused`),
});

/** What the bucket in Redis holds (the full burst before its first take). */
async function inRedis(key: string, burst: number): Promise<number> {
  const tokens = await redis.hget(key, 'tokens');
  return tokens === null ? burst : Math.floor(Number(tokens));
}

describe('the token reserve', () => {
  it('pays most takes from what it took ahead: one call tops up a sixteenth of the burst', async () => {
    const buckets = new TokenBuckets(redis, prefix, new TokenReserve());
    const key = keys.byteBucket('o-most', 'ingress');
    await buckets.takeAll([ingress('o-most', 100, 16_000)]);
    // The first take went to Redis with the top-up: 100 + 1,000.
    expect(await inRedis(key, 16_000)).toBe(14_900);
    for (let i = 0; i < 10; i++) await buckets.takeAll([ingress('o-most', 100, 16_000)]);
    expect(await inRedis(key, 16_000)).toBe(14_900);
    // The reserve is spent: the next take tops it up again.
    await buckets.takeAll([ingress('o-most', 100, 16_000)]);
    expect(await inRedis(key, 16_000)).toBe(13_800);
  });

  it('never refuses a take the bucket could pay alone: near the limit it takes the exact cost', async () => {
    const buckets = new TokenBuckets(redis, prefix, new TokenReserve());
    const key = keys.byteBucket('o-near', 'ingress');
    // Over the burst with a top-up, so taken exactly: 50 left.
    await buckets.takeAll([ingress('o-near', 15_950, 16_000)]);
    expect(await inRedis(key, 16_000)).toBe(50);
    // 40 + a top-up of 1,000 is refused; 40 alone is there.
    await buckets.takeAll([ingress('o-near', 40, 16_000)]);
    expect(await inRedis(key, 16_000)).toBe(10);
    await expect(buckets.takeAll([ingress('o-near', 40, 16_000)])).rejects.toThrow(Refused);
  });

  it('gives two gateways no more than the bucket holds, and holds back at most a top-up each', async () => {
    const one = new TokenBuckets(redis, prefix, new TokenReserve());
    const two = new TokenBuckets(redis, prefix, new TokenReserve());
    let accepted = 0;
    let refusedInARow = 0;
    for (let i = 0; refusedInARow < 2 && i < 1_000; i++) {
      try {
        await (i % 2 === 0 ? one : two).takeAll([ingress('o-two', 100, 16_000)]);
        accepted += 100;
        refusedInARow = 0;
      } catch (error) {
        if (!(error instanceof Refused)) throw error;
        refusedInARow += 1;
      }
    }
    // The bucket refills a byte a second: a few bytes over 16,000 at most.
    expect(accepted).toBeLessThanOrEqual(16_000 + 100);
    expect(accepted).toBeGreaterThanOrEqual(16_000 - 2 * 1_000);
  });

  it('tops up once at a time: concurrent takes of an empty reserve do not each take ahead', async () => {
    const buckets = new TokenBuckets(redis, prefix, new TokenReserve());
    const key = keys.byteBucket('o-concurrent', 'ingress');
    await Promise.all(Array.from({ length: 10 }, () => buckets.takeAll([ingress('o-concurrent', 100, 16_000)])));
    expect(await inRedis(key, 16_000)).toBe(16_000 - 10 * 100 - 1_000);
  });

  it('spends neither bucket of a pair when one refuses, a reserve-paid one included', async () => {
    const reserve = new TokenReserve();
    const buckets = new TokenBuckets(redis, prefix, reserve);
    const bytesKey = keys.byteBucket('o-pair', 'ingress');
    const rateKey = keys.rateBucket('o-pair');
    // The request bucket holds two tokens (no top-up: a sixteenth of 2 is none); the byte bucket is topped up.
    await buckets.takeAll([rate('o-pair', 2), ingress('o-pair', 100, 16_000)]);
    await buckets.takeAll([rate('o-pair', 2), ingress('o-pair', 100, 16_000)]);
    const held = reserve.available(bytesKey);
    expect(held).toBe(900);
    // The bytes are held here, the request token is not there: refused, and the bytes stay held.
    await expect(buckets.takeAll([rate('o-pair', 2), ingress('o-pair', 100, 16_000)])).rejects.toThrow(/request refused/);
    expect(reserve.available(bytesKey)).toBe(held);
    expect(await inRedis(rateKey, 2)).toBe(0);
  });

  it('lets what it holds lapse after RESERVE_TTL_MS unused', () => {
    let now = 1_000_000;
    const reserve = new TokenReserve(() => now);
    expect(reserve.startTopUp('k', 10, 16_000)).toBe(1_000);
    // One top-up at a time.
    expect(reserve.startTopUp('k', 10, 16_000)).toBe(0);
    reserve.finishTopUp('k', 1_000);
    expect(reserve.available('k')).toBe(1_000);
    now += RESERVE_TTL_MS - 1;
    expect(reserve.available('k')).toBe(1_000);
    now += 2;
    expect(reserve.available('k')).toBe(0);
  });
});

describe('the token reserve of output charges (after the fact)', () => {
  const output = { perSecond: 1, burst: 16_000 };

  it('takes a top-up beside a charge when the bucket still holds one after it; the next charges cost no call', async () => {
    const buckets = new TokenBuckets(redis, prefix, new TokenReserve());
    const bucket = { bytes: 'o-charge', kind: 'output' } as const;
    const key = keys.byteBucket('o-charge', 'output');
    expect(await buckets.charge(bucket, { ...output, cost: 100 })).toBe(0);
    expect(await inRedis(key, 16_000)).toBe(14_900);
    for (let i = 0; i < 10; i++) expect(await buckets.charge(bucket, { ...output, cost: 100 })).toBe(0);
    expect(await inRedis(key, 16_000)).toBe(14_900);
    await buckets.charge(bucket, { ...output, cost: 100 });
    expect(await inRedis(key, 16_000)).toBe(13_800);
  });

  it('near the limit charges the exact bytes alone, and the debt they leave is answered as without a reserve', async () => {
    const buckets = new TokenBuckets(redis, prefix, new TokenReserve());
    const bucket = { bytes: 'o-charge-near', kind: 'output' } as const;
    const key = keys.byteBucket('o-charge-near', 'output');
    // Over the burst with a top-up: charged exactly, 50 left.
    expect(await buckets.charge(bucket, { ...output, cost: 15_950 })).toBe(0);
    expect(await inRedis(key, 16_000)).toBe(50);
    // 40 leaves 10: no room for a top-up of 1,000 beside it.
    expect(await buckets.charge(bucket, { ...output, cost: 40 })).toBe(0);
    expect(await inRedis(key, 16_000)).toBe(10);
    // 40 more leaves the bucket 30 in debt: 30 s at a byte a second.
    const debtMs = await buckets.charge(bucket, { ...output, cost: 40 });
    expect(debtMs).toBeGreaterThan(29_000);
    expect(await inRedis(key, 16_000)).toBe(-30);
  });
});
