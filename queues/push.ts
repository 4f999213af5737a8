// The BullMQ queue of webhook deliveries. One job is one (task, config, event) delivery; its id
// is the delivery id (`<taskId>.<configId>.<eventId>`, the webhook-id receivers dedup on), so
// adding the same delivery twice adds one job. Order per (task, config) is not the queue's job:
// the outbox keeps at most one delivery of a config in flight (src/push/outbox.ts). The queue's
// keys share one hash tag (docs/redis-slots.md).
import { Queue, Worker, type BackoffStrategy, type Job } from 'bullmq';
import type { RedisClient } from '../src/redis/connection.ts';
import { bullmqTelemetry } from '../src/telemetry/tracing.ts';
import { IDLE_DRAIN_DELAY_SECONDS } from './idle-fetch.ts';

export interface PushJobData {
  taskId: string;
  configId: string;
  /** The task event delivered (its stream id). */
  eventId: string;
  /** The StreamResponse JSON, as stored when the delivery was started. */
  eventJson: string;
  /** A replay of a dead letter (its number), sent outside the config's chain. */
  replay?: number;
}

export const PUSH_QUEUE_NAME = 'push';

export const pushQueuePrefix = (keyPrefix: string): string => `${keyPrefix}:{pushq}`;

export const deliveryIdOf = (taskId: string, configId: string, eventId: string): string => `${taskId}.${configId}.${eventId}`;

/** The backoff type whose delays the push worker computes (retry policy, Retry-After). */
export const PUSH_BACKOFF = 'webhook';

export function createPushQueue(connection: RedisClient, keyPrefix: string): Queue<PushJobData> {
  return new Queue<PushJobData>(PUSH_QUEUE_NAME, {
    connection,
    prefix: pushQueuePrefix(keyPrefix),
    telemetry: bullmqTelemetry(),
    defaultJobOptions: {
      removeOnComplete: true,
      removeOnFail: { count: 1_000 },
      // The retry horizon (push.retryHorizonMs), not a count, ends retries: the processor
      // dead-letters a delivery whose next try would fall past it.
      attempts: 1_000_000,
      backoff: { type: PUSH_BACKOFF },
    },
  });
}

export function createPushWorker(options: {
  connection: RedisClient;
  keyPrefix: string;
  concurrency: number;
  lockDurationMs: number;
  stalledIntervalMs: number;
  backoffStrategy: BackoffStrategy;
  process: (job: Job<PushJobData>, token?: string) => Promise<void>;
}): Worker<PushJobData> {
  return new Worker<PushJobData>(PUSH_QUEUE_NAME, options.process, {
    connection: options.connection,
    telemetry: bullmqTelemetry(),
    prefix: pushQueuePrefix(options.keyPrefix),
    concurrency: options.concurrency,
    lockDuration: options.lockDurationMs,
    stalledInterval: options.stalledIntervalMs,
    drainDelay: IDLE_DRAIN_DELAY_SECONDS,
    // A stall is a lost worker: the delivery is sent again under the same id, never given up.
    maxStalledCount: 1_000,
    settings: { backoffStrategy: options.backoffStrategy },
  });
}
