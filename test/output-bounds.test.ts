// What a turn may store (limits.maxArtifactBytes, maxTurnOutputBytes, maxTaskOutputBytes) is
// counted by the appendEvents script itself: an event past a bound is refused with an
// OutputLimitError naming the setting, and nothing of it is stored (no event, no artifact
// change, no count). The counts are the task's, so a second worker (another attempt) shares them.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedisClient } from '../src/redis/connection.ts';
import { OutputLimitError, type OutputLimits } from '../src/limits/output-limits.ts';
import { onLimitRefusal, type LimitName } from '../src/limits/limit-refusal.ts';
import type { Artifact, StreamResponse, TaskStatus } from '../src/protocol/types.ts';
import { ownerKeyOf, TaskStore, type Owner } from '../src/store/task-store.ts';
import { createStoredTask, deletePrefix, openTestRedis, uniquePrefix } from './support/harness.ts';

const owner: Owner = { agent: 'default', tenant: '', subject: 'output-bounds' };
const ownerKey = ownerKeyOf(owner);
const LIMITS: OutputLimits = { maxArtifactBytes: 4_000, maxTurnOutputBytes: 10_000, maxTaskOutputBytes: 16_000 };

let redis: RedisClient;
let prefix: string;
let store: TaskStore;

beforeAll(() => {
  prefix = uniquePrefix('output-bounds');
  redis = openTestRedis();
  store = new TaskStore(redis, prefix, 600);
});

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await redis.quit();
});

interface Running {
  taskId: string;
  contextId: string;
  generation: number;
}

async function runningTask(workerId = 'w1'): Promise<Running> {
  const taskId = `out-${randomBytes(6).toString('hex')}`;
  const contextId = `ctx-${taskId}`;
  await createStoredTask(store, { taskId, contextId, owner });
  return { taskId, contextId, generation: await lease(taskId, contextId, workerId) };
}

async function lease(taskId: string, contextId: string, workerId: string): Promise<number> {
  const acquired = await store.turns.acquireLease({ taskId, ownerKey, contextId, workerId, leaseTtlMs: 60_000, now: new Date() });
  if (acquired.kind !== 'acquired') throw new Error(`no lease: ${JSON.stringify(acquired)}`);
  return acquired.generation;
}

let sequence = 0;

/** One artifact chunk of `bytes` characters of text, stored as TurnContext stores it. */
function chunk(task: Running, artifactId: string, bytes: number, append: boolean, artifacts: Artifact[]) {
  const parts = [{ text: 'x'.repeat(bytes) }];
  const artifact: Artifact = { artifactId, parts };
  const event: StreamResponse = { artifactUpdate: { taskId: task.taskId, contextId: task.contextId, artifact, append, lastChunk: false } };
  sequence += 1;
  return store.turns.appendEvents({
    taskId: task.taskId,
    ownerKey,
    contextId: task.contextId,
    generation: task.generation,
    artifacts,
    status: undefined,
    events: [event],
    emit: { scope: '1.0', sequence, digest: `d${sequence}`, pastPrefix: true },
    outputLimits: LIMITS,
    artifactChunk: { artifactId, append },
    now: new Date(),
  });
}

function status(task: Running, bytes: number) {
  const value: TaskStatus = { state: 'TASK_STATE_WORKING', timestamp: new Date().toISOString(), message: { messageId: `m${sequence}`, role: 'ROLE_AGENT', parts: [{ text: 'y'.repeat(bytes) }] } };
  sequence += 1;
  return store.turns.appendEvents({
    taskId: task.taskId,
    ownerKey,
    contextId: task.contextId,
    generation: task.generation,
    artifacts: undefined,
    status: value,
    events: [{ statusUpdate: { taskId: task.taskId, contextId: task.contextId, status: value } }],
    emit: { scope: '1.0', sequence, digest: `d${sequence}`, pastPrefix: true },
    outputLimits: LIMITS,
    now: new Date(),
  });
}

const eventCount = (task: Running): Promise<number> => redis.xlen(`${prefix}:{${task.taskId}}:events`);
const storedArtifacts = async (task: Running): Promise<string | null> => redis.hget(`${prefix}:{${task.taskId}}:task`, 'artifacts');

async function refusal(write: Promise<unknown>): Promise<OutputLimitError> {
  const error = await write.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(OutputLimitError);
  return error as OutputLimitError;
}

describe('output bounds in appendEvents', () => {
  it('refuses the chunk that takes an artifact past maxArtifactBytes, and stores nothing of it', async () => {
    const task = await runningTask();
    await chunk(task, 'a', 1_500, false, [{ artifactId: 'a', parts: [{ text: 'first' }] }]);
    await chunk(task, 'a', 1_500, true, [{ artifactId: 'a', parts: [{ text: 'second' }] }]);
    const before = [await eventCount(task), await storedArtifacts(task)];
    const refused: LimitName[] = [];
    const stop = onLimitRefusal((limit) => refused.push(limit));
    const error = await refusal(chunk(task, 'a', 1_500, true, [{ artifactId: 'a', parts: [{ text: 'third' }] }])).finally(stop);
    // Counted like every limit's refusal (a2a_limit_refusals_total on /metrics).
    expect(refused).toEqual(['limits.maxArtifactBytes']);
    expect(error.limit).toBe('limits.maxArtifactBytes');
    expect(error.maxBytes).toBe(4_000);
    expect(error.message).toMatch(/limits\.maxArtifactBytes \(4000 bytes for one artifact/);
    expect(error.message).toMatch(/A2A_MAX_ARTIFACT_BYTES/);
    expect([await eventCount(task), await storedArtifacts(task)]).toEqual(before);
  });

  it('a replacing chunk starts the artifact count afresh; another artifact has its own', async () => {
    const task = await runningTask();
    await chunk(task, 'a', 3_000, false, []);
    await chunk(task, 'a', 3_000, false, []);
    await chunk(task, 'b', 3_000, false, []);
    expect((await refusal(chunk(task, 'b', 1_500, true, []))).limit).toBe('limits.maxArtifactBytes');
  });

  it('refuses the event that takes the turn past maxTurnOutputBytes, status updates included', async () => {
    const task = await runningTask();
    await status(task, 3_000);
    await status(task, 3_000);
    await chunk(task, 'a', 2_000, false, []);
    const before = await eventCount(task);
    const error = await refusal(status(task, 3_000));
    expect(error.limit).toBe('limits.maxTurnOutputBytes');
    expect(error.message).toMatch(/limits\.maxTurnOutputBytes \(10000 bytes for one turn/);
    expect(await eventCount(task)).toBe(before);
    // A smaller event still fits: what was refused was not counted.
    await status(task, 500);
  });

  it('counts a turn across attempts: a second worker shares the first one’s count', async () => {
    const task = await runningTask('w1');
    await status(task, 4_000);
    await status(task, 4_000);
    await redis.del(`${prefix}:{${task.taskId}}:lease`);
    const second: Running = { ...task, generation: await lease(task.taskId, task.contextId, 'w2') };
    expect((await refusal(status(second, 4_000))).limit).toBe('limits.maxTurnOutputBytes');
  });

  it('counts every turn of the task against maxTaskOutputBytes', async () => {
    const task = await runningTask();
    await status(task, 4_000);
    await status(task, 4_000);
    // The next turn (what finishTurn sets when a follow-up opens one): its own turn count, the task's total.
    await redis.hset(`${prefix}:{${task.taskId}}:task`, 'turn', '2');
    await status(task, 4_000);
    const error = await refusal(status(task, 4_000));
    expect(error.limit).toBe('limits.maxTaskOutputBytes');
    expect(error.message).toMatch(/limits\.maxTaskOutputBytes \(16000 bytes for one task/);
  });
});
