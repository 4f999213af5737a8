// Every Redis key of the worker pool's fair share, in the slots docs/redis-slots.md assigns: an
// owner's running turns in the owner's slot, a tenant's running turns and busy owners in the
// tenant's slot `{t:<agent>/<tenant>}` (one agent's tenant, as turn queues are per agent).
import { tenantKeyOf } from '../owner.ts';

export class ShareKeys {
  constructor(readonly prefix: string) {}

  /** ZSET in the owner's slot: its running turns' task ids → ms each slot expires unless renewed. */
  ownerRunning(ownerKey: string): string {
    return `${this.prefix}:{o:${ownerKey}}:running`;
  }

  /** ZSET in the tenant's slot: its owners' running turns' task ids → ms each slot expires unless renewed. */
  tenantRunning(ownerKey: string): string {
    return `${this.prefix}:{t:${tenantKeyOf(ownerKey)}}:running`;
  }

  /** ZSET in the tenant's slot: owner key → ms until which it counts as busy. */
  tenantBusyOwners(ownerKey: string): string {
    return `${this.prefix}:{t:${tenantKeyOf(ownerKey)}}:busyowners`;
  }
}
