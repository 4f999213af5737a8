// The worker role's BullMQ workers, one per agent this process serves: each takes that agent's
// turn jobs with the agent's own concurrency and runs them on the turn runner. At shutdown the
// running turns have shutdownGraceMs to finish; what still runs then is handed back to the
// queue for another worker to continue.
import { DelayedError, type Job, type Worker } from 'bullmq';
import { createTurnWorker, type TurnJobData } from '../../queues/turns.ts';
import type { Lifecycle } from '../app/lifecycle.ts';
import type { Agent } from '../agents/agents.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { Logger } from '../logging/logger.ts';
import type { RedisClient } from '../redis/connection.ts';
import { TurnDeferredError, type TurnRunner } from './turn-runner.ts';
import { OneRunPerKey } from './one-run-per-key.ts';

export interface TurnWorkersSetup {
  /** The agents whose turns this process runs. */
  served: readonly Agent[];
  /** The BullMQ workers' blocking connection. */
  connection: RedisClient;
  runner: TurnRunner;
  logger: Logger;
}

/** The turn workers of one process; agents written through the admin API are added while it runs. */
export interface TurnWorkers {
  /** Starts taking turns of `agent` (an added agent), or applies a replaced agent's concurrency. */
  serve(agent: Agent): Promise<void>;
}

export async function startTurnWorkers(lifecycle: Lifecycle, config: GatewayConfig, setup: TurnWorkersSetup): Promise<TurnWorkers> {
  const { runner, logger } = setup;
  const processJob = turnJobProcessor(runner, logger);
  const workers = new Map<string, Worker<TurnJobData>>();
  let stopping = false;
  const workerOf = (agent: Agent): Worker<TurnJobData> => {
    const worker = createTurnWorker({
      connection: setup.connection,
      prefix: config.keyPrefix,
      agent: agent.name,
      concurrency: agent.settings.limits.workerConcurrency,
      lockDurationMs: config.lockDurationMs,
      stalledIntervalMs: config.stalledIntervalMs,
      // A stall is a lost worker; the turn record counts attempts and fails the turn past the limit.
      maxStalledCount: config.maxTurnAttempts + 1,
      process: processJob,
    });
    worker.on('error', (error) => logger.warn('turn worker error', { agent: agent.name, error: error.message }));
    worker.on('failed', (job, error) => logger.warn('turn job failed', { agent: agent.name, jobId: job?.id, error: error.message }));
    workers.set(agent.name, worker);
    return worker;
  };
  for (const agent of setup.served) workerOf(agent);
  lifecycle.register({
    name: 'turn workers',
    async stop() {
      stopping = true;
      // Their grace period starts now; the deliveries and firings stopped after them still send
      // what the last turns produce.
      const workersClosed = Promise.all([...workers.values()].map((worker) => worker.close()));
      const graceOver = new Promise<'grace-over'>((resolve) => setTimeout(() => resolve('grace-over'), config.shutdownGraceMs).unref());
      if ((await Promise.race([workersClosed.then(() => 'closed' as const), graceOver])) === 'grace-over') {
        const handedBack = runner.handBackAll();
        logger.info('handing running turns back to the queue', { turns: handedBack });
      }
      await workersClosed;
    },
  });
  await Promise.all([...workers.values()].map((worker) => worker.waitUntilReady()));
  return {
    async serve(agent) {
      if (stopping) return;
      const running = workers.get(agent.name);
      // A removed agent's worker is kept: it takes the turns still queued, which fail naming the removal.
      if (running !== undefined) {
        running.concurrency = agent.settings.limits.workerConcurrency;
        return;
      }
      await workerOf(agent).waitUntilReady();
    },
  };
}

/**
 * Runs a turn job. A job this process is still running can be handed to it again: when Redis
 * was unreachable for longer than the job's lock, stall detection puts the job back and this
 * worker takes it. Running both would burn a turn attempt, and worse, BullMQ tracks locks by
 * job id, so the first run's end stops the renewal of the second's lock, which then stalls in
 * turn, until the turn fails for attempts it never lost. The second delivery therefore waits
 * for the first run (whose lease generation is still current) and then finds the turn done,
 * or continues it if the first run stopped short.
 */
function turnJobProcessor(runner: TurnRunner, logger: Logger): (job: Job<TurnJobData>, token?: string) => Promise<void> {
  const runningJobs = new OneRunPerKey();
  const processOnce = (job: Job<TurnJobData>): Promise<void> => {
    const jobId = job.id ?? '';
    return runningJobs.run(jobId, () => runner.process(job), () =>
      logger.warn('turn job delivered again while this worker still runs it (its lock lapsed, e.g. during a Redis outage); waiting for that run', { jobId }),
    );
  };
  return async (job, token) => {
    try {
      await processOnce(job);
    } catch (error) {
      if (!(error instanceof TurnDeferredError)) throw error;
      // Back to the queue without spending an attempt; it keeps its priority when it is due.
      await job.moveToDelayed(Date.now() + deferralDelayMs(job.delay), token);
      throw new DelayedError();
    }
  };
}

/**
 * How long a deferred turn waits before it is looked at again: twice its last deferral, from
 * 200 ms up to 2 s, with a quarter of jitter so one owner's deferred turns do not come back together.
 */
export function deferralDelayMs(lastDelayMs: number | undefined): number {
  const base = Math.min(2_000, Math.max(200, 2 * (lastDelayMs ?? 0)));
  return Math.round(base * (0.75 + Math.random() * 0.25));
}
