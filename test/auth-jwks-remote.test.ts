// An issuer whose keys are fetched from its JWKS URL: cached, refetched when stale so a rotated
// key is picked up, and an unreachable JWKS is a retryable 503, not a verdict on the token.
import { generateKeyPairSync } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, SignJWT, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';

const ISSUER = 'https://rotating.issuer.example';
const AUDIENCE = 'a2a-gateway-test';

interface Key {
  kid: string;
  privateKey: ReturnType<typeof generateKeyPairSync>['privateKey'];
  jwk: JWK;
}

async function newKey(kid: string): Promise<Key> {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' } };
}

const token = (key: Key): Promise<string> =>
  new SignJWT({ scope: 'a2a:read a2a:write' })
    .setProtectedHeader({ alg: 'ES256', kid: key.kid })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setSubject('rotating-alice')
    .setIssuedAt()
    .setExpirationTime('10m')
    .sign(key.privateKey);

let jwksServer: Server;
let published: JWK[] = [];
let fetches = 0;
let reachable = true;
let gw: TestGateway;

beforeAll(async () => {
  jwksServer = createServer((_request, response) => {
    fetches += 1;
    if (!reachable) {
      response.writeHead(503).end();
      return;
    }
    response.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ keys: published }));
  });
  await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve));
  const jwksUri = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/jwks.json`;
  gw = await startTestGateway({
    name: 'jwks-remote',
    config: {
      auth: { enabled: true, jwksCacheSeconds: 1, issuers: [{ id: 'rotating', issuer: ISSUER, audience: AUDIENCE, jwksUri, algorithms: ['ES256'] }] },
    },
  });
});

afterAll(async () => {
  await gw?.close();
  await new Promise((resolve) => jwksServer.close(resolve));
});

const listTasks = async (jwt: string) => rpc(gw.jsonRpcUrl, 'ListTasks', {}, { Authorization: `Bearer ${jwt}` });

describe('a remote JWKS', () => {
  it('is fetched once and cached, then a rotated key is accepted once the cache is stale', async () => {
    const first = await newKey('key-2026-01');
    published = [first.jwk];
    expect((await listTasks(await token(first))).status).toBe(200);
    const afterFirst = fetches;
    expect((await listTasks(await token(first))).status).toBe(200);
    expect(fetches).toBe(afterFirst); // cached

    // Rotation: the issuer publishes a new key and retires the old one.
    const second = await newKey('key-2026-02');
    published = [second.jwk];
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    await waitFor(async () => (await listTasks(await token(second))).status === 200 || undefined, 10_000, 'the rotated key');
    expect(fetches).toBeGreaterThan(afterFirst);
    // The retired key no longer verifies once the fresh JWKS is in.
    const retired = await listTasks(await token(first));
    expect(retired.status).toBe(401);
    expect(JSON.stringify(retired.body)).toContain('UNKNOWN_KEY');
  });

  it('that cannot be fetched answers 503 with Retry-After (an outage, not a bad token)', async () => {
    const key = await newKey('key-2026-03');
    published = [key.jwk];
    reachable = false;
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    try {
      const response = await fetch(gw.jsonRpcUrl, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${await token(key)}` },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: textMessage('echo never') } }),
      });
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toBe('5');
    } finally {
      reachable = true;
    }
  });
});
