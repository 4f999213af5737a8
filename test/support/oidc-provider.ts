// A small OpenID Connect provider for tests, on a loopback port: a discovery document at
// /.well-known/openid-configuration naming its JWKS at /jwks, ES256 keys it can rotate, and
// tokens it signs. Its discovery answer can be switched to a failure (down, another issuer,
// too large, too slow) to see what the gateway makes of each.
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, SignJWT, type JWK } from 'jose';

export type DiscoveryMode =
  | { kind: 'ok' }
  | { kind: 'down' }
  /** A document naming the same keys at another URL (/jwks-moved). */
  | { kind: 'moved-jwks' }
  /** A document naming another issuer than this provider's URL. */
  | { kind: 'other-issuer'; issuer: string }
  /** A document of `bytes` bytes; `declared`: with a Content-Length (else chunked). */
  | { kind: 'oversized'; bytes: number; declared: boolean }
  /** Headers at once, then the body a byte every `everyMs`. */
  | { kind: 'slow'; everyMs: number };

interface SigningKey {
  kid: string;
  privateKey: KeyObject;
  jwk: JWK;
}

export interface TestOidcProvider {
  /** http://127.0.0.1:<port>: the issuer (no trailing slash). */
  readonly issuer: string;
  readonly discoveryUrl: string;
  readonly jwksUri: string;
  discovery: DiscoveryMode;
  /** What /jwks answers: the keys, a 503, or the keys padded past `bytes`. */
  jwks: { kind: 'ok' } | { kind: 'down' } | { kind: 'oversized'; bytes: number };
  /** Requests seen, by path. */
  readonly hits: { discovery: number; jwks: number; movedJwks: number };
  /** Publishes a new signing key (and keeps the previous ones unless `retire`). */
  rotate(kid: string, options?: { retire?: boolean }): Promise<void>;
  /** A token signed with `kid` (default: the newest key). */
  token(claims: { sub: string; aud: string; scope?: string; tenant?: string; iss?: string }, kid?: string): Promise<string>;
  close(): Promise<void>;
}

function newKey(kid: string): Promise<SigningKey> {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return exportJWK(publicKey).then((jwk) => ({ kid, privateKey, jwk: { ...jwk, kid, alg: 'ES256', use: 'sig' } }));
}

function json(response: ServerResponse, body: unknown): void {
  response.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
}

export async function startTestOidcProvider(): Promise<TestOidcProvider> {
  /** Published keys; every key ever made stays in `made` so a test can sign with a retired one. */
  let keys: SigningKey[] = [];
  const made = new Map<string, SigningKey>();
  const hits = { discovery: 0, jwks: 0, movedJwks: 0 };
  const timers = new Set<NodeJS.Timeout>();
  const server: Server = createServer((request, response) => {
    const path = request.url ?? '/';
    if (path === '/jwks' || path === '/jwks-moved') {
      if (path === '/jwks') hits.jwks += 1;
      else hits.movedJwks += 1;
      const mode = provider.jwks;
      if (mode.kind === 'down') response.writeHead(503).end();
      else json(response, { keys: keys.map((key) => key.jwk), ...(mode.kind === 'oversized' ? { padding: 'x'.repeat(mode.bytes) } : {}) });
      return;
    }
    if (path !== '/.well-known/openid-configuration') {
      response.writeHead(404).end();
      return;
    }
    hits.discovery += 1;
    const mode = provider.discovery;
    const document = { issuer: provider.issuer, jwks_uri: provider.jwksUri, response_types_supported: ['code'], subject_types_supported: ['public'], id_token_signing_alg_values_supported: ['ES256'] };
    switch (mode.kind) {
      case 'ok':
        json(response, document);
        return;
      case 'down':
        response.writeHead(503).end();
        return;
      case 'moved-jwks':
        json(response, { ...document, jwks_uri: `${provider.issuer}/jwks-moved` });
        return;
      case 'other-issuer':
        json(response, { ...document, issuer: mode.issuer });
        return;
      case 'oversized': {
        const padding = 'x'.repeat(Math.max(0, mode.bytes - 100));
        const body = JSON.stringify({ ...document, padding });
        response.writeHead(200, { 'Content-Type': 'application/json', ...(mode.declared ? { 'Content-Length': Buffer.byteLength(body) } : {}) });
        response.end(body);
        return;
      }
      case 'slow': {
        const body = Buffer.from(JSON.stringify(document));
        response.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': body.length });
        let sent = 0;
        const drip = setInterval(() => {
          if (response.destroyed || sent >= body.length) {
            clearInterval(drip);
            timers.delete(drip);
            response.end();
            return;
          }
          response.write(body.subarray(sent, sent + 1));
          sent += 1;
        }, mode.everyMs);
        timers.add(drip);
        return;
      }
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const provider: TestOidcProvider = {
    issuer,
    discoveryUrl: `${issuer}/.well-known/openid-configuration`,
    jwksUri: `${issuer}/jwks`,
    discovery: { kind: 'ok' },
    jwks: { kind: 'ok' },
    hits,
    async rotate(kid, options = {}) {
      const key = await newKey(kid);
      made.set(kid, key);
      keys = options.retire === true ? [key] : [...keys, key];
    },
    async token(claims, kid) {
      const key = kid === undefined ? keys.at(-1) : made.get(kid);
      if (key === undefined) throw new Error(`the provider has no key ${kid ?? '(none yet)'}`);
      return new SignJWT({ ...(claims.scope === undefined ? {} : { scope: claims.scope }), ...(claims.tenant === undefined ? {} : { tenant: claims.tenant }) })
        .setProtectedHeader({ alg: 'ES256', kid: key.kid, typ: 'at+jwt' })
        .setIssuer(claims.iss ?? issuer)
        .setAudience(claims.aud)
        .setSubject(claims.sub)
        .setIssuedAt()
        .setExpirationTime('10m')
        .sign(key.privateKey);
    },
    async close() {
      for (const timer of timers) clearInterval(timer);
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  await provider.rotate('key-1');
  return provider;
}
