// The admin API (/admin/v1) on one gateway: create, read, replace and delete partners, issuers
// and API keys with versions and If-Match; every change in the audit, newest first; a refused
// write (bad field, stale version, too large, not allowed) changes nothing in Redis; a tenant
// admin reaches its tenant only; configured partners show as read-only.
import { generateKeyPairSync, type JsonWebKey } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlKeys } from '../src/store/control/control-keys.ts';
import { adminCall, violatedFields } from './support/admin-client.ts';
import { startTestGateway, type TestGateway } from './support/harness.ts';
import { createTestIssuer, createTestPartner, TEST_AUDIENCE, type TestIssuer } from './support/identity.ts';

const partnerKey = (): JsonWebKey => generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }) as JsonWebKey;

/** The versions hash without the write script's call memo (`__call:`/`__reply:`, which lets a re-sent call answer without running twice). */
const withoutCallMemo = (hash: Record<string, string>): Record<string, string> => Object.fromEntries(Object.entries(hash).filter(([field]) => !field.startsWith('__')));

describe('admin API /admin/v1', () => {
  let gw: TestGateway;
  let issuer: TestIssuer;
  let platform: string;
  let tenantAdmin: string;
  let reader: string;
  const configured = createTestPartner('configured-partner');

  /** The control plane's whole state in Redis: what a refused write must leave as it was. */
  const controlState = async (): Promise<unknown> => {
    const keys = controlKeys(gw.prefix);
    return [await gw.redis.hgetall(keys.resources), withoutCallMemo(await gw.redis.hgetall(keys.versions)), await gw.redis.get(keys.sequence), await gw.redis.xlen(keys.audit)];
  };

  beforeAll(async () => {
    issuer = await createTestIssuer();
    gw = await startTestGateway({ name: 'admin-api', config: { auth: { enabled: true, issuers: [issuer.config], partners: [configured.config] } } });
    platform = await issuer.token({ scope: 'a2a:admin a2a:platform', sub: 'root' });
    tenantAdmin = await issuer.token({ scope: 'a2a:admin', sub: 'acme-admin', tenant: 'acme' });
    reader = await issuer.token({ scope: 'a2a:read', sub: 'reader' });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('needs credentials and a2a:admin', async () => {
    expect((await adminCall(gw.url, 'GET', '/partners')).status).toBe(401);
    const refused = await adminCall(gw.url, 'GET', '/partners', { token: reader });
    expect(refused.status).toBe(403);
    expect(JSON.stringify(refused.body)).toContain('a2a:admin');
  });

  it('creates, reads, replaces and deletes a partner, with versions and If-Match', async () => {
    const spec = { keys: [{ keyId: 'p1-key', publicKey: partnerKey() }], scopes: ['a2a:read'] };
    const created = await adminCall(gw.url, 'PUT', '/partners/p1', { token: platform, body: spec });
    expect(created.status).toBe(201);
    expect(created.headers.get('etag')).toBe('"1"');
    expect(created.body).toMatchObject({ name: 'p1', id: 'p1', version: 1, source: 'store', tenant: '', scopes: ['a2a:read'] });

    const read = await adminCall(gw.url, 'GET', '/partners/p1', { token: platform });
    expect(read.status).toBe(200);
    expect(read.headers.get('etag')).toBe('"1"');

    const replaced = await adminCall(gw.url, 'PUT', '/partners/p1', { token: platform, body: { ...spec, scopes: ['a2a:read', 'a2a:write'] }, headers: { 'If-Match': '"1"' } });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ version: 2, scopes: ['a2a:read', 'a2a:write'] });

    const before = await controlState();
    const stale = await adminCall(gw.url, 'PUT', '/partners/p1', { token: platform, body: spec, headers: { 'If-Match': '"1"' } });
    expect(stale.status).toBe(412);
    expect(JSON.stringify(stale.body)).toContain('version 2');
    expect((await adminCall(gw.url, 'DELETE', '/partners/p1', { token: platform, headers: { 'If-Match': '"1"' } })).status).toBe(412);
    expect((await adminCall(gw.url, 'PUT', '/partners/p1', { token: platform, body: spec, headers: { 'If-None-Match': '*' } })).status).toBe(412);
    expect(await controlState()).toEqual(before);

    const listed = await adminCall(gw.url, 'GET', '/partners', { token: platform });
    expect((listed.body.items as { name: string; source: string }[]).map((item) => [item.name, item.source])).toEqual([
      ['configured-partner', 'config'],
      ['p1', 'store'],
    ]);

    expect((await adminCall(gw.url, 'DELETE', '/partners/p1', { token: platform, headers: { 'If-Match': '"2"' } })).status).toBe(204);
    expect((await adminCall(gw.url, 'GET', '/partners/p1', { token: platform })).status).toBe(404);
    expect((await adminCall(gw.url, 'DELETE', '/partners/p1', { token: platform })).status).toBe(404);
    // Re-created, it goes on from the deleted version: an If-Match of the old life never matches it.
    const again = await adminCall(gw.url, 'PUT', '/partners/p1', { token: platform, body: spec });
    expect(again.body.version).toBe(4);
  });

  it('refuses bad input naming the field, and changes nothing', async () => {
    const before = await controlState();
    const noKeys = await adminCall(gw.url, 'PUT', '/partners/bad', { token: platform, body: { scopes: ['a2a:read'] } });
    expect(noKeys.status).toBe(400);
    expect(violatedFields(noKeys.body)).toContain('keys');
    const badScope = await adminCall(gw.url, 'PUT', '/partners/bad', { token: platform, body: { keys: [{ keyId: 'k', publicKey: partnerKey() }], scopes: ['a2a:everything'] } });
    expect(violatedFields(badScope.body)).toEqual(['scopes.0']);
    const notAKey = await adminCall(gw.url, 'PUT', '/partners/bad', { token: platform, body: { keys: [{ keyId: 'k', publicKey: { kty: 'OKP', crv: 'Ed25519', x: 'nope' } }], scopes: ['a2a:read'] } });
    expect(violatedFields(notAKey.body)).toEqual(['keys.0.publicKey']);
    const otherId = await adminCall(gw.url, 'PUT', '/partners/bad', { token: platform, body: { id: 'other', keys: [{ keyId: 'k', publicKey: partnerKey() }], scopes: ['a2a:read'] } });
    expect(violatedFields(otherId.body)).toEqual(['id']);
    const fileIssuer = await adminCall(gw.url, 'PUT', '/issuers/bad', { token: platform, body: { issuer: 'https://x.example', audience: 'a', jwksFile: '/etc/passwd' } });
    expect(fileIssuer.status).toBe(400);
    expect(violatedFields(fileIssuer.body)).toContain('jwksFile');
    const badName = await adminCall(gw.url, 'PUT', '/partners/a%20b', { token: platform, body: {} });
    expect(violatedFields(badName.body)).toEqual(['name']);
    const notJson = await adminCall(gw.url, 'PUT', '/partners/bad', { token: platform, body: '{"keys": [' });
    expect(notJson.status).toBe(400);
    const tooLarge = await adminCall(gw.url, 'PUT', '/partners/bad', { token: platform, body: { scopes: ['a2a:read'], padding: 'x'.repeat(70_000) } });
    expect(tooLarge.status).toBe(413);
    const clash = await adminCall(gw.url, 'PUT', '/partners/bad', { token: platform, body: { keys: [{ keyId: 'configured-partner-key-1', publicKey: partnerKey() }], scopes: ['a2a:read'] } });
    expect(clash.status).toBe(409);
    expect(violatedFields(clash.body)).toEqual(['keys.0.keyId']);
    expect((await adminCall(gw.url, 'GET', '/gadgets', { token: platform })).status).toBe(404);
    expect(await controlState()).toEqual(before);
  });

  it('shows configured partners read-only', async () => {
    const shown = await adminCall(gw.url, 'GET', '/partners/configured-partner', { token: platform });
    expect(shown.status).toBe(200);
    expect(shown.body).toMatchObject({ source: 'config', version: 0 });
    expect(shown.headers.get('etag')).toBeNull();
    const before = await controlState();
    expect((await adminCall(gw.url, 'PUT', '/partners/configured-partner', { token: platform, body: { keys: [{ keyId: 'x', publicKey: partnerKey() }], scopes: ['a2a:read'] } })).status).toBe(409);
    expect((await adminCall(gw.url, 'DELETE', '/partners/configured-partner', { token: platform })).status).toBe(409);
    expect(await controlState()).toEqual(before);
  });

  it('trusts an issuer added through the API at once, and no more once deleted', async () => {
    const second = await createTestIssuer();
    const token = await second.token({ iss: 'https://second.example', scope: 'a2a:read' });
    const listTasks = async (): Promise<number> => (await fetch(`${gw.restUrl}/tasks`, { headers: { Authorization: `Bearer ${token}`, 'A2A-Version': '1.0' } })).status;
    expect(await listTasks()).toBe(401);
    const { id: _id, ...config } = second.config;
    const created = await adminCall(gw.url, 'PUT', '/issuers/second', { token: platform, body: { ...config, issuer: 'https://second.example', audience: TEST_AUDIENCE } });
    expect(created.status).toBe(201);
    expect(await listTasks()).toBe(200);
    expect((await adminCall(gw.url, 'DELETE', '/issuers/second', { token: platform })).status).toBe(204);
    expect(await listTasks()).toBe(401);
  });

  it('limits a tenant admin to its tenant', async () => {
    const spec = { keys: [{ keyId: 'acme-p-key', publicKey: partnerKey() }], scopes: ['a2a:read'] };
    const own = await adminCall(gw.url, 'PUT', '/partners/acme-p', { token: tenantAdmin, body: spec });
    expect(own.status).toBe(201);
    expect(own.body.tenant).toBe('acme');
    const before = await controlState();
    const elsewhere = await adminCall(gw.url, 'PUT', '/partners/other-p', { token: tenantAdmin, body: { ...spec, keys: [{ keyId: 'o', publicKey: partnerKey() }], tenant: 'other' } });
    expect(elsewhere.status).toBe(403);
    const stronger = await adminCall(gw.url, 'POST', '/api-keys', { token: tenantAdmin, body: { owner: 'x', scopes: ['a2a:platform'], expiresAt: new Date(Date.now() + 3600_000).toISOString() } });
    expect(stronger.status).toBe(403);
    expect((await adminCall(gw.url, 'GET', '/issuers', { token: tenantAdmin })).status).toBe(403);
    // The platform's partner p1 (default tenant) is invisible to it: not listed, not found, not replaceable.
    expect((await adminCall(gw.url, 'GET', '/partners/p1', { token: tenantAdmin })).status).toBe(404);
    expect((await adminCall(gw.url, 'PUT', '/partners/p1', { token: tenantAdmin, body: { ...spec, keys: [{ keyId: 'p', publicKey: partnerKey() }] } })).status).toBe(404);
    expect((await adminCall(gw.url, 'DELETE', '/partners/p1', { token: tenantAdmin })).status).toBe(404);
    expect(await controlState()).toEqual(before);
    const listed = await adminCall(gw.url, 'GET', '/partners', { token: tenantAdmin });
    expect((listed.body.items as { name: string }[]).map((item) => item.name)).toEqual(['acme-p']);
    const audit = await adminCall(gw.url, 'GET', '/audit', { token: tenantAdmin });
    expect((audit.body.items as { name: string; tenant: string }[]).every((entry) => entry.tenant === 'acme')).toBe(true);
    expect((audit.body.items as { name: string }[]).map((entry) => entry.name)).toEqual(['acme-p']);
  });

  it('lists every change in the audit, newest first, in pages', async () => {
    const first = await adminCall(gw.url, 'GET', '/audit?pageSize=3', { token: platform });
    expect(first.status).toBe(200);
    const items = first.body.items as { actor: string; action: string; kind: string; name: string; version: number }[];
    expect(items.map((entry) => [entry.action, entry.kind, entry.name, entry.version])).toEqual([
      ['create', 'partners', 'acme-p', 1],
      ['delete', 'issuers', 'second', 2],
      ['create', 'issuers', 'second', 1],
    ]);
    expect(items[0]?.actor).toBe('user:test:acme-admin (tenant acme)');
    const all: { action: string; name: string }[] = [...items];
    let token = first.body.nextPageToken as string | undefined;
    while (token !== undefined) {
      const page = await adminCall(gw.url, 'GET', `/audit?pageSize=3&pageToken=${encodeURIComponent(token)}`, { token: platform });
      all.push(...(page.body.items as { action: string; name: string }[]));
      token = page.body.nextPageToken as string | undefined;
    }
    expect(all.map((entry) => `${entry.action} ${entry.name}`)).toEqual([
      'create acme-p',
      'delete second',
      'create second',
      'create p1',
      'delete p1',
      'replace p1',
      'create p1',
    ]);
    expect((await adminCall(gw.url, 'GET', '/audit?pageSize=0', { token: platform })).status).toBe(400);
  });
});
