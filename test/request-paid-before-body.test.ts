// A request with a declared body pays before a byte of its body is read: its token of the
// owner's request rate (limits.requestsPerSecond) and its bytes (limits.ingressBytesPerSecond),
// taken together in one script call (takeTokenPair), both or neither. So a caller past its
// request rate is refused from its headers, as one past its byte rate already was, and a
// refusal by one bucket spends nothing of the other. Under the default limits this is one
// round trip to Redis fewer on every request's way.
import { connect } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openMonitor } from './support/monitor.ts';
import { startTestGateway, textMessage, type TestGateway } from './support/harness.ts';
import { createTestIssuer, type TestIssuer } from './support/identity.ts';

let gw: TestGateway;
let issuer: TestIssuer;
const BURST_BYTES = 64 * 1024;

beforeAll(async () => {
  issuer = await createTestIssuer();
  // Refills so slow (a token in 1,000 s, a byte a second) that what passes depends on the bursts only.
  gw = await startTestGateway({
    name: 'paid-before-body',
    inProcessWorker: false,
    config: {
      auth: { enabled: true, issuers: [issuer.config] },
      limits: { requestsPerSecond: 0.001, burst: 2, maxActiveTasks: 0, unauthenticatedPerSecond: 0, ingressBytesPerSecond: 1, ingressBurstBytes: BURST_BYTES, storedBytesPerSecond: 0 },
    },
  });
});

afterAll(async () => {
  await gw?.close();
});

const sendBody = (bytes: number): string => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: textMessage(`echo ${'p'.repeat(bytes)}`), configuration: { returnImmediately: true } } });

async function send(token: string, body: string): Promise<{ status: number; text: string }> {
  const response = await fetch(gw.jsonRpcUrl, { method: 'POST', headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${token}` }, body });
  return { status: response.status, text: await response.text() };
}

const isRateBucket = (key: string, sub: string): boolean => key.startsWith(gw.prefix) && key.includes(sub) && key.endsWith(':rate');
const isIngressBucket = (key: string, sub: string): boolean => key.startsWith(gw.prefix) && key.includes(sub) && key.endsWith(':bytes:ingress');

/** The request-rate and ingress buckets of `sub` (once a request of its has made them). */
async function bucketsOf(sub: string): Promise<{ rate: string; ingress: string }> {
  const keys = await gw.redis.keys(`${gw.prefix}*${sub}*`);
  const rate = keys.find((key) => isRateBucket(key, sub));
  const ingress = keys.find((key) => isIngressBucket(key, sub));
  if (rate === undefined || ingress === undefined) throw new Error(`no buckets of ${sub} among ${keys.join(', ')}`);
  return { rate, ingress };
}

it('takes the request token and the body bytes in one script call, before the body is read', async () => {
  const token = await issuer.token({ sub: 'one-call' });
  const monitor = await openMonitor(gw.config.redisUrl);
  const calls: string[][] = [];
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (source !== 'lua' && args.some((arg) => isRateBucket(arg, 'one-call') || isIngressBucket(arg, 'one-call'))) calls.push(args);
  });
  await new Promise((resolve) => setTimeout(resolve, 200));
  calls.length = 0;
  expect((await send(token, sendBody(100))).status).toBe(200);
  await new Promise((resolve) => setTimeout(resolve, 200));
  monitor.disconnect();
  expect(calls).toHaveLength(1);
  expect(calls[0]?.some((arg) => isRateBucket(arg, 'one-call'))).toBe(true);
  expect(calls[0]?.some((arg) => isIngressBucket(arg, 'one-call'))).toBe(true);
});

it('refuses a caller past its request rate from the headers: the body it declares is never read', async () => {
  const token = await issuer.token({ sub: 'past-rate' });
  expect((await send(token, sendBody(10))).status).toBe(200);
  expect((await send(token, sendBody(10))).status).toBe(200);
  // Headers and a tenth of the declared body; the rest never comes. The refusal must not wait for it.
  const body = sendBody(20_000);
  const answer = await new Promise<string>((resolve, reject) => {
    const socket = connect(Number(new URL(gw.url).port), '127.0.0.1');
    let received = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer while the body was incomplete; received ${JSON.stringify(received.slice(0, 200))}`));
    }, 5_000);
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
      if (received.includes('\r\n\r\n')) {
        clearTimeout(timer);
        socket.destroy();
        resolve(received);
      }
    });
    socket.on('error', reject);
    socket.write(
      `POST /a2a/jsonrpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nAuthorization: Bearer ${token}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 2_000)}`,
    );
  });
  expect(answer.split('\r\n')[0]).toContain(' 429 ');
  expect(answer.toLowerCase()).toContain('retry-after:');
});

it('spends nothing of either bucket when the other refuses', async () => {
  const token = await issuer.token({ sub: 'both-or-neither' });
  const tokensIn = async (key: string): Promise<number> => Number(await gw.redis.hget(key, 'tokens'));

  // The byte rate refuses (60 kB of the 64 kB burst spent, then 40 kB): the request token stays.
  const first = sendBody(60_000);
  expect((await send(token, first)).status).toBe(200);
  const buckets = await bucketsOf('both-or-neither');
  const tokensAfterFirst = await tokensIn(buckets.rate);
  const overBytes = await send(token, sendBody(40_000));
  expect(overBytes.status).toBe(429);
  expect(overBytes.text).toContain('limits.ingressBytesPerSecond');
  expect(await tokensIn(buckets.rate)).toBeCloseTo(tokensAfterFirst, 2);

  // The last token goes to a small call; then the request rate refuses a 3 kB body, and the byte
  // bucket keeps those 3 kB (it refills a byte a second: allow a few seconds of refill).
  expect((await send(token, sendBody(10))).status).toBe(200);
  const bytesBefore = await tokensIn(buckets.ingress);
  const overRate = await send(token, sendBody(3_000));
  expect(overRate.status).toBe(429);
  expect(overRate.text).toContain('limits.requestsPerSecond');
  const bytesAfter = await tokensIn(buckets.ingress);
  expect(bytesAfter).toBeGreaterThanOrEqual(bytesBefore);
  expect(bytesAfter - bytesBefore).toBeLessThan(30);
});
