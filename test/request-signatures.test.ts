// Partner-signed requests (RFC 9421 + RFC 9530 Content-Digest): good Ed25519 and ECDSA P-256
// requests give the partner's principal; every tampered, replayed, stale or mis-keyed request is
// refused with its own reason code and leaves Redis untouched.
import { generateKeyPairSync, type JsonWebKey, type KeyObject } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PartnerConfig } from '../src/config/schema.ts';
import { A2AError } from '../src/protocol/errors.ts';
import { signRequest, type SignRequestInput } from '../src/auth/signatures/sign-request.ts';
import { RequestSignatureVerifier, type SignedRequestInput } from '../src/auth/signatures/verify-request.ts';

const REDIS_URL = process.env.A2A_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `sigtest-${process.pid}-${Date.now()}`;
const TARGET = 'http://127.0.0.1:8080/a2a/jsonrpc';
const MAX_AGE = 300;
const TOLERANCE = 30;
/** The verifier's clock: fixed, so windows are tested to the second. */
const NOW_MS = Date.now();
const NOW_S = Math.floor(NOW_MS / 1000);

const acmeEd = generateKeyPairSync('ed25519');
const globexEc = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const strangerEd = generateKeyPairSync('ed25519');
const strangerEc = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const publicJwk = (key: KeyObject): { kty: string } & JsonWebKey => key.export({ format: 'jwk' }) as { kty: string } & JsonWebKey;

const partners: PartnerConfig[] = [
  { id: 'acme', keys: [{ keyId: 'acme-ed-1', publicKey: publicJwk(acmeEd.publicKey) }], scopes: ['a2a:read', 'a2a:write'], tenant: 'acme-tenant' },
  { id: 'globex', keys: [{ keyId: 'globex-ec-1', publicKey: publicJwk(globexEc.publicKey) }], scopes: ['a2a:read'], tenant: '' },
];

let redis: Redis;
let verifier: RequestSignatureVerifier;
let nonceCounter = 0;

beforeAll(() => {
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  verifier = new RequestSignatureVerifier({ partners, redis, keyPrefix: prefix, maxAgeSeconds: MAX_AGE, clockToleranceSeconds: TOLERANCE, now: () => NOW_MS });
});

afterAll(async () => {
  const keys = await keysOfPrefix();
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
});

async function keysOfPrefix(): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  return keys.sort();
}

const BODY = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { messageId: 'm-1', role: 'ROLE_USER', parts: [{ text: 'hi' }] } } });

/** A request as the bindings would hand it over: case-insensitive header lookup, exact body. */
function requestOf(headers: Record<string, string>, body: string, options: { method?: string; targetUri?: string } = {}): SignedRequestInput {
  const lower = new Map(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
  return { method: options.method ?? 'POST', targetUri: options.targetUri ?? TARGET, header: (name) => lower.get(name.toLowerCase()), body };
}

/** Signs a POST to TARGET as acme's Ed25519 key unless overridden, with a fresh nonce. */
function sign(overrides: Partial<SignRequestInput> = {}): Promise<Record<string, string>> {
  nonceCounter += 1;
  return signRequest({
    method: 'POST',
    url: TARGET,
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
    body: BODY,
    keyId: 'acme-ed-1',
    privateKey: acmeEd.privateKey,
    alg: 'ed25519',
    created: NOW_S,
    nonce: `nonce-${prefix}-${nonceCounter}`,
    ...overrides,
  });
}

/** Asserts the exact refusal and that Redis under our prefix is unchanged by it. */
async function expectRefused(request: SignedRequestInput, reason: string): Promise<A2AError> {
  const before = await keysOfPrefix();
  const error = await verifier.verify(request).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, `expected a refusal with ${reason}`).toBeInstanceOf(A2AError);
  const refusal = error as A2AError;
  expect(refusal.kind).toBe('UNAUTHENTICATED');
  expect(refusal.metadata.reason).toBe(reason);
  expect(refusal.extraHeaders['WWW-Authenticate']).toBe('Signature realm="a2a-gateway"');
  expect(refusal.extraHeaders['Accept-Signature']).toBe('sig1=("@method" "@target-uri" "content-digest");created');
  expect(await keysOfPrefix()).toEqual(before);
  return refusal;
}

describe('accepted signatures', () => {
  it('an Ed25519-signed POST gives the partner principal and records its nonce', async () => {
    const headers = await sign({ nonce: 'ed25519-good-nonce' });
    expect(headers['Content-Digest']).toMatch(/^sha-256=:[A-Za-z0-9+/]+=*:$/);
    expect(headers['Signature-Input']).toMatch(/^sig1=\("@method" "@target-uri" "content-digest" "content-type"\);created=\d+;keyid="acme-ed-1";alg="ed25519";nonce="ed25519-good-nonce"$/);
    const request = requestOf(headers, BODY);
    expect(RequestSignatureVerifier.isSigned(request)).toBe(true);

    const principal = await verifier.verify(request);
    expect(principal).toEqual({ tenant: 'acme-tenant', subject: 'partner:acme', scopes: new Set(['a2a:read', 'a2a:write']), grants: new Set(['a2a:read', 'a2a:write']), method: 'signature' });
    const key = `${prefix}:nonce:acme:ed25519-good-nonce`;
    expect(await redis.get(key)).toBe('1');
    const ttl = await redis.pttl(key);
    expect(ttl).toBeGreaterThan((MAX_AGE + TOLERANCE - 5) * 1000);
    expect(ttl).toBeLessThanOrEqual((MAX_AGE + TOLERANCE) * 1000);
  });

  it('an ECDSA P-256-signed POST gives that partner principal', async () => {
    const headers = await sign({ keyId: 'globex-ec-1', privateKey: globexEc.privateKey, alg: 'ecdsa-p256-sha256' });
    const principal = await verifier.verify(requestOf(headers, BODY));
    expect(principal).toEqual({ tenant: '', subject: 'partner:globex', scopes: new Set(['a2a:read']), grants: new Set(['a2a:read']), method: 'signature' });
  });

  it('a private JWK works as the signing key, and a bodiless GET signs the digest of the empty body', async () => {
    const url = `${TARGET}?x=1`;
    const headers = await sign({ method: 'GET', url, headers: { Accept: 'application/json' }, body: '', privateKey: acmeEd.privateKey.export({ format: 'jwk' }) });
    // SHA-256 of zero bytes (printf '' | openssl dgst -sha256 -binary | base64).
    expect(headers['Content-Digest']).toBe('sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:');
    const principal = await verifier.verify(requestOf(headers, '', { method: 'GET', targetUri: url }));
    expect(principal.subject).toBe('partner:acme');
  });

  it('a created time within the clock tolerance in the future is accepted, and so is one just inside the max age', async () => {
    await expect(verifier.verify(requestOf(await sign({ created: NOW_S + TOLERANCE - 1 }), BODY))).resolves.toMatchObject({ subject: 'partner:acme' });
    await expect(verifier.verify(requestOf(await sign({ created: NOW_S - MAX_AGE + 1 }), BODY))).resolves.toMatchObject({ subject: 'partner:acme' });
  });

  it('with several signatures, the first one naming a configured key is the one verified', async () => {
    const first = await sign({ keyId: 'someone-else', privateKey: strangerEd.privateKey, label: 'other' });
    const both = await sign({ headers: first, label: 'sig1' });
    expect(both['Signature-Input']).toMatch(/^other=.*, sig1=/);
    await expect(verifier.verify(requestOf(both, BODY))).resolves.toMatchObject({ subject: 'partner:acme' });
  });

  it('isSigned is false for a bearer request', () => {
    expect(RequestSignatureVerifier.isSigned(requestOf({ Authorization: 'Bearer x' }, ''))).toBe(false);
  });
});

describe('refused signatures write nothing to Redis', () => {
  it('body changed after signing', async () => {
    const headers = await sign();
    const error = await expectRefused(requestOf(headers, BODY.replace('hi', 'transfer all funds')), 'DIGEST_MISMATCH');
    expect(error.message).toMatch(/Content-Digest does not match the body/);
  });

  it('Content-Digest header missing', async () => {
    const { 'Content-Digest': _dropped, ...headers } = await sign();
    await expectRefused(requestOf(headers, BODY), 'DIGEST_MISSING');
  });

  it('Content-Digest present but not covered by the signature', async () => {
    const headers = await sign({ components: ['@method', '@target-uri', 'content-type'] });
    expect(headers['Content-Digest']).toBeDefined();
    const error = await expectRefused(requestOf(headers, BODY), 'SIGNATURE_MISSING_COMPONENT');
    expect(error.message).toContain('"content-digest"');
  });

  it('a replayed request (same nonce, second use)', async () => {
    const headers = await sign();
    await expect(verifier.verify(requestOf(headers, BODY))).resolves.toMatchObject({ subject: 'partner:acme' });
    await expectRefused(requestOf(headers, BODY), 'NONCE_REUSED');
  });

  it('created too old', async () => {
    await expectRefused(requestOf(await sign({ created: NOW_S - MAX_AGE - 1 }), BODY), 'SIGNATURE_EXPIRED');
  });

  it('created too far in the future', async () => {
    await expectRefused(requestOf(await sign({ created: NOW_S + TOLERANCE + 1 }), BODY), 'SIGNATURE_NOT_YET_VALID');
  });

  it('expires already passed', async () => {
    await expectRefused(requestOf(await sign({ created: NOW_S - 100, expires: NOW_S - TOLERANCE - 1 }), BODY), 'SIGNATURE_EXPIRED');
  });

  it('unknown key id', async () => {
    const error = await expectRefused(requestOf(await sign({ keyId: 'nobody-1', privateKey: strangerEd.privateKey }), BODY), 'UNKNOWN_KEY');
    expect(error.message).toContain('"nobody-1"');
  });

  it('right key id, signed with another key', async () => {
    await expectRefused(requestOf(await sign({ privateKey: strangerEd.privateKey }), BODY), 'BAD_SIGNATURE');
  });

  it('signed for another target URI', async () => {
    const otherHost = await sign({ url: 'http://gateway.example:8080/a2a/jsonrpc' });
    await expectRefused(requestOf(otherHost, BODY), 'BAD_SIGNATURE');
    const otherPath = await sign({ url: 'http://127.0.0.1:8080/a2a/rest/message:send' });
    await expectRefused(requestOf(otherPath, BODY), 'BAD_SIGNATURE');
    const otherQuery = await sign({ url: `${TARGET}?tenant=other` });
    await expectRefused(requestOf(otherQuery, BODY), 'BAD_SIGNATURE');
  });

  it('signed with another method', async () => {
    await expectRefused(requestOf(await sign({ method: 'PUT' }), BODY), 'BAD_SIGNATURE');
  });

  it('no nonce', async () => {
    const error = await expectRefused(requestOf(await sign({ parameters: ['created', 'keyid', 'alg'] }), BODY), 'SIGNATURE_MISSING_PARAMETER');
    expect(error.message).toContain('"nonce"');
  });

  it('a nonce too short to be unique', async () => {
    await expectRefused(requestOf(await sign({ nonce: 'abc' }), BODY), 'NONCE_INVALID');
  });

  it('an Ed25519 key id presented with alg="ecdsa-p256-sha256"', async () => {
    const headers = await sign({ privateKey: strangerEc.privateKey, alg: 'ecdsa-p256-sha256' });
    expect(headers['Signature-Input']).toContain('keyid="acme-ed-1";alg="ecdsa-p256-sha256"');
    await expectRefused(requestOf(headers, BODY), 'ALGORITHM_MISMATCH');
  });

  it('Signature-Input without a Signature header, and garbage signature headers', async () => {
    const { Signature: _dropped, ...headers } = await sign();
    await expectRefused(requestOf(headers, BODY), 'MALFORMED_SIGNATURE');
    await expectRefused(requestOf({ ...headers, Signature: 'sig1=not a byte sequence(' }, BODY), 'MALFORMED_SIGNATURE');
  });
});

describe('configuration', () => {
  it('refuses a keyId configured for two partners and a private JWK', () => {
    const options = { redis: {} as Redis, keyPrefix: prefix, maxAgeSeconds: MAX_AGE, clockToleranceSeconds: TOLERANCE };
    const twice: PartnerConfig[] = [partners[0]!, { ...partners[1]!, keys: [{ keyId: 'acme-ed-1', publicKey: publicJwk(globexEc.publicKey) }] }];
    expect(() => new RequestSignatureVerifier({ ...options, partners: twice })).toThrow(/both configure keyId "acme-ed-1"/);
    const privateJwk = acmeEd.privateKey.export({ format: 'jwk' }) as { kty: string };
    const leaked: PartnerConfig[] = [{ ...partners[0]!, keys: [{ keyId: 'k', publicKey: privateJwk }] }];
    expect(() => new RequestSignatureVerifier({ ...options, partners: leaked })).toThrow(/private key/);
  });
});
