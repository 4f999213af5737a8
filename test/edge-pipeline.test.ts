// The request pipeline of both bindings against a live, authenticating gateway over raw HTTP:
// headers are judged before the body is read (a refusal arrives while the client has sent only
// part of its body), credentials are read once and unambiguously, and the inputs that
// multiply (header fields, request ids, Last-Event-ID) are bounded with the spec's errors.
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SignJWT } from 'jose';
import { expectUnchanged, rpc, startTestGateway, textMessage, type TestGateway } from './support/harness.ts';
import { createTestIssuer, createTestPartner, TEST_AUDIENCE, TEST_ISSUER, type TestIssuer, type TestPartner } from './support/identity.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

let gw: TestGateway;
let issuer: TestIssuer;
let partner: TestPartner;
let token: string;

beforeAll(async () => {
  issuer = await createTestIssuer();
  partner = createTestPartner();
  gw = await startTestGateway({
    name: 'edge-pipeline',
    config: { auth: { enabled: true, issuers: [issuer.config], partners: [partner.config] } },
  });
  token = await issuer.token();
  const seeded = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('echo seed') }, { Authorization: `Bearer ${token}` });
  expect(seeded.status).toBe(200);
});

afterAll(async () => {
  await gw?.close();
});

interface PartialUpload {
  status: number;
  headers: IncomingHttpHeaders;
  body: Json;
  /** Body bytes the client had written when the answer arrived. */
  sentBytes: number;
}

/**
 * Announces a body of `declaredBytes`, sends only its first KiB, and waits for the answer
 * without sending more: only a server that judged the headers alone can answer.
 */
function uploadPartially(url: string, headers: Record<string, string | string[]>, declaredBytes = 500_000): Promise<PartialUpload> {
  return new Promise((resolve, reject) => {
    const first = Buffer.alloc(1024, 0x20);
    const req = httpRequest(url, { method: 'POST', agent: false, headers: { ...headers, 'Content-Length': String(declaredBytes) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json, sentBytes: first.length });
        req.destroy();
      });
    });
    req.on('error', () => undefined);
    req.write(first);
    setTimeout(() => {
      req.destroy();
      reject(new Error('no answer while the body was still being sent: the gateway waited for the body'));
    }, 5_000).unref();
  });
}

/** Sends raw header lines (repeated fields kept, which fetch would merge). */
function rawRequest(url: string, method: string, headers: [string, string][], body = ''): Promise<{ status: number; headers: IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    // With headers as a list Node adds no Host, which HTTP/1.1 requires.
    const flat = ['Host', new URL(url).host, ...headers.flat()];
    if (body !== '') flat.push('Content-Length', String(Buffer.byteLength(body)));
    const req = httpRequest(url, { method, agent: false, headers: flat }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const JSON_V1: [string, string][] = [
  ['Content-Type', 'application/json'],
  ['A2A-Version', '1.0'],
];

describe('headers are judged before the body is read', () => {
  it('no credentials: 401 while the client is still sending its body, on both bindings', async () => {
    for (const url of [gw.jsonRpcUrl, `${gw.restUrl}/message:send`]) {
      const answer = await expectUnchanged(gw, () => uploadPartially(url, { 'Content-Type': 'application/json', 'A2A-Version': '1.0' }));
      expect(answer.status, url).toBe(401);
      expect(answer.headers.connection, 'the unread body makes the connection unusable').toBe('close');
      expect(JSON.stringify(answer.body)).toContain('CREDENTIALS_MISSING');
    }
  });

  it('an invalid token: 401 before the body', async () => {
    const answer = await uploadPartially(gw.jsonRpcUrl, { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${await issuer.token({ aud: 'elsewhere' })}` });
    expect(answer.status).toBe(401);
    expect(answer.body).toMatchObject({ id: null, error: { code: -31401 } });
    expect(JSON.stringify(answer.body)).toContain('WRONG_AUDIENCE');
  });

  it('a signature that does not verify over the headers: 401 before the body', async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } });
    const signed = await partner.sign(`${gw.restUrl}/message:send`, body); // signed for another URI
    const answer = await uploadPartially(gw.jsonRpcUrl, signed);
    expect(answer.status).toBe(401);
    expect(JSON.stringify(answer.body)).toContain('BAD_SIGNATURE');
  });

  it('a wrong Content-Type: 415 before the body, with -32005 on JSON-RPC', async () => {
    const answer = await uploadPartially(gw.jsonRpcUrl, { 'Content-Type': 'text/plain', 'A2A-Version': '1.0', Authorization: `Bearer ${token}` });
    expect(answer.status).toBe(415);
    expect(answer.body).toMatchObject({ id: null, error: { code: -32005 } });
    const rest = await uploadPartially(`${gw.restUrl}/message:send`, { 'Content-Type': 'text/plain', 'A2A-Version': '1.0', Authorization: `Bearer ${token}` });
    expect(rest.status).toBe(415);
    expect(rest.body.error.details[0].reason).toBe('CONTENT_TYPE_NOT_SUPPORTED');
  });

  it('a declared length past maxBodyBytes: 413 before the body', async () => {
    const answer = await uploadPartially(gw.jsonRpcUrl, { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${token}` }, 2_000_000);
    expect(answer.status).toBe(413);
    expect(JSON.stringify(answer.body)).toContain('BODY_TOO_LARGE');
  });

  it('Expect: 100-continue: a refused request is answered without 100 Continue; an accepted one gets it', async () => {
    const withExpect = (authorization: string | undefined) =>
      new Promise<{ continued: boolean; status: number }>((resolve, reject) => {
        const body = JSON.stringify({ jsonrpc: '2.0', id: 'x', method: 'GetTask', params: { id: 'missing' } });
        let continued = false;
        const req = httpRequest(gw.jsonRpcUrl, {
          method: 'POST',
          agent: false,
          headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Expect: '100-continue', 'Content-Length': String(body.length), ...(authorization ? { Authorization: authorization } : {}) },
        });
        req.on('continue', () => {
          continued = true;
          req.end(body);
        });
        req.on('response', (res) => {
          res.resume();
          res.on('end', () => resolve({ continued, status: res.statusCode ?? 0 }));
        });
        req.on('error', reject);
        req.flushHeaders();
      });
    expect(await withExpect(undefined)).toEqual({ continued: false, status: 401 });
    expect(await withExpect(`Bearer ${token}`)).toEqual({ continued: true, status: 200 });
  });
});

describe('credentials are presented once', () => {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 'amb', method: 'SendMessage', params: { message: textMessage('echo ambiguous') } });

  it('two Authorization headers: 400 AMBIGUOUS_CREDENTIALS on both bindings, even if both are valid', async () => {
    await expectUnchanged(gw, async () => {
      for (const url of [gw.jsonRpcUrl, `${gw.restUrl}/message:send`]) {
        const restBody = url === gw.jsonRpcUrl ? body : JSON.stringify({ message: textMessage('echo ambiguous') });
        const answer = await rawRequest(url, 'POST', [...JSON_V1, ['Authorization', `Bearer ${token}`], ['Authorization', `Bearer ${await issuer.token({ sub: 'mallory' })}`]], restBody);
        expect(answer.status, answer.text).toBe(400);
        expect(answer.text).toContain('AMBIGUOUS_CREDENTIALS');
        expect(answer.headers['www-authenticate']).toContain('error="invalid_request"');
      }
    });
  });

  it('a bearer token beside a valid signature: 400, whichever would have verified', async () => {
    const signed = await partner.sign(gw.jsonRpcUrl, body);
    await expectUnchanged(gw, async () => {
      const answer = await rawRequest(gw.jsonRpcUrl, 'POST', [...Object.entries(signed), ['Authorization', `Bearer ${token}`]], body);
      expect(answer.status, answer.text).toBe(400);
      expect(JSON.parse(answer.text)).toMatchObject({ id: null, error: { code: -31401 } });
      expect(answer.text).toContain('AMBIGUOUS_CREDENTIALS');
    });
  });

  it('a signed request alone still passes, its body checked against the signed digest after it was read', async () => {
    const signed = await partner.sign(gw.jsonRpcUrl, body);
    const answer = await rawRequest(gw.jsonRpcUrl, 'POST', Object.entries(signed), body);
    expect(answer.status, answer.text).toBe(200);
    expect(JSON.parse(answer.text).result.task.id).toBeTruthy();
  });
});

describe('JWT typ', () => {
  const tokenOfType = async (typ: string | undefined): Promise<string> => {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ scope: 'a2a:read' })
      .setProtectedHeader({ alg: 'ES256', kid: issuer.ec.kid, ...(typ === undefined ? {} : { typ }) })
      .setIssuer(TEST_ISSUER)
      .setAudience(TEST_AUDIENCE)
      .setSubject('alice')
      .setIssuedAt(now)
      .setExpirationTime(now + 600)
      .sign(issuer.ec.privateKey);
  };

  it('accepts no typ, JWT, at+jwt and application/at+jwt', async () => {
    for (const typ of [undefined, 'JWT', 'at+jwt', 'application/at+jwt', 'AT+JWT']) {
      const answer = await rpc(gw.jsonRpcUrl, 'ListTasks', {}, { Authorization: `Bearer ${await tokenOfType(typ)}` });
      expect(answer.status, `typ ${typ}`).toBe(200);
    }
  });

  it('refuses any other type (an ID token, a logout token, a DPoP proof) with WRONG_TOKEN_TYPE', async () => {
    for (const typ of ['JWT+id', 'logout+jwt', 'dpop+jwt', 'secevent+jwt']) {
      const answer = await rpc(gw.jsonRpcUrl, 'ListTasks', {}, { Authorization: `Bearer ${await tokenOfType(typ)}` });
      expect(answer.status, `typ ${typ}`).toBe(401);
      expect(JSON.stringify(answer.body)).toContain('WRONG_TOKEN_TYPE');
    }
  });
});

describe('bounded inputs', () => {
  it('more than maxHeaderCount (100) header fields: 431 on both bindings and on the public routes, instead of dropping the rest', async () => {
    const filler: [string, string][] = Array.from({ length: 100 }, (_, i) => [`X-Filler-${i}`, 'x']);
    const rpcAnswer = await rawRequest(gw.jsonRpcUrl, 'POST', [...JSON_V1, ...filler, ['Authorization', `Bearer ${token}`]], '{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}');
    expect(rpcAnswer.status).toBe(431);
    expect(JSON.parse(rpcAnswer.text)).toMatchObject({ error: { code: -32600 } });
    expect(rpcAnswer.text).toContain('TOO_MANY_HEADERS');
    const restAnswer = await rawRequest(`${gw.restUrl}/tasks`, 'GET', [['A2A-Version', '1.0'], ...filler]);
    expect(restAnswer.status).toBe(431);
    expect(JSON.parse(restAnswer.text).error.code).toBe(431);
    expect((await rawRequest(`${gw.url}/healthz`, 'GET', filler)).status).toBe(431);
    // Exactly 100 fields are fine: 98 here, plus Host and the Connection field Node adds.
    expect((await rawRequest(`${gw.url}/healthz`, 'GET', filler.slice(0, 98))).status).toBe(200);
  });

  it('a JSON-RPC string id longer than 128 characters is -32600 with id null; 128 is accepted', async () => {
    const call = (id: string) =>
      fetch(gw.jsonRpcUrl, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${token}` },
        body: JSON.stringify({ jsonrpc: '2.0', id, method: 'ListTasks', params: {} }),
      }).then(async (r) => (await r.json()) as Json);
    const refused = await expectUnchanged(gw, () => call('i'.repeat(129)));
    expect(refused).toMatchObject({ id: null, error: { code: -32600 } });
    expect(JSON.stringify(refused.error.data)).toContain('at most 128');
    const accepted = await call('i'.repeat(128));
    expect(accepted.id).toBe('i'.repeat(128));
    expect(accepted.result).toBeDefined();
  });

  it('a Last-Event-ID whose sequence is 2^64 is InvalidParams, not an internal error', async () => {
    const sent = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('long 3') }, { Authorization: `Bearer ${token}` });
    const taskId = (sent.body.result as Json).task.id as string;
    const rest = await fetch(`${gw.restUrl}/tasks/${taskId}:subscribe`, {
      method: 'POST',
      headers: { 'A2A-Version': '1.0', Authorization: `Bearer ${token}`, 'Last-Event-ID': '1700000000000-18446744073709551616' },
    });
    expect(rest.status).toBe(400);
    expect(JSON.stringify(await rest.json())).toContain('Last-Event-ID');
    const jsonRpc = await rpc(gw.jsonRpcUrl, 'SubscribeToTask', { id: taskId }, { Authorization: `Bearer ${token}`, 'Last-Event-ID': '18446744073709551616-0' });
    expect(jsonRpc.body).toMatchObject({ id: 1, error: { code: -32602 } });
  });
});
