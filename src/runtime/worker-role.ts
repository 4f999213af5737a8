// The worker role: takes turns from the queue and runs them on the adapter. Any number of
// worker processes share one Redis; a turn whose worker dies is re-run by another.
import type { Agents } from '../agents/agents.ts';
import { configuredAgentsOf } from '../agents/agent-settings.ts';
import type { ControlPlane } from '../control/control-plane.ts';
import { connectLiveAgents } from '../control/live-agents.ts';
import { consumerPlans } from '../consumers/consumer-plans.ts';
import { TurnQueues } from '../../queues/turns.ts';
import { Lifecycle } from '../app/lifecycle.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { Logger } from '../logging/logger.ts';
import { openRedis, whenReady, type RedisClient } from '../redis/connection.ts';
import { replayBoundOf } from '../store/replay-bound.ts';
import { TaskStore } from '../store/task-store.ts';
import { ByteRates } from '../limits/byte-rates.ts';
import { recentTaskIndexOf } from '../store/recent-tasks.ts';
import { Reconciler } from './reconciler.ts';
import { AssignmentStore } from '../store/assignments/assignment-store.ts';
import { Delegator } from '../coordination/delegator.ts';
import { TurnRunner } from './turn-runner.ts';
import { startTurnWorkers } from './turn-workers.ts';
import type { LocalTurns } from './local-turns.ts';
import { RunningShare } from '../../queues/running-share.ts';
import { startPushRole, type PushRole } from '../push/push-role.ts';
import type { PushResolver } from '../push/receiver-policy.ts';
import { startScheduleRole, type ScheduleRole } from '../schedules/schedule-role.ts';
import { activeTurns, startProcessMetrics } from '../telemetry/metrics.ts';
import { probeRedisRoundTrips } from '../telemetry/redis-probe.ts';
import { checkReadiness, type Readiness } from '../gateway/readiness.ts';
import { ReplicaAck, replicaAckOf } from '../redis/replica-ack.ts';
import { TaskWriteAck } from '../store/task-write-ack.ts';

/** A worker role running inside a lifecycle, which stops it. */
export interface WorkerRole {
  runner: TurnRunner;
  /** The agents whose turns this process runs. */
  agents: string[];
  /** Re-queues open tasks whose turn job is gone (every reconcileIntervalMs; reconcileOnce() on demand). */
  reconciler: Reconciler;
  /** New tasks' first turns, started in this process when a gateway in it accepted them (config.localTurns). */
  localTurns: LocalTurns;
  /** Webhook deliveries (undefined when push.enabled is false). */
  push: PushRole | undefined;
  /** Schedule firing (undefined when schedules.enabled is false). */
  schedules: ScheduleRole | undefined;
  /** Whether this worker can take turns now (its metrics port's /readyz): Redis, scripts, its queue; not while closing. */
  checkReady(): Promise<Readiness>;
}

/** A worker role started on its own (startWorkerRole): close() stops it. */
export interface WorkerHandle extends WorkerRole {
  close(): Promise<void>;
}

export interface WorkerRoleOptions {
  /** Directory relative paths in the configuration (push.signingKeyFile) are resolved against. */
  baseDir?: string;
  /** How webhook receivers' host names are resolved (tests inject one). */
  pushResolver?: PushResolver;
  /** The process's control plane: agents written through the admin API are run too. None: the configured agents only. */
  control?: ControlPlane;
}

/** Starts the worker role in a lifecycle of its own. */
export async function startWorkerRole(config: GatewayConfig, agents: Agents, logger: Logger, options: WorkerRoleOptions = {}): Promise<WorkerHandle> {
  const lifecycle = new Lifecycle(logger);
  const role = await lifecycle.build((built) => buildWorkerRole(built, config, agents, logger, options));
  return { ...role, close: () => lifecycle.stop() };
}

/** Assembles the worker role; every component it starts is registered with the lifecycle. */
export async function buildWorkerRole(lifecycle: Lifecycle, config: GatewayConfig, agents: Agents, logger: Logger, options: WorkerRoleOptions = {}): Promise<WorkerRole> {
  const commands = openRedis(config, 'commands');
  const cancelSubscriber = openRedis(config, 'cancel');
  const workerConnection = openRedis(config, 'worker');
  for (const [role, connection] of [['commands', commands], ['cancel', cancelSubscriber], ['worker', workerConnection]] as const) {
    connection.on('error', (error: Error) => logger.warn('Redis connection error; reconnecting', { role, error: error.message }));
  }
  lifecycle.register({
    name: 'worker Redis connections',
    async stop() {
      cancelSubscriber.disconnect();
      await commands.quit().catch(() => undefined);
      workerConnection.disconnect();
    },
  });
  const turnQueues = new TurnQueues(commands, config.keyPrefix, (error: Error) => logger.debug('turn queue error', { error: error.message }));
  const store = new TaskStore(commands, config.keyPrefix, config.retentionSeconds, replayBoundOf(config.replay), recentTaskIndexOf(config));
  // The operators' index gets what this process noted last (a hint: lost, the next write restores it).
  lifecycle.register({ name: 'task store indexes', stop: () => store.maintenance.flushIndexesWithin(1_000) });
  const assignments = new AssignmentStore(commands, config.keyPrefix, store.replay);
  const delegator = Delegator.forAgents(config, agents, { store, assignments, queues: turnQueues });
  // Turns running at once per owner and per tenant, across every worker (limits.maxRunningTurnsPer…).
  // Consumer plans from the control plane's view (none without one): token and spend budgets of turns, and a schedule's firings held to the plan's task limits.
  const plans = options.control === undefined ? undefined : consumerPlans(options.control.view, commands, config.keyPrefix, config.limits, config.consumers);
  const runningShare = new RunningShare(commands, config.keyPrefix, { ...config.limits, slotTtlMs: config.lockDurationMs });
  lifecycle.register({ name: 'running share', stop: () => runningShare.close() });
  lifecycle.register({ name: 'turn queues', stop: () => turnQueues.close() });
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
    replicaAck: new TaskWriteAck(new ReplicaAck(commands, replicaAckOf(config)), config.keyPrefix),
    // Agent output paced per owner (limits.outputBytesPerSecond), so a backend flooding its allowance waits for it.
    byteRates: new ByteRates(commands, config.keyPrefix, config.limits),
    ...(plans === undefined ? {} : { consumerMeters: plans.meters }),
  });
  registerWorkerMetrics(lifecycle, runner, commands);
  await whenReady(cancelSubscriber);
  await runner.listenForCancels(cancelSubscriber);
  // Deliveries and firings run until the turns are done (or handed back): they stop after them.
  const push = config.push.enabled ? await startPushRole(lifecycle, config, logger, { baseDir: options.baseDir ?? process.cwd(), resolve: options.pushResolver }) : undefined;
  const schedules = config.schedules.enabled ? await startScheduleRole(lifecycle, config, agents, logger, plans?.gate) : undefined;
  // One BullMQ worker per agent this process serves, each with the agent's own concurrency.
  const served = agents.list().filter((agent) => config.workerAgents === undefined || config.workerAgents.includes(agent.name));
  const turnWorkers = await startTurnWorkers(lifecycle, config, { served, connection: workerConnection, runner, queues: turnQueues, logger });
  // Agents written through the admin API run on every worker that serves all agents (no workerAgents).
  if (options.control !== undefined && config.workerAgents === undefined) {
    const live = connectLiveAgents({ view: options.control.view, agents, configuredNames: Object.keys(configuredAgentsOf(config)), logger });
    live.subscribe({ added: (agent) => turnWorkers.serve(agent) });
    await live.settled();
  }
  const reconciler = new Reconciler({
    store,
    queues: turnQueues,
    logger,
    intervalMs: config.reconcileIntervalMs,
    // Longer than a lost worker's turn takes to be recovered by stall detection (one lock
    // period), so the reconciler does not race BullMQ for turns it is about to recover.
    quietForMs: config.lockDurationMs * 2,
    // A turn no job carries has no stall detection to wait for: once its lease lapsed (0.8 of a
    // lock period), a little quiet is enough.
    withoutJobQuietForMs: Math.floor(config.lockDurationMs / 2),
    waitsForSlot: async (coordinatorId, taskId) => (await assignments.readAssignment(coordinatorId, taskId))?.state === 'queued',
  });
  await lifecycle.start({ name: 'reconciler', start: () => reconciler.start(), stop: () => reconciler.close() });
  const checkReady = (): Promise<Readiness> =>
    checkReadiness({ redis: commands, queue: served[0] === undefined ? undefined : turnQueues.of(served[0].name), draining: () => lifecycle.draining, logger });
  lifecycle.register({ name: 'worker readiness', ready: checkReady });
  return { runner, agents: served.map((agent) => agent.name), reconciler, localTurns: turnWorkers.local, push, schedules, checkReady };
}

/** This process's own metrics (a worker's metrics port serves them): its running turns, Redis latency. */
function registerWorkerMetrics(lifecycle: Lifecycle, runner: TurnRunner, commands: RedisClient): void {
  startProcessMetrics();
  const unregister = [
    activeTurns.register(async () => [...runner.runningTurnsByAgent()].map(([agent, value]) => ({ labels: { agent }, value }))),
    probeRedisRoundTrips(commands, 'worker'),
  ];
  lifecycle.register({
    name: 'worker metrics',
    stop: () => {
      for (const collector of unregister) collector();
    },
  });
}
