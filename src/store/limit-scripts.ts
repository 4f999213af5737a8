// The scripts of the limits (src/limits: request, byte and unauthenticated rates, storage quota, open streams),
// described for callScript: keys and arguments by name in their Lua's order, replies decoded.
import { arg, defineScript, type ArgValue } from './script-call.ts';

/**
 * A token bucket's answer: taken (with, for a charge after the fact, the ms until the bucket is
 * out of the debt it left, else 0, and the top-up taken beside it), or the ms until the tokens
 * would be there.
 */
export type TokenTake = { taken: true; debtMs: number; toppedUp: number } | { taken: false; waitMs: number };

export const takeTokenScript = defineScript({
  name: 'takeToken',
  keys: ['bucket'],
  args: {
    perSecond: arg.int,
    burst: arg.int,
    /** Tokens taken (1 when left out). */
    cost: (value: number | undefined): ArgValue | readonly ArgValue[] => (value === undefined ? [] : value),
    /**
     * How the cost is taken when the bucket cannot hold it: 'afterTheFact', always taken (the
     * bucket may go below zero); 'payFirst', an answer paid before it is built, taken once the
     * bucket is full and left that much below zero. Left out: refused until the tokens are there.
     */
    mode: (value: 'afterTheFact' | 'payFirst' | undefined): ArgValue | readonly ArgValue[] => (value === 'afterTheFact' ? '1' : value === 'payFirst' ? '2' : []),
    /** With 'afterTheFact': tokens for the caller's reserve, taken too when the bucket still holds them after the charge. */
    topUp: (value: number | undefined): ArgValue | readonly ArgValue[] => (value === undefined ? [] : value),
  },
  reply: (reply): TokenTake =>
    Number(reply[0]) === 1 ? { taken: true, debtMs: Number(reply[1]), toppedUp: Number(reply[2] ?? 0) } : { taken: false, waitMs: Number(reply[1]) },
});

/** Two buckets' answer: both taken, or the ms until both could pay and which one (0 or 1) waits longer. */
export type TokenPairTake = { taken: true } | { taken: false; waitMs: number; waiting: 0 | 1 };

/** One request's tokens from two buckets of its owner (the request rate and the ingress bytes), both or neither. */
export const takeTokenPairScript = defineScript({
  name: 'takeTokenPair',
  keys: ['first', 'second'],
  args: {
    firstPerSecond: arg.int,
    firstBurst: arg.int,
    firstCost: arg.int,
    secondPerSecond: arg.int,
    secondBurst: arg.int,
    secondCost: arg.int,
  },
  reply: (reply): TokenPairTake => (Number(reply[0]) === 1 ? { taken: true } : { taken: false, waitMs: Number(reply[1]), waiting: Number(reply[2]) === 2 ? 1 : 0 }),
});

export const quotaReleaseScript = defineScript({
  name: 'quotaRelease',
  keys: ['ownerQuota', 'ownerQuotaChecks'],
  args: {
    /** Tasks that are gone: their charges are released. */
    gone: arg.json<readonly string[]>(),
    /** Task id → when to look again (ms), for tasks still there. */
    later: arg.json<Readonly<Record<string, number>>>(),
  },
  reply: (reply): { bytes: number; tasks: number } => ({ bytes: Number(reply[0]), tasks: Number(reply[1]) }),
});

export const streamSlotTakeScript = defineScript({
  name: 'streamSlotTake',
  keys: ['openStreams'],
  args: { cap: arg.int, ttlMs: arg.int, streamIds: arg.each },
  /** How many slots were taken (for the first ids given), and the streams the set holds open after. */
  reply: (reply): { taken: number; open: number } => ({ taken: Number(reply[0]), open: Number(reply[1]) }),
});

export const streamSlotRenewScript = defineScript({
  name: 'streamSlotRenew',
  keys: ['openStreams'],
  args: { ttlMs: arg.int, streamIds: arg.each },
  reply: (reply): number => Number(reply[0]),
});
