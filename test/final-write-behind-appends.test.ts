// An adapter that returns right after emitting, without awaiting its emits, has its turn's final
// write sent behind those appends before they answer (one round trip less). The final write
// ends the turn only if the run's last event was stored: an append the store refused (an output
// bound) leaves the turn unfinished by that write, and the turn then fails naming the limit, as
// it does when the adapter awaits. Nothing of a refused event is recorded, its digest included.
// When the run's last event is the one write pending and still held back, the final write
// carries it instead (one script call less): refused there, nothing of the turn's end is stored.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaskStatus } from '../src/protocol/types.ts';
import type { TurnRecord } from '../src/store/task-store.ts';
import { ownerKeyOf, StaleLeaseError, TaskStore, type Owner } from '../src/store/task-store.ts';
import { OutputLimitError } from '../src/limits/output-limits.ts';
import { createStoredTask, deletePrefix, rpc, startTestGateway, textMessage, type TestGateway } from './support/harness.ts';

const MAX_ARTIFACT_BYTES = 2_000;

let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({
    name: 'write-behind',
    // Output pacing off: a large output's take would keep its append busy past the turn's end, and the
    // tests of which events the final write carries would pass for that reason instead of their own.
    config: { adapter: 'test/fixtures/unawaited-emit-adapter.mjs', blockingTimeoutMs: 20_000, limits: { maxArtifactBytes: MAX_ARTIFACT_BYTES, outputBytesPerSecond: 0 } },
  });
});

afterAll(async () => {
  await gw?.close();
});

interface TaskView {
  id: string;
  status: { state: string; message?: { parts: { text?: string }[] } };
  artifacts?: { artifactId: string; parts: { text?: string }[] }[];
}

async function send(text: string): Promise<TaskView> {
  const reply = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage(text) });
  expect(reply.body.error).toBeUndefined();
  return (reply.body.result as { task: TaskView }).task;
}

/** The task's stored events, as kinds in order ("status:<state>" or "artifact:<id>"); `prefix`: the store's key prefix. */
async function storedEvents(taskId: string, prefix = gw.prefix): Promise<string[]> {
  const entries = await gw.redis.xrange(`${prefix}:{${taskId}}:events`, '-', '+');
  return entries.map(([, fields]) => {
    const event = JSON.parse(fields[1] as string) as {
      task?: unknown;
      statusUpdate?: { status: { state: string } };
      artifactUpdate?: { artifact: { artifactId: string } };
    };
    if (event.artifactUpdate !== undefined) return `artifact:${event.artifactUpdate.artifact.artifactId}`;
    if (event.statusUpdate !== undefined) return `status:${event.statusUpdate.status.state}`;
    return 'task';
  });
}

const statusText = (task: TaskView): string => task.status.message?.parts.map((p) => p.text ?? '').join('') ?? '';

describe('a turn whose adapter returns without awaiting its emits', () => {
  it('stores them, in order, before its final status', async () => {
    const task = await send('status 50 artifact 100');
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(task.artifacts?.map((a) => a.artifactId)).toEqual(['a3']);
    expect((await storedEvents(task.id)).slice(-3)).toEqual(['status:TASK_STATE_WORKING', 'artifact:a3', 'status:TASK_STATE_COMPLETED']);
  });

  it('fails, naming the limit, when the last emit is refused: the final write sent behind it does not complete the task', async () => {
    const task = await send(`artifact ${MAX_ARTIFACT_BYTES * 2}`);
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    expect(statusText(task)).toMatch(/limits\.maxArtifactBytes/);
    expect(task.artifacts ?? []).toEqual([]);
    const events = await storedEvents(task.id);
    expect(events).not.toContain('status:TASK_STATE_COMPLETED');
    expect(events.at(-1)).toBe('status:TASK_STATE_FAILED');
    const record = JSON.parse((await gw.redis.hget(`${gw.prefix}:{${task.id}}:turns`, '1')) as string) as TurnRecord;
    expect(record.outcome).toBe('TASK_STATE_FAILED');
    expect(record.attempts).toBe(1);
  });

  it('keeps what was stored before a refused emit, and fails', async () => {
    const task = await send(`artifact 100 artifact ${MAX_ARTIFACT_BYTES * 2}`);
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    expect(task.artifacts?.map((a) => a.artifactId)).toEqual(['a1']);
    const events = await storedEvents(task.id);
    expect(events.filter((e) => e.startsWith('artifact:'))).toEqual(['artifact:a1']);
    expect(events).not.toContain('status:TASK_STATE_COMPLETED');
  });

  it('fails when an emit awaited earlier in the run was fine and the last one is refused', async () => {
    const task = await send(`artifact 100 await artifact ${MAX_ARTIFACT_BYTES * 2}`);
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    expect(task.artifacts?.map((a) => a.artifactId)).toEqual(['a1']);
  });
});

describe('a turn that ends right after its last emit', () => {
  // The once-wrapper remembers each appendEvents call in the task hash (src/store/scripts.ts):
  // a task without that field stored its events through its final write alone.
  const appendedAlone = async (taskId: string): Promise<boolean> => (await gw.redis.hexists(`${gw.prefix}:{${taskId}}:task`, '__call:appendEvents')) === 1;

  it('stores that event with its final status, in one call, in order', async () => {
    const task = await send('artifact 100');
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(task.artifacts?.map((a) => a.artifactId)).toEqual(['a1']);
    expect(await storedEvents(task.id)).toEqual(['task', 'status:TASK_STATE_WORKING', 'artifact:a1', 'status:TASK_STATE_COMPLETED']);
    expect(await appendedAlone(task.id)).toBe(false);
  });

  it('fails, naming the limit, when the event it carries is past an output bound, and stores nothing of it', async () => {
    const task = await send(`artifact ${MAX_ARTIFACT_BYTES * 2}`);
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    expect(statusText(task)).toMatch(/limits\.maxArtifactBytes/);
    expect(task.artifacts ?? []).toEqual([]);
    expect(await storedEvents(task.id)).toEqual(['task', 'status:TASK_STATE_WORKING', 'status:TASK_STATE_FAILED']);
    expect(await appendedAlone(task.id)).toBe(false);
  });

  it('sends a large event on its own: carried, it would make the final write as large', async () => {
    const task = await send('status 70000');
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(await storedEvents(task.id)).toEqual(['task', 'status:TASK_STATE_WORKING', 'status:TASK_STATE_WORKING', 'status:TASK_STATE_COMPLETED']);
    expect(await appendedAlone(task.id)).toBe(true);
  });

  it('sends an event on its own when the run goes on after it (it is held back one turn of the event loop, no more)', async () => {
    const task = await send('artifact 100 await');
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(await storedEvents(task.id)).toEqual(['task', 'status:TASK_STATE_WORKING', 'artifact:a1', 'status:TASK_STATE_COMPLETED']);
    expect(await appendedAlone(task.id)).toBe(true);
  });
});

describe('the final write that follows an event', () => {
  const owner: Owner = { agent: 'default', tenant: '', subject: 'write-behind' };
  const ownerKey = ownerKeyOf(owner);
  let store: TaskStore;

  beforeAll(() => {
    store = new TaskStore(gw.redis, `${gw.prefix}-store`, 600);
  });

  afterAll(async () => {
    await deletePrefix(gw.redis, `${gw.prefix}-store`);
  });

  async function leased(): Promise<{ taskId: string; contextId: string; generation: number }> {
    const taskId = `wb-${randomBytes(6).toString('hex')}`;
    const contextId = `ctx-${taskId}`;
    await createStoredTask(store, { taskId, contextId, owner });
    const acquired = await store.turns.acquireLease({ taskId, ownerKey, contextId, workerId: 'w1', leaseTtlMs: 60_000, now: new Date() });
    if (acquired.kind !== 'acquired') throw new Error(`no lease: ${JSON.stringify(acquired)}`);
    return { taskId, contextId, generation: acquired.generation };
  }

  function append(task: { taskId: string; contextId: string; generation: number }, sequence: number, bytes: number) {
    const artifact = { artifactId: `a${sequence}`, parts: [{ text: 'x'.repeat(bytes) }] };
    return store.turns.appendEvents({
      ...task,
      ownerKey,
      artifacts: undefined,
      pendingArtifact: { append: false, artifact },
      status: undefined,
      events: [{ artifactUpdate: { taskId: task.taskId, contextId: task.contextId, artifact, append: false, lastChunk: true } }],
      emit: { scope: '1.0', sequence, digest: `d${sequence}`, pastPrefix: sequence > 1 },
      outputLimits: { maxArtifactBytes: MAX_ARTIFACT_BYTES, maxTurnOutputBytes: 0, maxTaskOutputBytes: 0 },
      artifactChunk: { artifactId: artifact.artifactId, append: false },
      now: new Date(),
    });
  }

  /** The turn's final write, completed; `end`: the event it follows, or the one it carries (and the artifacts with it). */
  function finishWith(task: { taskId: string; contextId: string; generation: number }, end: Pick<Parameters<TaskStore['turns']['finishTurn']>[0], 'follows' | 'carried' | 'artifacts'>) {
    const status: TaskStatus = { state: 'TASK_STATE_COMPLETED', timestamp: new Date().toISOString() };
    return store.turns.finishTurn({
      ...task,
      ownerKey,
      status,
      agentMessage: undefined,
      turnRecord: { turn: 1, inputMessageIds: [], acceptedAtMs: Date.now(), attempts: 1 },
      ...end,
      now: new Date(),
    });
  }

  const finish = (task: { taskId: string; contextId: string; generation: number }, sequence: number) =>
    finishWith(task, { artifacts: undefined, follows: { scope: '1.0', sequence, digest: `d${sequence}` } });

  const state = (taskId: string): Promise<string | null> => gw.redis.hget(`${gw.prefix}-store:{${taskId}}:task`, 'state');
  const eventCount = (taskId: string): Promise<number> => gw.redis.xlen(`${gw.prefix}-store:{${taskId}}:events`);

  it('changes nothing when that event was refused, and records no digest of it', async () => {
    const task = await leased();
    await expect(append(task, 1, MAX_ARTIFACT_BYTES * 2)).rejects.toBeInstanceOf(OutputLimitError);
    expect(await gw.redis.hget(`${gw.prefix}-store:{${task.taskId}}:emitted`, '1')).toBeNull();
    const events = await eventCount(task.taskId);
    expect(await finish(task, 1)).toEqual({ kind: 'unstored' });
    expect(await state(task.taskId)).toBe('TASK_STATE_WORKING');
    expect(await eventCount(task.taskId)).toBe(events);
  });

  it('changes nothing when that event was not appended yet', async () => {
    const task = await leased();
    await append(task, 1, 10);
    expect(await finish(task, 2)).toEqual({ kind: 'unstored' });
    expect(await state(task.taskId)).toBe('TASK_STATE_WORKING');
  });

  /** The first worker's lease lapsed and another took the task over (a newer generation). */
  async function takeOver(task: { taskId: string; contextId: string }): Promise<void> {
    await gw.redis.del(`${gw.prefix}-store:{${task.taskId}}:lease`);
    const newer = await store.turns.acquireLease({ taskId: task.taskId, ownerKey, contextId: task.contextId, workerId: 'w2', leaseTtlMs: 60_000, now: new Date() });
    expect(newer.kind).toBe('acquired');
  }

  it('changes nothing when a newer lease holds the task: the append and the final write behind it are both stale', async () => {
    const task = await leased();
    await takeOver(task);
    const events = await eventCount(task.taskId);
    // Sent one behind the other, as the late worker's runtime sends them, without waiting in between.
    const appended = append(task, 1, 10);
    const finished = finish(task, 1);
    await expect(appended).rejects.toBeInstanceOf(StaleLeaseError);
    expect(await finished).toEqual({ kind: 'stale' });
    expect(await state(task.taskId)).toBe('TASK_STATE_WORKING');
    expect(await eventCount(task.taskId)).toBe(events);
    expect(await gw.redis.hget(`${gw.prefix}-store:{${task.taskId}}:emitted`, '1')).toBeNull();
  });

  function finishCarrying(task: { taskId: string; contextId: string; generation: number }, bytes: number) {
    const artifact = { artifactId: 'carried', parts: [{ text: 'x'.repeat(bytes) }] };
    return finishWith(task, {
      artifacts: [artifact],
      carried: {
        json: JSON.stringify({ artifactUpdate: { taskId: task.taskId, contextId: task.contextId, artifact, append: false, lastChunk: true } }),
        outputLimits: { maxArtifactBytes: MAX_ARTIFACT_BYTES, maxTurnOutputBytes: 0, maxTaskOutputBytes: 0 },
        artifactChunk: { artifactId: artifact.artifactId, append: false },
      },
    });
  }

  it('carries an event: appended before the final status, counted against the output bounds', async () => {
    const task = await leased();
    expect((await finishCarrying(task, 10)).kind).toBe('done');
    expect(await state(task.taskId)).toBe('TASK_STATE_COMPLETED');
    expect((await storedEvents(task.taskId, `${gw.prefix}-store`)).slice(-2)).toEqual(['artifact:carried', 'status:TASK_STATE_COMPLETED']);
    expect(await gw.redis.hget(`${gw.prefix}-store:{${task.taskId}}:task`, 'artifactBytes:carried')).not.toBeNull();
  });

  it('changes nothing when the event it carries is past an output bound, and says which', async () => {
    const task = await leased();
    const events = await eventCount(task.taskId);
    const finished = await finishCarrying(task, MAX_ARTIFACT_BYTES * 2);
    expect(finished.kind).toBe('refused');
    if (finished.kind === 'refused') {
      expect(finished.refusal).toBeInstanceOf(OutputLimitError);
      expect(finished.refusal.message).toMatch(/limits\.maxArtifactBytes/);
    }
    expect(await state(task.taskId)).toBe('TASK_STATE_WORKING');
    expect(await eventCount(task.taskId)).toBe(events);
  });

  it('changes nothing when a newer lease holds the task, the event it carries included', async () => {
    const task = await leased();
    await takeOver(task);
    const events = await eventCount(task.taskId);
    expect(await finishCarrying(task, 10)).toEqual({ kind: 'stale' });
    expect(await eventCount(task.taskId)).toBe(events);
  });

  it('ends the turn when that event was stored', async () => {
    const task = await leased();
    await append(task, 1, 10);
    expect((await finish(task, 1)).kind).toBe('done');
    expect(await state(task.taskId)).toBe('TASK_STATE_COMPLETED');
  });
});
