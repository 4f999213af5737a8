// Open streams (SSE and gRPC) per owner and in all, across every gateway sharing one Redis.
// Each open stream is a member of two sorted sets, its owner's (in the owner's slot) and the
// global one (a slot of its own), scored by when its slot expires; the gateway holding the
// stream renews the expiry of all its streams together, so the slots of a gateway that died
// (no release, no renewal) fall out within streamSlotTtlMs. Taking a slot is one round trip
// (both slots' scripts pipelined), releasing one is one, renewing is one per process per
// third of the expiry, however many streams it holds.
// The global set is taken a block at a time (up to MAX_BLOCK slots, a sixty-fourth of
// limits.maxStreams): a process hands the block's slots to its next streams, and keeps a slot a
// stream gave back for the next one while it holds fewer than two blocks' worth spare. So with
// only the global cap on, most streams cost no call for their slot at all; the slots a process
// holds spare count as open (the cap errs on the strict side, by at most two blocks per
// process), and all go back as soon as it holds no stream: a request refused before its stream
// opened (an unknown task) leaves nothing behind.
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

/** Most slots of every gateway's set one take asks for at once (a sixty-fourth of limits.maxStreams, when that is more than one). */
const MAX_BLOCK = 16;

export class StreamSlots {
  /** This process's open streams: stream id → owner key. */
  private readonly held = new Map<string, string>();
  /** Slots of every gateway's set this process holds for its next streams (their stream ids). */
  private readonly spare: string[] = [];
  private readonly process = newId();
  private seq = 0;
  private renewer: NodeJS.Timeout | undefined;
  private readonly sets: StreamSlotSets;
  /** Slots of every gateway's set taken at once; 1 = each stream takes its own and gives it back (none spare). */
  private readonly block: number;

  constructor(
    redis: RedisClient,
    prefix: string,
    private readonly caps: StreamCaps,
  ) {
    this.sets = new StreamSlotSets(redis, prefix);
    this.block = Math.max(1, Math.min(MAX_BLOCK, Math.floor(caps.maxStreams / 64)));
  }

  /** Streams this process holds a slot for. */
  get heldHere(): number {
    return this.held.size;
  }

  /**
   * Takes a slot for a stream of `ownerKey`, or refuses (429 for the owner's cap, 503 for the
   * gateways' together). Nothing is written to Redis when neither cap is set. A slot of every
   * gateway's set comes from the spare ones this process holds when it has one: those are taken
   * a block at a time, and a stream that ends leaves its slot here for the next one.
   */
  async take(ownerKey: string): Promise<StreamSlot> {
    const { maxStreamsPerOwner, maxStreams, streamSlotTtlMs } = this.caps;
    if (maxStreamsPerOwner <= 0 && maxStreams <= 0) return { release: () => undefined };
    const spare = maxStreams > 0 ? this.spare.pop() : undefined;
    const streamId = spare ?? this.nextStreamId();
    // Sent in the same tick, so auto-pipelining writes them together on a single Redis; on a
    // Cluster the two sets live in different slots (one explicit pipeline may not hold both) and
    // each goes out at once on its node's connection, neither waiting for the other.
    const block = maxStreams > 0 && spare === undefined ? [streamId, ...Array.from({ length: this.block - 1 }, () => this.nextStreamId())] : [];
    const [allTake, mineTake] = await Promise.all([
      block.length > 0 ? outcome(this.sets.take('all', block, maxStreams, streamSlotTtlMs)) : undefined,
      maxStreamsPerOwner > 0 ? outcome(this.sets.take({ owner: ownerKey }, [streamId], maxStreamsPerOwner, streamSlotTtlMs)) : undefined,
    ]);
    // The block's slots past this stream's own, when taken, are spare from now on; a take that
    // failed may have taken them all, so they go back (else they lapse unrenewed).
    if (allTake?.taken !== undefined) this.spare.push(...block.slice(1, allTake.taken));
    if (allTake?.error !== undefined) await this.sets.remove('all', ...block).catch(() => undefined);
    const allHeld = maxStreams <= 0 || spare !== undefined || (allTake?.taken ?? 0) > 0;
    const mineHeld = maxStreamsPerOwner <= 0 || mineTake?.taken === 1;
    if (!allHeld || !mineHeld) {
      // Whatever one set took while the other refused is given back before the refusal.
      if (allHeld && maxStreams > 0) this.spare.push(streamId);
      if (this.held.size === 0 || this.block === 1) await this.giveBackSpare().catch(() => undefined);
      if (mineHeld || mineTake?.error !== undefined) await this.sets.remove({ owner: ownerKey }, streamId).catch(() => undefined);
      const error = allTake?.error ?? mineTake?.error;
      if (error !== undefined) throw error;
      if (!allHeld) throw gatewaysFull(allTake?.open ?? maxStreams, maxStreams);
      throw ownerFull(mineTake?.open ?? 0, maxStreamsPerOwner);
    }
    this.held.set(streamId, ownerKey);
    this.startRenewing();
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.held.delete(streamId);
        // Kept for this process's next stream while it holds others and few are spare; else given
        // back, and with no stream left here every spare slot goes too (nothing is held for a
        // process without streams). A release that does not reach Redis leaves the slot to expire
        // (streamSlotTtlMs).
        const keep = maxStreams > 0 && this.block > 1 && (this.held.size === 0 || this.spare.length < 2 * this.block - 1);
        if (keep) this.spare.push(streamId);
        if (this.held.size === 0) {
          this.stopRenewing();
          this.giveBackSpare().catch(() => undefined);
        }
        this.remove(ownerKey, streamId, { all: !keep }).catch(() => undefined);
      },
    };
  }

  /** Renews the expiry of every slot this process holds, spare ones included: one pipelined round trip, one script per set. */
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
    if (maxStreams > 0) calls.push(this.sets.renew('all', [...this.held.keys(), ...this.spare], streamSlotTtlMs));
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
    await Promise.all([this.giveBackSpare(), ...held.map(([streamId, ownerKey]) => this.remove(ownerKey, streamId, { all: true }))]).catch(() => undefined);
  }

  private nextStreamId(): string {
    return `${this.process}:${(this.seq += 1)}`;
  }

  private async giveBackSpare(): Promise<void> {
    const spare = this.spare.splice(0);
    if (spare.length > 0) await this.sets.remove('all', ...spare);
  }

  /** Gives a stream's slot back: its owner's, and every gateway's unless that one stays here as a spare (`all` false). */
  private async remove(ownerKey: string, streamId: string, { all }: { all: boolean }): Promise<void> {
    const calls: Promise<void>[] = [];
    if (all && this.caps.maxStreams > 0) calls.push(this.sets.remove('all', streamId));
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

/** A take's answer, or the error it failed with (never rejects, so both sets' answers are seen). */
async function outcome(take: Promise<{ taken: number; open: number }>): Promise<{ taken?: number; open?: number; error?: Error }> {
  try {
    return await take;
  } catch (error) {
    return { error: error instanceof Error ? error : new Error(String(error)) };
  }
}
