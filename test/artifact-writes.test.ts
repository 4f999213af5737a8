// What storing a turn's artifacts costs is linear in the bytes the turn produces: a chunk goes
// to the task's pending chunk list, and the whole artifacts snapshot is re-written only now and
// then (geometrically) and at the turn's end. Every read merges snapshot and pending chunks, so
// GetTask, ListTasks, a resumed subscription, a re-run after a lost worker and a canceled turn
// see exactly the artifacts of the events stored so far.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Command } from 'ioredis';
import type { RedisClient } from '../src/redis/connection.ts';
import type { Artifact, StreamResponse, TaskStatus } from '../src/protocol/types.ts';
import { ownerKeyOf, TaskStore, type Owner } from '../src/store/task-store.ts';
import { TaskListing } from '../src/store/task-listing.ts';
import { applyArtifactChunk, mergeArtifactChunks, parseStoredArtifacts, storedArtifactsField } from '../src/store/stored-artifacts.ts';
import { TurnContext } from '../src/runtime/turn-context.ts';
import { withMergedArtifacts } from '../src/store/push/push-store.ts';
import { Redis } from 'ioredis';
import { replayBoundOf } from '../src/store/replay-bound.ts';
import { deletePrefix, openTestRedis, uniquePrefix } from './support/harness.ts';
import { acquireTestLease, newStoredTask, type AcquiredLease } from './support/stored-turns.ts';
import { startOwnRedis, type OwnRedis } from './support/redis-server.ts';
import { openMonitor } from './support/monitor.ts';

const owner: Owner = { agent: 'default', tenant: '', subject: 'artifact-writes' };
const ownerKey = ownerKeyOf(owner);
/** Generous output bounds: this suite is about what storing costs, not what it may store. */
const LIMITS = { maxArtifactBytes: 64 * 1024 * 1024, maxTurnOutputBytes: 64 * 1024 * 1024, maxTaskOutputBytes: 64 * 1024 * 1024 };

let redis: RedisClient;
let prefix: string;
let store: TaskStore;
/** Argument bytes of every command sent on the store's connection while `counting`. */
let sentBytes = 0;
let counting = false;

beforeAll(() => {
  prefix = uniquePrefix('artifact-writes');
  redis = openTestRedis();
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = ((command: Command, ...rest: unknown[]) => {
    if (counting) for (const arg of command.args) sentBytes += typeof arg === 'string' ? Buffer.byteLength(arg) : Buffer.isBuffer(arg) ? arg.length : String(arg).length;
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

const newTask = (): Promise<{ taskId: string; contextId: string }> => newStoredTask(store, owner, 'aw');

/** The adapter's context of a run holding `acquired`, built as the turn runner builds it. */
function contextOf(taskId: string, contextId: string, acquired: Acquired, signal = new AbortController().signal): TurnContext {
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
    signal,
    turnRecord: { turn: acquired.turn, inputMessageIds: [], acceptedAtMs: Date.now() },
    adapterName: 'streamer',
    emitScope: `${acquired.turn}.${acquired.resumption}`,
    caller: { agent: 'default', tenant: '', principal: 'artifact-writes', scopes: [] },
    outputLimits: LIMITS,
  });
}

const text = (i: number, bytes: number): string => `${String(i).padStart(6, '0')}:${'x'.repeat(Math.max(0, bytes - 7))}`;

async function finish(taskId: string, contextId: string, generation: number, artifacts: Artifact[] | undefined, state: TaskStatus['state'] = 'TASK_STATE_COMPLETED') {
  return store.turns.finishTurn({
    taskId,
    ownerKey,
    contextId,
    generation,
    status: { state, timestamp: new Date().toISOString() },
    agentMessage: undefined,
    turnRecord: { turn: 1, inputMessageIds: [], acceptedAtMs: Date.now() },
    artifacts,
    now: new Date(),
  });
}

const read = async (taskId: string) => {
  const task = await store.gateway.readTask(taskId, owner, 0);
  if (task === undefined) throw new Error('task missing');
  return task;
};

/** The events after `afterId` (exclusive), as a resumed subscription gets them. */
async function eventsAfter(taskId: string, afterId: string): Promise<StreamResponse[]> {
  const entries = await redis.xrange(store.keys.task(taskId).events, afterId === '' ? '-' : `(${afterId}`, '+');
  return entries.map(([, fields]) => JSON.parse(fields[1] as string) as StreamResponse);
}

/** Applies the artifact updates of `events` the way a client does. */
function applyEvents(artifacts: Artifact[], events: readonly StreamResponse[]): Artifact[] {
  const result = structuredClone(artifacts);
  for (const event of events) if ('artifactUpdate' in event) applyArtifactChunk(result, { ...event.artifactUpdate.artifact, append: event.artifactUpdate.append === true });
  return result;
}

const pendingChunks = (taskId: string) => redis.llen(store.keys.task(taskId).artifactChunks);

describe('what storing a turn’s artifacts costs', () => {
  const N = 64;
  const S = 16 * 1024;

  it('N appended chunks of S bytes to one artifact send O(N·S) bytes to Redis, not O(N²·S)', async () => {
    const { taskId, contextId } = await newTask();
    const acquired = await lease(taskId, contextId, 'w1');
    const ctx = contextOf(taskId, contextId, acquired);
    sentBytes = 0;
    counting = true;
    for (let i = 0; i < N; i += 1) await ctx.emitArtifact({ artifactId: 'report', name: 'report', parts: [{ text: text(i, S) }], append: i > 0, lastChunk: i === N - 1 });
    await finish(taskId, contextId, acquired.generation, acquired.artifacts);
    counting = false;
    // The events themselves (N·S), the pending chunks (N·S), snapshots at most twice the output
    // and the final one: about 5·N·S. A snapshot per chunk would be about N²·S/2 = 32·N·S here.
    expect(sentBytes).toBeLessThan(6 * N * S);
    const task = (await read(taskId)).task;
    expect(task.artifacts).toHaveLength(1);
    expect(task.artifacts?.[0]?.parts.map((p) => ('text' in p ? p.text : ''))).toEqual(Array.from({ length: N }, (_, i) => text(i, S)));
    expect(await pendingChunks(taskId)).toBe(0);
  });

  it('N new artifacts of S bytes each send O(N·S) bytes to Redis', async () => {
    const { taskId, contextId } = await newTask();
    const acquired = await lease(taskId, contextId, 'w1');
    const ctx = contextOf(taskId, contextId, acquired);
    sentBytes = 0;
    counting = true;
    for (let i = 0; i < N; i += 1) await ctx.emitArtifact({ artifactId: `a${i}`, parts: [{ text: text(i, S) }], lastChunk: true });
    await finish(taskId, contextId, acquired.generation, acquired.artifacts);
    counting = false;
    expect(sentBytes).toBeLessThan(6 * N * S);
    const task = (await read(taskId)).task;
    expect(task.artifacts?.map((a) => a.artifactId)).toEqual(Array.from({ length: N }, (_, i) => `a${i}`));
  });
});

describe('reads while chunks are pending', () => {
  it('GetTask and ListTasks show exactly the artifacts of the events stored so far, before and after compactions', async () => {
    const { taskId, contextId } = await newTask();
    const acquired = await lease(taskId, contextId, 'w1');
    const ctx = contextOf(taskId, contextId, acquired);
    const listing = new TaskListing(store, { maxPageBytes: 64 * 1024 * 1024, maxScannedEntries: 1_000 });
    let sawPending = false;
    let sawCompaction = false;
    let previousPending = 0;
    for (let i = 0; i < 40; i += 1) {
      // Two artifacts: one appended to, one replaced now and then; metadata of a later chunk wins.
      const chunk =
        i % 7 === 3
          ? { artifactId: 'summary', name: 'summary', parts: [{ text: `summary ${i}` }], metadata: { version: i } }
          : { artifactId: 'log', name: 'log', parts: [{ text: text(i, 8 * 1024) }], append: i > 0 };
      await ctx.emitArtifact(chunk);
      const pending = await pendingChunks(taskId);
      if (pending > 0) sawPending = true;
      if (pending < previousPending) sawCompaction = true;
      previousPending = pending;
      const snapshot = await read(taskId);
      expect(snapshot.task.artifacts).toEqual(ctx.artifacts);
      if (i % 10 === 9) {
        const page = await listing.list({ owner, contextId, state: undefined, statusTimestampAfterMs: undefined, pageSize: 10, cursor: undefined, historyLength: 0, includeArtifacts: true });
        expect(page.tasks.find((t) => t.id === taskId)?.artifacts).toEqual(ctx.artifacts);
      }
    }
    expect(sawPending).toBe(true);
    expect(sawCompaction).toBe(true);
    await finish(taskId, contextId, acquired.generation, acquired.artifacts);
    expect(await pendingChunks(taskId)).toBe(0);
    expect((await read(taskId)).task.artifacts).toEqual(ctx.artifacts);
  });

  it('a subscription resumed from a mid-turn snapshot ends with exactly the artifacts the turn stored', async () => {
    const { taskId, contextId } = await newTask();
    const acquired = await lease(taskId, contextId, 'w1');
    const ctx = contextOf(taskId, contextId, acquired);
    const snapshots: Awaited<ReturnType<typeof read>>[] = [];
    for (let i = 0; i < 30; i += 1) {
      await ctx.emitArtifact({ artifactId: 'report', parts: [{ text: text(i, 6 * 1024) }], append: i > 0 });
      if (i % 6 === 2) snapshots.push(await read(taskId));
    }
    await finish(taskId, contextId, acquired.generation, acquired.artifacts);
    const final = (await read(taskId)).task.artifacts;
    for (const snapshot of snapshots) {
      expect(applyEvents(snapshot.task.artifacts ?? [], await eventsAfter(taskId, snapshot.lastEventId))).toEqual(final);
    }
  });
});

describe('what a read weighs before it is built', () => {
  it('the task hash keeps the pending chunks\' bytes; a reader bound below the artifacts gets LARGE, not the task; compaction and finish clear the count', async () => {
    const { taskId, contextId } = await newTask();
    const acquired = await lease(taskId, contextId, 'w1');
    const ctx = contextOf(taskId, contextId, acquired);
    for (let i = 0; i < 8; i += 1) await ctx.emitArtifact({ artifactId: 'report', parts: [{ text: text(i, 4096) }], append: i > 0 });
    const keys = store.keys.task(taskId);
    const chunks = await redis.lrange(keys.artifactChunks, 0, -1);
    expect(chunks).toHaveLength(8);
    const pending = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
    expect(Number(await redis.hget(keys.task, 'artifactChunkBytes'))).toBe(pending);
    const snapshotBytes = await redis.hstrlen(keys.task, 'artifacts');
    expect(await store.gateway.readTaskWithin(taskId, owner, 0, 1_000)).toEqual({ large: true, artifactBytes: snapshotBytes + pending });
    // Under the bound: the same read as without one.
    expect(await store.gateway.readTaskWithin(taskId, owner, 0, 10 * 1024 * 1024)).toEqual(await store.gateway.readTask(taskId, owner, 0));
    // The plain-command read of a LARGE task answers exactly what the script builds, with and without history.
    expect(await store.gateway.readLargeTask(taskId, owner, 0)).toEqual(await store.gateway.readTask(taskId, owner, 0));
    expect(await store.gateway.readLargeTask(taskId, owner, undefined)).toEqual(await store.gateway.readTask(taskId, owner, undefined));
    expect(await store.gateway.readLargeTask(taskId, { ...owner, subject: 'someone-else' }, 0)).toBeUndefined();
    // Another owner's task says nothing of its weight.
    expect(await store.gateway.readTaskWithin(taskId, { ...owner, subject: 'someone-else' }, 0, 1_000)).toBeUndefined();
    // A compaction (a chunk past the pending bytes' threshold) takes the chunks, and their count, with it.
    await ctx.emitArtifact({ artifactId: 'report', parts: [{ text: text(8, 64 * 1024) }], append: true });
    expect(await pendingChunks(taskId)).toBe(0);
    expect(await redis.hget(keys.task, 'artifactChunkBytes')).toBeNull();
    await ctx.emitArtifact({ artifactId: 'report', parts: [{ text: text(9, 1024) }], append: true });
    expect(Number(await redis.hget(keys.task, 'artifactChunkBytes'))).toBeGreaterThan(1024);
    await finish(taskId, contextId, acquired.generation, acquired.artifacts);
    expect(await redis.hget(keys.task, 'artifactChunkBytes')).toBeNull();
    const finalBytes = await redis.hstrlen(keys.task, 'artifacts');
    expect(finalBytes).toBeGreaterThan(8 * 4096 + 64 * 1024);
    expect(await store.gateway.readTaskWithin(taskId, owner, 0, 1_000)).toEqual({ large: true, artifactBytes: finalBytes });
    expect(await store.gateway.readLargeTask(taskId, owner, -1)).toEqual(await store.gateway.readTask(taskId, owner, -1));
  });
});

describe('runs of one turn', () => {
  it('a re-run after a lost worker repeats the stored prefix and ends with the artifacts of one run', async () => {
    const emit = async (ctx: TurnContext, from: number, to: number) => {
      for (let i = from; i < to; i += 1) await ctx.emitArtifact({ artifactId: 'report', parts: [{ text: text(i, 10 * 1024) }], append: i > 0 });
    };
    // The reference: one run that is never interrupted.
    const reference = await newTask();
    const once = await lease(reference.taskId, reference.contextId, 'w1');
    await emit(contextOf(reference.taskId, reference.contextId, once), 0, 24);
    await finish(reference.taskId, reference.contextId, once.generation, once.artifacts);
    const expected = (await read(reference.taskId)).task.artifacts;

    const { taskId, contextId } = await newTask();
    const first = await lease(taskId, contextId, 'w1');
    // Lost while chunks are pending beside the snapshot (after at least one compaction).
    const lost = contextOf(taskId, contextId, first);
    let cut = 0;
    while (cut < 12 || (await pendingChunks(taskId)) === 0) {
      await emit(lost, cut, cut + 1);
      cut += 1;
    }
    expect(cut).toBeLessThan(24);
    // The worker is lost: its lease lapses and another worker runs the turn again from the start.
    await redis.del(store.keys.task(taskId).lease);
    const second = await lease(taskId, contextId, 'w2');
    expect(second.artifacts).toEqual((await read(taskId)).task.artifacts);
    const rerun = contextOf(taskId, contextId, second);
    await emit(rerun, 0, 24);
    await finish(taskId, contextId, second.generation, second.artifacts);
    expect((await read(taskId)).task.artifacts).toEqual(expected);
    // Each chunk was stored once: the re-run's repeats appended nothing.
    const updates = (await eventsAfter(taskId, '')).filter((e) => 'artifactUpdate' in e);
    expect(updates).toHaveLength(24);
    // The lost worker's late write is fenced off and changes nothing.
    const stale = contextOf(taskId, contextId, first);
    await expect(stale.emitArtifact({ artifactId: 'report', parts: [{ text: 'late' }], append: true })).rejects.toThrow();
    expect((await read(taskId)).task.artifacts).toEqual(expected);
  });

  it('a re-run that diverges replaces what the lost run appended with its own parts', async () => {
    const { taskId, contextId } = await newTask();
    const first = await lease(taskId, contextId, 'w1');
    const lost = contextOf(taskId, contextId, first);
    for (let i = 0; i < 10; i += 1) await lost.emitArtifact({ artifactId: 'report', parts: [{ text: `old ${i}` }], append: i > 0 });
    await redis.del(store.keys.task(taskId).lease);
    const second = await lease(taskId, contextId, 'w2');
    const rerun = contextOf(taskId, contextId, second);
    for (let i = 0; i < 4; i += 1) await rerun.emitArtifact({ artifactId: 'report', parts: [{ text: `old ${i}` }], append: i > 0 });
    for (let i = 4; i < 8; i += 1) await rerun.emitArtifact({ artifactId: 'report', parts: [{ text: `new ${i}` }], append: true });
    const parts = ['old 0', 'old 1', 'old 2', 'old 3', 'new 4', 'new 5', 'new 6', 'new 7'];
    expect((await read(taskId)).task.artifacts?.[0]?.parts).toEqual(parts.map((t) => ({ text: t })));
    expect(rerun.artifacts[0]?.parts).toEqual(parts.map((t) => ({ text: t })));
  });

  it('a turn canceled mid-stream ends with the artifacts stored until then, and no pending chunks', async () => {
    const { taskId, contextId } = await newTask();
    const acquired = await lease(taskId, contextId, 'w1');
    const ctx = contextOf(taskId, contextId, acquired);
    for (let i = 0; i < 12; i += 1) await ctx.emitArtifact({ artifactId: 'report', parts: [{ text: text(i, 4 * 1024) }], append: i > 0 });
    expect(await pendingChunks(taskId)).toBeGreaterThan(0);
    expect((await store.gateway.cancelTask(taskId, owner, new Date())).kind).toBe('requested');
    await finish(taskId, contextId, acquired.generation, acquired.artifacts, 'TASK_STATE_CANCELED');
    const task = (await read(taskId)).task;
    expect(task.status.state).toBe('TASK_STATE_CANCELED');
    expect(task.artifacts).toEqual(ctx.artifacts);
    expect(task.artifacts?.[0]?.parts).toHaveLength(12);
    expect(await pendingChunks(taskId)).toBe(0);
  });

  it('a turn failed without re-writing its artifacts keeps the pending chunks readable, and they expire with the task', async () => {
    const { taskId, contextId } = await newTask();
    const acquired = await lease(taskId, contextId, 'w1');
    const ctx = contextOf(taskId, contextId, acquired);
    for (let i = 0; i < 5; i += 1) await ctx.emitArtifact({ artifactId: 'report', parts: [{ text: `part ${i}` }], append: i > 0 });
    await finish(taskId, contextId, acquired.generation, undefined, 'TASK_STATE_FAILED');
    expect((await read(taskId)).task.artifacts).toEqual(ctx.artifacts);
    const k = store.keys.task(taskId);
    expect(await redis.llen(k.artifactChunks)).toBe(5);
    const ttl = await redis.ttl(k.artifactChunks);
    expect(ttl).toBeGreaterThan(0);
    expect(Math.abs(ttl - (await redis.ttl(k.task)))).toBeLessThanOrEqual(1);
  });
});

describe('the stored artifacts field', () => {
  it('merges pending chunks with A2A append semantics, whether a script or a pipeline built it', () => {
    const snapshot: Artifact[] = [{ artifactId: 'a', name: 'first', parts: [{ text: '1' }] }];
    const chunks = [
      { append: true, artifact: { artifactId: 'a', name: 'first', parts: [{ text: '2' }] } },
      { append: false, artifact: { artifactId: 'b', parts: [{ text: 'b1' }] } },
      { append: false, artifact: { artifactId: 'a', name: 'renamed', parts: [{ text: '3' }] } },
      { append: true, artifact: { artifactId: 'c', parts: [{ text: 'c1' }] } },
    ];
    const expected: Artifact[] = [
      { artifactId: 'a', name: 'renamed', parts: [{ text: '3' }] },
      { artifactId: 'b', parts: [{ text: 'b1' }] },
      { artifactId: 'c', parts: [{ text: 'c1' }] },
    ];
    expect(mergeArtifactChunks(snapshot, chunks)).toEqual(expected);
    const field = storedArtifactsField(JSON.stringify(snapshot), chunks.map((c) => JSON.stringify(c)));
    expect(parseStoredArtifacts(field).artifacts).toEqual(expected);
    expect(parseStoredArtifacts(JSON.stringify(snapshot)).artifacts).toEqual(snapshot);
    expect(parseStoredArtifacts('').artifacts).toEqual([]);
    expect(snapshot).toEqual([{ artifactId: 'a', name: 'first', parts: [{ text: '1' }] }]);
  });

  it('a push Task snapshot built while chunks were pending reaches the receiver merged; other events pass untouched', () => {
    const snapshot: Artifact[] = [{ artifactId: 'a', parts: [{ text: '1' }] }];
    const field = storedArtifactsField(JSON.stringify(snapshot), [JSON.stringify({ append: true, artifact: { artifactId: 'a', parts: [{ text: '2' }] } })]);
    const pushed = `{"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"},"artifacts":${field},"metadata":{}}}`;
    expect(JSON.parse(withMergedArtifacts(pushed))).toEqual({
      task: { id: 't', contextId: 'c', status: { state: 'TASK_STATE_WORKING' }, artifacts: [{ artifactId: 'a', parts: [{ text: '1' }, { text: '2' }] }], metadata: {} },
    });
    const plain = '{"artifactUpdate":{"taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[{"text":"x"}]}}}';
    expect(withMergedArtifacts(plain)).toBe(plain);
  });
});

describe('the replay byte bound under large events', () => {
  let own: OwnRedis;
  let plain: Redis;
  let monitor: Redis;

  beforeAll(async () => {
    // Its own Redis: MONITOR shows every command, including those a script runs.
    own = await startOwnRedis();
    plain = new Redis(own.url);
    monitor = await openMonitor(own.url);
  });

  afterAll(async () => {
    monitor?.disconnect();
    plain?.disconnect();
    await own?.stop();
  });

  it('reads only about the events it drops, not a batch of sixteen per append', async () => {
    const narrow = new TaskStore(plain, uniquePrefix('artifact-trim'), 600, replayBoundOf({ maxEvents: 0, maxAgeSeconds: 0, pushHoldMaxEvents: 0, maxBytes: 128 * 1024, pushHoldMaxBytes: 0 }));
    const { taskId, contextId } = await newStoredTask(narrow, owner, 'aw');
    const acquired = await acquireTestLease(narrow, owner, taskId, contextId, 'w1');
    const eventsKey = narrow.keys.task(taskId).events;
    // Events read by the byte cut: XRANGE <start> + COUNT n on the task's stream (the only
    // such read with the count and age bounds off).
    let requested = 0;
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args[0]?.toLowerCase() === 'xrange' && args[1] === eventsKey && args[3] === '+' && args[4]?.toLowerCase() === 'count') requested += Number(args[5]);
    });
    const ctx = new TurnContext({
      store: narrow,
      lease: { taskId, contextId, ownerKey, generation: acquired.generation },
      turn: acquired.turn,
      attempt: acquired.attempts,
      input: [],
      history: [],
      artifacts: acquired.artifacts,
      requestedSkill: undefined,
      signal: new AbortController().signal,
      turnRecord: { turn: 1, inputMessageIds: [], acceptedAtMs: Date.now() },
      adapterName: 'streamer',
      emitScope: '1.0',
      caller: { agent: 'default', tenant: '', principal: 'artifact-writes', scopes: [] },
      outputLimits: LIMITS,
    });
    const appends = 40;
    for (let i = 0; i < appends; i += 1) await ctx.emitArtifact({ artifactId: 'report', parts: [{ text: text(i, 16 * 1024) }], append: i > 0 });
    await plain.ping();
    // About 32 appends go past the bound, each dropping about one event.
    expect(Number(await plain.hget(narrow.keys.task(taskId).task, 'eventsTrimmed'))).toBeGreaterThan(25);
    expect(requested).toBeLessThan(3 * appends);
  });
});
