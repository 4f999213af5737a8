// The control plane's propagation promise, measured with three gateway processes and two worker
// processes on one Redis (issue 27): a change made through any gateway is in effect at every
// gateway and worker within a second; two gateways writing clashing resources at once cannot
// both succeed; a gateway that lost Redis while a change was made is not ready until it has
// caught up, and serves the change as soon as it is; and after every process is stopped and
// started again, the state is intact. Gateway 3 reaches Redis through a TCP relay this file
// controls, so its connection can be cut while the others go on. Each delay is printed.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCall } from './support/admin-client.ts';
import { printed, whenChildReady } from './support/child-ready.ts';
import { nodeEntryArgs } from './support/compiled-sources.ts';
import { spawnGatewayProcess, type GatewayProcess } from './support/gateway-process.ts';
import { deletePrefix, REDIS_URL, ROOT, rpc, textMessage, uniquePrefix, waitFor } from './support/harness.ts';
import { createTestIssuer, createTestPartner } from './support/identity.ts';
import { startTestOidcProvider, type TestOidcProvider } from './support/oidc-provider.ts';

/** The bound the control plane promises: a change is in effect everywhere within it. */
const PROPAGATION_MS = 1_000;
/**
 * An issuer configured by its URL alone is trusted within the bound, but each gateway then
 * fetches its discovery document and keys from the provider: its first token waits for that
 * round trip too, which is the provider's time, not the control plane's.
 */
const DISCOVERY_ALLOWANCE_MS = 1_000;
/** How long a probe is retried before the test gives up (the bound is asserted on the measured delay). */
const PROBE_GIVE_UP_MS = 10_000;

/** A TCP relay to Redis that can be cut (every connection dropped, new ones refused) and restored on the same port. */
interface RedisRelay {
  url: string;
  cut(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

async function startRedisRelay(): Promise<RedisRelay> {
  const target = new URL(REDIS_URL);
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let port = 0;
  const listen = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const next = createServer((client) => {
        const upstream = connect(Number(target.port || 6379), target.hostname);
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('close', () => sockets.delete(socket));
          socket.on('error', () => undefined);
        }
        client.pipe(upstream);
        upstream.pipe(client);
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => client.destroy());
      });
      next.once('error', reject);
      next.listen(port, '127.0.0.1', () => {
        port = (next.address() as { port: number }).port;
        server = next;
        resolve();
      });
    });
  const stop = async (): Promise<void> => {
    const closing = server;
    server = undefined;
    for (const socket of sockets) socket.destroy();
    if (closing !== undefined) await new Promise<void>((resolve) => closing.close(() => resolve()));
  };
  await listen();
  return { url: `redis://127.0.0.1:${port}`, cut: stop, restore: listen, close: stop };
}

interface WorkerChild {
  child: ChildProcess;
  output(): string;
  exited: Promise<string>;
}

/** A worker process whose log (info level) this test reads: it says when it applied a stored agent. */
async function spawnWorker(prefix: string, env: Record<string, string>): Promise<WorkerChild> {
  const child = spawn(process.execPath, [...nodeEntryArgs('src/cli/main.ts'), 'worker'], {
    cwd: ROOT,
    env: { ...process.env, A2A_REDIS_URL: REDIS_URL, A2A_KEY_PREFIX: prefix, A2A_LOG_LEVEL: 'info', A2A_LOCK_DURATION_MS: '2000', A2A_STALLED_INTERVAL_MS: '1000', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? String(code))));
  const { output } = await whenChildReady(child, { name: 'worker process', ready: printed('a2a-gateway worker:'), timeoutMs: 60_000 });
  return { child, output, exited };
}

const appliedAgent = (worker: WorkerChild, name: string): boolean =>
  worker
    .output()
    .split('\n')
    .some((line) => line.includes('agent applied (admin API)') && line.includes(`"agent":"${name}"`));

describe('control-plane propagation across 3 gateways and 2 workers', () => {
  const prefix = uniquePrefix('control-cluster');
  const delays: Record<string, number> = {};
  let dir: string;
  let env: Record<string, string>;
  let relay: RedisRelay;
  let idp: TestOidcProvider;
  let admin: string;
  let user: string;
  let gateways: GatewayProcess[] = [];
  let workers: WorkerChild[] = [];
  const partner = createTestPartner('cluster-partner', ['a2a:read']);
  let keyName = '';
  let key = '';
  let revokedKey = '';

  /**
   * Every started process is listed (so the suite's end stops it) even when another failed to start.
   * They start side by side: from plain JavaScript (compiled-sources.ts) that takes about half the
   * wall time of one after the other when a core is free.
   */
  const startAll = async <T>(starts: (() => Promise<T>)[], into: T[]): Promise<void> => {
    const started = await Promise.allSettled(starts.map((start) => start()));
    for (const result of started) if (result.status === 'fulfilled') into.push(result.value);
    const failed = started.find((result): result is PromiseRejectedResult => result.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
  };
  const startGateways = async (): Promise<void> => {
    gateways = [];
    // Gateway 3 is the one behind the relay.
    await startAll([() => spawnGatewayProcess(prefix, env), () => spawnGatewayProcess(prefix, env), () => spawnGatewayProcess(prefix, { ...env, A2A_REDIS_URL: relay.url })], gateways);
  };
  const startWorkers = async (): Promise<void> => {
    workers = [];
    await startAll([() => spawnWorker(prefix, { A2A_CONFIG: env.A2A_CONFIG as string }), () => spawnWorker(prefix, { A2A_CONFIG: env.A2A_CONFIG as string })], workers);
  };
  const stopAll = async (): Promise<void> => {
    for (const gateway of gateways) gateway.kill('SIGTERM');
    for (const worker of workers) if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGTERM');
    await Promise.all([...gateways.map((gateway) => gateway.exited), ...workers.map((worker) => worker.exited)]);
  };

  /** Waits until `probe` holds, records the delay since `since` under `what` and asserts it is within the bound. */
  const inEffect = async (what: string, since: number, probe: () => Promise<boolean> | boolean, boundMs = PROPAGATION_MS): Promise<void> => {
    await waitFor(async () => ((await probe()) ? true : undefined), PROBE_GIVE_UP_MS, what);
    delays[what] = Date.now() - since;
    expect(delays[what], `${what} took ${delays[what]} ms`).toBeLessThanOrEqual(boundMs);
  };
  /** The same probe at every gateway at once, each timed on its own. */
  const atEveryGateway = (what: string, since: number, probe: (gateway: GatewayProcess) => Promise<boolean>, boundMs = PROPAGATION_MS): Promise<void[]> =>
    Promise.all(gateways.map((gateway, index) => inEffect(`${what} at gateway ${index + 1}`, since, () => probe(gateway), boundMs)));

  const cardOf = async (gateway: GatewayProcess, path: string): Promise<{ status: number; body?: Record<string, unknown> }> => {
    const response = await fetch(`${gateway.url}${path}/.well-known/agent-card.json`);
    return response.status === 200 ? { status: 200, body: (await response.json()) as Record<string, unknown> } : { status: response.status };
  };
  const schemesOf = async (gateway: GatewayProcess): Promise<string[]> => Object.keys(((await cardOf(gateway, '')).body?.securitySchemes as Record<string, unknown> | undefined) ?? {});
  const withKey = async (gateway: GatewayProcess, apiKey: string): Promise<number> => (await fetch(`${gateway.url}/a2a/rest/tasks`, { headers: { 'X-API-Key': apiKey, 'A2A-Version': '1.0' } })).status;
  const withToken = async (gateway: GatewayProcess, token: string): Promise<number> => (await fetch(`${gateway.url}/a2a/rest/tasks`, { headers: { Authorization: `Bearer ${token}`, 'A2A-Version': '1.0' } })).status;
  const signed = async (gateway: GatewayProcess): Promise<number> => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} });
    const url = `${gateway.url}/a2a/jsonrpc`;
    const response = await fetch(url, { method: 'POST', headers: await partner.sign(url, body), body });
    return ((await response.json()) as { result?: unknown }).result === undefined ? 401 : 200;
  };
  const completes = async (gateway: GatewayProcess, agent: string): Promise<void> => {
    const answer = await rpc(`${gateway.url}/agents/${agent}/a2a/jsonrpc`, 'SendMessage', { message: textMessage('across the cluster') }, { Authorization: `Bearer ${user}` });
    expect(answer.status).toBe(200);
    expect((answer.body.result as { task: { status: { state: string } } }).task.status.state).toBe('TASK_STATE_COMPLETED');
  };
  const readyz = async (gateway: GatewayProcess): Promise<number> => (await fetch(`${gateway.url}/readyz`)).status;
  const newKey = async (via: GatewayProcess, owner: string): Promise<{ name: string; key: string }> => {
    const created = await adminCall(via.url, 'POST', '/api-keys', { token: admin, body: { owner, scopes: ['a2a:read'], expiresAt: new Date(Date.now() + 3600_000).toISOString() } });
    expect(created.status).toBe(201);
    return { name: created.body.name as string, key: created.body.key as string };
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'a2a-control-cluster-'));
    relay = await startRedisRelay();
    idp = await startTestOidcProvider();
    const issuer = await createTestIssuer();
    admin = await issuer.token({ scope: 'a2a:admin a2a:platform', sub: 'root' });
    user = await issuer.token({ scope: 'a2a:read a2a:write', sub: 'alice' });
    const configFile = join(dir, 'gateway.json');
    await writeFile(configFile, JSON.stringify({ auth: { enabled: true, issuers: [issuer.config] }, cardSigning: false, dataDir: dir }));
    env = { A2A_CONFIG: configFile, A2A_AUTH_ENABLED: 'true' };
    await startGateways();
    await startWorkers();
  }, 240_000);

  afterAll(async () => {
    await stopAll();
    console.log(`control-plane propagation delays (ms, bound ${PROPAGATION_MS}):\n${Object.entries(delays).map(([what, ms]) => `  ${String(ms).padStart(5)}  ${what}`).join('\n')}`);
    await relay?.close();
    await idp?.close();
    const redis = new Redis(REDIS_URL);
    await deletePrefix(redis, prefix);
    await redis.quit();
    await rm(dir, { recursive: true, force: true });
  }, 60_000);

  it('an agent put through gateway 1 is served by gateways 2 and 3 and run by both workers within a second', async () => {
    const put = await adminCall(gateways[0]!.url, 'PUT', '/agents/roamer', { token: admin, body: { adapter: 'demo', adapterOptions: { stepMs: 10 }, card: { name: 'Roamer' } } });
    expect(put.status).toBe(201);
    const since = Date.now();
    await Promise.all([
      atEveryGateway('agent put', since, async (gateway) => (await cardOf(gateway, '/agents/roamer')).body?.name === 'Roamer'),
      ...workers.map((worker, index) => inEffect(`agent put at worker ${index + 1}`, since, () => appliedAgent(worker, 'roamer'))),
    ]);
    await completes(gateways[1]!, 'roamer');
    await completes(gateways[2]!, 'roamer');
  });

  it('an API key revoked through gateway 2 is refused at all three within a second', async () => {
    ({ name: keyName, key } = await newKey(gateways[0]!, 'cluster-bot'));
    await atEveryGateway('API key created', Date.now(), async (gateway) => (await withKey(gateway, key)) === 200);
    const removed = await adminCall(gateways[1]!.url, 'DELETE', `/api-keys/${keyName}`, { token: admin });
    expect(removed.status).toBe(204);
    await atEveryGateway('API key revoked', Date.now(), async (gateway) => (await withKey(gateway, key)) === 401);
    revokedKey = key;
    ({ name: keyName, key } = await newKey(gateways[2]!, 'cluster-bot'));
  });

  it('a partner put through gateway 3 and an issuer put through gateway 2 are in effect at all three within a second', async () => {
    const { id: _id, ...spec } = partner.config;
    expect((await adminCall(gateways[2]!.url, 'PUT', `/partners/${partner.id}`, { token: admin, body: spec })).status).toBe(201);
    await atEveryGateway('partner put', Date.now(), async (gateway) => (await signed(gateway)) === 200);

    const put = await adminCall(gateways[1]!.url, 'PUT', '/issuers/cluster-idp', { token: admin, body: { issuer: idp.issuer, audience: 'a2a-cluster', algorithms: ['ES256'] } });
    expect(put.status).toBe(201);
    const since = Date.now();
    const token = await idp.token({ sub: 'bob', aud: 'a2a-cluster', scope: 'a2a:read' });
    await Promise.all([
      atEveryGateway('issuer on the card', since, async (gateway) => (await schemesOf(gateway)).includes('oidc-cluster-idp')),
      atEveryGateway('issuer tokens accepted (discovery included)', since, async (gateway) => (await withToken(gateway, token)) === 200, PROPAGATION_MS + DISCOVERY_ALLOWANCE_MS),
    ]);
  });

  it('of two gateways writing the same keyId at the same moment, exactly one succeeds', async () => {
    for (let round = 0; round < 5; round++) {
      const contested = createTestPartner(`contested-${round}`);
      const keyOf = (contested.config.keys as { publicKey: unknown }[])[0]!.publicKey;
      const [first, second] = await Promise.all(
        [gateways[0]!, gateways[1]!].map((gateway, index) =>
          adminCall(gateway.url, 'PUT', `/partners/racer-${round}-${index}`, { token: admin, body: { keys: [{ keyId: `contested-${round}`, publicKey: keyOf }], scopes: ['a2a:read'] } }),
        ),
      );
      expect([first!.status, second!.status].sort(), `round ${round}`).toEqual([201, 409]);
    }
  });

  it('gateway 3, cut off from Redis while changes are made, is not ready until it caught up, and then serves them', async () => {
    const fresh = await newKey(gateways[0]!, 'late-bot');
    await atEveryGateway('API key created', Date.now(), async (gateway) => (await withKey(gateway, fresh.key)) === 200);
    await relay.cut();
    await waitFor(async () => ((await readyz(gateways[2]!)) === 503 ? true : undefined), PROBE_GIVE_UP_MS, 'gateway 3 not ready without Redis');
    // Changes gateway 3 cannot see: a revocation and a new agent.
    expect((await adminCall(gateways[0]!.url, 'DELETE', `/api-keys/${fresh.name}`, { token: admin })).status).toBe(204);
    expect((await adminCall(gateways[1]!.url, 'PUT', '/agents/latecomer', { token: admin, body: { adapter: 'demo', adapterOptions: { stepMs: 10 }, card: { name: 'Latecomer' } } })).status).toBe(201);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await readyz(gateways[2]!)).toBe(503);
    await relay.restore();
    // The first moment it says ready, both changes are in effect there.
    await waitFor(async () => ((await readyz(gateways[2]!)) === 200 ? true : undefined), 30_000, 'gateway 3 ready again');
    expect(await withKey(gateways[2]!, fresh.key)).toBe(401);
    expect((await cardOf(gateways[2]!, '/agents/latecomer')).body?.name).toBe('Latecomer');
    await completes(gateways[2]!, 'latecomer');
  }, 60_000);

  it('after every gateway and worker is stopped and started again, the state is intact', async () => {
    await stopAll();
    await startGateways();
    await startWorkers();
    for (const gateway of gateways) {
      expect((await cardOf(gateway, '/agents/roamer')).body?.name).toBe('Roamer');
      expect(await withKey(gateway, key)).toBe(200);
      expect(await withKey(gateway, revokedKey)).toBe(401);
      expect(await signed(gateway)).toBe(200);
      expect(await schemesOf(gateway)).toContain('oidc-cluster-idp');
    }
    const listed = await adminCall(gateways[2]!.url, 'GET', `/api-keys/${keyName}`, { token: admin });
    expect(listed.body).toMatchObject({ owner: 'cluster-bot', version: 1 });
    // Both workers loaded the stored agents before they took a turn.
    for (const worker of workers) expect(appliedAgent(worker, 'roamer') && appliedAgent(worker, 'latecomer')).toBe(true);
    await completes(gateways[0]!, 'roamer');
    await completes(gateways[1]!, 'latecomer');
  }, 240_000);
});
