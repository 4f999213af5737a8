// /metrics and /admin/queues on the gateway's port are platform-wide: refused without
// credentials (401) and to every caller without breadth (403), a tenant's admin included; a
// metrics scraper's a2a:metrics reads /metrics and nothing else; a2a:operator with a2a:platform
// looks at the dashboard and cannot act on it; a2a:admin with a2a:platform acts. The counters in the Prometheus text (read with a
// Prometheus text parser) move as a scripted workload says: n tasks → n created and n completed
// turns and n SendMessage 200s; a canceled task → each cancel stage once; a request past its
// agent's rate limit → one 429 and one refusal by limits.requestsPerSecond. Histograms are read from
// prom-client's registry in-process (the parser flattens labelled histograms).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request as httpRequest } from 'node:http';
import { createTurnQueue } from '../queues/turns.ts';
import { metricsRegistry } from '../src/telemetry/metrics.ts';
import { rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';
import { createTestIssuer, type TestIssuer } from './support/identity.ts';
import { parseScrape, type Scrape } from './support/prometheus-text.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

let gw: TestGateway;
let issuer: TestIssuer;
let userToken: string;
/** Every admin surface: a2a:admin and a2a:platform. */
let adminToken: string;
const tokens = { tenantAdmin: '', defaultTenantAdmin: '', scraper: '', viewer: '' };

beforeAll(async () => {
  issuer = await createTestIssuer();
  gw = await startTestGateway({
    name: 'metrics',
    config: {
      auth: { enabled: true, issuers: [issuer.config] },
      agents: {
        default: { adapter: 'demo', adapterOptions: { stepMs: 50 } },
        // One request, then the bucket is empty for a long while: the second is refused.
        limited: { adapter: 'demo', adapterOptions: { stepMs: 20 }, limits: { requestsPerSecond: 0.001, burst: 1 } },
      },
    },
  });
  userToken = await issuer.token({ sub: 'metrics-user' });
  adminToken = await issuer.token({ sub: 'operator', scope: 'a2a:admin a2a:platform' });
  tokens.tenantAdmin = await issuer.token({ sub: 'acme-ops', tenant: 'acme', scope: 'a2a:admin' });
  tokens.defaultTenantAdmin = await issuer.token({ sub: 'ops', scope: 'a2a:admin' });
  tokens.scraper = await issuer.token({ sub: 'prometheus', scope: 'a2a:metrics' });
  tokens.viewer = await issuer.token({ sub: 'viewer', scope: 'a2a:operator a2a:platform' });
});

afterAll(async () => {
  await gw?.close();
});

const bearer = (token: string): Record<string, string> => ({ Authorization: `Bearer ${token}` });

async function scrape(): Promise<Scrape> {
  const response = await fetch(`${gw.url}/metrics`, { headers: bearer(tokens.scraper) });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseScrape(await response.text());
}

/** A histogram's observation count from prom-client's registry (this process runs gateway and worker). */
async function histogramCount(name: string, labels: Record<string, string>): Promise<number> {
  const metric = (await metricsRegistry.getMetricsAsJSON()).find((candidate) => candidate.name === name);
  const samples = (metric?.values ?? []) as { metricName?: string; labels: Record<string, string | number>; value: number }[];
  return samples
    .filter((sample) => sample.metricName === `${name}_count` && Object.entries(labels).every(([key, value]) => sample.labels[key] === value))
    .reduce((total, sample) => total + sample.value, 0);
}

const PAUSE = '/admin/queues/api/queues/turns-default/pause';
const RESUME = '/admin/queues/api/queues/turns-default/resume';

async function paused(): Promise<boolean> {
  const queue = createTurnQueue(gw.redis, gw.prefix, 'default');
  try {
    return await queue.isPaused();
  } finally {
    await queue.close();
  }
}

const put = (path: string, token: string): Promise<Response> =>
  fetch(`${gw.url}${path}`, { method: 'PUT', headers: { ...bearer(token), 'Content-Type': 'application/json' }, body: '{}' });

describe('admin routes', () => {
  for (const path of ['/metrics', '/admin/queues', '/admin/queues/api/queues']) {
    it(`${path}: 401 without credentials, 403 to callers and to a tenant's admin, served to a platform admin`, async () => {
      const anonymous = await fetch(`${gw.url}${path}`);
      expect(anonymous.status).toBe(401);
      const user = await fetch(`${gw.url}${path}`, { headers: bearer(userToken) });
      expect(user.status).toBe(403);
      const needed = path === '/metrics' ? 'a2a:metrics' : 'a2a:operator a2a:platform';
      expect(((await user.json()) as Json).error.details[0].metadata).toMatchObject({ reason: 'SCOPE_MISSING', requiredScope: needed });
      for (const token of [tokens.tenantAdmin, tokens.defaultTenantAdmin]) {
        const tenantAdmin = await fetch(`${gw.url}${path}`, { headers: bearer(token) });
        expect(tenantAdmin.status).toBe(403);
        expect(((await tenantAdmin.json()) as Json).error.details[0].metadata.requiredScope).toBe(path === '/metrics' ? 'a2a:metrics' : 'a2a:platform');
        expect(tenantAdmin.headers.get('www-authenticate')).toContain('error="insufficient_scope"');
      }
      const admin = await fetch(`${gw.url}${path}`, { headers: bearer(adminToken) });
      expect(admin.status).toBe(200);
    });
  }

  it("the dashboard shows every agent's turn queue and the push and schedule queues", async () => {
    const response = await fetch(`${gw.url}/admin/queues/api/queues`, { headers: bearer(adminToken) });
    const names = (((await response.json()) as Json).queues as Json[]).map((queue) => queue.name as string).sort();
    expect(names).toEqual(['push', 'schedules', 'turns-default', 'turns-limited']);
    const page = await fetch(`${gw.url}/admin/queues`, { headers: bearer(adminToken) });
    expect(await page.text()).toContain('a2a-gateway queues');
  });

  it('a metrics scraper reads /metrics and is refused everything else', async () => {
    expect((await fetch(`${gw.url}/metrics`, { headers: bearer(tokens.scraper) })).status).toBe(200);
    expect((await fetch(`${gw.url}/admin/queues/api/queues`, { headers: bearer(tokens.scraper) })).status).toBe(403);
    expect((await put(PAUSE, tokens.scraper)).status).toBe(403);
    expect(await paused()).toBe(false);
    const sent = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('hello') }, bearer(userToken));
    const taskId = ((sent.body.result as Json).task as Json).id as string;
    for (const [method, params] of [
      ['SendMessage', { message: textMessage('from a scraper') }],
      ['CancelTask', { id: taskId }],
      ['GetTask', { id: taskId }],
      ['ListOperatorTasks', {}],
      ['InspectOperatorTask', { id: taskId }],
      ['CancelOperatorTask', { id: taskId }],
      ['ListPushDeadLetters', {}],
    ] as const) {
      const refused = await rpc(gw.jsonRpcUrl, method, params, bearer(tokens.scraper));
      expect(refused.status, method).toBe(403);
      expect((refused.body.error as Json).data[0].metadata.reason, method).toBe('SCOPE_MISSING');
    }
    const operatorList = await fetch(`${gw.restUrl}/operator/tasks`, { headers: { ...bearer(tokens.scraper), 'A2A-Version': '1.0' } });
    expect(operatorList.status).toBe(403);
  });

  it('a read-only operator with a2a:platform looks at the dashboard and cannot pause, resume, retry or clean', async () => {
    expect((await fetch(`${gw.url}/admin/queues/api/queues`, { headers: bearer(tokens.viewer) })).status).toBe(200);
    expect((await fetch(`${gw.url}/metrics`, { headers: bearer(tokens.viewer) })).status).toBe(200);
    for (const path of [PAUSE, '/admin/queues/api/queues/pause', '/admin/queues/api/queues/turns-default/retry/failed', '/admin/queues/api/queues/turns-default/clean/completed']) {
      const refused = await put(path, tokens.viewer);
      expect(refused.status, path).toBe(403);
      expect(((await refused.json()) as Json).error.details[0].metadata.requiredScope).toBe('a2a:admin');
    }
    const add = await fetch(`${gw.url}/admin/queues/api/queues/turns-default/add`, { method: 'POST', headers: { ...bearer(tokens.viewer), 'Content-Type': 'application/json' }, body: '{"name":"x","data":{}}' });
    expect(add.status).toBe(403);
    expect(await paused()).toBe(false);
  });

  it('a platform admin pauses and resumes a queue; a tenant admin cannot', async () => {
    expect((await put(PAUSE, tokens.tenantAdmin)).status).toBe(403);
    expect((await put(PAUSE, tokens.defaultTenantAdmin)).status).toBe(403);
    expect(await paused()).toBe(false);
    expect((await put(PAUSE, adminToken)).status).toBe(200);
    expect(await paused()).toBe(true);
    expect((await put(RESUME, adminToken)).status).toBe(200);
    expect(await paused()).toBe(false);
  });

  it("a dashboard request's body must declare its length, within maxBodyBytes", async () => {
    const chunked = await new Promise<number>((resolve, reject) => {
      const request = httpRequest(`${gw.url}${PAUSE}`, { method: 'PUT', headers: { ...bearer(adminToken), 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' } }, (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      });
      request.on('error', reject);
      request.end('{}');
    });
    expect(chunked).toBe(411);
    const tooLarge = await fetch(`${gw.url}${PAUSE}`, {
      method: 'PUT',
      headers: { ...bearer(adminToken), 'Content-Type': 'application/json' },
      body: JSON.stringify({ padding: 'x'.repeat(gw.config.maxBodyBytes) }),
    });
    expect(tooLarge.status).toBe(413);
    expect(await paused()).toBe(false);
  });
});

describe('counters move as the workload says', () => {
  it('n tasks: n created, n completed turns, n SendMessage 200s, n request latencies', async () => {
    const n = 3;
    const before = await scrape();
    const latenciesBefore = await histogramCount('a2a_request_duration_seconds', { method: 'SendMessage', binding: 'jsonrpc' });
    const turnsBefore = await histogramCount('a2a_turn_duration_seconds', { agent: 'default', state: 'TASK_STATE_COMPLETED' });
    for (let i = 0; i < n; i += 1) {
      const sent = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage(`echo ${i}`) }, bearer(userToken));
      expect(((sent.body.result as Json).task as Json).status.state).toBe('TASK_STATE_COMPLETED');
    }
    const after = await scrape();
    expect(after.value('a2a_tasks_created_total', { agent: 'default' }) - before.value('a2a_tasks_created_total', { agent: 'default' })).toBe(n);
    expect(after.value('a2a_turns_finished_total', { agent: 'default', state: 'TASK_STATE_COMPLETED' }) - before.value('a2a_turns_finished_total', { agent: 'default', state: 'TASK_STATE_COMPLETED' })).toBe(n);
    const sendOk = { method: 'SendMessage', binding: 'jsonrpc', status: '200' };
    expect(after.value('a2a_requests_total', sendOk) - before.value('a2a_requests_total', sendOk)).toBe(n);
    expect((await histogramCount('a2a_request_duration_seconds', { method: 'SendMessage', binding: 'jsonrpc' })) - latenciesBefore).toBe(n);
    expect((await histogramCount('a2a_turn_duration_seconds', { agent: 'default', state: 'TASK_STATE_COMPLETED' })) - turnsBefore).toBe(n);
    expect(await histogramCount('a2a_queue_wait_seconds', { agent: 'default' })).toBeGreaterThanOrEqual(n);
  });

  it('a canceled task: requested, acknowledged and stopped once each; the running turn is an active turn until then', async () => {
    const before = await scrape();
    const started = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('long 200'), configuration: { returnImmediately: true } }, bearer(userToken));
    const taskId = ((started.body.result as Json).task as Json).id as string;
    await waitFor(async () => ((await scrape()).value('a2a_active_turns', { agent: 'default' }) === 1 ? true : undefined), 10_000, 'the turn to run');
    const canceled = await rpc(gw.jsonRpcUrl, 'CancelTask', { id: taskId }, bearer(userToken));
    expect((canceled.body.result as Json).status.state).toBe('TASK_STATE_CANCELED');
    const after = await waitFor(async () => {
      const reading = await scrape();
      return reading.value('a2a_cancel_stages_total', { stage: 'stopped' }) > before.value('a2a_cancel_stages_total', { stage: 'stopped' }) ? reading : undefined;
    });
    for (const stage of ['requested', 'acknowledged', 'stopped']) {
      expect(after.value('a2a_cancel_stages_total', { stage }) - before.value('a2a_cancel_stages_total', { stage }), stage).toBe(1);
    }
    const canceledTurns = { agent: 'default', state: 'TASK_STATE_CANCELED' };
    expect(after.value('a2a_turns_finished_total', canceledTurns) - before.value('a2a_turns_finished_total', canceledTurns)).toBe(1);
    expect(after.value('a2a_active_turns', { agent: 'default' })).toBe(0);
  });

  it('a request past the rate limit: one 429 and one refusal by limits.requestsPerSecond', async () => {
    const before = await scrape();
    const url = `${gw.url}/agents/limited/a2a/jsonrpc`;
    const first = await rpc(url, 'SendMessage', { message: textMessage('echo within the limit') }, bearer(userToken));
    expect(first.status).toBe(200);
    const second = await rpc(url, 'SendMessage', { message: textMessage('echo past the limit') }, bearer(userToken));
    expect(second.status).toBe(429);
    const after = await scrape();
    expect(after.value('a2a_limit_refusals_total', { limit: 'limits.requestsPerSecond' }) - before.value('a2a_limit_refusals_total', { limit: 'limits.requestsPerSecond' })).toBe(1);
    const refused = { method: 'SendMessage', binding: 'jsonrpc', status: '429' };
    expect(after.value('a2a_requests_total', refused) - before.value('a2a_requests_total', refused)).toBe(1);
  });

  it('a stream: one open SSE stream while it lasts, one time-to-first-event and one replay-buffer sample', async () => {
    const firstBefore = await histogramCount('a2a_time_to_first_event_seconds', { method: 'SendStreamingMessage' });
    const replayBefore = (await metricsRegistry.getMetricsAsJSON()).find((metric) => metric.name === 'a2a_replay_events');
    const replayCountBefore = ((replayBefore?.values ?? []) as { metricName?: string; value: number }[]).find((sample) => sample.metricName === 'a2a_replay_events_count')?.value ?? 0;
    const response = await fetch(gw.jsonRpcUrl, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Accept: 'text/event-stream', ...bearer(userToken) },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendStreamingMessage', params: { message: textMessage('long 6') } }),
    });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    expect((await scrape()).value('a2a_sse_streams_open')).toBe(1);
    let text = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    expect(text).toContain('TASK_STATE_COMPLETED');
    await waitFor(async () => ((await scrape()).value('a2a_sse_streams_open') === 0 ? true : undefined), 5_000, 'the stream to close');
    expect((await histogramCount('a2a_time_to_first_event_seconds', { method: 'SendStreamingMessage' })) - firstBefore).toBe(1);
    const replayAfter = (await metricsRegistry.getMetricsAsJSON()).find((metric) => metric.name === 'a2a_replay_events');
    const replayCountAfter = ((replayAfter?.values ?? []) as { metricName?: string; value: number }[]).find((sample) => sample.metricName === 'a2a_replay_events_count')?.value ?? 0;
    expect(replayCountAfter - replayCountBefore).toBe(1);
  });

  it('gauges and process metrics: queue depths from Redis, open streams, event-loop lag, Redis round trips', async () => {
    const reading = await scrape();
    for (const state of ['waiting', 'prioritized', 'delayed', 'active', 'failed']) {
      expect(reading.families.find((family) => family.name === 'a2a_queue_jobs')?.metrics.some((sample) => sample.labels?.queue === 'turns-default' && sample.labels.state === state), state).toBe(true);
    }
    expect(reading.value('a2a_queue_jobs', { queue: 'turns-default', state: 'failed' })).toBe(0);
    expect(reading.has('a2a_sse_streams_open')).toBe(true);
    expect(reading.has('nodejs_eventloop_lag_seconds')).toBe(true);
    expect(reading.has('a2a_redis_roundtrip_seconds')).toBe(true);
  });
});
