// Outbound credentials of the a2a adapter, each checked by a real downstream: a static bearer
// token (re-read from its file after a 401), OAuth2 client credentials against a token endpoint
// this test runs (cached, refreshed before expiry), and RFC 9421 signatures verified by another
// gateway that has this gateway registered as a signing partner.
import { createHash, generateKeyPairSync, randomBytes, type JsonWebKey } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SendMessageRequest, TaskState, type Message, type Part, type Task } from '@a2a-js/sdk';
import { ClientFactory, type Client } from '@a2a-js/sdk/client';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnDownstreamAgent, type DownstreamAgentProcess } from './support/downstream-agent.ts';
import { startTestGateway, type TestGateway } from './support/harness.ts';
import { createTestPartner } from './support/identity.ts';

const FAST = { retryInitialDelayMs: 50, retryMaxDelayMs: 500, pollInitialDelayMs: 50, pollMaxDelayMs: 300 };
const partText = (part: Part): string => (part.content?.$case === 'text' ? part.content.value : '');
const messageText = (message: Message | undefined): string => (message?.parts ?? []).map(partText).join('');
const fingerprint = (token: string): string => createHash('sha256').update(token).digest('hex').slice(0, 12);

async function send(client: Client, text: string): Promise<Task> {
  const result = await client.sendMessage(SendMessageRequest.fromJSON({ message: { messageId: `cr-${randomBytes(8).toString('hex')}`, role: 'ROLE_USER', parts: [{ text }] } }));
  expect('status' in result).toBe(true);
  return result as Task;
}

const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

async function gatewayFor(name: string, adapterOptions: Record<string, unknown>): Promise<{ gw: TestGateway; client: Client }> {
  const gw = await startTestGateway({ name, config: { adapter: 'a2a', adapterOptions: { ...FAST, ...adapterOptions } } });
  closers.push(() => gw.close());
  return { gw, client: await new ClientFactory().createFromUrl(gw.url) };
}

describe('static bearer token', () => {
  let downstream: DownstreamAgentProcess;
  const tokenFile = join(tmpdir(), `a2a-bearer-${randomBytes(6).toString('hex')}`);

  beforeAll(async () => {
    downstream = await spawnDownstreamAgent({ auth: 'bearer', env: { DOWNSTREAM_BEARER_TOKEN: 'right-token' } });
    closers.push(() => downstream.close(), () => rm(tokenFile, { force: true }));
  }, 60_000);

  it('a refused token fails the turn with the reason; a token file rotated since is read again after the 401', async () => {
    await writeFile(tokenFile, 'wrong-token\n');
    const { client } = await gatewayFor('remote-bearer', { url: downstream.url, credentials: { type: 'bearer', tokenFile } });
    const refused = await send(client, 'echo with the wrong token');
    expect(refused.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(messageText(refused.status?.message)).toContain('the downstream agent refused our credentials (HTTP 401');
    expect(messageText(refused.status?.message)).not.toContain('wrong-token');
    const failuresBefore = (await downstream.stats()).authFailures;
    expect(failuresBefore).toBeGreaterThan(0);

    await writeFile(tokenFile, 'right-token\n');
    const accepted = await send(client, 'echo with the rotated token');
    expect(accepted.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const stats = await downstream.stats();
    // One more 401 (the cached wrong token), then the re-read token was accepted.
    expect(stats.authFailures).toBe(failuresBefore + 1);
    expect(stats.credentialsSeen).toContain(fingerprint('right-token'));
  });
});

describe('OAuth2 client credentials', () => {
  const SECRET = randomBytes(32).toString('hex');
  let tokenServer: Server;
  let tokenUrl = '';
  const issued: string[] = [];
  const requests: { authorization: string | undefined; body: string }[] = [];
  let downstream: DownstreamAgentProcess;

  beforeAll(async () => {
    // The authorization server: client "gateway" with secret "s3cret", 2-second tokens for the downstream.
    tokenServer = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        requests.push({ authorization: req.headers.authorization, body });
        const form = new URLSearchParams(body);
        const basic = `Basic ${Buffer.from('gateway:s3cret').toString('base64')}`;
        res.setHeader('Content-Type', 'application/json');
        if (req.headers.authorization !== basic || form.get('grant_type') !== 'client_credentials') {
          res.statusCode = 401;
          res.end(JSON.stringify({ error: 'invalid_client', error_description: 'unknown client or wrong secret' }));
          return;
        }
        void new SignJWT({ scope: form.get('scope') ?? '' })
          .setProtectedHeader({ alg: 'HS256' })
          .setAudience('downstream-agent')
          .setSubject('gateway')
          .setJti(randomBytes(8).toString('hex'))
          .setExpirationTime(Math.floor(Date.now() / 1000) + 30)
          .sign(new TextEncoder().encode(SECRET))
          .then((token) => {
            issued.push(token);
            res.end(JSON.stringify({ access_token: token, token_type: 'Bearer', expires_in: 2 }));
          });
      });
    });
    await new Promise<void>((resolve) => tokenServer.listen(0, '127.0.0.1', resolve));
    const address = tokenServer.address();
    tokenUrl = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}/token`;
    closers.push(() => new Promise<void>((resolve) => tokenServer.close(() => resolve())));
    downstream = await spawnDownstreamAgent({ auth: 'oauth2', env: { DOWNSTREAM_OAUTH_SECRET: SECRET } });
    closers.push(() => downstream.close());
    process.env.A2A_TEST_OAUTH_CLIENT_SECRET = 's3cret';
    process.env.A2A_TEST_OAUTH_WRONG_SECRET = 'not-the-secret';
  }, 60_000);

  it('one token serves many calls, a new one is fetched before the old expires, and the downstream accepts both', async () => {
    const { client } = await gatewayFor('remote-oauth', {
      url: downstream.url,
      credentials: { type: 'oauth2-client-credentials', tokenUrl, clientId: 'gateway', clientSecretEnv: 'A2A_TEST_OAUTH_CLIENT_SECRET', scope: 'a2a:write' },
    });
    for (const text of ['echo one', 'echo two', 'stream 3 20']) expect((await send(client, text)).status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(issued).toHaveLength(1);
    expect(new URLSearchParams(requests[0]?.body).get('scope')).toBe('a2a:write');
    // Past 80% of the 2 s lifetime the cached token is replaced before use.
    await new Promise((resolve) => setTimeout(resolve, 1_800));
    expect((await send(client, 'echo three')).status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(issued).toHaveLength(2);
    const stats = await downstream.stats();
    expect(stats.authFailures).toBe(0);
    expect(new Set(stats.credentialsSeen)).toEqual(new Set(issued.map(fingerprint)));
  });

  it('client credentials the token endpoint refuses fail the turn, naming the client and the OAuth error', async () => {
    const { client } = await gatewayFor('remote-oauth-wrong', {
      url: downstream.url,
      credentials: { type: 'oauth2-client-credentials', tokenUrl, clientId: 'gateway', clientSecretEnv: 'A2A_TEST_OAUTH_WRONG_SECRET' },
    });
    const task = await send(client, 'echo never');
    expect(task.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(messageText(task.status?.message)).toContain('the token endpoint refused the client credentials of "gateway": invalid_client (unknown client or wrong secret)');
    expect(messageText(task.status?.message)).not.toContain('not-the-secret');
  });
});

describe('RFC 9421 signatures with the gateway partner key', () => {
  const partner = createTestPartner('upstream-gateway');
  const keyFile = join(tmpdir(), `a2a-partner-key-${randomBytes(6).toString('hex')}.json`);
  const otherKeyFile = join(tmpdir(), `a2a-other-key-${randomBytes(6).toString('hex')}.json`);
  let downstreamGateway: TestGateway;

  beforeAll(async () => {
    await writeFile(keyFile, JSON.stringify(partner.privateKey.export({ format: 'jwk' })));
    await writeFile(otherKeyFile, JSON.stringify(generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' }) as JsonWebKey));
    closers.push(() => rm(keyFile, { force: true }), () => rm(otherKeyFile, { force: true }));
    // The downstream is another a2a-gateway (demo agent) that knows this gateway as a signing partner.
    downstreamGateway = await startTestGateway({ name: 'remote-sig-downstream', config: { auth: { enabled: true, partners: [partner.config] } } });
    closers.push(() => downstreamGateway.close());
  }, 60_000);

  it('signed calls are accepted by the downstream, which verifies digest, key and nonce', async () => {
    const { client } = await gatewayFor('remote-sig', { url: downstreamGateway.url, credentials: { type: 'signature', keyId: partner.keyId, privateKeyFile: keyFile } });
    const task = await send(client, 'stream signed and streamed');
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const artifact = task.artifacts.map((a) => a.parts.map(partText).join('')).join('');
    expect(artifact).toContain('signed and streamed');
    // The downstream stored the task for the partner principal.
    const owners = await downstreamGateway.redis.keys(`${downstreamGateway.prefix}:*upstream-gateway*`);
    expect(owners.length).toBeGreaterThan(0);
  });

  it('a signature with a key the downstream does not know fails the turn with the downstream reason', async () => {
    const { client } = await gatewayFor('remote-sig-bad', { url: downstreamGateway.url, credentials: { type: 'signature', keyId: partner.keyId, privateKeyFile: otherKeyFile } });
    const task = await send(client, 'echo never');
    expect(task.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(messageText(task.status?.message)).toMatch(/the downstream agent refused our credentials \(HTTP 401: .*signature/i);
  });
});
