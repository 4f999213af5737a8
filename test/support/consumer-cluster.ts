// Two gateways and a worker on one Redis prefix, with authentication on and the process-wide
// limits off (as the harness has them), for the consumer suites: one consumer's traffic split over
// both gateways must meet one plan. The worker gets a control-plane view of its own, as every
// worker process has (src/app/process.ts), so it meters model turns.
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agents } from '../../src/agents/agents.ts';
import { Lifecycle } from '../../src/app/lifecycle.ts';
import { configSchema } from '../../src/config/schema.ts';
import { startControlPlane } from '../../src/control/control-plane.ts';
import { startGatewayRole, type GatewayHandle } from '../../src/gateway/server.ts';
import { createLogger } from '../../src/logging/logger.ts';
import type { RedisClient } from '../../src/redis/connection.ts';
import { startWorkerRole, type WorkerHandle } from '../../src/runtime/worker-role.ts';
import { deletePrefix, LIMITS_OFF, openTestRedis, REDIS_CLUSTER_NODES, REDIS_URL, ROOT, uniquePrefix } from './harness.ts';

export interface ConsumerCluster {
  prefix: string;
  a: GatewayHandle;
  b: GatewayHandle;
  worker: WorkerHandle;
  redis: RedisClient;
  close(): Promise<void>;
}

export async function startConsumerCluster(name: string, issuerConfig: Record<string, unknown>, agents: Record<string, unknown>, more: Record<string, unknown> = {}): Promise<ConsumerCluster> {
  const prefix = uniquePrefix(name);
  const config = configSchema.parse({
    auth: { enabled: true, issuers: [issuerConfig] },
    limits: LIMITS_OFF,
    cardSigning: false,
    dataDir: join(tmpdir(), `a2a-gateway-test-${prefix}-${randomBytes(2).toString('hex')}`),
    redisUrl: REDIS_URL,
    redisClusterNodes: REDIS_CLUSTER_NODES,
    keyPrefix: prefix,
    port: 0,
    grpcPort: 0,
    logLevel: 'silent',
    heartbeatMs: 1_000,
    lockDurationMs: 2_000,
    stalledIntervalMs: 1_000,
    shutdownGraceMs: 0,
    agents,
    ...more,
  });
  const logger = createLogger(config.logLevel);
  const loaded = await Agents.load(config, ROOT);
  const workerControl = new Lifecycle(logger);
  const control = await startControlPlane(workerControl, config, logger);
  const worker = await startWorkerRole(config, loaded, logger, { baseDir: ROOT, control });
  const [a, b] = await Promise.all([startGatewayRole(config, loaded, logger, { baseDir: ROOT }), startGatewayRole(config, loaded, logger, { baseDir: ROOT })]);
  const redis = openTestRedis();
  return {
    prefix,
    a,
    b,
    worker,
    redis,
    async close() {
      await Promise.all([a.close(), b.close()]);
      await worker.close();
      await workerControl.stop();
      await deletePrefix(redis, prefix);
      await redis.quit();
      await rm(config.dataDir, { recursive: true, force: true });
    },
  };
}

export interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

/** One A2A call with a bearer token (JSON-RPC when `method` is given, else REST). */
export async function a2aCall(url: string, token: string, body: unknown, httpMethod: 'GET' | 'POST' = 'POST'): Promise<Answer> {
  const response = await fetch(url, {
    method: httpMethod,
    headers: { 'A2A-Version': '1.0', Authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> };
}

export const jsonRpc = (base: string, token: string, method: string, params: unknown): Promise<Answer> =>
  a2aCall(`${base}/a2a/jsonrpc`, token, { jsonrpc: '2.0', id: 1, method, params });

/** The ErrorInfo metadata and message of a refusal, whichever binding answered (empty for a success). */
export function refusalOf(answer: Answer): { message: string; metadata: Record<string, string> } {
  const error = answer.body.error as { message: string; data?: unknown[]; details?: unknown[] } | undefined;
  if (error === undefined) return { message: '', metadata: {} };
  const details = (error.data ?? error.details ?? []) as { '@type': string; metadata?: Record<string, string> }[];
  return { message: error.message, metadata: details.find((d) => d['@type'] === 'type.googleapis.com/google.rpc.ErrorInfo')?.metadata ?? {} };
}
