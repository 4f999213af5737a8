// Keeps schedules and their BullMQ jobs in agreement, whatever crashed in between: every
// `schedules.reconcileIntervalMs` one worker (whichever takes a Redis lock) walks the index of
// all schedules and, for each, re-creates the job an active schedule lacks (a gateway that died
// between storing a schedule and adding its job), starts firings decided but never started (a
// firing job that gave up), and drops index entries of schedules that are gone. It logs a
// warning for everything it repairs: a repair means something was lost and is now found.
import type { Queue } from 'bullmq';
import { addOneTimeJob, oneTimeJobId, upsertCronJob, type ScheduleJobData } from '../../queues/schedules.ts';
import { newId } from '../ids.ts';
import type { Logger } from '../logging/logger.ts';
import type { ScheduleFirer } from './schedule-firer.ts';
import type { ScheduleStore } from '../store/schedules/schedule-store.ts';

/** A schedule being created is given this long before an index entry without a record is dropped. */
const CREATION_GRACE_MS = 60_000;
/** A decided firing not started this long after is started by the reconciler. */
const STUCK_FIRING_MS = 60_000;
const PAGE = 200;

export class ScheduleReconciler {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private closed = false;
  private readonly token = newId();

  constructor(
    private readonly options: { store: ScheduleStore; queue: Queue<ScheduleJobData>; firer: ScheduleFirer; logger: Logger; intervalMs: number },
  ) {}

  /** One pass over every schedule; false when another worker holds the lock. */
  async reconcileOnce(): Promise<boolean> {
    const { store, logger } = this.options;
    const lock = store.reconcilerLock(this.token);
    if (!(await lock.tryLock(Math.max(10_000, this.options.intervalMs)))) return false;
    try {
      for (let offset = 0; !this.closed; offset += PAGE) {
        const page = await store.allPage(offset, PAGE);
        for (const entry of page) await this.reconcile(entry.id, entry.indexedAtMs).catch((error: Error) => logger.warn('schedule reconcile failed; tried again next pass', { scheduleId: entry.id, error: error.message }));
        if (page.length < PAGE) break;
      }
    } finally {
      await lock.release();
    }
    return true;
  }

  private async reconcile(id: string, indexedAtMs: number): Promise<void> {
    const { store, queue, logger } = this.options;
    const record = await store.read(id, undefined, 50);
    if (record === undefined) {
      if (Date.now() - indexedAtMs > CREATION_GRACE_MS) await store.unindexAll(id);
      return;
    }
    const { definition } = record;
    if (record.state === 'active') {
      if (definition.cron !== undefined && (await queue.getJobScheduler(id)) === undefined) {
        logger.warn('schedule had no job scheduler; created it', { scheduleId: id });
        await upsertCronJob(queue, id, definition.cron, definition.timeZone);
      }
      if (definition.at !== undefined && (await queue.getJob(oneTimeJobId(id))) === undefined) {
        logger.warn('one-time schedule had no job; added it (a late one is decided by its lateness policy)', { scheduleId: id });
        await addOneTimeJob(queue, id, definition.at);
      }
    }
    const stuck = record.firings.some((f) => f.state === 'starting' && Date.now() - f.decidedAtMs > STUCK_FIRING_MS);
    if (stuck) {
      logger.warn('schedule had firings decided but not started; starting them', { scheduleId: id });
      await this.options.firer.startPending(id);
    }
  }

  start(): void {
    if (this.options.intervalMs <= 0) return;
    const tick = (): void => {
      if (this.closed) return;
      this.running = this.reconcileOnce()
        .then(() => undefined)
        .catch((error: Error) => this.options.logger.warn('schedule reconcile pass failed', { error: error.message }))
        .finally(() => {
          this.running = undefined;
          if (!this.closed) this.timer = setTimeout(tick, this.options.intervalMs);
        });
    };
    this.timer = setTimeout(tick, this.options.intervalMs);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.running;
  }
}
