// A bearer token that verified is kept (auth.verifiedTokenCacheEntries), so the same token sent
// again skips the signature check; but never past its exp, never past jwksCacheSeconds, never
// for a token that failed, and within a bounded number of entries.
import { beforeAll, describe, expect, it, vi } from 'vitest';
import * as jose from 'jose';
import { JwtVerifier } from '../src/auth/jwt/jwt-verifier.ts';
import { VerifiedTokens } from '../src/auth/jwt/verified-tokens.ts';
import type { Principal } from '../src/auth/principal.ts';
import { configSchema, type IssuerConfig } from '../src/config/schema.ts';
import { createTestIssuer, type TestIssuer } from './support/identity.ts';

// jwtVerify counted: the signature check the cache saves.
vi.mock('jose', async (importOriginal) => {
  const original = await importOriginal<typeof import('jose')>();
  return { ...original, jwtVerify: vi.fn(original.jwtVerify) };
});
const jwtVerify = vi.mocked(jose.jwtVerify);

let issuer: TestIssuer;
let issuers: IssuerConfig[];

beforeAll(async () => {
  issuer = await createTestIssuer();
  issuers = configSchema.parse({ auth: { issuers: [issuer.config] } }).auth.issuers;
});

const verifier = (entries: number, options: { clockToleranceSeconds?: number; jwksCacheSeconds?: number } = {}): JwtVerifier =>
  new JwtVerifier({
    issuers,
    clockToleranceSeconds: options.clockToleranceSeconds ?? 0,
    jwksCacheSeconds: options.jwksCacheSeconds ?? 600,
    verifiedTokenCacheEntries: entries,
    baseDir: '.',
  });

const checksOf = async (run: () => Promise<unknown>): Promise<number> => {
  const before = jwtVerify.mock.calls.length;
  await run();
  return jwtVerify.mock.calls.length - before;
};

describe('JwtVerifier with verified tokens kept', () => {
  it('checks a re-sent token once and answers the same principal; with 0 entries it checks every time', async () => {
    const token = await issuer.token({ sub: 'carol', tenant: 'acme' });
    const cached = verifier(100);
    const principals: Principal[] = [];
    expect(await checksOf(async () => {
      for (let i = 0; i < 5; i += 1) principals.push(await cached.verify(token));
    })).toBe(1);
    expect(new Set(principals.map((p) => JSON.stringify({ ...p, scopes: [...p.scopes], grants: [...p.grants] }))).size).toBe(1);
    expect(principals[0]?.subject).toBe('user:test:carol');
    // Each request gets its own copy.
    expect(principals[0]).not.toBe(principals[1]);

    const uncached = verifier(0);
    expect(await checksOf(async () => {
      for (let i = 0; i < 3; i += 1) await uncached.verify(token);
    })).toBe(3);
  });

  it('keeps no token that failed: a bad signature is checked, and refused, every time', async () => {
    const good = await issuer.token({ sub: 'mallory' });
    const [header, payload, signature] = good.split('.');
    const forged = `${header}.${payload}.${signature?.startsWith('A') ? 'B' : 'A'}${signature?.slice(1)}`;
    const v = verifier(100);
    expect(await checksOf(async () => {
      for (let i = 0; i < 3; i += 1) await expect(v.verify(forged)).rejects.toThrow(/signature/i);
    })).toBe(3);
  });

  it('never answers from the cache past the token\'s exp: an expired token is refused as expired', async () => {
    const exp = Math.floor(Date.now() / 1000) + 2;
    const token = await issuer.token({ sub: 'dave', exp });
    const v = verifier(100);
    await v.verify(token);
    await v.verify(token);
    await new Promise((resolve) => setTimeout(resolve, exp * 1000 - Date.now() + 200));
    await expect(v.verify(token)).rejects.toMatchObject({ metadata: { reason: 'TOKEN_EXPIRED' } });
  });
});

describe('VerifiedTokens', () => {
  const principal = (subject: string): Principal => ({ tenant: '', subject, scopes: new Set(), grants: new Set(), method: 'jwt' });

  it('holds at most maxEntries, the least recently used out first', () => {
    const tokens = new VerifiedTokens(2, 60_000, () => 0);
    tokens.remember('a', principal('a'), 10_000);
    tokens.remember('b', principal('b'), 10_000);
    expect(tokens.get('a')?.subject).toBe('a'); // a is now the most recently used
    tokens.remember('c', principal('c'), 10_000);
    expect(tokens.size).toBe(2);
    expect(tokens.get('b')).toBeUndefined();
    expect(tokens.get('a')?.subject).toBe('a');
    expect(tokens.get('c')?.subject).toBe('c');
  });

  it('lets an entry live until the token\'s validity or maxAgeMs, whichever ends first', () => {
    let now = 1_000;
    const tokens = new VerifiedTokens(10, 5_000, () => now);
    tokens.remember('short', principal('short'), 3_000);
    tokens.remember('long', principal('long'), 1_000_000);
    tokens.remember('gone', principal('gone'), 900);
    expect(tokens.get('gone')).toBeUndefined();
    now = 2_999;
    expect(tokens.get('short')?.subject).toBe('short');
    now = 3_000;
    expect(tokens.get('short')).toBeUndefined();
    expect(tokens.get('long')?.subject).toBe('long');
    now = 6_000;
    expect(tokens.get('long')).toBeUndefined();
    expect(tokens.size).toBe(0);
  });

  it('keeps nothing with 0 entries', () => {
    const tokens = new VerifiedTokens(0, 5_000);
    tokens.remember('a', principal('a'), Date.now() + 10_000);
    expect(tokens.get('a')).toBeUndefined();
    expect(tokens.size).toBe(0);
  });
});
