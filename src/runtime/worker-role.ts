// The worker role: takes turns from the queue and runs them on the adapter. Any number of
// worker processes share one Redis; a turn whose worker dies is re-run by another.
import { DelayedError, type Job, type Worker } from 'bullmq';
import type { Agents } from '../agents/agents.ts';
import { createTurnWorker, TurnQueues, type TurnJobData } from '../../queues/turns.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { Logger } from '../logging/logger.ts';
import { openRedis, whenReady } from '../redis/connection.ts';
import { replayBoundOf } from '../store/replay-bound.ts';
import { TaskStore } from '../store/task-store.ts';
import { ByteRates } from '../limits/byte-rates.ts';
import { recentTaskIndexOf } from '../store/recent-tasks.ts';
import { Reconciler } from './reconciler.ts';
import { AssignmentStore } from '../coordination/assignment-store.ts';
import { Delegator } from '../coordination/delegator.ts';
import { TurnDeferredError, TurnRunner } from './turn-runner.ts';
import { RunningShare } from '../../queues/running-share.ts';
import { startPushRole, type PushRoleHandle } from '../push/push-role.ts';
import type { PushResolver } from '../push/receiver-policy.ts';
import { startScheduleRole, type ScheduleRoleHandle } from '../schedules/schedule-role.ts';
import { activeTurns, startProcessMetrics } from '../telemetry/metrics.ts';
import { probeRedisRoundTrips } from '../telemetry/redis-probe.ts';
import { checkReadiness, type Readiness } from '../gateway/readiness.ts';
import { ReplicaAck, replicaAckOf } from '../redis/replica-ack.ts';

export interface WorkerHandle {
  runner: TurnRunner;
  /** The agents whose turns this process runs. */
  agents: string[];
  /** Re-queues open tasks whose turn job is gone (every reconcileIntervalMs; reconcileOnce() on demand). */
  reconciler: Reconciler;
  /** Webhook deliveries (undefined when push.enabled is false). */
  push: PushRoleHandle | undefined;
  /** Schedule firing (undefined when schedules.enabled is false). */
  schedules: ScheduleRoleHandle | undefined;
  /** Whether this worker can take turns now (its metrics port's /readyz): Redis, scripts, its queue; not while closing. */
  checkReady(): Promise<Readiness>;
  close(): Promise<void>;
}

export interface WorkerRoleOptions {
  /** Directory relative paths in the configuration (push.signingKeyFile) are resolved against. */
  baseDir?: string;
  /** How webhook receivers' host names are resolved (tests inject one). */
  pushResolver?: PushResolver;
}

export async function startWorkerRole(config: GatewayConfig, agents: Agents, logger: Logger, options: WorkerRoleOptions = {}): Promise<WorkerHandle> {
  const commands = openRedis(config, 'commands');
  const cancelSubscriber = openRedis(config, 'cancel');
  const workerConnection = openRedis(config, 'worker');
  for (const [role, connection] of [['commands', commands], ['cancel', cancelSubscriber], ['worker', workerConnection]] as const) {
    connection.on('error', (error: Error) => logger.warn('Redis connection error; reconnecting', { role, error: error.message }));
  }
  const turnQueues = new TurnQueues(commands, config.keyPrefix, (error: Error) => logger.debug('turn queue error', { error: error.message }));
  const store = new TaskStore(commands, config.keyPrefix, config.retentionSeconds, replayBoundOf(config.replay), recentTaskIndexOf(config));
  const assignments = new AssignmentStore(commands, store.keys, store.replay);
  const delegator = Delegator.forAgents(config, agents, { store, assignments, queues: turnQueues });
  // Turns running at once per owner and per tenant, across every worker (limits.maxRunningTurnsPer…).
  const runningShare = new RunningShare(commands, config.keyPrefix, { ...config.limits, slotTtlMs: config.lockDurationMs });
  const runner = new TurnRunner({
    runningShare,
    store,
    agents,
    coordination: { delegator, assignments, retentionSeconds: config.retentionSeconds },
    logger,
    maxTurnAttempts: config.maxTurnAttempts,
    // Below BullMQ's lock, so by the time a stalled job is handed to another worker the
    // dead worker's lease has lapsed and the new one can take it.
    leaseTtlMs: Math.max(100, Math.floor(config.lockDurationMs * 0.8)),
    replicaAck: new ReplicaAck(commands, replicaAckOf(config)),
    // Agent output paced per owner (limits.outputBytesPerSecond), so a backend flooding its allowance waits for it.
    byteRates: new ByteRates(commands, store.keys, config.limits),
  });
  // This process's own metrics (a worker's metrics port serves them): its running turns, Redis latency.
  startProcessMetrics();
  const unregisterMetrics = [
    activeTurns.register(async () => [...runner.runningTurnsByAgent()].map(([agent, value]) => ({ labels: { agent }, value }))),
    probeRedisRoundTrips(commands, 'worker'),
  ];
  await whenReady(cancelSubscriber);
  await runner.listenForCancels(cancelSubscriber);
  // A job this process is still running can be handed to it again: when Redis was unreachable
  // for longer than the job's lock, stall detection puts the job back and this worker takes
  // it. Running both would burn a turn attempt, and worse, BullMQ tracks locks by job id, so
  // the first run's end stops the renewal of the second's lock, which then stalls in turn,
  // until the turn fails for attempts it never lost. The second delivery therefore waits for
  // the first run (whose lease generation is still current) and then finds the turn done, or
  // continues it if the first run stopped short.
  const runningJobs = new Map<string, Promise<void>>();
  const processTurnJob = async (job: Job<TurnJobData>, token?: string): Promise<void> => {
    try {
      await processOnce(job);
    } catch (error) {
      if (!(error instanceof TurnDeferredError)) throw error;
      // Back to the queue without spending an attempt; it keeps its priority when it is due.
      await job.moveToDelayed(Date.now() + deferralDelayMs(job.delay), token);
      throw new DelayedError();
    }
  };
  const processOnce = async (job: Job<TurnJobData>): Promise<void> => {
    const jobId = job.id ?? '';
    const earlier = runningJobs.get(jobId);
    const run = (async () => {
      if (earlier !== undefined) {
        logger.warn('turn job delivered again while this worker still runs it (its lock lapsed, e.g. during a Redis outage); waiting for that run', { jobId });
        await earlier.catch(() => undefined);
      }
      await runner.process(job);
    })();
    runningJobs.set(jobId, run);
    try {
      await run;
    } finally {
      if (runningJobs.get(jobId) === run) runningJobs.delete(jobId);
    }
  };
  // One BullMQ worker per agent this process serves, each with the agent's own concurrency.
  const served = agents.list().filter((agent) => config.workerAgents === undefined || config.workerAgents.includes(agent.name));
  const workers: Worker<TurnJobData>[] = served.map((agent) => {
    const worker = createTurnWorker({
      connection: workerConnection,
      prefix: config.keyPrefix,
      agent: agent.name,
      concurrency: agent.settings.limits.workerConcurrency,
      lockDurationMs: config.lockDurationMs,
      stalledIntervalMs: config.stalledIntervalMs,
      // A stall is a lost worker; the turn record counts attempts and fails the turn past the limit.
      maxStalledCount: config.maxTurnAttempts + 1,
      process: processTurnJob,
    });
    worker.on('error', (error) => logger.warn('turn worker error', { agent: agent.name, error: error.message }));
    worker.on('failed', (job, error) => logger.warn('turn job failed', { agent: agent.name, jobId: job?.id, error: error.message }));
    return worker;
  });
  await Promise.all(workers.map((worker) => worker.waitUntilReady()));
  const reconciler = new Reconciler({
    store,
    queues: turnQueues,
    logger,
    intervalMs: config.reconcileIntervalMs,
    // Longer than a lost worker's turn takes to be recovered by stall detection (one lock
    // period), so the reconciler does not race BullMQ for turns it is about to recover.
    quietForMs: config.lockDurationMs * 2,
    waitsForSlot: async (coordinatorId, taskId) => (await assignments.readAssignment(coordinatorId, taskId))?.state === 'queued',
  });
  reconciler.start();
  let closing = false;
  const push = config.push.enabled ? await startPushRole(config, logger, { baseDir: options.baseDir ?? process.cwd(), resolve: options.pushResolver }) : undefined;
  const schedules = config.schedules.enabled ? await startScheduleRole(config, agents, logger) : undefined;
  return {
    runner,
    agents: served.map((agent) => agent.name),
    reconciler,
    push,
    schedules,
    checkReady: () =>
      checkReadiness({ redis: commands, queue: served[0] === undefined ? undefined : turnQueues.of(served[0].name), draining: () => closing, logger }),
    async close() {
      closing = true;
      for (const unregister of unregisterMetrics) unregister();
      await reconciler.close();
      // Turns first: their grace period starts now, whatever deliveries and firings take to stop
      // (those are sent again or decided again by whichever worker is next; nothing is lost).
      const workersClosed = Promise.all(workers.map((worker) => worker.close()));
      const sideRoles = Promise.all([push?.close(), schedules?.close()]);
      const graceOver = new Promise<'grace-over'>((resolve) => setTimeout(() => resolve('grace-over'), config.shutdownGraceMs).unref());
      if ((await Promise.race([workersClosed.then(() => 'closed' as const), graceOver])) === 'grace-over') {
        const handedBack = runner.handBackAll();
        logger.info('handing running turns back to the queue', { turns: handedBack });
      }
      await workersClosed;
      await sideRoles;
      await turnQueues.close();
      runningShare.close();
      // The operators' index gets what this process noted last (a hint: lost, the next write restores it).
      await store.flushIndexesWithin(1_000);
      cancelSubscriber.disconnect();
      await commands.quit().catch(() => undefined);
      workerConnection.disconnect();
    },
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
