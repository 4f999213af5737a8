// /metrics and /admin/queues on the gateway's port: refused without credentials (401) and
// without a2a:admin (403), served with it. The counters in the Prometheus text (read with a
// Prometheus text parser) move as a scripted workload says: n tasks → n created and n completed
// turns and n SendMessage 200s; a canceled task → each cancel stage once; a request past its
// agent's rate limit → one 429 and one refusal by limits.requestsPerSecond. Histograms are read from
// prom-client's registry in-process (the parser flattens labelled histograms).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricsRegistry } from '../src/telemetry/metrics.ts';
import { rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';
import { createTestIssuer, type TestIssuer } from './support/identity.ts';
import { parseScrape, type Scrape } from './support/prometheus-text.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

let gw: TestGateway;
let issuer: TestIssuer;
let userToken: string;
let adminToken: string;

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
  adminToken = await issuer.token({ sub: 'operator', scope: 'a2a:admin' });
});

afterAll(async () => {
  await gw?.close();
});

const bearer = (token: string): Record<string, string> => ({ Authorization: `Bearer ${token}` });

async function scrape(): Promise<Scrape> {
  const response = await fetch(`${gw.url}/metrics`, { headers: bearer(adminToken) });
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

describe('admin routes', () => {
  for (const path of ['/metrics', '/admin/queues', '/admin/queues/api/queues']) {
    it(`${path}: 401 without credentials, 403 without a2a:admin, served with it`, async () => {
      const anonymous = await fetch(`${gw.url}${path}`);
      expect(anonymous.status).toBe(401);
      const user = await fetch(`${gw.url}${path}`, { headers: bearer(userToken) });
      expect(user.status).toBe(403);
      expect(((await user.json()) as Json).error.details[0].metadata).toMatchObject({ reason: 'SCOPE_MISSING', requiredScope: 'a2a:admin' });
      const admin = await fetch(`${gw.url}${path}`, { headers: bearer(adminToken) });
      expect(admin.status).toBe(200);
    });
  }

  it('the dashboard shows every agent\'s turn queue and the push and schedule queues', async () => {
    const response = await fetch(`${gw.url}/admin/queues/api/queues`, { headers: bearer(adminToken) });
    const names = (((await response.json()) as Json).queues as Json[]).map((queue) => queue.name as string).sort();
    expect(names).toEqual(['push', 'schedules', 'turns-default', 'turns-limited']);
    const page = await fetch(`${gw.url}/admin/queues`, { headers: bearer(adminToken) });
    expect(await page.text()).toContain('a2a-gateway queues');
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
