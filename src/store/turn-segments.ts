// A compaction too large for one script call, written in steps (see artifact-segments.ts): one
// call per segment beside the live snapshot, then one small call that makes it live. Every call
// is fenced by the lease generation, so a worker that lost the lease writes nothing.
import type { TaskKeys } from './keys.ts';
import { callScript } from './script-call.ts';
import type { ScriptRunner } from './scripts.ts';
import { segmentsOf } from './artifact-segments.ts';
import { switchArtifactSegmentsScript, writeArtifactSegmentScript } from './turn-scripts.ts';

/** Why a segmented write did not go through: the lease was lost, or the draft was replaced. */
export type SegmentedWrite = 'written' | 'stale';

/**
 * Writes `json` (the whole artifacts) as the task's next snapshot generation, one segment per
 * call, then switches to it; every call is fenced by the lease generation. The chunks pending
 * when the first segment is written are those `json` folds in: the switch drops them.
 */
export async function writeSegmented(run: ScriptRunner, keys: TaskKeys, generation: number, json: string): Promise<SegmentedWrite> {
  const segments = segmentsOf(json);
  let draft = '';
  let bytes = 0;
  for (const [index, segment] of segments.entries()) {
    const reply = await callScript(run, writeArtifactSegmentScript, keys, { generation, draft, index, segment });
    if (reply.outcome === 'STALE') return 'stale';
    if (reply.outcome !== 'OK') throw new Error(`writing artifacts segment ${index} of ${segments.length} failed (${reply.outcome}): another compaction replaced this one; the live snapshot is unchanged`);
    draft = reply.draft;
    bytes += Buffer.byteLength(segment);
  }
  const switched = await callScript(run, switchArtifactSegmentsScript, keys, { generation, draft, segments: segments.length, bytes });
  if (switched === 'STALE') return 'stale';
  if (switched !== 'OK') throw new Error(`switching to artifacts generation ${draft} failed: its draft is incomplete; the live snapshot is unchanged`);
  return 'written';
}
