// No script call copies a large task's whole artifacts (Redis runs one script at a time, so
// such a call holds every other caller): a snapshot past one segment is written one segment per
// call beside the live one and switched to in one small call, a run that takes a turn over reads
// large artifacts in slices, and readers see exactly the task a whole snapshot would give them,
// whatever step a compaction stopped at.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Command } from 'ioredis';
import type { RedisClient } from '../src/redis/connection.ts';
import type { Artifact, TaskStatus } from '../src/protocol/types.ts';
import { ownerKeyOf, TaskStore, type Owner } from '../src/store/task-store.ts';
import { TaskListing } from '../src/store/task-listing.ts';
import { TurnContext } from '../src/runtime/turn-context.ts';
import { scriptCaller } from '../src/store/script-call.ts';
import { switchArtifactSegmentsScript, writeArtifactSegmentScript } from '../src/store/turn-scripts.ts';
import { parseStoredArtifacts } from '../src/store/stored-artifacts.ts';
import { readArtifactsField, readLiveSegments, SEGMENT_BYTES, segmentsOf } from '../src/store/artifact-segments.ts';
import { deletePrefix, openTestRedis, uniquePrefix } from './support/harness.ts';
import { acquireTestLease, newStoredTask, type AcquiredLease } from './support/stored-turns.ts';

const owner: Owner = { agent: 'default', tenant: '', subject: 'artifact-segments' };
const ownerKey = ownerKeyOf(owner);
const LIMITS = { maxArtifactBytes: 64 * 1024 * 1024, maxTurnOutputBytes: 64 * 1024 * 1024, maxTaskOutputBytes: 64 * 1024 * 1024 };
/** What one script call may carry either way: a segment, with the call's other arguments or reply fields. */
const CALL_BOUND = SEGMENT_BYTES + 64 * 1024;

let redis: RedisClient;
let prefix: string;
let store: TaskStore;

/** The largest script call (arguments, reply) seen while counting, and the plain reads of segments. */
const seen = { counting: false, maxArgs: 0, maxReply: 0, maxArgsScript: '', maxReplyScript: '', scriptCalls: 0, segmentReads: 0 };
const sizeOf = (value: unknown): number => {
  if (typeof value === 'string') return Buffer.byteLength(value);
  if (Buffer.isBuffer(value)) return value.length;
  if (Array.isArray(value)) return value.reduce((sum: number, item: unknown) => sum + sizeOf(item), 0);
  return typeof value === 'number' ? String(value).length : 0;
};

beforeAll(() => {
  prefix = uniquePrefix('artifact-segments');
  redis = openTestRedis();
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = ((command: Command, ...rest: unknown[]) => {
    if (seen.counting) {
      const script = command.name === 'evalsha' || command.name === 'eval';
      const args = command.args.reduce((sum: number, a) => sum + sizeOf(a), 0);
      // The script's name is not on the wire: its first key tells whose call it was, its size what it cost.
      const label = `${command.name} ${String(command.args[2] ?? '')}`;
      if (script) {
        seen.scriptCalls += 1;
        if (args > seen.maxArgs) Object.assign(seen, { maxArgs: args, maxArgsScript: label });
        void command.promise.then(
          (reply: unknown) => {
            const bytes = sizeOf(reply);
            if (bytes > seen.maxReply) Object.assign(seen, { maxReply: bytes, maxReplyScript: label });
          },
          () => undefined,
        );
      } else if (command.name === 'hget' && String(command.args[1] ?? '').startsWith('artseg:')) {
        seen.segmentReads += 1;
      }
    }
    return (send as (c: Command, ...r: unknown[]) => unknown)(command, ...rest);
  }) as typeof redis.sendCommand;
  store = new TaskStore(redis, prefix, 600);
});

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await redis.quit();
});

type Acquired = AcquiredLease;

const lease = (taskId: string, contextId: string, workerId: string): Promise<Acquired> => acquireTestLease(store, owner, taskId, contextId, workerId);

const newTask = (): Promise<{ taskId: string; contextId: string }> => newStoredTask(store, owner, 'as');

function contextOf(taskId: string, contextId: string, acquired: Acquired): TurnContext {
  return new TurnContext({
    store,
    lease: { taskId, contextId, ownerKey, generation: acquired.generation },
    turn: acquired.turn,
    attempt: acquired.attempts,
    input: [],
    history: [],
    artifacts: acquired.artifacts,
    artifactBytes: acquired.artifactBytes,
    requestedSkill: undefined,
    signal: new AbortController().signal,
    turnRecord: { turn: acquired.turn, inputMessageIds: [], acceptedAtMs: Date.now() },
    adapterName: 'streamer',
    emitScope: `${acquired.turn}.${acquired.resumption}`,
    caller: { agent: 'default', tenant: '', principal: 'artifact-segments', scopes: [] },
    outputLimits: LIMITS,
  });
}

/** A chunk's text: its index, then filler with some multi-byte characters (a cut must not split one). */
const text = (i: number, bytes: number): string => `${String(i).padStart(6, '0')}:${'é€x'.repeat(Math.floor(bytes / 6))}`;

async function emit(ctx: TurnContext, from: number, to: number, bytes: number): Promise<void> {
  for (let i = from; i < to; i += 1) {
    // A second artifact replaced now and then: the merge's order and replacement show in every read.
    const chunk = i % 50 === 7 ? { artifactId: 'summary', parts: [{ text: `summary ${i}` }] } : { artifactId: 'log', name: 'log', parts: [{ text: text(i, bytes) }], append: i > 0 };
    await ctx.emitArtifact(chunk);
  }
}

async function finish(taskId: string, contextId: string, generation: number, artifacts: readonly Artifact[] | undefined, state: TaskStatus['state'] = 'TASK_STATE_COMPLETED') {
  return store.turns.finishTurn({
    taskId,
    ownerKey,
    contextId,
    generation,
    status: { state, timestamp: new Date().toISOString() },
    agentMessage: undefined,
    turnRecord: { turn: 1, inputMessageIds: [], acceptedAtMs: Date.now() },
    artifacts: artifacts === undefined ? undefined : [...artifacts],
    now: new Date(),
  });
}

const read = async (taskId: string) => {
  const task = await store.gateway.readTask(taskId, owner, 0);
  if (task === undefined) throw new Error('task missing');
  return task;
};

const liveGeneration = async (taskId: string): Promise<string | null> => redis.hget(store.keys.task(taskId).task, 'artifactsGen');
const segmentFields = async (taskId: string): Promise<string[]> => (await redis.hkeys(store.keys.task(taskId).task)).filter((field) => field.startsWith('artseg:'));

describe('segments of a cut snapshot', () => {
  it('are at most the bound each, never split a character, and join to the JSON', () => {
    const json = JSON.stringify([{ artifactId: 'a', parts: [{ text: 'é€😀x'.repeat(50_000) }] }]);
    const segments = segmentsOf(json, 1000);
    expect(segments.length).toBeGreaterThan(100);
    for (const segment of segments) {
      expect(Buffer.byteLength(segment)).toBeLessThanOrEqual(1000);
      expect(segment).not.toContain('\ufffd');
    }
    expect(segments.join('')).toBe(json);
    expect(segmentsOf('')).toEqual([]);
  });
});

describe('a task of 20 MB of artifacts', () => {
  it('no script call carries more than a segment, a re-run reads the artifacts in slices, and every read gives the whole task', async () => {
    const { taskId, contextId } = await newTask();
    const listing = new TaskListing(store, { maxPageBytes: 64 * 1024 * 1024, maxScannedEntries: 1_000 });
    const chunkBytes = 64 * 1024;
    const total = 320; // 320 chunks of 64 KiB: about 20 MB
    Object.assign(seen, { counting: true, maxArgs: 0, maxReply: 0, scriptCalls: 0, segmentReads: 0 });
    const first = await lease(taskId, contextId, 'w1');
    const lost = contextOf(taskId, contextId, first);
    await emit(lost, 0, 250, chunkBytes);
    // Compactions past one segment went in segments: the snapshot is a generation of them.
    expect(await liveGeneration(taskId)).not.toBeNull();
    expect(await redis.hexists(store.keys.task(taskId).task, 'artifacts')).toBe(0);
    const midway = (await read(taskId)).task.artifacts;
    expect(midway).toEqual(lost.artifacts);
    const page = await listing.list({ owner, contextId, state: undefined, statusTimestampAfterMs: undefined, pageSize: 10, cursor: undefined, historyLength: 0, includeArtifacts: true });
    expect(page.tasks.find((t) => t.id === taskId)?.artifacts).toEqual(lost.artifacts);

    // The worker is lost; another runs the turn again from the start and reads the artifacts in slices.
    await redis.del(store.keys.task(taskId).lease);
    const reads = seen.segmentReads;
    const second = await lease(taskId, contextId, 'w2');
    expect(seen.segmentReads - reads).toBeGreaterThan(20);
    expect(second.artifacts).toEqual(midway);
    expect(second.artifactBytes.snapshot).toBeGreaterThan(4 * SEGMENT_BYTES);
    const rerun = contextOf(taskId, contextId, second);
    await emit(rerun, 0, total, chunkBytes);
    const result = await finish(taskId, contextId, second.generation, rerun.artifacts);
    expect(result.kind).toBe('done');
    seen.counting = false;

    expect(seen.scriptCalls).toBeGreaterThan(total);
    expect(seen.maxArgs, `largest script arguments: ${seen.maxArgsScript}`).toBeLessThanOrEqual(CALL_BOUND);
    expect(seen.maxReply, `largest script reply: ${seen.maxReplyScript}`).toBeLessThanOrEqual(CALL_BOUND);

    const final = (await read(taskId)).task;
    expect(final.status.state).toBe('TASK_STATE_COMPLETED');
    expect(final.artifacts).toEqual(rerun.artifacts);
    const log = final.artifacts?.find((a) => a.artifactId === 'log');
    expect(log?.parts).toHaveLength(total - Math.ceil((total - 7) / 50));
    expect(log?.parts.map((p) => ('text' in p ? String(p.text).slice(0, 6) : '')).slice(0, 3)).toEqual(['000000', '000001', '000002']);
    expect(await redis.llen(store.keys.task(taskId).artifactChunks)).toBe(0);
    // Only the live generation's segments are left, and they expire with the finished task.
    const live = await liveGeneration(taskId);
    const fields = await segmentFields(taskId);
    expect(fields.length).toBeGreaterThan(60);
    expect(fields.every((field) => field.startsWith(`artseg:${live}:`))).toBe(true);
    expect(await redis.ttl(store.keys.task(taskId).task)).toBeGreaterThan(0);
    expect(await store.gateway.readLargeTask(taskId, owner, -1)).toEqual(await store.gateway.readTask(taskId, owner, -1));
  }, 120_000);
});

describe('a compaction stopped between its steps', () => {
  it('leaves readers the live task; a stale worker’s steps are refused; the next compaction drops the draft', async () => {
    const { taskId, contextId } = await newTask();
    const keys = store.keys.task(taskId);
    const call = scriptCaller(redis);
    const first = await lease(taskId, contextId, 'w1');
    const ctx = contextOf(taskId, contextId, first);
    // About 640 KB: in segments. readTask reads it with plain commands; readTaskWithin a higher bound joins the segments in Lua.
    await emit(ctx, 0, 40, 16 * 1024);
    const generation = await liveGeneration(taskId);
    expect(generation).not.toBeNull();
    const before = await read(taskId);
    expect(before.task.artifacts).toEqual(ctx.artifacts);
    const listed = async () =>
      (await new TaskListing(store, { maxPageBytes: 64 * 1024 * 1024, maxScannedEntries: 1_000 }).list({ owner, contextId, state: undefined, statusTimestampAfterMs: undefined, pageSize: 10, cursor: undefined, historyLength: 0, includeArtifacts: true })).tasks.find((t) => t.id === taskId)?.artifacts;

    // A compaction of other artifacts writes two of its three segments, then its worker dies.
    const other = segmentsOf(JSON.stringify([{ artifactId: 'other', parts: [{ text: 'y'.repeat(SEGMENT_BYTES * 2) }] }]));
    expect(other).toHaveLength(3);
    const started = await call(writeArtifactSegmentScript, keys, { generation: first.generation, draft: '', index: 0, segment: other[0] as string });
    if (started.outcome !== 'OK') throw new Error(started.outcome);
    expect(await call(writeArtifactSegmentScript, keys, { generation: first.generation, draft: started.draft, index: 1, segment: other[1] as string })).toEqual({ outcome: 'OK', draft: started.draft });
    // A segment out of order is refused; a switch of an incomplete draft changes nothing.
    expect(await call(writeArtifactSegmentScript, keys, { generation: first.generation, draft: started.draft, index: 3, segment: 'x' })).toEqual({ outcome: 'GAP' });
    expect(await call(switchArtifactSegmentsScript, keys, { generation: first.generation, draft: started.draft, segments: 3, bytes: 1 })).toBe('INCOMPLETE');

    // Every reader still gives the live task.
    expect(await read(taskId)).toEqual(before);
    expect(await store.gateway.readLargeTask(taskId, owner, 0)).toEqual(before);
    expect(await store.gateway.readTaskWithin(taskId, owner, 0, 10 * 1024 * 1024)).toEqual(before);
    expect(await listed()).toEqual(ctx.artifacts);
    await redis.del(keys.lease);
    const second = await lease(taskId, contextId, 'w2');
    expect(second.artifacts).toEqual(ctx.artifacts);

    // The lost worker's late steps are fenced off.
    expect(await call(writeArtifactSegmentScript, keys, { generation: first.generation, draft: started.draft, index: 2, segment: other[2] as string })).toEqual({ outcome: 'STALE' });
    expect(await call(switchArtifactSegmentsScript, keys, { generation: first.generation, draft: started.draft, segments: 3, bytes: Buffer.byteLength(other.join('')) })).toBe('STALE');
    expect(await read(taskId)).toEqual(before);

    // The run that took over compacts: a new generation, and the half-written draft is gone.
    const rerun = contextOf(taskId, contextId, second);
    await emit(rerun, 0, 80, 16 * 1024);
    const next = await liveGeneration(taskId);
    expect(Number(next)).toBeGreaterThan(Number(started.draft));
    // A reader whose transaction saw the old generation finds its segments gone, and reads again.
    const oldLive = [generation, '1'];
    expect(await readLiveSegments(redis, keys, oldLive)).toBeUndefined();
    const current = await readLiveSegments(redis, keys, [next, await redis.hget(keys.task, 'artifactsSegments')]);
    expect(Array.isArray(JSON.parse(current ?? 'null'))).toBe(true);
    expect(parseStoredArtifacts(await readArtifactsField(redis, keys)).artifacts).toEqual(rerun.artifacts);
    expect((await segmentFields(taskId)).filter((field) => field.startsWith(`artseg:${started.draft}:`))).toEqual([]);
    expect((await read(taskId)).task.artifacts).toEqual(rerun.artifacts);
    expect(await listed()).toEqual(rerun.artifacts);
    await finish(taskId, contextId, second.generation, rerun.artifacts);
    expect((await read(taskId)).task.artifacts).toEqual(rerun.artifacts);
  }, 60_000);

  it('a turn that ends with large artifacts and no pending chunk writes them in segments all the same', async () => {
    const { taskId, contextId } = await newTask();
    const acquired = await lease(taskId, contextId, 'w1');
    const artifacts: Artifact[] = [{ artifactId: 'big', parts: [{ text: text(1, 3 * SEGMENT_BYTES) }] }];
    expect((await finish(taskId, contextId, acquired.generation, artifacts)).kind).toBe('done');
    expect(await liveGeneration(taskId)).not.toBeNull();
    expect(await redis.hget(store.keys.task(taskId).task, 'artifactChunkBytes')).toBeNull();
    expect((await read(taskId)).task.artifacts).toEqual(artifacts);
  });

  it('a snapshot that shrinks back under one segment is written whole again, and its segments go', async () => {
    const { taskId, contextId } = await newTask();
    const acquired = await lease(taskId, contextId, 'w1');
    const ctx = contextOf(taskId, contextId, acquired);
    await emit(ctx, 0, 40, 16 * 1024);
    expect(await liveGeneration(taskId)).not.toBeNull();
    // A replacing chunk: the artifacts are small again, and the turn ends with them.
    await ctx.emitArtifact({ artifactId: 'log', parts: [{ text: 'short' }] });
    await finish(taskId, contextId, acquired.generation, ctx.artifacts);
    expect(await liveGeneration(taskId)).toBeNull();
    expect(await segmentFields(taskId)).toEqual([]);
    expect((await read(taskId)).task.artifacts).toEqual(ctx.artifacts);
    expect(ctx.artifacts.find((a) => a.artifactId === 'log')?.parts).toEqual([{ text: 'short' }]);
  });
});

describe('a task of large artifacts that waits for input', () => {
  it('is resumed by an accept that takes the turn\'s lease: its reply stays within a segment, the artifacts are read in slices', async () => {
    const { taskId, contextId } = await newTask();
    const first = await lease(taskId, contextId, 'w1');
    const asked = contextOf(taskId, contextId, first);
    await emit(asked, 0, 40, 64 * 1024);
    expect((await finish(taskId, contextId, first.generation, asked.artifacts, 'TASK_STATE_INPUT_REQUIRED')).kind).toBe('done');
    Object.assign(seen, { counting: true, maxArgs: 0, maxReply: 0, scriptCalls: 0, segmentReads: 0 });
    const accepted = await store.gateway.acceptMessage({
      taskId,
      owner,
      contextId: undefined,
      message: { messageId: `answer-${taskId}`, role: 'ROLE_USER', parts: [{ text: 'go on' }], taskId },
      maxActiveTasks: 0,
      inputPolicy: 'enqueue',
      takeLease: { workerId: 'w2', leaseTtlMs: 30_000, turnDeadlineMs: 0, maxTurnAttempts: 0 },
      now: new Date(),
    });
    seen.counting = false;
    if (accepted.kind !== 'resumed' || accepted.lease?.kind !== 'acquired') throw new Error(`not resumed under a lease: ${JSON.stringify(accepted).slice(0, 200)}`);
    expect(accepted.lease).toMatchObject({ turn: 2, attempts: 1, status: { state: 'TASK_STATE_WORKING' } });
    expect(accepted.lease.artifacts).toEqual(asked.artifacts);
    expect(accepted.lease.artifactBytes.snapshot + accepted.lease.artifactBytes.pending).toBeGreaterThan(SEGMENT_BYTES);
    expect(seen.segmentReads).toBeGreaterThan(3);
    expect(seen.maxReply, `largest script reply: ${seen.maxReplyScript}`).toBeLessThanOrEqual(CALL_BOUND);
    expect(await redis.get(store.keys.task(taskId).lease)).toBe('w2');
  }, 60_000);
});
