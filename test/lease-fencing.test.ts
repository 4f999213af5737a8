// Invariant 2 (one advancing executor per task) and invariant 3 (replacing a worker does not
// reset the turn), at the store level against real Redis: every worker-side write carries the
// lease's fencing generation and is rejected atomically, changing nothing, once a newer
// generation exists.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Message, StreamResponse, TaskStatus } from '../src/protocol/types.ts';
import { ownerKeyOf, StaleLeaseError, TaskStore, type Owner, type TurnRecord } from '../src/store/task-store.ts';
import { createStoredTask, deletePrefix, REDIS_URL, uniquePrefix } from './support/harness.ts';

const owner: Owner = { agent: 'default', tenant: '', subject: 'fencing-tester' };
const ownerKey = ownerKeyOf(owner);
const LEASE_TTL_MS = 60_000;

let redis: Redis;
let store: TaskStore;
let prefix: string;

const id = (label: string): string => `${label}-${randomBytes(6).toString('hex')}`;

async function newTask(): Promise<{ taskId: string; contextId: string }> {
  const taskId = id('task');
  const contextId = id('ctx');
  await createStoredTask(store, { taskId, contextId, owner, text: 'long 5', messageId: id('m') });
  return { taskId, contextId };
}

function acquire(taskId: string, contextId: string, workerId: string) {
  return store.turns.acquireLease({ taskId, ownerKey, contextId, workerId, leaseTtlMs: LEASE_TTL_MS, now: new Date() });
}

async function acquired(taskId: string, contextId: string, workerId: string) {
  const lease = await acquire(taskId, contextId, workerId);
  if (lease.kind !== 'acquired') throw new Error(`expected to acquire the lease, got ${JSON.stringify(lease)}`);
  return lease;
}

/** Everything a fenced write could touch for one task, as comparable values. */
async function taskState(taskId: string) {
  const k = store.keys.task(taskId);
  const [hash, events, history, turns, inbox, lease] = await Promise.all([
    redis.hgetall(k.task),
    redis.xrange(k.events, '-', '+'),
    redis.lrange(k.history, 0, -1),
    redis.hgetall(k.turns),
    redis.lrange(k.inbox, 0, -1),
    redis.get(k.lease),
  ]);
  return { hash, events, history, turns, inbox, lease };
}

function progressEvent(taskId: string, contextId: string, text: string): { status: TaskStatus; event: StreamResponse } {
  const status: TaskStatus = {
    state: 'TASK_STATE_WORKING',
    timestamp: new Date().toISOString(),
    message: { messageId: id('a'), role: 'ROLE_AGENT', parts: [{ text }], taskId, contextId },
  };
  return { status, event: { statusUpdate: { taskId, contextId, status } } };
}

beforeAll(() => {
  prefix = uniquePrefix('fencing');
  redis = new Redis(REDIS_URL);
  store = new TaskStore(redis, prefix);
});

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await redis.quit();
});

describe('lease fencing (store level, real Redis)', () => {
  it('rejects every write of a replaced worker atomically and accepts the new holder', async () => {
    const { taskId, contextId } = await newTask();
    const k = store.keys.task(taskId);

    const a = await acquired(taskId, contextId, 'worker-A');
    expect(a.attempts).toBe(1);
    expect(await redis.get(k.lease)).toBe('worker-A');

    // A makes progress while it holds the lease: this must work, or the rejections below prove nothing.
    const early = progressEvent(taskId, contextId, 'A step 1');
    await store.turns.appendEvents({ taskId, ownerKey, contextId, generation: a.generation, artifacts: undefined, status: early.status, events: [early.event], now: new Date() });
    const recordA: TurnRecord = { ...(a.turnRecord as TurnRecord), attempts: a.attempts, workerId: 'worker-A', startedAtMs: Date.now(), steps: [{ name: 'step-1', atMs: Date.now(), attempt: 1 }] };
    await store.turns.writeTurnRecord(taskId, a.generation, recordA);

    // A's lease lapses (a paused or dead worker), and B takes over.
    await redis.del(k.lease);
    const b = await acquired(taskId, contextId, 'worker-B');
    expect(b.generation).toBeGreaterThan(a.generation);
    // Invariant 3: the attempt count and the turn record (with A's steps) carry over.
    expect(b.attempts).toBe(2);
    expect(b.turn).toBe(a.turn);
    expect(b.turnRecord?.steps?.map((s) => s.name)).toEqual(['step-1']);
    expect(b.turnRecord?.workerId).toBe('worker-A');

    const before = await taskState(taskId);
    expect(before.lease).toBe('worker-B');

    // A, unaware, tries every kind of write with its old generation.
    const late = progressEvent(taskId, contextId, 'A late progress');
    await expect(
      store.turns.appendEvents({ taskId, ownerKey, contextId, generation: a.generation, artifacts: [{ artifactId: 'report', name: 'report', parts: [{ text: 'from A' }] }], status: late.status, events: [late.event], now: new Date() }),
    ).rejects.toBeInstanceOf(StaleLeaseError);
    await expect(
      store.turns.writeTurnRecord(taskId, a.generation, { ...recordA, steps: [...(recordA.steps ?? []), { name: 'step-2', atMs: Date.now(), attempt: 1 }] }),
    ).rejects.toBeInstanceOf(StaleLeaseError);
    const finishedByA = await store.turns.finishTurn({
      taskId,
      ownerKey,
      contextId,
      generation: a.generation,
      status: { state: 'TASK_STATE_COMPLETED', timestamp: new Date().toISOString() },
      agentMessage: { messageId: id('a'), role: 'ROLE_AGENT', parts: [{ text: 'A finished' }], taskId, contextId },
      turnRecord: { ...recordA, outcome: 'TASK_STATE_COMPLETED', finishedAtMs: Date.now() },
      artifacts: [{ artifactId: 'report', name: 'report', parts: [{ text: 'from A' }] }],
      now: new Date(),
    });
    expect(finishedByA).toEqual({ kind: 'stale' });
    // A cannot revive or steal the lease by renewing it either.
    await store.turns.renewLease(taskId, 'worker-A', LEASE_TTL_MS);

    const afterA = await taskState(taskId);
    expect(afterA).toEqual(before);
    expect(afterA.events.length).toBe(before.events.length);
    expect(afterA.hash.state).toBe('TASK_STATE_WORKING');
    expect(afterA.lease).toBe('worker-B');

    // B's writes with the current generation go through.
    const progressB = progressEvent(taskId, contextId, 'B step 1');
    const appended = await store.turns.appendEvents({ taskId, ownerKey, contextId, generation: b.generation, artifacts: undefined, status: progressB.status, events: [progressB.event], now: new Date() });
    expect(appended.kind === 'appended' && appended.eventId).toMatch(/^\d+-\d+$/);
    const recordB: TurnRecord = { ...(b.turnRecord as TurnRecord), attempts: b.attempts, workerId: 'worker-B' };
    await store.turns.writeTurnRecord(taskId, b.generation, recordB);
    const finishedByB = await store.turns.finishTurn({
      taskId,
      ownerKey,
      contextId,
      generation: b.generation,
      status: { state: 'TASK_STATE_COMPLETED', timestamp: new Date().toISOString() },
      agentMessage: { messageId: id('a'), role: 'ROLE_AGENT', parts: [{ text: 'B finished' }], taskId, contextId },
      turnRecord: { ...recordB, outcome: 'TASK_STATE_COMPLETED', finishedAtMs: Date.now() },
      artifacts: [{ artifactId: 'report', name: 'report', parts: [{ text: 'from B' }] }],
      now: new Date(),
    });
    expect(finishedByB.kind).toBe('done');

    const final = await taskState(taskId);
    expect(final.events.length).toBe(before.events.length + 2);
    expect(final.hash.state).toBe('TASK_STATE_COMPLETED');
    expect(JSON.parse(final.hash.artifacts as string)).toEqual([{ artifactId: 'report', name: 'report', parts: [{ text: 'from B' }] }]);
    const turn1 = JSON.parse(final.turns['1'] as string) as TurnRecord;
    expect(turn1.workerId).toBe('worker-B');
    expect(turn1.attempts).toBe(2);
    expect(final.history.map((m) => (JSON.parse(m) as Message).parts[0]?.text)).toEqual(['long 5', 'B finished']);
    expect(final.lease).toBeNull();
    // No event text from A made it anywhere.
    expect(JSON.stringify(final)).not.toContain('A late progress');
    expect(JSON.stringify(final)).not.toContain('A finished');
    expect(JSON.stringify(final)).not.toContain('from A');
  });

  it('refuses a second holder while a lease is live, without bumping the generation', async () => {
    const { taskId, contextId } = await newTask();
    const k = store.keys.task(taskId);
    const a = await acquired(taskId, contextId, 'worker-A');
    const before = await taskState(taskId);

    const other = await acquire(taskId, contextId, 'worker-B');
    expect(other).toEqual({ kind: 'held', holder: 'worker-A' });

    // The refused attempt changed nothing: A still writes with its generation.
    expect(await taskState(taskId)).toEqual(before);
    expect(await redis.hget(k.task, 'leaseGeneration')).toBe(String(a.generation));
    const progress = progressEvent(taskId, contextId, 'A still holds it');
    await store.turns.appendEvents({ taskId, ownerKey, contextId, generation: a.generation, artifacts: undefined, status: progress.status, events: [progress.event], now: new Date() });
    expect(await redis.xlen(k.events)).toBe(before.events.length + 1);
  });

  it('counts attempts across acquisitions of one turn (invariant 3)', async () => {
    const { taskId, contextId } = await newTask();
    const k = store.keys.task(taskId);
    const generations: number[] = [];
    for (let i = 1; i <= 4; i++) {
      const lease = await acquired(taskId, contextId, `worker-${i}`);
      expect(lease.attempts).toBe(i);
      expect(lease.turn).toBe(1);
      generations.push(lease.generation);
      await redis.del(k.lease); // that worker died
    }
    for (let i = 1; i < generations.length; i++) expect(generations[i]).toBeGreaterThan(generations[i - 1] as number);
    // Only the first acquisition started the turn: one WORKING event, not one per attempt.
    const events = await store.gateway.readEvents(taskId, '');
    const working = events.filter((e) => 'statusUpdate' in e.event && e.event.statusUpdate.status.state === 'TASK_STATE_WORKING');
    expect(working).toHaveLength(1);
  });

  it('will not lease a canceled task, and a queued cancel fences out a lease taken before it', async () => {
    // A task canceled while queued cannot be leased afterwards.
    const queued = await newTask();
    expect((await store.gateway.cancelTask(queued.taskId, owner, new Date())).kind).toBe('canceled');
    const eventsBefore = await redis.xlen(store.keys.task(queued.taskId).events);
    const lease = await acquire(queued.taskId, queued.contextId, 'worker-late');
    expect(lease).toEqual({ kind: 'closed', state: 'TASK_STATE_CANCELED' });
    expect(await redis.get(store.keys.task(queued.taskId).lease)).toBeNull();
    expect(await redis.xlen(store.keys.task(queued.taskId).events)).toBe(eventsBefore);
    expect(await redis.hget(store.keys.task(queued.taskId).task, 'turnAttempts')).toBe('0');

    // A worker whose lease lapsed before the cancel cannot write over the canceled task.
    const lapsed = await newTask();
    const k = store.keys.task(lapsed.taskId);
    const a = await acquired(lapsed.taskId, lapsed.contextId, 'worker-A');
    await redis.del(k.lease);
    // The task is WORKING, so cancel is only requested; it is the next holder that must see it.
    expect((await store.gateway.cancelTask(lapsed.taskId, owner, new Date())).kind).toBe('requested');
    const b = await acquired(lapsed.taskId, lapsed.contextId, 'worker-B');
    expect(b.cancelRequestedAtMs).toBeTypeOf('number');
    const before = await taskState(lapsed.taskId);
    const finishedByA = await store.turns.finishTurn({
      taskId: lapsed.taskId,
      ownerKey,
      contextId: lapsed.contextId,
      generation: a.generation,
      status: { state: 'TASK_STATE_COMPLETED', timestamp: new Date().toISOString() },
      agentMessage: undefined,
      turnRecord: { turn: 1, inputMessageIds: [], acceptedAtMs: Date.now(), outcome: 'TASK_STATE_COMPLETED' },
      artifacts: [],
      now: new Date(),
    });
    expect(finishedByA).toEqual({ kind: 'stale' });
    expect(await taskState(lapsed.taskId)).toEqual(before);
  });
});
