// A task created straight in the store and a turn lease taken on it, as the store-level artifact
// suites (artifact-writes, artifact-segments) drive a turn without a worker.
import { randomBytes } from 'node:crypto';
import { ownerKeyOf, type Owner, type TaskStore } from '../../src/store/task-store.ts';
import { createStoredTask } from './harness.ts';

export type AcquiredLease = Extract<Awaited<ReturnType<TaskStore['turns']['acquireLease']>>, { kind: 'acquired' }>;

/** The turn's lease for `workerId`; throws with the store's answer when it is not given. */
export async function acquireTestLease(store: TaskStore, owner: Owner, taskId: string, contextId: string, workerId: string): Promise<AcquiredLease> {
  const acquired = await store.turns.acquireLease({ taskId, ownerKey: ownerKeyOf(owner), contextId, workerId, leaseTtlMs: 60_000, now: new Date() });
  if (acquired.kind !== 'acquired') throw new Error(`no lease: ${JSON.stringify(acquired)}`);
  return acquired;
}

/** A new task of `owner` with one user message, its id starting with `idPrefix`. */
export async function newStoredTask(store: TaskStore, owner: Owner, idPrefix: string): Promise<{ taskId: string; contextId: string }> {
  const taskId = `${idPrefix}-${randomBytes(6).toString('hex')}`;
  const contextId = `ctx-${taskId}`;
  await createStoredTask(store, { taskId, contextId, owner });
  return { taskId, contextId };
}
