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
   * Takes a slot for `streamId` in the set unless it holds `cap` (0 = no cap) unexpired slots;
   * the open streams it then holds. Sent at once (no await before the command), so takes in
   * two sets issued in one tick go out together.
   */
  take(set: StreamSet, streamId: string, cap: number, ttlMs: number): Promise<{ taken: boolean; open: number }> {
    return this.call(streamSlotTakeScript, { openStreams: this.keyOf(set) }, { streamId, cap, ttlMs });
  }

  /** Moves the expiry of the given streams' slots to now + ttlMs. */
  async renew(set: StreamSet, streamIds: readonly string[], ttlMs: number): Promise<void> {
    await this.call(streamSlotRenewScript, { openStreams: this.keyOf(set) }, { ttlMs, streamIds });
  }

  /** Gives a stream's slot back. */
  async remove(set: StreamSet, streamId: string): Promise<void> {
    await this.redis.zrem(this.keyOf(set), streamId);
  }

  private keyOf(set: StreamSet): string {
    return set === 'all' ? this.keys.openStreams() : this.keys.ownerStreams(set.owner);
  }
}
