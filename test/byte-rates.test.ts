// Per-owner byte rates (issue 24, item 8): request bodies (limits.ingressBytesPerSecond) and
// stored messages (limits.storedBytesPerSecond) are token buckets counted in bytes, shared by
// every gateway through Redis. Past either one a request gets 429 with Retry-After in its
// binding's error shape and nothing is stored; another owner is not affected. A body whose size
// is declared is refused before it is read.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agents } from '../src/agents/agents.ts';
import { startGatewayRole, type GatewayHandle } from '../src/gateway/server.ts';
import { onLimitRefusal, type LimitName } from '../src/limits/limit-refusal.ts';
import { createLogger } from '../src/logging/logger.ts';
import { expectUnchanged, ROOT, startTestGateway, textMessage, type TestGateway } from './support/harness.ts';
import { createTestIssuer, type TestIssuer } from './support/identity.ts';
import { openMonitor } from './support/monitor.ts';

let ingress: TestGateway;
let second: GatewayHandle;
let stored: TestGateway;
let issuer: TestIssuer;
const refused: LimitName[] = [];
let stopObserving: () => void;

const BURST = 64 * 1024;
/** A message of about `bytes` bytes of JSON. */
const sized = (bytes: number): Record<string, unknown> => ({ message: textMessage(`echo ${'b'.repeat(bytes)}`), configuration: { returnImmediately: true } });
/** A JSON-RPC call, with the answer's headers. */
async function rpc(url: string, method: string, params: unknown, headers: Record<string, string>): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> };
}
/** Tasks and messages, without the byte buckets' own bookkeeping (a refusal may spend nothing else). */
const withoutBuckets = async (gw: TestGateway): Promise<Map<string, string>> => new Map([...(await gw.snapshotKeys())].filter(([key]) => !/:bytes:|:rate$/.test(key)));

beforeAll(async () => {
  issuer = await createTestIssuer();
  stopObserving = onLimitRefusal((limit) => refused.push(limit));
  const auth = { enabled: true, issuers: [issuer.config] };
  // A slow refill (1 kB/s), so what is refused depends on the burst, never on how fast the test runs.
  ingress = await startTestGateway({
    name: 'byte-rates-ingress',
    inProcessWorker: false,
    config: { auth, limits: { requestsPerSecond: 0, maxActiveTasks: 0, unauthenticatedPerSecond: 0, ingressBytesPerSecond: 1_024, ingressBurstBytes: BURST, storedBytesPerSecond: 0 } },
  });
  second = await startGatewayRole(ingress.config, await Agents.load(ingress.config, ROOT), createLogger('silent'), { baseDir: ROOT });
  stored = await startTestGateway({
    name: 'byte-rates-stored',
    inProcessWorker: false,
    config: { auth, limits: { requestsPerSecond: 0, maxActiveTasks: 0, unauthenticatedPerSecond: 0, ingressBytesPerSecond: 0, storedBytesPerSecond: 1_024, storedBurstBytes: BURST } },
  });
});

afterAll(async () => {
  stopObserving?.();
  await second?.close();
  await ingress?.close();
  await stored?.close();
});

describe('ingress byte rate', () => {
  it('is shared by two gateways: past the burst the owner gets 429 with Retry-After on both bindings, nothing is stored, another owner goes on', async () => {
    const alice = { Authorization: `Bearer ${await issuer.token({ sub: 'alice' })}` };
    const bob = { Authorization: `Bearer ${await issuer.token({ sub: 'bob' })}` };
    // 40 kB through the first gateway, then 40 kB through the second: together past the 64 kB burst.
    expect((await rpc(ingress.jsonRpcUrl, 'SendMessage', sized(40_000), alice)).status).toBe(200);
    refused.length = 0;
    const overJsonRpc = await expectUnchanged({ snapshotKeys: () => withoutBuckets(ingress) }, () => rpc(`${second.url}/a2a/jsonrpc`, 'SendMessage', sized(40_000), alice));
    expect(overJsonRpc.status).toBe(429);
    expect(Number(overJsonRpc.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const error = overJsonRpc.body.error as { code: number; message: string; data: unknown };
    expect(error.code).toBe(-31429);
    expect(error.message).toContain('limits.ingressBytesPerSecond');
    expect(JSON.stringify(error.data)).toContain('BYTE_RATE_LIMITED');
    expect(refused).toContain('limits.ingressBytesPerSecond');

    const overRest = await expectUnchanged({ snapshotKeys: () => withoutBuckets(ingress) }, () =>
      fetch(`${second.url}/a2a/rest/message:send`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', ...alice }, body: JSON.stringify(sized(40_000)) }),
    );
    expect(overRest.status).toBe(429);
    expect(Number(overRest.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const restError = ((await overRest.json()) as { error: { status: string; message: string } }).error;
    expect(restError.status).toBe('RESOURCE_EXHAUSTED');
    expect(restError.message).toContain('limits.ingressBytesPerSecond');

    // Small calls are not refused for the bytes the big ones took, and bob has his own bucket.
    expect((await rpc(ingress.jsonRpcUrl, 'SendMessage', sized(100), alice)).status).toBe(200);
    expect((await rpc(`${second.url}/a2a/jsonrpc`, 'SendMessage', sized(40_000), bob)).status).toBe(200);
  });
});

describe('stored byte rate', () => {
  it('charges what a message stores; past the burst 429 with Retry-After, nothing stored', async () => {
    const carol = { Authorization: `Bearer ${await issuer.token({ sub: 'carol' })}` };
    // A new task's large first message is stored once: 40 kB, then 40 kB more is past 64 kB.
    const first = await rpc(stored.jsonRpcUrl, 'SendMessage', sized(40_000), carol);
    expect(first.status).toBe(200);
    const taskId = (first.body.result as { task: { id: string } }).task.id;
    refused.length = 0;
    const follow = { message: textMessage(`echo ${'c'.repeat(40_000)}`, { taskId }), configuration: { returnImmediately: true } };
    const over = await expectUnchanged({ snapshotKeys: () => withoutBuckets(stored) }, () => rpc(stored.jsonRpcUrl, 'SendMessage', follow, carol));
    expect(over.status).toBe(429);
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((over.body.error as { message: string }).message).toContain('limits.storedBytesPerSecond');
    expect(refused).toEqual(['limits.storedBytesPerSecond']);
  });

  it("takes a new task's bytes in the owner's claim, in the same call: refused there with nothing stored, and a re-sent message is not charged again", async () => {
    const dave = { Authorization: `Bearer ${await issuer.token({ sub: 'dave' })}` };
    const storedBucketOf = (arg: string): boolean => arg.startsWith(stored.prefix) && arg.includes('dave') && arg.endsWith(':bytes:stored');
    const monitor = await openMonitor(stored.config.redisUrl);
    const calls: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (source !== 'lua' && args.some(storedBucketOf)) calls.push(args);
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    calls.length = 0;
    const message = textMessage(`echo ${'d'.repeat(40_000)}`);
    const first = await rpc(stored.jsonRpcUrl, 'SendMessage', { message, configuration: { returnImmediately: true } }, dave);
    expect(first.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 200));
    monitor.disconnect();
    // One call took the bytes, and it was the claim (it holds the owner's active tasks too).
    expect(calls).toHaveLength(1);
    expect(calls[0]?.some((arg) => arg.startsWith(stored.prefix) && arg.endsWith(':active'))).toBe(true);

    const bucket = (calls[0] ?? []).find(storedBucketOf) as string;
    const tokensAfterFirst = Number(await stored.redis.hget(bucket, 'tokens'));
    const again = await rpc(stored.jsonRpcUrl, 'SendMessage', { message, configuration: { returnImmediately: true } }, dave);
    expect((again.body.result as { task: { id: string } }).task.id).toBe((first.body.result as { task: { id: string } }).task.id);
    expect(Number(await stored.redis.hget(bucket, 'tokens'))).toBeCloseTo(tokensAfterFirst, 5);

    // 40 kB more as a new task is past the 64 kB burst: refused by the claim, nothing stored.
    refused.length = 0;
    const over = await expectUnchanged({ snapshotKeys: () => withoutBuckets(stored) }, () => rpc(stored.jsonRpcUrl, 'SendMessage', sized(40_000), dave));
    expect(over.status).toBe(429);
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((over.body.error as { message: string }).message).toContain('limits.storedBytesPerSecond');
    expect(refused).toEqual(['limits.storedBytesPerSecond']);
  });
});
