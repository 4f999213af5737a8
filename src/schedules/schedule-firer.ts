// Fires schedules in the worker: a due job names a schedule; the schedule's record decides,
// atomically, which planned times fire now (the due one, and missed ones as its lateness policy
// says) and records the rest as skipped; each firing then becomes a task of the schedule's owner
// with its turn queued. Every step is idempotent: a firing's task id is chosen when it is
// decided, and its message id is derived from the firing (`sched-<id>-<planned ms>`), so a
// firing started twice (a restart, a lost worker) creates and queues one task.
import type { Job } from 'bullmq';
import { enqueueTurn, type TurnQueues } from '../../queues/turns.ts';
import type { ScheduleJobData } from '../../queues/schedules.ts';
import type { Agents } from '../agents/agents.ts';
import { newId } from '../ids.ts';
import type { Logger } from '../logging/logger.ts';
import { logFailure } from '../logging/operator-failures.ts';
import { GATEWAY_METADATA_KEY, ownerFromKey, type TaskStore } from '../store/task-store.ts';
import type { DueFiring, ScheduleStore } from '../store/schedules/schedule-store.ts';
import { timesBetween } from './schedule-timing.ts';
import type { ScheduleRecord } from './schedule-types.ts';
import type { StoredPushConfig } from '../push/push-config.ts';
import { attachConfigs, matchingSubscriptions, subscriptionConfig, type AttachDeps } from '../push/subscription-configs.ts';
import type { SubscriptionStore } from '../store/push/subscription-store.ts';
import type { TaskReservation, TaskReserver } from '../consumers/consumer-gate.ts';
import { LimitExceededError } from '../limits/limit-refusal.ts';

/** Most planned times one decision looks at (older missed ones are counted as skipped). */
const MAX_CANDIDATES = 100;

export interface ScheduleFirerOptions {
  store: ScheduleStore;
  tasks: TaskStore;
  queues: TurnQueues;
  agents: Agents;
  logger: Logger;
  lateAfterMs: number;
  /** schedules.minIntervalSeconds: a firing planned sooner after the previous one is skipped. */
  minIntervalSeconds: number;
  idempotencyTtlSeconds: number;
  /** How long a completed one-time schedule stays readable (retentionSeconds). */
  retentionSeconds: number;
  /** Push configs of each firing's task (the schedule's own, the owner's subscriptions); undefined when push is off. */
  push?: AttachDeps & { subscriptions: SubscriptionStore };
  /** Consumer plans: a firing's task is one of its owner's tasks, held to the plan like a caller's. */
  consumers?: { reserverFor(tenant: string, subject: string): TaskReserver | undefined };
}

/** The id of the config a schedule puts on each task it starts. */
export const schedulePushConfigId = (scheduleId: string): string => `schedule-${scheduleId}`;

/**
 * The planned times of this decision that were missed (older than lateAfterMs), as the decision
 * script judges them (schedFire lua): the lateness policy fires the newest `keep` of them and
 * skips the rest. Worked out here for the log line only; the script's decision is what counts.
 */
export function missedFirings(record: Pick<ScheduleRecord, 'definition' | 'lastScheduledForMs'>, candidates: readonly number[], omitted: number, nowMs: number, lateAfterMs: number): { skipped: number; fired: number } {
  const late = candidates.filter((t) => t > record.lastScheduledForMs && nowMs - t > lateAfterMs).length + omitted;
  const { policy, catchUpMax } = record.definition.lateness;
  const keep = policy === 'run-once' ? 1 : policy === 'catch-up' ? catchUpMax : 0;
  const fired = Math.min(late, keep);
  return { skipped: late - fired, fired };
}

export class ScheduleFirer {
  constructor(private readonly options: ScheduleFirerOptions) {}

  async process(job: Job<ScheduleJobData>): Promise<void> {
    const { scheduleId } = job.data;
    const record = await this.options.store.read(scheduleId, undefined, 0);
    if (record === undefined) return;
    const nowMs = Date.now();
    const { definition } = record;
    let candidates: number[];
    let omitted = 0;
    if (definition.at !== undefined) candidates = [definition.at];
    else {
      const between = timesBetween(definition.cron as string, definition.timeZone, record.lastScheduledForMs, nowMs, MAX_CANDIDATES);
      candidates = between.times;
      omitted = between.omitted;
      // The job's own planned time, even a hair ahead of this clock.
      const planned = job.opts.prevMillis;
      if (planned !== undefined && planned > record.lastScheduledForMs && !candidates.includes(planned)) {
        candidates = [...candidates, planned].sort((a, b) => a - b);
      }
    }
    const decided = await this.options.store.decide(scheduleId, {
      nowMs,
      lateAfterMs: this.options.lateAfterMs,
      candidates,
      taskIds: candidates.map(() => newId()),
      omitted,
      retentionMs: this.options.retentionSeconds * 1000,
      minIntervalMs: this.options.minIntervalSeconds * 1000,
    });
    if ('inactive' in decided) return;
    const ids = { scheduleId, owner: record.ownerKey, agent: ownerFromKey(record.ownerKey).agent };
    if (decided.tooSoon > 0) {
      logFailure(this.options.logger, 'schedule-misfire', {
        ...ids,
        cause: `${decided.tooSoon} firing(s) skipped: planned sooner than schedules.minIntervalSeconds (${this.options.minIntervalSeconds} s) after the previous firing`,
        misfire: 'too-soon',
        skipped: decided.tooSoon,
        minIntervalSeconds: this.options.minIntervalSeconds,
      });
    }
    const missed = missedFirings(record, candidates, omitted, nowMs, this.options.lateAfterMs);
    if (missed.skipped > 0 || missed.fired > 0) {
      const { policy } = definition.lateness;
      logFailure(this.options.logger, 'schedule-misfire', {
        ...ids,
        cause: `${missed.skipped + missed.fired} planned firing(s) missed while no worker fired them (more than schedules.lateAfterMs late): lateness policy ${policy} skipped ${missed.skipped} and fired ${missed.fired} late`,
        misfire: 'missed',
        skipped: missed.skipped,
        firedLate: missed.fired,
        latenessPolicy: policy,
      });
    }
    for (const firing of decided.due) await this.start(record, firing);
    // A completed one-time schedule no longer counts against its owner's limit (index step, owner slot).
    if (decided.completed) await this.options.store.unclaim(record.ownerKey, record.id);
  }

  /** Starts firings that were decided but not started (their job gave up); decides nothing new. */
  async startPending(scheduleId: string): Promise<void> {
    const record = await this.options.store.read(scheduleId, undefined, 0);
    if (record === undefined) return;
    const decided = await this.options.store.decide(scheduleId, {
      nowMs: Date.now(),
      lateAfterMs: this.options.lateAfterMs,
      candidates: [],
      taskIds: [],
      omitted: 0,
      retentionMs: this.options.retentionSeconds * 1000,
      minIntervalMs: this.options.minIntervalSeconds * 1000,
    });
    if ('inactive' in decided) return;
    for (const firing of decided.due) await this.start(record, firing);
  }

  private async start(record: ScheduleRecord, firing: DueFiring): Promise<void> {
    const { store, tasks } = this.options;
    const owner = ownerFromKey(record.ownerKey);
    const agent = this.options.agents.get(owner.agent);
    if (agent === undefined) {
      const reason = `agent "${owner.agent}" is no longer configured`;
      await store.firingDone(record.id, firing.firingId, 'failed', firing.taskId, reason);
      logFailure(this.options.logger, 'schedule-misfire', { cause: reason, misfire: 'refused', scheduleId: record.id, firingId: firing.firingId, owner: record.ownerKey, agent: owner.agent });
      return;
    }
    const { definition } = record;
    const contextId = definition.message.contextId ?? newId();
    const message = {
      ...definition.message,
      messageId: `sched-${record.id}-${firing.scheduledFor}`,
      role: 'ROLE_USER' as const,
      taskId: firing.taskId,
      contextId,
    };
    const reservation = await this.reserve(record, firing);
    if (reservation === 'refused') return;
    const created = await tasks.gateway.createTask({
      taskId: firing.taskId,
      owner,
      contextId,
      message,
      metadata: {
        ...(definition.metadata ?? {}),
        [GATEWAY_METADATA_KEY]: { schedule: { id: record.id, firingId: firing.firingId, scheduledFor: new Date(firing.scheduledFor).toISOString() } },
      },
      idempotencyTtlSeconds: this.options.idempotencyTtlSeconds,
      versions: agent.versionsFor(),
      maxActiveTasks: agent.settings.limits.maxActiveTasks,
      now: new Date(),
    }).catch(async (error: unknown) => {
      await reservation?.undo();
      throw error;
    });
    // A duplicate is the firing's task from an earlier start, which counted it already.
    if (created.kind !== 'created') await reservation?.undo();
    if (created.kind === 'too-many-active') {
      const reason = `the owner has ${created.active} tasks of agent "${owner.agent}" queued or running, the limit (limits.maxActiveTasks)`;
      await store.firingDone(record.id, firing.firingId, 'failed', firing.taskId, reason);
      logFailure(this.options.logger, 'schedule-misfire', { cause: reason, misfire: 'refused', scheduleId: record.id, firingId: firing.firingId, taskId: firing.taskId, contextId, owner: record.ownerKey, agent: owner.agent });
      return;
    }
    const taskId = created.kind === 'duplicate' ? created.taskId : firing.taskId;
    // Before the turn is queued; a firing started again puts the same configs on again, harmlessly.
    await this.attachPush(record, taskId, contextId);
    const read = await tasks.gateway.readTask(taskId, owner, 0);
    // A task that ran already (its firing was started before a crash) needs no second turn.
    if (read !== undefined && read.task.status.state === 'TASK_STATE_SUBMITTED') {
      // Queued with its owner's count of active tasks as priority, like any new task (fairness between owners).
      const ownerActiveTasks = created.kind === 'created' ? created.active : 1;
      await enqueueTurn(this.options.queues, { taskId, turn: 1, ownerKey: record.ownerKey, contextId: read.task.contextId }, undefined, ownerActiveTasks);
    }
    await store.firingDone(record.id, firing.firingId, 'started', taskId);
  }

  /**
   * A place for the firing's task under its owner's consumer plan: undefined when no plan applies
   * or the task exists (an earlier start of this firing took its place); 'refused' when the plan
   * is full, the firing then recorded as failed with the plan's reason, as a caller's send would
   * have been refused.
   */
  private async reserve(record: ScheduleRecord, firing: DueFiring): Promise<TaskReservation | 'refused' | undefined> {
    const owner = ownerFromKey(record.ownerKey);
    const reserver = this.options.consumers?.reserverFor(owner.tenant, owner.subject);
    if (reserver === undefined || (await this.options.tasks.gateway.taskOwnerKey(firing.taskId)) !== undefined) return undefined;
    try {
      return await reserver(firing.taskId);
    } catch (error) {
      if (!(error instanceof LimitExceededError)) throw error;
      await this.options.store.firingDone(record.id, firing.firingId, 'failed', firing.taskId, error.message);
      logFailure(this.options.logger, 'schedule-misfire', { cause: error.message, misfire: 'refused', scheduleId: record.id, firingId: firing.firingId, owner: record.ownerKey, agent: owner.agent, limit: error.limit });
      return 'refused';
    }
  }

  /** The schedule's push config and the owner's subscriptions that cover the task, each from the task's first event. */
  private async attachPush(record: ScheduleRecord, taskId: string, contextId: string): Promise<void> {
    const { push } = this.options;
    if (push === undefined) return;
    const configs: StoredPushConfig[] = [];
    const own = record.definition.push;
    if (own !== undefined) configs.push({ ...own, id: schedulePushConfigId(record.id), taskId, createdAtMs: record.createdAtMs });
    const subscriptions = matchingSubscriptions(await push.subscriptions.list(record.ownerKey), contextId);
    configs.push(...subscriptions.map((s) => subscriptionConfig(record.ownerKey, s, taskId)));
    await attachConfigs(push, record.ownerKey, configs);
  }
}
