// Schedules in a worker process: the BullMQ worker of the schedules queue and the firer.
import type { Worker } from 'bullmq';
import { createScheduleQueue, createScheduleWorker, type ScheduleJobData } from '../../queues/schedules.ts';
import { TurnQueues } from '../../queues/turns.ts';
import type { Agents } from '../agents/agents.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { Lifecycle } from '../app/lifecycle.ts';
import type { Logger } from '../logging/logger.ts';
import { openRedis } from '../redis/connection.ts';
import { replayBoundOf } from '../store/replay-bound.ts';
import { TaskStore } from '../store/task-store.ts';
import { recentTaskIndexOf } from '../store/recent-tasks.ts';
import { ScheduleFirer, type ScheduleFirerOptions } from './schedule-firer.ts';
import { ScheduleReconciler } from './schedule-reconciler.ts';
import { ScheduleStore } from '../store/schedules/schedule-store.ts';
import { PushStore } from '../store/push/push-store.ts';
import { SubscriptionStore } from '../store/push/subscription-store.ts';

export interface ScheduleRole {
  /** Re-creates lost jobs and starts stuck firings (reconcileOnce() on demand). */
  reconciler: ScheduleReconciler;
}

/** Starts schedule firing; what it starts is registered with the lifecycle, which stops it. */
export async function startScheduleRole(lifecycle: Lifecycle, config: GatewayConfig, agents: Agents, logger: Logger, consumers?: ScheduleFirerOptions['consumers']): Promise<ScheduleRole> {
  const commands = openRedis(config, 'commands');
  const workerConnection = openRedis(config, 'worker');
  for (const [role, connection] of [['schedule commands', commands], ['schedule worker', workerConnection]] as const) {
    connection.on('error', (error: Error) => logger.warn('Redis connection error; reconnecting', { role, error: error.message }));
  }
  lifecycle.register({
    name: 'schedule Redis connections',
    async stop() {
      workerConnection.disconnect();
      await commands.quit().catch(() => undefined);
    },
  });
  const queues = new TurnQueues(commands, config.keyPrefix, (error: Error) => logger.debug('turn queue error', { error: error.message }));
  lifecycle.register({ name: 'schedule turn queues', stop: () => queues.close() });
  const queue = createScheduleQueue(commands, config.keyPrefix);
  queue.on('error', (error: Error) => logger.debug('schedule queue error', { error: error.message }));
  lifecycle.register({ name: 'schedule queue', stop: () => queue.close().catch(() => undefined) });
  const store = new ScheduleStore(commands, config.keyPrefix);
  const pushStore = config.push.enabled ? new PushStore(commands, config.keyPrefix) : undefined;
  const firer = new ScheduleFirer({
    store,
    tasks: new TaskStore(commands, config.keyPrefix, config.retentionSeconds, replayBoundOf(config.replay), recentTaskIndexOf(config)),
    queues,
    agents,
    logger,
    lateAfterMs: config.schedules.lateAfterMs,
    minIntervalSeconds: config.schedules.minIntervalSeconds,
    idempotencyTtlSeconds: config.idempotencyTtlSeconds,
    retentionSeconds: config.retentionSeconds,
    ...(consumers === undefined ? {} : { consumers }),
    push:
      pushStore === undefined
        ? undefined
        : {
            store: pushStore,
            maxConfigs: config.push.maxConfigsPerTask + config.push.maxSubscriptionsPerOwner + 1,
            subscriptions: new SubscriptionStore(commands, config.keyPrefix),
            // Workers start the task's deliveries at once; their sweeper would find it anyway.
            onIndexed: (taskId) => void pushStore.announceAttached(taskId).catch(() => undefined),
          },
  });
  const worker: Worker<ScheduleJobData> = createScheduleWorker({
    connection: workerConnection,
    keyPrefix: config.keyPrefix,
    concurrency: config.schedules.concurrency,
    lockDurationMs: config.lockDurationMs,
    stalledIntervalMs: config.stalledIntervalMs,
    process: (job) => firer.process(job),
  });
  worker.on('error', (error) => logger.warn('schedule worker error', { error: error.message }));
  worker.on('failed', (job, error) => logger.warn('schedule job failed; retried', { scheduleId: job?.data.scheduleId, error: error.message }));
  lifecycle.register({ name: 'schedule worker', stop: () => worker.close() });
  await worker.waitUntilReady();
  const reconciler = new ScheduleReconciler({ store, queue, firer, logger, intervalMs: config.schedules.reconcileIntervalMs });
  await lifecycle.start({ name: 'schedule reconciler', start: () => reconciler.start(), stop: () => reconciler.close() });
  return { reconciler };
}
