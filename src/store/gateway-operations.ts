// What the gateway does to tasks for a request: create one, take a message, read, cancel, replay events.
import { isCluster } from '../redis/connection.ts';
import type { Message, Task, TaskStatus } from '../protocol/types.ts';
import type { InputPolicy } from '../config/schema.ts';
import { creationEvent, inflateAll } from './creation-event.ts';
import type { TrimmedEvents } from './replay-bound.ts';
import { pipelineAcrossSlots } from '../redis/cross-slot.ts';
import { ownerKeyOf, type Owner } from './owner.ts';
import type { TurnRecord } from './task-records.ts';
import { LARGE_TASK_BYTES, type LargeTask, type TaskRead } from './task-read.ts';
import { readLargeTask, readRawLargeTask, readTaskHead, type HeldLargeTask, type LargeTaskReader, type RawLargeTask, type TaskHead } from './task-large-read.ts';
import { storedEvent, type StoredEvent } from './stored-event.ts';
import { SEGMENT_BYTES } from './artifact-segments.ts';
import { isStaleActive } from './maintenance-operations.ts';
import {
  acceptClaimedMessageScript,
  acceptMessageScript,
  cancelTaskScript,
  claimTaskScript,
  claimTurnScript,
  createClaimedTaskScript,
  createTaskScript,
  quotaRefundScript,
  readTaskScript,
  readEventsAfterScript,
  type AcceptOutcome,
  type TaskClaim,
  type TaskCreation,
  type TurnClaim,
} from './gateway-scripts.ts';
import type { ScriptArgs } from './script-call.ts';
import { withArtifactSlicesRead, type LeaseTerms } from './lease-reply.ts';
import { acceptResultOf, type AcceptResult, type CancelResult, type CreateResult, type CreateTaskInput, type QuotaCharge } from './gateway-results.ts';
import { StoreRole } from './store-role.ts';
import { taskField, taskItemField } from './task-hash.ts';

/** acceptMessage replies that changed nothing (so nothing to note in the recent-tasks index, and a charge to give back). */
const ACCEPT_REFUSALS = new Set(['NOT_FOUND', 'CONFLICT', 'GENERATION_MISMATCH', 'BUSY', 'INBOX_FULL', 'REFUSED', 'CONTEXT_MISMATCH', 'TERMINAL', 'DUPLICATE']);
/** acceptMessage replies after which the task has a new status (its owner's indexes move forward). */
const ACCEPT_ANNOUNCED = new Set(['RESUMED', 'FORWARDED']);

export type { AcceptResult, CancelResult, CreateResult, CreateTaskInput, OverQuota, QuotaCharge } from './gateway-results.ts';

const RESUMING_STATES = new Set(['TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED']);

/** A task to create and the arguments of its create and its claim (createClaimedTask's take both). */
interface Creation {
  task: Task;
  args: ScriptArgs<typeof createClaimedTaskScript.args>;
}

export class GatewayOperations extends StoreRole {
  /** Where large tasks are read for answers when not here: the gateway's assembly thread (set by the gateway's setup). */
  largeReader: LargeTaskReader | undefined;

  /**
   * A claim refused at the owner's active-task cap looks again: entries of tasks that left the
   * active state after the entry was made (their drop is a hint not yet written, or lost with a
   * process), and claims whose task never came to exist, are dropped; this process's notes of
   * the owner are written first.
   */
  private async dropStaleActive(ownerKey: string, nowMs: number): Promise<void> {
    await this.ownerIndex.flushOwner(ownerKey);
    const flat = await this.redis.zrange(this.keys.ownerActiveTasks(ownerKey), 0, -1, 'WITHSCORES');
    const entries: { taskId: string; score: number }[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) entries.push({ taskId: flat[i] as string, score: Number(flat[i + 1]) });
    if (entries.length === 0) return;
    const taskKeys = entries.map((entry) => this.keys.task(entry.taskId).task);
    const replies = await pipelineAcrossSlots(this.redis, taskKeys, (pipeline, i) => pipeline.hmget(taskKeys[i] as string, taskField.state, taskField.updatedAtMs));
    const stale = entries.filter((entry, i) => {
      const [state, updatedAtMs] = (replies[i]?.[0]?.[1] ?? []) as (string | null)[];
      return isStaleActive(state ?? undefined, Number(updatedAtMs ?? 0), entry.score, nowMs);
    });
    await this.ownerIndex.dropActive(ownerKey, stale.map((entry) => ({ taskId: entry.taskId, maxScore: entry.score })));
  }

  /** Runs an owner's claim; refused at the active-task cap, it re-checks the owner's active tasks once and runs again. */
  private async claim<C extends { outcome: string }>(ownerKey: string, nowMs: number, run: () => Promise<C>): Promise<C> {
    const reply = await run();
    if (reply.outcome !== 'TOO_MANY_ACTIVE') return reply;
    await this.dropStaleActive(ownerKey, nowMs);
    return run();
  }

  /** Where a task's cancel requests are published: one channel on a single Redis, the task's own on a Cluster. */
  private cancelChannelOf(taskId: string): string {
    return isCluster(this.redis) ? this.keys.taskCancelChannel(taskId) : this.keys.cancelChannel();
  }

  /** An owner's keys that its claims (claimTask, claimTurn, quotaRefund) take. */
  private ownerSlotKeys(ownerKey: string): { ownerActiveTasks: string; ownerQuota: string; ownerQuotaChecks: string } {
    return { ownerActiveTasks: this.keys.ownerActiveTasks(ownerKey), ownerQuota: this.keys.ownerQuota(ownerKey), ownerQuotaChecks: this.keys.ownerQuotaChecks(ownerKey) };
  }

  async createTask(input: CreateTaskInput): Promise<CreateResult> {
    const { taskId, owner, contextId, message, now } = input;
    const ownerKey = ownerKeyOf(owner);
    // Step 1, the owner's slot: the message's idempotency key, an active slot, the quota, the index.
    const idempotency = input.links === undefined ? this.keys.idempotency(ownerKey, message.messageId) : this.keys.childCreated(ownerKey, taskId);
    const ownerContextTasks = this.keys.ownerContextTasks(ownerKey, contextId);
    // The task, and the arguments of its create and claim (one object for both steps).
    const creation = this.creationOf(input, taskId, input.takeLease);
    // On a single Redis, with no job to add beside the create, both steps go in one call
    // (createClaimedTask-14.lua): one round trip and one script call fewer.
    if (input.queueFirstTurn === undefined && !isCluster(this.redis)) {
      const k = this.keys.task(taskId);
      // Named one by one: an object spread from two others has too many properties added one at a time, and V8 makes it a slow dictionary.
      const keys = {
        task: k.task,
        history: k.history,
        events: k.events,
        messageIds: k.messageIds,
        turns: k.turns,
        lease: k.lease,
        artifactChunks: k.artifactChunks,
        idempotency,
        ownerActiveTasks: this.keys.ownerActiveTasks(ownerKey),
        ownerQuota: this.keys.ownerQuota(ownerKey),
        ownerQuotaChecks: this.keys.ownerQuotaChecks(ownerKey),
        ownerTasks: this.keys.ownerTasks(ownerKey),
        ownerContextTasks,
        ownerStoredBytes: this.keys.byteBucket(ownerKey, 'stored'),
        pushCursors: k.pushCursors,
      };
      const claimed = await this.claim(ownerKey, now.getTime(), () => this.call(createClaimedTaskScript, keys, creation.args));
      if (claimed.outcome === 'CLAIMED') return this.created(input, claimed, creation.task, claimed.created, undefined);
      // The message's key names this call's own fresh id: ioredis re-sent the call after its reply
      // was lost, and the first send made the task (and took the turn's lease: one script). Answered
      // as created, so the turn starts now; its run takes the lease again, as this worker holds it.
      if (claimed.outcome === 'CLAIMED_BEFORE' && claimed.taskId === taskId && input.takeLease !== undefined) return this.createdByLostReply(input, creation.task);
      return this.afterClaim(input, claimed, creation);
    }
    const claimKeys = {
      idempotency,
      ...this.ownerSlotKeys(ownerKey),
      ownerTasks: this.keys.ownerTasks(ownerKey),
      ownerContextTasks,
      ownerStoredBytes: this.keys.byteBucket(ownerKey, 'stored'),
    };
    const claimed = await this.claim(ownerKey, now.getTime(), () => this.call(claimTaskScript, claimKeys, creation.args));
    return this.afterClaim(input, claimed, creation);
  }

  /**
   * Step 2, the task's slot, after a claim (idempotent on the task id). Claimed before: the
   * message's task. A process that died between the steps left the claim without its task; this
   * re-send completes it, under the claimed id.
   */
  private async afterClaim(input: CreateTaskInput, claimed: TaskClaim, claimedFresh: Creation): Promise<CreateResult> {
    if (claimed.outcome === 'OVER_QUOTA') return claimed.overQuota;
    if (claimed.outcome === 'BYTE_RATE') return { kind: 'byte-rate', waitMs: claimed.waitMs };
    if (claimed.outcome === 'TOO_MANY_ACTIVE') return { kind: 'too-many-active', active: claimed.active };
    const id = claimed.outcome === 'CLAIMED_BEFORE' ? claimed.taskId : input.taskId;
    // A task created on a fresh claim only: a re-send's task (CLAIMED_BEFORE) is answered as a duplicate, its turn queued, and takes no lease.
    const creation = claimed.outcome === 'CLAIMED' ? claimedFresh : this.creationOf(input, id, undefined);
    const pending = this.call(createTaskScript, this.keys.task(id), creation.args);
    // After the create, in the same write on a single Redis: no worker can fetch the job before the task exists.
    const queued = claimed.outcome === 'CLAIMED' && !isCluster(this.redis) ? input.queueFirstTurn?.(claimed.active) : undefined;
    // Awaited below; a failed script must not leave it unhandled meanwhile.
    queued?.catch(() => undefined);
    const reply = await pending;
    if (claimed.outcome === 'CLAIMED_BEFORE') {
      // A re-send may follow a process that died before its note was written.
      this.recentTasks.note(id, input.now.getTime());
      // Created now, the claim that held this id had no task: indexed under this context. For
      // the caller it is the message's task as for any re-send (it enqueues a turn not yet run).
      if (reply.outcome === 'CREATED') this.ownerIndex.note(ownerKeyOf(input.owner), id, input.contextId, input.now.getTime());
      return { kind: 'duplicate', taskId: id };
    }
    return this.created(input, claimed, creation.task, reply, queued);
  }

  /** The answer to a create whose claim claimed (`queued`: the first turn's job, added beside the create). */
  private async created(
    input: CreateTaskInput,
    claimed: { active: number; quotaChecksDue: number },
    task: Task,
    reply: TaskCreation,
    queued: Promise<unknown> | undefined,
  ): Promise<CreateResult> {
    this.recentTasks.note(task.id, input.now.getTime());
    // An existing task's first turn has the same job id: a job queued alongside is the same job.
    await queued;
    if (reply.outcome === 'EXISTS') return { kind: 'duplicate', taskId: task.id };
    // The lease's WORKING status carries the create's time, the index score the claim gave the task: nothing for the owner's index to learn.
    return { kind: 'created', task, eventId: reply.eventId, active: claimed.active, quotaChecksDue: claimed.quotaChecksDue, enqueued: queued !== undefined, lease: reply.lease };
  }

  /** The answer createClaimedTask's lost reply would have given, read back (its lease aside: the run takes it again). */
  private async createdByLostReply(input: CreateTaskInput, task: Task): Promise<CreateResult> {
    const ownerKey = ownerKeyOf(input.owner);
    const [first, active] = await Promise.all([this.redis.xrange(this.keys.task(task.id).events, '-', '+', 'COUNT', 1), this.redis.zcard(this.keys.ownerActiveTasks(ownerKey))]);
    const eventId = first[0]?.[0];
    // Trimmed away already: the task has moved on, and is answered as a re-sent message's.
    if (eventId === undefined) return { kind: 'duplicate', taskId: task.id };
    this.recentTasks.note(task.id, input.now.getTime());
    return { kind: 'created', task, eventId, active, quotaChecksDue: 0, enqueued: false, lease: undefined };
  }

  /**
   * The task createTask stores under `id`, and createTask's arguments for it (with the first
   * turn's lease, when `lease` is given), the claim's terms beside them for createClaimedTask.
   * One literal, every property named: V8 keeps it a fast object (see createTask).
   */
  private creationOf(input: CreateTaskInput, id: string, lease: LeaseTerms | undefined): Creation {
    const { taskId, owner, contextId, message, now } = input;
    const stored = id === taskId || message.taskId === undefined ? message : { ...message, taskId: id };
    const status: TaskStatus = { state: 'TASK_STATE_SUBMITTED', timestamp: now.toISOString() };
    const task: Task = { id, contextId, status, history: [stored] };
    if (Object.keys(input.metadata).length > 0) task.metadata = input.metadata;
    const messageJson = stored === message && input.messageJson !== undefined ? input.messageJson : JSON.stringify(stored);
    const event = creationEvent(task, messageJson);
    const turnRecord: TurnRecord = { turn: 1, inputMessageIds: [message.messageId], acceptedAtMs: now.getTime() };
    const args: ScriptArgs<typeof createClaimedTaskScript.args> = {
      taskId: id,
      ownerKey: ownerKeyOf(owner),
      tenant: owner.tenant,
      contextId,
      status,
      messageJson,
      messageId: message.messageId,
      nowMs: now.getTime(),
      publishedEvent: event.published ?? '',
      turnRecord,
      eventChannel: this.keys.eventChannel(id),
      metadata: input.metadata,
      versions: input.versions,
      links: input.links === undefined ? undefined : { parentTaskId: input.links.parentTaskId, role: input.links.role, readOnly: input.links.readOnly ? '1' : '0' },
      callerScopes: input.callerScopes,
      messageDigest: input.messageDigest,
      callerExtensions: input.callerExtensions,
      // The same bytes twice (a first message small enough to stay in the event) go once: '' is "as published".
      storedEvent: event.stored === event.published ? '' : event.stored,
      answerHistoryLength: input.answerHistoryLength,
      messageAtByte: event.messageAtByte,
      nowIso: now.toISOString(),
      leaseWorkerId: lease?.workerId,
      leaseTtlMs: lease?.leaseTtlMs,
      turnDeadlineMs: lease?.turnDeadlineMs,
      maxTurnAttempts: lease?.maxTurnAttempts,
      artifactsInlineBytes: lease === undefined ? undefined : SEGMENT_BYTES,
      idempotencyTtlSeconds: input.idempotencyTtlSeconds,
      maxActiveTasks: input.maxActiveTasks,
      chargeBytes: input.quota?.bytes,
      maxBytes: input.quota?.maxBytes,
      maxTasks: input.quota?.maxTasks,
      checkAtMs: input.quota?.checkAtMs,
      storedPerSecond: input.storedBytes?.perSecond,
      storedBurst: input.storedBytes?.burst,
      storedCost: input.storedBytes?.cost,
    };
    return { task, args };
  }

  async acceptMessage(input: {
    taskId: string;
    owner: Owner;
    contextId: string | undefined;
    message: Message;
    /** Most tasks the owner may have queued or running (0 = no cap). */
    maxActiveTasks: number;
    /** What a message to a task whose turn is queued or running does (the agent's setting). */
    inputPolicy: InputPolicy;
    /** What the caller's credentials granted (ctx.caller.scopes of the turn that takes the message). */
    callerScopes?: readonly string[];
    /** Most messages that may wait for a running turn (0 = no bound). */
    maxQueuedMessages?: number;
    /** The extensions the request activated (ctx.extensions of the turn that takes the message). */
    callerExtensions?: readonly string[];
    /** Digest of the message as sent (messageDigestOf): a messageId taken with other content is a conflict. */
    messageDigest?: string;
    /** What the message's storage charges to the owner's quota (none: not charged; maxTasks is not used). */
    quota?: QuotaCharge;
    /** The sending request's W3C trace context: a message that waits for the running turn hands it to the next turn. */
    trace?: Record<string, string>;
    /** The generation the caller expects the task at (the task-generations extension); undefined = any. */
    expectedGeneration?: number;
    /**
     * The caller watches the task since before this call and waits for the turn the message
     * starts, answered with this much history (-1 = all): the turn's final event carries the task.
     */
    answerHistoryLength?: number;
    /**
     * Takes the lease of the turn the message resumes in the accept's own call, for a turn that
     * starts in this process (src/runtime/local-turns.ts): what acquireLease would do next, without
     * a round trip of its own. The lease is in a `resumed` result; any other outcome takes none.
     */
    takeLease?: LeaseTerms;
    now: Date;
  }): Promise<AcceptResult> {
    const { taskId, owner, message, now } = input;
    const ownerKey = ownerKeyOf(owner);
    const k = this.keys.task(taskId);
    const charge = input.quota?.bytes ?? 0;
    const acceptArgs = {
      ownerKey,
      contextId: input.contextId,
      message,
      messageId: message.messageId,
      nowMs: now.getTime(),
      nowIso: now.toISOString(),
      eventChannel: this.keys.eventChannel(taskId),
      taskId,
      ownerRefused: false,
      inputPolicy: input.inputPolicy,
      cancelChannel: this.cancelChannelOf(taskId),
      callerScopes: input.callerScopes,
      maxQueuedMessages: input.maxQueuedMessages,
      messageDigest: input.messageDigest,
      callerExtensions: input.callerExtensions,
      trace: input.trace,
      expectedGeneration: input.expectedGeneration,
      answerHistory: input.answerHistoryLength,
      leaseWorkerId: input.takeLease?.workerId,
      leaseTtlMs: input.takeLease?.leaseTtlMs,
      turnDeadlineMs: input.takeLease?.turnDeadlineMs,
      maxTurnAttempts: input.takeLease?.maxTurnAttempts,
      artifactsInlineBytes: input.takeLease === undefined ? undefined : SEGMENT_BYTES,
    };
    const claimTurn = (maxActiveTasks: number, resuming: boolean, bytes: number): Promise<TurnClaim> =>
      this.call(claimTurnScript, this.ownerSlotKeys(ownerKey), {
        taskId,
        nowMs: now.getTime(),
        maxActiveTasks,
        resumes: resuming,
        chargeBytes: bytes,
        maxBytes: input.quota?.maxBytes,
        checkAtMs: input.quota?.checkAtMs,
      });
    let claimed: TurnClaim | undefined;
    let reply: AcceptOutcome;
    let contextId: string;
    // Whether a message that resumed the task still needs its active entry (it was not claimed as a resume).
    let resumedUnclaimed: boolean;
    if (!isCluster(this.redis)) {
      // On a single Redis the owner's say, decided from the task as the call finds it, and the
      // accept go in one call (acceptClaimedMessage-13.lua): no read first, one round trip.
      const keys = { ...k, ...this.ownerSlotKeys(ownerKey) };
      const joined = await this.claim(ownerKey, now.getTime(), () =>
        this.call(acceptClaimedMessageScript, keys, { ...acceptArgs, maxActiveTasks: input.maxActiveTasks, chargeBytes: charge, maxBytes: input.quota?.maxBytes, checkAtMs: input.quota?.checkAtMs }),
      );
      ({ claim: claimed, accept: reply, contextId } = joined);
      resumedUnclaimed = false;
    } else {
      // Read first (one round trip, as for any other owner): whether the message needs the owner's
      // say. Only the script's own checks count; a state changed meanwhile is handled after it.
      const [storedOwner, storedContextId, state, awaiting] = await this.redis.hmget(k.task, taskField.owner, taskField.contextId, taskField.state, taskField.awaitingChild);
      if (storedOwner !== ownerKey || typeof storedContextId !== 'string') return { kind: 'not-found' };
      // Bad input changes nothing, not even the owner's slot (the script checks it again, atomically).
      if (input.contextId !== undefined && input.contextId !== storedContextId) return { kind: 'context-mismatch' };
      contextId = storedContextId;
      const resumes = typeof state === 'string' && RESUMING_STATES.has(state) && awaiting === null;
      // Step 1, the owner's slot: an active slot for a resume, the quota for the message's bytes.
      claimed = resumes || charge > 0 ? await this.claim(ownerKey, now.getTime(), () => claimTurn(input.maxActiveTasks, resumes, charge)) : undefined;
      // Step 2, the task's slot. A refused claim still runs the checks that come first (a re-sent
      // message is a duplicate even at the quota), and changes nothing.
      reply = await this.call(acceptMessageScript, k, { ...acceptArgs, ownerRefused: claimed !== undefined && claimed.outcome !== 'CLAIMED' });
      resumedUnclaimed = claimed === undefined || !resumes;
    }
    const refusal = claimed?.outcome === 'CLAIMED' ? undefined : claimed;
    const taken = claimed?.outcome === 'CLAIMED' ? claimed : undefined;
    const { outcome } = reply;
    if (refusal !== undefined && outcome === 'REFUSED') {
      return refusal.outcome === 'OVER_QUOTA' ? refusal.overQuota : { kind: 'too-many-active', active: refusal.active };
    }
    // Nothing taken: the claim's charge goes back (a crash here leaves it to the quota sweep).
    if (taken !== undefined && charge > 0 && ACCEPT_REFUSALS.has(outcome)) {
      await this.call(quotaRefundScript, this.ownerSlotKeys(ownerKey), { taskId, bytes: charge });
    }
    // An active entry this claim added for a message the task then refused goes again.
    if (taken?.added === true && ACCEPT_REFUSALS.has(outcome)) {
      await this.ownerIndex.dropActive(ownerKey, [{ taskId, maxScore: now.getTime() }]);
    }
    let active = taken?.active ?? 0;
    // Resumed without a claim (it waited for input only after the read): its active entry follows now.
    if (outcome === 'RESUMED' && resumedUnclaimed) {
      // No cap and no charge: this claim is never refused.
      const resumed = await claimTurn(0, true, 0);
      active = resumed.outcome === 'CLAIMED' ? resumed.active : 0;
    }
    if (!ACCEPT_REFUSALS.has(outcome)) this.recentTasks.note(taskId, now.getTime());
    if (ACCEPT_ANNOUNCED.has(outcome)) this.ownerIndex.note(ownerKey, taskId, contextId, now.getTime());
    // Artifacts too large for the lease's reply are read in slices, as a worker's acquireLease reads them.
    if (reply.outcome === 'RESUMED' && reply.lease?.kind === 'acquired') reply = { ...reply, lease: await withArtifactSlicesRead(this.redis, k, reply.lease) };
    return acceptResultOf(reply, active, contextId);
  }

  /**
   * The task as its owner may see it, or undefined when missing or not theirs. A task of more
   * than LARGE_TASK_BYTES of artifacts is read by readLargeTask (one round trip more).
   */
  async readTask(taskId: string, owner: Owner, historyLength: number | undefined): Promise<TaskRead | undefined> {
    const read = await this.readTaskWithin(taskId, owner, historyLength, LARGE_TASK_BYTES);
    return read !== undefined && 'large' in read ? this.readLargeTask(taskId, owner, historyLength) : read;
  }

  /** readTask's answer with plain commands, for a task readTaskWithin answered LARGE (task-large-read.ts). */
  async readLargeTask(taskId: string, owner: Owner, historyLength: number | undefined): Promise<TaskRead | undefined> {
    return readLargeTask(this.redis, this.keys.task(taskId), taskId, ownerKeyOf(owner), historyLength);
  }

  /**
   * readLargeTask for a reader that assembles the artifacts elsewhere: read by `largeReader`
   * when one is set (the artifacts then stay where they were read), else here, left as stored.
   */
  async readRawLargeTask(taskId: string, owner: Owner, historyLength: number | undefined): Promise<RawLargeTask | HeldLargeTask | undefined> {
    if (this.largeReader !== undefined) return this.largeReader.read(taskId, ownerKeyOf(owner), historyLength);
    return readRawLargeTask(this.redis, this.keys.task(taskId), taskId, ownerKeyOf(owner), historyLength);
  }

  /** The task's state, context and last event id without its artifacts or history (task-large-read.ts). */
  async readTaskHead(taskId: string, owner: Owner): Promise<TaskHead | undefined> {
    return readTaskHead(this.redis, this.keys.task(taskId), ownerKeyOf(owner));
  }

  /**
   * readTask for a reader who pays for the answer after the read up to `payAfterBytes` of
   * artifacts (> 0): a task whose stored artifacts weigh more is not assembled in Redis, and
   * answers LargeTask for the reader to pay for first (one round trip, as readTask, either way).
   */
  async readTaskWithin(taskId: string, owner: Owner, historyLength: number | undefined, payAfterBytes: number): Promise<TaskRead | LargeTask | undefined> {
    return this.call(readTaskScript, this.keys.task(taskId), { ownerKey: ownerKeyOf(owner), historyLength: historyLength ?? -1, payAfterBytes });
  }

  /**
   * The task's contextId when `ownerKey` owns it. Another owner's task ends here exactly like a
   * missing one, after the same single round trip (invariant 10: not even timing tells them
   * apart); the script still checks the owner, atomically.
   */
  private async ownContextId(taskKey: string, ownerKey: string): Promise<string | undefined> {
    const [owner, contextId] = await this.redis.hmget(taskKey, taskField.owner, taskField.contextId);
    return owner === ownerKey && contextId !== null ? contextId : undefined;
  }

  /** `requestedBy`: an operator canceling another owner's task, recorded on the task and in its cancellation events. */
  async cancelTask(taskId: string, owner: Owner, now: Date, requestedBy?: string, expectedGeneration?: number): Promise<CancelResult> {
    const ownerKey = ownerKeyOf(owner);
    const k = this.keys.task(taskId);
    const contextId = await this.ownContextId(k.task, ownerKey);
    if (contextId === undefined) return { kind: 'not-found' };
    const reply = await this.call(cancelTaskScript, k, {
      ownerKey,
      nowMs: now.getTime(),
      nowIso: now.toISOString(),
      eventChannel: this.keys.eventChannel(taskId),
      cancelChannel: this.cancelChannelOf(taskId),
      taskId,
      retentionSeconds: this.retentionSeconds,
      requestedBy,
      expectedGeneration,
    });
    if (reply.outcome === 'CANCELED' || reply.outcome === 'REQUESTED') this.recentTasks.note(taskId, now.getTime());
    if (reply.outcome === 'CANCELED') {
      // Step 3, written at once: the owner's next task may take the slot this one freed.
      this.ownerIndex.note(ownerKey, taskId, contextId, now.getTime(), now.getTime());
      await this.ownerIndex.flushOwner(ownerKey);
    }
    switch (reply.outcome) {
      case 'NOT_FOUND':
        return { kind: 'not-found' };
      case 'NOT_CANCELABLE':
        return { kind: 'not-cancelable', state: reply.state };
      case 'CANCELED':
        return { kind: 'canceled' };
      case 'GENERATION_MISMATCH':
        return { kind: 'generation-mismatch', generation: reply.generation };
      default:
        return { kind: 'requested' };
    }
  }

  /**
   * The task's generation and the id of its newest event, read together (one MULTI: a script
   * bumps the one and appends the other in one call, so they agree); undefined when the task is
   * missing or not the owner's. What a GetTask waiting for a generation checks before it waits.
   */
  async generationMark(taskId: string, owner: Owner): Promise<{ generation: number; lastEventId: string } | undefined> {
    const k = this.keys.task(taskId);
    const replies = (await this.redis.multi().hmget(k.task, taskField.owner, taskField.generation).xrevrange(k.events, '+', '-', 'COUNT', 1).exec()) ?? [];
    for (const [error] of replies) if (error !== null) throw error;
    const [storedOwner, generation] = (replies[0]?.[1] ?? []) as (string | null)[];
    if (storedOwner !== ownerKeyOf(owner)) return undefined;
    const last = (replies[1]?.[1] ?? []) as [string, string[]][];
    return { generation: Number(generation ?? 0), lastEventId: last[0]?.[0] ?? '' };
  }

  /**
   * Like readEvents, with what the replay bound had dropped when they were read (one MULTI, so
   * the two agree): a reader whose afterId is older than `trimmed.throughId` missed events.
   */
  async readEventsAfter(taskId: string, afterId: string, count: number): Promise<{ events: StoredEvent[]; trimmed: TrimmedEvents }> {
    const read = await this.call(readEventsAfterScript, this.keys.task(taskId), { start: afterId === '' ? '-' : `(${afterId}`, count });
    return { events: await this.storedEvents(taskId, read.entries), trimmed: { throughId: read.trimmedThroughId, count: read.trimmedCount } };
  }

  /** One event by its id, or undefined when the replay buffer no longer holds it. */
  async readEvent(taskId: string, id: string): Promise<string | undefined> {
    const entries = await this.redis.xrange(this.keys.task(taskId).events, id, id);
    return (await this.storedEvents(taskId, entries))[0]?.json;
  }

  /** Events after `afterId` (exclusive), oldest first; all events when afterId is ''. */
  async readEvents(taskId: string, afterId: string, count?: number): Promise<StoredEvent[]> {
    const key = this.keys.task(taskId).events;
    const start = afterId === '' ? '-' : `(${afterId}`;
    const entries =
      count === undefined
        ? await this.redis.xrange(key, start, '+')
        : await this.redis.xrange(key, start, '+', 'COUNT', count);
    return this.storedEvents(taskId, entries);
  }

  /** Stream entries as events, the creation event's first message put back in (creation-event.ts). */
  private async storedEvents(taskId: string, entries: [string, string[]][]): Promise<StoredEvent[]> {
    const jsons = await inflateAll(this.redis, this.keys.task(taskId).history, entries.map(([, fields]) => fields[1] ?? 'null'));
    return entries.map(([id], i) => storedEvent(id, jsons[i] ?? 'null'));
  }

  /** The digest of the content a task's message was taken with, or undefined (unknown message, or a task from before digests). */
  async messageDigest(taskId: string, messageId: string): Promise<string | undefined> {
    const digest = await this.redis.hget(this.keys.task(taskId).task, taskItemField('digest', messageId));
    return digest === null || digest === '' ? undefined : digest;
  }

  /** The coordinator a sub-agent's task hangs off, from the server's own link (never from metadata a caller sent). */
  async parentOf(taskId: string): Promise<string | undefined> {
    return (await this.redis.hget(this.keys.task(taskId).task, taskField.parentTaskId)) ?? undefined;
  }

  /** The stored owner key of a task, used where the caller is a worker, not a principal. */
  async taskOwnerKey(taskId: string): Promise<string | undefined> {
    return (await this.redis.hget(this.keys.task(taskId).task, taskField.owner)) ?? undefined;
  }
}
