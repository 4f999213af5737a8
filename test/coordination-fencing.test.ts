// Invariant 2 for a coordinator's own writes: recording a delegation and parking the turn are
// fenced by the lease generation, so a replaced worker can neither add assignments nor park a
// turn that another worker now runs. Either refusal changes nothing.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AssignmentRecord, DelegationSettings } from '../src/coordination/assignment-records.ts';
import { AssignmentStore } from '../src/store/assignments/assignment-store.ts';
import { ownerKeyOf, TaskStore, type Owner } from '../src/store/task-store.ts';
import { createStoredTask, deletePrefix, REDIS_URL, snapshotKeys, uniquePrefix } from './support/harness.ts';

const owner: Owner = { agent: 'default', tenant: '', subject: 'fencing-coordinator' };
let redis: Redis;
let store: TaskStore;
let assignments: AssignmentStore;
let prefix: string;

const settings: DelegationSettings = { name: 'work', count: 1, maxParallel: 4, roleLimits: {}, onFailure: 'continue' };
const record = (taskId: string): AssignmentRecord => ({ taskId, delegation: 'work', index: 0, role: 'specialist', kind: 'work', state: 'queued', queuedAtMs: Date.now() });

beforeAll(() => {
  redis = new Redis(REDIS_URL);
  prefix = uniquePrefix('coord-fence');
  store = new TaskStore(redis, prefix, 600);
  assignments = new AssignmentStore(redis, store.keys.prefix);
});

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await redis.quit();
});

describe('a coordinator replaced by a newer lease', () => {
  it('can neither record assignments nor park the turn, and changes nothing', async () => {
    const { taskId, contextId } = await createStoredTask(store, { taskId: 'coordinator-1', contextId: 'ctx-fence', owner });
    const lease = { taskId, ownerKey: ownerKeyOf(owner), contextId, workerId: 'old', leaseTtlMs: 60_000, now: new Date() };
    const old = await store.turns.acquireLease(lease);
    if (old.kind !== 'acquired') throw new Error(old.kind);
    // The old worker's lease lapses and another worker takes the turn over.
    await redis.del(store.keys.task(taskId).lease);
    const current = await store.turns.acquireLease({ ...lease, workerId: 'new' });
    if (current.kind !== 'acquired') throw new Error(current.kind);

    const before = await snapshotKeys(redis, prefix);
    expect(await assignments.register(taskId, old.generation, settings, [record('child-1')])).toBe(false);
    expect(await assignments.suspend(taskId, contextId, old.generation, 'waiting', 'm-park')).toBe(false);
    expect(await snapshotKeys(redis, prefix)).toEqual(before);

    // The current holder can do both.
    expect(await assignments.register(taskId, current.generation, settings, [record('child-1')])).toBe(true);
    expect(await assignments.suspend(taskId, contextId, current.generation, 'waiting', 'm-park')).toBe(true);
    expect(await redis.hget(store.keys.task(taskId).task, 'suspended')).toBe('1');
  });
});
