// An MCP tool call is traced like an A2A call: a gateway process and a worker process export
// OTLP/JSON to a receiver here; the /mcp request's SERVER span (binding mcp, named after the MCP
// method) has the caller's traceparent as its parent, and the turn the call opened (the job's
// CONSUMER span, in the worker) continues that trace.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { deletePrefix, REDIS_URL, spawnWorkerProcess, uniquePrefix, waitFor, type WorkerProcess } from './support/harness.ts';
import { spawnGatewayProcess, type GatewayProcess } from './support/gateway-process.ts';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from './support/otlp-receiver.ts';

const SERVER = 2;
const CONSUMER = 5;

let receiver: OtlpReceiver;
let gateway: GatewayProcess;
let worker: WorkerProcess;
let dataDir: string;
const prefix = uniquePrefix('mcp-tracing');
const redis = new Redis(REDIS_URL);

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  dataDir = mkdtempSync(join(tmpdir(), 'a2a-mcp-tracing-'));
  const env = { A2A_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', A2A_DATA_DIR: dataDir, A2A_ADAPTER_OPTIONS: '{"stepMs":20}' };
  worker = await spawnWorkerProcess(prefix, env);
  gateway = await spawnGatewayProcess(prefix, env);
}, 60_000);

afterAll(async () => {
  gateway?.kill('SIGTERM');
  worker?.kill('SIGTERM');
  await Promise.all([gateway?.exited, worker?.exited]);
  await receiver?.close();
  await deletePrefix(redis, prefix);
  await redis.quit();
  rmSync(dataDir, { recursive: true, force: true });
});

const hex = (bytes: number): string => randomBytes(bytes).toString('hex');

describe('an MCP tool call in the trace', () => {
  it('has its SERVER span under the caller\'s traceparent, and its turn continues the trace', async () => {
    const traceId = hex(16);
    const callerSpanId = hex(8);
    const client = new Client({ name: 'mcp-tracing-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp`), { requestInit: { headers: { traceparent: `00-${traceId}-${callerSpanId}-01` } } }));
    let taskId: string;
    try {
      const result = (await client.callTool({ name: 'default', arguments: { message: 'echo traced' } })) as CallToolResult;
      taskId = (result.structuredContent as { taskId: string }).taskId;
    } finally {
      await client.close();
    }

    const spans = await waitFor(
      () => {
        const traced = receiver.spans.filter((span) => span.traceId === traceId);
        return traced.some((span) => span.name === 'mcp tools/call') && traced.some((span) => span.kind === CONSUMER) ? traced : undefined;
      },
      30_000,
      'the call\'s and the turn\'s spans',
    );
    const call = spans.find((span) => span.name === 'mcp tools/call') as ReceivedSpan;
    expect(call.kind).toBe(SERVER);
    expect(call.parentSpanId).toBe(callerSpanId);
    expect(call.attributes).toMatchObject({ 'a2a.binding': 'mcp', 'a2a.method': 'mcp tools/call', 'rpc.system': 'jsonrpc', 'url.path': '/mcp', 'a2a.task.id': taskId, 'http.response.status_code': 200 });
    expect(call.attributes['a2a.agent']).toBeUndefined();
    // Every request of the client carried the traceparent: initialize has its span too.
    expect(spans.some((span) => span.name === 'mcp initialize' && span.parentSpanId === callerSpanId)).toBe(true);

    const turn = spans.find((span) => span.kind === CONSUMER) as ReceivedSpan;
    expect(turn.service).toBe('a2a-gateway-worker');
    expect(turn.attributes).toMatchObject({ 'a2a.task.id': taskId, 'a2a.agent': 'default' });
    // From the turn up: the queue carried the call's context, so the turn's ancestors reach the call's span.
    const ancestors: string[] = [];
    for (let current: ReceivedSpan | undefined = turn; current !== undefined; current = spans.find((span) => span.spanId === current?.parentSpanId)) ancestors.push(current.spanId);
    expect(ancestors).toContain(call.spanId);
  }, 90_000);
});
