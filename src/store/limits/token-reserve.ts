// A process's reserve of an owner's request tokens: a take that goes to Redis anyway takes a
// little more than the request costs, and this process's next requests of that owner are paid
// from what it holds, without a round trip. The tokens come out of the shared bucket like any
// other, so the owner never gets more than its rate and burst across every gateway; what a
// process holds is at most a sixteenth of the burst, and lapses after RESERVE_TTL_MS unused
// (those tokens are spent, as if the owner had sent them: the limit errs on the strict side).
// Near the limit the top-up is refused and the take is retried at the request's exact cost, so
// a request the bucket could pay alone is never refused for the reserve's sake.

/** How long tokens stay held unused: a process that stopped seeing an owner gives up their claim on the rate soon. */
export const RESERVE_TTL_MS = 1_000;
/** The share of a bucket's burst one top-up takes. */
const TOP_UP_SHARE = 1 / 16;
/** Most buckets a process holds tokens of; past it, the oldest holding is dropped. */
const MAX_HELD = 10_000;

interface Holding {
  tokens: number;
  expiresAtMs: number;
}

export class TokenReserve {
  private readonly held = new Map<string, Holding>();
  /** Buckets with a top-up in flight: one at a time per bucket, so concurrent requests do not each take one. */
  private readonly topping = new Set<string>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Tokens held for the bucket at `key` (0 once they lapsed). */
  available(key: string): number {
    const holding = this.held.get(key);
    if (holding === undefined) return 0;
    if (holding.expiresAtMs > this.now()) return holding.tokens;
    this.held.delete(key);
    return 0;
  }

  /** Pays `cost` from what is held; the caller checked `available` first. */
  spend(key: string, cost: number): void {
    const holding = this.held.get(key);
    if (holding !== undefined) holding.tokens -= cost;
  }

  /** Undoes a spend whose request was refused by another bucket (still held, if not lapsed meanwhile). */
  giveBack(key: string, cost: number): void {
    const holding = this.held.get(key);
    if (holding !== undefined) holding.tokens += cost;
  }

  /**
   * The tokens a take of `cost` from a bucket of `burst` adds for this process to hold (0: none;
   * then finishTopUp is not called): none while another top-up of the bucket is in flight, and
   * none that would take the cost past the burst (the bucket then charges its whole content).
   */
  startTopUp(key: string, cost: number, burst: number): number {
    const topUp = Math.floor(burst * TOP_UP_SHARE);
    if (topUp < 1 || cost + topUp > burst || this.topping.has(key)) return 0;
    this.topping.add(key);
    return topUp;
  }

  /** Ends a top-up started by startTopUp: `taken` tokens (0 when it was refused) are held from now on. */
  finishTopUp(key: string, taken: number): void {
    this.topping.delete(key);
    if (taken <= 0) return;
    const tokens = this.available(key) + taken;
    // Re-inserted, so the map's first entry is the holding least recently topped up.
    this.held.delete(key);
    if (this.held.size >= MAX_HELD) this.held.delete(this.held.keys().next().value as string);
    this.held.set(key, { tokens, expiresAtMs: this.now() + RESERVE_TTL_MS });
  }
}
