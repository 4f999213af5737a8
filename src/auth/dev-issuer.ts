// The development issuer: with authentication on and no issuer configured, the gateway trusts
// tokens signed by a key it generates in dataDir, and `npm run token` mints them. It goes
// through the same verifier as a real issuer, so nothing about it is special-cased.
import { randomUUID } from 'node:crypto';
import { join, resolve } from 'node:path';
import { importJWK, SignJWT, type JWK } from 'jose';
import { isGrantableScope, type IssuerConfig } from '../config/schema.ts';
import { SCOPES, type Scope } from '../protocol/scopes.ts';
import { loadOrCreatePrivateJwk, publicJwkOf } from './keys/key-file.ts';

export const DEV_ISSUER = 'a2a-gateway-dev';
export const DEV_AUDIENCE = 'a2a-gateway';
export const DEV_ISSUER_KEY_FILE = 'dev-issuer-key.json';
/** Everything but a2a:admin, which a developer has to ask for (--scope) like any other privilege. */
export const DEFAULT_DEV_SCOPES: readonly Scope[] = ['a2a:read', 'a2a:write', 'a2a:push'];
export const DEFAULT_DEV_TOKEN_TTL_SECONDS = 3600;

export interface DevTokenClaims {
  sub: string;
  /** Omitted from the token when not given, which means the default tenant. */
  tenant?: string;
  /** Operation scopes (a2a:…) and scopes of the deployment's own (agent access). */
  scopes?: string[];
  ttlSeconds?: number;
}

export interface DevIssuer {
  readonly issuer: typeof DEV_ISSUER;
  readonly audience: typeof DEV_AUDIENCE;
  readonly keyFile: string;
  readonly publicJwk: JWK;
  issuerConfig(): IssuerConfig;
  mint(claims: DevTokenClaims): Promise<string>;
}

export async function loadDevIssuer(dataDir: string): Promise<DevIssuer> {
  const keyFile = join(resolve(dataDir), DEV_ISSUER_KEY_FILE);
  const privateJwk = await loadOrCreatePrivateJwk(keyFile, { alg: 'EdDSA', use: 'sig' });
  const publicJwk = publicJwkOf(privateJwk);
  const kid = privateJwk.kid as string;
  const signingKey = await importJWK(privateJwk, 'EdDSA');

  return {
    issuer: DEV_ISSUER,
    audience: DEV_AUDIENCE,
    keyFile,
    publicJwk,
    issuerConfig: () => ({
      id: 'dev',
      issuer: DEV_ISSUER,
      audience: DEV_AUDIENCE,
      jwks: { keys: [{ ...publicJwk, kty: publicJwk.kty as string }] },
      algorithms: ['EdDSA'],
      requiredClaims: [],
      tenantClaim: 'tenant',
    }),
    async mint(claims) {
      if (typeof claims.sub !== 'string' || claims.sub === '') throw new Error('a token needs a non-empty subject (sub)');
      const ttl = claims.ttlSeconds ?? DEFAULT_DEV_TOKEN_TTL_SECONDS;
      if (!Number.isSafeInteger(ttl) || ttl <= 0) throw new Error(`ttlSeconds must be a positive whole number of seconds, not ${ttl}`);
      const scopes = [...new Set(claims.scopes ?? DEFAULT_DEV_SCOPES)];
      const unknown = scopes.filter((scope) => !isGrantableScope(scope));
      if (unknown.length > 0) throw new Error(`unknown scope ${unknown.map((s) => `"${s}"`).join(', ')}; valid scopes: ${SCOPES.join(', ')}, or scopes of your own not starting with "a2a:"`);

      const now = Math.floor(Date.now() / 1000);
      const payload: Record<string, string> = { scope: scopes.join(' ') };
      if (claims.tenant !== undefined) payload.tenant = claims.tenant;
      return new SignJWT(payload)
        .setProtectedHeader({ alg: 'EdDSA', kid, typ: 'JWT' })
        .setIssuer(DEV_ISSUER)
        .setAudience(DEV_AUDIENCE)
        .setSubject(claims.sub)
        .setIssuedAt(now)
        .setNotBefore(now)
        .setExpirationTime(now + ttl)
        .setJti(randomUUID())
        .sign(signingKey);
    },
  };
}
