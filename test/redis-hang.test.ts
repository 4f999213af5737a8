// A hung Redis (SIGSTOP: connected, answering nothing) against a redis-server this file starts
// and stops itself: requests fail with 503 + Retry-After within redisCommandTimeoutMs instead of
// hanging, /readyz answers not-ready within a second without showing Redis' error text, and
// everything works again once Redis continues.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpc, startTestGateway, textMessage, type TestGateway } from './support/harness.ts';
import { startOwnRedis, type OwnRedis } from './support/redis-server.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

let redis: OwnRedis;
let gw: TestGateway;
let taskId: string;

beforeAll(async () => {
  redis = await startOwnRedis();
  gw = await startTestGateway({ name: 'redis-hang', config: { redisUrl: redis.url, redisCommandTimeoutMs: 1_500 } });
  const sent = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('echo before the hang') });
  taskId = ((sent.body.result as Json).task as Json).id as string;
});

afterAll(async () => {
  redis?.resume();
  await gw?.close().catch(() => undefined);
  await redis?.stop();
});

/** Fails the test instead of hanging it: a request that is not answered within `ms` rejects. */
const within = (ms: number) => AbortSignal.timeout(ms);

describe('Redis stopped with SIGSTOP', () => {
  it('answers requests 503 + Retry-After and /readyz not-ready, then serves again after SIGCONT', async () => {
    redis.pause();
    try {
      const readyStarted = Date.now();
      const ready = await fetch(`${gw.url}/readyz`, { signal: within(5_000) });
      const readyMs = Date.now() - readyStarted;
      expect(ready.status).toBe(503);
      expect(ready.headers.get('retry-after')).toBe('1');
      const readyBody = (await ready.json()) as Json;
      expect(readyBody).toEqual({ status: 'unavailable', reason: 'the task store is not answering' });
      expect(readyMs, 'readyz answers within a second').toBeLessThan(1_000 + 250);

      const get = await fetch(gw.jsonRpcUrl, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 'hung', method: 'GetTask', params: { id: taskId } }),
        signal: within(15_000),
      });
      expect(get.status).toBe(503);
      expect(get.headers.get('retry-after')).toBe('1');
      expect((await get.json()) as Json).toMatchObject({ id: 'hung', error: { code: -32603 } });

      const rest = await fetch(`${gw.restUrl}/tasks/${taskId}`, { headers: { 'A2A-Version': '1.0' }, signal: within(15_000) });
      expect(rest.status).toBe(503);
      expect(((await rest.json()) as Json).error.status).toBe('UNAVAILABLE');
    } finally {
      redis.resume();
    }
    const after = await rpc(gw.jsonRpcUrl, 'GetTask', { id: taskId });
    expect(((after.body.result as Json).status as Json).state).toBe('TASK_STATE_COMPLETED');
    expect((await fetch(`${gw.url}/readyz`)).status).toBe(200);
  });
});
