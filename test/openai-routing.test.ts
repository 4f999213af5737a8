// Several endpoints for one OpenAI-compatible agent: fallback before the first token (never
// after), cool-down and probe of an endpoint that keeps failing, weighted balancing, each key
// sent to its own endpoint only, and the single-baseURL configuration as it was.
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EndpointRouter } from '../adapters/openai/endpoint-router.ts';
import { modelEndpointCoolDowns, modelFallbacks } from '../adapters/openai/fallback.ts';
import { createOpenAIAdapter } from '../adapters/openai/index.ts';
import { DEFAULT_ADAPTER_ENVIRONMENT } from '../adapters/bounded-response.ts';
import type { AdapterEnvironment } from '../adapters/types.ts';
import { parseOpenAIOptions } from '../adapters/openai/options.ts';
import { TestTurnContext } from '../adapters/testing/index.ts';
import type { JsonObject } from '../src/protocol/types.ts';
import { startFakeOpenAIServer, type FakeOpenAIServer } from './support/fake-openai-server.ts';

type Mode = 'ok' | '500' | '429' | 'hang';

/** A model server whose behaviour the test switches: a good reply, 500, 429, or no answer at all. */
interface Flaky {
  baseURL: string;
  mode: Mode;
  requests: { authorization: string | undefined; caller?: string }[];
  close(): Promise<void>;
}

function reply(res: ServerResponse): void {
  const chunk = (delta: JsonObject, finish: string | null): string =>
    `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 0, model: 'flaky-model', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.end(`${chunk({ role: 'assistant', content: 'from flaky' }, null)}${chunk({}, 'stop')}data: [DONE]\n\n`);
}

async function startFlaky(mode: Mode): Promise<Flaky> {
  const flaky: Flaky = { baseURL: '', mode, requests: [], close: async () => undefined };
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const caller = req.headers['x-a2a-caller'];
      flaky.requests.push({ authorization: req.headers.authorization, ...(typeof caller === 'string' ? { caller } : {}) });
      if (flaky.mode === 'hang') return;
      if (flaky.mode === 'ok') return reply(res);
      const status = flaky.mode === '429' ? 429 : 500;
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `flaky says ${status}`, type: 'server_error' } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  flaky.baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  flaky.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return flaky;
}

/** A loopback address nothing listens on: connection refused. */
async function refusedURL(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/v1`;
}

async function counted(counter: typeof modelFallbacks | typeof modelEndpointCoolDowns, labels: Record<string, string>): Promise<number> {
  const { values } = await counter.get();
  return values.filter((v) => Object.entries(labels).every(([k, value]) => (v.labels as Record<string, unknown>)[k] === value)).reduce((sum, v) => sum + v.value, 0);
}

const turn = (input: string): TestTurnContext => new TestTurnContext({ input, taskId: 'task-r', contextId: 'ctx-r', adapterName: 'openai' });

const fallbackLines = (ctx: TestTurnContext) => ctx.logs.filter((line) => line.message.startsWith('model endpoint failed before the first token'));

let a: FakeOpenAIServer;
let b: FakeOpenAIServer;
const flakies: Flaky[] = [];

beforeAll(async () => {
  [a, b] = await Promise.all([startFakeOpenAIServer(), startFakeOpenAIServer()]);
});

afterAll(async () => {
  await Promise.all([a?.close(), b?.close(), ...flakies.map((f) => f.close())]);
});

async function flaky(mode: Mode): Promise<Flaky> {
  const server = await startFlaky(mode);
  flakies.push(server);
  return server;
}

describe('fallback before the first token', () => {
  it.each([
    ['connection refused', 'connection'],
    ['500', '5xx'],
    ['429', '429'],
    ['hang', 'timeout'],
  ] as const)('the first endpoint failing (%s) → the next one answers; the move is logged and counted', async (kind, reason) => {
    const first = kind === 'connection refused' ? await refusedURL() : (await flaky(kind)).baseURL;
    const name = `first-${reason}`;
    const openai = createOpenAIAdapter({
      model: 'fake-model',
      maxRetries: 0,
      requestTimeoutMs: 300,
      endpoints: [
        { name, baseURL: first },
        { name: 'second', baseURL: a.baseURL },
        { name: 'third', baseURL: b.baseURL },
      ],
    });
    const before = await counted(modelFallbacks, { from: name, to: 'second', reason });
    const marker = `fallback ${reason}`;
    const ctx = turn(marker);
    expect(await openai.run(ctx)).toEqual({ state: 'completed', message: `You said: ${marker}` });
    expect(a.requestsFor(marker)).toHaveLength(1);
    expect(b.requestsFor(marker)).toHaveLength(0);
    expect(await counted(modelFallbacks, { from: name, to: 'second', reason })).toBe(before + 1);
    const lines = fallbackLines(ctx);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'warn', fields: { from: name, to: 'second', reason } });
    expect(ctx.recordedSteps).toContain('model-fallback');
  });

  it('a failure after the first token is not moved: the turn fails as with one endpoint, nothing is duplicated', async () => {
    // The stream sends its first words, then goes silent past streamIdleTimeoutMs.
    const openai = createOpenAIAdapter({ model: 'fake-model', maxRetries: 0, streamIdleTimeoutMs: 300, endpoints: [{ name: 'streams-then-stalls', baseURL: a.baseURL }, { name: 'spare', baseURL: b.baseURL }] });
    const ctx = turn('words=8 stall after-first-token');
    const outcome = await openai.run(ctx);
    expect(outcome.state).toBe('failed');
    expect(a.requestsFor('after-first-token')).toHaveLength(1);
    expect(b.requestsFor('after-first-token')).toHaveLength(0);
    expect(fallbackLines(ctx)).toEqual([]);
    // What the client saw came from the one endpoint: its first words, never a second reply.
    const text = ctx.chunks.flatMap((chunk) => chunk.parts.map((part) => ('text' in part ? part.text : ''))).join('');
    expect(text.startsWith('w1')).toBe(true);
    expect(text.split('w1')).toHaveLength(2);
  });

  it('when every endpoint fails before the first token, the retry policy takes over with a new round', async () => {
    const down = await flaky('500');
    const alsoDown = await flaky('500');
    const openai = createOpenAIAdapter({ model: 'fake-model', maxRetries: 1, retryBaseDelayMs: 10, endpointFailures: 100, endpoints: [{ baseURL: down.baseURL }, { baseURL: alsoDown.baseURL }] });
    const outcome = await openai.run(turn('all down'));
    expect(outcome.state).toBe('failed');
    // Two rounds (the first try and maxRetries 1), each through both endpoints.
    expect([down.requests.length, alsoDown.requests.length]).toEqual([2, 2]);
  });
});

describe('cool-down and probe', () => {
  it('an endpoint failing endpointFailures times in a row is left out, then probed: a failed probe rests it again, a good one puts it back', async () => {
    const sick = await flaky('500');
    const openai = createOpenAIAdapter({
      model: 'fake-model',
      maxRetries: 0,
      endpointFailures: 2,
      endpointCoolDownMs: 300,
      endpoints: [{ name: 'sick', baseURL: sick.baseURL }, { name: 'healthy', baseURL: a.baseURL }],
    });
    const cooled = await counted(modelEndpointCoolDowns, { endpoint: 'sick' });
    for (const n of [1, 2]) expect((await openai.run(turn(`cool ${n}`))).state).toBe('completed');
    expect(sick.requests).toHaveLength(2);
    expect(await counted(modelEndpointCoolDowns, { endpoint: 'sick' })).toBe(cooled + 1);

    // Cooling down: not tried at all, and so no fallback either.
    const resting = turn('cool 3');
    expect(await openai.run(resting)).toEqual({ state: 'completed', message: 'You said: cool 3' });
    expect(sick.requests).toHaveLength(2);
    expect(fallbackLines(resting)).toEqual([]);

    // After the cool-down: one trial, which fails and rests it again at once.
    await new Promise((resolve) => setTimeout(resolve, 350));
    expect((await openai.run(turn('cool 4'))).state).toBe('completed');
    expect(sick.requests).toHaveLength(3);
    expect(await counted(modelEndpointCoolDowns, { endpoint: 'sick' })).toBe(cooled + 2);
    await openai.run(turn('cool 5'));
    expect(sick.requests).toHaveLength(3);

    // Recovered: the next trial succeeds and it is back in use (first in the list).
    sick.mode = 'ok';
    await new Promise((resolve) => setTimeout(resolve, 350));
    expect(await openai.run(turn('cool 6'))).toEqual({ state: 'completed', message: 'from flaky' });
    expect(await openai.run(turn('cool 7'))).toEqual({ state: 'completed', message: 'from flaky' });
    expect(sick.requests).toHaveLength(5);
    expect(a.requestsFor('cool 6')).toHaveLength(0);
  });

  it('the router: only failures in a row count; a success starts the count again', () => {
    const x = { name: 'x', priority: 1, weight: 1 };
    const router = new EndpointRouter([x], { failureThreshold: 3, coolDownMs: 100 }, () => 0);
    expect([router.failed(x), router.failed(x)]).toEqual([false, false]);
    router.succeeded(x);
    expect([router.failed(x), router.failed(x), router.coolingDown(x)]).toEqual([false, false, false]);
    expect(router.failed(x)).toBe(true);
    expect(router.coolingDown(x)).toBe(true);
  });

  it('the router: a probe is given to one call only; with every endpoint resting the call still goes somewhere', () => {
    let now = 0;
    const x = { name: 'x', priority: 1, weight: 1 };
    const y = { name: 'y', priority: 2, weight: 1 };
    const router = new EndpointRouter([x, y], { failureThreshold: 1, coolDownMs: 100 }, () => now);
    expect(router.failed(x)).toBe(true);
    expect(router.pick(new Set())?.endpoint).toBe(y);
    expect(router.failed(y)).toBe(true);
    // Both resting: the one whose rest ends first, and no fallback into the other.
    now = 50;
    expect(router.pick(new Set())?.endpoint).toBe(x);
    expect(router.pick(new Set([x]))).toBeUndefined();
    now = 100;
    expect(router.pick(new Set())).toEqual({ endpoint: x, probe: true });
    // x's probe is running: the next call takes y (whose own probe this is).
    expect(router.pick(new Set())).toEqual({ endpoint: y, probe: true });
    router.succeeded(x);
    expect(router.pick(new Set())).toEqual({ endpoint: x, probe: false });
  });
});

describe('weighted balancing', () => {
  it('two healthy endpoints of one priority weighted 3:1 both serve, the heavier more', async () => {
    const openai = createOpenAIAdapter({
      model: 'fake-model',
      endpoints: [
        { name: 'heavy', baseURL: a.baseURL, priority: 1, weight: 3 },
        { name: 'light', baseURL: b.baseURL, priority: 1, weight: 1 },
      ],
    });
    for (let n = 0; n < 60; n++) await openai.run(turn(`balance ${n}`));
    const heavy = a.requests.filter((r) => r.lastUserText.startsWith('balance ')).length;
    const light = b.requests.filter((r) => r.lastUserText.startsWith('balance ')).length;
    expect(heavy + light).toBe(60);
    expect(light).toBeGreaterThan(0);
    expect(heavy).toBeGreaterThan(light);
  });

  it('the router draws in proportion to weight among the best priority only', () => {
    const heavy = { name: 'heavy', priority: 1, weight: 3 };
    const light = { name: 'light', priority: 1, weight: 1 };
    const spare = { name: 'spare', priority: 2, weight: 100 };
    const draws = [0, 0.5, 0.74, 0.75, 0.99];
    const router = new EndpointRouter([heavy, light, spare], { failureThreshold: 3, coolDownMs: 1000 }, Date.now, () => draws.shift() as number);
    const names = [0, 1, 2, 3, 4].map(() => router.pick(new Set())?.endpoint.name);
    expect(names).toEqual(['heavy', 'heavy', 'heavy', 'light', 'light']);
  });
});

describe('credentials per endpoint', () => {
  it('each endpoint gets its own key and no other; one naming none gets no Authorization header', async () => {
    process.env.ROUTING_KEY_ONE = 'sk-routing-one';
    process.env.ROUTING_KEY_TWO = 'sk-routing-two';
    const one = await flaky('500');
    const two = await flaky('500');
    const three = await flaky('ok');
    const openai = createOpenAIAdapter({
      model: 'fake-model',
      maxRetries: 0,
      endpoints: [
        { baseURL: one.baseURL, apiKeyEnv: 'ROUTING_KEY_ONE' },
        { baseURL: two.baseURL, apiKeyEnv: 'ROUTING_KEY_TWO' },
        { baseURL: three.baseURL },
      ],
    });
    expect(await openai.run(turn('keys'))).toEqual({ state: 'completed', message: 'from flaky' });
    expect([one.requests, two.requests, three.requests]).toEqual([[{ authorization: 'Bearer sk-routing-one' }], [{ authorization: 'Bearer sk-routing-two' }], [{ authorization: undefined }]]);
  });
});

describe('caller tokens per endpoint', () => {
  const environment: AdapterEnvironment = {
    ...DEFAULT_ADAPTER_ENVIRONMENT,
    callerIdentity: { header: 'X-A2A-Caller', token: async (_ctx, origin) => `token-for ${origin}` },
  };

  it('each endpoint gets a token whose audience is its own origin', async () => {
    const down = await flaky('500');
    const up = await flaky('ok');
    const openai = createOpenAIAdapter({ model: 'fake-model', maxRetries: 0, endpoints: [{ baseURL: down.baseURL }, { baseURL: up.baseURL }] }, environment);
    expect((await openai.run(turn('tokens'))).state).toBe('completed');
    expect(down.requests.map((r) => r.caller)).toEqual([`token-for ${new URL(down.baseURL).origin}`]);
    expect(up.requests.map((r) => r.caller)).toEqual([`token-for ${new URL(up.baseURL).origin}`]);
  });

  it('a plain-http endpoint off loopback stops the start, naming it', () => {
    expect(() => createOpenAIAdapter({ model: 'm', endpoints: [{ baseURL: 'http://127.0.0.1:1/v1' }, { name: 'remote', baseURL: 'http://model.example.com/v1' }] }, environment)).toThrow(
      /callerIdentity is on, but endpoint remote http:\/\/model\.example\.com is plain http/,
    );
  });
});

describe('one baseURL, as before', () => {
  it('parses as before and is never rested: every turn reaches the one server', async () => {
    expect(parseOpenAIOptions({ baseURL: a.baseURL, model: 'm' })).not.toHaveProperty('endpoints');
    const down = await flaky('500');
    const openai = createOpenAIAdapter({ baseURL: down.baseURL, model: 'fake-model', maxRetries: 0, endpointFailures: 1 });
    for (const n of [1, 2, 3]) {
      const ctx = turn(`single ${n}`);
      expect((await openai.run(ctx)).state).toBe('failed');
      expect(fallbackLines(ctx)).toEqual([]);
    }
    expect(down.requests).toHaveLength(3);
  });

  it.each([
    [{ model: 'm', baseURL: 'http://127.0.0.1:1/v1', endpoints: [{ baseURL: 'http://127.0.0.1:2/v1' }] }, 'options baseURL and endpoints are both set'],
    [{ model: 'm', apiKeyEnv: 'K', endpoints: [{ baseURL: 'http://127.0.0.1:2/v1' }] }, 'with endpoints, give each endpoint its own'],
    [{ model: 'm', endpoints: [{ baseURL: 'http://127.0.0.1:2/v1', apiKeyEnv: 'K', apiKeyFile: '/k' }] }, 'option endpoints.0 apiKeyEnv and apiKeyFile are both set'],
    [{ model: 'm', endpoints: [{ baseURL: 'http://127.0.0.1:2/v1', weight: 0 }] }, 'option endpoints.0.weight must be greater than 0'],
    [{ model: 'm', endpoints: [] }, 'option endpoints must list at least one endpoint'],
  ])('%j is refused naming the option', (raw, expected) => {
    expect(() => parseOpenAIOptions(raw)).toThrow(expected);
  });
});
