// A consumer's keys: every one carries the hash tag `{c:<id>}`, so they share one Cluster slot
// and one script may check and count a consumer's limits together (docs/redis-slots.md). Usage
// is kept per UTC day and per UTC month, each in a hash of its own that expires after the
// period can no longer be asked for.

export interface ConsumerKeys {
  /** HASH {tokens, atMs}: the token bucket of the plan's request rate. */
  rate: string;
  /** ZSET task id → reserved at (ms): the consumer's new tasks that may still be in progress. */
  active: string;
  /** HASH {requests, tasks, tokensIn, tokensOut, spend} of one UTC day. */
  day: string;
  /** The same of one UTC month. */
  month: string;
}

/** "YYYYMMDD" and "YYYYMM" of a time, in UTC. */
export function periodsOf(nowMs: number): { day: string; month: string } {
  const iso = new Date(nowMs).toISOString();
  return { day: `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}`, month: `${iso.slice(0, 4)}${iso.slice(5, 7)}` };
}

export function consumerKeys(prefix: string, id: string, nowMs: number): ConsumerKeys {
  const base = `${prefix}:{c:${id}}`;
  const { day, month } = periodsOf(nowMs);
  return { rate: `${base}:rate`, active: `${base}:active`, day: `${base}:day:${day}`, month: `${base}:month:${month}` };
}

/** Today's usage is asked for until the day is over; kept a little longer for a clock that is behind. */
export const DAY_USAGE_TTL_S = 2 * 86_400;
/** This month's usage, likewise (the longest month, and a margin). */
export const MONTH_USAGE_TTL_S = 35 * 86_400;
