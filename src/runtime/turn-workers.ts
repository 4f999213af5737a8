// The worker role's BullMQ workers, one per agent this process serves: each takes that agent's
// turn jobs with the agent's own concurrency and runs them on the turn runner. At shutdown the
// running turns have shutdownGraceMs to finish; what still runs then is handed back to the
// queue for another worker to continue.
import { DelayedError, type Job, type Worker } from 'bullmq';
import { createTurnWorker, type TurnJobData, type TurnQueues } from '../../queues/turns.ts';
import type { Lifecycle } from '../app/lifecycle.ts';
import type { Agent } from '../agents/agents.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { Logger } from '../logging/logger.ts';
import type { RedisClient } from '../redis/connection.ts';
import { TurnDeferredError, type TurnRunner } from './turn-runner.ts';
import { OneRunPerKey } from './one-run-per-key.ts';
import { LocalTurns } from './local-turns.ts';
import { ownerFromKey } from '../store/task-store.ts';
import { TurnSlots } from './turn-slots.ts';

export interface TurnWorkersSetup {
  /** The agents whose turns this process runs. */
  served: readonly Agent[];
  /** The BullMQ workers' blocking connection. */
  connection: RedisClient;
  runner: TurnRunner;
  /** Where a turn started here goes when its run stops short (local-turns.ts). */
  queues: TurnQueues;
  logger: Logger;
}

/** The turn workers of one process; agents written through the admin API are added while it runs. */
export interface TurnWorkers {
  /** Starts taking turns of `agent` (an added agent), or applies a replaced agent's concurrency. */
  serve(agent: Agent): Promise<void>;
  /** New tasks' first turns, started here when a place is free (config.localTurns). */
  local: LocalTurns;
}

export async function startTurnWorkers(lifecycle: Lifecycle, config: GatewayConfig, setup: TurnWorkersSetup): Promise<TurnWorkers> {
  const { runner, logger } = setup;
  const slots = new Map<string, TurnSlots>();
  const processJob = turnJobProcessor(runner, logger, (agent) => slots.get(agent));
  const local = new LocalTurns(runner, (agent) => (config.localTurns ? slots.get(agent) : undefined), setup.queues, logger);
  const workers = new Map<string, Worker<TurnJobData>>();
  let stopping = false;
  const workerOf = (agent: Agent): Worker<TurnJobData> => {
    slots.set(agent.name, new TurnSlots(agent.settings.limits.workerConcurrency));
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
      const workersClosed = Promise.all([local.stop(), ...[...workers.values()].map((worker) => worker.close())]);
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
        slots.get(agent.name)?.setLimit(agent.settings.limits.workerConcurrency);
        return;
      }
      await workerOf(agent).waitUntilReady();
    },
    local,
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
function turnJobProcessor(runner: TurnRunner, logger: Logger, slotsOf: (agent: string) => TurnSlots | undefined): (job: Job<TurnJobData>, token?: string) => Promise<void> {
  const runningJobs = new OneRunPerKey();
  const processOnce = (job: Job<TurnJobData>): Promise<void> => {
    const jobId = job.id ?? '';
    return runningJobs.run(jobId, () => runInSlot(runner, job, slotsOf(ownerFromKey(job.data.ownerKey).agent)), () =>
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
 * Runs a job's turn in one of the agent's places in this process. BullMQ takes no more jobs than
 * there are places, but turns started where they were accepted hold some: a job that finds none
 * free waits here for one, its lock renewed meanwhile.
 */
async function runInSlot(runner: TurnRunner, job: Job<TurnJobData>, slots: TurnSlots | undefined): Promise<void> {
  await slots?.take();
  try {
    // From being added (or due, when delayed) to being run, deferrals for the owner's share
    // included; a retried job's wait is its backoff, not the queue's.
    const waitedMs = job.attemptsMade === 0 ? (job.processedOn ?? Date.now()) - job.timestamp - (job.opts.delay ?? 0) : undefined;
    await runner.process({ data: job.data, jobId: job.id ?? '', waitedMs });
  } finally {
    slots?.release();
  }
}

/**
 * How long a deferred turn waits before it is looked at again: twice its last deferral, from
 * 200 ms up to 2 s, with a quarter of jitter so one owner's deferred turns do not come back together.
 */
export function deferralDelayMs(lastDelayMs: number | undefined): number {
  const base = Math.min(2_000, Math.max(200, 2 * (lastDelayMs ?? 0)));
  return Math.round(base * (0.75 + Math.random() * 0.25));
}
