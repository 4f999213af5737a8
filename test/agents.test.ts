// Several agents behind one gateway: each has its own card and URL space, its own tasks (a task
// of one agent is not found through another's URLs), its own limits and access scopes; the
// default agent keeps the root URLs; GET /agents lists what a caller may use; workers may serve
// only some agents, and one agent's backlog never holds up another's turns.
import { randomBytes } from 'node:crypto';
import { SendMessageRequest, type Task } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agents } from '../src/agents/agents.ts';
import { createLogger } from '../src/logging/logger.ts';
import { startWorkerRole } from '../src/runtime/worker-role.ts';
import { rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';
import { createTestIssuer, type TestIssuer } from './support/identity.ts';

let gw: TestGateway;
let issuer: TestIssuer;
let token: string;
let gammaToken: string;

const AGENTS = {
  alpha: { adapter: 'demo', adapterOptions: { stepMs: 10 }, card: { name: 'Alpha', description: 'The demo, first.' }, limits: { maxBodyBytes: 2048 } },
  beta: { adapter: 'examples/echo-adapter.mjs', adapterOptions: { suffix: '!' }, card: { name: 'Beta' } },
  gamma: { adapter: 'demo', adapterOptions: { stepMs: 10 }, card: { name: 'Gamma' }, scopes: ['agent:gamma'] },
};

beforeAll(async () => {
  issuer = await createTestIssuer();
  gw = await startTestGateway({
    name: 'agents',
    config: { agents: AGENTS, auth: { enabled: true, issuers: [issuer.config] }, limits: { requestsPerSecond: 0, maxActiveTasks: 0 } },
  });
  token = await issuer.token({ sub: 'agents-user' });
  gammaToken = await issuer.token({ sub: 'agents-user', scope: 'a2a:read a2a:write agent:gamma' });
});

afterAll(async () => {
  await gw?.close();
});

const auth = (t = token): Record<string, string> => ({ Authorization: `Bearer ${t}` });
const rpcUrl = (agent: string): string => `${gw.url}/agents/${agent}/a2a/jsonrpc`;

async function card(path: string): Promise<{ name: string; supportedInterfaces: { url: string; protocolBinding: string; protocolVersion: string }[]; skills: { id: string }[] }> {
  const response = await fetch(`${gw.url}${path}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } });
  expect(response.status).toBe(200);
  return (await response.json()) as never;
}

function client(base: string, binding: 'JSONRPC' | 'HTTP+JSON', t = token) {
  const fetchImpl: typeof fetch = (input, init) => fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), Authorization: `Bearer ${t}` } });
  const transport = binding === 'JSONRPC' ? new JsonRpcTransportFactory({ fetchImpl }) : new RestTransportFactory({ fetchImpl });
  return base.endsWith('.json') ? new ClientFactory({ transports: [transport] }).createFromUrl(base, '') : new ClientFactory({ transports: [transport] }).createFromUrl(base);
}

const text = (task: Task): string => (task.artifacts ?? []).flatMap((a) => a.parts).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');

describe('cards and URL spaces', () => {
  it('gives each agent its own card whose interfaces point into its own URL space; the root card is the default agent', async () => {
    for (const name of ['alpha', 'beta', 'gamma'] as const) {
      const served = await card(`/agents/${name}`);
      expect(served.name).toBe(AGENTS[name].card.name);
      // 1.0, then the same URLs for 0.3 clients.
      expect(served.supportedInterfaces.map((i) => `${i.protocolVersion} ${i.url}`)).toEqual(
        ['1.0', '0.3'].flatMap((version) => [`${version} ${gw.url}/agents/${name}/a2a/jsonrpc`, `${version} ${gw.url}/agents/${name}/a2a/rest`]),
      );
    }
    const root = await card('');
    expect(root.name).toBe('Alpha');
    expect(root.supportedInterfaces.map((i) => i.url)).toEqual([`${gw.url}/a2a/jsonrpc`, `${gw.url}/a2a/rest`, `${gw.url}/a2a/jsonrpc`, `${gw.url}/a2a/rest`]);
    expect((await card('/agents/beta')).skills.map((s) => s.id)).toEqual(['upper']);
  });

  it('answers an unknown agent with 404 naming the agent list', async () => {
    const response = await fetch(`${gw.url}/agents/nobody/.well-known/agent-card.json`);
    expect(response.status).toBe(404);
    expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(/no agent "nobody".*GET \/agents/);
  });
});

describe('GET /agents', () => {
  it('lists the agents the caller may use, by its scopes, and needs credentials', async () => {
    const list = async (t: string) => ((await (await fetch(`${gw.url}/agents`, { headers: auth(t) })).json()) as { agents: { name: string; cardUrl: string; default: boolean }[] }).agents;
    expect((await list(token)).map((a) => a.name)).toEqual(['alpha', 'beta']);
    const all = await list(gammaToken);
    expect(all.map((a) => [a.name, a.default])).toEqual([['alpha', true], ['beta', false], ['gamma', false]]);
    expect(all[1]?.cardUrl).toBe(`${gw.url}/agents/beta/.well-known/agent-card.json`);
    expect((await fetch(`${gw.url}/agents`)).status).toBe(401);
  });
});

describe('tasks belong to one agent', () => {
  for (const binding of ['JSONRPC', 'HTTP+JSON'] as const) {
    it(`routes a message to the agent whose URLs it came to (official client, ${binding})`, async () => {
      // The card URL in full: the client resolves a relative card path against the base, so a base
      // without a trailing slash would lose its last segment.
      const beta = await client(`${gw.url}/agents/beta/.well-known/agent-card.json`, binding);
      const sent = (await beta.sendMessage(SendMessageRequest.fromJSON({ message: { messageId: `m-${randomBytes(6).toString('hex')}`, role: 'ROLE_USER', parts: [{ text: 'make me loud' }] } }))) as Task;
      expect(text(sent)).toBe('MAKE ME LOUD!');
      const viaRoot = (await (await client(gw.url, binding)).sendMessage(SendMessageRequest.fromJSON({ message: { messageId: `m-${randomBytes(6).toString('hex')}`, role: 'ROLE_USER', parts: [{ text: 'echo quietly' }] } }))) as Task;
      expect(text(viaRoot)).toBe('echo quietly');
    });
  }

  it("answers another agent's task id exactly as a never-used one, on both bindings", async () => {
    const created = await rpc(rpcUrl('beta'), 'SendMessage', { message: textMessage('hi') }, auth());
    const taskId = (created.body.result as { task: { id: string } }).task.id;
    for (const url of [rpcUrl('alpha'), `${gw.url}/a2a/jsonrpc`]) {
      const foreign = await rpc(url, 'GetTask', { id: taskId }, auth());
      const missing = await rpc(url, 'GetTask', { id: '01M8R9ZZZZZZZZZZZZZZZZZZZZ' }, auth());
      expect((foreign.body.error as { code: number }).code).toBe(-32001);
      expect(JSON.stringify(foreign.body.error).replaceAll(taskId, 'X').replace(/"timestamp":"[^"]+"/, '')).toBe(
        JSON.stringify(missing.body.error).replaceAll('01M8R9ZZZZZZZZZZZZZZZZZZZZ', 'X').replace(/"timestamp":"[^"]+"/, ''),
      );
    }
    const rest = await fetch(`${gw.url}/agents/alpha/a2a/rest/tasks/${taskId}`, { headers: { 'A2A-Version': '1.0', ...auth() } });
    expect(rest.status).toBe(404);
    // A follow-up through the wrong agent neither lands nor leaks.
    const follow = await rpc(rpcUrl('alpha'), 'SendMessage', { message: textMessage('again', { taskId }) }, auth());
    expect((follow.body.error as { code: number }).code).toBe(-32001);
    expect((await rpc(rpcUrl('beta'), 'GetTask', { id: taskId }, auth())).body.result).toBeDefined();
  });

  it("lists each agent's tasks only, and the same messageId to two agents makes two tasks", async () => {
    const message = textMessage('echo twice');
    const a = ((await rpc(rpcUrl('alpha'), 'SendMessage', { message }, auth())).body.result as { task: { id: string } }).task.id;
    const b = ((await rpc(rpcUrl('beta'), 'SendMessage', { message }, auth())).body.result as { task: { id: string } }).task.id;
    expect(a).not.toBe(b);
    const listed = async (agent: string) => ((await rpc(rpcUrl(agent), 'ListTasks', {}, auth())).body.result as { tasks: { id: string }[] }).tasks.map((t) => t.id);
    expect(await listed('alpha')).toContain(a);
    expect(await listed('alpha')).not.toContain(b);
    expect(await listed('beta')).toContain(b);
    expect(await listed('beta')).not.toContain(a);
  });
});

describe("an agent's own settings", () => {
  it('refuses a caller without one of its scopes, naming them', async () => {
    const refused = await rpc(rpcUrl('gamma'), 'SendMessage', { message: textMessage('echo') }, auth());
    expect(refused.status).toBe(403);
    expect(JSON.stringify(refused.body.error)).toMatch(/AGENT_SCOPE_MISSING/);
    expect(JSON.stringify(refused.body.error)).toMatch(/agent:gamma/);
    const allowed = await rpc(rpcUrl('gamma'), 'SendMessage', { message: textMessage('echo') }, auth(gammaToken));
    expect((allowed.body.result as { task: { status: { state: string } } }).task.status.state).toBe('TASK_STATE_COMPLETED');
  });

  it("applies the agent's body limit to its own endpoints only", async () => {
    const big = textMessage('echo ' + 'x'.repeat(3000));
    expect((await rpc(rpcUrl('alpha'), 'SendMessage', { message: big }, auth())).status).toBe(413);
    expect((await rpc(rpcUrl('beta'), 'SendMessage', { message: big }, auth())).status).toBe(200);
  });
});

describe('workers per agent', () => {
  it("run only the agents they serve; an agent without a worker holds up no other agent's turns", async () => {
    const only = await startTestGateway({
      name: 'agents-workers',
      inProcessWorker: false,
      config: { agents: { fast: { adapter: 'demo' }, slow: { adapter: 'demo' } } },
    });
    const worker = await startWorkerRole({ ...only.config, workerAgents: ['fast'] }, await Agents.load(only.config, process.cwd()), createLogger('silent'));
    try {
      expect(worker.agents).toEqual(['fast']);
      const slow = ((await rpc(`${only.url}/agents/slow/a2a/jsonrpc`, 'SendMessage', { message: textMessage('echo later'), configuration: { returnImmediately: true } })).body.result as { task: { id: string } }).task.id;
      const fast = await rpc(`${only.url}/agents/fast/a2a/jsonrpc`, 'SendMessage', { message: textMessage('echo now') });
      expect((fast.body.result as { task: { status: { state: string } } }).task.status.state).toBe('TASK_STATE_COMPLETED');
      expect(await only.redis.hget(`${only.prefix}:{${slow}}:task`, 'state')).toBe('TASK_STATE_SUBMITTED');
      expect(await only.redis.exists(`${only.prefix}:turns-slow:${slow}-t1`)).toBe(1);
      const second = await startWorkerRole({ ...only.config, workerAgents: ['slow'] }, await Agents.load(only.config, process.cwd()), createLogger('silent'));
      try {
        await waitFor(async () => ((await only.redis.hget(`${only.prefix}:{${slow}}:task`, 'state')) === 'TASK_STATE_COMPLETED' ? true : undefined), 20_000, 'the slow agent\'s worker');
      } finally {
        await second.close();
      }
    } finally {
      await worker.close();
      await only.close();
    }
  });
});
