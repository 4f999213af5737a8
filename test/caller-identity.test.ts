// Caller identity to backends (agent and role setting callerIdentity): the JWT the gateway signs
// for each backend call, checked where backends see it. A remote A2A backend (the example agent
// in examples/caller-identity, which verifies it with jose, and recording agents), an
// OpenAI-compatible model server, a two- and three-level delegation chain, and redirects and
// allowed origins that must never get the token.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { TaskState } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore, type AgentExecutor } from '@a2a-js/sdk/server';
import { UserBuilder, agentCardHandler, jsonRpcHandler } from '@a2a-js/sdk/server/express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { pinCallerHeader } from '../adapters/caller-header-fetch.ts';
import { createOpenAIAdapter } from '../adapters/openai/index.ts';
import { createRemoteA2aAdapter } from '../adapters/remote-a2a/index.ts';
import { CallerTokenSigner } from '../src/auth/caller-identity.ts';
import { CALLER_IDENTITY_KEY_FILE, loadCallerTokenSigner } from '../src/auth/caller-identity-key.ts';
import { loadGatewayKeys } from '../src/auth/keys/gateway-keys.ts';
import { loadOrCreatePrivateJwk, readPrivateJwk } from '../src/auth/keys/key-file.ts';
import { configSchema, DEFAULT_BACKEND_LIMITS } from '../src/config/schema.ts';
import { whenChildReady } from './support/child-ready.ts';
import { freePort } from './support/downstream-agent.ts';
import { startFakeOpenAIServer, type FakeOpenAIServer } from './support/fake-openai-server.ts';
import { createTestIssuer, type TestIssuer } from './support/identity.ts';
import { ROOT, startTestGateway, type TestGateway } from './support/harness.ts';
// The example's own verifier: what the docs show a backend author.
import { callerVerifier } from '../examples/caller-identity/verify-caller.mjs';

// No @types/express here (as in test/fixtures/downstream-agent): the few calls made.
interface MiniResponse {
  redirect(status: number, url: string): void;
}
interface MiniApp {
  use(path: string, ...handlers: unknown[]): void;
  listen(port: number, host: string, ready: () => void): Server;
}
const express = createRequire(import.meta.url)('express') as () => MiniApp;

const FAST = { retryInitialDelayMs: 50, retryMaxDelayMs: 300, pollInitialDelayMs: 50, pollMaxDelayMs: 300 };
const SUBJECT = 'user:test:alice';

interface Recorder {
  url: string;
  /** Headers of every A2A (JSON-RPC) request it got, in order. */
  requests: IncomingHttpHeaders[];
  close(): Promise<void>;
}

/**
 * A downstream A2A agent on the official SDK that records the headers of every A2A request and
 * completes each task. `interfaceAt`: the card names that base URL's JSON-RPC endpoint instead of
 * its own; `redirectTo`: its JSON-RPC endpoint answers 307 to that base URL's.
 */
async function startRecorder(options: { interfaceAt?: string; redirectTo?: string } = {}): Promise<Recorder> {
  const requests: IncomingHttpHeaders[] = [];
  const app = express();
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const card = {
    name: 'Recorder',
    description: 'Records what it is sent.',
    supportedInterfaces: [{ url: `${options.interfaceAt ?? url}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming: false, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'record', name: 'Record', description: 'Records.', tags: [], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
    signatures: [],
  };
  const executor: AgentExecutor = {
    async execute(ctx, bus) {
      const status = { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: new Date().toISOString() };
      bus.publish(AgentEvent.task({ id: ctx.taskId, contextId: ctx.contextId, status, artifacts: [], history: [ctx.userMessage], metadata: undefined }));
    },
    async cancelTask() {},
  };
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: async () => card as never }));
  app.use('/a2a/jsonrpc', (req: { headers: IncomingHttpHeaders }, res: MiniResponse, next: () => void) => {
    requests.push(req.headers);
    if (options.redirectTo === undefined) return next();
    res.redirect(307, `${options.redirectTo}/a2a/jsonrpc`);
  });
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: new DefaultRequestHandler(card as never, new InMemoryTaskStore(), executor), userBuilder: UserBuilder.noAuthentication }));
  return { url, requests, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** A model server address that answers every request with 307 to `to` (same path). */
async function startRedirector(to: string): Promise<{ url: string; requests: IncomingHttpHeaders[]; close(): Promise<void> }> {
  const requests: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    requests.push(req.headers);
    req.resume();
    res.writeHead(307, { location: `${to}${req.url ?? '/'}` }).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

let issuer: TestIssuer;
let gw: TestGateway;
let publicUrl: string;
let example: ChildProcess;
let exampleUrl: string;
let recorder: Recorder;
let elsewhere: Recorder;
let fronting: Recorder;
let redirecting: Recorder;
let fake: FakeOpenAIServer;
let modelRedirector: Awaited<ReturnType<typeof startRedirector>>;

interface WireTask {
  id: string;
  contextId: string;
  status: { state: string; message?: { parts: { text?: string }[] } };
}

async function send(agent: string, text: string): Promise<WireTask> {
  const response = await fetch(`${gw.url}/agents/${agent}/a2a/jsonrpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0', authorization: `Bearer ${await issuer.token()}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { messageId: `ci-${randomBytes(6).toString('hex')}`, role: 'ROLE_USER', parts: [{ text }] } } }),
  });
  const body = (await response.json()) as { result?: { task?: WireTask }; error?: unknown };
  expect(body.error, JSON.stringify(body.error)).toBeUndefined();
  return body.result?.task as WireTask;
}

const textOf = (task: WireTask): string => (task.status.message?.parts ?? []).map((p) => p.text ?? '').join('');

beforeAll(async () => {
  issuer = await createTestIssuer();
  const port = await freePort();
  publicUrl = `http://127.0.0.1:${port}`;
  example = spawn(process.execPath, [join(ROOT, 'examples/caller-identity/agent.mjs')], { cwd: ROOT, env: { ...process.env, PORT: '0', GATEWAY_URL: publicUrl }, stdio: ['ignore', 'pipe', 'pipe'] });
  exampleUrl = (await whenChildReady(example, { name: 'example caller-identity agent', ready: (output) => /Caller Echo listening on (\S+)/.exec(output)?.[1] })).value;
  recorder = await startRecorder();
  elsewhere = await startRecorder();
  fronting = await startRecorder({ interfaceAt: elsewhere.url });
  redirecting = await startRecorder({ redirectTo: elsewhere.url });
  fake = await startFakeOpenAIServer();
  modelRedirector = await startRedirector(new URL(fake.baseURL).origin);
  const model = { model: 'fake-model', maxRetries: 0, retryBaseDelayMs: 100 };
  gw = await startTestGateway({
    name: 'caller-identity',
    config: {
      port,
      publicUrl,
      blockingTimeoutMs: 20_000,
      auth: { enabled: true, issuers: [issuer.config] },
      delegation: {
        roles: {
          echo: { adapter: 'a2a', adapterOptions: { url: exampleUrl, ...FAST }, callerIdentity: { enabled: true } },
          middle: { adapter: 'test/fixtures/delegating-adapter.mjs', adapterOptions: { delegateTo: 'echo' } },
        },
      },
      agents: {
        echo: { adapter: 'a2a', adapterOptions: { url: exampleUrl, ...FAST }, callerIdentity: { enabled: true } },
        recorded: { adapter: 'a2a', adapterOptions: { url: recorder.url, ...FAST }, callerIdentity: { enabled: true, header: 'X-Caller', lifetimeSeconds: 30 } },
        plain: { adapter: 'a2a', adapterOptions: { url: recorder.url, ...FAST } },
        fronted: { adapter: 'a2a', adapterOptions: { url: fronting.url, allowedOrigins: [elsewhere.url], ...FAST }, callerIdentity: { enabled: true } },
        redirected: { adapter: 'a2a', adapterOptions: { url: redirecting.url, ...FAST }, callerIdentity: { enabled: true } },
        model: { adapter: 'openai', adapterOptions: { baseURL: fake.baseURL, ...model }, callerIdentity: { enabled: true } },
        'model-off': { adapter: 'openai', adapterOptions: { baseURL: fake.baseURL, ...model } },
        'model-redirected': { adapter: 'openai', adapterOptions: { baseURL: `${modelRedirector.url}/v1`, ...model }, callerIdentity: { enabled: true } },
        coordinator: { adapter: 'test/fixtures/delegating-adapter.mjs', adapterOptions: { delegateTo: 'echo' } },
        deep: { adapter: 'test/fixtures/delegating-adapter.mjs', adapterOptions: { delegateTo: 'middle' } },
      },
    },
  });
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await Promise.all([recorder?.close(), elsewhere?.close(), fronting?.close(), redirecting?.close(), fake?.close(), modelRedirector?.close()]);
  if (example !== undefined && example.exitCode === null) {
    const exited = new Promise((resolve) => example.once('exit', resolve));
    example.kill('SIGTERM');
    await exited;
  }
});

describe('caller identity to a remote A2A backend', () => {
  it('sends a JWT the backend verifies against the gateway JWKS: iss, aud, sub, act, task and context', async () => {
    const before = recorder.requests.length;
    const task = await send('recorded', 'hello');
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    const sent = recorder.requests.slice(before);
    expect(sent.length).toBeGreaterThan(0);
    const verify = callerVerifier({ gatewayUrl: publicUrl, audience: new URL(recorder.url).origin });
    const jtis = new Set<string>();
    for (const headers of sent) {
      const token = headers['x-caller'];
      expect(typeof token, 'every call carries the configured header').toBe('string');
      expect(headers['x-a2a-caller']).toBeUndefined();
      const claims = await verify(token as string);
      expect(claims).toMatchObject({
        iss: publicUrl,
        aud: new URL(recorder.url).origin,
        sub: SUBJECT,
        act: { sub: publicUrl },
        a2a_task_id: task.id,
        a2a_context_id: task.contextId,
        a2a_agent: 'recorded',
      });
      expect((claims.act as Record<string, unknown>).act, 'no delegation, no nested actor').toBeUndefined();
      expect((claims.exp as number) - (claims.iat as number)).toBe(30);
      expect(decodeProtectedHeader(token as string).typ).toBe('a2a-caller+jwt');
      jtis.add(claims.jti as string);
    }
    expect(jtis.size, 'a fresh token per call').toBe(sent.length);
  });

  it('the example agent, built with the official SDK, verifies it with jose and sees the caller', async () => {
    const task = await send('echo', 'who am I?');
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(JSON.parse(textOf(task))).toEqual({ sub: SUBJECT, act: { sub: publicUrl }, a2a_task_id: task.id, a2a_context_id: task.contextId });
  });

  it('is off by default: a backend whose agent does not turn it on gets no header', async () => {
    const before = recorder.requests.length;
    const task = await send('plain', 'hello');
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    const sent = recorder.requests.slice(before);
    expect(sent.length).toBeGreaterThan(0);
    for (const headers of sent) {
      expect(headers['x-a2a-caller']).toBeUndefined();
      expect(headers['x-caller']).toBeUndefined();
    }
  });

  it('is not sent to another origin the operator allows (the card names an interface there): the token is for the configured origin', async () => {
    const before = elsewhere.requests.length;
    const task = await send('fronted', 'hello');
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    const sent = elsewhere.requests.slice(before);
    expect(sent.length).toBeGreaterThan(0);
    for (const headers of sent) expect(headers['x-a2a-caller']).toBeUndefined();
  });

  it('is not sent on a cross-origin redirect: the redirect is refused and the other origin gets nothing', async () => {
    const before = { redirecting: redirecting.requests.length, elsewhere: elsewhere.requests.length };
    const task = await send('redirected', 'hello');
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    expect(textOf(task)).toMatch(/redirected a call to .*another origin/);
    // The configured origin (the token's audience) got it; the origin redirected to got no request at all.
    expect(redirecting.requests.slice(before.redirecting).some((h) => typeof h['x-a2a-caller'] === 'string')).toBe(true);
    expect(elsewhere.requests.length).toBe(before.elsewhere);
  });
});

describe('caller identity through sub-agent delegation', () => {
  it('two levels (gateway → coordinator → sub-agent backend): act nests the coordinator inside the gateway', async () => {
    const task = await send('coordinator', 'who am I?');
    expect(task.status.state, textOf(task)).toBe('TASK_STATE_COMPLETED');
    const claims = JSON.parse(textOf(task)) as { sub: string; act: unknown; a2a_task_id: string; a2a_context_id: string };
    expect(claims.sub).toBe(SUBJECT);
    expect(claims.act).toEqual({ sub: publicUrl, act: { sub: 'agent:coordinator', a2a_task_id: task.id } });
    // The backend's task is the sub-agent's (a child of the coordinator, in its context).
    expect(claims.a2a_task_id).not.toBe(task.id);
    expect(claims.a2a_context_id).toBe(task.contextId);
  });

  it('three levels: each delegating coordinator nests inside the one it acted for', async () => {
    const task = await send('deep', 'who am I?');
    expect(task.status.state, textOf(task)).toBe('TASK_STATE_COMPLETED');
    const claims = JSON.parse(textOf(task)) as { act: { act: { a2a_task_id: string; act: unknown } } };
    const middle = claims.act.act.a2a_task_id;
    expect(middle).not.toBe(task.id);
    expect(claims.act).toEqual({ sub: publicUrl, act: { sub: 'agent:deep', a2a_task_id: middle, act: { sub: 'agent:deep', a2a_task_id: task.id } } });
  });
});

describe('caller identity to an OpenAI-compatible backend', () => {
  it('sends the JWT to the model server when the agent turns it on, with the server origin as audience', async () => {
    const marker = `m-${randomBytes(4).toString('hex')}`;
    const task = await send('model', `say ${marker}`);
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    const [request] = fake.requestsFor(marker);
    const token = request?.headers['x-a2a-caller'];
    expect(typeof token).toBe('string');
    const claims = await callerVerifier({ gatewayUrl: publicUrl, audience: new URL(fake.baseURL).origin })(token as string);
    expect(claims).toMatchObject({ iss: publicUrl, sub: SUBJECT, act: { sub: publicUrl }, a2a_task_id: task.id, a2a_context_id: task.contextId });
  });

  it('sends nothing when it is off', async () => {
    const marker = `m-${randomBytes(4).toString('hex')}`;
    expect((await send('model-off', `say ${marker}`)).status.state).toBe('TASK_STATE_COMPLETED');
    expect(fake.requestsFor(marker)[0]?.headers['x-a2a-caller']).toBeUndefined();
  });

  it('a redirect to another origin is followed without the token', async () => {
    const marker = `m-${randomBytes(4).toString('hex')}`;
    const before = modelRedirector.requests.length;
    expect((await send('model-redirected', `say ${marker}`)).status.state).toBe('TASK_STATE_COMPLETED');
    expect(modelRedirector.requests.slice(before).every((h) => typeof h['x-a2a-caller'] === 'string')).toBe(true);
    const [followed] = fake.requestsFor(marker);
    expect(followed, 'the redirect was followed').toBeDefined();
    expect(followed?.headers['x-a2a-caller']).toBeUndefined();
  });
});

describe('the verifier (examples/caller-identity/verify-caller.mjs)', () => {
  it('rejects an expired token signed with the gateway key, and the example agent answers it 401', async () => {
    const key = await readPrivateJwk(join(gw.config.dataDir, CALLER_IDENTITY_KEY_FILE));
    const signer = await CallerTokenSigner.create(key, publicUrl);
    const audience = new URL(exampleUrl).origin;
    const input = { principal: SUBJECT, tenant: '', agent: 'echo', taskId: 't', contextId: 'c', delegatedBy: [], audience };
    const expired = await signer.sign(input, 60, Date.now() - 120_000);
    const verify = callerVerifier({ gatewayUrl: publicUrl, audience });
    await expect(verify(expired)).rejects.toMatchObject({ code: 'ERR_JWT_EXPIRED' });
    // The same key, in date: accepted; for another audience: refused.
    expect((await verify(await signer.sign(input, 60))).sub).toBe(SUBJECT);
    await expect(verify(await signer.sign({ ...input, audience: 'https://other.example' }, 60))).rejects.toMatchObject({ code: 'ERR_JWT_CLAIM_VALIDATION_FAILED' });

    const refused = await fetch(`${exampleUrl}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0', 'x-a2a-caller': expired },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { messageId: 'x', role: 'ROLE_USER', parts: [{ text: 'hi' }] } } }),
    });
    expect(refused.status).toBe(401);
    expect(await refused.text()).toContain('ERR_JWT_EXPIRED');
    expect(decodeJwt(expired).sub).toBe(SUBJECT);
  });

  it('the gateway publishes the key at /.well-known/jwks.json', async () => {
    const jwks = (await (await fetch(`${publicUrl}/.well-known/jwks.json`)).json()) as { keys: { kid?: string; d?: string }[] };
    const key = await readPrivateJwk(join(gw.config.dataDir, CALLER_IDENTITY_KEY_FILE));
    const published = jwks.keys.find((k) => k.kid === key.kid);
    expect(published).toBeDefined();
    expect(published?.d).toBeUndefined();
  });
});

describe('configuration', () => {
  it('defaults to off, X-A2A-Caller, 60 s; refuses a header the adapter sets itself', () => {
    const config = configSchema.parse({ agents: { a: { adapter: 'demo' } } });
    expect(config.agents?.a?.callerIdentity).toEqual({ enabled: false, header: 'X-A2A-Caller', lifetimeSeconds: 60 });
    expect(() => configSchema.parse({ agents: { a: { callerIdentity: { enabled: true, header: 'Authorization' } } } })).toThrow(/header the adapter or the platform sets/);
  });

  it('a worker or gateway with a backend that gets tokens needs publicUrl (the issuer)', async () => {
    const config = configSchema.parse({ dataDir: join(ROOT, 'no-such-dir-caller-identity'), agents: { a: { adapter: 'demo' } }, delegation: { roles: { r: { callerIdentity: { enabled: true } } } } });
    await expect(loadCallerTokenSigner(config, ROOT)).rejects.toThrow(/callerIdentity is on for role "r", but publicUrl \(A2A_PUBLIC_URL\) is not set/);
    // Nobody gets tokens: no signer, no key file.
    expect(await loadCallerTokenSigner(configSchema.parse({ agents: { a: { adapter: 'demo' } } }), ROOT)).toBeUndefined();
  });

  it('publishes callerIdentityPublishedKeyFiles beside the signing key (a rotation), and nothing when no backend gets tokens', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'caller-identity-keys-'));
    try {
      const next = await loadOrCreatePrivateJwk(join(dir, 'next.json'), { alg: 'ES256', use: 'sig' });
      const settings = { dataDir: dir, cardSigning: false, publicUrl: 'https://gw.example', callerIdentityPublishedKeyFiles: ['next.json'] };
      const on = await loadGatewayKeys(configSchema.parse({ ...settings, agents: { a: { callerIdentity: { enabled: true } } } }), dir);
      const current = await readPrivateJwk(join(dir, CALLER_IDENTITY_KEY_FILE));
      expect(on.publishedKeys.map((k) => k.kid)).toEqual([current.kid, next.kid]);
      expect(on.publishedKeys.every((k) => k.d === undefined)).toBe(true);
      const off = await loadGatewayKeys(configSchema.parse({ ...settings, agents: { a: { adapter: 'demo' } } }), dir);
      expect(off.publishedKeys).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("the example's gateway.yaml is a valid configuration that turns it on", () => {
    const example = configSchema.parse(parseYaml(readFileSync(join(ROOT, 'examples/caller-identity/gateway.yaml'), 'utf8')));
    expect(example.agents?.echo?.callerIdentity).toEqual({ enabled: true, header: 'X-A2A-Caller', lifetimeSeconds: 60 });
    expect(example.publicUrl).toBe('http://127.0.0.1:8080');
  });
});

describe('keeping the header on its origin (adapters/caller-header-fetch.ts)', () => {
  it('follows a same-origin redirect with it, drops it (and Authorization) past another origin, and a 303 turns a POST into a GET', async () => {
    const seen: { at: string; method: string; headers: IncomingHttpHeaders }[] = [];
    const listen = async (name: string, answer: (path: string, res: import('node:http').ServerResponse) => void): Promise<{ url: string; server: Server }> => {
      const server = createServer((req, res) => {
        seen.push({ at: `${name}${req.url ?? ''}`, method: req.method ?? '', headers: req.headers });
        req.resume();
        answer(req.url ?? '/', res);
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
    };
    const other = await listen('other', (_path, res) => res.writeHead(200).end('ok'));
    const home = await listen('home', (path, res) => {
      if (path === '/start') res.writeHead(307, { location: '/again' }).end();
      else if (path === '/again') res.writeHead(303, { location: `${other.url}/end` }).end();
      else res.writeHead(404).end();
    });
    try {
      const pinned = pinCallerHeader(fetch, 'X-A2A-Caller', home.url);
      const response = await pinned(`${home.url}/start`, { method: 'POST', body: '{}', headers: { 'x-a2a-caller': 'token', authorization: 'Bearer key', 'content-type': 'application/json' } });
      expect(await response.text()).toBe('ok');
      expect(seen.map((s) => `${s.method} ${s.at}`)).toEqual(['POST home/start', 'POST home/again', 'GET other/end']);
      expect(seen.map((s) => s.headers['x-a2a-caller'])).toEqual(['token', 'token', undefined]);
      expect(seen[2]?.headers.authorization).toBeUndefined();
      // A call without the header is the plain fetch's.
      expect((await pinned(`${other.url}/plain`)).status).toBe(200);
    } finally {
      home.server.close();
      other.server.close();
    }
  });

  it('refuses to send it over plain http to anything but a loopback address', () => {
    const tokens = { header: 'X-A2A-Caller', token: async () => 't' };
    expect(() => createRemoteA2aAdapter({ url: 'http://agent.example.com' }, ROOT, { backendLimits: DEFAULT_BACKEND_LIMITS, callerIdentity: tokens })).toThrow(/plain http: the caller token would travel in the clear/);
    expect(() => createOpenAIAdapter({ baseURL: 'http://models.example.com/v1', model: 'm' }, { backendLimits: DEFAULT_BACKEND_LIMITS, callerIdentity: tokens })).toThrow(/plain http: the caller token would travel in the clear/);
    expect(() => createRemoteA2aAdapter({ url: 'https://agent.example.com' }, ROOT, { backendLimits: DEFAULT_BACKEND_LIMITS, callerIdentity: tokens })).not.toThrow();
  });
});
