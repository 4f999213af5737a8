// Identity fixtures for the auth suites: a test token issuer with its own keys (configured
// inline, exactly as a user would configure theirs) and a signing partner.
import { generateKeyPairSync, type JsonWebKey, type KeyObject } from 'node:crypto';
import { exportJWK, SignJWT, type JWK } from 'jose';
import { signRequest } from '../../src/auth/signatures/sign-request.ts';

export const TEST_ISSUER = 'https://issuer.test.example';
export const TEST_AUDIENCE = 'a2a-gateway-test';

export interface TestIssuer {
  rsa: { privateKey: KeyObject; publicKey: KeyObject; kid: string };
  ec: { privateKey: KeyObject; publicKey: KeyObject; kid: string };
  /** `auth.issuers[]` entry for the gateway config. */
  config: Record<string, unknown>;
  /** A token signed with the EC key, valid for an hour, with the given claims layered on. */
  token(claims?: Record<string, unknown>, options?: { key?: 'rsa' | 'ec'; kid?: string; expiresIn?: string }): Promise<string>;
}

export async function createTestIssuer(): Promise<TestIssuer> {
  const rsa = { ...generateKeyPairSync('rsa', { modulusLength: 2048 }), kid: 'rsa-1' };
  const ec = { ...generateKeyPairSync('ec', { namedCurve: 'P-256' }), kid: 'ec-1' };
  const publicJwks: JWK[] = [
    { ...(await exportJWK(rsa.publicKey)), kid: rsa.kid, alg: 'RS256', use: 'sig' },
    { ...(await exportJWK(ec.publicKey)), kid: ec.kid, alg: 'ES256', use: 'sig' },
  ];
  return {
    rsa,
    ec,
    config: { id: 'test', issuer: TEST_ISSUER, audience: TEST_AUDIENCE, jwks: { keys: publicJwks }, algorithms: ['RS256', 'ES256'] },
    async token(claims = {}, options = {}) {
      const which = options.key ?? 'ec';
      const key = which === 'rsa' ? rsa : ec;
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ scope: 'a2a:read a2a:write a2a:push', ...claims })
        .setProtectedHeader({ alg: which === 'rsa' ? 'RS256' : 'ES256', kid: options.kid ?? key.kid, typ: 'JWT' })
        .setIssuer((claims.iss as string | undefined) ?? TEST_ISSUER)
        .setAudience((claims.aud as string | undefined) ?? TEST_AUDIENCE)
        .setSubject((claims.sub as string | undefined) ?? 'alice')
        .setIssuedAt(now)
        .setExpirationTime((claims.exp as number | undefined) ?? now + 3600)
        .sign(key.privateKey);
    },
  };
}

export interface TestPartner {
  id: string;
  keyId: string;
  privateKey: KeyObject;
  /** `auth.partners[]` entry for the gateway config. */
  config: Record<string, unknown>;
  /** Signs a JSON POST exactly as a partner would; returns the headers to send. */
  sign(url: string, body: string, options?: { created?: number; nonce?: string; keyId?: string; privateKey?: KeyObject }): Promise<Record<string, string>>;
}

export function createTestPartner(id = 'acme', scopes = ['a2a:read', 'a2a:write']): TestPartner {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const keyId = `${id}-key-1`;
  return {
    id,
    keyId,
    privateKey,
    config: { id, scopes, keys: [{ keyId, publicKey: publicKey.export({ format: 'jwk' }) as JsonWebKey }] },
    sign(url, body, options = {}) {
      return signRequest({
        method: 'POST',
        url,
        headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
        body,
        keyId: options.keyId ?? keyId,
        privateKey: options.privateKey ?? privateKey,
        alg: 'ed25519',
        ...(options.created === undefined ? {} : { created: options.created }),
        ...(options.nonce === undefined ? {} : { nonce: options.nonce }),
      });
    },
  };
}
