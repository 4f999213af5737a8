// A reconnect re-sends a command whose reply was lost, although Redis may already have applied
// (and persisted) it. Writes that must not happen twice carry a call id and run once per call:
// here every such call reaches Redis twice with the same arguments, exactly as a re-send does.
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AssignmentRecord, DelegationSettings } from '../src/coordination/assignment-records.ts';
import { AssignmentStore } from '../src/store/assignments/assignment-store.ts';
import { ownerKeyOf, TaskStore, type Owner, type StepRecord } from '../src/store/task-store.ts';
import { scriptSource, type ScriptName } from '../src/store/scripts.ts';
import { createStoredTask, deletePrefix, REDIS_URL, storedTaskInput, uniquePrefix } from './support/harness.ts';

const owner: Owner = { agent: 'default', tenant: '', subject: 'resend-tester' };
const ownerKey = ownerKeyOf(owner);
let redis: Redis;
let store: TaskStore;
let assignments: AssignmentStore;
let prefix: string;
let counter = 0;

type Command = (...args: (string | number)[]) => Promise<unknown>;

/**
 * Wraps the calls of one store script on the test's connection. The store runs its scripts by
 * EVALSHA (src/store/scripts.ts), so that is the command intercepted, for the script's SHA only.
 * `around` gets the call's send and returns its reply; the wrapper counts the calls it saw, so a
 * test can check it intercepted anything at all. Returns the undo.
 */
function aroundScript(name: ScriptName, around: (send: () => Promise<unknown>, restore: () => void) => Promise<unknown>): { restore: () => void; calls: () => number } {
  const sha = createHash('sha1').update(scriptSource(name, redis) as string).digest('hex');
  const commands = redis as unknown as Record<string, Command>;
  const original = commands['evalsha'] as Command;
  let calls = 0;
  const restore = (): void => {
    commands['evalsha'] = original;
  };
  commands['evalsha'] = async (...args) => {
    const send = (): Promise<unknown> => original.apply(redis, args);
    if (args[0] !== sha) return send();
    calls += 1;
    return around(send, restore);
  };
  return { restore, calls: () => calls };
}

/** Makes every call of a script reach Redis twice, the second with the same arguments (a re-send). */
function sendTwice(name: ScriptName): () => void {
  const intercepted = aroundScript(name, async (send) => {
    await send();
    return send();
  });
  return () => {
    intercepted.restore();
    // A test whose script was never called would prove nothing.
    expect(intercepted.calls()).toBeGreaterThan(0);
  };
}

async function leasedTask(): Promise<{ taskId: string; contextId: string; generation: number }> {
  counter += 1;
  const taskId = `task-${counter}`;
  const contextId = `ctx-${counter}`;
  await createStoredTask(store, { taskId, contextId, owner });
  const lease = await store.turns.acquireLease({ taskId, ownerKey, contextId, workerId: 'w', leaseTtlMs: 60_000, now: new Date() });
  if (lease.kind !== 'acquired') throw new Error(`lease: ${lease.kind}`);
  return { taskId, contextId, generation: lease.generation };
}

const progress = (taskId: string, contextId: string, text: string) => ({
  statusUpdate: { taskId, contextId, status: { state: 'TASK_STATE_WORKING' as const, message: { messageId: text, role: 'ROLE_AGENT' as const, parts: [{ text }] } } },
});

beforeAll(() => {
  redis = new Redis(REDIS_URL);
  prefix = uniquePrefix('resend');
  store = new TaskStore(redis, prefix, 600);
  assignments = new AssignmentStore(redis, store.keys.prefix);
});

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await redis.quit();
});

describe('a write re-sent after a lost reply is applied once', () => {
  it('appendEvents: one event in the replay buffer, the same id answered twice', async () => {
    const { taskId, contextId, generation } = await leasedTask();
    const before = await redis.xlen(store.keys.task(taskId).events);
    const restore = sendTwice('appendEvents');
    try {
      const appended = await store.turns.appendEvents({ taskId, ownerKey, contextId, generation, artifacts: undefined, status: undefined, events: [progress(taskId, contextId, 'once')], now: new Date() });
      const events = await redis.xrange(store.keys.task(taskId).events, '-', '+');
      expect(events.length - before).toBe(1);
      expect(appended.kind === 'appended' && appended.eventId).toBe(events.at(-1)?.[0]);
    } finally {
      restore();
    }
    // Two real calls (two call ids) are two writes: the guard is per call, not per content.
    await store.turns.appendEvents({ taskId, ownerKey, contextId, generation, artifacts: undefined, status: undefined, events: [progress(taskId, contextId, 'once')], now: new Date() });
    expect((await redis.xlen(store.keys.task(taskId).events)) - before).toBe(2);
  });

  it('chargeBudget: the units are spent once', async () => {
    const { taskId, generation } = await leasedTask();
    const restore = sendTwice('chargeBudget');
    try {
      expect(await store.turns.chargeBudget(taskId, generation, 3)).toBe(3);
      expect(await store.turns.chargeBudget(taskId, generation, 2)).toBe(5);
    } finally {
      restore();
    }
    expect(Number(await redis.hget(store.keys.task(taskId).task, 'turnBudgetSpent'))).toBe(5);
  });

  it('startStep: a re-sent start is still the start, not a step of unknown outcome', async () => {
    const { taskId, generation } = await leasedTask();
    const record: StepRecord = { name: 'charge', turn: 1, idempotencyKey: `${taskId}:1:charge`, state: 'started', attempt: 1, startedAtMs: Date.now() };
    const restore = sendTwice('startStep');
    try {
      expect(await store.turns.startStep(taskId, generation, '1:charge', record)).toBeUndefined();
    } finally {
      restore();
    }
  });

  it('finishTurn: the turn ends once, with one final event, and the re-send is not refused as stale', async () => {
    const { taskId, contextId, generation } = await leasedTask();
    const before = await redis.xlen(store.keys.task(taskId).events);
    const restore = sendTwice('finishTurn');
    try {
      const finished = await store.turns.finishTurn({
        taskId,
        ownerKey,
        contextId,
        generation,
        status: { state: 'TASK_STATE_COMPLETED', timestamp: new Date().toISOString() },
        agentMessage: undefined,
        turnRecord: { turn: 1, inputMessageIds: [], acceptedAtMs: Date.now() },
        artifacts: [],
        now: new Date(),
      });
      expect(finished.kind).toBe('done');
    } finally {
      restore();
    }
    expect((await redis.xlen(store.keys.task(taskId).events)) - before).toBe(1);
    expect(Number(await redis.hget(store.keys.task(taskId).task, 'leaseGeneration'))).toBe(generation + 1);
  });
});

describe('a new task whose create is re-sent after a lost reply', () => {
  it('createClaimedTask: answered as created, not as a re-sent message, and its worker can start the turn at once', async () => {
    counter += 1;
    const taskId = `task-${counter}`;
    const contextId = `ctx-${counter}`;
    const takeLease = { workerId: 'w', leaseTtlMs: 60_000, turnDeadlineMs: 0, maxTurnAttempts: 0 };
    const restore = sendTwice('createClaimedTask');
    let created: Awaited<ReturnType<TaskStore['gateway']['createTask']>>;
    try {
      created = await store.gateway.createTask({ ...storedTaskInput({ taskId, contextId, owner }), takeLease });
    } finally {
      restore();
    }
    // As a re-sent message's, the request would wait for the reconciler to queue the turn (about a minute).
    expect(created.kind).toBe('created');
    const [first] = await redis.xrange(store.keys.task(taskId).events, '-', '+', 'COUNT', 1);
    expect(created.kind === 'created' && created.eventId).toBe(first?.[0]);
    expect(created.kind === 'created' && created.lease).toBeUndefined();
    // The first send's lease is this worker's: its run takes it now, not once it has lapsed.
    const lease = await store.turns.acquireLease({ taskId, ownerKey, contextId, workerId: 'w', leaseTtlMs: 60_000, now: new Date() });
    expect(lease.kind).toBe('acquired');
  });
});

describe("a coordinator's scripts, called by several processes at once, answer a re-send with its first reply", () => {
  const settings = (name: string, count: number, maxParallel: number): DelegationSettings => ({ name, count, maxParallel, roleLimits: {}, onFailure: 'continue' });
  const queued = (taskId: string, delegation: string, index: number): AssignmentRecord => ({ taskId, delegation, index, role: 'worker', kind: 'work', state: 'queued', queuedAtMs: Date.now() });

  /**
   * The next call of a script is applied and its reply lost; before its re-send arrives,
   * `meanwhile` runs (another process's call for the same coordinator).
   */
  /** Returns how many calls it intercepted (one, once the script ran). */
  function loseReplyAround(name: ScriptName, meanwhile: () => Promise<unknown>): () => number {
    return aroundScript(name, async (send, restore) => {
      await send();
      restore();
      await meanwhile();
      return send();
    }).calls;
  }

  async function coordinatorWith(count: number, maxParallel: number): Promise<{ coordinatorId: string; children: string[] }> {
    const { taskId: coordinatorId, generation } = await leasedTask();
    const children = Array.from({ length: count }, (_, i) => `${coordinatorId}-child-${i}`);
    expect(await assignments.register(coordinatorId, generation, settings('d', count, maxParallel), children.map((id, i) => queued(id, 'd', i)))).toBe(true);
    return { coordinatorId, children };
  }

  it('settleAssignment: the final settle re-sent after another settle still wakes the coordinator', async () => {
    const { coordinatorId, children } = await coordinatorWith(2, 2);
    expect(await assignments.grant(coordinatorId)).toEqual(children);
    expect((await assignments.settle(coordinatorId, children[0] as string, 'completed', 'one')).kind).toBe('settled');
    // The last child's settle is applied, its reply lost; its task's recovered run settles again.
    const intercepted = loseReplyAround('settleAssignment', () => assignments.settle(coordinatorId, children[1] as string, 'completed', 'two'));
    expect((await assignments.settle(coordinatorId, children[1] as string, 'completed', 'two')).kind).toBe('wake');
    expect(intercepted()).toBe(1);
  });

  it('grantSlots: a grant re-sent after another grant still names the children it started', async () => {
    const { coordinatorId, children } = await coordinatorWith(2, 1);
    const intercepted = loseReplyAround('grantSlots', () => assignments.grant(coordinatorId));
    expect(await assignments.grant(coordinatorId)).toEqual([children[0]]);
    expect(intercepted()).toBe(1);
  });
});
