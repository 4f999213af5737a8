// What the reconciler and shutdown do to the store: drop stale active entries, release locks, flush index hints.
import type { TaskState } from '../protocol/types.ts';
import { scanKeys } from '../redis/cross-slot.ts';
import { reconcileEntryScript, releaseLockScript } from './maintenance-scripts.ts';
import { StoreRole } from './store-role.ts';

/** What the reconciler should do about one entry of an owner's active set. */
export type ActiveEntry =
  | { kind: 'removed'; state: TaskState | undefined }
  | { kind: 'running' }
  | { kind: 'parked' }
  | { kind: 'recent' }
  /** A coordinator parked for long: run it, so it re-checks its assignments. */
  | { kind: 'wake'; turn: number; ownerKey: string; contextId: string }
  | { kind: 'candidate'; turn: number; ownerKey: string; contextId: string; parentTaskId: string | undefined };

/** How long an open task without a lease must have been quiet before the reconciler suspects its turn is lost (ms). */
export interface EntryQuiet {
  /** A turn a queue job carries: long enough for stall detection to recover it first. */
  quietForMs: number;
  /** A parked coordinator, before it is woken to re-check its assignments. */
  parkedQuietForMs: number;
  /** A turn whose last run no job carried (started where it was accepted): no stall detection will. */
  withoutJobQuietForMs: number;
}

const OPEN_STATES = new Set(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING']);
/**
 * An active-set entry whose task does not exist may be a claim whose task is being created
 * (claimTask, then createTask): only one older than this is dropped.
 */
const UNCREATED_CLAIM_GRACE_MS = 10_000;

/**
 * Whether an owner's active-set entry (made at `score` ms) may go: its task is gone, or has no
 * turn queued or running since after the entry was made. An entry newer than the task's last
 * change is a resume on its way (claimTurn, then acceptMessage) and stays for a grace period.
 */
export function isStaleActive(state: string | undefined, updatedAtMs: number, score: number, nowMs: number): boolean {
  if (state !== undefined && OPEN_STATES.has(state)) return false;
  if (state !== undefined && updatedAtMs >= score) return true;
  return nowMs - score >= UNCREATED_CLAIM_GRACE_MS;
}

export class MaintenanceOperations extends StoreRole {
  /** Writes the index hints this process noted, waiting at most `timeoutMs` (at shutdown). */
  async flushIndexesWithin(timeoutMs: number): Promise<void> {
    await Promise.all([this.recentTasks.flushWithin(timeoutMs), this.ownerIndex.flushWithin(timeoutMs)]);
  }

  /**
   * For the reconciler: removes an entry of an owner's active set whose task is gone or has no
   * turn queued or running, else says whether the task may have lost its turn job. The task is
   * read in its slot, then the entry dropped in the owner's, only while its score is still
   * `score` (the one the reconciler read): a task resumed between the two keeps its entry.
   */
  async reconcileActiveEntry(ownerKey: string, taskId: string, score: number, now: Date, quiet: EntryQuiet): Promise<ActiveEntry> {
    const verdict = await this.call(reconcileEntryScript, this.keys.task(taskId), { nowMs: now.getTime(), ...quiet });
    switch (verdict.outcome) {
      case 'GONE':
      case 'CLOSED': {
        const closed = verdict.outcome === 'CLOSED' ? verdict : undefined;
        const state = closed?.state;
        if (!isStaleActive(state, closed?.updatedAtMs ?? 0, score, now.getTime())) return { kind: 'recent' };
        await this.ownerIndex.dropActive(ownerKey, [{ taskId, maxScore: score }]);
        return { kind: 'removed', state };
      }
      case 'RUNNING':
        return { kind: 'running' };
      case 'PARKED':
        return { kind: 'parked' };
      case 'RECENT':
        return { kind: 'recent' };
      case 'WAKE':
        return { kind: 'wake', turn: verdict.turn, ownerKey: verdict.ownerKey, contextId: verdict.contextId };
      case 'CANDIDATE':
        return { kind: 'candidate', turn: verdict.turn, ownerKey: verdict.ownerKey, contextId: verdict.contextId, parentTaskId: verdict.parentTaskId };
    }
  }

  /** Takes the reconciler's sweep lock for `token` unless another process holds it. */
  async takeReconcilerLock(token: string, ttlMs: number): Promise<boolean> {
    return (await this.redis.set(this.keys.reconcilerLock(), token, 'PX', ttlMs, 'NX')) === 'OK';
  }

  /** Releases the reconciler's sweep lock while `token` still holds it. */
  releaseReconcilerLock(token: string): Promise<boolean> {
    return this.releaseLock(this.keys.reconcilerLock(), token);
  }

  /**
   * The owners whose active sets exist, a SCAN batch at a time. Owners' active sets live in
   * their owners' slots: on a Cluster, on every master.
   */
  async *ownersWithActiveSets(count: number): AsyncGenerator<string[]> {
    for await (const keys of scanKeys(this.redis, this.keys.ownerActivePattern(), count)) {
      const owners = keys.map((key) => this.keys.ownerOfActiveSet(key)).filter((ownerKey) => ownerKey !== undefined);
      if (owners.length > 0) yield owners;
    }
  }

  /** An owner's active-set entries (task id, when it became active in ms), a ZSCAN page at a time. */
  async *activeEntries(ownerKey: string, count: number): AsyncGenerator<{ taskId: string; score: number }[]> {
    const key = this.keys.ownerActiveTasks(ownerKey);
    let cursor = '0';
    do {
      const [next, flat] = await this.redis.zscan(key, cursor, 'COUNT', count);
      cursor = next;
      // ZSCAN replies member, score, member, score, ...
      const entries: { taskId: string; score: number }[] = [];
      for (let i = 0; i < flat.length; i += 2) entries.push({ taskId: flat[i] as string, score: Number(flat[i + 1]) });
      yield entries;
    } while (cursor !== '0');
  }

  /** Releases a lock taken with SET NX PX only while `token` still holds it. */
  async releaseLock(key: string, token: string): Promise<boolean> {
    return this.call(releaseLockScript, { lock: key }, { token });
  }
}
