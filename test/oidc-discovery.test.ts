// Issuers configured by their URL alone: discovered through OpenID Connect discovery, their
// keys fetched from the jwks_uri the document names and refreshed on rotation, every fetch
// bounded, failures logged once per change and shown on /readyz to a platform operator, the
// card declaring each as an OpenID Connect scheme, and the issuer set replaceable at run time.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { JwtVerifier, type IssuerStatus, type JwtVerifierOptions } from '../src/auth/jwt/jwt-verifier.ts';
import { A2AError } from '../src/protocol/errors.ts';
import { configSchema, type IssuerConfig } from '../src/config/schema.ts';
import { createLogger } from '../src/logging/logger.ts';
import { captureLogLines, type LogLine } from './support/log-capture.ts';
import { rpc, startTestGateway, waitFor, type TestGateway } from './support/harness.ts';
import { startTestOidcProvider, type TestOidcProvider } from './support/oidc-provider.ts';

const AUDIENCE = 'a2a-gateway-oidc-test';

/** Issuer settings as the configuration file holds them, validated (defaults filled in). */
const issuersOf = (raw: Record<string, unknown>[]): IssuerConfig[] => configSchema.parse({ auth: { issuers: raw } }).auth.issuers;
const discovered = (id: string, provider: TestOidcProvider): Record<string, unknown> => ({ id, issuer: provider.issuer, audience: AUDIENCE, algorithms: ['ES256'] });

const verifiers: JwtVerifier[] = [];
function verifierOf(issuers: IssuerConfig[], options: Partial<JwtVerifierOptions> = {}): JwtVerifier {
  const verifier = new JwtVerifier({ issuers, clockToleranceSeconds: 5, jwksCacheSeconds: 600, baseDir: '.', ...options });
  verifiers.push(verifier);
  return verifier;
}
afterEach(() => {
  for (const verifier of verifiers.splice(0)) verifier.close();
});

const providers: TestOidcProvider[] = [];
async function provider(): Promise<TestOidcProvider> {
  const started = await startTestOidcProvider();
  providers.push(started);
  return started;
}
afterAll(async () => {
  await Promise.all(providers.map((p) => p.close()));
});

/** The verification's refusal: its reason and its status. */
async function refusal(verifier: JwtVerifier, token: string): Promise<{ reason: string | undefined; code: string; challenge: string | undefined }> {
  try {
    await verifier.verify(token);
  } catch (error) {
    if (!(error instanceof A2AError)) throw error;
    return { reason: error.metadata.reason, code: error.kind, challenge: error.extraHeaders['WWW-Authenticate'] };
  }
  throw new Error('the token was accepted');
}

const statusOf = (verifier: JwtVerifier, id: string): IssuerStatus => {
  const found = verifier.issuerStatus().find((status) => status.id === id);
  if (found === undefined) throw new Error(`no issuer ${id}`);
  return found;
};

const settled = (verifier: JwtVerifier, id: string, state: IssuerStatus['state']): Promise<IssuerStatus> =>
  waitFor(() => {
    const status = statusOf(verifier, id);
    return status.state === state ? status : undefined;
  }, 10_000, `issuer ${id} ${state}`);

describe('an issuer configured by its URL alone', () => {
  it('is discovered, and its tokens verify with the keys its jwks_uri serves', async () => {
    const idp = await provider();
    const verifier = verifierOf(issuersOf([discovered('corp', idp)]));
    const principal = await verifier.verify(await idp.token({ sub: 'alice', aud: AUDIENCE, scope: 'a2a:read' }));
    expect(principal.subject).toBe('user:corp:alice');
    expect([...principal.scopes]).toEqual(['a2a:read']);
    const status = await settled(verifier, 'corp', 'ok');
    expect(status).toMatchObject({ keys: 'discovery', discovery: { state: 'ok', url: idp.discoveryUrl, jwksUri: idp.jwksUri }, jwks: { state: 'ok', keys: 1 } });
    // A token of another issuer's URL is still nobody's.
    expect((await refusal(verifier, await idp.token({ sub: 'alice', aud: AUDIENCE, iss: 'http://127.0.0.1:1' }))).reason).toBe('UNKNOWN_ISSUER');
  });

  it('accepts a rotated key once its JWKS is refetched for the new kid, within the cooldown rules', async () => {
    const idp = await provider();
    // Cooldown long: an unknown kid right after a fetch is not a reason to fetch again.
    const patient = verifierOf(issuersOf([discovered('corp', idp)]), { jwksCooldownMs: 60_000 });
    // Cooldown spent: an unknown kid refetches at once.
    const eager = verifierOf(issuersOf([discovered('corp', idp)]), { jwksCooldownMs: 0 });
    const first = await idp.token({ sub: 'alice', aud: AUDIENCE });
    await patient.verify(first);
    await eager.verify(first);

    await idp.rotate('key-2', { retire: true });
    const rotated = await idp.token({ sub: 'alice', aud: AUDIENCE });
    const fetchesBefore = idp.hits.jwks;
    expect((await refusal(patient, rotated)).reason).toBe('UNKNOWN_KEY');
    expect(idp.hits.jwks).toBe(fetchesBefore);

    expect((await eager.verify(rotated)).subject).toBe('user:corp:alice');
    expect(idp.hits.jwks).toBe(fetchesBefore + 1);
    // The retired key is gone from the refetched set.
    expect((await refusal(eager, await idp.token({ sub: 'alice', aud: AUDIENCE }, 'key-1'))).reason).toBe('UNKNOWN_KEY');
  });

  it('whose document names another issuer is refused: its tokens get a 401 challenge, one log line says why', async () => {
    const idp = await provider();
    idp.discovery = { kind: 'other-issuer', issuer: 'https://impostor.example' };
    const { lines, destination } = captureLogLines();
    const verifier = verifierOf(issuersOf([discovered('corp', idp)]), { logger: createLogger('info', 'test', destination), issuerRetryMinMs: 50, discoveryRefreshSeconds: 0.2 });
    const refused = await refusal(verifier, await idp.token({ sub: 'alice', aud: AUDIENCE }));
    expect(refused).toMatchObject({ code: 'UNAUTHENTICATED', reason: 'ISSUER_NOT_DISCOVERED' });
    expect(refused.challenge).toMatch(/^Bearer realm="a2a-gateway", error="invalid_token", error_description=".*discover/);
    const status = statusOf(verifier, 'corp');
    expect(status).toMatchObject({ state: 'failing', discovery: { state: 'failing' } });
    expect(status.discovery?.error).toContain('"https://impostor.example", not the configured');
    expect(status.discovery?.error).toContain('equal exactly');
    expect(status.jwks).toBeUndefined();
    // Retried with backoff, but logged once: the state did not change.
    await waitFor(() => (idp.hits.discovery >= 3 ? true : undefined), 10_000, 'retries');
    const failures = (lines as LogLine[]).filter((line) => line.failure === 'issuer-discovery-failed');
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({ issuerId: 'corp', discoveryUrl: idp.discoveryUrl, keepsJwksUri: null });
    // Fixed at the provider: the next attempt discovers it, one line says so.
    idp.discovery = { kind: 'ok' };
    await settled(verifier, 'corp', 'ok');
    expect((await verifier.verify(await idp.token({ sub: 'alice', aud: AUDIENCE }))).subject).toBe('user:corp:alice');
    expect(lines.filter((line) => line.msg === 'issuer discovered again')).toHaveLength(1);
  });

  it('whose discovery fails later keeps verifying with the keys it had', async () => {
    const idp = await provider();
    const verifier = verifierOf(issuersOf([discovered('corp', idp)]), { issuerRetryMinMs: 50, discoveryRefreshSeconds: 0.1 });
    const token = await idp.token({ sub: 'alice', aud: AUDIENCE });
    await verifier.verify(token);
    idp.discovery = { kind: 'down' };
    const failing = await settled(verifier, 'corp', 'failing');
    expect(failing.discovery).toMatchObject({ state: 'failing', jwksUri: idp.jwksUri });
    expect(failing.discovery?.error).toContain('HTTP 503');
    expect((await verifier.verify(token)).subject).toBe('user:corp:alice');
    expect((await verifier.verify(await idp.token({ sub: 'bob', aud: AUDIENCE }))).subject).toBe('user:corp:bob');
  });

  it('follows a jwks_uri that a later discovery names', async () => {
    const idp = await provider();
    const { lines, destination } = captureLogLines();
    const verifier = verifierOf(issuersOf([discovered('corp', idp)]), { logger: createLogger('info', 'test', destination), discoveryRefreshSeconds: 0.1 });
    await verifier.verify(await idp.token({ sub: 'alice', aud: AUDIENCE }));
    // A key added now is not in the set fetched before; within the cooldown only the moved JWKS, fetched anew, has it.
    await idp.rotate('key-2');
    idp.discovery = { kind: 'moved-jwks' };
    await waitFor(() => (statusOf(verifier, 'corp').jwks?.jwksUri === `${idp.issuer}/jwks-moved` ? true : undefined), 10_000, 'the moved jwks_uri');
    expect((await verifier.verify(await idp.token({ sub: 'bob', aud: AUDIENCE }, 'key-2'))).subject).toBe('user:corp:bob');
    expect(idp.hits.movedJwks).toBeGreaterThan(0);
    expect(lines.filter((line) => line.msg === 'issuer names a new jwks_uri')).toHaveLength(1);
  });

  for (const declared of [true, false]) {
    it(`with a discovery document past issuerFetchMaxBytes (${declared ? 'declared' : 'chunked'}) is refused at the bound`, async () => {
      const idp = await provider();
      idp.discovery = { kind: 'oversized', bytes: 2 * 1024 * 1024, declared };
      const verifier = verifierOf(issuersOf([discovered('corp', idp)]), { issuerFetchMaxBytes: 4096 });
      expect((await refusal(verifier, await idp.token({ sub: 'alice', aud: AUDIENCE }))).reason).toBe('ISSUER_NOT_DISCOVERED');
      expect(statusOf(verifier, 'corp').discovery?.error).toMatch(/4096 bytes \(auth\.issuerFetchMaxBytes\)/);
    });
  }

  it('with a discovery document slower than issuerFetchTimeoutMs is cut off at the bound', async () => {
    const idp = await provider();
    idp.discovery = { kind: 'slow', everyMs: 100 };
    const verifier = verifierOf(issuersOf([discovered('corp', idp)]), { issuerFetchTimeoutMs: 300 });
    expect((await refusal(verifier, await idp.token({ sub: 'alice', aud: AUDIENCE }))).reason).toBe('ISSUER_NOT_DISCOVERED');
    expect(statusOf(verifier, 'corp').discovery?.error).toContain('within 300 ms (auth.issuerFetchTimeoutMs)');
  });

  it('reads its JWKS within the same bounds, and serves on with the keys it had while the JWKS fails', async () => {
    const idp = await provider();
    idp.jwks = { kind: 'oversized', bytes: 64 * 1024 };
    const verifier = verifierOf(issuersOf([discovered('corp', idp)]), { issuerFetchMaxBytes: 4096, issuerRetryMinMs: 10, jwksCacheSeconds: 0.05 });
    const token = await idp.token({ sub: 'alice', aud: AUDIENCE });
    // Discovered, but no key set within the bound: an outage (503 with a retry hint), not a bad token.
    expect((await refusal(verifier, token)).code).toBe('UNAVAILABLE');
    expect(statusOf(verifier, 'corp').jwks?.error).toContain('more than 4096 bytes');
    idp.jwks = { kind: 'ok' };
    await waitFor(async () => (await verifier.verify(token).then(() => true, () => undefined)), 5_000, 'the keys');
    // The cache is stale at once and the JWKS now fails: the keys held still verify.
    idp.jwks = { kind: 'down' };
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await verifier.verify(await idp.token({ sub: 'bob', aud: AUDIENCE }))).subject).toBe('user:corp:bob');
    expect(statusOf(verifier, 'corp')).toMatchObject({ state: 'failing', jwks: { state: 'failing', keys: 1 } });
    // A key it never held cannot be told valid or not while the JWKS fails.
    await idp.rotate('key-2');
    expect((await refusal(verifier, await idp.token({ sub: 'bob', aud: AUDIENCE }, 'key-2'))).code).toBe('UNAVAILABLE');
  });

  it('over https may not send its keys to a loopback jwks_uri', async () => {
    const idp = await provider();
    // A public issuer's document (served through a stand-in fetch) naming the local provider's JWKS.
    const fetchStandIn = async (input: string | URL | Request): Promise<Response> => {
      const url = String(input instanceof Request ? input.url : input);
      if (url === 'https://idp.example/.well-known/openid-configuration') return Response.json({ issuer: 'https://idp.example', jwks_uri: idp.jwksUri });
      return fetch(url);
    };
    const verifier = verifierOf(issuersOf([{ id: 'public', issuer: 'https://idp.example', audience: AUDIENCE }]), { fetch: fetchStandIn });
    expect((await refusal(verifier, await idp.token({ sub: 'alice', aud: AUDIENCE, iss: 'https://idp.example' }))).reason).toBe('ISSUER_NOT_DISCOVERED');
    expect(statusOf(verifier, 'public').discovery?.error).toContain('loopback address');
    expect(idp.hits.jwks).toBe(0);
  });

  it('must be an https URL (plain http only on loopback) to be configured without keys', () => {
    expect(() => issuersOf([{ id: 'a', issuer: 'http://idp.example', audience: AUDIENCE }])).toThrow(/must be an https URL/);
    expect(() => issuersOf([{ id: 'a', issuer: 'not a url', audience: AUDIENCE }])).toThrow(/discovered from its URL/);
    expect(() => issuersOf([{ id: 'a', issuer: 'https://idp.example', audience: AUDIENCE, jwksUri: 'https://idp.example/jwks', jwksFile: 'x.json' }])).toThrow(/at most one of/);
    expect(issuersOf([{ id: 'a', issuer: 'https://idp.example/tenant/', audience: AUDIENCE }])[0]?.issuer).toBe('https://idp.example/tenant/');
  });
});

describe('replaceIssuers', () => {
  it('adds and removes issuers at run time, keeping an unchanged issuer as it was', async () => {
    const first = await provider();
    const second = await provider();
    const verifier = verifierOf(issuersOf([discovered('first', first)]), { verifiedTokenCacheEntries: 100 });
    const firstToken = await first.token({ sub: 'alice', aud: AUDIENCE });
    const secondToken = await second.token({ sub: 'bob', aud: AUDIENCE });
    await verifier.verify(firstToken);
    await settled(verifier, 'first', 'ok');
    expect((await refusal(verifier, secondToken)).reason).toBe('UNKNOWN_ISSUER');
    const firstStatus = statusOf(verifier, 'first');
    const firstFetches = { ...first.hits };

    verifier.replaceIssuers(issuersOf([discovered('first', first), discovered('second', second)]));
    expect((await verifier.verify(secondToken)).subject).toBe('user:second:bob');
    expect(verifier.currentIssuers().map((issuer) => issuer.id)).toEqual(['first', 'second']);
    // The unchanged issuer was neither discovered nor fetched again.
    expect(statusOf(verifier, 'first')).toEqual(firstStatus);
    expect(first.hits).toEqual(firstFetches);

    // A set that cannot be used changes nothing.
    expect(() => verifier.replaceIssuers(issuersOf([discovered('first', first), { ...discovered('first', second) }]))).toThrow(/same id "first"/);
    expect(verifier.currentIssuers().map((issuer) => issuer.id)).toEqual(['first', 'second']);

    // Removed: its tokens are refused at once, even one verified (and cached) before.
    verifier.replaceIssuers(issuersOf([discovered('second', second)]));
    expect((await refusal(verifier, firstToken)).reason).toBe('UNKNOWN_ISSUER');
    expect((await verifier.verify(secondToken)).subject).toBe('user:second:bob');
    expect(verifier.openIdConnectIssuers()).toEqual([{ id: 'second', issuer: second.issuer, audience: AUDIENCE, openIdConnectUrl: second.discoveryUrl }]);
  });

  it('starts a changed issuer afresh: a new audience applies to the next token', async () => {
    const idp = await provider();
    const verifier = verifierOf(issuersOf([discovered('corp', idp)]), { verifiedTokenCacheEntries: 100 });
    const token = await idp.token({ sub: 'alice', aud: AUDIENCE });
    await verifier.verify(token);
    verifier.replaceIssuers(issuersOf([{ ...discovered('corp', idp), audience: 'another-audience' }]));
    expect((await refusal(verifier, token)).reason).toBe('WRONG_AUDIENCE');
  });
});

describe('a gateway trusting discovered issuers', () => {
  let gw: TestGateway;
  let good: TestOidcProvider;
  let broken: TestOidcProvider;

  beforeAll(async () => {
    good = await provider();
    broken = await provider();
    broken.discovery = { kind: 'other-issuer', issuer: 'https://elsewhere.example' };
    gw = await startTestGateway({
      name: 'oidc-discovery',
      config: {
        auth: {
          enabled: true,
          issuers: [discovered('corp', good), discovered('partner-idp', broken), { id: 'static', issuer: 'https://static.example', audience: AUDIENCE, jwksUri: 'https://static.example/jwks' }],
        },
      },
    });
  });

  afterAll(async () => {
    await gw?.close();
  });

  const readyz = (token?: string): Promise<Response> => fetch(`${gw.url}/readyz`, token === undefined ? {} : { headers: { Authorization: `Bearer ${token}` } });

  it('serves callers whose tokens its discovered keys verify', async () => {
    const { status, body } = await rpc(gw.jsonRpcUrl, 'ListTasks', {}, { Authorization: `Bearer ${await good.token({ sub: 'alice', aud: AUDIENCE, scope: 'a2a:read' })}` });
    expect(status).toBe(200);
    expect(body.error).toBeUndefined();
  });

  it('refuses tokens of an issuer it could not discover with a 401 challenge', async () => {
    const response = await fetch(gw.jsonRpcUrl, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${await broken.token({ sub: 'mallory', aud: AUDIENCE, scope: 'a2a:read' })}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} }),
    });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);
    expect(JSON.stringify(await response.json())).toContain('ISSUER_NOT_DISCOVERED');
  });

  it('declares each discovered issuer on the card as an OpenID Connect scheme, and keeps the bearer scheme', async () => {
    const card = (await (await fetch(`${gw.url}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })).json()) as {
      securitySchemes: Record<string, Record<string, { openIdConnectUrl?: string; description?: string }>>;
      securityRequirements: { schemes: Record<string, unknown> }[];
    };
    expect(card.securitySchemes['oidc-corp']?.openIdConnectSecurityScheme?.openIdConnectUrl).toBe(good.discoveryUrl);
    expect(card.securitySchemes['oidc-partner-idp']?.openIdConnectSecurityScheme?.openIdConnectUrl).toBe(broken.discoveryUrl);
    expect(card.securitySchemes['oidc-corp']?.openIdConnectSecurityScheme?.description).toContain(AUDIENCE);
    // The issuer with a configured JWKS keeps the plain bearer scheme only; partner signatures and
    // API keys are declared too, since the admin API may register them at any time (docs/admin-api.md).
    expect(Object.keys(card.securitySchemes).sort()).toEqual(['apiKey', 'bearer', 'oidc-corp', 'oidc-partner-idp', 'partnerSignature']);
    expect(card.securityRequirements.map((requirement) => Object.keys(requirement.schemes)[0])).toEqual(['bearer', 'oidc-corp', 'oidc-partner-idp', 'partnerSignature', 'apiKey']);
  });

  it('shows a platform operator on /readyz which issuer fails and why; nobody else', async () => {
    const anonymous = await readyz();
    expect(anonymous.status).toBe(200);
    expect(await anonymous.json()).toEqual({ status: 'ok' });

    const caller = await readyz(await good.token({ sub: 'alice', aud: AUDIENCE, scope: 'a2a:read a2a:admin' }));
    expect(caller.status).toBe(403);
    expect(JSON.stringify(await caller.json())).toContain('a2a:platform');

    const operator = await readyz(await good.token({ sub: 'ops', aud: AUDIENCE, scope: 'a2a:operator a2a:platform' }));
    expect(operator.status).toBe(200);
    expect(operator.headers.get('cache-control')).toBe('no-store');
    const { status, detail } = (await operator.json()) as { status: string; detail: { issuers: IssuerStatus[] } };
    expect(status).toBe('ok');
    const byId = new Map(detail.issuers.map((issuer) => [issuer.id, issuer]));
    expect(byId.get('corp')).toMatchObject({ keys: 'discovery', state: 'ok', discovery: { jwksUri: good.jwksUri } });
    expect(byId.get('partner-idp')).toMatchObject({ keys: 'discovery', state: 'failing', discovery: { state: 'failing', url: broken.discoveryUrl } });
    expect(byId.get('partner-idp')?.discovery?.error).toContain('"https://elsewhere.example"');
    expect(byId.get('static')).toMatchObject({ keys: 'jwksUri', state: 'pending' });

    const forged = await readyz('not-a-jwt');
    expect(forged.status).toBe(401);
  });
});
