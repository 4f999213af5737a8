// The tenant half of the worker pool's fair share. A turn's queue priority is its owner's count
// of active tasks (turnPriority), so one owner's flood waits behind everyone's first task. A
// tenant with many owners would still take the pool by numbers: a hundred owners with one task
// each all queue at priority 1, and another tenant's single task waits behind all of them.
// Scaling the owner's count by how many owners its tenant has busy gives each tenant about one
// share per round, split between its owners: an owner's n-th task in a tenant of k busy owners
// is about the (n × k)-th of that tenant's turns when its turns are taken round by round.
import type { RedisClient } from '../src/redis/connection.ts';
import { tenantKeyOf } from '../src/store/owner.ts';
import { FairShareStore } from '../src/store/shares/fair-share-store.ts';

/** How long an owner counts as busy for its tenant after it last queued a turn. */
export const TENANT_SHARE_WINDOW_MS = 300_000;

/** How long this process trusts an owner's mark (well inside the window) and a tenant's count. */
const MARK_REFRESH_MS = 30_000;
const COUNT_FRESH_MS = 1_000;
/** Past this many owners or tenants remembered, the memo starts over (it only saves round trips). */
const MEMO_LIMIT = 10_000;

/**
 * How many of the owner's tenant's owners are busy, this one marked busy too (in the tenant's
 * slot: FairShareStore.markBusy), with a per-process memo, so a queued turn usually costs no
 * Redis round trip: an owner marked busy less than MARK_REFRESH_MS ago is still busy (its window is ten times
 * longer), and its tenant's count read less than COUNT_FRESH_MS ago is reused. An owner's first
 * turn, or its first after a while, always asks Redis, so a tenant whose crowd grows is seen as
 * growing at each new owner; the count a burst reuses is at most a second old.
 */
export class TenantShare {
  private readonly markedAt = new Map<string, number>();
  private readonly counted = new Map<string, { count: number; atMs: number }>();
  private readonly store: FairShareStore;

  constructor(
    connection: RedisClient,
    prefix: string,
    private readonly windowMs = TENANT_SHARE_WINDOW_MS,
  ) {
    this.store = new FairShareStore(connection, prefix);
  }

  async busyOwners(ownerKey: string, nowMs = Date.now()): Promise<number> {
    const tenant = tenantKeyOf(ownerKey);
    const marked = this.markedAt.get(ownerKey);
    const count = this.counted.get(tenant);
    if (marked !== undefined && nowMs - marked < MARK_REFRESH_MS && count !== undefined && nowMs - count.atMs < COUNT_FRESH_MS) return count.count;
    const fresh = Math.max(1, await this.store.markBusy(ownerKey, this.windowMs));
    if (this.markedAt.size >= MEMO_LIMIT) this.markedAt.clear();
    if (this.counted.size >= MEMO_LIMIT) this.counted.clear();
    this.markedAt.set(ownerKey, nowMs);
    this.counted.set(tenant, { count: fresh, atMs: nowMs });
    return fresh;
  }
}
