// Open streams (SSE and gRPC) per owner and in all, across every gateway sharing one Redis.
// Each open stream is a member of two sorted sets, its owner's (in the owner's slot) and the
// global one (a slot of its own), scored by when its slot expires; the gateway holding the
// stream renews the expiry of all its streams together, so the slots of a gateway that died
// (no release, no renewal) fall out within streamSlotTtlMs. Taking a slot is one round trip
// (both slots' scripts pipelined), releasing one is one, renewing is one per process per
// third of the expiry, however many streams it holds.
import type { RedisClient } from '../redis/connection.ts';
import { newId } from '../ids.ts';
import { StreamSlotSets } from '../store/limits/stream-slot-sets.ts';
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

export class StreamSlots {
  /** This process's open streams: stream id → owner key. */
  private readonly held = new Map<string, string>();
  private readonly process = newId();
  private seq = 0;
  private renewer: NodeJS.Timeout | undefined;
  private readonly sets: StreamSlotSets;

  constructor(
    redis: RedisClient,
    prefix: string,
    private readonly caps: StreamCaps,
  ) {
    this.sets = new StreamSlotSets(redis, prefix);
  }

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
    // Sent in the same tick, so auto-pipelining writes them together on a single Redis; on a
    // Cluster the two sets live in different slots (one explicit pipeline may not hold both) and
    // each goes out at once on its node's connection, neither waiting for the other.
    const calls: Promise<unknown>[] = [];
    if (maxStreams > 0) calls.push(this.sets.take('all', streamId, maxStreams, streamSlotTtlMs));
    if (maxStreamsPerOwner > 0) calls.push(this.sets.take({ owner: ownerKey }, streamId, maxStreamsPerOwner, streamSlotTtlMs));
    const replies = await settle(calls);
    const failed = replies.find(([error]) => error !== null);
    const taken = replies.map(([, reply]) => reply as { taken: boolean; open: number } | null);
    const all = maxStreams > 0 ? taken[0] : undefined;
    const mine = maxStreamsPerOwner > 0 ? taken[maxStreams > 0 ? 1 : 0] : undefined;
    if (failed !== undefined || all?.taken === false || mine?.taken === false) {
      // Whatever one set took while the other refused is given back before the refusal.
      await this.remove(ownerKey, streamId).catch(() => undefined);
      if (failed !== undefined) throw failed[0] as Error;
      if (all?.taken === false) throw gatewaysFull(all.open, maxStreams);
      throw ownerFull(mine?.open ?? 0, maxStreamsPerOwner);
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
    if (maxStreams > 0) calls.push(this.sets.renew('all', [...this.held.keys()], streamSlotTtlMs));
    if (maxStreamsPerOwner > 0) {
      for (const [ownerKey, ids] of byOwner) calls.push(this.sets.renew({ owner: ownerKey }, ids, streamSlotTtlMs));
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

  private async remove(ownerKey: string, streamId: string): Promise<void> {
    const calls: Promise<void>[] = [];
    if (this.caps.maxStreams > 0) calls.push(this.sets.remove('all', streamId));
    if (this.caps.maxStreamsPerOwner > 0) calls.push(this.sets.remove({ owner: ownerKey }, streamId));
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
