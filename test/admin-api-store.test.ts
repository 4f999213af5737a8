// The control plane's store scripts on their own: a write's version check, the tenant guard a
// tenant admin's writes carry, the bound on resources, and the audit entry of each change, each
// refusal leaving Redis as it was.
import { afterAll, describe, expect, it } from 'vitest';
import { controlKeys } from '../src/store/control/control-keys.ts';
import { ControlStore, type ControlWrite } from '../src/store/control/control-store.ts';
import { deletePrefix, openTestRedis, uniquePrefix } from './support/harness.ts';

/** The versions hash without the write script's call memo (`__call:`/`__reply:`, which lets a re-sent call answer without running twice). */
const withoutCallMemo = (hash: Record<string, string>): Record<string, string> => Object.fromEntries(Object.entries(hash).filter(([field]) => !field.startsWith('__')));

describe('control store scripts', () => {
  const prefix = uniquePrefix('control-store');
  const redis = openTestRedis();
  const store = new ControlStore(redis, prefix, { auditKept: 100, maxResources: 2 });
  const keys = controlKeys(prefix);
  let first = 0;
  const state = async (): Promise<unknown> => [await redis.hgetall(keys.resources), withoutCallMemo(await redis.hgetall(keys.versions)), await redis.get(keys.sequence), await redis.xlen(keys.audit)];
  const put = (name: string, tenant: string, extra: Partial<ControlWrite> = {}): ReturnType<ControlStore['write']> =>
    store.write({ kind: 'partners', name, tenant, expected: { any: true }, resource: JSON.stringify({ kind: 'partners', name, tenant, spec: {}, updatedAt: '', updatedBy: 't' }), actor: 't', nowMs: 1_000, ...extra });

  afterAll(async () => {
    await deletePrefix(redis, prefix);
    await redis.quit();
  });

  it('versions each change and refuses a stale expectation, changing nothing', async () => {
    const created = await put('a', 'acme');
    expect(created).toMatchObject({ ok: true, version: 1, action: 'create' });
    // A new sequence starts from the first write's time, never from 0 (a view from before a data loss cannot match it).
    first = (created as { seq: number }).seq;
    expect(first).toBeGreaterThanOrEqual(1_000 * 1_000);
    expect(await put('a', 'acme', { expected: { version: 1 } })).toEqual({ ok: true, version: 2, seq: first + 1, action: 'replace' });
    const before = await state();
    expect(await put('a', 'acme', { expected: { version: 1 } })).toEqual({ ok: false, stale: 2 });
    expect(await put('a', 'acme', { expected: { absent: true } })).toEqual({ ok: false, stale: 2 });
    expect(await put('b', '', { expected: { exists: true } })).toEqual({ ok: false, stale: 0 });
    expect(await store.write({ kind: 'partners', name: 'b', tenant: '', expected: { any: true }, actor: 't', nowMs: 1 })).toEqual({ ok: false, missing: true });
    expect(await state()).toEqual(before);
  });

  it("answers another tenant's resource as missing to a tenant-bound writer", async () => {
    const before = await state();
    expect(await put('a', 'other', { reach: 'other' })).toEqual({ ok: false, missing: true });
    expect(await store.write({ kind: 'partners', name: 'a', tenant: 'acme', expected: { any: true }, actor: 't', nowMs: 1, reach: 'other' })).toEqual({ ok: false, missing: true });
    expect(await state()).toEqual(before);
    expect(await put('a', 'acme', { reach: 'acme' })).toMatchObject({ ok: true, version: 3 });
  });

  it('holds at most maxResources, and reads them back with their versions', async () => {
    expect(await put('b', '')).toMatchObject({ ok: true, version: 1 });
    const before = await state();
    expect(await put('c', '')).toEqual({ ok: false, full: 2 });
    expect(await state()).toEqual(before);
    const all = await store.readAll();
    expect(all.seq).toBe(first + 3);
    expect(all.resources.map((resource) => [resource.field, resource.version]).sort()).toEqual([
      ['partners/a', 3],
      ['partners/b', 1],
    ]);
  });

  it('records every change in the audit, newest first', async () => {
    const page = await store.auditPage({ count: 10, keep: () => true, scanLimit: 100 });
    expect(page.entries.map((entry) => [entry.action, entry.name, entry.tenant, entry.version, entry.seq])).toEqual([
      ['create', 'b', '', 1, first + 3],
      ['replace', 'a', 'acme', 3, first + 2],
      ['replace', 'a', 'acme', 2, first + 1],
      ['create', 'a', 'acme', 1, first],
    ]);
    expect(page.next).toBeUndefined();
    const firstPage = await store.auditPage({ count: 2, keep: () => true, scanLimit: 100 });
    const second = await store.auditPage({ before: firstPage.next as string, count: 2, keep: () => true, scanLimit: 100 });
    expect([...firstPage.entries, ...second.entries].map((entry) => entry.seq)).toEqual([first + 3, first + 2, first + 1, first]);
  });
});
