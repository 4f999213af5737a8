// Open streams (SSE and gRPC) per owner and in all, across every gateway sharing one Redis.
// Each open stream is a member of two sorted sets, its owner's (in the owner's slot) and the
// global one (a slot of its own), scored by when its slot expires; the gateway holding the
// stream renews the expiry of all its streams together, so the slots of a gateway that died
// (no release, no renewal) fall out within streamSlotTtlMs. Taking a slot is one round trip
// (both slots' scripts pipelined), releasing one is one, renewing is one per process per
// third of the expiry, however many streams it holds.
import type { RedisClient } from '../redis/connection.ts';
import { newId } from '../ids.ts';
import type { RedisKeys } from '../store/keys.ts';
import { LimitExceededError } from './limit-refusal.ts';

export interface StreamCaps {
  /** Streams one owner may have open across all gateways (0 = no cap). */
  maxStreamsPerOwner: number;
  /** Streams all gateways hold open in all (0 = no cap). */
  maxStreams: number;
  /** How long a slot stays counted without a renewal (ms); renewed every third of it. */
  streamSlotTtlMs: number;
}

/** One taken stream slot; release it exactly once, when the stream ends (or fails to start). */
export interface StreamSlot {
  release(): void;
}

// One set (one slot): drops expired slots, then takes one unless the set holds `cap` already
// (0 = no cap). Redis' clock, so gateways with skewed clocks agree on what has expired.
// Answers {1, open} when taken, {0, open} when full.
const TAKE_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local open = redis.call('ZCARD', KEYS[1])
local cap = tonumber(ARGV[2])
if cap > 0 and open >= cap then return {0, open} end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
redis.call('PEXPIRE', KEYS[1], ttl)
return {1, open + 1}
`;

// One set: moves the expiry of the given streams (ARGV[2..]) to now + ttl. A plain ZADD, not
// XX: a stream whose slot expired while Redis was out of reach is still open, and is counted again.
const RENEW_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[1])
local args = {}
for i = 2, #ARGV do
  args[#args + 1] = now + ttl
  args[#args + 1] = ARGV[i]
  if #args >= 1000 or i == #ARGV then
    redis.call('ZADD', KEYS[1], unpack(args))
    args = {}
  end
end
redis.call('PEXPIRE', KEYS[1], ttl)
return #ARGV - 1
`;

type TakeReply = [number, number];

export class StreamSlots {
  /** This process's open streams: stream id → owner key. */
  private readonly held = new Map<string, string>();
  private readonly process = newId();
  private seq = 0;
  private renewer: NodeJS.Timeout | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly caps: StreamCaps,
  ) {}

  /** Streams this process holds a slot for. */
  get heldHere(): number {
    return this.held.size;
  }

  /**
   * Takes a slot for a stream of `ownerKey`, or refuses (429 for the owner's cap, 503 for the
   * gateways' together). Nothing is written to Redis when neither cap is set.
   */
  async take(ownerKey: string): Promise<StreamSlot> {
    const { maxStreamsPerOwner, maxStreams, streamSlotTtlMs } = this.caps;
    if (maxStreamsPerOwner <= 0 && maxStreams <= 0) return { release: () => undefined };
    const streamId = `${this.process}:${(this.seq += 1)}`;
    const sets = this.setsOf(ownerKey);
    // Sent in the same tick, so auto-pipelining writes them together on a single Redis; on a
    // Cluster the two sets live in different slots (one explicit pipeline may not hold both) and
    // each goes out at once on its node's connection, neither waiting for the other.
    const calls: Promise<unknown>[] = [];
    if (maxStreams > 0) calls.push(this.redis.eval(TAKE_LUA, 1, sets.all, streamId, maxStreams, streamSlotTtlMs));
    if (maxStreamsPerOwner > 0) calls.push(this.redis.eval(TAKE_LUA, 1, sets.owner, streamId, maxStreamsPerOwner, streamSlotTtlMs));
    const replies = await settle(calls);
    const failed = replies.find(([error]) => error !== null);
    const taken = replies.map(([, reply]) => reply as TakeReply | null);
    const all = maxStreams > 0 ? taken[0] : undefined;
    const mine = maxStreamsPerOwner > 0 ? taken[maxStreams > 0 ? 1 : 0] : undefined;
    if (failed !== undefined || all?.[0] === 0 || mine?.[0] === 0) {
      // Whatever one set took while the other refused is given back before the refusal.
      await this.remove(ownerKey, streamId).catch(() => undefined);
      if (failed !== undefined) throw failed[0] as Error;
      if (all?.[0] === 0) throw gatewaysFull(all[1], maxStreams);
      throw ownerFull(mine?.[1] ?? 0, maxStreamsPerOwner);
    }
    this.held.set(streamId, ownerKey);
    this.startRenewing();
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.held.delete(streamId);
        if (this.held.size === 0) this.stopRenewing();
        // A release that does not reach Redis leaves the slot to expire (streamSlotTtlMs).
        this.remove(ownerKey, streamId).catch(() => undefined);
      },
    };
  }

  /** Renews the expiry of every slot this process holds: one pipelined round trip, one script per set. */
  async renew(): Promise<void> {
    if (this.held.size === 0) return;
    const byOwner = new Map<string, string[]>();
    for (const [streamId, ownerKey] of this.held) {
      const ids = byOwner.get(ownerKey);
      if (ids === undefined) byOwner.set(ownerKey, [streamId]);
      else ids.push(streamId);
    }
    const { maxStreamsPerOwner, maxStreams, streamSlotTtlMs } = this.caps;
    const calls: Promise<unknown>[] = [];
    if (maxStreams > 0) calls.push(this.redis.eval(RENEW_LUA, 1, this.keys.openStreams(), streamSlotTtlMs, ...this.held.keys()));
    if (maxStreamsPerOwner > 0) {
      for (const [ownerKey, ids] of byOwner) calls.push(this.redis.eval(RENEW_LUA, 1, this.keys.ownerStreams(ownerKey), streamSlotTtlMs, ...ids));
    }
    await Promise.all(calls);
  }

  /** Stops renewing and gives back every slot this process still holds (at shutdown, after its streams ended). */
  async close(): Promise<void> {
    this.stopRenewing();
    const held = [...this.held];
    this.held.clear();
    if (held.length === 0) return;
    await Promise.all(held.map(([streamId, ownerKey]) => this.remove(ownerKey, streamId))).catch(() => undefined);
  }

  private setsOf(ownerKey: string): { all: string; owner: string } {
    return { all: this.keys.openStreams(), owner: this.keys.ownerStreams(ownerKey) };
  }

  private async remove(ownerKey: string, streamId: string): Promise<void> {
    const sets = this.setsOf(ownerKey);
    const calls: Promise<number>[] = [];
    if (this.caps.maxStreams > 0) calls.push(this.redis.zrem(sets.all, streamId));
    if (this.caps.maxStreamsPerOwner > 0) calls.push(this.redis.zrem(sets.owner, streamId));
    await Promise.all(calls);
  }

  private startRenewing(): void {
    if (this.renewer !== undefined) return;
    // A renewal that fails (Redis out of reach) is retried at the next tick; the expiry covers two misses.
    this.renewer = setInterval(() => void this.renew().catch(() => undefined), Math.max(100, Math.floor(this.caps.streamSlotTtlMs / 3)));
    this.renewer.unref();
  }

  private stopRenewing(): void {
    clearInterval(this.renewer);
    this.renewer = undefined;
  }
}

function gatewaysFull(open: number, maxStreams: number): LimitExceededError {
  return new LimitExceededError(
    'limits.maxStreams',
    'UNAVAILABLE',
    `The gateways hold ${open} open streams, the most they serve at once (limits.maxStreams); nothing was started or stored. Retry after the Retry-After delay.`,
    { httpStatus: 503, retryAfterSeconds: 1, metadata: { reason: 'GATEWAY_STREAMS_FULL', limit: String(maxStreams) } },
  );
}

function ownerFull(open: number, maxStreamsPerOwner: number): LimitExceededError {
  return new LimitExceededError(
    'limits.maxStreamsPerOwner',
    'RESOURCE_EXHAUSTED',
    `You have ${open} streams of this agent open, the most allowed across all gateways (limits.maxStreamsPerOwner); nothing was started or stored. Close a stream (a task's events can be resumed later with SubscribeToTask and Last-Event-ID), then retry.`,
    { retryAfterSeconds: 1, metadata: { reason: 'TOO_MANY_STREAMS', limit: String(maxStreamsPerOwner) } },
  );
}

/** Each call's [error, reply], as a pipeline answers: every call is waited for, failed or not. */
async function settle(calls: readonly Promise<unknown>[]): Promise<[Error | null, unknown][]> {
  const results = await Promise.allSettled(calls);
  return results.map((result) => (result.status === 'fulfilled' ? [null, result.value] : [result.reason instanceof Error ? result.reason : new Error(String(result.reason)), null]));
}
