// Traces across processes: a gateway process and a worker process export OTLP/JSON to a
// receiver in this test. A caller's traceparent is the parent of the request's SERVER span, and
// one connected trace runs request (gateway) → the queue (the trace context carried in the turn
// job's data) → turn (the job's CONSUMER span, worker) → invoke_agent → the model call, with the
// A2A facts as attributes; the model server and webhook receivers get the trace context. A
// refused request's span names its error code. With no endpoint configured nothing is exported
// and no job carries trace context. (BullMQ's own spans, telemetry.queueSpans, are covered in
// log-correlation.test.ts.)
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deletePrefix, REDIS_URL, rpc, spawnWorkerProcess, textMessage, uniquePrefix, waitFor, type WorkerProcess } from './support/harness.ts';
import { spawnGatewayProcess, type GatewayProcess } from './support/gateway-process.ts';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from './support/otlp-receiver.ts';
import { startFakeOpenAIServer, type FakeOpenAIServer } from './support/fake-openai-server.ts';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.ts';
import { startTestGateway } from './support/harness.ts';
import { SendMessageRequest, type SendMessageResponse } from '@a2a-js/sdk';
import { metadataOf, rawGrpc } from './support/grpc.ts';
import { freePort } from './support/redis-server.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const SERVER = 2;
const CLIENT = 3;
const CONSUMER = 5;
const INTERNAL = 1;

let receiver: OtlpReceiver;
let fake: FakeOpenAIServer;
let webhooks: WebhookReceiver;
let gateway: GatewayProcess;
let worker: WorkerProcess;
let configDir: string;
let grpcPort: number;
const prefix = uniquePrefix('tracing');
const redis = new Redis(REDIS_URL);

const hex = (bytes: number): string => randomBytes(bytes).toString('hex');

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  fake = await startFakeOpenAIServer();
  webhooks = await startWebhookReceiver();
  configDir = mkdtempSync(join(tmpdir(), 'a2a-tracing-'));
  const configFile = join(configDir, 'config.json');
  writeFileSync(
    configFile,
    JSON.stringify({
      agents: {
        demo: { adapter: 'demo', adapterOptions: { stepMs: 20 } },
        // Slow enough that a follow-up arrives while its first turn still runs.
        slow: { adapter: 'demo', adapterOptions: { stepMs: 300 } },
        model: { adapter: 'openai', adapterOptions: { baseURL: fake.baseURL, model: 'fake-model', stream: false } },
      },
    }),
  );
  grpcPort = await freePort();
  const env = { A2A_GRPC_PORT: String(grpcPort), A2A_CONFIG: configFile, A2A_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', A2A_DATA_DIR: configDir, A2A_PUSH_ALLOWED_HOSTS: '127.0.0.1' };
  worker = await spawnWorkerProcess(prefix, env);
  gateway = await spawnGatewayProcess(prefix, env);
}, 60_000);

afterAll(async () => {
  gateway?.kill('SIGTERM');
  worker?.kill('SIGTERM');
  await Promise.all([gateway?.exited, worker?.exited]);
  await receiver?.close();
  await fake?.close();
  await webhooks?.close();
  await deletePrefix(redis, prefix);
  await redis.quit();
  rmSync(configDir, { recursive: true, force: true });
});

/** The spans of one trace, once the one matching `until` has arrived. */
async function traceOf(traceId: string, until: (spans: ReceivedSpan[]) => boolean): Promise<ReceivedSpan[]> {
  return waitFor(
    () => {
      const spans = receiver.spans.filter((span) => span.traceId === traceId);
      return until(spans) ? spans : undefined;
    },
    20_000,
    `the spans of trace ${traceId}`,
  );
}

/** The chain of ancestors from `span` up to the trace's root (or a parent not exported here). */
function ancestry(spans: ReceivedSpan[], span: ReceivedSpan): ReceivedSpan[] {
  const chain = [span];
  for (let current = span; current.parentSpanId !== ''; ) {
    const parent = spans.find((candidate) => candidate.spanId === current.parentSpanId);
    if (parent === undefined) break;
    chain.push(parent);
    current = parent;
  }
  return chain;
}

describe('one trace per task turn, across the gateway and worker processes', () => {
  it('JSON-RPC SendMessage: the caller\'s traceparent is the parent; request → queue → turn → adapter → model call, with the A2A attributes', async () => {
    const traceId = hex(16);
    const callerSpanId = hex(8);
    const sent = await rpc(`${gateway.url}/agents/model/a2a/jsonrpc`, 'SendMessage', { message: textMessage('hello model') }, { traceparent: `00-${traceId}-${callerSpanId}-01` });
    const task = (sent.body.result as Json).task as Json;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');

    const spans = await traceOf(traceId, (all) => all.some((span) => span.name === 'SendMessage') && all.some((span) => span.name.startsWith('chat ')));
    const request = spans.find((span) => span.kind === SERVER) as ReceivedSpan;
    expect(request.parentSpanId).toBe(callerSpanId);
    expect(request).toMatchObject({
      name: 'SendMessage',
      service: 'a2a-gateway',
      attributes: {
        'a2a.method': 'SendMessage',
        'a2a.binding': 'jsonrpc',
        'rpc.system': 'jsonrpc',
        'a2a.agent': 'model',
        'a2a.task.id': task.id,
        'a2a.context.id': task.contextId,
        'a2a.task.state': 'TASK_STATE_COMPLETED',
        'http.response.status_code': 200,
      },
    });

    const model = spans.find((span) => span.name === 'chat fake-model') as ReceivedSpan;
    expect(model).toMatchObject({ kind: CLIENT, service: 'a2a-gateway-worker', attributes: { 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': 'fake-model' } });
    // From the model call up to the caller: adapter, turn (the job's consumer span, in the worker), request (gateway).
    const chain = ancestry(spans, model);
    expect(chain.map((span) => span.name)).toEqual(['chat fake-model', 'invoke_agent model', 'turn model', 'SendMessage']);
    expect(chain.map((span) => span.service)).toEqual(['a2a-gateway-worker', 'a2a-gateway-worker', 'a2a-gateway-worker', 'a2a-gateway']);
    const [, adapter, turn] = chain as [ReceivedSpan, ReceivedSpan, ReceivedSpan];
    expect(turn.kind).toBe(CONSUMER);
    expect(turn.attributes).toMatchObject({
      'a2a.task.id': task.id,
      'a2a.context.id': task.contextId,
      'a2a.agent': 'model',
      'a2a.turn': 1,
      'a2a.turn.attempt': 1,
      'a2a.task.state': 'TASK_STATE_COMPLETED',
      'messaging.system': 'bullmq',
      'messaging.destination.name': 'turns-model',
      'messaging.message.id': `${task.id}-t1`,
    });
    expect(adapter.attributes).toMatchObject({ 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'model', 'gen_ai.conversation.id': task.contextId, 'a2a.task.id': task.id });
    expect(String(adapter.attributes['a2a.adapter'])).toMatch(/^openai@/);

    // The model server was called inside that trace: its traceparent names the chat span.
    const call = fake.requests.find((recorded) => recorded.lastUserText === 'hello model');
    expect(call?.headers.traceparent).toBe(`00-${traceId}-${model.spanId}-01`);
  });

  it('HTTP+JSON: the same chain through the REST binding; a refused request names its error code', async () => {
    const traceId = hex(16);
    const callerSpanId = hex(8);
    const response = await fetch(`${gateway.url}/agents/demo/a2a/rest/message:send`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', traceparent: `00-${traceId}-${callerSpanId}-01` },
      body: JSON.stringify({ message: textMessage('echo over rest') }),
    });
    const task = ((await response.json()) as Json).task as Json;
    const spans = await traceOf(traceId, (all) => all.some((span) => span.name === 'invoke_agent demo') && all.some((span) => span.kind === SERVER));
    const request = spans.find((span) => span.kind === SERVER) as ReceivedSpan;
    expect(request.parentSpanId).toBe(callerSpanId);
    expect(request.attributes).toMatchObject({ 'a2a.method': 'SendMessage', 'a2a.binding': 'http+json', 'a2a.task.id': task.id, 'a2a.agent': 'demo' });
    const adapter = spans.find((span) => span.name === 'invoke_agent demo') as ReceivedSpan;
    expect(ancestry(spans, adapter).at(-1)?.spanId).toBe(request.spanId);

    const refusedTrace = hex(16);
    const missing = await rpc(`${gateway.url}/agents/demo/a2a/jsonrpc`, 'GetTask', { id: 'no-such-task' }, { traceparent: `00-${refusedTrace}-${hex(8)}-01` });
    expect((missing.body.error as Json).code).toBe(-32001);
    const [refused] = await traceOf(refusedTrace, (all) => all.length > 0);
    expect(refused).toMatchObject({ name: 'GetTask', attributes: { 'a2a.method': 'GetTask', 'a2a.error.code': -32001, 'a2a.error.reason': 'TASK_NOT_FOUND', 'error.type': 'TASK_NOT_FOUND' } });
  });

  it('gRPC SendMessage: the call metadata\'s traceparent is the parent of the call\'s SERVER span, and the turn continues it', async () => {
    const traceId = hex(16);
    const callerSpanId = hex(8);
    const grpc = rawGrpc(`127.0.0.1:${grpcPort}`);
    try {
      const message = { messageId: hex(8), role: 'ROLE_USER', parts: [{ text: 'echo over grpc' }] };
      const sent = await grpc.unary<SendMessageResponse>('sendMessage', SendMessageRequest.fromJSON({ message }), metadataOf({ 'a2a-version': '1.0', 'a2a-agent': 'demo', traceparent: `00-${traceId}-${callerSpanId}-01` }));
      expect(sent.error).toBeUndefined();
      const spans = await traceOf(traceId, (all) => all.some((span) => span.name === 'invoke_agent demo') && all.some((span) => span.kind === SERVER));
      const call = spans.find((span) => span.kind === SERVER) as ReceivedSpan;
      expect(call).toMatchObject({
        name: 'lf.a2a.v1.A2AService/SendMessage',
        parentSpanId: callerSpanId,
        attributes: { 'rpc.system': 'grpc', 'rpc.service': 'lf.a2a.v1.A2AService', 'rpc.method': 'SendMessage', 'rpc.grpc.status_code': 0, 'a2a.binding': 'grpc', 'a2a.method': 'SendMessage', 'a2a.agent': 'demo' },
      });
      const adapter = spans.find((span) => span.name === 'invoke_agent demo') as ReceivedSpan;
      expect(ancestry(spans, adapter).map((span) => span.name)).toEqual(['invoke_agent demo', 'turn demo', 'lf.a2a.v1.A2AService/SendMessage']);
    } finally {
      grpc.close();
    }
  });

  it('a request without traceparent starts a trace of its own, and the job carries it to the worker', async () => {
    const sent = await rpc(`${gateway.url}/agents/demo/a2a/jsonrpc`, 'SendMessage', { message: textMessage('echo untraced caller') });
    const task = (sent.body.result as Json).task as Json;
    const turn = await waitFor(() => receiver.spans.find((span) => span.name === 'turn demo' && span.attributes['a2a.task.id'] === task.id), 20_000, 'the turn span');
    const spans = await traceOf(turn.traceId, (all) => all.some((span) => span.kind === SERVER));
    const root = ancestry(spans, turn).at(-1) as ReceivedSpan;
    expect(root).toMatchObject({ kind: SERVER, parentSpanId: '', attributes: { 'a2a.task.id': task.id } });
    // BullMQ's housekeeping (stall checks) starts no trace of its own: every root is a request or a job.
    expect(receiver.spans.filter((span) => span.parentSpanId === '' && span.kind === INTERNAL).map((span) => span.name)).toEqual([]);
  });

  it('a webhook delivery is a CLIENT span whose trace context the receiver gets', async () => {
    const sent = await rpc(`${gateway.url}/agents/demo/a2a/jsonrpc`, 'SendMessage', {
      message: textMessage('echo with a webhook'),
      configuration: { taskPushNotificationConfig: { url: `${webhooks.url}/hook-trace` } },
    });
    const taskId = ((sent.body.result as Json).task as Json).id as string;
    const [delivery] = await webhooks.waitForAccepted(1, '/hook-trace', 20_000);
    const traceparent = delivery?.headers.traceparent ?? '';
    const [, traceId, spanId] = /^00-([\da-f]{32})-([\da-f]{16})-01$/.exec(traceparent) ?? [];
    const span = await waitFor(() => receiver.spans.find((candidate) => candidate.spanId === spanId), 20_000, 'the webhook span');
    expect(span).toMatchObject({ traceId, name: 'POST', kind: CLIENT, attributes: { 'a2a.task.id': taskId, 'http.response.status_code': 200 } });
  });

  it('a follow-up that waited for the running turn: the next turn, run by the same job, is in the follow-up request\'s trace', async () => {
    const url = `${gateway.url}/agents/slow/a2a/jsonrpc`;
    const [firstTrace, firstCaller, followTrace, followCaller] = [hex(16), hex(8), hex(16), hex(8)];
    const sent = await rpc(url, 'SendMessage', { message: textMessage('stream one two three four five six seven eight nine ten'), configuration: { returnImmediately: true } }, { traceparent: `00-${firstTrace}-${firstCaller}-01` });
    const taskId = ((sent.body.result as Json).task as Json).id as string;
    // Sent once the first turn runs, so the message waits for it (input policy enqueue).
    await waitFor(async () => ((await rpc(url, 'GetTask', { id: taskId })).body.result as Json | undefined)?.status?.state === 'TASK_STATE_WORKING', 10_000, 'the first turn to run');
    const followed = await rpc(url, 'SendMessage', { message: textMessage('echo the follow-up', { taskId }), configuration: { returnImmediately: true } }, { traceparent: `00-${followTrace}-${followCaller}-01` });
    expect((followed.body.result as Json).task.status.state, 'the follow-up waited for the running turn').toBe('TASK_STATE_WORKING');

    const turnOf = (turn: number): ReceivedSpan | undefined => receiver.spans.find((span) => span.name === 'turn slow' && span.attributes['a2a.task.id'] === taskId && span.attributes['a2a.turn'] === turn);
    const [first, second] = await waitFor(() => (turnOf(1) && turnOf(2) ? [turnOf(1), turnOf(2)] : undefined), 20_000, 'both turn spans');
    // Both turns ran in one job: the second is the follow-up's, not the first request's.
    expect(second?.attributes['messaging.message.id']).toBe(`${taskId}-t1`);
    const firstSpans = await traceOf(firstTrace, (all) => all.some((span) => span.kind === SERVER));
    expect(ancestry(firstSpans, first as ReceivedSpan).map((span) => span.name)).toEqual(['turn slow', 'SendMessage']);
    const followSpans = await traceOf(followTrace, (all) => all.some((span) => span.kind === SERVER) && all.some((span) => span.name === 'turn slow'));
    const chain = ancestry(followSpans, second as ReceivedSpan);
    expect(chain.map((span) => `${span.name}/${span.kind}`)).toEqual([`turn slow/${CONSUMER}`, `SendMessage/${SERVER}`]);
    expect(chain[1]?.parentSpanId).toBe(followCaller);
    expect(firstSpans.filter((span) => span.name === 'turn slow').map((span) => span.attributes['a2a.turn'])).toEqual([1]);
  });
});

describe('tracing off (no OTLP endpoint)', () => {
  it('starts no SDK: jobs carry no trace metadata and nothing is exported', async () => {
    const gw = await startTestGateway({ name: 'tracing-off', inProcessWorker: false });
    try {
      const before = receiver.spans.length;
      const sent = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('echo untraced'), configuration: { returnImmediately: true } }, { traceparent: `00-${hex(16)}-${hex(8)}-01` });
      const taskId = ((sent.body.result as Json).task as Json).id as string;
      const job = await gw.redis.hgetall(`${gw.prefix}:turns-default:${taskId}-t1`);
      const opts = JSON.parse(job.opts ?? '{}') as Json;
      expect(opts.attempts, 'the job was found').toBe(600);
      expect(Object.keys(opts)).not.toContain('tm');
      expect(Object.keys(JSON.parse(job.data ?? '{}') as Json)).not.toContain('trace');
      expect(receiver.spans.length).toBe(before);
    } finally {
      await gw.close();
    }
  });
});
