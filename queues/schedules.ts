// The BullMQ queue that fires schedules: a cron schedule is a BullMQ job scheduler (id = the
// schedule id; each job it produces carries its planned time in opts.prevMillis), a one-time
// schedule is one delayed job (`once-<scheduleId>`). A job only says "schedule X is due at T":
// what fires is decided in the schedule's own record (src/schedules/schedule-firer.ts), so a job
// run twice fires nothing twice. The queue's keys share one hash tag (docs/redis-slots.md).
import { Queue, Worker, type Job } from 'bullmq';
import type { RedisClient } from '../src/redis/connection.ts';
import { bullmqTelemetry } from '../src/telemetry/tracing.ts';
import { IDLE_DRAIN_DELAY_SECONDS } from './idle-fetch.ts';

export interface ScheduleJobData {
  scheduleId: string;
  /** The planned time of a one-time schedule's firing (a cron job's is its opts.prevMillis). */
  atMs?: number;
}

export const SCHEDULE_QUEUE_NAME = 'schedules';

export const scheduleQueuePrefix = (keyPrefix: string): string => `${keyPrefix}:{schedq}`;

export const oneTimeJobId = (scheduleId: string): string => `once-${scheduleId}`;

const JOB_OPTIONS = { removeOnComplete: true, removeOnFail: { count: 1_000 }, attempts: 100, backoff: { type: 'exponential', delay: 1_000 } };

export function createScheduleQueue(connection: RedisClient, keyPrefix: string): Queue<ScheduleJobData> {
  return new Queue<ScheduleJobData>(SCHEDULE_QUEUE_NAME, { connection, prefix: scheduleQueuePrefix(keyPrefix), defaultJobOptions: JOB_OPTIONS, telemetry: bullmqTelemetry() });
}

/** Starts (or replaces) a cron schedule's job scheduler. */
export async function upsertCronJob(queue: Queue<ScheduleJobData>, scheduleId: string, cron: string, timeZone: string): Promise<void> {
  await queue.upsertJobScheduler(scheduleId, { pattern: cron, tz: timeZone }, { name: 'fire', data: { scheduleId }, opts: JOB_OPTIONS });
}

/** Adds a one-time schedule's job (a no-op when it is there already). */
export async function addOneTimeJob(queue: Queue<ScheduleJobData>, scheduleId: string, atMs: number): Promise<void> {
  await queue.add('fire', { scheduleId, atMs }, { jobId: oneTimeJobId(scheduleId), delay: Math.max(0, atMs - Date.now()) });
}

/** Stops a schedule's jobs (both kinds; whichever it has). */
export async function removeScheduleJobs(queue: Queue<ScheduleJobData>, scheduleId: string): Promise<void> {
  await queue.removeJobScheduler(scheduleId);
  await queue.remove(oneTimeJobId(scheduleId)).catch(() => 0);
}

export function createScheduleWorker(options: {
  connection: RedisClient;
  keyPrefix: string;
  concurrency: number;
  lockDurationMs: number;
  stalledIntervalMs: number;
  process: (job: Job<ScheduleJobData>) => Promise<void>;
}): Worker<ScheduleJobData> {
  return new Worker<ScheduleJobData>(SCHEDULE_QUEUE_NAME, options.process, {
    connection: options.connection,
    telemetry: bullmqTelemetry(),
    prefix: scheduleQueuePrefix(options.keyPrefix),
    concurrency: options.concurrency,
    lockDuration: options.lockDurationMs,
    stalledInterval: options.stalledIntervalMs,
    drainDelay: IDLE_DRAIN_DELAY_SECONDS,
    maxStalledCount: 1_000,
  });
}
