// Agents through the admin API (/admin/v1/agents) on one gateway and a worker of its own (as a
// separate process would be: its own agents, its own view of the control plane): an agent put
// is served with its card and run by the worker; a replace changes its card; a bad definition,
// a refused adapter or option, a configured agent's name, a stale If-Match each change nothing;
// a delete takes its card and endpoints away, and a turn still queued for it fails naming the
// deletion while the one already running finishes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agents } from '../src/agents/agents.ts';
import { Lifecycle } from '../src/app/lifecycle.ts';
import { agentSpec } from '../src/control/agent-specs.ts';
import { startControlPlane } from '../src/control/control-plane.ts';
import { createLogger } from '../src/logging/logger.ts';
import { startWorkerRole, type WorkerHandle } from '../src/runtime/worker-role.ts';
import { controlKeys } from '../src/store/control/control-keys.ts';
import { adminCall, violatedFields } from './support/admin-client.ts';
import { ROOT, rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';
import { createTestIssuer } from './support/identity.ts';

type TaskAnswer = { task: { id: string; status: { state: string } } };

describe('admin API: agents', () => {
  let gw: TestGateway;
  let worker: WorkerHandle;
  let workerControl: Lifecycle;
  let platform: string;
  let tenantAdmin: string;
  let user: string;

  const controlState = async (): Promise<unknown> => {
    const keys = controlKeys(gw.prefix);
    const versions = Object.fromEntries(Object.entries(await gw.redis.hgetall(keys.versions)).filter(([field]) => !field.startsWith('__')));
    return [await gw.redis.hgetall(keys.resources), versions, await gw.redis.get(keys.sequence), await gw.redis.xlen(keys.audit)];
  };
  const card = (name: string): Promise<Response> => fetch(`${gw.url}/agents/${name}/.well-known/agent-card.json`);
  const send = (name: string, text: string, returnImmediately = false) =>
    rpc(`${gw.url}/agents/${name}/a2a/jsonrpc`, 'SendMessage', { message: textMessage(text), configuration: { returnImmediately } }, { Authorization: `Bearer ${user}` });
  const storedState = async (taskId: string): Promise<Record<string, string>> => gw.redis.hgetall(`${gw.prefix}:{${taskId}}:task`);

  beforeAll(async () => {
    const issuer = await createTestIssuer();
    gw = await startTestGateway({
      name: 'admin-agents',
      inProcessWorker: false,
      config: { auth: { enabled: true, issuers: [issuer.config] }, agents: { main: { adapter: 'demo', adapterOptions: { stepMs: 20 } } } },
    });
    const logger = createLogger('silent');
    // The worker's own agents and control plane, as in a worker process.
    workerControl = new Lifecycle(logger);
    const control = await workerControl.build((lifecycle) => startControlPlane(lifecycle, gw.config, logger));
    worker = await startWorkerRole(gw.config, await Agents.load(gw.config, ROOT), logger, { baseDir: ROOT, control });
    platform = await issuer.token({ scope: 'a2a:admin a2a:platform', sub: 'root' });
    tenantAdmin = await issuer.token({ scope: 'a2a:admin', sub: 'acme-admin', tenant: 'acme' });
    user = await issuer.token({ scope: 'a2a:read a2a:write', sub: 'alice' });
  });
  afterAll(async () => {
    await worker?.close();
    await workerControl?.stop();
    await gw?.close();
  });

  it('puts an agent: its card is served, the worker runs its turns, the list shows it beside the configured one', async () => {
    expect((await card('helper')).status).toBe(404);
    const put = await adminCall(gw.url, 'PUT', '/agents/helper', { token: platform, body: { adapter: 'demo', adapterOptions: { stepMs: 10 }, card: { name: 'Helper', description: 'helps' } } });
    expect(put.status).toBe(201);
    expect(put.headers.get('etag')).toBe('"1"');
    expect(put.body).toMatchObject({ name: 'helper', version: 1, source: 'store', adapter: 'demo', card: { name: 'Helper' } });

    const served = await card('helper');
    expect(served.status).toBe(200);
    expect(await served.json()).toMatchObject({ name: 'Helper', description: 'helps' });

    const answer = await send('helper', 'echo hello');
    expect(answer.status).toBe(200);
    expect((answer.body.result as TaskAnswer).task.status.state).toBe('TASK_STATE_COMPLETED');

    const agentList = (await (await fetch(`${gw.url}/agents`, { headers: { Authorization: `Bearer ${user}` } })).json()) as { agents: { name: string }[] };
    expect(agentList.agents.map((agent) => agent.name).sort()).toEqual(['helper', 'main']);

    const listed = await adminCall(gw.url, 'GET', '/agents', { token: platform });
    expect((listed.body.items as { name: string; source: string }[]).map((item) => [item.name, item.source])).toEqual([
      ['helper', 'store'],
      ['main', 'config'],
    ]);
    expect((await adminCall(gw.url, 'GET', '/agents/main', { token: platform })).body).toMatchObject({ name: 'main', source: 'config', adapter: 'demo' });
  });

  it('replaces an agent: its card changes; a stale If-Match changes nothing', async () => {
    const replaced = await adminCall(gw.url, 'PUT', '/agents/helper', {
      token: platform,
      body: { adapter: 'demo', adapterOptions: { stepMs: 10 }, card: { name: 'Helper II', description: 'helps more' } },
      headers: { 'If-Match': '"1"' },
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ version: 2, card: { name: 'Helper II' } });
    expect(await (await card('helper')).json()).toMatchObject({ name: 'Helper II', description: 'helps more' });

    // What GET shows, put back as it is (admin export, then apply), is taken.
    const { name: _name, version: _version, source: _source, updatedAt: _at, updatedBy: _by, ...readBack } = (await adminCall(gw.url, 'GET', '/agents/helper', { token: platform })).body;
    const again = await adminCall(gw.url, 'PUT', '/agents/helper', { token: platform, body: readBack, headers: { 'If-Match': '"2"' } });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ version: 3, card: { name: 'Helper II' } });

    const before = await controlState();
    const stale = await adminCall(gw.url, 'PUT', '/agents/helper', { token: platform, body: { adapter: 'demo' }, headers: { 'If-Match': '"1"' } });
    expect(stale.status).toBe(412);
    expect((await adminCall(gw.url, 'DELETE', '/agents/helper', { token: platform, headers: { 'If-Match': '"1"' } })).status).toBe(412);
    expect(await controlState()).toEqual(before);
    expect(await (await card('helper')).json()).toMatchObject({ name: 'Helper II' });
  });

  it('refuses a bad definition naming the field, and changes nothing', async () => {
    const before = await controlState();
    const cases: [unknown, string][] = [
      [{ adapter: 'demo', limits: { workerConcurrency: 0 } }, 'limits.workerConcurrency'],
      [{ adapter: 'demo', inputPolicy: 'sometimes' }, 'inputPolicy'],
      [{ adapter: 'demo', colour: 'red' }, '(body)'],
      [{ adapter: 'demo', tenant: 'acme' }, 'tenant'],
      [{ adapter: './evil-module.mjs' }, 'adapter'],
      [{ adapter: 'openai', adapterOptions: { model: 'm', apiKeyEnv: 'REDIS_PASSWORD' } }, 'adapterOptions.apiKeyEnv'],
      [{ adapter: 'demo', adapterOptions: { ledgerFile: '/etc/passwd' } }, 'adapterOptions.ledgerFile'],
    ];
    for (const [body, field] of cases) {
      const refused = await adminCall(gw.url, 'PUT', '/agents/bad', { token: platform, body });
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(violatedFields(refused.body), JSON.stringify(body)).toContain(field);
    }
    const badName = await adminCall(gw.url, 'PUT', '/agents/no%20spaces', { token: platform, body: { adapter: 'demo' } });
    expect(badName.status).toBe(400);
    const configured = await adminCall(gw.url, 'PUT', '/agents/main', { token: platform, body: { adapter: 'demo' } });
    expect(configured.status).toBe(409);
    expect(JSON.stringify(configured.body)).toContain('configuration file');
    expect((await adminCall(gw.url, 'DELETE', '/agents/main', { token: platform })).status).toBe(409);
    expect(await controlState()).toEqual(before);
    expect((await card('bad')).status).toBe(404);
  });

  it('is the platform\'s: a tenant admin is refused', async () => {
    const refused = await adminCall(gw.url, 'PUT', '/agents/mine', { token: tenantAdmin, body: { adapter: 'demo' } });
    expect(refused.status).toBe(403);
    expect(JSON.stringify(refused.body)).toContain('a2a:platform');
  });

  it('deletes an agent: card and endpoints 404, a running turn finishes, a queued one fails naming the deletion', async () => {
    const put = await adminCall(gw.url, 'PUT', '/agents/slow', { token: platform, body: { adapter: 'demo', adapterOptions: { stepMs: 100 }, limits: { workerConcurrency: 1 } } });
    expect(put.status).toBe(201);
    const running = ((await send('slow', 'long 10', true)).body.result as TaskAnswer).task.id;
    await waitFor(async () => ((await storedState(running)).state === 'TASK_STATE_WORKING' ? true : undefined), 10_000, 'the first turn to run');
    const queued = ((await send('slow', 'echo waiting', true)).body.result as TaskAnswer).task.id;
    expect((await storedState(queued)).state).toBe('TASK_STATE_SUBMITTED');

    expect((await adminCall(gw.url, 'DELETE', '/agents/slow', { token: platform })).status).toBe(204);
    expect((await card('slow')).status).toBe(404);
    expect((await adminCall(gw.url, 'GET', '/agents/slow', { token: platform })).status).toBe(404);
    const refused = await send('slow', 'echo anyone?');
    expect(refused.status).toBe(404);

    const failed = await waitFor(async () => {
      const task = await storedState(queued);
      return task.state === 'TASK_STATE_FAILED' ? task : undefined;
    }, 15_000, 'the queued turn to fail');
    const status = JSON.parse(failed.status ?? '{}') as { message?: { parts: { text?: string }[] } };
    expect(status.message?.parts[0]?.text).toContain('Agent "slow" was deleted through the admin API');
    await waitFor(async () => ((await storedState(running)).state === 'TASK_STATE_COMPLETED' ? true : undefined), 15_000, 'the running turn to finish');
  });
});

describe('which adapters an agent through the admin API may use (storedAgentAdapters)', () => {
  const context = (allowedAdapters: string[]) => ({ configuredNames: ['main'], allowedAdapters });

  it('takes a module path only when the configuration lists that very path', () => {
    expect(agentSpec('custom', { adapter: './adapters/mine.mjs' }, context(['demo', './adapters/mine.mjs'])).adapter).toBe('./adapters/mine.mjs');
    expect(() => agentSpec('custom', { adapter: './adapters/other.mjs' }, context(['demo', './adapters/mine.mjs']))).toThrow(/adapter "\.\/adapters\/other\.mjs" is not an adapter/);
  });

  it('refuses every agent when the list is empty', () => {
    expect(() => agentSpec('helper', { adapter: 'demo' }, context([]))).toThrow(/storedAgentAdapters is empty/);
  });

  it('refuses options that read files or environment variables at any depth', () => {
    expect(() => agentSpec('remote', { adapter: 'a2a', adapterOptions: { url: 'https://x.example', auth: { tokenFile: '/etc/shadow' } } }, context(['a2a']))).toThrow(
      /adapterOptions\.auth\.tokenFile makes the gateway read a file/,
    );
  });

  it('fills in the configuration schema\'s defaults', () => {
    expect(agentSpec('helper', { adapter: 'demo' }, context(['demo']))).toMatchObject({ adapterOptions: {}, inputPolicy: 'enqueue', scopes: [], limits: {} });
  });
});
