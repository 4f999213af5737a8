// Open streams per owner and per gateway process are capped (issue 14, item 11): past
// limits.maxStreamsPerOwner a stream is refused with 429 (reason, Retry-After), past
// limits.maxStreams with 503; a refused SendStreamingMessage stores nothing; a closed stream
// frees its slot. Each refusal is a LimitExceededError naming its limit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onLimitRefusal, type LimitName } from '../src/limits/limit-refusal.ts';
import { StreamSlots, type StreamCaps } from '../src/limits/stream-slots.ts';
import { Redis } from 'ioredis';
import { RedisKeys } from '../src/store/keys.ts';
import { deletePrefix, expectUnchanged, REDIS_URL, rpc, startTestGateway, textMessage, uniquePrefix, waitFor, type TestGateway } from './support/harness.ts';
import { spawnGatewayProcess, type GatewayProcess } from './support/gateway-process.ts';
import { createTestIssuer, type TestIssuer } from './support/identity.ts';
import { detailsOf, metadataOf, rawGrpc } from './support/grpc.ts';
import { SubscribeToTaskRequest } from '@a2a-js/sdk';
import { status as grpcStatus, type ServiceError } from '@grpc/grpc-js';

let gw: TestGateway;
let issuer: TestIssuer;
const tokens: Record<string, string> = {};
const refused: LimitName[] = [];
let stopObserving: () => void;

const auth = (who: string): Record<string, string> => ({ Authorization: `Bearer ${tokens[who]}` });

/** A task of `who` that stays SUBMITTED (no worker runs it), so its streams stay open. */
async function openTask(who: string): Promise<string> {
  const sent = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('echo hold'), configuration: { returnImmediately: true } }, auth(who));
  expect(sent.status).toBe(200);
  return ((sent.body.result as { task: { id: string } }).task).id;
}

/** An open (or refused) SubscribeToTask; an open stream stays open until `close`. */
interface Subscription {
  status: number;
  body: string;
  headers: Headers;
  /**
   * Kept, not read: fetch cancels the unread body of a Response that is garbage-collected, which
   * would close the stream (and free its slot) whenever the collector happens to run.
   */
  response: Response;
  close: () => void;
}

/** SubscribeToTask at an HTTP+JSON base URL, with `headers` (credentials) beside the A2A version. */
async function subscribeAt(restUrl: string, taskId: string, headers: Record<string, string> = {}): Promise<Subscription> {
  const controller = new AbortController();
  const response = await fetch(`${restUrl}/tasks/${taskId}:subscribe`, { headers: { 'A2A-Version': '1.0', ...headers }, signal: controller.signal });
  const body = response.status === 200 ? '' : await response.text();
  return { status: response.status, body, headers: response.headers, response, close: () => controller.abort() };
}

/** SubscribeToTask on an in-process gateway as `who`. */
async function subscribe(who: string, taskId: string, on: TestGateway = gw): Promise<Subscription> {
  return subscribeAt(on.restUrl, taskId, auth(who));
}

/** Runs the collector (the suite's processes start with --expose-gc) and lets finalizers act. */
async function collectGarbage(): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  expect(gc, 'vitest.config.ts starts test processes with --expose-gc').toBeTypeOf('function');
  for (let round = 0; round < 3; round += 1) {
    gc?.();
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

beforeAll(async () => {
  issuer = await createTestIssuer();
  tokens.alice = await issuer.token({ sub: 'alice' });
  tokens.bob = await issuer.token({ sub: 'bob' });
  stopObserving = onLimitRefusal((limit) => refused.push(limit));
  gw = await startTestGateway({
    name: 'stream-caps',
    inProcessWorker: false,
    config: {
      auth: { enabled: true, issuers: [issuer.config] },
      limits: { requestsPerSecond: 0, maxActiveTasks: 0, unauthenticatedPerSecond: 0, maxStreamsPerOwner: 2, maxStreams: 3 },
    },
  });
});

afterAll(async () => {
  stopObserving();
  await gw?.close();
});

describe('stream caps', () => {
  it('an owner past maxStreamsPerOwner gets 429 TOO_MANY_STREAMS; the process past maxStreams gets 503; a closed stream frees its slot', async () => {
    const aliceTask = await openTask('alice');
    const bobTask = await openTask('bob');
    const first = await subscribe('alice', aliceTask);
    const second = await subscribe('alice', aliceTask);
    expect([first.status, second.status]).toEqual([200, 200]);
    // A stream the test still holds stays open whenever the collector runs (see Subscription.response).
    await collectGarbage();

    const third = await subscribe('alice', aliceTask);
    expect(third.status).toBe(429);
    expect(third.headers.get('retry-after')).toBe('1');
    const body = third.body;
    expect(body).toContain('TOO_MANY_STREAMS');
    expect(body).toContain('limits.maxStreamsPerOwner');
    expect(refused).toContain('limits.maxStreamsPerOwner');

    // A refused SendStreamingMessage stores nothing (the slot is taken before the message is).
    const streamed = await expectUnchanged(gw, () =>
      fetch(gw.jsonRpcUrl, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', ...auth('alice') },
        body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'SendStreamingMessage', params: { message: textMessage('echo refused') } }),
      }),
    );
    expect(streamed.status).toBe(429);
    const error = ((await streamed.json()) as { error: { code: number; data: { reason?: string; metadata?: Record<string, string> }[] } }).error;
    expect(error.code).toBe(-31429);
    expect(error.data.some((d) => d.metadata?.reason === 'TOO_MANY_STREAMS')).toBe(true);

    // Bob has his own allowance, but the process holds at most 3.
    const bobs = await subscribe('bob', bobTask);
    expect(bobs.status).toBe(200);
    const bobsSecond = await subscribe('bob', bobTask);
    expect(bobsSecond.status).toBe(503);
    expect(bobsSecond.body).toContain('GATEWAY_STREAMS_FULL');
    expect(refused).toContain('limits.maxStreams');

    // Alice closes one: she (and the process) may open one again.
    first.close();
    const again = await waitFor(async () => {
      const attempt = await subscribe('alice', aliceTask);
      if (attempt.status === 200) return attempt;
      return undefined;
    }, 10_000, 'a freed stream slot');
    again.close();
    second.close();
    bobs.close();
  });
});

describe('StreamSlots (counted in Redis)', () => {
  it('counts per owner and in all across instances sharing a Redis, releases once however often release is called', async () => {
    const redis = new Redis(REDIS_URL);
    const keys = new RedisKeys(uniquePrefix('stream-slots'));
    const caps = { maxStreamsPerOwner: 1, maxStreams: 2, streamSlotTtlMs: 1_000 };
    // Two instances stand for two gateways.
    const one = new StreamSlots(redis, keys.prefix, caps);
    const two = new StreamSlots(redis, keys.prefix, caps);
    try {
      const a = await one.take('a');
      await expect(two.take('a')).rejects.toThrow(/maxStreamsPerOwner/);
      const b = await two.take('b');
      await expect(one.take('c')).rejects.toThrow(/maxStreams\b/);
      // A refusal by the global cap gave back nothing it took: c's own set is empty.
      expect(await redis.zcard(keys.ownerStreams('c'))).toBe(0);
      a.release();
      a.release();
      await waitFor(async () => ((await redis.zcard(keys.openStreams())) === 1 ? true : undefined), 5_000, 'the release');
      expect(one.heldHere).toBe(0);
      // Renewed by its holder, b's slot outlives its expiry several times over.
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      await expect(one.take('b')).rejects.toThrow(/maxStreamsPerOwner/);
      (await one.take('c')).release();
      b.release();
      await waitFor(async () => ((await redis.zcard(keys.openStreams())) === 0 ? true : undefined), 5_000, 'every release');
      // 0 means no cap, and nothing is written.
      const unbounded = new StreamSlots(redis, keys.prefix, { maxStreamsPerOwner: 0, maxStreams: 0, streamSlotTtlMs: 1_000 });
      for (let i = 0; i < 50; i++) await unbounded.take('a');
      expect(await redis.exists(keys.openStreams(), keys.ownerStreams('a'))).toBe(0);
    } finally {
      await one.close();
      await two.close();
      await deletePrefix(redis, keys.prefix);
      await redis.quit();
    }
  });
});

/** `count` StreamSlots (gateways) of `caps` on one fresh prefix: each closed, and the prefix deleted, after `body`. */
async function withStreamSlots(name: string, caps: StreamCaps, count: number, body: (slots: StreamSlots[], keys: RedisKeys, redis: Redis) => Promise<void>): Promise<void> {
  const redis = new Redis(REDIS_URL);
  const keys = new RedisKeys(uniquePrefix(name));
  const slots = Array.from({ length: count }, () => new StreamSlots(redis, keys.prefix, caps));
  try {
    await body(slots, keys, redis);
  } finally {
    for (const gateway of slots) await gateway.close();
    await deletePrefix(redis, keys.prefix);
    await redis.quit();
  }
}

describe('StreamSlots: every gateway\'s set taken a block at a time', () => {
  it('takes a block of slots for its next streams, keeps what ends for the next one, and gives the spare back with its last stream', async () => {
    // 1,024 / 64: blocks of 16. Slots that last a minute: only a release takes one out here.
    await withStreamSlots('stream-blocks', { maxStreamsPerOwner: 0, maxStreams: 1_024, streamSlotTtlMs: 60_000 }, 1, async ([slots], keys, redis) => {
      if (slots === undefined) throw new Error('one gateway');
      const open = [await slots.take('a')];
      expect(await redis.zcard(keys.openStreams())).toBe(16);
      for (let i = 0; i < 15; i++) open.push(await slots.take('a'));
      expect(await redis.zcard(keys.openStreams())).toBe(16);
      for (let i = 0; i < 17; i++) open.push(await slots.take('a'));
      expect(await redis.zcard(keys.openStreams())).toBe(48);
      // 33 open, 15 spare: of 32 releases, 16 fill the spare up to 31, 16 go back.
      for (const slot of open.splice(1)) slot.release();
      await waitFor(async () => ((await redis.zcard(keys.openStreams())) === 32 ? true : undefined), 5_000, 'the slots past the spare to go back');
      // The last stream here ends: every spare slot goes back with its own.
      open[0]?.release();
      await waitFor(async () => ((await redis.zcard(keys.openStreams())) === 0 ? true : undefined), 5_000, 'the spare slots to go back');
      expect(slots.heldHere).toBe(0);
    });
  });

  it('below a cap of 128 takes one slot a stream and keeps none spare', async () => {
    await withStreamSlots('stream-blocks-small', { maxStreamsPerOwner: 0, maxStreams: 3, streamSlotTtlMs: 60_000 }, 2, async ([one, two], keys, redis) => {
      if (one === undefined || two === undefined) throw new Error('two gateways');
      const first = await one.take('a');
      const second = await one.take('a');
      expect(await redis.zcard(keys.openStreams())).toBe(2);
      // One gateway still holds a stream: the slot given back is not kept for it.
      first.release();
      await waitFor(async () => ((await redis.zcard(keys.openStreams())) === 1 ? true : undefined), 5_000, 'the slot to go back');
      const taken = [await two.take('b'), await two.take('b')];
      await expect(two.take('b')).rejects.toThrow(/maxStreams\b/);
      for (const slot of [second, ...taken]) slot.release();
    });
  });

  it('renews its spare slots with its open streams, past their expiry', async () => {
    await withStreamSlots('stream-blocks-renew', { maxStreamsPerOwner: 0, maxStreams: 1_024, streamSlotTtlMs: 1_000 }, 2, async ([slots, other], keys, redis) => {
      if (slots === undefined || other === undefined) throw new Error('two gateways');
      const open = await slots.take('a');
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      // Another gateway's take drops what expired: nothing of the first one's block had.
      const theirs = await other.take('b');
      expect(await redis.zcard(keys.openStreams())).toBe(32);
      open.release();
      theirs.release();
    });
  });

  it('near the cap takes what is left of a block, and refuses only a full set', async () => {
    // 128 / 64: blocks of 2.
    await withStreamSlots('stream-blocks-cap', { maxStreamsPerOwner: 0, maxStreams: 128, streamSlotTtlMs: 1_000 }, 2, async ([one, two], keys, redis) => {
      if (one === undefined || two === undefined) throw new Error('two gateways');
      const held = [];
      for (let i = 0; i < 127; i++) held.push(await two.take('a'));
      // Two's 127 streams took 64 blocks: one slot of the last is spare, the set is full.
      expect(await redis.zcard(keys.openStreams())).toBe(128);
      await expect(one.take('b')).rejects.toThrow(/maxStreams\b/);
      // Of three releases, two fill two's spare up to three slots (under two blocks); the third
      // goes back, and the next take gets that one slot alone, not a block.
      for (let i = 0; i < 3; i++) held.pop()?.release();
      await waitFor(async () => ((await redis.zcard(keys.openStreams())) === 127 ? true : undefined), 5_000, 'a slot to go back');
      const last = await one.take('b');
      expect(await redis.zcard(keys.openStreams())).toBe(128);
      await expect(one.take('b')).rejects.toThrow(/maxStreams\b/);
      last.release();
      for (const slot of held) slot.release();
    });
  });
});

describe('stream caps across gateway processes', () => {
  const prefix = uniquePrefix('stream-caps-procs');
  const TTL_MS = 2_000;
  const env = { A2A_MAX_STREAMS_PER_OWNER: '2', A2A_MAX_STREAMS: '0', A2A_STREAM_SLOT_TTL_MS: String(TTL_MS), A2A_RATE_LIMIT_PER_SECOND: '0', A2A_MAX_ACTIVE_TASKS: '0' };
  let first: GatewayProcess;
  let second: GatewayProcess;
  const redis = new Redis(REDIS_URL);

  beforeAll(async () => {
    [first, second] = await Promise.all([spawnGatewayProcess(prefix, env), spawnGatewayProcess(prefix, env)]);
  });

  afterAll(async () => {
    first?.kill();
    second?.kill();
    await Promise.all([first?.exited, second?.exited]);
    await deletePrefix(redis, prefix);
    await redis.quit();
  });

  /** SubscribeToTask over HTTP+JSON on one gateway process, without credentials (one anonymous owner on both). */
  async function subscribeOn(gateway: GatewayProcess, taskId: string): Promise<Subscription> {
    return subscribeAt(`${gateway.url}/a2a/rest`, taskId);
  }

  it("one owner's streams are counted across gateways; a killed gateway's slots are freed within the slot expiry", async () => {
    const sent = await rpc(`${first.url}/a2a/jsonrpc`, 'SendMessage', { message: textMessage('echo hold'), configuration: { returnImmediately: true } });
    const taskId = (sent.body.result as { task: { id: string } }).task.id;
    const onFirst = await subscribeOn(first, taskId);
    const onSecond = await subscribeOn(second, taskId);
    expect([onFirst.status, onSecond.status]).toEqual([200, 200]);
    // Both streams stay open whenever the collector runs in this process (see Subscription.response).
    await collectGarbage();
    // The owner's third stream is refused on either gateway, though each holds only one.
    for (const gateway of [first, second]) {
      const third = await subscribeOn(gateway, taskId);
      expect(third.status).toBe(429);
      expect(third.body).toContain('TOO_MANY_STREAMS');
      expect(third.body).toContain('limits.maxStreamsPerOwner');
    }
    // The first gateway dies without releasing its stream's slot: it lapses with no renewal.
    first.kill('SIGKILL');
    await first.exited;
    onFirst.close();
    const killedAt = Date.now();
    const freed = await waitFor(async () => {
      const attempt = await subscribeOn(second, taskId);
      return attempt.status === 200 ? attempt : undefined;
    }, TTL_MS + 10_000, "the killed gateway's slot to lapse");
    // Freed by expiry (no renewal), not by anything the dead gateway did; the margin is for load only.
    expect(Date.now() - killedAt).toBeLessThanOrEqual(TTL_MS + 10_000);
    freed.close();
    onSecond.close();
  });
});

describe('stream caps across bindings (gRPC and SSE share the count)', () => {
  let grpcGw: TestGateway;
  let grpc: ReturnType<typeof rawGrpc>;

  beforeAll(async () => {
    grpcGw = await startTestGateway({
      name: 'stream-caps-grpc',
      inProcessWorker: false,
      config: {
        grpcPort: 0,
        auth: { enabled: true, issuers: [issuer.config] },
        limits: { requestsPerSecond: 0, maxActiveTasks: 0, unauthenticatedPerSecond: 0, maxStreamsPerOwner: 1 },
      },
    });
    grpc = rawGrpc(grpcGw.gateway.grpc?.address as string);
  });

  afterAll(async () => {
    grpc?.close();
    await grpcGw?.close();
  });

  it('a gRPC stream takes the owner’s slot: a second one is RESOURCE_EXHAUSTED (TOO_MANY_STREAMS), so is an SSE one; cancelling it frees the slot', async () => {
    const sent = await rpc(grpcGw.jsonRpcUrl, 'SendMessage', { message: textMessage('echo hold'), configuration: { returnImmediately: true } }, auth('alice'));
    const taskId = (sent.body.result as { task: { id: string } }).task.id;
    const metadata = metadataOf({ 'a2a-version': '1.0', authorization: `Bearer ${tokens.alice}` });
    let opened: () => void = () => undefined;
    const firstEvent = new Promise<void>((resolve) => {
      opened = resolve;
    });
    const first = grpc.stream('subscribeToTask', SubscribeToTaskRequest.fromJSON({ id: taskId }), metadata, () => opened());
    await firstEvent;
    const sse = await subscribe('alice', taskId, grpcGw);
    expect(sse.status).toBe(429);
    expect(sse.body).toContain('TOO_MANY_STREAMS');
    const second = await grpc.stream('subscribeToTask', SubscribeToTaskRequest.fromJSON({ id: taskId }), metadata).done;
    expect(second.error?.code).toBe(grpcStatus.RESOURCE_EXHAUSTED);
    expect(detailsOf(second.error as ServiceError).errorInfo?.metadata.reason).toBe('TOO_MANY_STREAMS');
    first.call.cancel();
    await first.done;
    const freed = await waitFor(async () => {
      const attempt = await subscribe('alice', taskId, grpcGw);
      if (attempt.status === 200) return attempt;
      return undefined;
    }, 10_000, 'the freed slot');
    freed.close();
  });
});
