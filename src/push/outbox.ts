// The outbox: turns appended task events into delivery jobs. Durable by construction, fast by
// pub/sub. A task with push configs is indexed in its push shard; each config has a cursor in
// the task's slot, and pushNext marks the next event after it in flight (one per config at a
// time, so a receiver gets a task's events in order) before its job is added under the delivery
// id. Live events (the lossy fast path) start dispatch at once; the sweeper walks every shard's
// index periodically and starts whatever was missed, re-adds jobs lost between "marked in
// flight" and "job added", and drops entries of tasks that are finished and fully delivered.
// While the outbox is empty the sweeps space out, and each reads one change counter (bumped by
// every index write) instead of the sixteen shard sizes: an idle worker costs Redis one command
// per IDLE_SWEEP_MAX_MS here. While nothing new is indexed, a sweep looks only at the shards
// that had entries.
import type { Queue } from 'bullmq';
import { deliveryIdOf, type PushJobData } from '../../queues/push.ts';
import type { Logger } from '../logging/logger.ts';
import { newId } from '../ids.ts';
import type { PendingDelivery, PushStore } from '../store/push/push-store.ts';

/** An index entry of a task with no configs is kept this long (its config may still be on its way). */
const UNCONFIGURED_GRACE_MS = 60_000;
/** While the outbox is empty, sweeps space out (doubling) up to this long. */
const IDLE_SWEEP_MAX_MS = 30_000;
/** Tasks one sweep looks at per shard (bounded work per sweep). */
const SWEEP_PAGE = 200;
const SWEEP_MAX_PER_SHARD = 2_000;
/**
 * Longest an idle sweeper trusts the change counter alone before it reads every shard again: a
 * backstop for a counter bump that never landed (its writer lost Redis right after the index
 * write) or a Redis that lost its data and counted up to the same value again.
 */
const FULL_SWEEP_MAX_MS = 300_000;

export class PushOutbox {
  /** Tasks known to have no configs, until the given time: most events are not for push. */
  private readonly unconfigured = new Map<string, number>();
  private readonly pending = new Set<string>();
  private flushScheduled = false;
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  private closed = false;
  private readonly sweeperId = newId();
  /** Sweeps in a row that found the outbox empty (they space out; push activity resets it). */
  private idleSweeps = 0;
  /** The shards found with entries when the sizes were last read, and the change counter read just before. */
  private known: { changes: string | null; shards: Set<number>; readAtMs: number } | undefined;

  constructor(
    private readonly store: PushStore,
    private readonly queue: Queue<PushJobData>,
    private readonly logger: Logger,
    private readonly sweepIntervalMs: number,
  ) {}

  /**
   * Fast path: a live event of a task (or a config just attached); coalesced per tick. A task's
   * creation event (`created`) starts nothing: no config can exist before its task, and the
   * config's own attach notification starts its deliveries, so the task counts as unconfigured
   * from the start (no lookup per new task).
   */
  notify(taskId: string, configAttached = false, created = false): void {
    if (created && !configAttached) {
      if (!this.pending.has(taskId)) this.unconfigured.set(taskId, Date.now() + 1_000);
      return;
    }
    if (configAttached) {
      this.unconfigured.delete(taskId);
      this.active();
    } else {
      const until = this.unconfigured.get(taskId);
      if (until !== undefined && until > Date.now()) return;
    }
    this.pending.add(taskId);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      const taskIds = [...this.pending];
      this.pending.clear();
      for (const taskId of taskIds) {
        this.dispatch(taskId).catch((error: Error) => this.logger.debug('push dispatch failed; the sweeper retries', { taskId, error: error.message }));
      }
    });
  }

  /** Starts the next delivery of every config of a task that has none in flight. */
  async dispatch(taskId: string): Promise<void> {
    const next = await this.store.next(taskId, true);
    if (next.kind === 'gone') {
      this.unconfigured.set(taskId, Date.now() + 1_000);
      if (this.unconfigured.size > 100_000) this.unconfigured.clear();
      return;
    }
    const fresh = next.deliveries.filter((d) => d.kind === 'new');
    // Heals an index entry lost between storing a config and indexing it.
    if (fresh.length > 0) {
      this.active();
      await this.store.index(taskId);
    }
    await Promise.all(fresh.map((delivery) => this.addJob(taskId, delivery)));
  }

  /** Adds the job of a delivery marked in flight (by pushNext or pushSettle). */
  async addJob(taskId: string, delivery: PendingDelivery, replaceFailed = false): Promise<void> {
    const jobId = deliveryIdOf(taskId, delivery.configId, delivery.eventId);
    if (replaceFailed) {
      const existing = await this.queue.getJob(jobId);
      if (existing !== undefined) {
        const state = await existing.getState();
        if (state !== 'failed') return;
        await existing.remove();
        this.logger.warn('push delivery job had failed for good; started again', { deliveryId: jobId });
      }
    }
    await this.queue.add('deliver', { taskId, configId: delivery.configId, eventId: delivery.eventId, eventJson: delivery.eventJson }, { jobId });
  }

  /** One task in a sweep: start what is pending, re-add lost jobs, drop the entry when done. */
  private async sweepTask(taskId: string, indexedAtMs: number): Promise<void> {
    const next = await this.store.next(taskId, true);
    if (next.kind === 'gone') {
      if (Date.now() - indexedAtMs > UNCONFIGURED_GRACE_MS) await this.store.unindex(taskId);
      return;
    }
    if (next.drained) {
      await this.store.unindex(taskId);
      return;
    }
    for (const delivery of next.deliveries) await this.addJob(taskId, delivery, delivery.kind === 'inflight');
  }

  /**
   * Sweeps every shard that has entries once (each by one worker at a time); false when the
   * whole outbox was empty. One pipelined round trip finds the shards with entries.
   */
  async sweepOnce(): Promise<boolean> {
    return this.sweepShards(await this.shardsWithEntries(true));
  }

  /** A periodic sweep: reads the shard sizes only when something was indexed since they were last read. */
  private async periodicSweep(): Promise<boolean> {
    return this.sweepShards(await this.shardsWithEntries(false));
  }

  /**
   * The shards that may hold entries. Entries arrive only through an index write, which bumps the
   * change counter after it: while the counter stands where it stood before the sizes were last
   * read, no shard gained an entry since, and the shards that had entries then are the ones to
   * look at (none, for an idle outbox: one command). Otherwise, or `full`, every size is read.
   */
  private async shardsWithEntries(full: boolean): Promise<number[]> {
    const changes = await this.store.outboxChanges();
    const known = this.known;
    if (!full && known !== undefined && known.changes === changes && Date.now() - known.readAtMs < FULL_SWEEP_MAX_MS) return [...known.shards];
    const counts = await this.store.outboxSizes();
    const shards = counts.flatMap((count, shard) => (count > 0 ? [shard] : []));
    this.known = { changes, shards: new Set(shards), readAtMs: Date.now() };
    return shards;
  }

  private async sweepShards(shards: number[]): Promise<boolean> {
    for (const shard of shards) {
      if (this.closed) break;
      const lock = this.store.sweepLock(shard, this.sweeperId);
      if (!(await lock.tryLock(Math.max(5_000, this.sweepIntervalMs * 5)))) continue;
      try {
        for (let offset = 0; offset < SWEEP_MAX_PER_SHARD && !this.closed; offset += SWEEP_PAGE) {
          const page = await this.store.outboxPage(shard, offset, SWEEP_PAGE);
          // Found empty after the counter was read: an entry indexed since bumps the counter.
          if (offset === 0 && page.length === 0) this.known?.shards.delete(shard);
          for (const entry of page) {
            await this.sweepTask(entry.taskId, entry.indexedAtMs).catch((error: Error) =>
              this.logger.warn('push sweep of a task failed; tried again next sweep', { taskId: entry.taskId, error: error.message }),
            );
          }
          if (page.length < SWEEP_PAGE) break;
        }
      } finally {
        // Released only if still ours (a slow sweep may have lost it to another worker).
        await lock.release();
      }
    }
    return shards.length > 0;
  }

  /** The delay before the next sweep: the interval, doubling while the outbox stays empty. */
  private nextSweepDelayMs(): number {
    return Math.min(this.sweepIntervalMs * 2 ** Math.min(this.idleSweeps, 10), Math.max(this.sweepIntervalMs, IDLE_SWEEP_MAX_MS));
  }

  private tick = (): void => {
    if (this.closed) return;
    this.sweepTimer = undefined;
    this.sweeping = this.periodicSweep()
      .then((found) => {
        this.idleSweeps = found ? 0 : this.idleSweeps + 1;
      })
      .catch((error: Error) => this.logger.warn('push sweep failed; tried again next interval', { error: error.message }))
      .finally(() => {
        this.sweeping = undefined;
        if (!this.closed && this.sweepTimer === undefined) this.sweepTimer = setTimeout(this.tick, this.nextSweepDelayMs());
      });
  };

  /** Push activity seen: sweeps go back to every push.sweepIntervalMs. */
  private active(): void {
    if (this.idleSweeps === 0) return;
    this.idleSweeps = 0;
    if (this.sweeping !== undefined || this.closed) return; // the running sweep schedules the next one
    clearTimeout(this.sweepTimer);
    this.sweepTimer = setTimeout(this.tick, this.sweepIntervalMs);
  }

  start(): void {
    this.sweepTimer = setTimeout(this.tick, Math.min(this.sweepIntervalMs, 500));
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.sweepTimer);
    await this.sweeping;
  }
}
