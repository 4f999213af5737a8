// readTask's answer for a large task (readTask-4.lua answered LARGE) with plain commands: Redis
// copies each value once into a reply instead of into Lua and back, and no single command copies
// a segmented snapshot or its pending chunks whole (artifact-segments.ts).
import type { RedisClient } from '../redis/connection.ts';
import type { TaskState, TaskStatus } from '../protocol/types.ts';
import { RedisKeys, type TaskKeys } from './keys.ts';
import { READ_TASK_FIELDS, taskField } from './task-hash.ts';
import { taskReadOf, type TaskRead } from './task-read.ts';
import { parseStoredArtifacts, storedArtifactsText, storedPiecesBytes, type StoredArtifactPieces } from './stored-artifacts.ts';
import { LIVE_READ_ATTEMPTS, LIVE_SEGMENTS_FIELDS, readChunksAfter, readLiveSegmentPieces } from './artifact-segments.ts';

/** A large task as read, its artifacts still as stored: what a reader assembles off the event loop. */
export interface RawLargeTask {
  /** The task without its artifacts; `bytes` counts them. */
  read: TaskRead;
  /** The stored artifacts field in pieces (stored-artifacts.ts), large ones as undecoded bytes. */
  artifacts: StoredArtifactPieces;
}

/** A large task read elsewhere (the gateway's assembly thread): its fields, and a handle on its artifacts held there. */
export interface HeldLargeTask {
  read: TaskRead;
  held: number;
}

/** Reads large tasks elsewhere and holds their artifacts there, for an assembly there too (src/tasks/artifact-assembly.ts). */
export interface LargeTaskReader {
  /** The task as its owner (`ownerKey`) reads it, or undefined when missing or another owner's. */
  read(taskId: string, ownerKey: string, historyLength: number | undefined): Promise<HeldLargeTask | undefined>;
}

/** readRawLargeTask for a reader that knows the store by its key prefix only (the assembly thread). */
export function readRawLargeTaskAt(redis: RedisClient, keyPrefix: string, taskId: string, ownerKey: string, historyLength: number | undefined): Promise<RawLargeTask | undefined> {
  return readRawLargeTask(redis, new RedisKeys(keyPrefix).task(taskId), taskId, ownerKey, historyLength);
}

/** The task with its artifacts parsed and merged here, on the caller's thread. */
export async function readLargeTask(redis: RedisClient, k: TaskKeys, taskId: string, ownerKey: string, historyLength: number | undefined): Promise<TaskRead | undefined> {
  const raw = await readRawLargeTask(redis, k, taskId, ownerKey, historyLength);
  if (raw === undefined) return undefined;
  const { artifacts } = parseStoredArtifacts(storedArtifactsText(raw.artifacts));
  if (artifacts.length > 0) raw.read.task.artifacts = artifacts;
  return raw.read;
}

/**
 * The task as its owner (`ownerKey`) reads it, or undefined when missing or another owner's: the
 * hash's fields, the last event id, the history and (unless segmented) the pending chunks in one
 * transaction, atomic as the script; a segmented snapshot's segments and chunks after it, in
 * bounded reads of the generation the transaction saw (read again when a switch came between).
 * Its artifacts are left as stored: parsing tens of megabytes is the reader's to place.
 */
export async function readRawLargeTask(redis: RedisClient, k: TaskKeys, taskId: string, ownerKey: string, historyLength: number | undefined): Promise<RawLargeTask | undefined> {
  const length = historyLength ?? -1;
  for (let attempt = 1; ; attempt += 1) {
    // A snapshot in segments: its pending chunks (up to its own size) are read after the
    // transaction too, a bounded run at a time (artifact-segments.ts); else with it.
    const segmented = (await redis.hget(k.task, taskField.artifactsGen)) !== null;
    // The last event is read for its id only: as bytes, never decoded (one can weigh a megabyte).
    const transaction = redis.multi().hmget(k.task, ...READ_TASK_FIELDS).xrevrangeBuffer(k.events, '+', '-', 'COUNT', 1);
    // Bytes, not text: a pending chunk can be a megabyte (one artifact update), and the event
    // loop would decode each only for the reader to send it on to the assembly thread.
    if (segmented) transaction.llen(k.artifactChunks);
    else transaction.lrangeBuffer(k.artifactChunks, 0, -1);
    transaction.hmget(k.task, ...LIVE_SEGMENTS_FIELDS, taskField.artifactChunkBytes);
    if (length !== 0) transaction.lrange(k.history, length > 0 ? -length : 0, -1);
    const results = (await transaction.exec()) ?? [];
    for (const [error] of results) if (error) throw error;
    const [fields, last, listed, [generation, segments, chunkBytes], history] = results.map(([, value]) => value) as [
      (string | null)[],
      [Buffer, Buffer[]][],
      Buffer[] | number,
      (string | null)[],
      string[] | undefined,
    ];
    if (fields[0] !== ownerKey) return undefined;
    const [, id, contextId, status, snapshot, metadata, ...rest] = fields.map((value) => value ?? '');
    // A snapshot in segments is read after the transaction, a segment per read.
    const stored = snapshot || (await readLiveSegmentPieces([generation ?? null, segments ?? null], (field) => redis.hgetBuffer(k.task, field)));
    const chunks =
      typeof listed !== 'number' ? listed : generation === null || generation === undefined ? undefined : await readChunksAfter(redis, k, generation, listed, Number(chunkBytes ?? 0));
    if (stored === undefined || chunks === undefined) {
      if (attempt < LIVE_READ_ATTEMPTS) continue;
      throw new Error(`task ${taskId}'s artifacts changed generation ${LIVE_READ_ATTEMPTS} times while read; read it again`);
    }
    const generationField = rest.pop() || '0';
    const trimmedCount = rest.pop() || '0';
    const artifacts: StoredArtifactPieces = { snapshot: stored, chunks };
    const read = taskReadOf([id ?? '', contextId ?? '', status ?? '', '', metadata || '{}', last[0]?.[0]?.toString() ?? '', ...rest, trimmedCount, generationField, ...(history ?? [])]);
    if (read === undefined) return undefined;
    read.bytes += storedPiecesBytes(artifacts);
    return { read, artifacts };
  }
}

/** What deciding on a task's state takes: no artifacts, no history (TaskHead). */
export interface TaskHead {
  state: TaskState;
  contextId: string;
  /** Id of the last event as of the state ('' if the buffer is empty or expired). */
  lastEventId: string;
}

/**
 * The task's state, context and last event id, read together (one MULTI, atomic as the read
 * script), or undefined when missing or another owner's. A caller that only decides on the state
 * (CancelTask waiting for a turn to end) reads a task of tens of megabytes in a few hundred bytes.
 */
export async function readTaskHead(redis: RedisClient, k: TaskKeys, ownerKey: string): Promise<TaskHead | undefined> {
  const results = (await redis.multi().hmget(k.task, taskField.owner, taskField.contextId, taskField.status).xrevrangeBuffer(k.events, '+', '-', 'COUNT', 1).exec()) ?? [];
  for (const [error] of results) if (error) throw error;
  const [[owner, contextId, status], last] = results.map(([, value]) => value) as [(string | null)[], [Buffer, Buffer[]][]];
  if (owner !== ownerKey || contextId === null || contextId === undefined || status === null || status === undefined) return undefined;
  return { state: (JSON.parse(status) as TaskStatus).state, contextId, lastEventId: last[0]?.[0]?.toString() ?? '' };
}
