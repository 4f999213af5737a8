// A principal's byte rate is bounded with its request rate (issue 14, item 5's ~200 MB/s per
// user): a request costs one token more per limits.requestBytesPerToken body bytes, so large
// bodies spend the bucket faster; past it 429 RATE_LIMITED says what the body cost, and the
// refused message stores nothing.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RateLimiter } from '../src/limits/rate-limiter.ts';
import { RedisKeys } from '../src/store/keys.ts';
import { REDIS_URL, rpc, startTestGateway, textMessage, uniquePrefix, type TestGateway } from './support/harness.ts';

let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({
    name: 'byte-rate',
    inProcessWorker: false,
    config: { limits: { requestsPerSecond: 0.5, burst: 20, requestBytesPerToken: 10_000, ingressBytesPerSecond: 0, maxActiveTasks: 0, unauthenticatedPerSecond: 0 } },
  });
});

afterAll(async () => {
  await gw?.close();
});

describe('byte-weighted request rate', () => {
  it('a 100 kB message costs 11 tokens: the second one is refused 429 RATE_LIMITED and stores nothing; small calls still pass', async () => {
    const small = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('echo small'), configuration: { returnImmediately: true } });
    const taskId = (small.body.result as { task: { id: string } }).task.id;
    const big = (): Record<string, unknown> => ({ message: textMessage(`echo ${'x'.repeat(100_000)}`), configuration: { returnImmediately: true } });
    const first = await rpc(gw.jsonRpcUrl, 'SendMessage', big());
    expect(first.status).toBe(200);
    // Nothing stored but the bucket's own bookkeeping.
    const withoutBucket = async (): Promise<Map<string, string>> => new Map([...(await gw.snapshotKeys())].filter(([key]) => !key.endsWith('}:rate')));
    const before = await withoutBucket();
    const second = await rpc(gw.jsonRpcUrl, 'SendMessage', big());
    expect(await withoutBucket()).toEqual(before);
    expect(second.status).toBe(429);
    const error = JSON.stringify(second.body.error);
    expect(error).toContain('RATE_LIMITED');
    expect(error).toContain('limits.requestBytesPerToken');
    // About 8 tokens are left: small requests go on.
    for (let i = 0; i < 5; i++) expect((await rpc(gw.jsonRpcUrl, 'GetTask', { id: taskId })).status).toBe(200);
  });

  it('a ListTasks page costs its bytes too, after the fact: one token per requestBytesPerToken bytes of tasks', async () => {
    const other = await startTestGateway({
      name: 'byte-rate-list',
      inProcessWorker: false,
      config: { limits: { requestsPerSecond: 0.1, burst: 60, requestBytesPerToken: 10_000, maxActiveTasks: 0, unauthenticatedPerSecond: 0 } },
    });
    try {
      for (let i = 0; i < 2; i++) {
        const sent = await rpc(other.jsonRpcUrl, 'SendMessage', { message: textMessage(`echo ${'y'.repeat(50_000)}`), configuration: { returnImmediately: true } });
        expect(sent.status).toBe(200);
      }
      const tokens = async (): Promise<number> => {
        const [key] = await other.redis.keys(`${other.prefix}:{o:*}:rate`);
        return Number(await other.redis.hget(key as string, 'tokens'));
      };
      const beforeSmall = await tokens();
      expect((await rpc(other.jsonRpcUrl, 'ListTasks', {})).status).toBe(200);
      const afterSmall = await tokens();
      expect(beforeSmall - afterSmall).toBeLessThan(1.5);
      const listed = await rpc(other.jsonRpcUrl, 'ListTasks', { historyLength: 10 });
      expect((listed.body.result as { tasks: unknown[] }).tasks).toHaveLength(2);
      // About 100 kB of tasks: 10 tokens for the page (the request's own token may come from
      // what this gateway holds of the bucket, src/store/limits/token-reserve.ts; the bucket
      // refills 0.1 a second meanwhile).
      expect(afterSmall - (await tokens())).toBeGreaterThan(9.5);
    } finally {
      await other.close();
    }
  });

  it('a GetTask answer costs its bytes too, after the fact: polling a huge task spends the rate', async () => {
    const other = await startTestGateway({
      name: 'byte-rate-get',
      inProcessWorker: false,
      config: { limits: { requestsPerSecond: 0.1, burst: 60, requestBytesPerToken: 10_000, ingressBytesPerSecond: 0, maxActiveTasks: 0, unauthenticatedPerSecond: 0 } },
    });
    try {
      const sent = await rpc(other.jsonRpcUrl, 'SendMessage', { message: textMessage(`echo ${'z'.repeat(50_000)}`), configuration: { returnImmediately: true } });
      const id = (sent.body.result as { task: { id: string } }).task.id;
      const tokens = async (): Promise<number> => {
        const [key] = await other.redis.keys(`${other.prefix}:{o:*}:rate`);
        return Number(await other.redis.hget(key as string, 'tokens'));
      };
      const before = await tokens();
      expect((await rpc(other.jsonRpcUrl, 'GetTask', { id, historyLength: 10 })).status).toBe(200);
      // About 50 kB of history: 5 tokens for the answer (and the request's token, unless the
      // gateway's reserve paid it).
      expect(before - (await tokens())).toBeGreaterThan(4.5);
      // Without the history the answer is small again: only the request's token.
      const beforeSmall = await tokens();
      expect((await rpc(other.jsonRpcUrl, 'GetTask', { id, historyLength: 0 })).status).toBe(200);
      expect(beforeSmall - (await tokens())).toBeLessThan(1.5);
    } finally {
      await other.close();
    }
  });

  it('a GetTask of a task whose artifacts cost more than the whole bucket is paid first: refused 429 without building it until the bucket is full, then it costs its whole size', async () => {
    const other = await startTestGateway({
      name: 'byte-rate-large',
      inProcessWorker: false,
      config: { limits: { requestsPerSecond: 0.5, burst: 20, requestBytesPerToken: 10_000, ingressBytesPerSecond: 0, maxActiveTasks: 0, unauthenticatedPerSecond: 0 } },
    });
    try {
      const sent = await rpc(other.jsonRpcUrl, 'SendMessage', { message: textMessage('echo small'), configuration: { returnImmediately: true } });
      const id = (sent.body.result as { task: { id: string } }).task.id;
      const small = await rpc(other.jsonRpcUrl, 'GetTask', { id, historyLength: 0 });
      expect(small.status).toBe(200);
      // Artifacts of about 300 kB: 30 tokens, more than the bucket's 20 hold.
      const taskKey = `${other.prefix}:{${id}}:task`;
      const artifacts = JSON.stringify([{ artifactId: 'big', parts: [{ text: 'b'.repeat(300_000) }] }]);
      await other.redis.hset(taskKey, 'artifacts', artifacts);
      const [bucket] = await other.redis.keys(`${other.prefix}:{o:*}:rate`);
      const tokens = async (): Promise<number> => Number(await other.redis.hget(bucket as string, 'tokens'));
      // Two requests taken: the bucket is not full, so the large answer is refused, not read.
      const refused = await rpc(other.jsonRpcUrl, 'GetTask', { id, historyLength: 0 });
      expect(refused.status).toBe(429);
      const error = JSON.stringify(refused.body.error);
      expect(error).toContain('RATE_LIMITED');
      expect(error).toContain('limits.requestBytesPerToken');
      expect(await tokens()).toBeGreaterThan(15);
      // A full bucket pays for it: the answer comes whole, and the bucket is left its cost below.
      await other.redis.del(bucket as string);
      const paid = await rpc(other.jsonRpcUrl, 'GetTask', { id, historyLength: 0 });
      expect(paid.status).toBe(200);
      expect(JSON.stringify((paid.body.result as { artifacts?: unknown }).artifacts)).toBe(artifacts);
      expect(await tokens()).toBeLessThan(-10);
      expect((await rpc(other.jsonRpcUrl, 'GetTask', { id, historyLength: 0 })).status).toBe(429);
    } finally {
      await other.close();
    }
  });

  it('a body costs 1 token plus one per requestBytesPerToken bytes, at most the burst; 0 turns the weighting off', async () => {
    const redis = new Redis(REDIS_URL);
    try {
      const keys = new RedisKeys(uniquePrefix('byte-rate-unit'));
      const limit = { requestsPerSecond: 10, burst: 20 };
      const weighted = new RateLimiter(redis, keys.prefix, 1_000);
      expect(weighted.costOf(0, limit)).toBe(1);
      expect(weighted.costOf(999, limit)).toBe(1);
      expect(weighted.costOf(5_000, limit)).toBe(6);
      expect(weighted.costOf(1_000_000, limit)).toBe(20);
      expect(new RateLimiter(redis, keys.prefix, 0).costOf(1_000_000, limit)).toBe(1);
    } finally {
      await redis.quit();
    }
  });
});
