// Log lines about a task carry its ids: a line written inside a turn has the task's taskId and
// contextId and, tracing on, the traceId and spanId of the turn's span, so a log search leads
// to the trace and back. Tracing runs in-process here, into the SDK's in-memory exporter, with
// BullMQ's own spans on (telemetry.queueSpans): the turn is a child of BullMQ's consumer span,
// itself continuing the producer span the request made. And a call to a remote A2A agent is a
// CLIENT span that sends the trace context on.
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agents } from '../src/agents/agents.ts';
import { configSchema } from '../src/config/schema.ts';
import { startGatewayRole, type GatewayHandle } from '../src/gateway/server.ts';
import { createLogger } from '../src/logging/logger.ts';
import { startWorkerRole, type WorkerHandle } from '../src/runtime/worker-role.ts';
import { startTracing, type TracingHandle } from '../src/telemetry/tracing.ts';
import { inSpan, SpanKind, traceHeaders } from '../src/telemetry/spans.ts';
import { createDownstreamFetch } from '../adapters/remote-a2a/downstream-fetch.ts';
import { deletePrefix, REDIS_URL, ROOT, rpc, textMessage, uniquePrefix, waitFor } from './support/harness.ts';
import { captureLogLines, type LogLine } from './support/log-capture.ts';
import { Redis } from 'ioredis';

type Json = LogLine;

const { lines, destination: capture } = captureLogLines();
const exporter = new InMemorySpanExporter();
const prefix = uniquePrefix('logs');
let tracing: TracingHandle;
let worker: WorkerHandle;
let gateway: GatewayHandle;
const redis = new Redis(REDIS_URL);
const dataDir = join(tmpdir(), `a2a-gateway-test-${prefix}`);

beforeAll(async () => {
  tracing = startTracing({ otlpEndpoint: undefined, otlpProtocol: 'http/protobuf', serviceName: 'log-test', exporter, queueSpans: true });
  const config = configSchema.parse({ auth: { enabled: false }, cardSigning: false, redisUrl: REDIS_URL, keyPrefix: prefix, port: 0, adapterOptions: { stepMs: 10 }, dataDir });
  const logger = createLogger('debug', 'a2a-gateway', capture);
  const agents = await Agents.load(config, ROOT);
  worker = await startWorkerRole(config, agents, logger, { baseDir: ROOT });
  gateway = await startGatewayRole(config, agents, logger, { baseDir: ROOT });
});

afterAll(async () => {
  await gateway?.close();
  await worker?.close();
  await tracing?.shutdown();
  await deletePrefix(redis, prefix);
  await redis.quit();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('log lines about a task', () => {
  it('a line written in a turn carries taskId, contextId and the turn span\'s traceId and spanId', async () => {
    const sent = await rpc(`${gateway.url}/a2a/jsonrpc`, 'SendMessage', { message: textMessage('echo logged') });
    const task = (sent.body.result as Json).task as Json;
    const line = await waitFor(() => lines.find((entry) => entry.msg === 'turn finished' && entry.taskId === task.id), 10_000, 'the turn-finished line');
    expect(line).toMatchObject({ contextId: task.contextId, state: 'TASK_STATE_COMPLETED', turn: 1 });
    // BullMQ's consumer span ends only after the processor returns, which is after the
    // turn-finished line: wait for the whole chain to be exported, not just the turn span.
    const chainOf = (): { turnSpan: ReadableSpan | undefined; chain: string[] } => {
      const finished = exporter.getFinishedSpans();
      const turnSpan = finished.find((span) => span.name === 'turn default' && span.attributes['a2a.task.id'] === task.id);
      const chain: string[] = [];
      for (let current = turnSpan; current !== undefined; ) {
        chain.push(`${current.name}/${current.kind}`);
        const parentId = current.parentSpanContext?.spanId;
        current = parentId === undefined ? undefined : finished.find((span) => span.spanContext().spanId === parentId);
      }
      return { turnSpan, chain };
    };
    const { turnSpan, chain } = await waitFor(async () => {
      await tracing.flush();
      const found = chainOf();
      return found.chain.length >= 4 ? found : undefined;
    }, 10_000, 'the turn span and its parents').catch(() => chainOf());
    expect(turnSpan, 'the turn span').toBeDefined();
    expect(line.traceId).toBe(turnSpan?.spanContext().traceId);
    expect(line.spanId).toBe(turnSpan?.spanContext().spanId);
    // The chain up from the turn: BullMQ's consumer span, its producer span, the request.
    expect(chain).toEqual(['turn default/0', 'process turns-default/4', 'add turns-default.turn/3', 'SendMessage/1']);
  });
});

describe('calls to a remote A2A agent', () => {
  it('are CLIENT spans named by the A2A method, and carry the trace context downstream', async () => {
    const seen: Headers[] = [];
    const downstream = createDownstreamFetch({
      credentials: undefined,
      requestTimeoutMs: 5_000,
      fetch: async (_url, init) => {
        seen.push(new Headers(init?.headers));
        return new Response('{"jsonrpc":"2.0","id":1,"result":{}}', { status: 200, headers: { 'Content-Type': 'application/json' } });
      },
    });
    let parentTraceId = '';
    // A root span that starts a trace (a root INTERNAL span would not be sampled).
    await inSpan('a request', { kind: SpanKind.SERVER, parent: undefined }, async (span, own) => {
      parentTraceId = span?.spanContext().traceId ?? '';
      // What a turn does: its trace context rides along as headers (ctx.traceHeaders()).
      const headers = { 'Content-Type': 'application/json', ...traceHeaders(own) };
      await downstream('http://127.0.0.1:9/a2a/jsonrpc', { method: 'POST', body: '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}', headers });
    });
    await tracing.flush();
    const call = exporter.getFinishedSpans().find((span) => span.name === 'SendMessage' && span.kind === 2);
    expect(call?.spanContext().traceId).toBe(parentTraceId);
    expect(call?.parentSpanContext?.spanId).not.toBeUndefined();
    expect(call?.attributes).toMatchObject({ 'a2a.method': 'SendMessage', 'http.request.method': 'POST', 'http.response.status_code': 200, 'server.address': '127.0.0.1' });
    expect(seen[0]?.get('traceparent')).toBe(`00-${parentTraceId}-${call?.spanContext().spanId}-01`);
  });
});
