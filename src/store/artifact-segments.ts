// A task's artifacts snapshot in pieces of bounded size, so that no script call copies a large
// task's whole artifacts: Redis runs one script at a time, and a call that copies tens of
// megabytes holds every other caller for as long. A snapshot that fits one segment is written
// whole, with the event that compacts it (appendEvents, finishTurn); a larger one is written one
// segment per call beside the live snapshot (writeArtifactSegment) and made live in one small
// call (switchArtifactSegments); see lua/include/storedArtifacts.lua for the layout. A run that
// takes over a turn reads large artifacts in slices the same way (readArtifactSlices). The
// writes are in turn-segments.ts (they call the turn scripts).
import type { Artifact } from '../protocol/types.ts';
import type { RedisClient } from '../redis/connection.ts';
import type { TaskKeys } from './keys.ts';
import { taskField, taskItemField } from './task-hash.ts';
import { parseStoredArtifacts, storedArtifactsField, type StoredArtifacts } from './stored-artifacts.ts';

/**
 * The most bytes of artifacts one script call carries: a segment, or artifacts answered whole.
 * A little under 256 KiB, so that a segment with its string header fills one allocation of
 * Redis' allocator (size classes run 256 KiB, 320 KiB, …): 256 KiB exactly would waste a fifth.
 */
export const SEGMENT_BYTES = 256 * 1024 - 64;

/** The task hash field of a segment. */
export const segmentField = (generation: string | number, index: number): string => taskItemField('artifactSegment', `${generation}:${index}`);

/**
 * `json` cut into slices of at most `maxBytes` UTF-8 bytes each, never inside a character: each
 * is valid UTF-8 on its own, so Redis (which joins bytes) and a reader (which decodes each
 * reply) both get the whole back exactly.
 */
export function segmentsOf(json: string, maxBytes = SEGMENT_BYTES): string[] {
  const bytes = Buffer.from(json, 'utf8');
  const segments: string[] = [];
  let start = 0;
  while (start < bytes.length) {
    let end = Math.min(start + maxBytes, bytes.length);
    // Back off to the first byte of a character (continuation bytes are 10xxxxxx).
    while (end < bytes.length && end > start && ((bytes[end] as number) & 0xc0) === 0x80) end -= 1;
    segments.push(bytes.toString('utf8', start, end));
    start = end;
  }
  return segments;
}

/** Where acquireLease left artifacts too large for its reply (its '#slices …' answer). */
export interface ArtifactSlices {
  /** The live segmented generation; 0: the snapshot is the task hash's 'artifacts' field. */
  generation: number;
  segments: number;
  segmentBytes: number;
  chunks: number;
  chunkBytes: number;
}

const SLICES_MARK = '#slices ';

/** acquireLease's artifacts value when it is a '#slices …' answer, else undefined. */
export function artifactSlicesOf(value: string | undefined): ArtifactSlices | undefined {
  if (value === undefined || !value.startsWith(SLICES_MARK)) return undefined;
  const [generation, segments, segmentBytes, chunks, chunkBytes] = value.slice(SLICES_MARK.length).split(' ').map(Number);
  return { generation: generation ?? 0, segments: segments ?? 0, segmentBytes: segmentBytes ?? 0, chunks: chunks ?? 0, chunkBytes: chunkBytes ?? 0 };
}

/**
 * The artifacts acquireLease answered as slices, read with plain commands of at most about
 * SEGMENT_BYTES each: segment by segment, then the pending chunks a bounded count at a time.
 * The reader holds the lease, so nothing changes them while it reads (a stale worker's writes
 * are refused); a piece found missing means the task went away, and the read fails.
 */
export async function readArtifactSlices(redis: RedisClient, keys: TaskKeys, slices: ArtifactSlices): Promise<StoredArtifacts> {
  const pieces: string[] = [];
  if (slices.generation === 0) {
    // Stored whole before segments existed: one plain read, no script.
    pieces.push((await redis.hget(keys.task, taskField.artifacts)) ?? '[]');
  } else {
    for (let index = 0; index < slices.segments; index += 1) {
      const segment = await redis.hget(keys.task, segmentField(slices.generation, index));
      if (segment === null) throw new Error(`artifacts segment ${index} of generation ${slices.generation} is missing: the task changed or expired while its turn's run read it`);
      pieces.push(segment);
    }
  }
  const snapshot = pieces.length === 0 ? '[]' : pieces.join('');
  const chunks: string[] = [];
  const perRead = Math.max(1, Math.floor(SEGMENT_BYTES / Math.max(1, slices.chunkBytes / Math.max(1, slices.chunks))));
  while (chunks.length < slices.chunks) {
    const read = await redis.lrange(keys.artifactChunks, chunks.length, Math.min(slices.chunks, chunks.length + perRead) - 1);
    if (read.length === 0) throw new Error(`pending artifact chunk ${chunks.length} of ${slices.chunks} is missing: the task changed or expired while its turn's run read it`);
    chunks.push(...read);
  }
  return parseStoredArtifacts(storedArtifactsField(snapshot, chunks));
}

/** The artifacts as `artifacts` serialized, and whether they fit one script call. */
export function artifactsJson(artifacts: Artifact[] | undefined): { json: string; segmented: boolean } | undefined {
  if (artifacts === undefined) return undefined;
  const json = JSON.stringify(artifacts);
  return { json, segmented: Buffer.byteLength(json) > SEGMENT_BYTES };
}

/** The task hash fields that name the live segmented generation, read before its segments. */
export const LIVE_SEGMENTS_FIELDS = [taskField.artifactsGen, taskField.artifactsSegments] as const;

/** The segment fields of the live generation, as LIVE_SEGMENTS_FIELDS read it ([] when the snapshot is not segmented). */
export function liveSegmentFields(live: readonly (string | null)[]): string[] {
  const [generation, count] = live;
  if (generation === null || generation === undefined) return [];
  return Array.from({ length: Number(count ?? 0) }, (_, index) => segmentField(generation, index));
}

/**
 * The snapshot's JSON from the segments of a generation a transaction found live, one plain read
 * of at most SEGMENT_BYTES each (a transaction of them all would copy the whole snapshot in one
 * step that every other caller waits behind). A generation's segments never change while it
 * lives, and its switch to the next one deletes them: undefined when one is gone (the reader
 * reads again), else exactly the snapshot the transaction saw.
 */
export async function readLiveSegments(redis: RedisClient, keys: TaskKeys, live: readonly (string | null)[]): Promise<string | undefined> {
  const pieces = await readLiveSegmentPieces(live, (field) => redis.hget(keys.task, field));
  return pieces === undefined ? undefined : pieces.length === 0 ? '[]' : pieces.join('');
}

/** readLiveSegments' segments as `read` gives them (text, or bytes left undecoded); [] when the snapshot is not segmented. */
export async function readLiveSegmentPieces<T>(live: readonly (string | null)[], read: (field: string) => Promise<T | null>): Promise<T[] | undefined> {
  const pieces: T[] = [];
  for (const field of liveSegmentFields(live)) {
    const segment = await read(field);
    if (segment === null) return undefined;
    pieces.push(segment);
  }
  return pieces;
}

/**
 * The first `count` pending chunks of a task whose snapshot a transaction found in segments of
 * `generation`, read a bounded run at a time after it, as bytes (the reader decodes them where
 * it assembles them): while the generation lives, the list only grows at its end (a compaction
 * that drops chunks switches generations, or drops the segments), so they are the chunks the
 * transaction saw. undefined when the generation changed meanwhile.
 */
export async function readChunksAfter(redis: RedisClient, keys: TaskKeys, generation: string, count: number, chunkBytes: number): Promise<Buffer[] | undefined> {
  const chunks: Buffer[] = [];
  const perRead = Math.max(1, Math.floor(SEGMENT_BYTES / Math.max(1, chunkBytes / Math.max(1, count))));
  while (chunks.length < count) {
    const read = await redis.lrangeBuffer(keys.artifactChunks, chunks.length, Math.min(count, chunks.length + perRead) - 1);
    if (read.length === 0) return undefined;
    chunks.push(...read);
  }
  return (await redis.hget(keys.task, taskField.artifactsGen)) === generation ? chunks : undefined;
}

/** A compaction can switch generations between a reader's transaction and its read of the segments: this many tries, then it gives up. */
export const LIVE_READ_ATTEMPTS = 5;

/**
 * The stored artifacts field (stored-artifacts.ts) of one task with plain commands: the snapshot
 * field, the live generation and the pending chunks in one transaction, then the generation's
 * segments one read each.
 */
export async function readArtifactsField(redis: RedisClient, keys: TaskKeys): Promise<string> {
  for (let attempt = 1; ; attempt += 1) {
    const results = (await redis.multi().hmget(keys.task, taskField.artifacts, ...LIVE_SEGMENTS_FIELDS).lrange(keys.artifactChunks, 0, -1).exec()) ?? [];
    for (const [error] of results) if (error) throw error;
    const [[snapshot, ...live], chunks] = results.map(([, value]) => value) as [(string | null)[], string[]];
    const stored = snapshot ?? (await readLiveSegments(redis, keys, live));
    if (stored !== undefined) return storedArtifactsField(stored, chunks);
    if (attempt >= LIVE_READ_ATTEMPTS) throw new Error(`the artifacts of ${keys.task} changed generation ${LIVE_READ_ATTEMPTS} times while read; read the task again`);
  }
}
