// The Redis side of the worker pool's fair share (queues/running-share.ts, queues/tenant-share.ts):
// the running-turn sets of owners and tenants, and each tenant's busy owners. Callers name a set
// by whose it is (an owner key); every call touches one set, so one slot.
import type { RedisClient } from '../../redis/connection.ts';
import { scriptCaller, type ScriptCaller } from '../script-call.ts';
import { runningSlotRenewScript, runningSlotTakeScript, tenantBusyOwnersScript } from '../share-scripts.ts';
import { ShareKeys } from './share-keys.ts';

/** Which running set: the owner's own, or its tenant's. */
export interface RunningSet {
  scope: 'owner' | 'tenant';
  ownerKey: string;
}

export class FairShareStore {
  private readonly call: ScriptCaller;
  private readonly keys: ShareKeys;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
  ) {
    this.keys = new ShareKeys(prefix);
    this.call = scriptCaller(redis);
  }

  /** Takes a running slot for the task's turn unless `cap` (0 = none) run in the set; a task already there is renewed and counted once. */
  takeRunning(set: RunningSet, taskId: string, cap: number, ttlMs: number): Promise<{ taken: boolean; running: number; fresh: boolean }> {
    return this.call(runningSlotTakeScript, { running: this.runningKey(set) }, { taskId, cap, ttlMs });
  }

  /** Moves the expiry of the given tasks' slots to now + ttlMs. */
  async renewRunning(set: RunningSet, taskIds: readonly string[], ttlMs: number): Promise<void> {
    await this.call(runningSlotRenewScript, { running: this.runningKey(set) }, { ttlMs, taskIds });
  }

  /** Gives a task's running slot back. */
  async removeRunning(set: RunningSet, taskId: string): Promise<void> {
    await this.redis.zrem(this.runningKey(set), taskId);
  }

  /** Marks the owner busy in its tenant for `windowMs` and answers how many of the tenant's owners are (this one included). */
  markBusy(ownerKey: string, windowMs: number): Promise<number> {
    return this.call(tenantBusyOwnersScript, { busyOwners: this.keys.tenantBusyOwners(ownerKey) }, { ownerKey, windowMs });
  }

  private runningKey(set: RunningSet): string {
    return set.scope === 'owner' ? this.keys.ownerRunning(set.ownerKey) : this.keys.tenantRunning(set.ownerKey);
  }
}
