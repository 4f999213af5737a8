// The gateway's side of consumer plans: before an operation runs, one token of the consumer's
// request rate (and the request counted); before a new task is stored, a place among its tasks in
// progress and in today's task count. A refusal is a 429 with Retry-After whose reason names the
// consumer, its plan and the limit, in the binding's error shape (limit-refusal.ts); nothing of
// the refused call is stored or counted.
import { LimitExceededError, type LimitName } from '../limits/limit-refusal.ts';
import type { ConsumerStore } from '../store/consumers/consumer-store.ts';
import type { ConsumerDirectory, EffectivePlan, PlanLimitName, ResolvedConsumer } from './consumer-directory.ts';

/** Tasks of the active set looked at by one sweep: the set holds at most the plan's limit unless the limit was lowered. */
const SWEEP_MAX = 1_000;
/** A reserved task may not be stored yet: one missing for less than this is not taken for gone. */
const RESERVATION_GRACE_MS = 60_000;
/** States in which a task is in progress (the others ended its claim on the plan). */
const IN_PROGRESS = new Set(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING']);
/** What a refusal for tasks in progress suggests: about when one may have finished. */
const TASKS_RETRY_AFTER_S = 5;

/** A reserved task: give it back when the task was not created after all. */
export interface TaskReservation {
  undo(): Promise<void>;
}

/** Reserves the caller's next new task under its consumer's plan (the request's own, made at admission). */
export type TaskReserver = (taskId: string) => Promise<TaskReservation>;

const describeLimit = (limit: PlanLimitName, plan: EffectivePlan): string => {
  if (limit === 'requestsPerSecond') return `requestsPerSecond ${plan.requestsPerSecond} (bursts of ${plan.burst})`;
  return `${limit} ${plan[limit]}`;
};

/** The refusal (or a turn's failure) for `consumer` at `limit`, naming both, what was reached, and when to retry. */
export function planRefusal(consumer: ResolvedConsumer, limit: PlanLimitName, reached: string, retryAfterSeconds: number): LimitExceededError {
  const name = `consumer.${limit}` as LimitName;
  return new LimitExceededError(
    name,
    'RESOURCE_EXHAUSTED',
    `Consumer "${consumer.id}" reached the limit ${describeLimit(limit, consumer.limits)} of its plan "${consumer.plan}": ${reached}. Nothing was done; retry after ${retryAfterSeconds} s, or ask an admin for a larger plan.`,
    { retryAfterSeconds, metadata: { reason: 'PLAN_LIMIT', consumer: consumer.id, plan: consumer.plan, planLimit: limit } },
  );
}

/** Seconds until the next UTC midnight (a daily count starts again). */
export const secondsToNextDay = (nowMs: number): number => Math.max(1, Math.ceil((86_400_000 - (nowMs % 86_400_000)) / 1000));

export class ConsumerGate {
  constructor(
    readonly directory: ConsumerDirectory,
    private readonly store: ConsumerStore,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Admits one request of the caller (tenant, principal subject) under its consumer's plan:
   * undefined when the caller is no consumer's; else a reserver for the new task the request may
   * start. Throws the plan's 429 when the rate is spent.
   */
  async admit(tenant: string, subject: string): Promise<TaskReserver | undefined> {
    const consumer = this.directory.resolve(tenant, subject);
    if (consumer === undefined) return undefined;
    const { requestsPerSecond, burst } = consumer.limits;
    const taken = await this.store.admitRequest(consumer.id, requestsPerSecond, burst);
    if (!taken.taken) {
      const retryAfterSeconds = Math.max(1, Math.ceil(taken.waitMs / 1000));
      throw planRefusal(consumer, 'requestsPerSecond', `its callers together sent as many requests as the rate allows`, retryAfterSeconds);
    }
    return (taskId) => this.reserveTask(consumer, taskId);
  }

  /**
   * A reserver for tasks the gateway starts on an owner's behalf without a request of theirs (a
   * schedule's firing): the plan's tasks in progress and tasks per day hold for them too, but no
   * request was made, so none is counted. Undefined when the owner is no consumer's.
   */
  reserverFor(tenant: string, subject: string): TaskReserver | undefined {
    const consumer = this.directory.resolve(tenant, subject);
    return consumer === undefined ? undefined : (taskId) => this.reserveTask(consumer, taskId);
  }

  private async reserveTask(consumer: ResolvedConsumer, taskId: string): Promise<TaskReservation> {
    const { concurrentTasks, tasksPerDay } = consumer.limits;
    let reserved = await this.store.startTask(consumer.id, taskId, concurrentTasks, tasksPerDay);
    // Full: tasks that ended since they were reserved still hold places; let them go and try once more.
    if (!reserved.start.ok && reserved.start.limit === 'concurrentTasks' && (await this.sweep(consumer.id)) > 0) {
      reserved = await this.store.startTask(consumer.id, taskId, concurrentTasks, tasksPerDay);
    }
    const { start } = reserved;
    if (start.ok) return { undo: reserved.undo };
    if (start.limit === 'concurrentTasks') {
      throw planRefusal(consumer, 'concurrentTasks', `it has ${start.count} tasks queued or running; wait for one to finish or cancel one`, TASKS_RETRY_AFTER_S);
    }
    throw planRefusal(consumer, 'tasksPerDay', `it started ${start.count} tasks today (UTC)`, secondsToNextDay(this.now()));
  }

  /** Takes the consumer's tasks that ended (or are gone) out of its active set; how many. */
  private async sweep(id: string): Promise<number> {
    const entries = await this.store.activeTasks(id, SWEEP_MAX);
    if (entries.length === 0) return 0;
    const states = await this.store.taskStates(entries.map(([taskId]) => taskId));
    const settled = this.now() - RESERVATION_GRACE_MS;
    const ended = entries.filter(([, reservedAtMs], i) => {
      const state = states[i];
      if (state === undefined) return false;
      return state === '' ? reservedAtMs < settled : !IN_PROGRESS.has(state);
    });
    await this.store.endTasks(id, ended.map(([taskId]) => taskId));
    return ended.length;
  }
}
