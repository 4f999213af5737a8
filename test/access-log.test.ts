// One access-log line per request, at info, with what an operator needs to find a request
// again (method, path, status, duration, agent, operation, task, principal, trace id) and never
// a credential.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agents } from '../src/agents/agents.ts';
import { configSchema } from '../src/config/schema.ts';
import { startGatewayRole, type GatewayHandle } from '../src/gateway/server.ts';
import type { Logger, LogFields } from '../src/logging/logger.ts';
import { deletePrefix, REDIS_URL, ROOT, rpc, textMessage, uniquePrefix, waitFor } from './support/harness.ts';
import { Redis } from 'ioredis';
import { GetTaskRequest } from '@a2a-js/sdk';
import { metadataOf, rawGrpc } from './support/grpc.ts';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const lines: { level: string; message: string; fields: LogFields | undefined }[] = [];
const capture = (level: string) => (message: string, fields?: LogFields) => {
  lines.push({ level, message, fields });
};
const logger: Logger = { debug: capture('debug'), info: capture('info'), warn: capture('warn'), error: capture('error') };
let gateway: GatewayHandle;
const prefix = uniquePrefix('access-log');
let token: string;

beforeAll(async () => {
  const config = configSchema.parse({ redisUrl: REDIS_URL, keyPrefix: prefix, port: 0, grpcPort: 0, cardSigning: false, dataDir: join(tmpdir(), `a2a-${prefix}`), limits: { requestsPerSecond: 0, maxActiveTasks: 0 } });
  gateway = await startGatewayRole(config, await Agents.load(config, ROOT), logger, { baseDir: ROOT });
  token = await (gateway.devIssuer as NonNullable<GatewayHandle['devIssuer']>).mint({ sub: 'logged-user' });
});

afterAll(async () => {
  await gateway?.close();
  const redis = new Redis(REDIS_URL);
  await deletePrefix(redis, prefix);
  await redis.quit();
});

describe('the access log', () => {
  it('writes one line per request with the task, principal and trace id, and no token', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const reply = await rpc(`${gateway.url}/a2a/jsonrpc`, 'GetTask', { id: 'some-task' }, { Authorization: `Bearer ${token}`, traceparent: `00-${traceId}-00f067aa0ba902b7-01` });
    expect(reply.status).toBe(200);
    const line = await waitFor(() => lines.find((l) => l.message === 'request' && l.fields?.taskId === 'some-task'), 5_000, 'the access-log line');
    expect(line.level).toBe('info');
    expect(line.fields).toMatchObject({ method: 'POST', path: '/a2a/jsonrpc', status: 200, agent: 'default', operation: 'GetTask', principal: 'user:dev:logged-user', traceId });
    expect(typeof line.fields?.durationMs).toBe('number');
    expect(JSON.stringify(lines)).not.toContain(token);
    await fetch(`${gateway.url}/healthz`);
    const probe = await waitFor(() => lines.find((l) => l.fields?.path === '/healthz'), 5_000, 'the probe line');
    expect(probe.level).toBe('debug');
    // Refused before the operation: still logged, with the status.
    await rpc(`${gateway.url}/a2a/jsonrpc`, 'SendMessage', { message: textMessage('no token') });
    const refused = await waitFor(() => lines.find((l) => l.fields?.status === 401), 5_000, 'the refused request');
    expect(refused.fields?.principal).toBeUndefined();
  });

  it('writes one line per gRPC call too: the method path, the status code name, agent, operation, task, principal and trace id, and no token', async () => {
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const grpc = rawGrpc(gateway.grpc?.address as string);
    try {
      const { error } = await grpc.unary('getTask', GetTaskRequest.fromJSON({ id: 'grpc-task' }), metadataOf({ 'a2a-version': '1.0', authorization: `Bearer ${token}`, traceparent: `00-${traceId}-00f067aa0ba902b7-01` }));
      expect(error?.code).toBe(5);
    } finally {
      grpc.close();
    }
    const line = await waitFor(() => lines.find((l) => l.message === 'request' && l.fields?.taskId === 'grpc-task'), 5_000, 'the gRPC access-log line');
    expect(line.level).toBe('info');
    expect(line.fields).toMatchObject({ binding: 'grpc', path: '/lf.a2a.v1.A2AService/GetTask', status: 'NOT_FOUND', agent: 'default', operation: 'GetTask', principal: 'user:dev:logged-user', traceId });
    expect(typeof line.fields?.durationMs).toBe('number');
    expect(JSON.stringify(lines)).not.toContain(token);
  });
});
