// /healthz and /readyz of a gateway process and a worker process (on its metrics port), against
// a redis-server of this file's own: ready when Redis answers, the scripts are loaded and the
// queue answers; not ready while Redis is stopped (SIGSTOP) and ready again after SIGCONT; a
// flushed script cache is loaded again by the probe; a gateway told to stop (SIGTERM) answers
// 503 "shutting down" while it still serves requests for shutdownDrainMs, then exits 0.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpc, spawnWorkerProcess, textMessage, uniquePrefix, waitFor, type WorkerProcess } from './support/harness.ts';
import { spawnGatewayProcess, type GatewayProcess } from './support/gateway-process.ts';
import { freePort, startOwnRedis, type OwnRedis } from './support/redis-server.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

let redis: OwnRedis;
let plain: Redis;
let gateway: GatewayProcess;
let worker: WorkerProcess;
let workerMetrics: string;
const prefix = uniquePrefix('readiness');
const DRAIN_MS = 3_000;

beforeAll(async () => {
  redis = await startOwnRedis();
  plain = new Redis(redis.url);
  const env = { A2A_REDIS_URL: redis.url, A2A_REDIS_COMMAND_TIMEOUT_MS: '1500' };
  const workerPort = await freePort();
  workerMetrics = `http://127.0.0.1:${workerPort}`;
  worker = await spawnWorkerProcess(prefix, { ...env, A2A_METRICS_PORT: String(workerPort) });
  gateway = await spawnGatewayProcess(prefix, { ...env, A2A_SHUTDOWN_DRAIN_MS: String(DRAIN_MS), A2A_METRICS_PORT: '0' });
}, 60_000);

afterAll(async () => {
  redis?.resume();
  gateway?.kill('SIGKILL');
  worker?.kill('SIGKILL');
  await Promise.all([gateway?.exited, worker?.exited]);
  plain?.disconnect();
  await redis?.stop();
});

async function probe(url: string): Promise<{ status: number; body: Json }> {
  const response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
  return { status: response.status, body: (await response.json()) as Json };
}

const probes = (): Record<string, string> => ({
  gateway: `${gateway.url}/readyz`,
  'gateway metrics port': (gateway.metricsUrl as string).replace(/\/metrics$/, '/readyz'),
  'worker metrics port': `${workerMetrics}/readyz`,
});

describe('health and readiness', () => {
  it('ready with Redis up; the metrics ports serve /metrics and /healthz', async () => {
    for (const [name, url] of Object.entries(probes())) expect((await probe(url)).status, name).toBe(200);
    expect((await probe(`${workerMetrics}/healthz`)).body).toEqual({ status: 'ok' });
    const metrics = await fetch(`${workerMetrics}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain('a2a_active_turns');
  });

  it('not ready while Redis is stopped, still alive; ready again once it continues', async () => {
    redis.pause();
    try {
      for (const [name, url] of Object.entries(probes())) {
        const started = Date.now();
        const answer = await probe(url);
        expect(answer.status, name).toBe(503);
        expect(answer.body, name).toEqual({ status: 'unavailable', reason: 'the task store is not answering' });
        expect(Date.now() - started, `${name} answers within a second`).toBeLessThan(1_500);
      }
      expect((await probe(`${gateway.url}/healthz`)).status).toBe(200);
      expect((await probe(`${workerMetrics}/healthz`)).status).toBe(200);
    } finally {
      redis.resume();
    }
    for (const [name, url] of Object.entries(probes())) {
      await waitFor(async () => ((await probe(url)).status === 200 ? true : undefined), 20_000, `${name} to be ready again`);
    }
  });

  it('loads the scripts a restarted Redis lost', async () => {
    await plain.script('FLUSH');
    const cached = async (): Promise<number> => Number(/number_of_cached_scripts:(\d+)/.exec(await plain.info('memory'))?.[1] ?? 0);
    expect(await cached()).toBe(0);
    expect((await probe(`${gateway.url}/readyz`)).status).toBe(200);
    expect(await cached()).toBeGreaterThanOrEqual(30);
  });

  it('a gateway told to stop is not ready while it drains, still serves requests, then exits 0', async () => {
    const sent = await rpc(`${gateway.url}/a2a/jsonrpc`, 'SendMessage', { message: textMessage('echo before the drain') });
    const taskId = ((sent.body.result as Json).task as Json).id as string;
    gateway.kill('SIGTERM');
    const draining = await waitFor(async () => {
      const answer = await probe(`${gateway.url}/readyz`);
      return answer.status === 503 ? answer : undefined;
    }, 2_000, 'readyz to answer 503');
    expect(draining.body).toEqual({ status: 'unavailable', reason: 'shutting down' });
    const during = await rpc(`${gateway.url}/a2a/jsonrpc`, 'GetTask', { id: taskId });
    expect(((during.body.result as Json).status as Json).state).toBe('TASK_STATE_COMPLETED');
    expect(await gateway.exited).toBe('0');
  });
});
