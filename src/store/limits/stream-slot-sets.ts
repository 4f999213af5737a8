// The Redis side of the open-stream caps (src/limits/stream-slots.ts): two sorted sets of open
// streams, one per owner (the owner's slot) and one of every gateway's (a slot of its own), each
// stream scored by when its slot expires unless renewed. Every call touches one set, so one slot.
import type { RedisClient } from '../../redis/connection.ts';
import { RedisKeys } from '../keys.ts';
import { streamSlotRenewScript, streamSlotTakeScript } from '../limit-scripts.ts';
import { scriptCaller, type ScriptCaller } from '../script-call.ts';

/** Which set: every gateway's open streams, or one owner's. */
export type StreamSet = 'all' | { owner: string };

export class StreamSlotSets {
  private readonly call: ScriptCaller;
  private readonly keys: RedisKeys;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
  ) {
    this.keys = new RedisKeys(prefix);
    this.call = scriptCaller(redis);
  }

  /**
   * Takes slots for the given stream ids, in order, while the set holds fewer than `cap` (0 = no
   * cap) unexpired slots: how many were taken (for the first ids), and the open streams it then
   * holds. Sent at once (no await before the command), so takes in two sets issued in one tick
   * go out together.
   */
  take(set: StreamSet, streamIds: readonly string[], cap: number, ttlMs: number): Promise<{ taken: number; open: number }> {
    return this.call(streamSlotTakeScript, { openStreams: this.keyOf(set) }, { cap, ttlMs, streamIds });
  }

  /** Moves the expiry of the given streams' slots to now + ttlMs. */
  async renew(set: StreamSet, streamIds: readonly string[], ttlMs: number): Promise<void> {
    await this.call(streamSlotRenewScript, { openStreams: this.keyOf(set) }, { ttlMs, streamIds });
  }

  /** Gives streams' slots back. */
  async remove(set: StreamSet, ...streamIds: string[]): Promise<void> {
    if (streamIds.length > 0) await this.redis.zrem(this.keyOf(set), ...streamIds);
  }

  private keyOf(set: StreamSet): string {
    return set === 'all' ? this.keys.openStreams() : this.keys.ownerStreams(set.owner);
  }
}
