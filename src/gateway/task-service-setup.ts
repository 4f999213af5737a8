// The gateway's task service and what it is made of: the store, the event hub, the turn queues
// and, when enabled, push configurations and schedules. The service is constructed here only.
import type { Queue } from 'bullmq';
import { createPushQueue } from '../../queues/push.ts';
import { createScheduleQueue } from '../../queues/schedules.ts';
import { TurnQueues, type LocalTurnStarter } from '../../queues/turns.ts';
import type { Lifecycle } from '../app/lifecycle.ts';
import type { Agents } from '../agents/agents.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { AssignmentStore } from '../store/assignments/assignment-store.ts';
import { Delegator } from '../coordination/delegator.ts';
import { EventHub } from '../events/hub.ts';
import { ByteRates } from '../limits/byte-rates.ts';
import { StorageQuota } from '../limits/storage-quota.ts';
import type { Logger } from '../logging/logger.ts';
import { PushDeadLetters } from '../push/dead-letters.ts';
import { PushConfigs } from '../push/push-configs.ts';
import { PushStore } from '../store/push/push-store.ts';
import { SubscriptionStore } from '../store/push/subscription-store.ts';
import { SubscriptionDirectory } from '../push/subscription-directory.ts';
import { SubscriptionService } from '../push/subscriptions.ts';
import { ReceiverPolicy, type PushResolver } from '../push/receiver-policy.ts';
import { ReplicaAck, replicaAckOf } from '../redis/replica-ack.ts';
import { TaskWriteAck } from '../store/task-write-ack.ts';
import { ScheduleService } from '../schedules/schedule-service.ts';
import { ScheduleStore } from '../store/schedules/schedule-store.ts';
import { recentTaskIndexOf } from '../store/recent-tasks.ts';
import { replayBoundOf } from '../store/replay-bound.ts';
import { TaskStore } from '../store/task-store.ts';
import { artifactAssembly } from '../tasks/artifact-assembly.ts';
import { TaskService } from '../tasks/service.ts';
import type { GatewayRedis } from './gateway-redis.ts';

export interface GatewayTasks {
  service: TaskService;
  store: TaskStore;
  hub: EventHub;
  queues: TurnQueues;
  /** Undefined when push.enabled is false. */
  pushQueue: Queue | undefined;
  /** Undefined when schedules.enabled is false. */
  scheduleQueue: Queue | undefined;
  /** Per-owner byte rates: request bodies at the bindings, stored messages in the task service. */
  byteRates: ByteRates;
}

export interface TaskServiceSetup {
  config: GatewayConfig;
  agents: Agents;
  redis: GatewayRedis;
  logger: Logger;
  /** How webhook receivers' host names are resolved when a config is registered (tests inject one). */
  pushResolver?: PushResolver;
  /** The process's own workers (src/app/process.ts), when it runs them: new tasks' first turns start there. */
  localTurns?: LocalTurnStarter;
}

export async function buildTaskService(lifecycle: Lifecycle, setup: TaskServiceSetup): Promise<GatewayTasks> {
  const { config, agents, logger } = setup;
  const { commands, subscriber, queue: queueConnection } = setup.redis;
  const store = new TaskStore(commands, config.keyPrefix, config.retentionSeconds, replayBoundOf(config.replay), recentTaskIndexOf(config));
  // The operators' index gets what this process noted last (a hint: lost, the next write restores it).
  lifecycle.register({ name: 'task store indexes', stop: () => store.maintenance.flushIndexesWithin(1_000) });
  // Large tasks are read for answers on the assembly thread, on a connection of its own (src/tasks/artifact-assembly.ts).
  const largeReads = artifactAssembly.openReads({
    target: { redisUrl: config.redisUrl, redisClusterNodes: config.redisClusterNodes, redisMaxCommandBytes: config.redisMaxCommandBytes },
    policy: { outageGraceMs: config.redisOutageGraceMs, commandTimeoutMs: config.redisCommandTimeoutMs },
    keyPrefix: config.keyPrefix,
  });
  store.gateway.largeReader = largeReads;
  lifecycle.register({ name: 'large task reads', stop: () => largeReads.close() });
  const hub = new EventHub(subscriber, store.channels, {
    outageGraceMs: config.redisOutageGraceMs,
    readAnnounced: (taskId, id) => store.gateway.readEvent(taskId, id),
  });
  await lifecycle.start({ name: 'event hub', start: () => hub.start() });
  // The queues re-emit their connection's errors, which the connection's handler already logs;
  // without a listener BullMQ would print each one to stderr while Redis is down.
  // On the store's connection: a new task's job add then rides in the same write as its create script (GatewayOperations.createTask).
  const queues = new TurnQueues(commands, config.keyPrefix, (error: Error) => logger.debug('turn queue error', { error: error.message }));
  lifecycle.register({ name: 'turn queues', stop: () => queues.close() });
  const scheduleQueue = config.schedules.enabled ? createScheduleQueue(queueConnection, config.keyPrefix) : undefined;
  if (scheduleQueue !== undefined) {
    scheduleQueue.on('error', (error: Error) => logger.debug('schedule queue error', { error: error.message }));
    lifecycle.register({ name: 'schedule queue', stop: () => scheduleQueue.close().catch(() => undefined) });
  }
  const pushStore = config.push.enabled ? new PushStore(commands, config.keyPrefix) : undefined;
  const pushQueue = pushStore === undefined ? undefined : createPushQueue(queueConnection, config.keyPrefix);
  if (pushQueue !== undefined) {
    pushQueue.on('error', (error: Error) => logger.debug('push queue error', { error: error.message }));
    lifecycle.register({ name: 'push queue', stop: () => pushQueue.close().catch(() => undefined) });
  }
  const push =
    pushStore === undefined
      ? undefined
      : new PushConfigs({
          store: pushStore,
          policy: new ReceiverPolicy({ allowedHosts: config.push.allowedHosts, maxUrlLength: config.push.maxUrlLength, resolve: setup.pushResolver }),
          maxConfigsPerTask: config.push.maxConfigsPerTask,
          // Workers start the new config's deliveries at once; their sweeper would find it anyway.
          onIndexed: (taskId) => void pushStore.announceAttached(taskId).catch(() => undefined),
        });
  const subscriptions = push === undefined || pushStore === undefined ? undefined : await subscriptionService(config, pushStore, push, subscriber);
  const assignments = new AssignmentStore(commands, config.keyPrefix, store.replay);
  const byteRates = new ByteRates(commands, config.keyPrefix, config.limits);
  const service = new TaskService({
    push,
    schedules: scheduleQueue === undefined ? undefined : new ScheduleService(new ScheduleStore(commands, config.keyPrefix), scheduleQueue, config.schedules, push),
    subscriptions,
    pushDeadLetters: pushStore === undefined || pushQueue === undefined ? undefined : new PushDeadLetters(pushStore, pushQueue, config.push.maxDeadLetters),
    store,
    assignments,
    // The gateway cancels assignments, forwards answers and starts freed slots; only workers create assignments.
    delegator: Delegator.forAgents(config, agents, { store, assignments, queues }),
    hub,
    queues,
    agents,
    blockingTimeoutMs: config.blockingTimeoutMs,
    cancelWaitMs: config.cancelWaitMs,
    taskGenerationMaxWaitMs: config.taskGenerationMaxWaitMs,
    idempotencyTtlSeconds: config.idempotencyTtlSeconds,
    maxQueuedTurns: config.maxQueuedTurns,
    localTurns: setup.localTurns,
    listBounds: {
      maxPageBytes: config.limits.maxListPageBytes,
      maxScannedEntries: config.limits.maxListScannedEntries,
      maxConcurrentPerOwner: config.limits.maxConcurrentListsPerOwner,
    },
    quota: new StorageQuota(commands, config.keyPrefix, config.limits),
    byteRates,
    replicaAck: new TaskWriteAck(new ReplicaAck(commands, replicaAckOf(config)), config.keyPrefix),
  });
  return { service, store, hub, queues, pushQueue, scheduleQueue, byteRates };
}

/** Push subscriptions: stored per owner, cached per gateway, the cache told of changes on the event subscriber. */
async function subscriptionService(config: GatewayConfig, pushStore: PushStore, configs: PushConfigs, subscriber: GatewayRedis['subscriber']): Promise<SubscriptionService> {
  const store = new SubscriptionStore(pushStore.redis, config.keyPrefix);
  const directory = new SubscriptionDirectory(store);
  await directory.listen(subscriber);
  return new SubscriptionService({
    store,
    directory,
    configs,
    pushStore,
    maxPerOwner: config.push.maxSubscriptionsPerOwner,
    maxConfigsPerTask: config.push.maxConfigsPerTask,
    onIndexed: (taskId) => void pushStore.announceAttached(taskId).catch(() => undefined),
  });
}
