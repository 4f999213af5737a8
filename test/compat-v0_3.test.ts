// The 0.3 wire form with raw bodies, as 0.3 clients and samples send them: JSON-RPC with `kind`
// discriminators, lower-case states and `final` flags; HTTP+JSON under /v1 in the 0.3 proto's
// ProtoJSON (content, TASK_STATE_CANCELLED) with bare error bodies; the card in 0.3 shape when asked
// for by name (?A2A-Version=0.3); and what stays a 1.0 matter (ListTasks, unknown versions).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectUnchanged, startTestGateway, turnJobsSettled, waitFor, type TestGateway } from './support/harness.ts';
import { createTestIssuer, type TestIssuer } from './support/identity.ts';
import { openSse } from './support/sse.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

let gw: TestGateway;
let counter = 0;
const nextId = (): string => `legacy-${Date.now()}-${++counter}`;

beforeAll(async () => {
  gw = await startTestGateway({ name: 'compat' });
});

afterAll(async () => {
  await gw?.close();
});

/** A 0.3 JSON-RPC call: no A2A-Version header, as 0.3 clients send it. */
async function legacyRpc(method: string, params: unknown, headers: Record<string, string> = {}, url = gw.jsonRpcUrl): Promise<{ status: number; headers: Headers; body: Json }> {
  const response = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: JSON.stringify({ jsonrpc: '2.0', id: 7, method, params }) });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Json };
}

async function legacyRest(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; body: Json }> {
  const response = await fetch(`${gw.restUrl}${path}`, {
    method,
    headers: { 'Content-Type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: (text === '' ? {} : JSON.parse(text)) as Json };
}

/** Waits until no task of this gateway is queued or running (so "nothing changed" can be proven). */
async function allTasksSettled(): Promise<void> {
  await waitFor(async () => {
    const keys = await gw.redis.keys(`${gw.prefix}:{*}:task`);
    const states = await Promise.all(keys.map((key) => gw.redis.hget(key, 'state')));
    return states.every((state) => state !== 'TASK_STATE_SUBMITTED' && state !== 'TASK_STATE_WORKING');
  });
  await turnJobsSettled(gw);
}

const legacyMessage = (text: string, extra: Json = {}): Json => ({ kind: 'message', messageId: nextId(), role: 'user', parts: [{ kind: 'text', text }], ...extra });

describe('JSON-RPC, 0.3 bodies', () => {
  it('message/send: a kind-discriminated message in, a kind "task" out with lower-case states and roles', async () => {
    const { body } = await legacyRpc('message/send', {
      message: legacyMessage('echo old', {
        parts: [
          { kind: 'text', text: 'echo old' },
          { kind: 'data', data: { n: 1 } },
          { kind: 'file', file: { uri: 'https://files.example/a.txt', name: 'a.txt', mimeType: 'text/plain' } },
        ],
      }),
      configuration: { blocking: true },
    });
    expect(body.error).toBeUndefined();
    const task = body.result;
    expect(task.kind).toBe('task');
    expect(task.status.state).toBe('completed');
    expect(task.status.message).toMatchObject({ kind: 'message', role: 'agent', parts: [{ kind: 'text', text: 'echo complete' }] });
    expect(task.history[0]).toMatchObject({ kind: 'message', role: 'user' });
    expect(task.artifacts[0].parts).toEqual([
      { kind: 'text', text: 'echo old' },
      { kind: 'data', data: { n: 1 } },
      { kind: 'file', file: { uri: 'https://files.example/a.txt', name: 'a.txt', mimeType: 'text/plain' } },
    ]);
  });

  it('configuration without blocking does not block (0.3 semantics); without configuration the call blocks', async () => {
    const quick = await legacyRpc('message/send', { message: legacyMessage('long 20'), configuration: {} });
    expect(['submitted', 'working']).toContain(quick.body.result.status.state);
    const blocked = await legacyRpc('message/send', { message: legacyMessage('echo wait') });
    expect(blocked.body.result.status.state).toBe('completed');
  });

  it('message/stream: kind-tagged events, status-update with final false until the one that ends the stream', async () => {
    const { reader } = await openSse(gw.jsonRpcUrl, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'st', method: 'message/stream', params: { message: legacyMessage('stream alpha beta') } }),
    });
    await reader.done;
    const results = reader.events.map((e) => (JSON.parse(e.data) as Json).result);
    expect(results[0].kind).toBe('task');
    const kinds = new Set(results.map((r: Json) => r.kind));
    expect([...kinds].sort()).toEqual(['artifact-update', 'status-update', 'task']);
    const updates = results.filter((r: Json) => r.kind === 'status-update');
    expect(updates.slice(0, -1).every((u: Json) => u.final === false)).toBe(true);
    expect(updates.at(-1)).toMatchObject({ final: true, status: { state: 'completed' } });
    const chunks = results.filter((r: Json) => r.kind === 'artifact-update');
    expect(chunks[0].artifact.parts[0].kind).toBe('text');
    expect(chunks.at(-1).lastChunk).toBe(true);
    expect(reader.events.every((e) => /^\d+-\d+$/.test(e.id ?? ''))).toBe(true);
  });

  it('a question ends a message/stream with final true on input-required; the answer (same taskId) completes it', async () => {
    const { reader } = await openSse(gw.jsonRpcUrl, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'q', method: 'message/stream', params: { message: legacyMessage('dialogue') } }),
    });
    await reader.done;
    const last = (JSON.parse(reader.events.at(-1)?.data ?? '{}') as Json).result;
    expect(last).toMatchObject({ kind: 'status-update', final: true, status: { state: 'input-required' } });
    const answered = await legacyRpc('message/send', { message: legacyMessage('Grace', { taskId: last.taskId, contextId: last.contextId }) });
    expect(answered.body.result).toMatchObject({ kind: 'task', id: last.taskId, status: { state: 'completed' } });
  });

  it('tasks/get with historyLength, tasks/cancel, tasks/resubscribe', async () => {
    const done = (await legacyRpc('message/send', { message: legacyMessage('echo history') })).body.result;
    const read = await legacyRpc('tasks/get', { id: done.id, historyLength: 1 });
    expect(read.body.result.history).toHaveLength(1);
    const running = (await legacyRpc('message/send', { message: legacyMessage('long 100'), configuration: { blocking: false } })).body.result;
    const { reader } = await openSse(gw.jsonRpcUrl, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'rs', method: 'tasks/resubscribe', params: { id: running.id } }),
    });
    await reader.waitForEvents(2);
    const canceled = await legacyRpc('tasks/cancel', { id: running.id });
    expect(canceled.body.result.status.state).toBe('canceled');
    await reader.done;
    const last = (JSON.parse(reader.events.at(-1)?.data ?? '{}') as Json).result;
    expect(last).toMatchObject({ kind: 'status-update', final: true, status: { state: 'canceled' } });
    const again = await legacyRpc('tasks/cancel', { id: running.id });
    expect(again.body.error.code).toBe(-32002);
  });

  it('data that is not an object travels wrapped ({value}, data_part_compat) and is unwrapped on the way in', async () => {
    const sent = await fetch(gw.jsonRpcUrl, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { messageId: nextId(), role: 'ROLE_USER', parts: [{ text: 'echo' }, { data: [1, 2, 3] }] } } }),
    });
    const task = ((await sent.json()) as Json).result.task;
    const legacy = await legacyRpc('tasks/get', { id: task.id });
    expect(legacy.body.result.artifacts[0].parts[1]).toEqual({ kind: 'data', data: { value: [1, 2, 3] }, metadata: { data_part_compat: true } });
    const back = (await legacyRpc('message/send', { message: legacyMessage('echo', { parts: [{ kind: 'text', text: 'echo' }, legacy.body.result.artifacts[0].parts[1]] }) })).body.result;
    const modern = await fetch(`${gw.restUrl}/tasks/${back.id}`, { headers: { 'A2A-Version': '1.0' } });
    expect(((await modern.json()) as Json).artifacts[0].parts[1]).toEqual({ data: [1, 2, 3] });
  });

  it('errors: unknown task -32001, a bad part kind -32602 with nothing stored, tasks/list is no 0.3 method, a 1.0 method without the header is -32009', async () => {
    expect((await legacyRpc('tasks/get', { id: 'nope' })).body.error.code).toBe(-32001);
    await allTasksSettled();
    const bad = await expectUnchanged(gw, () => legacyRpc('message/send', { message: legacyMessage('x', { parts: [{ kind: 'video', url: 'x' }] }) }));
    expect(bad.body.error.code).toBe(-32602);
    expect((await legacyRpc('tasks/list', {})).body.error.code).toBe(-32601);
    expect((await legacyRpc('GetTask', { id: 'nope' })).body.error.code).toBe(-32009);
    // Versions neither layer speaks: VersionNotSupportedError whatever the method.
    expect((await legacyRpc('message/send', { message: legacyMessage('x') }, { 'A2A-Version': '0.2' })).body.error.code).toBe(-32009);
    expect((await legacyRpc('tasks/get', { id: 'x' }, { 'A2A-Version': '2.0' })).body.error.code).toBe(-32009);
  });

  it('proto field names are accepted in 0.3 bodies too (message_id, context_id, history_length)', async () => {
    const contextId = nextId();
    const sent = await legacyRpc('message/send', { message: { kind: 'message', message_id: nextId(), context_id: contextId, role: 'user', parts: [{ kind: 'text', text: 'echo snake' }] } });
    expect(sent.body.result).toMatchObject({ kind: 'task', contextId, status: { state: 'completed' } });
    const read = await legacyRpc('tasks/get', { id: sent.body.result.id, history_length: 1 });
    expect(read.body.result.history).toHaveLength(1);
  });

  it('an explicit A2A-Version 0.3 is the same as none; extensions are echoed under the 0.3 header name', async () => {
    const explicit = await legacyRpc('message/send', { message: legacyMessage('echo v') }, { 'A2A-Version': '0.3', 'X-A2A-Extensions': 'urn:a2a-gateway:ext:assignments:v1' });
    expect(explicit.body.result.kind).toBe('task');
    expect(explicit.headers.get('x-a2a-extensions')).toBe('urn:a2a-gateway:ext:assignments:v1');
  });
});

describe('HTTP+JSON, 0.3 bodies (/v1, the 0.3 proto ProtoJSON)', () => {
  const protoMessage = (text: string, extra: Json = {}): Json => ({ messageId: nextId(), role: 'ROLE_USER', content: [{ text }], ...extra });

  it('POST /v1/message:send answers {task} in proto form; GET /v1/tasks/{id}; cancel spells TASK_STATE_CANCELLED', async () => {
    const sent = await legacyRest('POST', '/v1/message:send', { message: protoMessage('echo proto'), configuration: { blocking: true } });
    expect(sent.status).toBe(200);
    expect(sent.headers.get('content-type')).toMatch(/^application\/json/);
    const task = sent.body.task;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(task.artifacts[0].parts).toEqual([{ text: 'echo proto' }]);
    expect(task.history[0]).toMatchObject({ role: 'ROLE_USER', content: [{ text: 'echo proto' }] });
    const read = await legacyRest('GET', `/v1/tasks/${task.id}?historyLength=1`);
    expect(read.body.history).toHaveLength(1);
    // A configuration without blocking (proto3: false) does not block.
    const running = (await legacyRest('POST', '/v1/message:send', { message: protoMessage('long 100'), configuration: {} })).body.task;
    expect(running.status.state).not.toBe('TASK_STATE_COMPLETED');
    // The reference 0.3 SDKs send an empty POST body as `null`.
    const canceled = await legacyRest('POST', `/v1/tasks/${running.id}:cancel`, 'null');
    expect(canceled.body.status.state).toBe('TASK_STATE_CANCELLED');
  });

  it('POST /v1/message:stream: bare StreamResponse events, statusUpdate.final on the last', async () => {
    const { reader } = await openSse(`${gw.restUrl}/v1/message:stream`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ message: protoMessage('stream gamma delta') }),
    });
    await reader.done;
    const events = reader.events.map((e) => JSON.parse(e.data) as Json);
    expect(Object.keys(events[0] ?? {})).toEqual(['task']);
    expect(events.some((e) => e.artifactUpdate?.artifact?.parts?.[0]?.text !== undefined)).toBe(true);
    expect(events.at(-1)).toMatchObject({ statusUpdate: { final: true, status: { state: 'TASK_STATE_COMPLETED' } } });
  });

  it('errors are bare {code, message}: unknown task 404 -32001, terminal cancel 400 -32002; 1.0 routes still want A2A-Version 1.0', async () => {
    const missing = await legacyRest('GET', '/v1/tasks/nope');
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ code: -32001, message: expect.any(String) });
    expect(missing.body.error).toBeUndefined();
    const done = (await legacyRest('POST', '/v1/message:send', { message: protoMessage('echo done'), configuration: { blocking: true } })).body.task;
    const refused = await legacyRest('POST', `/v1/tasks/${done.id}:cancel`);
    expect(refused.status).toBe(400);
    expect(refused.body.code).toBe(-32002);
    const modernRoute = await legacyRest('GET', `/tasks/${done.id}`);
    expect(modernRoute.body.error?.details?.[0]?.reason).toBe('VERSION_NOT_SUPPORTED');
  });
});

describe('cards', () => {
  it('without A2A-Version the card is the 1.0 card (listing 0.3 beside 1.0); asked for 0.3 by header or query it is 0.3-shaped, embedding the 1.0 interfaces', async () => {
    const modern = await fetch(`${gw.url}/.well-known/agent-card.json`);
    const modernCard = (await modern.json()) as Json;
    expect(modern.headers.get('vary')).toContain('A2A-Version');
    expect(modernCard.url).toBeUndefined();
    expect(modernCard.protocolVersion).toBeUndefined();
    expect(modernCard.supportedInterfaces.map((i: Json) => `${i.protocolBinding} ${i.protocolVersion}`)).toEqual(['JSONRPC 1.0', 'HTTP+JSON 1.0', 'JSONRPC 0.3', 'HTTP+JSON 0.3']);
    const named = await fetch(`${gw.url}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } });
    expect(await named.json()).toEqual(modernCard);
    for (const legacy of [
      await fetch(`${gw.url}/.well-known/agent-card.json?A2A-Version=0.3`),
      await fetch(`${gw.url}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '0.3' } }),
    ]) {
      const card = (await legacy.json()) as Json;
      expect(card).toMatchObject({ protocolVersion: '0.3.0', url: gw.jsonRpcUrl, preferredTransport: 'JSONRPC', additionalInterfaces: [{ url: gw.restUrl, transport: 'HTTP+JSON' }] });
      expect(card.capabilities).toMatchObject({ streaming: true, pushNotifications: true });
      expect(card.supportedInterfaces).toHaveLength(4);
      expect(legacy.headers.get('etag')).not.toBe(modern.headers.get('etag'));
    }
  });

  it('an agent of a several-agent gateway answers 0.3 in its own URL space', async () => {
    const several = await startTestGateway({ name: 'compat-agents', config: { agents: { one: { adapter: 'demo' }, two: { adapter: 'demo' } } } });
    try {
      const card = (await (await fetch(`${several.url}/agents/two/.well-known/agent-card.json?A2A-Version=0.3`)).json()) as Json;
      expect(card.url).toBe(`${several.url}/agents/two/a2a/jsonrpc`);
      const sent = await legacyRpc('message/send', { message: legacyMessage('echo two') }, {}, card.url as string);
      expect(sent.body.result.kind).toBe('task');
      // Tasks belong to their agent in 0.3 as in 1.0: another agent's URLs do not find it.
      expect((await legacyRpc('tasks/get', { id: sent.body.result.id }, {}, `${several.url}/agents/one/a2a/jsonrpc`)).body.error.code).toBe(-32001);
    } finally {
      await several.close();
    }
  });

  describe('with authentication on', () => {
    let secured: TestGateway;
    let issuer: TestIssuer;

    beforeAll(async () => {
      issuer = await createTestIssuer();
      secured = await startTestGateway({ name: 'compat-auth', config: { auth: { enabled: true, issuers: [issuer.config] } } });
    });

    afterAll(async () => {
      await secured?.close();
    });

    it('declares security the 0.3 way; the extended card is served by agent/getAuthenticatedExtendedCard and GET /v1/card', async () => {
      const card = (await (await fetch(`${secured.url}/.well-known/agent-card.json?A2A-Version=0.3`)).json()) as Json;
      expect(card.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
      // Partners and API keys can be registered at run time (admin API), so their schemes are declared too.
      expect(card.securitySchemes.apiKey).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-API-Key' });
      expect(card.security).toEqual([{ bearer: [] }, { partnerSignature: [] }, { apiKey: [] }]);
      expect(card.supportsAuthenticatedExtendedCard).toBe(true);
      const token = await issuer.token({ scope: 'a2a:read' });
      const viaRpc = await legacyRpc('agent/getAuthenticatedExtendedCard', {}, { Authorization: `Bearer ${token}` }, `${secured.url}/a2a/jsonrpc`);
      expect(viaRpc.body.result.skills.map((s: Json) => s.id)).toContain('transfer');
      expect(viaRpc.body.result.protocolVersion).toBe('0.3.0');
      const viaRest = await fetch(`${secured.url}/a2a/rest/v1/card`, { headers: { Authorization: `Bearer ${token}` } });
      const restCard = (await viaRest.json()) as Json;
      expect(restCard.skills.map((s: Json) => s.id)).toContain('transfer');
      expect(restCard.securitySchemes.bearer.httpAuthSecurityScheme.scheme).toBe('Bearer');
      // Without credentials: refused before anything else, as on 1.0.
      const anonymous = await legacyRpc('message/send', { message: legacyMessage('echo') }, {}, `${secured.url}/a2a/jsonrpc`);
      expect(anonymous.status).toBe(401);
      expect(anonymous.body.error.code).toBe(-31401);
    });
  });
});

describe('one task, both versions', () => {
  it('a task sent in 0.3 is read in 1.0 and the other way round, with the same content', async () => {
    const legacy = (await legacyRpc('message/send', { message: legacyMessage('echo shared') })).body.result;
    const modern = (await (await fetch(`${gw.restUrl}/tasks/${legacy.id}`, { headers: { 'A2A-Version': '1.0' } })).json()) as Json;
    expect(modern.status.state).toBe('TASK_STATE_COMPLETED');
    expect(modern.artifacts[0].parts).toEqual([{ text: 'echo shared' }]);
    await waitFor(async () => (await legacyRest('GET', `/v1/tasks/${legacy.id}`)).body.status?.state === 'TASK_STATE_COMPLETED');
  });
});
