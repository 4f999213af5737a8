// The A2A operations, once, independent of any binding. Bindings translate wire shapes and
// errors; everything that decides something about a task happens here or in the store.
import { newId } from '../ids.ts';
import { traceCarrier, type TraceContext } from '../telemetry/spans.ts';
import { enqueueTurn, type TurnQueues } from '../../queues/turns.ts';
import type { Agent, Agents } from '../agents/agents.ts';
import { compareEventIds, type EventHub, type LiveEvent } from '../events/hub.ts';
import { openTaskFeed } from '../events/task-feed.ts';
import { A2AError, invalidParams, taskNotFound } from '../protocol/errors.ts';
import { LimitExceededError } from '../limits/limit-refusal.ts';
import {
  isInterrupted,
  isTerminal,
  type CancelTaskRequest,
  type GetTaskRequest,
  type ListTasksRequest,
  type ListTasksResponse,
  type Message,
  type SendMessageRequest,
  type SendMessageResponse,
  type StreamResponse,
  type SubscribeToTaskRequest,
  type Task,
  type TaskState,
} from '../protocol/types.ts';
import { ownerKeyOf, type Owner, type TaskStore } from '../store/task-store.ts';
import { taskReadOfAnswer, type TaskRead } from '../store/task-read.ts';
import { messageDigestOf } from './message-digest.ts';
import { TaskListing, type ListBounds, type ListCursor } from '../store/task-listing.ts';
import { STORED_COPIES, type StorageQuota } from '../limits/storage-quota.ts';
import type { ByteRates } from '../limits/byte-rates.ts';
import { LargeMessageGate, yieldToOthers } from './large-messages.ts';
import { replaySkipNote } from './replay-skip.ts';
import { isBeforeBuffer } from '../store/replay-bound.ts';
import type { AssignmentRecord, AssignmentStore } from '../coordination/assignment-store.ts';
import type { Delegator } from '../coordination/delegator.ts';
import type { PushConfigs } from '../push/push-configs.ts';
import type { PushDeadLetters } from '../push/dead-letters.ts';
import type { ScheduleService } from '../schedules/schedule-service.ts';
import type { StoredPushConfig } from '../push/push-config.ts';
import { cancelStages, tasksCreated } from '../telemetry/metrics.ts';
import { ReplicaAckError, type ReplicaAck } from '../redis/replica-ack.ts';
import { markStage } from '../telemetry/stage-marks.ts';

export interface TaskServiceOptions {
  store: TaskStore;
  hub: EventHub;
  /** Each agent's turn queue. */
  queues: TurnQueues;
  /** The agents: versions recorded on their tasks (invariant 9), their limits and input policies. */
  agents: Agents;
  blockingTimeoutMs: number;
  cancelWaitMs: number;
  idempotencyTtlSeconds: number;
  /** New turns of an agent are refused (503, Retry-After) while this many wait in its queue; 0 = no bound. */
  maxQueuedTurns: number;
  /** Coordinators' assignments: cancel propagation, answers forwarded to children, listing. */
  delegator: Delegator;
  assignments: AssignmentStore;
  /** Push-notification configs; undefined when push notifications are off (push.enabled). */
  push?: PushConfigs;
  /** Operators' dead-lettered push deliveries; undefined when push notifications are off. */
  pushDeadLetters?: PushDeadLetters;
  /** Schedules (gateway extension); undefined when they are off. */
  schedules?: ScheduleService;
  /** What one ListTasks call may read and return (limits.maxListPageBytes, limits.maxListScannedEntries). */
  listBounds?: ListBounds;
  /** Per-owner storage quotas (limits.maxStoredBytes, limits.maxStoredTasks); undefined = none. */
  quota?: StorageQuota;
  /** Per-owner byte rate of stored messages (limits.storedBytesPerSecond); undefined = none. */
  byteRates?: ByteRates;
  /** redisWaitReplicas: replicas confirm a submitted message's writes before it is answered; undefined = no WAIT. */
  replicaAck?: ReplicaAck;
}

/** One assignment as ListTaskAssignments reports it. */
export interface AssignmentView {
  taskId: string;
  delegation: string;
  index: number;
  role: string;
  kind: 'work' | 'review';
  state: AssignmentRecord['state'];
  /** The child task's own state right now. */
  taskState: TaskState | undefined;
  queuedAt: string;
  startedAt?: string;
  /** 1 for the first assignment that got a slot, 2 for the next, … (FIFO made visible). */
  startOrder?: number;
  settledAt?: string;
  question?: string;
}

function tooManyActive(active: number, limit: number): A2AError {
  return new LimitExceededError(
    'limits.maxActiveTasks',
    'RESOURCE_EXHAUSTED',
    `You have ${active} tasks of this agent queued or running, the limit is ${limit} (limits.maxActiveTasks, or the agent's limits); nothing was stored. Wait for one to finish, or cancel one, then retry.`,
    { retryAfterSeconds: 1, metadata: { reason: 'ACTIVE_TASK_LIMIT', limit: String(limit) } },
  );
}

/** How long one queue-depth reading is trusted; bounds the cost to one count per interval. */
const QUEUE_DEPTH_TTL_MS = 200;

/** Where a stream of a submitted message starts: its first event and the id to continue after. */
export interface StreamStart {
  taskId: string;
  /** Sent first when set (a follow-up's Task snapshot); a new task starts from its stored creation event. */
  snapshot: { task: Task; eventId: string } | undefined;
  /** Deliver stored events strictly after this id ('' = from the first). */
  afterId: string;
}

interface Submission {
  taskId: string;
  contextId: string;
  afterId: string;
  /** Set for a follow-up: the task as it stood right after the message was accepted. */
  snapshot: { task: Task; eventId: string } | undefined;
}

const DEFAULT_PAGE_SIZE = 50;
/** The defaults of limits.maxListPageBytes and limits.maxListScannedEntries. */
const DEFAULT_LIST_BOUNDS: ListBounds = { maxPageBytes: 1024 * 1024, maxScannedEntries: 250 };

/** What the request that sends a message carried for the adapter: ctx.caller.scopes and ctx.extensions. */
export interface SenderContext {
  /** Every scope the caller's credentials granted. */
  grants: readonly string[];
  /** The extensions the request activated. */
  extensions: readonly string[];
  /** The trace context of the request's span (tracing on): the turn the message opens continues it. */
  trace?: TraceContext;
}

const NO_SENDER: SenderContext = { grants: [], extensions: [] };

/** A messageId used before for a message with other content: refused, since taking either silently would lose one. */
function messageIdReused(messageId: string, taskId: string): A2AError {
  return new A2AError(
    'ALREADY_EXISTS',
    `messageId ${JSON.stringify(messageId)} was already sent with other content (text, parts, task, context or references) and belongs to task ${taskId}; nothing was stored. A retry must resend the same message; a new message needs a new messageId.`,
    {
      metadata: { reason: 'MESSAGE_ID_REUSED', messageId, taskId },
      violations: [{ field: 'message.messageId', description: 'was already used for a message with other content' }],
    },
  );
}

export class TaskService {
  private readonly queueDepths = new Map<string, { readAtMs: number; depth: Promise<number> }>();

  private readonly listing: TaskListing;
  /** ListTasks calls in progress on this process, by owner key. */
  private readonly listsInProgress = new Map<string, number>();
  /** One owner's large messages are stored one at a time here (see large-messages.ts). */
  private readonly largeMessages = new LargeMessageGate();

  constructor(private readonly options: TaskServiceOptions) {
    this.listing = new TaskListing(options.store, options.listBounds ?? DEFAULT_LIST_BOUNDS);
  }

  /** The agent an owner's tasks belong to (owners are made for configured agents only). */
  private agentOf(owner: Owner): Agent {
    const agent = this.options.agents.get(owner.agent);
    if (agent === undefined) throw new Error(`No agent "${owner.agent}" is configured.`);
    return agent;
  }

  /**
   * Refuses new work while the agent's queue is over its bound, before anything is stored: an
   * overloaded deployment answers 503 with Retry-After instead of growing without limit.
   */
  private async checkQueueDepth(agent: string): Promise<void> {
    const limit = this.options.maxQueuedTurns;
    if (limit <= 0) return;
    const now = Date.now();
    let reading = this.queueDepths.get(agent);
    if (reading === undefined || now - reading.readAtMs > QUEUE_DEPTH_TTL_MS) {
      reading = { readAtMs: now, depth: this.options.queues.of(agent).count() };
      this.queueDepths.set(agent, reading);
    }
    const depth = await reading.depth;
    if (depth >= limit) {
      throw new LimitExceededError(
        'maxQueuedTurns',
        'UNAVAILABLE',
        `${depth} turns of agent "${agent}" are waiting for a worker, the limit is ${limit} (maxQueuedTurns); nothing was stored. Retry after the Retry-After delay.`,
        { retryAfterSeconds: 1, httpStatus: 503, metadata: { queuedTurns: String(depth), limit: String(limit) } },
      );
    }
  }

  get store(): TaskStore {
    return this.options.store;
  }

  get hub(): EventHub {
    return this.options.hub;
  }

  /** Push-notification configs, or undefined when this gateway offers none. */
  get push(): PushConfigs | undefined {
    return this.options.push;
  }

  get schedules(): ScheduleService | undefined {
    return this.options.schedules;
  }

  get pushDeadLetters(): PushDeadLetters | undefined {
    return this.options.pushDeadLetters;
  }

  /**
   * A config riding on SendMessage (configuration.taskPushNotificationConfig), checked before
   * anything is stored. Its id is derived from the messageId when none is given, so a re-sent
   * message attaches the same config again instead of a second one.
   */
  private async preparePushConfig(request: SendMessageRequest, taskId: string): Promise<StoredPushConfig | undefined> {
    const input = request.configuration?.taskPushNotificationConfig;
    if (input === undefined) return undefined;
    const push = this.options.push;
    if (push === undefined) {
      throw new A2AError('PUSH_NOTIFICATION_NOT_SUPPORTED', 'This agent does not send push notifications (capabilities.pushNotifications is false); send the message without configuration.taskPushNotificationConfig.');
    }
    const id = input.id ?? `m-${request.message.messageId.replace(/[^A-Za-z0-9_.~-]/g, '_').slice(0, 120)}`;
    return push.prepare(taskId, { ...input, id }, 'configuration.taskPushNotificationConfig.');
  }

  /** `sender`: what the adapter sees of the request (ctx.caller.scopes, ctx.extensions). */
  async sendMessage(owner: Owner, request: SendMessageRequest, sender: SenderContext = NO_SENDER): Promise<SendMessageResponse> {
    const blocking = request.configuration?.returnImmediately !== true;
    const turnOver = (state: TaskState): boolean => isTerminal(state) || isInterrupted(state);
    // A new task publishes nothing before it is created, so watching its id first means the
    // wait needs no read of the replay buffer (one round trip less on the busiest path).
    const newTaskId = request.message.taskId === undefined ? newId() : undefined;
    if (blocking && newTaskId !== undefined) markStage(newTaskId, 'received');
    const early =
      blocking && newTaskId !== undefined ? this.watchTurnEnd(newTaskId, '', this.options.blockingTimeoutMs, turnOver, true) : undefined;
    const historyLength = request.configuration?.historyLength;
    let submission: Submission;
    try {
      submission = await this.submit(owner, request, sender, newTaskId, early === undefined ? undefined : (historyLength ?? -1));
    } catch (error) {
      early?.cancel();
      throw error;
    }
    // The task as the final event brought it (the store published it for this wait), else read below.
    let answer: TaskRead | undefined;
    if (early !== undefined && submission.taskId === newTaskId) {
      answer = await early.done;
      markStage(submission.taskId, 'notified');
    } else if (blocking) {
      early?.cancel(); // a re-sent message: the task is an earlier one
      // A follow-up whose snapshot is already terminal or interrupted had its turn end before the
      // snapshot was read (a re-sent message, or a queued turn that ran at once): no event after
      // afterId will end it, so waiting would block until the timeout.
      const snapshotState = submission.snapshot?.task.status.state;
      if (snapshotState === undefined || !turnOver(snapshotState)) {
        await this.waitForTurnEnd(submission.taskId, submission.afterId, this.options.blockingTimeoutMs, turnOver);
      }
    }
    const read = answer ?? (await this.options.store.readTask(submission.taskId, owner, historyLength));
    if (read === undefined) throw taskNotFound(submission.taskId);
    markStage(submission.taskId, 'responded');
    // The agent answered with a Message (spec 3.1.1): that is the answer, to this call and to every re-send.
    if (read.directReply !== undefined) return { message: read.directReply };
    return { task: read.task };
  }

  async startStreamingMessage(owner: Owner, request: SendMessageRequest, sender: SenderContext = NO_SENDER): Promise<StreamStart> {
    const submission = await this.submit(owner, request, sender);
    return { taskId: submission.taskId, snapshot: submission.snapshot, afterId: submission.afterId };
  }

  /**
   * `chargeAnswerBytes`: told what the task read weighs, before it is returned; a caller polling
   * its own huge tasks pays for the bytes in its rate, as a ListTasks page does.
   */
  async getTask(owner: Owner, request: GetTaskRequest, chargeAnswerBytes?: (bytes: number) => Promise<void>): Promise<Task> {
    const read = await this.options.store.readTask(request.id, owner, request.historyLength);
    if (read === undefined) throw taskNotFound(request.id);
    await chargeAnswerBytes?.(read.bytes);
    return read.task;
  }

  /** `chargePageBytes`: told the page's bytes, before it is returned (the caller's rate pays for a large page). */
  async listTasks(owner: Owner, request: ListTasksRequest, chargePageBytes?: (bytes: number) => Promise<void>): Promise<ListTasksResponse> {
    const pageSize = request.pageSize ?? DEFAULT_PAGE_SIZE;
    const release = this.takeListSlot(ownerKeyOf(owner));
    try {
      const { response, bytes } = await this.listPage(owner, request, pageSize);
      await chargePageBytes?.(bytes);
      return response;
    } finally {
      release();
    }
  }

  /**
   * A page costs this process up to maxPageBytes of memory and the event loop's time to build
   * it: one owner's parallel calls are bounded here (per process, like its streams).
   */
  private takeListSlot(ownerKey: string): () => void {
    const cap = this.options.listBounds?.maxConcurrentPerOwner ?? 0;
    const running = this.listsInProgress.get(ownerKey) ?? 0;
    if (cap > 0 && running >= cap) {
      throw new LimitExceededError(
        'limits.maxConcurrentListsPerOwner',
        'RESOURCE_EXHAUSTED',
        `You have ${running} ListTasks calls in progress on this gateway, the most allowed at once (limits.maxConcurrentListsPerOwner). Wait for one to answer, then retry.`,
        { retryAfterSeconds: 1, metadata: { reason: 'TOO_MANY_CONCURRENT_LISTS', limit: String(cap) } },
      );
    }
    this.listsInProgress.set(ownerKey, running + 1);
    return () => {
      const left = (this.listsInProgress.get(ownerKey) ?? 1) - 1;
      if (left <= 0) this.listsInProgress.delete(ownerKey);
      else this.listsInProgress.set(ownerKey, left);
    };
  }

  private async listPage(owner: Owner, request: ListTasksRequest, pageSize: number): Promise<{ response: ListTasksResponse; bytes: number }> {
    const page = await this.listing.list({
      owner,
      contextId: request.contextId,
      state: request.status,
      pageSize,
      cursor: request.pageToken ? decodePageToken(request.pageToken) : undefined,
      statusTimestampAfterMs: request.statusTimestampAfter === undefined ? undefined : Date.parse(request.statusTimestampAfter),
      historyLength: request.historyLength ?? 0,
      includeArtifacts: request.includeArtifacts === true,
    });
    const response: ListTasksResponse = {
      tasks: page.tasks,
      nextPageToken: page.next === undefined ? '' : encodePageToken(page.next),
      pageSize,
      totalSize: page.total,
    };
    return { response, bytes: page.bytes };
  }

  /** `requestedBy`: an operator canceling the owner's task (recorded on it); undefined for the owner. */
  async cancelTask(owner: Owner, request: CancelTaskRequest, requestedBy?: string): Promise<Task> {
    const result = await this.options.store.cancelTask(request.id, owner, new Date(), requestedBy);
    if (result.kind === 'not-found') throw taskNotFound(request.id);
    // A queued task is canceled here at once (requested and stopped); a running one's worker does the rest.
    if (result.kind === 'canceled' || result.kind === 'requested') cancelStages.inc({ stage: 'requested' });
    if (result.kind === 'canceled') cancelStages.inc({ stage: 'stopped' });
    if (result.kind === 'canceled' || result.kind === 'requested') await this.propagateCancel(owner, request.id, result.kind);
    if (result.kind === 'not-cancelable') {
      throw new A2AError(
        'TASK_NOT_CANCELABLE',
        `Task ${request.id} is already ${result.state} and can no longer be canceled.`,
        { metadata: { taskId: request.id, state: result.state } },
      );
    }
    if (result.kind === 'requested') {
      const read = await this.options.store.readTask(request.id, owner, 0);
      if (read !== undefined && !isTerminal(read.task.status.state)) {
        await this.waitForTurnEnd(request.id, read.lastEventId, this.options.cancelWaitMs, isTerminal);
      }
      const after = await this.readOwnTask(request.id, owner, undefined);
      // The running turn ended on its own before its worker saw the request: the task was not
      // canceled, and answering with its COMPLETED (or FAILED) snapshot would read as success.
      if (isTerminal(after.status.state) && after.status.state !== 'TASK_STATE_CANCELED') {
        throw new A2AError(
          'TASK_NOT_CANCELABLE',
          `Task ${request.id} reached ${after.status.state} before the cancel request took effect; it was not canceled.`,
          { metadata: { taskId: request.id, state: after.status.state } },
        );
      }
      return after;
    }
    return this.readOwnTask(request.id, owner, undefined);
  }

  /**
   * Where a subscription starts. Without `lastEventId`: the current Task snapshot, then what
   * follows it (a terminal task is refused, spec 3.1.6). With it: exactly the events after
   * that id, even if the task has since ended, so a dropped client misses nothing; when some of
   * them were dropped from the replay buffer (replay settings), the current Task snapshot, a
   * note naming what was skipped (`skipNote`), then the events after the snapshot.
   */
  async subscribe(
    owner: Owner,
    request: SubscribeToTaskRequest,
    lastEventId: string | undefined,
  ): Promise<{
    snapshot: { task: Task; eventId: string } | undefined;
    /** Sent right after the snapshot, without an event id: the events the client skipped. */
    skipNote: StreamResponse | undefined;
    afterId: string;
    /** True when nothing can follow afterId: the stream should end right away. */
    terminal: boolean;
  }> {
    const read = await this.options.store.readTask(request.id, owner, undefined);
    if (read === undefined) throw taskNotFound(request.id);
    const terminal = isTerminal(read.task.status.state);
    const snapshot = { task: read.task, eventId: read.lastEventId };
    if (lastEventId !== undefined) {
      if (!/^\d+-\d+$/.test(lastEventId)) {
        throw invalidParams([{ field: 'Last-Event-ID', description: 'must be an event id this gateway sent, like 1700000000000-0' }]);
      }
      // Read with the snapshot, atomically: an id older than the newest dropped event misses some.
      if (isBeforeBuffer(lastEventId, read.trimmed)) {
        return { snapshot, skipNote: replaySkipNote(read.task, read.lastEventId, lastEventId, read.trimmed), afterId: read.lastEventId, terminal };
      }
      const newest = read.lastEventId;
      if (newest !== '' && compareEventIds(lastEventId, newest) > 0) {
        throw invalidParams([{ field: 'Last-Event-ID', description: `is newer than the task's last event ${newest}` }]);
      }
      // The client already has the terminal event: nothing follows, so the stream ends at once.
      const caughtUp = terminal && newest !== '' && compareEventIds(lastEventId, newest) === 0;
      return { snapshot: undefined, skipNote: undefined, afterId: lastEventId, terminal: caughtUp };
    }
    if (terminal) {
      throw new A2AError(
        'UNSUPPORTED_OPERATION',
        `Task ${request.id} is already ${read.task.status.state}; there is nothing left to subscribe to. Use GetTask to read it.`,
        { metadata: { taskId: request.id, state: read.task.status.state } },
      );
    }
    return { snapshot, skipNote: undefined, afterId: read.lastEventId, terminal };
  }

  /**
   * For a stream whose reader fell behind the replay buffer (more events than the buffer holds
   * arrived while it caught up, e.g. across a Redis reconnect): the Task snapshot to continue
   * from and the note naming what was skipped, as a resume from before the buffer gets them.
   */
  async snapshotAfterSkip(owner: Owner, taskId: string, lastEventId: string): Promise<{ snapshot: { task: Task; eventId: string }; skipNote: StreamResponse }> {
    const read = await this.options.store.readTask(taskId, owner, undefined);
    if (read === undefined) throw taskNotFound(taskId);
    return { snapshot: { task: read.task, eventId: read.lastEventId }, skipNote: replaySkipNote(read.task, read.lastEventId, lastEventId, read.trimmed) };
  }

  /** A coordinator's assignments, in the order they were made, with each child's current state. */
  async listAssignments(owner: Owner, taskId: string): Promise<{ taskId: string; assignments: AssignmentView[] }> {
    await this.readOwnTask(taskId, owner, 0);
    const records = await this.options.assignments.readAssignments(taskId);
    const children = await Promise.all(records.map((r) => this.options.store.readTask(r.taskId, owner, 0)));
    const iso = (ms: number | undefined): string | undefined => (ms === undefined ? undefined : new Date(ms).toISOString());
    const assignments = records.map((record, i): AssignmentView => {
      const view: AssignmentView = {
        taskId: record.taskId,
        delegation: record.delegation,
        index: record.index,
        role: record.role,
        kind: record.kind,
        state: record.state,
        taskState: children[i]?.task.status.state,
        queuedAt: iso(record.queuedAtMs) as string,
      };
      const started = iso(record.grantedAtMs);
      if (started !== undefined) view.startedAt = started;
      if (record.grantSeq !== undefined) view.startOrder = record.grantSeq;
      const settled = iso(record.settledAtMs);
      if (settled !== undefined) view.settledAt = settled;
      if (record.question !== undefined) view.question = record.question;
      return view;
    });
    return { taskId, assignments };
  }

  /**
   * Canceling a coordinator cancels its assignments (queued ones never start); a sub-agent's
   * task canceled before it ran is settled on its coordinator at once (a running one is
   * settled by its worker).
   */
  private async propagateCancel(owner: Owner, taskId: string, kind: 'canceled' | 'requested'): Promise<void> {
    await this.options.delegator.cancelAssignments(taskId, owner);
    if (kind !== 'canceled') return;
    const read = await this.options.store.readTask(taskId, owner, 0);
    // The server's own link, never the task's metadata (which a caller could have written).
    const coordinator = read === undefined ? undefined : await this.options.store.parentOf(taskId);
    if (read === undefined || coordinator === undefined) return;
    await this.options.delegator.childTurnEnded(
      { taskId, coordinatorId: coordinator, ownerKey: ownerKeyOf(owner), contextId: read.task.contextId },
      read.task.status.state,
      'Canceled by its owner.',
    );
  }

  private async readOwnTask(taskId: string, owner: Owner, historyLength: number | undefined): Promise<Task> {
    const read = await this.options.store.readTask(taskId, owner, historyLength);
    if (read === undefined) throw taskNotFound(taskId);
    return read.task;
  }

  /**
   * Stores the message (a new task, or the next input of an existing one), enqueues its turn and,
   * with redisWaitReplicas, has replicas confirm the task's and the owner's writes before the
   * message counts as accepted. A re-sent message is confirmed again: its first send may have
   * failed exactly there. `answerHistoryLength`: the caller waits for a new task's turn to end,
   * reading this much history (createTask's).
   */
  private async submit(owner: Owner, request: SendMessageRequest, sender: SenderContext, taskId: string = newId(), answerHistoryLength?: number): Promise<Submission> {
    const turn = await this.largeMessages.enter(ownerKeyOf(owner), request.message);
    try {
      const submission = await this.storeMessage(owner, request, sender, taskId, answerHistoryLength, turn.large);
      await this.confirmReplicated(owner, submission.taskId);
      return submission;
    } finally {
      turn.leave();
    }
  }

  private async confirmReplicated(owner: Owner, taskId: string): Promise<void> {
    const ack = this.options.replicaAck;
    if (ack === undefined || !ack.enabled) return;
    const { keys } = this.options.store;
    try {
      await ack.confirm([keys.task(taskId).task, keys.ownerActiveTasks(ownerKeyOf(owner))]);
    } catch (error) {
      if (!(error instanceof ReplicaAckError)) throw error;
      throw new A2AError(
        'UNAVAILABLE',
        `Task ${taskId} took the message, but ${error.message} Send the same message (same messageId) again after the Retry-After delay: it is not stored twice and starts no second turn.`,
        { retryAfterSeconds: 1, metadata: { taskId, reason: 'REPLICAS_UNCONFIRMED', acknowledged: String(error.acknowledged), required: String(error.required) }, cause: error },
      );
    }
  }

  private async storeMessage(owner: Owner, request: SendMessageRequest, sender: SenderContext, taskId: string, answerHistoryLength: number | undefined, large: boolean): Promise<Submission> {
    const { message } = request;
    await this.checkQueueDepth(owner.agent);
    const digest = messageDigestOf(message);
    if (large) await yieldToOthers();
    if (message.taskId !== undefined) return this.submitFollowUp(owner, request, message.taskId, sender, digest);
    const agent = this.agentOf(owner);

    const contextId = message.contextId ?? newId();
    const pushConfig = await this.preparePushConfig(request, taskId);
    const stored: Message = { ...message, taskId, contextId };
    const charged = await this.chargeStoredBytes(owner, stored, STORED_COPIES.newTask);
    const storedBytes = charged?.bytes;
    if (large) await yieldToOthers();
    const quota = this.options.quota;
    const create = (): ReturnType<TaskStore['createTask']> => this.options.store.createTask({
      taskId,
      owner,
      contextId,
      message: stored,
      metadata: request.metadata ?? {},
      idempotencyTtlSeconds: this.options.idempotencyTtlSeconds,
      versions: agent.versionsFor(),
      maxActiveTasks: agent.settings.limits.maxActiveTasks,
      callerScopes: sender.grants,
      callerExtensions: sender.extensions,
      messageDigest: digest,
      answerHistoryLength,
      quota: quota?.chargeFor(stored, STORED_COPIES.newTask, Date.now(), storedBytes),
      ...(charged === undefined ? {} : { messageJson: charged.json }),
      // A push config is attached between storing and queueing (it must see every event).
      ...(pushConfig === undefined ? { queueFirstTurn: (active: number) => this.enqueue(owner, taskId, contextId, 1, sender.trace, active) } : {}),
      now: new Date(),
    });
    let created = await create();
    // Past the quota: release what expired tasks still hold (a bounded sweep), then try once more.
    if (created.kind === 'over-quota' && quota !== undefined && (await quota.sweep(ownerKeyOf(owner))).tasks > 0) created = await create();
    if (created.kind === 'over-quota') throw (quota as StorageQuota).refusal(created);
    if (created.kind === 'created' && created.quotaChecksDue > 0) quota?.sweepSoon(ownerKeyOf(owner));
    if (created.kind === 'too-many-active') throw tooManyActive(created.active, agent.settings.limits.maxActiveTasks);
    if (created.kind === 'duplicate') {
      const taken = await this.options.store.messageDigest(created.taskId, message.messageId);
      // A task from before digests were kept has none: taken as the same message.
      if (taken !== undefined && taken !== digest) throw messageIdReused(message.messageId, created.taskId);
      // The same message again: same task, no second turn. Re-enqueueing the first turn is a
      // no-op unless the first attempt stored the task but died before its job was added.
      const read = await this.options.store.readTask(created.taskId, owner, 0);
      if (read === undefined) throw taskNotFound(created.taskId);
      if (pushConfig !== undefined) await this.options.push?.attach(owner, { ...pushConfig, taskId: created.taskId }, 'begin');
      if (read.task.status.state === 'TASK_STATE_SUBMITTED') {
        await this.enqueue(owner, created.taskId, read.task.contextId, 1, sender.trace);
      }
      return { taskId: created.taskId, contextId: read.task.contextId, afterId: '', snapshot: undefined };
    }
    tasksCreated.inc({ agent: agent.name });
    markStage(taskId, 'accepted');
    // Stored before the task id is returned and before its turn can run: the config gets every event.
    if (pushConfig !== undefined) await this.options.push?.attach(owner, pushConfig, 'begin');
    if (!created.enqueued) await this.enqueue(owner, taskId, contextId, 1, sender.trace, created.active);
    markStage(taskId, 'enqueued');
    return { taskId, contextId, afterId: '', snapshot: undefined };
  }

  /**
   * Charges what storing `message` takes (its copies, as the quota counts them) to the owner's
   * storage byte rate, refusing before anything is stored. Its JSON and JSON bytes, when it
   * counted them (the quota's charge and the store reuse them).
   */
  private async chargeStoredBytes(owner: Owner, message: Message, copies: (messageBytes: number) => number): Promise<{ json: string; bytes: number } | undefined> {
    const byteRates = this.options.byteRates;
    if (byteRates === undefined || byteRates.limits.storedBytesPerSecond <= 0) return undefined;
    const json = JSON.stringify(message);
    const bytes = Buffer.byteLength(json);
    await byteRates.takeStored(owner, bytes * copies(bytes));
    return { json, bytes };
  }

  private async submitFollowUp(owner: Owner, request: SendMessageRequest, taskId: string, sender: SenderContext, digest: string): Promise<Submission> {
    const { message } = request;
    const { settings } = this.agentOf(owner);
    const { maxActiveTasks } = settings.limits;
    const pushConfig = await this.preparePushConfig(request, taskId);
    const pushCursor = pushConfig === undefined ? undefined : await this.options.push?.cursorBefore(taskId);
    const quota = this.options.quota;
    const stored: Message = { ...message, taskId };
    const storedBytes = (await this.chargeStoredBytes(owner, stored, STORED_COPIES.followUp))?.bytes;
    const accept = (): ReturnType<TaskStore['acceptMessage']> => this.options.store.acceptMessage({
      taskId,
      owner,
      contextId: message.contextId,
      message: stored,
      maxActiveTasks,
      inputPolicy: settings.inputPolicy,
      callerScopes: sender.grants,
      callerExtensions: sender.extensions,
      messageDigest: digest,
      maxQueuedMessages: settings.limits.maxQueuedMessages,
      trace: traceCarrier(sender.trace),
      quota: quota?.chargeFor(stored, STORED_COPIES.followUp, Date.now(), storedBytes),
      now: new Date(),
    });
    let result = await accept();
    if (result.kind === 'over-quota' && quota !== undefined && (await quota.sweep(ownerKeyOf(owner))).tasks > 0) result = await accept();
    switch (result.kind) {
      case 'not-found':
        throw taskNotFound(taskId);
      case 'over-quota':
        throw (quota as StorageQuota).refusal(result);
      case 'conflict':
        throw messageIdReused(message.messageId, taskId);
      case 'inbox-full':
        throw new LimitExceededError(
          'limits.maxQueuedMessages',
          'RESOURCE_EXHAUSTED',
          `${result.waiting} messages already wait for the running turn of task ${taskId}, the limit is ${settings.limits.maxQueuedMessages} (limits.maxQueuedMessages); nothing was stored. Send it again once the turn has answered.`,
          { retryAfterSeconds: 1, metadata: { taskId, reason: 'INBOX_FULL', limit: String(settings.limits.maxQueuedMessages) } },
        );
      case 'busy':
        throw new A2AError(
          'UNSUPPORTED_OPERATION',
          `Task ${taskId} is ${result.state}: a turn is queued or running, and agent "${owner.agent}" refuses messages until it ends (inputPolicy reject); nothing was stored. Send the message again once the task is waiting for input or has answered.`,
          { metadata: { taskId, state: result.state, reason: 'TASK_BUSY', inputPolicy: 'reject' } },
        );
      case 'too-many-active':
        throw tooManyActive(result.active, maxActiveTasks);
      case 'context-mismatch':
        throw invalidParams([
          { field: 'message.contextId', description: `does not match the contextId of task ${taskId}; omit it or send the task's own` },
        ]);
      case 'terminal':
        throw new A2AError(
          'UNSUPPORTED_OPERATION',
          `Task ${taskId} is ${result.state}, a terminal state: it accepts no further messages. Send the message without taskId to start a new task.`,
          { metadata: { taskId, state: result.state } },
        );
      case 'forwarded':
        await this.forwardToAssignment(owner, taskId, result.childId, message, sender);
        break;
      default:
        break;
    }
    // Every event from this message's acceptance on (its announcement and the turn it starts included).
    if (pushConfig !== undefined) await this.options.push?.attach(owner, pushConfig, pushCursor ?? 'now');
    const read = await this.options.store.readTask(taskId, owner, undefined);
    if (read === undefined) throw taskNotFound(taskId);
    if (result.kind === 'resumed' || (result.kind === 'duplicate' && read.task.status.state === 'TASK_STATE_SUBMITTED')) {
      await this.enqueue(owner, taskId, read.task.contextId, result.turn, sender.trace, result.kind === 'resumed' ? result.active : 1);
    }
    return {
      taskId,
      contextId: read.task.contextId,
      afterId: read.lastEventId,
      snapshot: { task: read.task, eventId: read.lastEventId },
    };
  }

  /**
   * The coordinator was asking on behalf of one of its assignments: the answer goes to that
   * child as its next turn, and the coordinator asks its next waiting question, if any.
   */
  private async forwardToAssignment(owner: Owner, coordinatorId: string, childId: string, message: Message, sender: SenderContext): Promise<void> {
    const forwarded: Message = { ...message, taskId: childId, referenceTaskIds: [coordinatorId] };
    delete forwarded.contextId;
    // An answer the coordinator asked for on the child's behalf always queues: the child is waiting for it.
    const accepted = await this.options.store.acceptMessage({
      taskId: childId,
      owner,
      contextId: undefined,
      message: forwarded,
      maxActiveTasks: 0,
      inputPolicy: 'enqueue',
      callerScopes: sender.grants,
      callerExtensions: sender.extensions,
      messageDigest: messageDigestOf(forwarded),
      now: new Date(),
    });
    if (accepted.kind === 'resumed') {
      const child = await this.options.store.readTask(childId, owner, 0);
      if (child !== undefined) await this.enqueue(owner, childId, child.task.contextId, accepted.turn, sender.trace);
    }
    await this.options.delegator.surfaceQuestion(coordinatorId);
  }

  /** `ownerActiveTasks`: the owner's tasks queued or running, the turn's priority (see turnPriority). */
  private async enqueue(owner: Owner, taskId: string, contextId: string, turn: number, trace: TraceContext, ownerActiveTasks = 1): Promise<void> {
    try {
      await enqueueTurn(this.options.queues, { taskId, turn, ownerKey: ownerKeyOf(owner), contextId }, trace, ownerActiveTasks);
    } catch (error) {
      throw new A2AError(
        'UNAVAILABLE',
        `Task ${taskId} is stored but its turn could not be queued (${(error as Error).message}). Send the same message (same messageId) again to retry; it will not start a second turn.`,
        { metadata: { taskId }, retryAfterSeconds: 1, cause: error },
      );
    }
  }

  /** Resolves at the first status event after `afterId` whose state satisfies `done`, or at the timeout. */
  waitForTurnEnd(taskId: string, afterId: string, timeoutMs: number, done: (state: TaskState) => boolean): Promise<void> {
    return this.watchTurnEnd(taskId, afterId, timeoutMs, done, false).done.then(() => undefined);
  }

  /** Resolves with the task when the event that ended the wait carried it (LiveEvent.answer). */
  private watchTurnEnd(
    taskId: string,
    afterId: string,
    timeoutMs: number,
    done: (state: TaskState) => boolean,
    liveOnly: boolean,
  ): { done: Promise<TaskRead | undefined>; cancel(): void } {
    let finish: (error?: Error, answer?: TaskRead) => void = () => undefined;
    const promise = new Promise<TaskRead | undefined>((resolve, reject) => {
      finish = (error?: Error, answer?: TaskRead): void => {
        clearTimeout(timer);
        feed.close();
        if (error === undefined) resolve(answer);
        else reject(error);
      };
    });
    // A watch canceled after it failed (its submit failed too) is never awaited: not an unhandled rejection.
    promise.catch(() => undefined);
    const timer = setTimeout(() => finish(), timeoutMs);
    const feed = openTaskFeed({
      hub: this.options.hub,
      store: this.options.store,
      taskId,
      afterId,
      liveOnly,
      onEvent: (event: LiveEvent) => {
        if (event.state !== undefined && done(event.state)) finish(undefined, answerOf(event));
      },
      // More events came than the buffer keeps while this watch caught up: the turn may have
      // ended among them, so the watch ends and its caller reads the task as it is.
      onBehindBuffer: async () => {
        finish();
        return undefined;
      },
      // Redis has been unreachable past the outage grace period (or a read failed): fail the
      // waiting call with a retryable error rather than block until blockingTimeoutMs.
      onError: (error) =>
        finish(
          new A2AError(
            'UNAVAILABLE',
            `Lost the event stream of task ${taskId} while waiting for it: ${(error.cause instanceof Error ? error.cause : error).message} The task is stored and goes on. Retry after the Retry-After delay: GetTask ${taskId}, or send the same message again (same messageId), which does not start a second task.`,
            { retryAfterSeconds: 1, metadata: { taskId }, cause: error },
          ),
        ),
    });
    return { done: promise, cancel: () => finish() };
  }
}

/** The task an event carried to the waiting call; undefined (the caller reads it) when none or unreadable. */
function answerOf(event: LiveEvent): TaskRead | undefined {
  if (event.answer === undefined) return undefined;
  try {
    return taskReadOfAnswer(event.answer);
  } catch {
    return undefined;
  }
}

/** [score, taskId] of the entry the next page starts after, and a filtered listing's total. */
function encodePageToken(cursor: ListCursor): string {
  const parts: (string | number)[] = [cursor.score, cursor.taskId];
  if (cursor.total !== undefined) parts.push(cursor.total);
  return Buffer.from(JSON.stringify(parts)).toString('base64url');
}

function decodePageToken(token: string): ListCursor {
  try {
    const parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(parsed) && (parsed.length === 2 || parsed.length === 3) && /^\d+$/.test(String(parsed[0])) && typeof parsed[1] === 'string') {
      const total = parsed[2] as unknown;
      if (parsed.length === 3 && !(Number.isSafeInteger(total) && (total as number) >= 0)) throw new Error('bad total');
      return parsed.length === 3 ? { score: String(parsed[0]), taskId: parsed[1], total: total as number } : { score: String(parsed[0]), taskId: parsed[1] };
    }
  } catch {
    // fall through to the error below
  }
  throw invalidParams([{ field: 'pageToken', description: 'is not a token this gateway issued; use nextPageToken from the previous page' }]);
}
