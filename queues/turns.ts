// The BullMQ queue that carries turns from gateways to workers. A job names a task whose
// turn is open; the worker that takes it advances the task until no turn is open. BullMQ's
// stall detection hands a job whose worker died to another worker; the task's lease and
// turn record (not the job) carry attempts and progress.
import { Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';

export const TURN_QUEUE_NAME = 'turns';

export interface TurnJobData {
  taskId: string;
  /** The turn that was opened when this job was enqueued. */
  turn: number;
  ownerKey: string;
  contextId: string;
}

/** Deterministic job id: enqueueing the same turn twice (a re-sent message) adds one job. */
export const turnJobId = (taskId: string, turn: number): string => `${taskId}-t${turn}`;

export function createTurnQueue(connection: Redis, prefix: string): Queue<TurnJobData> {
  return new Queue<TurnJobData>(TURN_QUEUE_NAME, {
    connection,
    prefix,
    defaultJobOptions: {
      removeOnComplete: true,
      removeOnFail: { count: 10_000 },
      // Failures inside a turn are recorded on the task (and the turn's own attempt limit and
      // deadline end it with a reason); a job only throws on infrastructure trouble: Redis
      // gone mid-turn, a lease still held by a worker that is winding down, a hand-back at
      // shutdown. A job that gave up would leave its task open for good, so it keeps retrying
      // once a second for ten minutes, which outlasts any Redis restart or lease.
      attempts: 600,
      backoff: { type: 'fixed', delay: 1_000 },
    },
  });
}

export async function enqueueTurn(queue: Queue<TurnJobData>, data: TurnJobData): Promise<void> {
  await queue.add('turn', data, { jobId: turnJobId(data.taskId, data.turn) });
}

export function createTurnWorker(options: {
  connection: Redis;
  prefix: string;
  concurrency: number;
  lockDurationMs: number;
  stalledIntervalMs: number;
  maxStalledCount: number;
  process: (job: Job<TurnJobData>) => Promise<void>;
}): Worker<TurnJobData> {
  return new Worker<TurnJobData>(TURN_QUEUE_NAME, options.process, {
    connection: options.connection,
    prefix: options.prefix,
    concurrency: options.concurrency,
    lockDuration: options.lockDurationMs,
    stalledInterval: options.stalledIntervalMs,
    maxStalledCount: options.maxStalledCount,
    removeOnComplete: { count: 0 },
  });
}
