// When a turn re-writes the task's whole artifacts snapshot instead of storing one more chunk
// beside it (the appendEvents script). A snapshot per chunk costs traffic quadratic in the turn's
// output; chunks alone make every read merge an ever longer list. Compacting once the pending
// chunks reach the snapshot's own size (at least MIN_COMPACTION_BYTES) keeps both linear: each
// snapshot written is at most twice the chunks since the last one, so all snapshots together are
// at most twice the turn's output. A snapshot past one segment is not one call's argument: the
// store writes it in bounded steps beside the live one (src/store/turn-segments.ts), so a large
// compaction costs Redis many short calls, not one long one that every other caller waits behind.

/** Pending chunks below this never trigger a compaction (small artifacts stay cheap to write). */
export const MIN_COMPACTION_BYTES = 64 * 1024;

export class ArtifactCompaction {
  /**
   * `snapshotBytes`: the stored snapshot's JSON size; `pendingBytes`: the chunks stored beside it
   * (both as the turn's lease read them).
   */
  constructor(
    private snapshotBytes: number,
    private pendingBytes: number,
  ) {}

  /** True when a chunk of `chunkBytes` should go with the whole snapshot instead of on its own. */
  compactsWith(chunkBytes: number): boolean {
    return this.pendingBytes + chunkBytes >= Math.max(this.snapshotBytes, MIN_COMPACTION_BYTES);
  }

  /**
   * Notes a stored chunk; `compacted`: it went with the whole snapshot. The new snapshot's size is
   * taken as the old one's plus the chunks (an upper bound: replaced parts only shrink it), so no
   * second serialization is needed and compactions stay at most geometric.
   */
  stored(chunkBytes: number, compacted: boolean): void {
    if (compacted) {
      this.snapshotBytes += this.pendingBytes + chunkBytes;
      this.pendingBytes = 0;
    } else {
      this.pendingBytes += chunkBytes;
    }
  }
}
