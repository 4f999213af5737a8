// The gateway's handler: the A2A operations and the gateway's own methods (./gateway-handler.ts)
// put together from their use cases, each built once here with the dependencies it needs.
// Nothing here decides anything itself; it only chooses which use case answers.
import type { Agents } from '../agents/agents.ts';
import type { AssignmentStore } from '../store/assignments/assignment-store.ts';
import type { Delegator } from '../coordination/delegator.ts';
import type { EventHub } from '../events/hub.ts';
import type { TaskFeed } from '../events/task-feed.ts';
import type { ByteRates } from '../limits/byte-rates.ts';
import type { StorageQuota } from '../limits/storage-quota.ts';
import type { StreamPlan } from '../operations/stream-plan.ts';
import type {
  AgentCard,
  CancelTaskRequest,
  GetTaskRequest,
  ListTasksRequest,
  ListTasksResponse,
  SendMessageRequest,
  SendMessageResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
} from '../protocol/types.ts';
import type { PushDeadLetters } from '../push/dead-letters.ts';
import type { PushConfigs } from '../push/push-configs.ts';
import type { TaskWriteAck } from '../store/task-write-ack.ts';
import type { ScheduleService } from '../schedules/schedule-service.ts';
import type { SubscriptionService } from '../push/subscriptions.ts';
import type { ListBounds } from '../store/task-listing.ts';
import type { Owner, TaskStore } from '../store/task-store.ts';
import type { LocalTurnStarter, TurnQueues } from '../../queues/turns.ts';
import type { Caller, CreatePushConfigRequest, ListPushConfigsRequest, PushConfigRequest, TaskFollower } from './a2a-handler.ts';
import { listAssignments, type AssignmentView } from './assignment-views.ts';
import { cancelTask, type CancelDeps } from './cancel-task.ts';
import { getTaskAfterGeneration } from './generation-wait.ts';
import { MAX_GENERATION_WAIT_MS } from '../extensions/task-generations.ts';
import { extendedAgentCard } from './extended-card.ts';
import type { GatewayHandler } from './gateway-handler.ts';
import { MessageIntake } from './message-intake.ts';
import { OperatorHandler } from './operator-handler.ts';
import { PushConfigHandlers } from './push-config-handlers.ts';
import { TaskReads } from './read-tasks.ts';
import { SendMessages } from './send-message.ts';
import { subscribeToTask } from './subscribe.ts';
import { TaskEvents } from './task-events.ts';
import { TurnQueue } from './turn-queue.ts';

export interface TaskServiceOptions {
  store: TaskStore;
  hub: EventHub;
  /** Each agent's turn queue. */
  queues: TurnQueues;
  /** The agents: versions recorded on their tasks (invariant 9), their limits and input policies. */
  agents: Agents;
  blockingTimeoutMs: number;
  cancelWaitMs: number;
  /** Longest a GetTask waits for a task generation (taskGenerationMaxWaitMs); undefined = the extension's own cap. */
  taskGenerationMaxWaitMs?: number;
  idempotencyTtlSeconds: number;
  /** New turns of an agent are refused (503, Retry-After) while this many wait in its queue; 0 = no bound. */
  maxQueuedTurns: number;
  /** This process's own workers, when it runs them: a new task's first turn starts there when a place is free. */
  localTurns?: LocalTurnStarter;
  /** Coordinators' assignments: cancel propagation, answers forwarded to children, listing. */
  delegator: Delegator;
  assignments: AssignmentStore;
  /** Push-notification configs; undefined when push notifications are off (push.enabled). */
  push?: PushConfigs;
  /** Operators' dead-lettered push deliveries; undefined when push notifications are off. */
  pushDeadLetters?: PushDeadLetters;
  /** Schedules (gateway extension); undefined when they are off. */
  schedules?: ScheduleService;
  /** Push subscriptions (gateway extension); undefined when push notifications are off. */
  subscriptions?: SubscriptionService;
  /** What one ListTasks call may read and return (limits.maxListPageBytes, limits.maxListScannedEntries). */
  listBounds?: ListBounds;
  /** Per-owner storage quotas (limits.maxStoredBytes, limits.maxStoredTasks); undefined = none. */
  quota?: StorageQuota;
  /** Per-owner byte rate of stored messages (limits.storedBytesPerSecond); undefined = none. */
  byteRates?: ByteRates;
  /** redisWaitReplicas: replicas confirm a submitted message's writes before it is answered; undefined = no WAIT. */
  replicaAck?: TaskWriteAck;
}

export class TaskService implements GatewayHandler {
  readonly schedules: ScheduleService | undefined;
  readonly subscriptions: SubscriptionService | undefined;
  readonly operator: OperatorHandler;
  private readonly events: TaskEvents;
  private readonly sending: SendMessages;
  private readonly reads: TaskReads;
  private readonly cancels: CancelDeps;
  private readonly pushConfigs: PushConfigHandlers;
  private readonly store: TaskStore;
  private readonly assignments: AssignmentStore;
  private readonly maxGenerationWaitMs: number;

  constructor(options: TaskServiceOptions) {
    const { store } = options;
    this.store = store;
    this.assignments = options.assignments;
    this.maxGenerationWaitMs = options.taskGenerationMaxWaitMs ?? MAX_GENERATION_WAIT_MS;
    this.schedules = options.schedules;
    this.subscriptions = options.subscriptions;
    this.events = new TaskEvents(options.hub, store);
    const intake = new MessageIntake({
      store,
      turns: new TurnQueue(options.queues, options.maxQueuedTurns, options.localTurns),
      agents: options.agents,
      delegator: options.delegator,
      idempotencyTtlSeconds: options.idempotencyTtlSeconds,
      push: options.push,
      subscriptions: options.subscriptions,
      quota: options.quota,
      byteRates: options.byteRates,
      replicaAck: options.replicaAck,
    });
    this.sending = new SendMessages({ intake, events: this.events, store, blockingTimeoutMs: options.blockingTimeoutMs });
    this.reads = new TaskReads(store, options.listBounds);
    this.cancels = { store, events: this.events, delegator: options.delegator, cancelWaitMs: options.cancelWaitMs };
    this.pushConfigs = new PushConfigHandlers(options.push);
    this.operator = new OperatorHandler({
      store,
      events: this.events,
      pushDeadLetters: options.pushDeadLetters,
      cancelTask: (owner, request, requestedBy) => cancelTask(this.cancels, owner, request, requestedBy),
    });
  }

  sendMessage(caller: Caller, request: SendMessageRequest): Promise<SendMessageResponse> {
    return this.sending.sendMessage(caller, request);
  }

  sendStreamingMessage(caller: Caller, request: SendMessageRequest): Promise<StreamPlan> {
    return this.sending.sendStreamingMessage(caller, request);
  }

  getTask(caller: Caller, request: GetTaskRequest): Promise<Task> {
    const after = caller.generations?.after;
    if (after === undefined) return this.reads.getTask(caller, request);
    const deps = { store: this.store, events: this.events, read: (c: Caller, r: GetTaskRequest) => this.reads.getTask(c, r) };
    return getTaskAfterGeneration(deps, caller, request, after, Math.min(caller.generations?.waitMs ?? 0, this.maxGenerationWaitMs));
  }

  listTasks(caller: Caller, request: ListTasksRequest): Promise<ListTasksResponse> {
    return this.reads.listTasks(caller, request);
  }

  cancelTask(caller: Caller, request: CancelTaskRequest): Promise<Task> {
    return cancelTask(this.cancels, caller.owner, request, undefined, caller.generations?.expected, caller.answersSpliced === true);
  }

  subscribeToTask(caller: Caller, request: SubscribeToTaskRequest): Promise<StreamPlan> {
    return subscribeToTask(this.store, caller.owner, request, caller.lastEventId, caller.answersSpliced === true);
  }

  createTaskPushNotificationConfig(caller: Caller, request: CreatePushConfigRequest): Promise<TaskPushNotificationConfig> {
    return this.pushConfigs.create(caller, request);
  }

  getTaskPushNotificationConfig(caller: Caller, request: PushConfigRequest): Promise<TaskPushNotificationConfig> {
    return this.pushConfigs.get(caller, request);
  }

  listTaskPushNotificationConfigs(caller: Caller, request: ListPushConfigsRequest): Promise<{ configs: TaskPushNotificationConfig[]; nextPageToken: string }> {
    return this.pushConfigs.list(caller, request);
  }

  deleteTaskPushNotificationConfig(caller: Caller, request: PushConfigRequest): Promise<Record<string, never>> {
    return this.pushConfigs.delete(caller, request);
  }

  getExtendedAgentCard(caller: Caller): Promise<AgentCard> {
    return extendedAgentCard(caller);
  }

  followTask(follower: TaskFollower): TaskFeed {
    return this.events.follow(follower);
  }

  listAssignments(owner: Owner, taskId: string): Promise<{ taskId: string; assignments: AssignmentView[] }> {
    return listAssignments(this.store, this.assignments, owner, taskId);
  }
}
