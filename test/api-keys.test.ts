// API keys: made by the admin API, shown once, stored only as a digest; presented in X-API-Key
// they authenticate like a token (scopes, tenant, owner); a revoked or expired key is refused;
// a key beside another credential is ambiguous; the agent card declares the scheme.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeyVerifier, digestOfKey, newApiKey } from '../src/control/api-keys.ts';
import type { ControlView } from '../src/control/control-view.ts';
import type { ControlResource } from '../src/control/resource.ts';
import { A2AError } from '../src/protocol/errors.ts';
import { controlKeys } from '../src/store/control/control-keys.ts';
import { adminCall } from './support/admin-client.ts';
import { startTestGateway, textMessage, type TestGateway } from './support/harness.ts';
import { createTestIssuer } from './support/identity.ts';

const inAnHour = (): string => new Date(Date.now() + 3600_000).toISOString();

describe('API keys through a gateway', () => {
  let gw: TestGateway;
  let platform: string;

  beforeAll(async () => {
    const issuer = await createTestIssuer();
    gw = await startTestGateway({ name: 'api-keys', config: { auth: { enabled: true, issuers: [issuer.config] } } });
    platform = await issuer.token({ scope: 'a2a:admin a2a:platform', sub: 'root' });
  });
  afterAll(async () => {
    await gw?.close();
  });

  const withKey = (key: string, extra: Record<string, string> = {}): Record<string, string> => ({ 'X-API-Key': key, 'A2A-Version': '1.0', ...extra });

  it('shows the key once, stores only its digest, and authenticates it with its scopes and owner', async () => {
    const created = await adminCall(gw.url, 'POST', '/api-keys', { token: platform, body: { owner: 'billing-bot', tenant: 'acme', scopes: ['a2a:read', 'a2a:write'], expiresAt: inAnHour() } });
    expect(created.status).toBe(201);
    const key = created.body.key as string;
    const name = created.body.name as string;
    expect(key).toMatch(new RegExp(`^a2ak_${name}_[A-Za-z0-9_-]{43}$`));
    expect(created.headers.get('location')).toBe(`/admin/v1/api-keys/${name}`);
    expect(created.body).not.toHaveProperty('keyHash');

    const shown = await adminCall(gw.url, 'GET', `/api-keys/${name}`, { token: platform });
    expect(shown.body).toMatchObject({ owner: 'billing-bot', tenant: 'acme', scopes: ['a2a:read', 'a2a:write'], version: 1 });
    expect(shown.body).not.toHaveProperty('key');
    expect(shown.body).not.toHaveProperty('keyHash');
    const stored = JSON.stringify(await gw.redis.hgetall(controlKeys(gw.prefix).resources));
    expect(stored).not.toContain(key);
    expect(stored).toContain(digestOfKey(key));

    const sent = await fetch(`${gw.restUrl}/message:send`, { method: 'POST', headers: withKey(key, { 'Content-Type': 'application/json' }), body: JSON.stringify({ message: textMessage('hi') }) });
    expect(sent.status).toBe(200);
    const task = ((await sent.json()) as { task: { id: string; contextId: string } }).task;
    const taskHash = await gw.redis.hgetall(gw.gateway.store.keys.task(task.id).task);
    expect(decodeURIComponent(taskHash.owner ?? '')).toBe('default/acme/key:billing-bot');
    expect(taskHash.tenant).toBe('acme');

    // a2a:read and a2a:write only: the operator's views stay closed.
    const operator = await fetch(`${gw.url}/admin/v1/partners`, { headers: withKey(key) });
    expect(operator.status).toBe(403);
  });

  it('refuses an unknown or tampered key, and a key beside another credential', async () => {
    const created = await adminCall(gw.url, 'POST', '/api-keys', { token: platform, body: { owner: 'o', scopes: ['a2a:read'], expiresAt: inAnHour() } });
    const key = created.body.key as string;
    expect((await fetch(`${gw.restUrl}/tasks`, { headers: withKey(key) })).status).toBe(200);
    const tampered = `${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`;
    const refused = await fetch(`${gw.restUrl}/tasks`, { headers: withKey(tampered) });
    expect(refused.status).toBe(401);
    expect(await refused.text()).toContain('API_KEY_INVALID');
    expect((await fetch(`${gw.restUrl}/tasks`, { headers: withKey('a2ak_nobody_secret') })).status).toBe(401);
    expect((await fetch(`${gw.restUrl}/tasks`, { headers: withKey('not-a-key') })).status).toBe(401);
    const both = await fetch(`${gw.restUrl}/tasks`, { headers: withKey(key, { Authorization: `Bearer ${platform}` }) });
    expect(both.status).toBe(400);
  });

  it('is refused from the moment it is revoked', async () => {
    const created = await adminCall(gw.url, 'POST', '/api-keys', { token: platform, body: { owner: 'temp', scopes: ['a2a:read'], expiresAt: inAnHour() } });
    const key = created.body.key as string;
    expect((await fetch(`${gw.restUrl}/tasks`, { headers: withKey(key) })).status).toBe(200);
    expect((await adminCall(gw.url, 'DELETE', `/api-keys/${created.body.name as string}`, { token: platform })).status).toBe(204);
    expect((await fetch(`${gw.restUrl}/tasks`, { headers: withKey(key) })).status).toBe(401);
  });

  it('keeps the secret when an admin replaces what the key may do', async () => {
    const created = await adminCall(gw.url, 'PUT', '/api-keys/ci-runner', { token: platform, body: { owner: 'ci', scopes: ['a2a:read'], expiresAt: inAnHour() } });
    expect(created.status).toBe(201);
    const key = created.body.key as string;
    const replaced = await adminCall(gw.url, 'PUT', '/api-keys/ci-runner', { token: platform, body: { owner: 'ci', scopes: ['a2a:read', 'a2a:write'], expiresAt: inAnHour() }, headers: { 'If-Match': '"1"' } });
    expect(replaced.status).toBe(200);
    expect(replaced.body).not.toHaveProperty('key');
    expect((await fetch(`${gw.restUrl}/tasks`, { headers: withKey(key) })).status).toBe(200);
  });

  it('refuses a key without an expiry or with one in the past', async () => {
    const missing = await adminCall(gw.url, 'POST', '/api-keys', { token: platform, body: { owner: 'o', scopes: ['a2a:read'] } });
    expect(missing.status).toBe(400);
    const past = await adminCall(gw.url, 'POST', '/api-keys', { token: platform, body: { owner: 'o', scopes: ['a2a:read'], expiresAt: '2020-01-01T00:00:00Z' } });
    expect(past.status).toBe(400);
    expect(JSON.stringify(past.body)).toContain('expiresAt');
  });

  it('is declared on the agent card', async () => {
    const card = (await (await fetch(`${gw.url}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })).json()) as {
      securitySchemes: Record<string, { apiKeySecurityScheme?: { name: string; location: string } }>;
      securityRequirements: { schemes: Record<string, unknown> }[];
    };
    expect(card.securitySchemes.apiKey?.apiKeySecurityScheme).toMatchObject({ name: 'X-API-Key', location: 'header' });
    expect(card.securityRequirements).toContainEqual({ schemes: { apiKey: { list: [] } } });
    // The 0.3 form, for clients that name that version.
    const legacy = (await (await fetch(`${gw.url}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '0.3' } })).json()) as { securitySchemes: Record<string, unknown> };
    expect(legacy.securitySchemes.apiKey).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-API-Key' });
  });
});

describe('ApiKeyVerifier', () => {
  const made = newApiKey('k1');
  const resource: ControlResource<'api-keys'> = {
    kind: 'api-keys',
    name: 'k1',
    version: 1,
    tenant: 't',
    spec: { owner: 'bob', tenant: 't', scopes: ['a2a:read', 'agent:x'], expiresAt: '2030-01-01T00:00:00.000Z', keyHash: made.keyHash },
    updatedAt: '',
    updatedBy: '',
  };
  const view = { get: (kind: string, name: string) => (kind === 'api-keys' && name === 'k1' ? resource : undefined) } as unknown as ControlView;

  it('makes the principal of a valid key', () => {
    const principal = new ApiKeyVerifier(view, () => Date.parse('2029-12-31T23:59:59Z')).verify(made.key);
    expect(principal).toMatchObject({ tenant: 't', subject: 'key:bob', method: 'api-key' });
    expect([...principal.scopes]).toEqual(['a2a:read']);
    expect(principal.grants.has('agent:x')).toBe(true);
  });

  it('refuses it once expired', () => {
    const verify = (): unknown => new ApiKeyVerifier(view, () => Date.parse('2030-01-01T00:00:00Z')).verify(made.key);
    expect(verify).toThrow(A2AError);
    expect(verify).toThrow(/expired/);
  });
});
