// Per-owner byte rates (limits.ingressBytesPerSecond, limits.storedBytesPerSecond): the request
// rate bounds how often an owner may call, these bound how many bytes it may push through the
// gateway (request bodies) and into Redis (the messages it stores), each a token bucket counted
// in bytes, in the owner's slot, shared by every gateway (the store's takeToken script, as the
// request rate's). A request over either rate is refused with 429 and Retry-After before it is
// read (when its size is declared) or stored, so an owner sending large messages as fast as
// its request rate allows gets its bytes' worth, not the gateway's and Redis' time. A third
// bucket paces what the owner's turns store (limits.outputBytesPerSecond): a backend filling its
// output allowance as fast as it can waits for it instead of loading Redis for everyone.
import type { RedisClient } from '../redis/connection.ts';
import { TokenBuckets, type OwedTake } from '../store/limits/token-buckets.ts';
import { TokenReserve } from '../store/limits/token-reserve.ts';
import { ownerKeyOf, type Owner } from '../store/task-store.ts';
import { LimitExceededError } from './limit-refusal.ts';

export interface ByteRateLimits {
  /** Request body bytes per second one owner may send (0 = no limit). */
  ingressBytesPerSecond: number;
  /** Body bytes one owner may send at once after being quiet. */
  ingressBurstBytes: number;
  /** Message bytes per second one owner may have stored (0 = no limit). */
  storedBytesPerSecond: number;
  /** Message bytes one owner may have stored at once after being quiet. */
  storedBurstBytes: number;
  /** Bytes per second of agent output (artifact chunks, status) one owner's turns may have stored (0 = no pacing). */
  outputBytesPerSecond: number;
  /** Agent output bytes one owner's turns may have stored at once after being quiet. */
  outputBurstBytes: number;
}

type ByteRateKind = 'ingress' | 'stored';
export type ByteBucketKind = ByteRateKind | 'output';

/**
 * The most bytes an output may have charged after the fact (stored without waiting for its take;
 * also at most an eighth of the burst): the rate then runs at most one such output behind.
 */
const OUTPUT_CHARGED_AFTER_BYTES = 16 * 1024;

/**
 * One owner's output rate, as a turn paces against it (src/runtime/turn-output.ts). A large
 * output waits until the bucket holds its bytes (`take`). A small one is charged after the fact
 * (`charge`, sent beside its append, so storing it costs no round trip of its own): the bucket
 * may go below zero, and the turn's next output first waits out the debt the charge reports.
 * Most small charges cost no call at all: they are paid from bytes this process took from the
 * bucket ahead, beside an earlier charge, while the bucket held them (TokenBuckets.charge).
 * A backend emitting faster than the rate is slowed either way, not failed.
 */
export interface OutputPacer {
  /** Whether an output of `bytes` is charged after the fact. */
  chargedAfter(bytes: number): boolean;
  /** Takes the bytes: 0 when taken, else the ms until they would be (ask again then). An output larger than the burst costs the whole bucket, once it is full. */
  take(bytes: number): Promise<number>;
  /** Charges the bytes, always taken: the ms until the bucket is out of debt again (0 when it is not in debt). */
  charge(bytes: number): Promise<number>;
}

export class ByteRates {
  private readonly buckets: TokenBuckets;
  /** The output rate's: small charges are paid from tokens this process took ahead (token-reserve.ts). */
  private readonly outputBuckets: TokenBuckets;

  constructor(
    redis: RedisClient,
    prefix: string,
    readonly limits: ByteRateLimits,
  ) {
    this.buckets = new TokenBuckets(redis, prefix);
    this.outputBuckets = new TokenBuckets(redis, prefix, new TokenReserve());
  }

  /** True when request bodies are charged here (and so not to the request rate, limits.requestBytesPerToken). */
  get chargesIngress(): boolean {
    return this.limits.ingressBytesPerSecond > 0;
  }

  /**
   * A request body's bytes as a take its request owes (undefined when the ingress rate is off or
   * there are none), for the request rate to take beside its token in one call (RateLimiter.take).
   */
  ingressTake(owner: Owner, bytes: number): OwedTake | undefined {
    return this.owedTake('ingress', owner, bytes, this.limits.ingressBytesPerSecond, this.limits.ingressBurstBytes);
  }

  /** A message's stored bytes as a take owed to the owner's storage rate (undefined when the rate is off), refused with 429 RATE_LIMITED naming limits.storedBytesPerSecond. */
  storedTake(owner: Owner, bytes: number): OwedTake | undefined {
    return this.owedTake('stored', owner, bytes, this.limits.storedBytesPerSecond, this.limits.storedBurstBytes);
  }

  /** Takes an owed take of these rates (ingressTake, storedTake) on its own, or throws its refusal. */
  takeOwed(take: OwedTake): Promise<void> {
    return this.buckets.takeAll([take]);
  }

  /** How one owner's turns pace their output against limits.outputBytesPerSecond; undefined when it is off. */
  outputPacer(ownerKey: string): OutputPacer | undefined {
    const { outputBytesPerSecond: perSecond, outputBurstBytes: burst } = this.limits;
    if (perSecond <= 0) return undefined;
    const bucket = { bytes: ownerKey, kind: 'output' } as const;
    const { buckets, outputBuckets } = this;
    return {
      chargedAfter: (bytes) => bytes <= Math.min(OUTPUT_CHARGED_AFTER_BYTES, burst / 8),
      async take(bytes) {
        if (bytes <= 0) return 0;
        const take = await buckets.take(bucket, { perSecond, burst, cost: bytes });
        return take.taken ? 0 : Math.max(1, take.waitMs);
      },
      async charge(bytes) {
        if (bytes <= 0) return 0;
        return outputBuckets.charge(bucket, { perSecond, burst, cost: bytes });
      },
    };
  }

  private owedTake(kind: ByteRateKind, owner: Owner, bytes: number, perSecond: number, burst: number): OwedTake | undefined {
    if (perSecond <= 0 || bytes <= 0) return undefined;
    // A body larger than the burst costs the whole bucket (the script caps it): it passes when the bucket is full.
    return {
      bucket: { bytes: ownerKeyOf(owner), kind },
      perSecond,
      burst,
      cost: bytes,
      refusal: (waitMs) => refusal(kind, owner, bytes, perSecond, burst, Math.max(1, Math.ceil(waitMs / 1000))),
    };
  }
}

function refusal(kind: ByteRateKind, owner: Owner, bytes: number, perSecond: number, burst: number, retryAfterSeconds: number): LimitExceededError {
  const [limit, what, setting, burstSetting, done] =
    kind === 'ingress'
      ? (['limits.ingressBytesPerSecond', 'request bodies', 'limits.ingressBytesPerSecond', 'limits.ingressBurstBytes', 'it was not processed'] as const)
      : (['limits.storedBytesPerSecond', 'messages stored', 'limits.storedBytesPerSecond', 'limits.storedBurstBytes', 'nothing was stored'] as const);
  return new LimitExceededError(
    limit,
    'RESOURCE_EXHAUSTED',
    `Too many bytes of ${what} for agent "${owner.agent}": the limit is ${perSecond} bytes per second with bursts of ${burst} (${setting}, ${burstSetting}), and this request's ${bytes} bytes are over it; ${done}. Retry after ${retryAfterSeconds} s, or send less.`,
    { retryAfterSeconds, metadata: { reason: 'BYTE_RATE_LIMITED', limit: String(perSecond), burst: String(burst) } },
  );
}
