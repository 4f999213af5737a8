// The worker role: takes turns from the queue and runs them on the adapter. Any number of
// worker processes share one Redis; a turn whose worker dies is re-run by another.
import type { Adapter } from '../../adapters/types.ts';
import { createTurnWorker } from '../../queues/turns.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { Logger } from '../logging/logger.ts';
import { openRedis } from '../redis/connection.ts';
import { TaskStore } from '../store/task-store.ts';
import { TurnRunner } from './turn-runner.ts';

export interface WorkerHandle {
  runner: TurnRunner;
  close(): Promise<void>;
}

export async function startWorkerRole(config: GatewayConfig, adapter: Adapter, logger: Logger): Promise<WorkerHandle> {
  const commands = openRedis(config.redisUrl, 'commands');
  const cancelSubscriber = openRedis(config.redisUrl, 'cancel');
  const workerConnection = openRedis(config.redisUrl, 'worker');
  for (const [role, connection] of [['commands', commands], ['cancel', cancelSubscriber], ['worker', workerConnection]] as const) {
    connection.on('error', (error: Error) => logger.warn('Redis connection error; reconnecting', { role, error: error.message }));
  }
  const store = new TaskStore(commands, config.keyPrefix, config.retentionSeconds);
  const runner = new TurnRunner({
    store,
    adapter,
    logger,
    maxTurnAttempts: config.maxTurnAttempts,
    turnDeadlineMs: config.turnDeadlineMs,
    // Below BullMQ's lock, so by the time a stalled job is handed to another worker the
    // dead worker's lease has lapsed and the new one can take it.
    leaseTtlMs: Math.max(100, Math.floor(config.lockDurationMs * 0.8)),
  });
  await runner.listenForCancels(cancelSubscriber);
  const worker = createTurnWorker({
    connection: workerConnection,
    prefix: config.keyPrefix,
    concurrency: config.workerConcurrency,
    lockDurationMs: config.lockDurationMs,
    stalledIntervalMs: config.stalledIntervalMs,
    // A stall is a lost worker; the turn record counts attempts and fails the turn past the limit.
    maxStalledCount: config.maxTurnAttempts + 1,
    process: (job) => runner.process(job),
  });
  worker.on('error', (error) => logger.warn('turn worker error', { error: error.message }));
  worker.on('failed', (job, error) => logger.warn('turn job failed', { jobId: job?.id, error: error.message }));
  await worker.waitUntilReady();
  return {
    runner,
    async close() {
      // Finish what can finish within the grace period, then hand the rest back.
      const closing = worker.close();
      const graceOver = new Promise<'grace-over'>((resolve) => setTimeout(() => resolve('grace-over'), config.shutdownGraceMs).unref());
      if ((await Promise.race([closing.then(() => 'closed' as const), graceOver])) === 'grace-over') {
        const handedBack = runner.handBackAll();
        logger.info('handing running turns back to the queue', { turns: handedBack });
      }
      await closing;
      cancelSubscriber.disconnect();
      await commands.quit().catch(() => undefined);
      workerConnection.disconnect();
    },
  };
}
