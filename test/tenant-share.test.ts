// The tenant half of the fair share asks Redis once per owner per refresh, not once per turn
// (queues/tenant-share.ts): a burst of one owner's turns costs no round trips, and an owner new
// to its tenant is counted at once.
import { Redis } from 'ioredis';
import { afterAll, expect, it, vi } from 'vitest';
import { TenantShare } from '../queues/tenant-share.ts';
import { FairShareStore } from '../src/store/shares/fair-share-store.ts';
import { REDIS_URL } from './support/harness.ts';

const redis = new Redis(REDIS_URL);
const prefix = `tenant-share-${process.pid}-${Date.now()}`;

afterAll(async () => {
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length > 0) await redis.unlink(...keys);
  redis.disconnect();
});

it('reuses a fresh count for an owner marked lately, asks again for a new owner and once the count is a second old', async () => {
  const share = new TenantShare(redis, prefix);
  // Each mark is one script call on Redis (the tenantBusyOwners script).
  const evals = vi.spyOn(FairShareStore.prototype, 'markBusy');
  const t0 = 1_000_000;
  expect(await share.busyOwners('default/acme/alice', t0)).toBe(1);
  expect(await share.busyOwners('default/acme/alice', t0 + 10)).toBe(1);
  expect(await share.busyOwners('default/acme/alice', t0 + 500)).toBe(1);
  expect(evals).toHaveBeenCalledTimes(1);
  // Bob is new to the tenant: counted at once, and his count is alice's next one.
  expect(await share.busyOwners('default/acme/bob', t0 + 600)).toBe(2);
  expect(evals).toHaveBeenCalledTimes(2);
  expect(await share.busyOwners('default/acme/alice', t0 + 700)).toBe(2);
  expect(evals).toHaveBeenCalledTimes(2);
  // A count older than a second is read again (and marks alice anew).
  expect(await share.busyOwners('default/acme/alice', t0 + 1_700)).toBe(2);
  expect(evals).toHaveBeenCalledTimes(3);
  // Another tenant's owner is counted in its own tenant.
  expect(await share.busyOwners('default/globex/carol', t0 + 1_800)).toBe(1);
  evals.mockRestore();
});
