// Agents through the admin API across processes: two gateway processes and a worker process on
// one Redis. An agent put through gateway A is served by gateway B within a second, and a
// message sent through B is run by the worker process; a replace through A changes its card at
// B; a delete through A takes it away at B; and a gateway or worker process started after the
// put serves or runs it as soon as it is ready.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCall } from './support/admin-client.ts';
import { spawnGatewayProcess, type GatewayProcess } from './support/gateway-process.ts';
import { deletePrefix, REDIS_URL, rpc, spawnWorkerProcess, stopWorkerProcesses, textMessage, uniquePrefix, waitFor, type WorkerProcess } from './support/harness.ts';
import { createTestIssuer } from './support/identity.ts';

/** The bound the control plane promises: a change is in effect everywhere within it. */
const PROPAGATION_MS = 1_000;

async function withinPropagationBound(probe: () => Promise<boolean>, what: string): Promise<void> {
  const started = Date.now();
  await waitFor(async () => ((await probe()) ? true : undefined), PROPAGATION_MS + 500, what);
  expect(Date.now() - started, `${what} took longer than ${PROPAGATION_MS} ms`).toBeLessThanOrEqual(PROPAGATION_MS);
}

describe('agents put through the admin API, across processes', () => {
  const prefix = uniquePrefix('agents-prop');
  let dir: string;
  let env: Record<string, string>;
  let admin: string;
  let user: string;
  let a: GatewayProcess;
  let b: GatewayProcess;
  let restarted: GatewayProcess | undefined;
  const workers: WorkerProcess[] = [];

  const cardAt = async (gateway: GatewayProcess, name: string): Promise<{ status: number; name?: string }> => {
    const response = await fetch(`${gateway.url}/agents/${name}/.well-known/agent-card.json`);
    return response.status === 200 ? { status: 200, name: ((await response.json()) as { name: string }).name } : { status: response.status };
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'a2a-agents-prop-'));
    const issuer = await createTestIssuer();
    admin = await issuer.token({ scope: 'a2a:admin a2a:platform', sub: 'root' });
    user = await issuer.token({ scope: 'a2a:read a2a:write', sub: 'alice' });
    const configFile = join(dir, 'gateway.json');
    await writeFile(configFile, JSON.stringify({ auth: { enabled: true, issuers: [issuer.config] }, cardSigning: false, dataDir: dir }));
    env = { A2A_CONFIG: configFile, A2A_AUTH_ENABLED: 'true' };
    [a, b] = await Promise.all([spawnGatewayProcess(prefix, env), spawnGatewayProcess(prefix, env)]);
    workers.push(await spawnWorkerProcess(prefix, { A2A_CONFIG: configFile }));
  }, 90_000);

  afterAll(async () => {
    for (const gateway of [a, b, restarted]) gateway?.kill('SIGTERM');
    await Promise.all([a?.exited, b?.exited, restarted?.exited]);
    await stopWorkerProcesses(workers);
    const redis = new Redis(REDIS_URL);
    await deletePrefix(redis, prefix);
    await redis.quit();
    await rm(dir, { recursive: true, force: true });
  });

  it('an agent put through A is served by B within a second and run by the worker process', async () => {
    expect((await cardAt(b, 'roamer')).status).toBe(404);
    const put = await adminCall(a.url, 'PUT', '/agents/roamer', { token: admin, body: { adapter: 'demo', adapterOptions: { stepMs: 10 }, card: { name: 'Roamer' } } });
    expect(put.status).toBe(201);
    await withinPropagationBound(async () => (await cardAt(b, 'roamer')).name === 'Roamer', 'the agent at gateway B');
    const answer = await rpc(`${b.url}/agents/roamer/a2a/jsonrpc`, 'SendMessage', { message: textMessage('echo across') }, { Authorization: `Bearer ${user}` });
    expect(answer.status).toBe(200);
    expect((answer.body.result as { task: { status: { state: string } } }).task.status.state).toBe('TASK_STATE_COMPLETED');
  });

  it('a replace through A changes the card at B within a second', async () => {
    const replaced = await adminCall(a.url, 'PUT', '/agents/roamer', { token: admin, body: { adapter: 'demo', card: { name: 'Roamer II' } }, headers: { 'If-Match': '"1"' } });
    expect(replaced.status).toBe(200);
    await withinPropagationBound(async () => (await cardAt(b, 'roamer')).name === 'Roamer II', 'the replaced card at gateway B');
  });

  it('a gateway started after the put serves the agent once it is ready', async () => {
    restarted = await spawnGatewayProcess(prefix, env);
    expect(await cardAt(restarted, 'roamer')).toEqual({ status: 200, name: 'Roamer II' });
  }, 60_000);

  it('a worker process started after the put runs the agent', async () => {
    await stopWorkerProcesses(workers);
    workers.push(await spawnWorkerProcess(prefix, { A2A_CONFIG: join(dir, 'gateway.json') }));
    const answer = await rpc(`${b.url}/agents/roamer/a2a/jsonrpc`, 'SendMessage', { message: textMessage('echo again') }, { Authorization: `Bearer ${user}` });
    expect((answer.body.result as { task: { status: { state: string } } }).task.status.state).toBe('TASK_STATE_COMPLETED');
  }, 60_000);

  it('a delete through A takes the agent away at B within a second', async () => {
    expect((await adminCall(a.url, 'DELETE', '/agents/roamer', { token: admin })).status).toBe(204);
    await withinPropagationBound(async () => (await cardAt(b, 'roamer')).status === 404, 'the deletion at gateway B');
    const refused = await rpc(`${b.url}/agents/roamer/a2a/jsonrpc`, 'SendMessage', { message: textMessage('echo gone?') }, { Authorization: `Bearer ${user}` });
    expect(refused.status).toBe(404);
  });
});
