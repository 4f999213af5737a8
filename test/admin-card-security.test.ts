// The agent cards follow the issuers written through the admin API while the gateway runs: an
// issuer configured by its URL alone is declared as an OpenID Connect scheme on every card
// (the root one, a configured agent's, one written through the API) as soon as its write is
// answered, and goes when it is deleted. The API-key and partner-signature schemes are declared
// from the start, since a key or a partner may be added at any time.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCall } from './support/admin-client.ts';
import { startTestGateway, type TestGateway } from './support/harness.ts';
import { createTestIssuer } from './support/identity.ts';
import { startTestOidcProvider, type TestOidcProvider } from './support/oidc-provider.ts';

interface CardSecurity {
  securitySchemes: Record<string, Record<string, { openIdConnectUrl?: string }>>;
  securityRequirements: { schemes: Record<string, unknown> }[];
}

describe('card security after an issuer change through the admin API', () => {
  let gw: TestGateway;
  let idp: TestOidcProvider;
  let admin: string;
  let user: string;
  const cardPaths = ['', '/agents/main', '/agents/stored'];

  const cardAt = async (path: string): Promise<CardSecurity & { etag: string | null }> => {
    const response = await fetch(`${gw.url}${path}/.well-known/agent-card.json`);
    expect(response.status).toBe(200);
    return { ...((await response.json()) as CardSecurity), etag: response.headers.get('etag') };
  };
  const extendedCard = async (): Promise<CardSecurity> => {
    const response = await fetch(`${gw.url}/agents/main/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${user}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetExtendedAgentCard', params: {} }),
    });
    return ((await response.json()) as { result: CardSecurity }).result;
  };

  beforeAll(async () => {
    idp = await startTestOidcProvider();
    const issuer = await createTestIssuer();
    admin = await issuer.token({ scope: 'a2a:admin a2a:platform', sub: 'root' });
    user = await issuer.token({ scope: 'a2a:read a2a:write', sub: 'alice' });
    gw = await startTestGateway({
      name: 'admin-card-security',
      config: { auth: { enabled: true, issuers: [issuer.config] }, agents: { main: { adapter: 'demo', adapterOptions: { stepMs: 20 } } } },
    });
    expect((await adminCall(gw.url, 'PUT', '/agents/stored', { token: admin, body: { adapter: 'demo', card: { name: 'Stored' } } })).status).toBe(201);
  });
  afterAll(async () => {
    await gw?.close();
    await idp?.close();
  });

  it('declares API keys and partner signatures from the start', async () => {
    for (const path of cardPaths) {
      const card = await cardAt(path);
      expect(Object.keys(card.securitySchemes).sort()).toEqual(['apiKey', 'bearer', 'partnerSignature']);
    }
  });

  it('declares a stored issuer found by discovery on every card once its write is answered, and drops it on delete', async () => {
    const before = await cardAt('');
    const put = await adminCall(gw.url, 'PUT', '/issuers/corp-idp', { token: admin, body: { issuer: idp.issuer, audience: 'a2a', algorithms: ['ES256'] } });
    expect(put.status).toBe(201);
    for (const path of cardPaths) {
      const card = await cardAt(path);
      expect(card.securitySchemes['oidc-corp-idp']?.openIdConnectSecurityScheme?.openIdConnectUrl, `the card at ${path || '/'}`).toBe(idp.discoveryUrl);
      expect(card.securityRequirements.map((requirement) => Object.keys(requirement.schemes)[0])).toContain('oidc-corp-idp');
    }
    // A new card, so a client revalidating its cached copy gets it.
    expect((await cardAt('')).etag).not.toBe(before.etag);
    expect(Object.keys((await extendedCard()).securitySchemes)).toContain('oidc-corp-idp');

    expect((await adminCall(gw.url, 'DELETE', '/issuers/corp-idp', { token: admin })).status).toBe(204);
    for (const path of cardPaths) expect(Object.keys((await cardAt(path)).securitySchemes).sort()).toEqual(['apiKey', 'bearer', 'partnerSignature']);
    expect(Object.keys((await extendedCard()).securitySchemes)).not.toContain('oidc-corp-idp');
  });

  it('leaves the cards alone when an issuer with keys of its own changes (it declares no scheme)', async () => {
    const before = await cardAt('/agents/main');
    expect((await adminCall(gw.url, 'PUT', '/issuers/static-idp', { token: admin, body: { issuer: 'https://static.example', audience: 'a2a', jwksUri: 'https://static.example/jwks' } })).status).toBe(201);
    expect((await cardAt('/agents/main')).etag).toBe(before.etag);
  });
});
