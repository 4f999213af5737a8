// A partner's keyId and an issuer's `iss` are unique across the control plane, and the check
// is the write script's own: two gateways whose views do not yet hold each other's write (they
// wrote at the same moment) cannot both take one. Here the second writer's view is held back
// on purpose, so only the script can refuse it; the refusal names the field and changes nothing.
import { generateKeyPairSync, type JsonWebKey } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { adminCallerOf } from '../src/control/admin-caller.ts';
import { ControlService } from '../src/control/control-service.ts';
import { ControlView } from '../src/control/control-view.ts';
import { createLogger } from '../src/logging/logger.ts';
import { A2AError } from '../src/protocol/errors.ts';
import { controlKeys } from '../src/store/control/control-keys.ts';
import { ControlStore } from '../src/store/control/control-store.ts';
import { adoptUnindexedClaims } from '../src/control/resource-claims.ts';
import { deletePrefix, openTestRedis, uniquePrefix } from './support/harness.ts';

const partnerKey = (): JsonWebKey => generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }) as JsonWebKey;
const configured = { partners: [], issuers: [] };

describe('unique keyIds and issuers, checked by the write script', () => {
  const prefix = uniquePrefix('control-claims');
  const redis = openTestRedis();
  const limits = { auditKept: 100, maxResources: 100 };
  const keys = controlKeys(prefix);
  const caller = adminCallerOf(undefined);
  /** A gateway's control service whose view never reloads on its own: it holds what it read when made. */
  const frozenService = async (): Promise<{ service: ControlService; view: ControlView }> => {
    const store = new ControlStore(redis, prefix, limits);
    const view = new ControlView(store, createLogger('silent'));
    await view.refresh();
    return { service: new ControlService({ store, view }, configured), view };
  };
  const refusal = async (write: Promise<unknown>): Promise<A2AError> => {
    const error = await write.then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(A2AError);
    return error as A2AError;
  };
  const state = async (): Promise<unknown> => [await redis.hgetall(keys.resources), await redis.get(keys.sequence), await redis.xlen(keys.audit), await redis.hgetall(keys.claims)];

  afterAll(async () => {
    await deletePrefix(redis, prefix);
    await redis.quit();
  });

  it('refuses a keyId another partner took after the writer last looked', async () => {
    const a = await frozenService();
    const b = await frozenService();
    // B's view stays as it was before A's write: its own check sees no clash.
    b.view.refresh = () => Promise.resolve();
    await a.service.put(caller, 'partners', 'first', { keys: [{ keyId: 'shared-key', publicKey: partnerKey() }], scopes: ['a2a:read'] }, { any: true });
    const before = await state();
    const error = await refusal(b.service.put(caller, 'partners', 'second', { keys: [{ keyId: 'own', publicKey: partnerKey() }, { keyId: 'shared-key', publicKey: partnerKey() }], scopes: ['a2a:read'] }, { any: true }));
    expect(error.kind).toBe('ALREADY_EXISTS');
    expect(error.message).toContain('partner first');
    expect(error.violations.map((violation) => violation.field)).toEqual(['keys.1.keyId']);
    expect(await state()).toEqual(before);
  });

  it('refuses an iss another issuer took after the writer last looked', async () => {
    const a = await frozenService();
    const b = await frozenService();
    b.view.refresh = () => Promise.resolve();
    await a.service.put(caller, 'issuers', 'idp-a', { issuer: 'https://idp.example', audience: 'a2a' }, { any: true });
    const before = await state();
    const error = await refusal(b.service.put(caller, 'issuers', 'idp-b', { issuer: 'https://idp.example', audience: 'a2a' }, { any: true }));
    expect(error.violations.map((violation) => violation.field)).toEqual(['issuer']);
    expect(error.message).toContain('idp-a');
    expect(await state()).toEqual(before);
  });

  it('releases what a replaced or deleted resource held', async () => {
    const { service } = await frozenService();
    // first gives up shared-key: it is free for another partner at once.
    await service.put(caller, 'partners', 'first', { keys: [{ keyId: 'moved', publicKey: partnerKey() }], scopes: ['a2a:read'] }, { any: true });
    await service.put(caller, 'partners', 'third', { keys: [{ keyId: 'shared-key', publicKey: partnerKey() }], scopes: ['a2a:read'] }, { any: true });
    await service.remove(caller, 'issuers', 'idp-a', { any: true });
    await service.put(caller, 'issuers', 'idp-b', { issuer: 'https://idp.example', audience: 'a2a' }, { any: true });
    // A resource keeps its own claims when written again.
    await service.put(caller, 'issuers', 'idp-b', { issuer: 'https://idp.example', audience: ['a2a', 'other'] }, { any: true });
    expect(await redis.hgetall(keys.claims)).toEqual({
      'partner-key:"moved"': 'partners/first',
      'partner-key:"shared-key"': 'partners/third',
      'issuer:"https://idp.example"': 'issuers/idp-b',
    });
  });

  it('lets exactly one of many simultaneous writers take a keyId', async () => {
    const writers = await Promise.all([frozenService(), frozenService(), frozenService(), frozenService()]);
    const outcomes = await Promise.allSettled(
      writers.map(({ service }, index) => service.put(caller, 'partners', `racer-${index}`, { keys: [{ keyId: 'contested', publicKey: partnerKey() }], scopes: ['a2a:read'] }, { any: true })),
    );
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
    for (const outcome of outcomes) if (outcome.status === 'rejected') expect((outcome.reason as A2AError).kind).toBe('ALREADY_EXISTS');
  });

  it('indexes a partner stored before the index existed, so its keyId is checked by the script too', async () => {
    const store = new ControlStore(redis, prefix, limits);
    // A gateway whose view was loaded before the old partners were read: only the script can refuse for it.
    const b = await frozenService();
    b.view.refresh = () => Promise.resolve();
    const legacy = (name: string, keyId: string): string =>
      JSON.stringify({ kind: 'partners', name, tenant: '', spec: { id: name, keys: [{ keyId, publicKey: partnerKey() }], scopes: ['a2a:read'], tenant: '' }, updatedAt: '', updatedBy: 't' });
    // As an older version wrote them: in the resources hash, nothing in the index.
    await redis.hset(keys.resources, 'partners/old', legacy('old', 'old-key'));
    await redis.hset(keys.resources, 'partners/moving', legacy('moving', 'new-key'));
    // A resource changed since it was read is not indexed under what it held then.
    await store.adoptClaims([{ field: 'partners/moving', json: legacy('moving', 'stale-key'), claims: ['partner-key:"stale-key"'] }]);
    expect(await redis.hget(keys.claims, 'partner-key:"stale-key"')).toBeNull();

    await adoptUnindexedClaims(store);
    expect(await redis.hget(keys.claims, 'partner-key:"old-key"')).toBe('partners/old');
    expect(await redis.hget(keys.claims, 'partner-key:"new-key"')).toBe('partners/moving');
    const error = await refusal(b.service.put(caller, 'partners', 'newcomer', { keys: [{ keyId: 'old-key', publicKey: partnerKey() }], scopes: ['a2a:read'] }, { any: true }));
    expect(error.violations.map((violation) => violation.field)).toEqual(['keys.0.keyId']);
    expect(error.message).toContain('partner old');
  });
});
