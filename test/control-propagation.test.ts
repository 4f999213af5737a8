// Propagation of control-plane changes across processes: gateways started as processes of their
// own on one Redis. A partner and an API key put through gateway A are in effect at gateway B
// within a second; revoked through A, refused at B within a second; B restarted holds them
// before it reports ready. And in one process: a change whose notification never arrived is
// still picked up by the sequence poll.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPairSync } from 'node:crypto';
import { ControlView } from '../src/control/control-view.ts';
import { createLogger } from '../src/logging/logger.ts';
import { ControlStore } from '../src/store/control/control-store.ts';
import { adminCall } from './support/admin-client.ts';
import { spawnGatewayProcess, type GatewayProcess } from './support/gateway-process.ts';
import { deletePrefix, REDIS_URL, uniquePrefix, waitFor } from './support/harness.ts';
import { createTestIssuer, createTestPartner, type TestIssuer } from './support/identity.ts';

/** The bound the control plane promises: a change is in effect everywhere within it. */
const PROPAGATION_MS = 1_000;

/** Resolves once `probe` is true, failing if that took longer than the propagation bound. */
async function withinPropagationBound(probe: () => Promise<boolean>, what: string): Promise<void> {
  const started = Date.now();
  await waitFor(async () => ((await probe()) ? true : undefined), PROPAGATION_MS + 500, what);
  expect(Date.now() - started, `${what} took longer than ${PROPAGATION_MS} ms`).toBeLessThanOrEqual(PROPAGATION_MS);
}

describe('control-plane changes across gateway processes', () => {
  const prefix = uniquePrefix('control-prop');
  let dir: string;
  let issuer: TestIssuer;
  let admin: string;
  let env: Record<string, string>;
  let a: GatewayProcess;
  let b: GatewayProcess;
  const partner = createTestPartner('roaming', ['a2a:read']);

  const listTasksSigned = async (gateway: GatewayProcess): Promise<number> => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} });
    const url = `${gateway.url}/a2a/jsonrpc`;
    const response = await fetch(url, { method: 'POST', headers: await partner.sign(url, body), body });
    const answer = (await response.json()) as { result?: unknown };
    return answer.result === undefined ? 401 : 200;
  };
  const listTasksWithKey = async (gateway: GatewayProcess, key: string): Promise<number> =>
    (await fetch(`${gateway.url}/a2a/rest/tasks`, { headers: { 'X-API-Key': key, 'A2A-Version': '1.0' } })).status;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'a2a-control-prop-'));
    issuer = await createTestIssuer();
    admin = await issuer.token({ scope: 'a2a:admin a2a:platform', sub: 'root' });
    const configFile = join(dir, 'gateway.json');
    await writeFile(configFile, JSON.stringify({ auth: { enabled: true, issuers: [issuer.config] }, cardSigning: false, dataDir: dir }));
    env = { A2A_CONFIG: configFile, A2A_AUTH_ENABLED: 'true' };
    [a, b] = await Promise.all([spawnGatewayProcess(prefix, env), spawnGatewayProcess(prefix, env)]);
  }, 60_000);

  afterAll(async () => {
    a?.kill('SIGTERM');
    b?.kill('SIGTERM');
    await Promise.all([a?.exited, b?.exited]);
    const redis = new Redis(REDIS_URL);
    await deletePrefix(redis, prefix);
    await redis.quit();
    await rm(dir, { recursive: true, force: true });
  });

  let key = '';
  let keyName = '';

  it('a partner and an API key put through A are in effect at B within a second', async () => {
    expect(await listTasksSigned(b)).toBe(401);
    const { id: _id, ...spec } = partner.config;
    expect((await adminCall(a.url, 'PUT', `/partners/${partner.id}`, { token: admin, body: spec })).status).toBe(201);
    await withinPropagationBound(async () => (await listTasksSigned(b)) === 200, 'the partner at gateway B');

    const created = await adminCall(a.url, 'POST', '/api-keys', { token: admin, body: { owner: 'roamer', scopes: ['a2a:read'], expiresAt: new Date(Date.now() + 3600_000).toISOString() } });
    expect(created.status).toBe(201);
    key = created.body.key as string;
    keyName = created.body.name as string;
    await withinPropagationBound(async () => (await listTasksWithKey(b, key)) === 200, 'the API key at gateway B');
  });

  it('B restarted holds every resource before it reports ready', async () => {
    b.kill('SIGTERM');
    await b.exited;
    b = await spawnGatewayProcess(prefix, env);
    expect(await listTasksWithKey(b, key)).toBe(200);
    expect(await listTasksSigned(b)).toBe(200);
    const shown = await adminCall(b.url, 'GET', `/api-keys/${keyName}`, { token: admin });
    expect(shown.body).toMatchObject({ owner: 'roamer', version: 1 });
  }, 60_000);

  it('revoked through A, refused at B within a second', async () => {
    expect((await adminCall(a.url, 'DELETE', `/api-keys/${keyName}`, { token: admin })).status).toBe(204);
    await withinPropagationBound(async () => (await listTasksWithKey(b, key)) === 401, 'the revocation at gateway B');
    expect((await adminCall(a.url, 'DELETE', `/partners/${partner.id}`, { token: admin })).status).toBe(204);
    await withinPropagationBound(async () => (await listTasksSigned(b)) === 401, 'the partner removal at gateway B');
  });

  it('B answers a stale If-Match from a version A wrote with 412', async () => {
    const made = await adminCall(a.url, 'PUT', '/api-keys/shared', { token: admin, body: { owner: 'x', scopes: ['a2a:read'], expiresAt: new Date(Date.now() + 3600_000).toISOString() } });
    expect(made.status).toBe(201);
    const replaced = await adminCall(a.url, 'PUT', '/api-keys/shared', { token: admin, body: { owner: 'y', scopes: ['a2a:read'], expiresAt: new Date(Date.now() + 3600_000).toISOString() }, headers: { 'If-Match': '"1"' } });
    expect(replaced.status).toBe(200);
    const stale = await adminCall(b.url, 'PUT', '/api-keys/shared', { token: admin, body: { owner: 'z', scopes: ['a2a:read'], expiresAt: new Date(Date.now() + 3600_000).toISOString() }, headers: { 'If-Match': '"1"' } });
    expect(stale.status).toBe(412);
    expect((await adminCall(b.url, 'GET', '/api-keys/shared', { token: admin })).body).toMatchObject({ owner: 'y', version: 2 });
  });
});

describe('a change whose notification was lost', () => {
  const prefix = uniquePrefix('control-poll');
  const redis = new Redis(REDIS_URL);
  const subscriber = new Redis(REDIS_URL);

  afterAll(async () => {
    await deletePrefix(redis, prefix);
    await Promise.all([redis.quit(), subscriber.quit()]);
  });

  it('is picked up by the sequence poll', async () => {
    const view = new ControlView(new ControlStore(redis, prefix, { auditKept: 100, maxResources: 100 }), createLogger('silent'));
    await view.start(subscriber, 250);
    try {
      // A writer whose PUBLISH never leaves: only the poll can tell the view.
      const silent = redis.duplicate();
      silent.publish = (() => Promise.resolve(0)) as typeof silent.publish;
      const writer = new ControlStore(silent, prefix, { auditKept: 100, maxResources: 100 });
      const publicKey = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' });
      const outcome = await writer.write({
        kind: 'partners',
        name: 'quiet',
        tenant: '',
        expected: { absent: true },
        resource: JSON.stringify({ kind: 'partners', name: 'quiet', tenant: '', spec: { id: 'quiet', keys: [{ keyId: 'q', publicKey }], scopes: ['a2a:read'], tenant: '' }, updatedAt: '', updatedBy: 'test' }),
        actor: 'test',
        nowMs: Date.now(),
      });
      expect(outcome).toMatchObject({ ok: true, version: 1 });
      await waitFor(() => view.get('partners', 'quiet'), 2_000, 'the polled change');
      expect(view.seq).toBe((outcome as { seq: number }).seq);
      await silent.quit();
    } finally {
      view.stop();
    }
  });
});
