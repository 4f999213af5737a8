// The attack matrix: every forged, stale, misdirected or under-privileged credential is refused
// with the right status and error shape on both bindings, and nothing changes in Redis.
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectUnchanged, rpc, startTestGateway, textMessage, type TestGateway } from './support/harness.ts';
import { createTestIssuer, createTestPartner, type TestIssuer, type TestPartner } from './support/identity.ts';

let gw: TestGateway;
let issuer: TestIssuer;
let partner: TestPartner;

const b64url = (value: string | Buffer): string => Buffer.from(value).toString('base64url');

beforeAll(async () => {
  issuer = await createTestIssuer();
  partner = createTestPartner();
  gw = await startTestGateway({
    name: 'auth-attacks',
    config: { auth: { enabled: true, issuers: [issuer.config], partners: [partner.config] } },
  });
  // A task, so "nothing changed" compares a non-empty keyspace.
  const seeded = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('echo seed') }, { Authorization: `Bearer ${await issuer.token()}` });
  expect(seeded.status).toBe(200);
});

afterAll(async () => {
  await gw?.close();
});

interface Refusal {
  status: number;
  reason: string;
}

/** Sends a SendMessage with the given headers over both bindings; both must refuse alike and store nothing. */
async function expectRefusedOnBothBindings(headers: () => Promise<Record<string, string>>, expected: Refusal): Promise<void> {
  const body = { message: textMessage('echo should never run') };
  await expectUnchanged(gw, async () => {
    const jsonRpc = await rpc(gw.jsonRpcUrl, 'SendMessage', body, await headers());
    expect(jsonRpc.status, JSON.stringify(jsonRpc.body)).toBe(expected.status);
    const error = jsonRpc.body.error as { code: number; data: { reason?: string; metadata?: Record<string, string> }[] };
    expect(error.code).toBe(expected.status === 401 ? -31401 : -31403);
    expect(error.data.find((d) => d.reason !== undefined)?.metadata?.reason ?? error.data.find((d) => d.reason)?.reason).toBeDefined();
    expect(JSON.stringify(error.data)).toContain(expected.reason);

    const rest = await fetch(`${gw.restUrl}/message:send`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', ...(await headers()) },
      body: JSON.stringify(body),
    });
    const restBody = (await rest.json()) as { error: { code: number; status: string; details: unknown[] } };
    expect(rest.status).toBe(expected.status);
    expect(restBody.error.code).toBe(expected.status);
    expect(restBody.error.status).toBe(expected.status === 401 ? 'UNAUTHENTICATED' : 'PERMISSION_DENIED');
    expect(JSON.stringify(restBody.error.details)).toContain(expected.reason);
    if (expected.status === 401) expect(rest.headers.get('www-authenticate')).toMatch(/^(Bearer|Signature) realm="a2a-gateway"/);
  });
}

const bearer = (token: string): Record<string, string> => ({ Authorization: `Bearer ${token}` });

describe('bearer token attacks', () => {
  it('no credentials: 401 with a Bearer challenge', async () => {
    await expectRefusedOnBothBindings(async () => ({}), { status: 401, reason: 'CREDENTIALS_MISSING' });
  });

  it('alg "none"', async () => {
    const now = Math.floor(Date.now() / 1000);
    const header = b64url(JSON.stringify({ alg: 'none', typ: 'JWT' }));
    const payload = b64url(JSON.stringify({ iss: 'https://issuer.test.example', aud: 'a2a-gateway-test', sub: 'mallory', exp: now + 600, scope: 'a2a:write' }));
    await expectRefusedOnBothBindings(async () => bearer(`${header}.${payload}.`), { status: 401, reason: 'ALGORITHM_NOT_ALLOWED' });
  });

  it('HS256 signed with the RSA public key as the secret (algorithm confusion)', async () => {
    const now = Math.floor(Date.now() / 1000);
    const header = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT', kid: issuer.rsa.kid }));
    const payload = b64url(JSON.stringify({ iss: 'https://issuer.test.example', aud: 'a2a-gateway-test', sub: 'mallory', exp: now + 600, scope: 'a2a:write' }));
    const secret = issuer.rsa.publicKey.export({ type: 'spki', format: 'pem' });
    const signature = createHmac('sha256', secret).update(`${header}.${payload}`).digest('base64url');
    await expectRefusedOnBothBindings(async () => bearer(`${header}.${payload}.${signature}`), { status: 401, reason: 'ALGORITHM_NOT_ALLOWED' });
  });

  it('expired', async () => {
    const past = Math.floor(Date.now() / 1000) - 3600;
    await expectRefusedOnBothBindings(async () => bearer(await issuer.token({ exp: past })), { status: 401, reason: 'TOKEN_EXPIRED' });
  });

  it('not yet valid', async () => {
    const future = Math.floor(Date.now() / 1000) + 3600;
    await expectRefusedOnBothBindings(async () => bearer(await issuer.token({ nbf: future, exp: future + 3600 })), {
      status: 401,
      reason: 'TOKEN_NOT_YET_VALID',
    });
  });

  it('wrong issuer', async () => {
    await expectRefusedOnBothBindings(async () => bearer(await issuer.token({ iss: 'https://evil.example' })), { status: 401, reason: 'UNKNOWN_ISSUER' });
  });

  it('wrong audience', async () => {
    await expectRefusedOnBothBindings(async () => bearer(await issuer.token({ aud: 'another-service' })), { status: 401, reason: 'WRONG_AUDIENCE' });
  });

  it('unknown kid', async () => {
    await expectRefusedOnBothBindings(async () => bearer(await issuer.token({}, { kid: 'rotated-away' })), { status: 401, reason: 'UNKNOWN_KEY' });
  });

  it('tampered payload', async () => {
    await expectRefusedOnBothBindings(
      async () => {
        const [header, payload, signature] = (await issuer.token({ scope: 'a2a:read' })).split('.') as [string, string, string];
        const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
        claims.scope = 'a2a:read a2a:write a2a:admin';
        return bearer(`${header}.${b64url(JSON.stringify(claims))}.${signature}`);
      },
      { status: 401, reason: 'BAD_SIGNATURE' },
    );
  });

  it('a malformed Authorization header', async () => {
    await expectRefusedOnBothBindings(async () => ({ Authorization: 'Basic YWxpY2U6c2VjcmV0' }), { status: 401, reason: 'MALFORMED_CREDENTIALS' });
  });

  it('a valid token of tenant A used on tenant B: 403', async () => {
    const token = await issuer.token({ tenant: 'tenant-a' });
    const body = { tenant: 'tenant-b', message: textMessage('echo cross-tenant') };
    await expectUnchanged(gw, async () => {
      const jsonRpc = await rpc(gw.jsonRpcUrl, 'SendMessage', body, bearer(token));
      expect(jsonRpc.status).toBe(403);
      expect((jsonRpc.body.error as { code: number }).code).toBe(-31403);
      expect(JSON.stringify(jsonRpc.body)).toContain('TENANT_MISMATCH');
      const rest = await fetch(`${gw.restUrl}/tenant-b/message:send`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', ...bearer(token) },
        body: JSON.stringify({ message: textMessage('echo cross-tenant') }),
      });
      expect(rest.status).toBe(403);
      expect(((await rest.json()) as { error: { status: string } }).error.status).toBe('PERMISSION_DENIED');
    });
  });

  it('missing scope: 403 naming the scope', async () => {
    await expectRefusedOnBothBindings(async () => bearer(await issuer.token({ scope: 'a2a:read' })), { status: 403, reason: 'a2a:write' });
  });
});

describe('signed request attacks', () => {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'SendMessage', params: { message: textMessage('echo signed') } });

  async function postSigned(headers: Record<string, string>, sentBody = body): Promise<{ status: number; text: string; challenge: string | null }> {
    const response = await fetch(gw.jsonRpcUrl, { method: 'POST', headers, body: sentBody });
    return { status: response.status, text: await response.text(), challenge: response.headers.get('www-authenticate') };
  }

  async function expectSignedRefusal(headers: Record<string, string>, reason: string, sentBody = body): Promise<void> {
    await expectUnchanged(gw, async () => {
      const result = await postSigned(headers, sentBody);
      expect(result.status, result.text).toBe(401);
      expect(result.text).toContain(reason);
      expect((JSON.parse(result.text) as { error: { code: number } }).error.code).toBe(-31401);
      expect(result.challenge).toMatch(/Signature realm="a2a-gateway"/);
    });
  }

  it('a correctly signed request is accepted as the partner', async () => {
    const result = await postSigned(await partner.sign(gw.jsonRpcUrl, body));
    expect(result.status, result.text).toBe(200);
    expect((JSON.parse(result.text) as { result: { task: { id: string } } }).result.task.id).toBeTruthy();
  });

  it('body changed after signing', async () => {
    const headers = await partner.sign(gw.jsonRpcUrl, body);
    await expectSignedRefusal(headers, 'DIGEST_MISMATCH', body.replace('echo signed', 'echo forged'));
  });

  it('Content-Digest missing', async () => {
    const headers = await partner.sign(gw.jsonRpcUrl, body);
    const withoutDigest = Object.fromEntries(Object.entries(headers).filter(([name]) => name.toLowerCase() !== 'content-digest'));
    await expectSignedRefusal(withoutDigest, 'DIGEST_MISSING');
  });

  it('replayed nonce', async () => {
    const headers = await partner.sign(gw.jsonRpcUrl, body.replace('echo signed', 'echo once'));
    const first = await postSigned(headers, body.replace('echo signed', 'echo once'));
    expect(first.status, first.text).toBe(200);
    await expectSignedRefusal(headers, 'NONCE_REUSED', body.replace('echo signed', 'echo once'));
  });

  it('created outside the window (too old, and in the future)', async () => {
    const now = Math.floor(Date.now() / 1000);
    await expectSignedRefusal(await partner.sign(gw.jsonRpcUrl, body, { created: now - 3600 }), 'SIGNATURE_EXPIRED');
    await expectSignedRefusal(await partner.sign(gw.jsonRpcUrl, body, { created: now + 3600 }), 'SIGNATURE_NOT_YET_VALID');
  });

  it('unknown key id', async () => {
    await expectSignedRefusal(await partner.sign(gw.jsonRpcUrl, body, { keyId: 'nobody-key' }), 'UNKNOWN_KEY');
  });

  it('the right key id, signed with another key', async () => {
    const other = createTestPartner('other');
    await expectSignedRefusal(await partner.sign(gw.jsonRpcUrl, body, { privateKey: other.privateKey }), 'BAD_SIGNATURE');
  });

  it('signed for another target URI', async () => {
    const headers = await partner.sign(`${gw.restUrl}/message:send`, body);
    await expectSignedRefusal(headers, 'BAD_SIGNATURE');
  });
});
