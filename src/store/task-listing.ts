// ListTasks (spec 3.1.4) with bounded work and a bounded answer. The owner's index is read in
// its own slot, a chunk at a time (ZREVRANGEBYSCORE … LIMIT), then each task in its own slot,
// pipelined: never one script over both (docs/redis-slots.md), so no call can hold Redis for
// the length of a big index. A call examines at most `maxScannedEntries` index entries and
// returns at most `maxPageBytes` of task JSON: past either it ends the page early with a token
// to go on from, so a page may come back short (even empty) with a nextPageToken.
import type { RedisClient } from '../redis/connection.ts';
import type { Task, TaskState } from '../protocol/types.ts';
import { ownerKeyOf, taskReadOf, type Owner, type TaskStore } from './task-store.ts';
import { HISTORY_AT } from './task-read.ts';
import { pipelineAcrossSlots } from '../redis/cross-slot.ts';
import { READ_TASK_FIELDS, taskField, type TaskHashField } from './task-hash.ts';
import { storedArtifactsField } from './stored-artifacts.ts';
import { readArtifactsField } from './artifact-segments.ts';

/** Where the next page starts: after the index entry (score, taskId); `total` carried from the first page of a filtered listing. */
export interface ListCursor {
  score: string;
  taskId: string;
  total?: number;
}

export interface ListTasksQuery {
  owner: Owner;
  contextId: string | undefined;
  state: TaskState | undefined;
  /** Tasks whose status timestamp is at or after this (ms). */
  statusTimestampAfterMs: number | undefined;
  pageSize: number;
  cursor: ListCursor | undefined;
  /** Messages of each task's history to include (0 = none, -1 = all). */
  historyLength: number;
  includeArtifacts: boolean;
}

export interface ListBounds {
  /** Serialized task bytes one page may carry; the first task of a page is always included (its history trimmed to fit). */
  maxPageBytes: number;
  /** Index entries one call may examine. */
  maxScannedEntries: number;
  /** Calls one owner may have in progress on this process at once (0 = no cap). */
  maxConcurrentPerOwner?: number;
}

export interface TaskListPage {
  tasks: Task[];
  next: ListCursor | undefined;
  /**
   * Tasks matching the filters. Kept, not counted: the index's size (ZCARD, or ZCOUNT in the
   * time window). With a status filter it is counted on the first page while that fits in the
   * scan bound, else it is the window's size (an upper bound), and later pages carry the first
   * page's figure in their token.
   */
  total: number;
  /** Why the page ended before pageSize tasks although more may follow. */
  cutShort: 'bytes' | 'scan' | undefined;
  /** Index entries this call examined. */
  scanned: number;
  /** The page's tasks as stored (about their JSON size). */
  bytes: number;
}

interface IndexEntry {
  taskId: string;
  score: string;
}

type Reply = (string | number | null)[];
type PipelineLike = ReturnType<RedisClient['pipeline']>;

/** How many index entries one round trip asks for when a status filter may reject many of them. */
const FILTERED_CHUNK = 200;
/** Tasks read per round trip when histories or artifacts are asked for (bounds what one reply may hold). */
const HEAVY_READ_BATCH = 8;
/** A page's first heavy read, before the sizes of its tasks are known (see readAhead). */
const FIRST_HEAVY_READ = 2;
const LIGHT_READ_BATCH = 50;
/** The task hash fields of a listed task, in the order readTask-4.lua reads them (owner first); a listed task is not the start of a stream, so what the replay bound trimmed is not read. */
const TASK_FIELDS: TaskHashField[] = READ_TASK_FIELDS.filter((field) => field !== taskField.eventsTrimmedThrough && field !== taskField.eventsTrimmed);
/** readTask-4.lua's reply: the artifacts JSON sits at this index, the history from HISTORY_AT on. */
const ARTIFACTS_AT = 3;
/** Placeholder of a listed task's artifacts kept in segments: read apart (artifact-segments.ts). */
const SEGMENTED = '#segmented';

const textLength = (value: string | number | null): number => (typeof value === 'string' ? value.length : 0);

export class TaskListing {
  constructor(
    private readonly store: TaskStore,
    private readonly bounds: ListBounds,
  ) {}

  private get redis(): RedisClient {
    return this.store.redis;
  }

  async list(query: ListTasksQuery): Promise<TaskListPage> {
    const ownerKey = ownerKeyOf(query.owner);
    const { keys } = this.store;
    // Index notes this process still holds for the owner go first (none: no command).
    await this.store.ownerIndex.flushOwner(ownerKey);
    const index = query.contextId === undefined ? keys.ownerTasks(ownerKey) : keys.ownerContextTasks(ownerKey, query.contextId);
    const max = query.cursor === undefined ? '+inf' : query.cursor.score;
    const min = query.statusTimestampAfterMs === undefined ? '-inf' : String(query.statusTimestampAfterMs);
    const { maxPageBytes, maxScannedEntries } = this.bounds;
    const filtered = query.state !== undefined;
    // A filtered first page goes on probing states after it is full, to count the total exactly.
    const counting = filtered && query.cursor === undefined;
    const heavy = query.historyLength !== 0 || query.includeArtifacts;

    const tasks: Task[] = [];
    const gone: string[] = [];
    let windowSize = 0;
    let bytes = 0;
    // What the tasks read so far weighed (used or not): how many more a page's bytes can take.
    let readBytes = 0;
    let readCount = 0;
    let scanned = 0;
    let matched = 0;
    let exhausted = false;
    let cutShort: TaskListPage['cutShort'];
    // The last entry this page accounted for (taken, or passed over): the next page starts after it.
    let last: IndexEntry | undefined;
    // Set once an entry is left for the next page (the page is full, or its bytes are spent).
    let pageDone = false;

    while (!exhausted && scanned < maxScannedEntries && (!pageDone || counting)) {
      const want = Math.min(maxScannedEntries - scanned, filtered ? FILTERED_CHUNK : query.pageSize + 1 - tasks.length);
      const first = scanned === 0;
      const pipeline = this.redis.pipeline();
      pipeline.zrevrangebyscore(index, max, min, 'WITHSCORES', 'LIMIT', scanned, want);
      if (first) {
        if (query.statusTimestampAfterMs === undefined) pipeline.zcard(index);
        else pipeline.zcount(index, min, '+inf');
      }
      const replies = await execPipeline(pipeline);
      const flat = (replies[0] ?? []) as string[];
      if (first) windowSize = Number(replies[1] ?? 0);
      scanned += flat.length / 2;
      if (flat.length / 2 < want) exhausted = true;

      const entries: IndexEntry[] = [];
      for (let i = 0; i < flat.length; i += 2) entries.push({ taskId: flat[i] as string, score: flat[i + 1] as string });
      // Entries tied with the cursor's score that the previous page already covered.
      const fresh = new Set(query.cursor === undefined ? entries : entries.filter((entry) => !isAtOrBeforeCursor(entry, query.cursor as ListCursor)));
      const states = filtered ? await this.probe([...fresh], ownerKey) : undefined;
      if (states !== undefined) for (const state of states.values()) if (state === query.state) matched += 1;
      if (pageDone) continue;

      const candidates = [...fresh].filter((entry) => states === undefined || states.get(entry.taskId) === query.state);
      // Each task read ahead, with what it adds to the page (weighed once: read-ahead and page alike).
      const reads = new Map<string, { reply: Reply; size: number }>();
      for (const entry of entries) {
        if (pageDone) break;
        const state = states?.get(entry.taskId);
        if (!fresh.has(entry) || (states !== undefined && state !== query.state)) {
          if (states !== undefined && fresh.has(entry) && state === undefined) gone.push(entry.taskId);
          last = entry;
          continue;
        }
        if (tasks.length >= query.pageSize) {
          pageDone = true;
          break;
        }
        if (!reads.has(entry.taskId)) {
          const at = candidates.indexOf(entry);
          const ahead = candidates.slice(at, at + Math.min(readAhead(heavy, readCount, readBytes, maxPageBytes - bytes), query.pageSize - tasks.length));
          for (const [i, reply] of (await this.readMany(ahead, query, ownerKey)).entries()) {
            const size = this.sizeOf(reply, query.includeArtifacts);
            reads.set((ahead[i] as IndexEntry).taskId, { reply, size });
            readCount += 1;
            readBytes += size;
          }
        }
        const { reply, size } = reads.get(entry.taskId) ?? { reply: [], size: 0 };
        reads.delete(entry.taskId);
        if (reply.length === 0) {
          gone.push(entry.taskId);
          last = entry;
          continue;
        }
        if (tasks.length > 0 && bytes + size > maxPageBytes) {
          cutShort = 'bytes';
          pageDone = true;
          break;
        }
        const read = taskReadOf(tasks.length === 0 && size > maxPageBytes ? trimHistory(reply, size - maxPageBytes) : reply);
        if (read === undefined) continue;
        if (query.includeArtifacts) read.task.artifacts ??= [];
        else delete read.task.artifacts;
        tasks.push(read.task);
        bytes += size;
        last = entry;
      }
    }

    if (gone.length > 0) await this.forget(index, gone);
    // Past the scan bound with entries left: the page ends short, the token goes on from there.
    if (!pageDone && !exhausted) cutShort = 'scan';
    const more = pageDone || !exhausted;
    const remaining = Math.max(0, windowSize - gone.length);
    let total: number;
    if (!filtered) total = remaining;
    else if (query.cursor?.total !== undefined) total = query.cursor.total;
    else total = exhausted ? matched : remaining;
    const resumeAt = last ?? query.cursor;
    return {
      tasks,
      next: more && resumeAt !== undefined ? { score: resumeAt.score, taskId: resumeAt.taskId, ...(filtered ? { total } : {}) } : undefined,
      total,
      cutShort: more ? cutShort : undefined,
      scanned,
      bytes,
    };
  }

  /** Each entry's task state, or undefined for a task that is gone (or not the owner's). */
  private async probe(entries: IndexEntry[], ownerKey: string): Promise<Map<string, string | undefined>> {
    const states = new Map<string, string | undefined>();
    if (entries.length === 0) return states;
    const replies = await execAcrossSlots(this.redis, entries.map((entry) => this.store.keys.task(entry.taskId).task), (pipeline, i) =>
      pipeline.hmget(this.store.keys.task((entries[i] as IndexEntry).taskId).task, taskField.owner, taskField.state),
    );
    for (const [i, reply] of replies.entries()) {
      const [owner, state] = (reply ?? []) as (string | null)[];
      states.set((entries[i] as IndexEntry).taskId, owner === ownerKey && typeof state === 'string' ? state : undefined);
    }
    return states;
  }

  /**
   * Reads tasks as readTask-4.lua answers (so taskReadOf parses them), with plain commands in
   * one pipeline: a list needs no event id, so the replay buffer is not touched, and artifacts
   * are not even fetched unless asked for. The owner is checked on what comes back.
   */
  private async readMany(entries: IndexEntry[], query: ListTasksQuery, ownerKey: string): Promise<Reply[]> {
    const fields = query.includeArtifacts ? TASK_FIELDS : TASK_FIELDS.map((field) => (field === taskField.artifacts ? taskField.id : field));
    const withHistory = query.historyLength !== 0;
    const replies = await execAcrossSlots(this.redis, entries.map((entry) => this.store.keys.task(entry.taskId).task), (pipeline, i) => {
      const k = this.store.keys.task((entries[i] as IndexEntry).taskId);
      pipeline.hmget(k.task, ...fields);
      if (withHistory) pipeline.lrange(k.history, query.historyLength > 0 ? -query.historyLength : 0, -1);
      if (query.includeArtifacts) pipeline.lrange(k.artifactChunks, 0, -1);
    });
    const step = 1 + (withHistory ? 1 : 0) + (query.includeArtifacts ? 1 : 0);
    const read = entries.map((_, i) => {
      const values = (replies[i * step] ?? []) as (string | null)[];
      if (values[0] !== ownerKey) return [];
      const history = withHistory ? ((replies[i * step + 1] ?? []) as string[]) : [];
      const [, id, contextId, status, snapshot, metadata, ...rest] = values.map((v) => v ?? '');
      // A snapshot kept in segments ('artifacts' absent) is read apart, in a transaction of its own.
      const artifacts = !query.includeArtifacts ? '' : snapshot === '' ? SEGMENTED : storedArtifactsField(snapshot ?? '', (replies[i * step + step - 1] ?? []) as string[]);
      // No event id and nothing trimmed: a listed task is not the start of a stream.
      const generation = rest.pop() ?? '0';
      return [id ?? '', contextId ?? '', status ?? '', artifacts, metadata ?? '', '', ...rest, '', '0', generation, ...history];
    });
    await Promise.all(
      read.map(async (reply, i) => {
        if (reply[ARTIFACTS_AT] === SEGMENTED) reply[ARTIFACTS_AT] = await readArtifactsField(this.redis, this.store.keys.task((entries[i] as IndexEntry).taskId));
      }),
    );
    return read;
  }

  /** What one task adds to the page: the JSON it is made of, as stored. */
  private sizeOf(reply: Reply, includeArtifacts: boolean): number {
    let size = 0;
    for (const [i, value] of reply.entries()) if (includeArtifacts || i !== ARTIFACTS_AT) size += textLength(value);
    return size;
  }

  /** Index entries whose task expired (or never was the owner's) leave the index: the kept total stays right. */
  private async forget(index: string, taskIds: string[]): Promise<void> {
    await this.redis.zrem(index, ...taskIds);
  }
}

/**
 * Tasks to read in the next round trip. Light reads (no history, no artifacts) take the batch.
 * Heavy ones are sized by what the page has room for: a page of 1 MiB over tasks of 500 kB read
 * eight of them (4 MB decoded, parsed and dropped) to keep two. So the first read takes a few,
 * and the next as many as the room left holds at the average size seen, one more at least (it
 * may be smaller), never more than the batch.
 */
function readAhead(heavy: boolean, readCount: number, readBytes: number, roomBytes: number): number {
  if (!heavy) return LIGHT_READ_BATCH;
  if (readCount === 0) return FIRST_HEAVY_READ;
  const average = Math.max(1, readBytes / readCount);
  return Math.min(HEAVY_READ_BATCH, Math.max(1, Math.ceil(roomBytes / average)));
}

/** True for an entry the previous page already covered (the index is ordered by score, then id, both descending). */
function isAtOrBeforeCursor(entry: IndexEntry, cursor: ListCursor): boolean {
  const score = Number(entry.score);
  const cursorScore = Number(cursor.score);
  return score > cursorScore || (score === cursorScore && entry.taskId >= cursor.taskId);
}

/**
 * A task that alone exceeds the page's bytes: its oldest messages are left out until it fits
 * (the spec lets a server return fewer messages than historyLength), so paging still advances.
 */
function trimHistory(reply: Reply, excessBytes: number): Reply {
  const head = reply.slice(0, HISTORY_AT);
  const history = reply.slice(HISTORY_AT);
  let dropped = 0;
  while (history.length > 0 && dropped < excessBytes) dropped += textLength(history.shift() ?? null);
  return [...head, ...history];
}

async function execPipeline(pipeline: PipelineLike): Promise<unknown[]> {
  const results = (await pipeline.exec()) ?? [];
  return results.map(([error, value]) => {
    if (error !== null) throw error;
    return value;
  });
}

/** One task's commands per group, each task in its own slot: the replies flat, in order (see pipelineAcrossSlots). */
async function execAcrossSlots(redis: RedisClient, slotKeys: string[], add: (pipeline: PipelineLike, index: number) => void): Promise<unknown[]> {
  const groups = await pipelineAcrossSlots(redis, slotKeys, add);
  return groups.flat().map(([error, value]) => {
    if (error !== null) throw error;
    return value;
  });
}
