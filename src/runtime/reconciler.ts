// Finds open tasks whose turn job is gone and queues the turn again. A job can vanish while its
// task stays open: removed by hand, lost when Redis crashed between a write and its fsync,
// failed after its retries, or never added because a gateway died between storing a message
// and enqueueing its turn; and a new task's first turn started where it was accepted
// (local-turns.ts) never had one, so if that process dies mid-run only this sweep finds it. Nothing else would ever run such a task, and it would count against
// its owner's active-task cap forever, so every worker process runs this sweep periodically;
// a Redis lock lets only one of them sweep at a time.
//
// Re-adding a job is safe even when the judgement is wrong (a job of an earlier turn is still
// carrying a follow-up turn, say): jobs only advance a task under its lease, so a second job
// finds the lease held, or the turn already over, and changes nothing.
import { newId } from '../ids.ts';
import { enqueueTurn, turnJobId, type TurnJobData, type TurnQueues } from '../../queues/turns.ts';
import type { Logger } from '../logging/logger.ts';
import type { TaskState } from '../protocol/types.ts';
import type { TaskStore } from '../store/task-store.ts';

/** Why a turn was queued again: its job was not there, or it had ended while the task is open. */
export type LostJob = 'missing' | 'failed' | 'completed' | 'unknown';

export interface ReconcileReport {
  /** False when another process held the sweep lock: this call changed nothing. */
  swept: boolean;
  requeued: { taskId: string; turn: number; job: LostJob }[];
  /** Active-set entries removed: their task is gone (state undefined) or has no turn queued or running. */
  pruned: { taskId: string; ownerKey: string; state: TaskState | undefined }[];
  /** Parked coordinators run again to re-check their assignments. */
  woken: string[];
}

export interface ReconcilerOptions {
  store: TaskStore;
  /** Each agent's turn queue. */
  queues: TurnQueues;
  logger: Logger;
  /** Sweep period; 0 = no periodic sweep (reconcileOnce still works). */
  intervalMs: number;
  /**
   * An open task with no lease is only suspected after it has been quiet this long, so a turn
   * between enqueue and pickup, or between a lost worker and stall recovery, is left alone.
   */
  quietForMs: number;
  /**
   * The same for a task whose last run no queue job carried (a turn started where it was
   * accepted, local-turns.ts): no stall detection will recover it, so it need not wait as long.
   * Its lease has lapsed when it is looked at (a task with a lease is never suspected). Default: quietForMs.
   */
  withoutJobQuietForMs?: number;
  /** How long the sweep lock outlives a sweeper that dies mid-sweep. */
  lockTtlMs?: number;
  /**
   * A coordinator parked this long without news is run once more, so it re-reads its
   * assignments (repairing one whose end was never recorded because its worker died).
   */
  parkedQuietForMs?: number;
  /** Tells whether a sub-agent's task is still waiting for a slot (it has no job on purpose). */
  waitsForSlot?: (coordinatorId: string, taskId: string) => Promise<boolean>;
}

const DEFAULT_LOCK_TTL_MS = 60_000;
const SCAN_COUNT = 200;

export class Reconciler {
  private readonly token = `${process.pid}:${newId()}`;
  private timer: NodeJS.Timeout | undefined;
  private sweep: Promise<ReconcileReport> | undefined;
  private closed = false;

  constructor(private readonly options: ReconcilerOptions) {}

  start(): void {
    if (this.options.intervalMs <= 0 || this.timer !== undefined) return;
    this.timer = setInterval(() => {
      this.reconcileOnce().catch((error: Error) => this.options.logger.warn('reconciler sweep failed; retrying next interval', { error: error.message }));
    }, this.options.intervalMs);
    this.timer.unref();
  }

  /** Stops the periodic sweep and waits for one in progress. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    this.timer = undefined;
    await this.sweep?.catch(() => undefined);
  }

  /** One sweep, if this process gets the lock; a sweep already running here is joined, not doubled. */
  reconcileOnce(): Promise<ReconcileReport> {
    if (this.sweep !== undefined) return this.sweep;
    const sweep = this.lockedSweep().finally(() => {
      if (this.sweep === sweep) this.sweep = undefined;
    });
    this.sweep = sweep;
    return sweep;
  }

  private async lockedSweep(): Promise<ReconcileReport> {
    const report: ReconcileReport = { swept: false, requeued: [], pruned: [], woken: [] };
    if (this.closed) return report;
    const { maintenance } = this.options.store;
    if (!(await maintenance.takeReconcilerLock(this.token, this.options.lockTtlMs ?? DEFAULT_LOCK_TTL_MS))) return report;
    report.swept = true;
    try {
      for await (const owners of maintenance.ownersWithActiveSets(SCAN_COUNT)) {
        for (const ownerKey of owners) await this.sweepActiveSet(ownerKey, report);
        if (this.closed) break;
      }
    } finally {
      await maintenance.releaseReconcilerLock(this.token);
    }
    return report;
  }

  private async sweepActiveSet(ownerKey: string, report: ReconcileReport): Promise<void> {
    const { store } = this.options;
    for await (const entries of store.maintenance.activeEntries(ownerKey, SCAN_COUNT)) {
      for (const { taskId, score } of entries) {
        const { quietForMs } = this.options;
        const quiet = { quietForMs, parkedQuietForMs: this.options.parkedQuietForMs ?? quietForMs * 10, withoutJobQuietForMs: this.options.withoutJobQuietForMs ?? quietForMs };
        const entry = await store.maintenance.reconcileActiveEntry(ownerKey, taskId, score, new Date(), quiet);
        if (entry.kind === 'removed') report.pruned.push({ taskId, ownerKey, state: entry.state });
        if (entry.kind === 'wake') {
          await this.options.queues.forOwner(entry.ownerKey).add('turn', { taskId, turn: entry.turn, ownerKey: entry.ownerKey, contextId: entry.contextId }, { jobId: `${turnJobId(taskId, entry.turn)}-w-r${Date.now()}` });
          report.woken.push(taskId);
          continue;
        }
        if (entry.kind !== 'candidate') continue;
        if (entry.parentTaskId !== undefined && (await this.options.waitsForSlot?.(entry.parentTaskId, taskId)) === true) continue;
        const lost = await this.requeueIfLost({ taskId, turn: entry.turn, ownerKey: entry.ownerKey, contextId: entry.contextId });
        if (lost !== undefined) report.requeued.push({ taskId, turn: entry.turn, job: lost });
      }
    }
  }

  /** Queues the turn again when its job is gone or ended; returns what was wrong with it. */
  private async requeueIfLost(data: TurnJobData): Promise<LostJob | undefined> {
    const { queues, logger } = this.options;
    const queue = queues.forOwner(data.ownerKey);
    const jobId = turnJobId(data.taskId, data.turn);
    const job = await queue.getJob(jobId);
    let lost: LostJob;
    if (job === undefined) {
      lost = 'missing';
    } else {
      const state = await job.getState();
      if (state !== 'failed' && state !== 'completed' && state !== 'unknown') return undefined;
      lost = state;
      // BullMQ ignores an add whose job id still exists, finished or not.
      if ((await queue.remove(jobId)) !== 1) return undefined;
    }
    await enqueueTurn(queues, data, undefined);
    logger.warn(`re-queued turn ${data.turn} of task ${data.taskId}: the task is open but its job was ${lost}`, {
      taskId: data.taskId,
      turn: data.turn,
      job: lost,
    });
    return lost;
  }
}
