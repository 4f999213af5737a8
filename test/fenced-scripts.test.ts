// Invariant 2, table-driven (issue 12 point 4): every fenced write — each Lua script that checks
// the lease generation (every one through lua/include/fence.lua) — refuses a stale generation and
// changes nothing in Redis, while the same call with the current generation does change
// something (so the refusal is not a call that would do nothing anyway). The table must name
// every script in src/store/lua that carries the fence check: a new fenced script without an
// entry fails here.
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AssignmentStore } from '../src/store/assignments/assignment-store.ts';
import type { TaskStatus } from '../src/protocol/types.ts';
import { ownerKeyOf, StaleLeaseError, TaskStore, type Owner, type StepRecord } from '../src/store/task-store.ts';
import { scriptCaller } from '../src/store/script-call.ts';
import { defineScripts } from '../src/store/scripts.ts';
import { writeArtifactSegmentScript } from '../src/store/turn-scripts.ts';
import { writeSegmented } from '../src/store/turn-segments.ts';
import { SEGMENT_BYTES } from '../src/store/artifact-segments.ts';
import { createStoredTask, deletePrefix, REDIS_URL, ROOT, snapshotKeys, uniquePrefix } from './support/harness.ts';

const owner: Owner = { agent: 'default', tenant: '', subject: 'fence-table' };
const ownerKey = ownerKeyOf(owner);

let redis: Redis;
let prefix: string;
let store: TaskStore;
let assignments: AssignmentStore;

beforeAll(() => {
  prefix = uniquePrefix('fence-table');
  redis = new Redis(REDIS_URL);
  store = new TaskStore(redis, prefix, 600);
  assignments = new AssignmentStore(redis, store.keys.prefix, store.replay);
});

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await redis.quit();
});

interface Lease {
  taskId: string;
  contextId: string;
  /** The generation of a worker that was replaced. */
  stale: number;
  /** The generation of the worker holding the lease now. */
  current: number;
  workerId: string;
}

/** A running task whose first lease (worker A) was replaced by worker B's. */
async function replacedLease(): Promise<Lease> {
  const taskId = `fence-${randomBytes(6).toString('hex')}`;
  const contextId = `ctx-${taskId}`;
  await createStoredTask(store, { taskId, contextId, owner });
  const acquire = async (workerId: string) => {
    const lease = await store.turns.acquireLease({ taskId, ownerKey, contextId, workerId, leaseTtlMs: 60_000, now: new Date() });
    if (lease.kind !== 'acquired') throw new Error(`no lease: ${JSON.stringify(lease)}`);
    return lease.generation;
  };
  const stale = await acquire('worker-A');
  await redis.del(store.keys.task(taskId).lease);
  const current = await acquire('worker-B');
  return { taskId, contextId, stale, current, workerId: 'worker-B' };
}

const working = (): TaskStatus => ({ state: 'TASK_STATE_WORKING', timestamp: new Date().toISOString(), message: { messageId: `s-${randomBytes(4).toString('hex')}`, role: 'ROLE_AGENT', parts: [{ text: 'progress' }] } });
const step = (l: Lease, generation: number): StepRecord => ({ name: 'charge', turn: 1, idempotencyKey: `${l.taskId}:1:charge`, state: 'started', attempt: generation, startedAtMs: Date.now() });

/** What a refused call answers: an error or a stale result; anything else means it was accepted. */
type Refusal = (outcome: { error?: unknown; value?: unknown }) => boolean;
const throwsStale: Refusal = ({ error }) => error instanceof StaleLeaseError;
const answers =
  (expected: unknown): Refusal =>
  ({ error, value }) =>
    error === undefined && JSON.stringify(value) === JSON.stringify(expected);

interface FencedWrite {
  /** The Lua script (src/store/lua/<name>-<keys>.lua). */
  name: string;
  write: (l: Lease, generation: number) => Promise<unknown>;
  refused: Refusal;
}

const FENCED_WRITES: FencedWrite[] = [
  {
    name: 'appendEvents',
    write: (l, generation) => {
      const status = working();
      return store.turns.appendEvents({ taskId: l.taskId, ownerKey, contextId: l.contextId, generation, artifacts: undefined, status, events: [{ statusUpdate: { taskId: l.taskId, contextId: l.contextId, status } }], now: new Date() });
    },
    refused: throwsStale,
  },
  {
    name: 'finishTurn',
    write: (l, generation) =>
      store.turns.finishTurn({
        taskId: l.taskId,
        ownerKey,
        contextId: l.contextId,
        generation,
        status: { state: 'TASK_STATE_COMPLETED', timestamp: new Date().toISOString() },
        agentMessage: { messageId: `a-${randomBytes(4).toString('hex')}`, role: 'ROLE_AGENT', parts: [{ text: 'done' }], taskId: l.taskId, contextId: l.contextId },
        turnRecord: { turn: 1, inputMessageIds: [], acceptedAtMs: Date.now(), outcome: 'TASK_STATE_COMPLETED', finishedAtMs: Date.now() },
        artifacts: [{ artifactId: 'a', name: 'a', parts: [{ text: 'x' }] }],
        now: new Date(),
      }),
    refused: answers({ kind: 'stale' }),
  },
  {
    name: 'acknowledgeCancel',
    write: (l, generation) => store.turns.acknowledgeCancel({ taskId: l.taskId, contextId: l.contextId, generation, status: working(), now: new Date() }),
    refused: throwsStale,
  },
  { name: 'chargeBudget', write: (l, generation) => store.turns.chargeBudget(l.taskId, generation, 3), refused: throwsStale },
  {
    name: 'handBackTurn',
    write: (l, generation) => store.turns.handBackTurn(l.taskId, l.workerId, generation, { turn: 1, inputMessageIds: [], acceptedAtMs: Date.now(), handBacks: 1 }),
    refused: answers(false),
  },
  { name: 'startStep', write: (l, generation) => store.turns.startStep(l.taskId, generation, '1:charge', step(l, generation)), refused: throwsStale },
  { name: 'writeStep', write: (l, generation) => store.turns.writeStep(l.taskId, generation, '1:charge', { ...step(l, generation), state: 'done', value: 1 }), refused: throwsStale },
  {
    name: 'registerAssignments',
    write: (l, generation) =>
      assignments.register(l.taskId, generation, { name: 'd', count: 1, maxParallel: 1, roleLimits: {}, onFailure: 'continue' }, [
        { taskId: `${l.taskId}-child`, delegation: 'd', index: 0, role: 'worker', kind: 'work', state: 'queued', queuedAtMs: Date.now() },
      ]),
    refused: answers(false),
  },
  { name: 'suspendTurn', write: (l, generation) => assignments.suspend(l.taskId, l.contextId, generation, 'waiting', `q-${randomBytes(4).toString('hex')}`), refused: answers(false) },
  { name: 'writeTurnRecord', write: (l, generation) => store.turns.writeTurnRecord(l.taskId, generation, { turn: 1, inputMessageIds: [], acceptedAtMs: Date.now(), attempts: 9 }), refused: throwsStale },
  { name: 'writeAdapterState', write: (l, generation) => store.turns.writeAdapterState(l.taskId, generation, 'k', { v: 1 }), refused: throwsStale },
  {
    name: 'writeArtifactSegment',
    write: (l, generation) => scriptCaller(redis)(writeArtifactSegmentScript, store.keys.task(l.taskId), { generation, draft: '', index: 0, segment: '[]' }),
    refused: answers({ outcome: 'STALE' }),
  },
  {
    // Every step of a compaction in segments, the switch last (its own refusal: test/artifact-segments.test.ts).
    name: 'switchArtifactSegments',
    write: (l, generation) => writeSegmented(defineScripts(redis), store.keys.task(l.taskId), generation, JSON.stringify([{ artifactId: 'a', parts: [{ text: 'x'.repeat(SEGMENT_BYTES) }] }])),
    refused: answers('stale'),
  },
  {
    name: 'releaseLease',
    write: (l, generation) => store.turns.releaseLease(l.taskId, l.workerId, generation),
    refused: answers(undefined),
  },
];

const outcomeOf = async (run: () => Promise<unknown>): Promise<{ error?: unknown; value?: unknown }> => {
  try {
    return { value: await run() };
  } catch (error) {
    return { error };
  }
};

describe('every fenced write refuses a stale generation and changes nothing', () => {
  it('the table names every script that checks the lease generation', () => {
    const luaDir = join(ROOT, 'src', 'store', 'lua');
    const fenced = readdirSync(luaDir)
      .filter((file) => /^[A-Za-z]+-\d+\.lua$/.test(file))
      // The one fence check is lua/include/fence.lua; a script uses it with `@include fence`.
      .filter((file) => /@include fence\b/.test(readFileSync(join(luaDir, file), 'utf8')))
      .map((file) => file.replace(/-\d+\.lua$/, ''))
      .sort();
    expect(fenced.length).toBeGreaterThanOrEqual(9);
    // No script checks the generation a way of its own, and no store module runs a Lua string.
    const storeDir = join(ROOT, 'src', 'store');
    const inlineLua = readdirSync(storeDir).filter((file) => file.endsWith('.ts') && /\.eval\(/.test(readFileSync(join(storeDir, file), 'utf8')));
    expect(inlineLua).toEqual(['scripts.ts']);
    const inline = readdirSync(luaDir).filter((file) => file.endsWith('.lua') && /'leaseGeneration'\) ~= ARGV/.test(readFileSync(join(luaDir, file), 'utf8')));
    expect(inline).toEqual([]);
    expect(FENCED_WRITES.map((w) => w.name).sort()).toEqual(fenced);
  });

  it.each(FENCED_WRITES)('$name', async ({ write, refused }) => {
    const lease = await replacedLease();
    const before = await snapshotKeys(redis, prefix);
    const stale = await outcomeOf(() => write(lease, lease.stale));
    expect(refused(stale), `the stale call was accepted: ${JSON.stringify(stale.value ?? String(stale.error))}`).toBe(true);
    expect(await snapshotKeys(redis, prefix)).toEqual(before);
    // The same write from the current holder goes through and changes something.
    const current = await outcomeOf(() => write(lease, lease.current));
    expect(current.error, String(current.error)).toBeUndefined();
    expect(await snapshotKeys(redis, prefix)).not.toEqual(before);
  });
});
