// Generated keys and the development issuer: the key file is private and stable, two processes
// starting together agree on one key, minted tokens verify like any issuer's, and
// `npm run token` prints nothing but the token.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Hono } from 'hono';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDevIssuer } from '../src/auth/dev-issuer.ts';
import { loadGatewayKeys } from '../src/auth/keys/gateway-keys.ts';
import { loadOrCreatePrivateJwk, publicJwkOf } from '../src/auth/keys/key-file.ts';
import { configSchema } from '../src/config/schema.ts';
import { jwksResponseBody, registerJwksRoute } from '../src/gateway/well-known-keys.ts';
import { nodeEntryArgs } from './support/compiled-sources.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'a2a-dev-keys-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('generated key files', () => {
  it('are created with mode 0600 in a 0700 directory and reused on the next load', async () => {
    const path = join(dir, 'fresh', 'key.json');
    const first = await loadOrCreatePrivateJwk(path, { alg: 'EdDSA', use: 'sig' });
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect((await stat(dirname(path))).mode & 0o777).toBe(0o700);
    expect(first).toMatchObject({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig' });
    expect(typeof first.d).toBe('string');

    const second = await loadOrCreatePrivateJwk(path, { alg: 'EdDSA', use: 'sig' });
    expect(second.kid).toBe(first.kid);
    expect(second.d).toBe(first.d);
  });

  it('end up holding one key when two loaders race to create it', async () => {
    const path = join(dir, 'race', 'key.json');
    const loads = await Promise.all(Array.from({ length: 4 }, () => loadOrCreatePrivateJwk(path, { alg: 'ES256', use: 'sig' })));
    const stored = JSON.parse(await readFile(path, 'utf8')) as { kid: string };
    expect(new Set(loads.map((jwk) => jwk.kid))).toEqual(new Set([stored.kid]));
  });

  it('refuse a file that holds a key of another algorithm', async () => {
    const path = join(dir, 'mixed.json');
    await loadOrCreatePrivateJwk(path, { alg: 'EdDSA', use: 'sig' });
    await expect(loadOrCreatePrivateJwk(path, { alg: 'ES256', use: 'sig' })).rejects.toThrow(/EdDSA key where an ES256 key belongs/);
  });

  it('publish only public members', async () => {
    const jwk = await loadOrCreatePrivateJwk(join(dir, 'ec.json'), { alg: 'ES256', use: 'sig' });
    const published = publicJwkOf(jwk);
    expect(Object.keys(published).sort()).toEqual(['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y']);
  });
});

describe('development issuer', () => {
  it('mints tokens that verify against its issuer configuration', async () => {
    const issuer = await loadDevIssuer(join(dir, 'data'));
    const config = issuer.issuerConfig();
    expect(config).toMatchObject({ id: 'dev', issuer: 'a2a-gateway-dev', audience: 'a2a-gateway', algorithms: ['EdDSA'], tenantClaim: 'tenant' });
    expect(config.jwks?.keys).toHaveLength(1);
    expect(config.jwks?.keys[0]).not.toHaveProperty('d');

    const token = await issuer.mint({ sub: 'alice', tenant: 'acme', scopes: ['a2a:read', 'a2a:admin'], ttlSeconds: 120 });
    const { payload, protectedHeader } = await jwtVerify(token, createLocalJWKSet(config.jwks as JSONWebKeySet), {
      issuer: config.issuer,
      audience: config.audience,
      algorithms: config.algorithms,
    });
    expect(protectedHeader).toEqual({ alg: 'EdDSA', kid: issuer.publicJwk.kid, typ: 'JWT' });
    expect(payload).toMatchObject({ sub: 'alice', tenant: 'acme', scope: 'a2a:read a2a:admin' });
    expect((payload.exp ?? 0) - (payload.iat ?? 0)).toBe(120);
    expect(payload.nbf).toBe(payload.iat);
    expect(typeof payload.jti).toBe('string');
  });

  it('defaults to read, write and push for an hour, without a tenant claim', async () => {
    const issuer = await loadDevIssuer(join(dir, 'data'));
    const token = await issuer.mint({ sub: 'bob' });
    const { payload } = await jwtVerify(token, createLocalJWKSet(issuer.issuerConfig().jwks as JSONWebKeySet), {
      issuer: 'a2a-gateway-dev',
      audience: 'a2a-gateway',
    });
    expect(payload.scope).toBe('a2a:read a2a:write a2a:push');
    expect(payload).not.toHaveProperty('tenant');
    expect((payload.exp ?? 0) - (payload.iat ?? 0)).toBe(3600);
  });

  it('keeps its key across loads, so tokens survive a restart', async () => {
    const before = await loadDevIssuer(join(dir, 'data'));
    const token = await before.mint({ sub: 'carol' });
    const after = await loadDevIssuer(join(dir, 'data'));
    expect(after.publicJwk.kid).toBe(before.publicJwk.kid);
    await expect(jwtVerify(token, createLocalJWKSet(after.issuerConfig().jwks as JSONWebKeySet))).resolves.toBeDefined();
  });
});

describe('gateway keys', () => {
  it('generate an ES256 card key in dataDir, publish it, and keep the issuer key unpublished', async () => {
    const config = configSchema.parse({ dataDir: join(dir, 'gateway') });
    const keys = await loadGatewayKeys(config, dir);
    expect(keys.cardSigningKey).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256' });
    expect(keys.devIssuer).toBeDefined();
    expect(keys.publishedKeys).toEqual([publicJwkOf(keys.cardSigningKey ?? {})]);
    expect(keys.publishedKeys.map((k) => k.kid)).not.toContain(keys.devIssuer?.publicJwk.kid);
  });

  it('use cardSigningKeyFile relative to the config directory, and refuse a public key there', async () => {
    const generated = await loadOrCreatePrivateJwk(join(dir, 'supplied', 'signing.json'), { alg: 'EdDSA', use: 'sig' });
    const config = configSchema.parse({ dataDir: join(dir, 'gateway2'), cardSigningKeyFile: 'signing.json', auth: { enabled: false } });
    const keys = await loadGatewayKeys(config, join(dir, 'supplied'));
    expect(keys.cardSigningKey?.kid).toBe(generated.kid);
    expect(keys.devIssuer).toBeUndefined();

    await writeFile(join(dir, 'supplied', 'public.json'), JSON.stringify(publicJwkOf(generated)));
    const publicOnly = configSchema.parse({ ...config, cardSigningKeyFile: 'public.json' });
    await expect(loadGatewayKeys(publicOnly, join(dir, 'supplied'))).rejects.toThrow(/cardSigningKeyFile.*no private key/);
    const missing = configSchema.parse({ ...config, cardSigningKeyFile: 'nope.json' });
    await expect(loadGatewayKeys(missing, join(dir, 'supplied'))).rejects.toThrow(/cardSigningKeyFile.*cannot read/);
  });

  it('skip the card key when cardSigning is off', async () => {
    const config = configSchema.parse({ dataDir: join(dir, 'gateway3'), cardSigning: false });
    const keys = await loadGatewayKeys(config, dir);
    expect(keys.cardSigningKey).toBeUndefined();
    expect(keys.publishedKeys).toEqual([]);
  });
});

describe('/.well-known/jwks.json', () => {
  it('serves public keys only, cacheable and readable cross-origin', async () => {
    const privateJwk = await loadOrCreatePrivateJwk(join(dir, 'jwks', 'ec.json'), { alg: 'ES256', use: 'sig' });
    const app = new Hono();
    // Handing it the private key on purpose: the route must still strip it.
    registerJwksRoute(app, () => [privateJwk]);
    const response = await app.request('/.well-known/jwks.json');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(response.headers.get('cache-control')).toBe('public, max-age=300');
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    const text = await response.text();
    const body = JSON.parse(text) as { keys: Record<string, unknown>[] };
    expect(body.keys).toHaveLength(1);
    expect(body.keys[0]?.kid).toBe(privateJwk.kid);
    for (const member of PRIVATE_MEMBERS) expect(body.keys[0]).not.toHaveProperty(member);
    expect(text).not.toContain(privateJwk.d);
    expect(jwksResponseBody([privateJwk])).toEqual(body);
  });
});

function runTokenCli(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  if (env.A2A_CONFIG === undefined) delete childEnv.A2A_CONFIG;
  return new Promise((resolvePromise) => {
    execFile(process.execPath, [...nodeEntryArgs('src/cli/token.ts'), ...args], { cwd: ROOT, env: childEnv, timeout: 30_000 }, (error, stdout, stderr) => {
      resolvePromise({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr });
    });
  });
}

describe('npm run token', () => {
  it('prints one JWT line, signed by the key in A2A_DATA_DIR', async () => {
    const dataDir = join(dir, 'cli-data');
    const { code, stdout, stderr } = await runTokenCli(['--sub', 'alice', '--tenant', 'acme', '--scope', 'a2a:read a2a:write'], {
      A2A_DATA_DIR: dataDir,
    });
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toMatch(/^[^\n]+\n$/);
    const token = stdout.trim();
    expect(token).toMatch(JWT_SHAPE);

    const issuer = await loadDevIssuer(dataDir);
    expect(decodeProtectedHeader(token).kid).toBe(issuer.publicJwk.kid);
    const { payload } = await jwtVerify(token, createLocalJWKSet(issuer.issuerConfig().jwks as JSONWebKeySet), {
      issuer: 'a2a-gateway-dev',
      audience: 'a2a-gateway',
    });
    expect(payload).toMatchObject({ sub: 'alice', tenant: 'acme', scope: 'a2a:read a2a:write' });
  });

  it('mints the operator, metrics and platform scopes, for as short a time as asked', async () => {
    const dataDir = join(dir, 'cli-data');
    const issuer = await loadDevIssuer(dataDir);
    for (const scope of ['a2a:admin a2a:platform', 'a2a:operator', 'a2a:metrics']) {
      const { code, stdout, stderr } = await runTokenCli(['--sub', 'ops', '--scope', scope, '--ttl', '900'], { A2A_DATA_DIR: dataDir });
      expect(stderr, scope).toBe('');
      expect(code, scope).toBe(0);
      const { payload } = await jwtVerify(stdout.trim(), createLocalJWKSet(issuer.issuerConfig().jwks as JSONWebKeySet), { issuer: 'a2a-gateway-dev', audience: 'a2a-gateway' });
      expect(payload.scope).toBe(scope);
      expect((payload.exp as number) - (payload.iat as number)).toBe(900);
    }
  });

  it('refuses with one line and exit 1 when the configuration trusts an issuer', async () => {
    const configFile = join(dir, 'with-issuer.json');
    await writeFile(
      configFile,
      JSON.stringify({
        dataDir: join(dir, 'cli-issuer-data'),
        auth: { issuers: [{ id: 'corp', issuer: 'https://idp.example.com', audience: 'a2a', jwksUri: 'https://idp.example.com/jwks' }] },
      }),
    );
    const { code, stdout, stderr } = await runTokenCli(['--sub', 'alice'], { A2A_CONFIG: configFile });
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/^[^\n]*only mints development tokens[^\n]*get tokens from your issuer[^\n]*\n$/);
  });

  it('answers bad arguments with one usage line and exit 2', async () => {
    const missing = await runTokenCli([], { A2A_DATA_DIR: join(dir, 'cli-data') });
    expect(missing.code).toBe(2);
    expect(missing.stdout).toBe('');
    expect(missing.stderr).toMatch(/^[^\n]*--sub is required[^\n]*usage: npm run token[^\n]*\n$/);

    const badScope = await runTokenCli(['--sub', 'alice', '--scope', 'a2a:read a2a:everything'], { A2A_DATA_DIR: join(dir, 'cli-data') });
    expect(badScope.code).toBe(2);
    expect(badScope.stderr).toMatch(/unknown scope "a2a:everything".*a2a:read, a2a:write, a2a:push, a2a:operator, a2a:admin, a2a:metrics, a2a:platform/);
  });
});
