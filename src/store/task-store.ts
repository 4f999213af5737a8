// The task store: every read and write of task state in Redis goes through here, and every
// multi-key write is one Lua script (src/store/lua), so a task's state, its replay buffer and
// its live announcement never disagree.
import { isCluster, type RedisClient } from '../redis/connection.ts';
import type {
  Artifact,
  JsonObject,
  JsonValue,
  Message,
  StreamResponse,
  Task,
  TaskState,
  TaskStatus,
} from '../protocol/types.ts';
import type { TurnUsage } from '../../adapters/types.ts';
import type { InputPolicy } from '../config/schema.ts';
import { RESERVED_METADATA_KEY } from '../protocol/schemas.ts';
import { DIRECT_REPLY_EVENT_METADATA } from '../tasks/direct-reply.ts';
import { RedisKeys } from './keys.ts';
import { creationEvent, inflateAll } from './creation-event.ts';
import { DEFAULT_REPLAY_BOUND, type ReplayBound, type TrimmedEvents } from './replay-bound.ts';
import { RecentTaskIndex, DEFAULT_RECENT_TASK_INDEX, type RecentTaskIndexOptions } from './recent-tasks.ts';
import { defineScripts, type ScriptRunner } from './scripts.ts';
import { OwnerIndex } from './owner-index.ts';
import { cancelStages } from '../telemetry/metrics.ts';
import { pipelineAcrossSlots } from '../redis/cross-slot.ts';

/**
 * Whose a task is: a principal of a tenant, using one agent. Tasks, contexts, indexes,
 * idempotency keys, active-task caps and rate buckets are all per owner, so a task of one agent
 * is not found through another agent's URLs, and two agents never share a context.
 */
export interface Owner {
  /** The agent (name) the task belongs to. */
  agent: string;
  /** Tenant the owner belongs to ('' when tenants are not used). */
  tenant: string;
  /** Principal id within the tenant. */
  subject: string;
}

/** What a task started under (invariant 9): continuing under an incompatible one is an error. */
export interface TaskVersions {
  gateway: string;
  /** "<adapter name>@<adapter version>" */
  adapter: string;
  card: string;
}

/** "<agent>/<tenant>/<subject>", each part URI-encoded (so it holds no "/" and no ":"). */
export const ownerKeyOf = (owner: Owner): string =>
  `${encodeURIComponent(owner.agent)}/${encodeURIComponent(owner.tenant)}/${encodeURIComponent(owner.subject)}`;

/** The owner a key was made from (ownerKeyOf's inverse). */
export function ownerFromKey(ownerKey: string): Owner {
  const [agent = '', tenant = '', subject = ''] = ownerKey.split('/');
  return { agent: decodeURIComponent(agent), tenant: decodeURIComponent(tenant), subject: decodeURIComponent(subject) };
}

export interface TurnRecord {
  turn: number;
  inputMessageIds: string[];
  acceptedAtMs: number;
  attempts?: number;
  startedAtMs?: number;
  finishedAtMs?: number;
  workerId?: string;
  /** The adapter that ran the turn (name@version), so a result can be traced to its code. */
  adapter?: string;
  outcome?: TaskState;
  reason?: string;
  steps?: { name: string; atMs: number; attempt: number; detail?: JsonObject }[];
  /** Times a shutting-down worker handed the turn back; these did not count as attempts. */
  handBacks?: number;
  /** Units the turn spent across all its attempts (ctx.budget), as of the record's last write. */
  budgetSpent?: number;
  /** The budget the turn ran under (turnBudget), when it had one. */
  budgetLimit?: number;
  /** What the turn's model calls consumed (ctx.recordUsage), across its attempts as recorded. */
  usage?: TurnUsage;
}

/** One side-effecting step in the journal (invariant 4). */
export interface StepRecord {
  name: string;
  turn: number;
  /** Derived from task, turn and step: the key to hand to the external system. */
  idempotencyKey: string;
  /** `unknown`: found started-without-result after a lost attempt and handed to the adapter. */
  state: 'started' | 'done' | 'failed' | 'unknown';
  attempt: number;
  startedAtMs: number;
  finishedAtMs?: number;
  /** An external id the step recorded while running (e.g. a downstream task or payment id). */
  reference?: string;
  value?: JsonValue;
  error?: string;
  /** The attempt the unknown outcome was handed to, for reconciliation. */
  surfacedToAttempt?: number;
}

export type CreateResult =
  /** `active`: the owner's tasks queued or running now, this one included (its turn's queue priority). */
  /** `quotaChecksDue`: the owner's quota checks that are due (a sweep may release expired tasks' charges). */
  /** `enqueued`: `queueFirstTurn` went out with the task's script (see createTask). */
  | { kind: 'created'; task: Task; eventId: string; active: number; quotaChecksDue: number; enqueued: boolean }
  | { kind: 'duplicate'; taskId: string }
  | { kind: 'too-many-active'; active: number }
  | OverQuota;

/** The owner's storage quota would be passed; nothing changed. */
export interface OverQuota {
  kind: 'over-quota';
  quota: 'bytes' | 'tasks';
  /** What the owner has stored now (bytes or tasks). */
  stored: number;
  /** When the earliest of the owner's charged tasks is next looked at for expiry (ms), if any. */
  nextCheckAtMs: number | undefined;
}

/** What a stored message charges to its owner's storage quota (see docs/hardening.md). */
export interface QuotaCharge {
  bytes: number;
  /** 0 = no quota. */
  maxBytes: number;
  /** 0 = no quota (createTask only). */
  maxTasks: number;
  /** When to first look whether the task still exists (ms). */
  checkAtMs: number;
}

const overQuotaOf = (reply: (string | number | null)[]): OverQuota => ({
  kind: 'over-quota',
  quota: reply[1] === 'tasks' ? 'tasks' : 'bytes',
  stored: Number(reply[2]),
  nextCheckAtMs: reply[3] === '' || reply[3] === null || reply[3] === undefined ? undefined : Number(reply[3]),
});

export type AcceptResult =
  | { kind: 'not-found' }
  /** The messageId was taken before with other content; nothing changed. */
  | { kind: 'conflict' }
  | { kind: 'context-mismatch' }
  | { kind: 'duplicate'; turn: number }
  | { kind: 'terminal'; state: TaskState }
  | { kind: 'resumed'; turn: number; active: number }
  | { kind: 'queued'; turn: number }
  | { kind: 'too-many-active'; active: number }
  | { kind: 'forwarded'; childId: string }
  /** As many messages as allowed already wait for the running turn; nothing changed. */
  | { kind: 'inbox-full'; waiting: number }
  /** Input policy reject: a turn is queued or running; nothing changed. */
  | { kind: 'busy'; state: TaskState }
  /** Input policy interrupt, the turn had not started: the message joined its input. */
  | { kind: 'joined'; turn: number }
  /** Input policy interrupt: the running turn was asked to stop; the message is the next turn's input. */
  | { kind: 'interrupting'; turn: number }
  | OverQuota;

export type CancelResult =
  | { kind: 'not-found' }
  | { kind: 'not-cancelable'; state: TaskState }
  | { kind: 'canceled' }
  | { kind: 'requested' };

export interface TaskRead {
  task: Task;
  /** The Message the agent answered with instead of a task (spec 3.1.1), when it did. */
  directReply?: Message;
  /** Id of the last event the snapshot includes ('' if the buffer is empty or expired). */
  lastEventId: string;
  /** What the replay bound dropped from the task's buffer, as of the snapshot. */
  trimmed: TrimmedEvents;
}

export type LeaseResult =
  | { kind: 'gone' }
  | { kind: 'closed'; state: TaskState }
  | { kind: 'held'; holder: string }
  | {
      kind: 'acquired';
      generation: number;
      turn: number;
      attempts: number;
      cancelRequestedAtMs: number | undefined;
      status: TaskStatus;
      artifacts: Artifact[];
      metadata: JsonObject;
      contextId: string;
      turnInputStart: number;
      turnRecord: TurnRecord | undefined;
      versions: TaskVersions | undefined;
      /** When this turn must end (fixed at its first start), if it has a deadline. */
      deadlineAtMs: number | undefined;
      /** Units the turn spent so far, whichever workers spent them. */
      budgetSpent: number;
      /** Times the turn was handed back at a worker's shutdown. */
      handBacks: number;
      /** Set on a sub-agent's task: its role, its coordinator, and whether it may only read. */
      links: TaskLinks | undefined;
      /** How often this turn was woken after parking for its assignments (a lost worker's replacement keeps its run's count). */
      resumption: number;
      /** The turn was parked for its assignments at least once: this run continues it. */
      resumed: boolean;
      /** A new message asked this turn to stop (input policy interrupt): it ends at once, the next turn takes over. */
      interrupted: boolean;
      /** The scopes the credentials of the task's latest input granted. */
      callerScopes: string[];
      /** The extensions the request of the task's latest input activated. */
      callerExtensions: string[];
      history: Message[];
    };

/** How a sub-agent's task hangs off its coordinator. */
export interface TaskLinks {
  parentTaskId: string;
  role: string;
  /** A reviewer: it may not journal side effects or delegate. */
  readOnly: boolean;
}

/** What the reconciler should do about one entry of an owner's active set. */
export type ActiveEntry =
  | { kind: 'removed'; state: TaskState | undefined }
  | { kind: 'running' }
  | { kind: 'parked' }
  | { kind: 'recent' }
  /** A coordinator parked for long: run it, so it re-checks its assignments. */
  | { kind: 'wake'; turn: number; ownerKey: string; contextId: string }
  | { kind: 'candidate'; turn: number; ownerKey: string; contextId: string; parentTaskId: string | undefined };

export type FinishResult =
  | { kind: 'stale' }
  /** `directReply`: the turn's message was kept as the task's direct reply. */
  | { kind: 'done'; eventId: string; directReply: boolean }
  /** `trace`: the W3C trace context of the request whose message waited first; the next turn continues it. */
  | { kind: 'next'; turn: number; turnInputStart: number; input: Message[]; trace?: Record<string, string> };

/** Where an adapter's event stands in its turn run (see appendEvents-5.lua). */
export interface EmitPlace {
  /** "<turn>.<resumption>": runs of one scope repeat each other; a new scope starts afresh. */
  scope: string;
  /** 1 for the run's first event, 2 for the next, … */
  sequence: number;
  /** Digest of what the event says (without its timestamps and message ids). */
  digest: string;
  /** This run already appended an event: it has left the earlier run's prefix, so append always. */
  pastPrefix: boolean;
}

export interface StoredEvent {
  id: string;
  /** The StreamResponse JSON exactly as stored. */
  json: string;
  event: StreamResponse;
}

export const DEFAULT_RETENTION_SECONDS = 7 * 24 * 3600;

export class StaleLeaseError extends Error {
  constructor(taskId: string) {
    super(`Task ${taskId} is held by a newer lease generation; this worker's write was rejected.`);
    this.name = 'StaleLeaseError';
  }
}

/** Task hash field prefix of an adapter's values (ctx.adapterState). */
const ADAPTER_STATE_FIELD = 'adapter:';

/** Task metadata key under which the gateway reports what it did to a task (callers may not set it). */
export const GATEWAY_METADATA_KEY = RESERVED_METADATA_KEY;

const isoOf = (ms: string | undefined): JsonValue => (ms ? new Date(Number(ms)).toISOString() : null);

/** The cancellation stages as the task reports them (invariant 6), with which terminal state won. */
function cancellationOf(requested: string | undefined, acknowledged: string | undefined, stopped: string | undefined, outcome: string | undefined): JsonObject {
  return {
    requestedAt: isoOf(requested),
    acknowledgedAt: isoOf(acknowledged),
    stoppedAt: isoOf(stopped),
    // null while the turn has not ended; else the terminal state that won the race.
    outcome: outcome ? outcome : null,
  };
}

/** acceptMessage replies that changed nothing (so nothing to note in the recent-tasks index, and a charge to give back). */
const ACCEPT_REFUSALS = new Set(['NOT_FOUND', 'CONFLICT', 'BUSY', 'INBOX_FULL', 'REFUSED', 'CONTEXT_MISMATCH', 'TERMINAL', 'DUPLICATE']);
/** acceptMessage replies after which the task has a new status (its owner's indexes move forward). */
const ACCEPT_ANNOUNCED = new Set(['RESUMED', 'FORWARDED']);

const OPEN_STATES = new Set(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING']);
const RESUMING_STATES = new Set(['TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED']);
/**
 * An active-set entry whose task does not exist may be a claim whose task is being created
 * (claimTask, then createTask): only one older than this is dropped.
 */
const UNCREATED_CLAIM_GRACE_MS = 10_000;

const str = (value: string | number | null | undefined): string => (value === null || value === undefined ? '' : String(value));

/** A task as readTask-3.lua returned it (ListTasks builds the same reply from plain reads), or undefined when it is missing or not the caller's. */
export function taskReadOf(reply: (string | number | null)[]): TaskRead | undefined {
  if (reply.length === 0) return undefined;
  const [id, contextId, status, artifacts, metadata, lastEventId, requested, acknowledged, stopped, cancelOutcome, outcome, inputTokens, outputTokens, directReply, trimmedThrough, trimmedCount, ...history] =
    reply.map(str);
  const task: Task = {
    id: id as string,
    contextId: contextId as string,
    status: JSON.parse(status as string) as TaskStatus,
  };
  const parsedArtifacts = JSON.parse(artifacts || '[]') as Artifact[];
  if (parsedArtifacts.length > 0) task.artifacts = parsedArtifacts;
  const parsedMetadata = JSON.parse(metadata || '{}') as JsonObject;
  // Kept beside what else the gateway recorded there (a sub-agent's link to its coordinator).
  const recorded = parsedMetadata[GATEWAY_METADATA_KEY];
  const gateway: JsonObject = recorded !== null && typeof recorded === 'object' && !Array.isArray(recorded) ? { ...recorded } : {};
  if (requested) gateway.cancellation = cancellationOf(requested, acknowledged, stopped, cancelOutcome);
  if (outcome) gateway.outcome = JSON.parse(outcome) as JsonObject;
  if (inputTokens || outputTokens) {
    const input = Number(inputTokens || 0);
    const output = Number(outputTokens || 0);
    gateway.usage = { inputTokens: input, outputTokens: output, totalTokens: input + output };
  }
  if (directReply) gateway.directReply = true;
  if (Object.keys(gateway).length > 0) parsedMetadata[GATEWAY_METADATA_KEY] = gateway;
  if (Object.keys(parsedMetadata).length > 0) task.metadata = parsedMetadata;
  if (history.length > 0) task.history = history.map((m) => JSON.parse(m) as Message);
  const read: TaskRead = { task, lastEventId: lastEventId as string, trimmed: { throughId: trimmedThrough ?? '', count: Number(trimmedCount || 0) } };
  if (directReply) read.directReply = JSON.parse(directReply) as Message;
  return read;
}

/**
 * Whether an owner's active-set entry (made at `score` ms) may go: its task is gone, or has no
 * turn queued or running since after the entry was made. An entry newer than the task's last
 * change is a resume on its way (claimTurn, then acceptMessage) and stays for a grace period.
 */
export function isStaleActive(state: string | undefined, updatedAtMs: number, score: number, nowMs: number): boolean {
  if (state !== undefined && OPEN_STATES.has(state)) return false;
  if (state !== undefined && updatedAtMs >= score) return true;
  return nowMs - score >= UNCREATED_CLAIM_GRACE_MS;
}

/** A stream entry as read; its JSON is parsed on first use only (replaying a buffer forwards the JSON as is). */
function storedEvent(id: string, json: string): StoredEvent {
  let parsed: StreamResponse | undefined;
  return {
    id,
    json,
    get event(): StreamResponse {
      parsed ??= JSON.parse(json) as StreamResponse;
      return parsed;
    },
  };
}

export class TaskStore {
  readonly keys: RedisKeys;
  /** Every task by when it last changed, for operators; noted after each write below that changes a task's state. */
  readonly recentTasks: RecentTaskIndex;
  /** The owner's indexes and active set, written after each task's own write (step 3, docs/redis-slots.md). */
  readonly ownerIndex: OwnerIndex;
  private readonly run: ScriptRunner;

  /**
   * @param retentionSeconds how long a terminal task (state, history, replay buffer, turns)
   *   stays readable before Redis expires it.
   * @param replay how far back each task's replay buffer reaches (the `replay` settings).
   * @param recentTaskIndex how the recent-tasks index is written (its retention defaults to retentionSeconds).
   */
  constructor(
    readonly redis: RedisClient,
    prefix: string,
    readonly retentionSeconds: number = DEFAULT_RETENTION_SECONDS,
    readonly replay: ReplayBound = DEFAULT_REPLAY_BOUND,
    recentTaskIndex: Partial<RecentTaskIndexOptions> = {},
  ) {
    this.keys = new RedisKeys(prefix);
    this.run = defineScripts(redis, replay);
    const indexOptions = { ...DEFAULT_RECENT_TASK_INDEX, retentionMs: retentionSeconds * 1000, ...recentTaskIndex };
    this.recentTasks = RecentTaskIndex.shared(redis, this.keys.recentTasks(), indexOptions);
    this.ownerIndex = OwnerIndex.shared(redis, this.run, this.keys, indexOptions.flushIntervalMs);
  }

  /** Writes the index hints this process noted, waiting at most `timeoutMs` (at shutdown). */
  async flushIndexesWithin(timeoutMs: number): Promise<void> {
    await Promise.all([this.recentTasks.flushWithin(timeoutMs), this.ownerIndex.flushWithin(timeoutMs)]);
  }

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
    const replies = await pipelineAcrossSlots(this.redis, taskKeys, (pipeline, i) => pipeline.hmget(taskKeys[i] as string, 'state', 'updatedAtMs'));
    const stale = entries.filter((entry, i) => {
      const [state, updatedAtMs] = (replies[i]?.[0]?.[1] ?? []) as (string | null)[];
      return isStaleActive(state ?? undefined, Number(updatedAtMs ?? 0), entry.score, nowMs);
    });
    await this.ownerIndex.dropActive(ownerKey, stale.map((entry) => ({ taskId: entry.taskId, maxScore: entry.score })));
  }

  /** Runs an owner's claim; refused at the active-task cap, it re-checks the owner's active tasks once and runs again. */
  private async claim(ownerKey: string, nowMs: number, run: () => Promise<(string | number | null)[]>): Promise<(string | number | null)[]> {
    const reply = await run();
    if (reply[0] !== 'TOO_MANY_ACTIVE') return reply;
    await this.dropStaleActive(ownerKey, nowMs);
    return run();
  }

  /** Where a task's cancel requests are published: one channel on a single Redis, the task's own on a Cluster. */
  private cancelChannelOf(taskId: string): string {
    return isCluster(this.redis) ? this.keys.taskCancelChannel(taskId) : this.keys.cancelChannel();
  }


  async createTask(input: {
    taskId: string;
    owner: Owner;
    contextId: string;
    message: Message;
    metadata: JsonObject;
    idempotencyTtlSeconds: number;
    versions: TaskVersions;
    /** Most tasks the owner may have queued or running (0 = no cap). */
    maxActiveTasks: number;
    /** A sub-agent's task: how it hangs off its coordinator. */
    links?: TaskLinks;
    /**
     * Where "this message created that task" is remembered; default: the owner's idempotency
     * key for the message id. Sub-agents' tasks use a key of their own, out of every caller's reach.
     */
    idempotencyKey?: string;
    /** What the caller's credentials granted (ctx.caller.scopes of the task's turns). */
    callerScopes?: readonly string[];
    /** The extensions the request activated (ctx.extensions of the task's turns). */
    callerExtensions?: readonly string[];
    /** Digest of the message as sent (messageDigestOf): a re-send with other content is a conflict. */
    messageDigest?: string;
    /** What the task's storage charges to the owner's quota (none: not charged). */
    quota?: QuotaCharge;
    /**
     * Queues the task's first turn, given the owner's active tasks; its commands must go out on
     * this store's connection. On a single Redis it is called right behind the task's script, so
     * auto-pipelining sends both in one write (one round trip) and Redis runs them in that order:
     * the task is stored before its job exists. On a Cluster the two may go to different nodes,
     * so there it is left to the caller, after the task is stored.
     */
    queueFirstTurn?: (active: number) => Promise<void>;
    now: Date;
  }): Promise<CreateResult> {
    const { taskId, owner, contextId, message, now } = input;
    const ownerKey = ownerKeyOf(owner);
    const turnRecord: TurnRecord = { turn: 1, inputMessageIds: [message.messageId], acceptedAtMs: now.getTime() };
    // Step 1, the owner's slot: the message's idempotency key, an active slot, the quota, the index.
    const claimed = await this.claim(ownerKey, now.getTime(), () =>
      this.run(
        'claimTask',
        [
          input.idempotencyKey ?? this.keys.idempotency(ownerKey, message.messageId),
          this.keys.ownerActiveTasks(ownerKey),
          this.keys.ownerQuota(ownerKey),
          this.keys.ownerQuotaChecks(ownerKey),
          this.keys.ownerTasks(ownerKey),
          this.keys.ownerContextTasks(ownerKey, contextId),
        ],
        [taskId, now.getTime(), input.idempotencyTtlSeconds, input.maxActiveTasks, input.quota?.bytes ?? 0, input.quota?.maxBytes ?? 0, input.quota?.maxTasks ?? 0, input.quota?.checkAtMs ?? 0],
      ),
    );
    if (claimed[0] === 'OVER_QUOTA') return overQuotaOf(claimed);
    if (claimed[0] === 'TOO_MANY_ACTIVE') return { kind: 'too-many-active', active: Number(claimed[1]) };
    // Claimed before: the message's task. A process that died between the steps left the claim
    // without its task; this re-send completes it, under the claimed id.
    const id = claimed[0] === 'CLAIMED_BEFORE' ? str(claimed[1]) : taskId;
    const k = this.keys.task(id);
    const stored = id === taskId || message.taskId === undefined ? message : { ...message, taskId: id };
    const status: TaskStatus = { state: 'TASK_STATE_SUBMITTED', timestamp: now.toISOString() };
    const task: Task = { id, contextId, status, history: [stored] };
    if (Object.keys(input.metadata).length > 0) task.metadata = input.metadata;
    // Step 2, the task's slot: idempotent on the task id.
    const messageJson = JSON.stringify(stored);
    const event = creationEvent(task, messageJson);
    const pending = this.run(
      'createTask',
      [k.task, k.history, k.events, k.messageIds, k.turns, k.pushCursors],
      [
        id,
        ownerKey,
        owner.tenant,
        contextId,
        JSON.stringify(status),
        messageJson,
        message.messageId,
        now.getTime(),
        event.full,
        JSON.stringify(turnRecord),
        this.keys.eventChannel(id),
        JSON.stringify(input.metadata),
        JSON.stringify(input.versions),
        input.links === undefined
          ? ''
          : JSON.stringify({ parentTaskId: input.links.parentTaskId, role: input.links.role, readOnly: input.links.readOnly ? '1' : '0' }),
        JSON.stringify(input.callerScopes ?? []),
        input.messageDigest ?? '',
        JSON.stringify(input.callerExtensions ?? []),
        event.stored,
      ],
    );
    const queued = claimed[0] !== 'CLAIMED_BEFORE' && !isCluster(this.redis) ? input.queueFirstTurn?.(Number(claimed[1])) : undefined;
    // Awaited below; a failed script must not leave it unhandled meanwhile.
    queued?.catch(() => undefined);
    const reply = await pending;
    // A re-send may follow a process that died before its note was written.
    this.recentTasks.note(id, now.getTime());
    if (claimed[0] === 'CLAIMED_BEFORE') {
      // Created now, the claim that held this id had no task: indexed under this context. For
      // the caller it is the message's task as for any re-send (it enqueues a turn not yet run).
      if (reply[0] === 'CREATED') this.ownerIndex.note(ownerKey, id, contextId, now.getTime());
      return { kind: 'duplicate', taskId: id };
    }
    // An existing task's first turn has the same job id: a job queued alongside is the same job.
    await queued;
    if (reply[0] === 'EXISTS') return { kind: 'duplicate', taskId: id };
    return { kind: 'created', task, eventId: str(reply[1]), active: Number(claimed[1]), quotaChecksDue: Number(claimed[2] ?? 0), enqueued: queued !== undefined };
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
    now: Date;
  }): Promise<AcceptResult> {
    const { taskId, owner, message, now } = input;
    const ownerKey = ownerKeyOf(owner);
    const k = this.keys.task(taskId);
    // Read first (one round trip, as for any other owner): whether the message needs the owner's
    // say. Only the script's own checks count; a state changed meanwhile is handled after it.
    const [storedOwner, contextId, state, awaiting] = await this.redis.hmget(k.task, 'owner', 'contextId', 'state', 'awaitingChild');
    if (storedOwner !== ownerKey || typeof contextId !== 'string') return { kind: 'not-found' };
    // Bad input changes nothing, not even the owner's slot (the script checks it again, atomically).
    if (input.contextId !== undefined && input.contextId !== contextId) return { kind: 'context-mismatch' };
    const resumes = typeof state === 'string' && RESUMING_STATES.has(state) && awaiting === null;
    const charge = input.quota?.bytes ?? 0;
    const claimTurn = (maxActiveTasks: number, resuming: boolean, bytes: number): Promise<(string | number | null)[]> =>
      this.run(
        'claimTurn',
        [this.keys.ownerActiveTasks(ownerKey), this.keys.ownerQuota(ownerKey), this.keys.ownerQuotaChecks(ownerKey)],
        [taskId, now.getTime(), maxActiveTasks, resuming ? '1' : '', bytes, input.quota?.maxBytes ?? 0, input.quota?.checkAtMs ?? 0],
      );
    // Step 1, the owner's slot: an active slot for a resume, the quota for the message's bytes.
    const claimed = resumes || charge > 0 ? await this.claim(ownerKey, now.getTime(), () => claimTurn(input.maxActiveTasks, resumes, charge)) : undefined;
    const refused = claimed !== undefined && claimed[0] !== 'CLAIMED';
    // Step 2, the task's slot. A refused claim still runs the checks that come first (a re-sent
    // message is a duplicate even at the quota), and changes nothing.
    const reply = await this.run(
      'acceptMessage',
      [k.task, k.history, k.inbox, k.messageIds, k.events, k.turns, k.assignments, k.questions, k.pushCursors],
      [
        ownerKey,
        input.contextId ?? '',
        JSON.stringify(message),
        message.messageId,
        now.getTime(),
        now.toISOString(),
        this.keys.eventChannel(taskId),
        taskId,
        refused ? '1' : '',
        input.inputPolicy,
        this.cancelChannelOf(taskId),
        JSON.stringify(input.callerScopes ?? []),
        input.maxQueuedMessages ?? 0,
        input.messageDigest ?? '',
        JSON.stringify(input.callerExtensions ?? []),
        input.trace === undefined ? '' : JSON.stringify(input.trace),
      ],
    );
    const outcome = str(reply[0]);
    if (refused && outcome === 'REFUSED') {
      return claimed[0] === 'OVER_QUOTA' ? overQuotaOf(claimed) : { kind: 'too-many-active', active: Number(claimed[1]) };
    }
    // Nothing taken: the claim's charge goes back (a crash here leaves it to the quota sweep).
    if (claimed !== undefined && !refused && charge > 0 && ACCEPT_REFUSALS.has(outcome)) {
      await this.run('quotaRefund', [this.keys.ownerQuota(ownerKey), this.keys.ownerQuotaChecks(ownerKey)], [taskId, charge]);
    }
    // An active entry this claim added for a message the task then refused goes again.
    if (claimed !== undefined && !refused && Number(claimed[2]) === 1 && ACCEPT_REFUSALS.has(outcome)) {
      await this.ownerIndex.dropActive(ownerKey, [{ taskId, maxScore: now.getTime() }]);
    }
    let active = claimed !== undefined && !refused ? Number(claimed[1]) : 0;
    // Resumed without a claim (it waited for input only after the read): its active entry follows now.
    if (outcome === 'RESUMED' && (claimed === undefined || !resumes)) active = Number((await claimTurn(0, true, 0))[1]);
    if (!ACCEPT_REFUSALS.has(outcome)) this.recentTasks.note(taskId, now.getTime());
    if (ACCEPT_ANNOUNCED.has(outcome)) this.ownerIndex.note(ownerKey, taskId, contextId, now.getTime());
    switch (reply[0]) {
      case 'NOT_FOUND':
      case 'REFUSED':
        return { kind: 'not-found' };
      case 'CONFLICT':
        return { kind: 'conflict' };
      case 'BUSY':
        return { kind: 'busy', state: str(reply[1]) as TaskState };
      case 'INBOX_FULL':
        return { kind: 'inbox-full', waiting: Number(reply[1]) };
      case 'JOINED':
        return { kind: 'joined', turn: Number(reply[1]) };
      case 'INTERRUPTING':
        return { kind: 'interrupting', turn: Number(reply[1]) };
      case 'FORWARDED':
        return { kind: 'forwarded', childId: str(reply[1]) };
      case 'CONTEXT_MISMATCH':
        return { kind: 'context-mismatch' };
      case 'DUPLICATE':
        return { kind: 'duplicate', turn: Number(reply[1]) };
      case 'TERMINAL':
        return { kind: 'terminal', state: str(reply[1]) as TaskState };
      case 'RESUMED':
        return { kind: 'resumed', turn: Number(reply[1]), active };
      default:
        return { kind: 'queued', turn: Number(reply[1]) };
    }
  }

  /** The task as its owner may see it, or undefined when missing or not theirs. */
  async readTask(taskId: string, owner: Owner, historyLength: number | undefined): Promise<TaskRead | undefined> {
    const k = this.keys.task(taskId);
    const reply = await this.run('readTask', [k.task, k.history, k.events], [ownerKeyOf(owner), historyLength ?? -1]);
    return taskReadOf(reply);
  }

  /**
   * The task's contextId when `ownerKey` owns it. Another owner's task ends here exactly like a
   * missing one, after the same single round trip (invariant 10: not even timing tells them
   * apart); the script still checks the owner, atomically.
   */
  private async ownContextId(taskKey: string, ownerKey: string): Promise<string | undefined> {
    const [owner, contextId] = await this.redis.hmget(taskKey, 'owner', 'contextId');
    return owner === ownerKey && contextId !== null ? contextId : undefined;
  }

  /** `requestedBy`: an operator canceling another owner's task, recorded on the task and in its cancellation events. */
  async cancelTask(taskId: string, owner: Owner, now: Date, requestedBy?: string): Promise<CancelResult> {
    const ownerKey = ownerKeyOf(owner);
    const k = this.keys.task(taskId);
    const contextId = await this.ownContextId(k.task, ownerKey);
    if (contextId === undefined) return { kind: 'not-found' };
    const reply = await this.run(
      'cancelTask',
      [k.task, k.events, k.lease, k.inbox, k.history, k.turns, k.messageIds, k.steps, k.emitted, k.pushCursors],
      [ownerKey, now.getTime(), now.toISOString(), this.keys.eventChannel(taskId), this.cancelChannelOf(taskId), taskId, this.retentionSeconds, requestedBy ?? ''],
    );
    if (reply[0] === 'CANCELED' || reply[0] === 'REQUESTED') this.recentTasks.note(taskId, now.getTime());
    if (reply[0] === 'CANCELED') {
      // Step 3, written at once: the owner's next task may take the slot this one freed.
      this.ownerIndex.note(ownerKey, taskId, contextId, now.getTime(), now.getTime());
      await this.ownerIndex.flushOwner(ownerKey);
    }
    switch (reply[0]) {
      case 'NOT_FOUND':
        return { kind: 'not-found' };
      case 'NOT_CANCELABLE':
        return { kind: 'not-cancelable', state: str(reply[1]) as TaskState };
      case 'CANCELED':
        return { kind: 'canceled' };
      default:
        return { kind: 'requested' };
    }
  }

  /**
   * Like readEvents, with what the replay bound had dropped when they were read (one MULTI, so
   * the two agree): a reader whose afterId is older than `trimmed.throughId` missed events.
   */
  async readEventsAfter(taskId: string, afterId: string, count: number): Promise<{ events: StoredEvent[]; trimmed: TrimmedEvents }> {
    const k = this.keys.task(taskId);
    const start = afterId === '' ? '-' : `(${afterId}`;
    const replies = (await this.redis.multi().hmget(k.task, 'eventsTrimmedThrough', 'eventsTrimmed').xrange(k.events, start, '+', 'COUNT', count).exec()) ?? [];
    for (const [error] of replies) if (error !== null) throw error;
    const [throughId, trimmedCount] = (replies[0]?.[1] ?? []) as (string | null)[];
    const entries = (replies[1]?.[1] ?? []) as [string, string[]][];
    return { events: await this.storedEvents(taskId, entries), trimmed: { throughId: throughId ?? '', count: Number(trimmedCount ?? 0) } };
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

  /**
   * The messages of a context's tasks created before `taskId`, oldest first (ctx.contextHistory).
   * Sub-agents' tasks are the coordinators' own business and are left out. Reads the context's
   * most recently updated tasks only, so a huge context costs a bounded amount.
   */
  async readContextHistory(ownerKey: string, contextId: string, taskId: string, maxTasks: number): Promise<Message[]> {
    const recent = await this.redis.zrevrange(this.keys.ownerContextTasks(ownerKey, contextId), 0, maxTasks * 4 - 1);
    // Task ids are ULIDs: their order is their creation order.
    const earlier = recent.filter((id) => id < taskId).sort();
    if (earlier.length === 0) return [];
    const grouped = await pipelineAcrossSlots(this.redis, earlier.map((id) => this.keys.task(id).task), (pipeline, i) => {
      const k = this.keys.task(earlier[i] as string);
      pipeline.hmget(k.task, 'owner', 'parentTaskId');
      pipeline.lrange(k.history, 0, -1);
    });
    const replies = grouped.flat();
    const histories: Message[][] = [];
    for (let i = 0; i < earlier.length; i++) {
      const [owner, parentTaskId] = (replies[i * 2]?.[1] ?? []) as (string | null)[];
      if (owner !== ownerKey || (parentTaskId !== null && parentTaskId !== undefined)) continue;
      histories.push(((replies[i * 2 + 1]?.[1] ?? []) as string[]).map((m) => JSON.parse(m) as Message));
    }
    return histories.slice(-maxTasks).flat();
  }

  /** The digest of the content a task's message was taken with, or undefined (unknown message, or a task from before digests). */
  async messageDigest(taskId: string, messageId: string): Promise<string | undefined> {
    const digest = await this.redis.hget(this.keys.task(taskId).task, `digest:${messageId}`);
    return digest === null || digest === '' ? undefined : digest;
  }

  /** The coordinator a sub-agent's task hangs off, from the server's own link (never from metadata a caller sent). */
  async parentOf(taskId: string): Promise<string | undefined> {
    return (await this.redis.hget(this.keys.task(taskId).task, 'parentTaskId')) ?? undefined;
  }

  /** The stored owner key of a task, used where the caller is a worker, not a principal. */
  async taskOwnerKey(taskId: string): Promise<string | undefined> {
    return (await this.redis.hget(this.keys.task(taskId).task, 'owner')) ?? undefined;
  }

  // ---- worker side: every write below is fenced by the lease generation ----

  async acquireLease(input: {
    taskId: string;
    ownerKey: string;
    contextId: string;
    workerId: string;
    leaseTtlMs: number;
    /** Deadline of a turn, from its first start (0 = none). */
    turnDeadlineMs?: number;
    now: Date;
  }): Promise<LeaseResult> {
    const k = this.keys.task(input.taskId);
    const reply = await this.run(
      'acquireLease',
      [
        k.task,
        k.lease,
        k.history,
        k.events,
        k.turns,
        k.pushCursors,
      ],
      [input.workerId, input.leaseTtlMs, input.now.getTime(), input.now.toISOString(), this.keys.eventChannel(input.taskId), input.turnDeadlineMs ?? 0],
    );
    switch (reply[0]) {
      case 'GONE':
        return { kind: 'gone' };
      case 'CLOSED':
        return { kind: 'closed', state: str(reply[1]) as TaskState };
      case 'HELD':
        return { kind: 'held', holder: str(reply[1]) };
      default: {
        this.recentTasks.note(input.taskId, input.now.getTime());
        const [, generation, turn, attempts, cancelRequested, status, artifacts, metadata, contextId, start, turnRecord, versions, deadline, budgetSpent, handBacks, role, parentTaskId, readOnly, resumption, interrupted, callerScopes, callerExtensions, ...history] =
          reply.map(str);
        const parsedStatus = JSON.parse(status as string) as TaskStatus;
        // The turn started here (its WORKING status carries this call's time): the owner's indexes follow.
        if (parsedStatus.state === 'TASK_STATE_WORKING' && parsedStatus.timestamp === input.now.toISOString()) {
          this.ownerIndex.note(input.ownerKey, input.taskId, input.contextId, input.now.getTime());
        }
        return {
          kind: 'acquired',
          generation: Number(generation),
          turn: Number(turn),
          attempts: Number(attempts),
          cancelRequestedAtMs: cancelRequested ? Number(cancelRequested) : undefined,
          status: parsedStatus,
          artifacts: JSON.parse(artifacts || '[]') as Artifact[],
          metadata: JSON.parse(metadata || '{}') as JsonObject,
          contextId: contextId as string,
          turnInputStart: Number(start),
          turnRecord: turnRecord ? (JSON.parse(turnRecord) as TurnRecord) : undefined,
          versions: versions ? (JSON.parse(versions) as TaskVersions) : undefined,
          deadlineAtMs: deadline ? Number(deadline) : undefined,
          budgetSpent: Number(budgetSpent || 0),
          handBacks: Number(handBacks || 0),
          links: parentTaskId ? { parentTaskId, role: role as string, readOnly: readOnly === '1' } : undefined,
          resumption: Number(resumption || 0),
          interrupted: interrupted === '1',
          callerScopes: JSON.parse(callerScopes || '[]') as string[],
          callerExtensions: JSON.parse(callerExtensions || '[]') as string[],
          resumed: Number(resumption || 0) > 0,
          history: history.map((m) => JSON.parse(m) as Message),
        };
      }
    }
  }

  /** Gives the lease up (at shutdown) so the next worker need not wait for it to lapse. */
  async releaseLease(taskId: string, workerId: string, generation: number): Promise<void> {
    const k = this.keys.task(taskId);
    await this.redis.eval(
      "if redis.call('HGET', KEYS[1], 'leaseGeneration') == ARGV[2] and redis.call('GET', KEYS[2]) == ARGV[1] then return redis.call('DEL', KEYS[2]) end return 0",
      2,
      k.task,
      k.lease,
      workerId,
      generation,
    );
  }

  /**
   * Hands a running turn back at shutdown (see handBackTurn-3.lua): undoes its attempt, counts
   * the hand-back, stores the turn record and releases the lease. False when a newer lease
   * generation holds the task (nothing changed).
   */
  async handBackTurn(taskId: string, workerId: string, generation: number, record: TurnRecord): Promise<boolean> {
    const k = this.keys.task(taskId);
    const reply = await this.run('handBackTurn', [k.task, k.lease, k.turns], [generation, workerId, JSON.stringify(record)]);
    return reply[0] === 'HANDED_BACK';
  }

  /** Adds a charge to the running turn's budget total; returns the new total. Fenced. */
  async chargeBudget(taskId: string, generation: number, units: number): Promise<number> {
    const reply = await this.run('chargeBudget', [this.keys.task(taskId).task], [generation, units]);
    if (reply[0] === 'STALE') throw new StaleLeaseError(taskId);
    return Number(reply[1]);
  }

  /**
   * For the reconciler: removes an entry of an owner's active set whose task is gone or has no
   * turn queued or running, else says whether the task may have lost its turn job. The task is
   * read in its slot, then the entry dropped in the owner's, only while its score is still
   * `score` (the one the reconciler read): a task resumed between the two keeps its entry.
   */
  async reconcileActiveEntry(ownerKey: string, taskId: string, score: number, now: Date, quietForMs: number, parkedQuietForMs: number): Promise<ActiveEntry> {
    const k = this.keys.task(taskId);
    const reply = await this.run('reconcileEntry', [k.task, k.lease], [now.getTime(), quietForMs, parkedQuietForMs]);
    switch (reply[0]) {
      case 'GONE':
      case 'CLOSED': {
        const state = reply[0] === 'GONE' ? undefined : (str(reply[1]) as TaskState);
        if (!isStaleActive(state, Number(reply[2] ?? 0), score, now.getTime())) return { kind: 'recent' };
        await this.ownerIndex.dropActive(ownerKey, [{ taskId, maxScore: score }]);
        return { kind: 'removed', state };
      }
      case 'RUNNING':
        return { kind: 'running' };
      case 'PARKED':
        return { kind: 'parked' };
      case 'RECENT':
        return { kind: 'recent' };
      case 'WAKE':
        return { kind: 'wake', turn: Number(reply[1]), ownerKey: str(reply[2]), contextId: str(reply[3]) };
      default:
        return { kind: 'candidate', turn: Number(reply[1]), ownerKey: str(reply[2]), contextId: str(reply[3]), parentTaskId: str(reply[4]) || undefined };
    }
  }

  /** Releases a lock taken with SET NX PX only while `token` still holds it. */
  async releaseLock(key: string, token: string): Promise<boolean> {
    const reply = await this.run('releaseLock', [key], [token]);
    return reply[0] === 'RELEASED';
  }

  async renewLease(taskId: string, workerId: string, leaseTtlMs: number): Promise<void> {
    const key = this.keys.task(taskId).lease;
    // Only extend a lease this worker still holds; a replaced worker must not revive it.
    await this.redis.eval(
      "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0",
      1,
      key,
      workerId,
      leaseTtlMs,
    );
  }

  /**
   * Stores and announces events of a running turn (fenced). An adapter's event carries its
   * place in the run (`emit`): an earlier run of the same turn that already appended the same
   * content there makes this a no-op that returns `repeated` (see appendEvents-5.lua).
   */
  async appendEvents(input: {
    taskId: string;
    ownerKey: string;
    contextId: string;
    generation: number;
    artifacts: Artifact[] | undefined;
    status: TaskStatus | undefined;
    events: StreamResponse[];
    emit?: EmitPlace;
    now: Date;
  }): Promise<{ kind: 'appended'; eventId: string } | { kind: 'repeated' }> {
    const k = this.keys.task(input.taskId);
    const { emit } = input;
    const reply = await this.run(
      'appendEvents',
      [k.task, k.events, k.emitted, k.pushCursors],
      [
        input.generation,
        this.keys.eventChannel(input.taskId),
        input.now.getTime(),
        input.taskId,
        input.artifacts === undefined ? '' : JSON.stringify(input.artifacts),
        input.status === undefined ? '' : JSON.stringify(input.status),
        input.status?.state ?? '',
        emit?.scope ?? '',
        emit?.sequence ?? 0,
        emit?.digest ?? '',
        emit?.pastPrefix === true ? '1' : '0',
        ...input.events.map((e) => JSON.stringify(e)),
      ],
    );
    if (reply[0] === 'STALE') throw new StaleLeaseError(input.taskId);
    if (reply[0] === 'REPEATED') return { kind: 'repeated' };
    if (input.status !== undefined) {
      this.recentTasks.note(input.taskId, input.now.getTime());
      this.ownerIndex.note(input.ownerKey, input.taskId, input.contextId, input.now.getTime());
    }
    return { kind: 'appended', eventId: str(reply[1]) };
  }

  async finishTurn(input: {
    taskId: string;
    ownerKey: string;
    contextId: string;
    generation: number;
    status: TaskStatus;
    agentMessage: Message | undefined;
    turnRecord: TurnRecord;
    artifacts: Artifact[];
    /** Metadata of the final status update (e.g. the cancellation stage it completes). */
    eventMetadata?: JsonObject;
    /** Whether a terminal result was verified, and how (invariant 8). */
    outcome?: JsonObject;
    /** The turn stopped because a new message interrupted it: the next turn starts at once. */
    interrupted?: boolean;
    /**
     * The agent answered with a direct Message (spec 3.1.1): kept as the task's reply when the
     * client cannot hold the task yet (see finishTurn-12.lua), else the task just completes.
     */
    directReply?: Message;
    now: Date;
  }): Promise<FinishResult> {
    const k = this.keys.task(input.taskId);
    const finalEvent: StreamResponse = {
      statusUpdate: { taskId: input.taskId, contextId: input.contextId, status: input.status },
    };
    if (input.eventMetadata !== undefined) finalEvent.statusUpdate.metadata = input.eventMetadata;
    const directEvent: StreamResponse = {
      statusUpdate: { ...finalEvent.statusUpdate, metadata: { ...input.eventMetadata, ...DIRECT_REPLY_EVENT_METADATA } },
    };
    const reply = await this.run(
      'finishTurn',
      [k.task, k.events, k.history, k.inbox, k.lease, k.turns, k.messageIds, k.steps, k.emitted, k.pushCursors],
      [
        input.generation,
        this.keys.eventChannel(input.taskId),
        input.now.getTime(),
        input.now.toISOString(),
        input.taskId,
        input.status.state,
        JSON.stringify(input.status),
        input.agentMessage === undefined ? '' : JSON.stringify(input.agentMessage),
        JSON.stringify(input.turnRecord),
        JSON.stringify(input.artifacts),
        JSON.stringify(finalEvent),
        this.retentionSeconds,
        input.outcome === undefined ? '' : JSON.stringify(input.outcome),
        input.turnRecord.usage === undefined ? '' : `${input.turnRecord.usage.inputTokens} ${input.turnRecord.usage.outputTokens}`,
        input.interrupted === true ? '1' : '',
        input.directReply === undefined ? '' : JSON.stringify(input.directReply),
        input.directReply === undefined ? '' : JSON.stringify(directEvent),
      ],
    );
    if (reply[0] === 'STALE') return { kind: 'stale' };
    this.recentTasks.note(input.taskId, input.now.getTime());
    // Step 3: the owner's indexes move forward; with no turn following, the task leaves the active set.
    this.ownerIndex.note(input.ownerKey, input.taskId, input.contextId, input.now.getTime(), reply[0] === 'DONE' ? input.now.getTime() : undefined);
    if (reply[0] === 'DONE') return { kind: 'done', eventId: str(reply[1]), directReply: reply[2] === 'DIRECT' };
    const [, turn, start, trace, ...messages] = reply.map(str);
    return {
      kind: 'next',
      turn: Number(turn),
      turnInputStart: Number(start),
      input: messages.map((m) => JSON.parse(m) as Message),
      ...(trace === '' || trace === undefined ? {} : { trace: JSON.parse(trace) as Record<string, string> }),
    };
  }

  /**
   * Stage 2 of a cancellation: the worker running the turn saw the request, to cancel the task
   * or (`interruptedTurn`) to stop that turn for a new message. Fenced.
   */
  async acknowledgeCancel(input: { taskId: string; contextId: string; generation: number; status: TaskStatus; interruptedTurn?: number; now: Date }): Promise<void> {
    const k = this.keys.task(input.taskId);
    const stage: JsonObject =
      input.interruptedTurn === undefined
        ? { stage: 'acknowledged', at: input.now.toISOString() }
        : { stage: 'acknowledged', scope: 'turn', turn: input.interruptedTurn, reason: 'interrupted by a new message', at: input.now.toISOString() };
    const event: StreamResponse = {
      statusUpdate: { taskId: input.taskId, contextId: input.contextId, status: input.status, metadata: { cancellation: stage } },
    };
    const field = input.interruptedTurn === undefined ? 'cancelAcknowledgedAtMs' : `interruptAcknowledged:${input.interruptedTurn}`;
    const reply = await this.run('acknowledgeCancel', [k.task, k.events, k.pushCursors], [input.generation, this.keys.eventChannel(input.taskId), input.now.getTime(), JSON.stringify(event), field]);
    if (reply[0] === 'STALE') throw new StaleLeaseError(input.taskId);
    if (input.interruptedTurn === undefined) cancelStages.inc({ stage: 'acknowledged' });
  }

  /**
   * Journals a step as started unless the turn already has a record of that name; returns
   * that record when it has (see startStep-2.lua). Fenced.
   */
  async startStep(taskId: string, generation: number, field: string, started: StepRecord): Promise<StepRecord | undefined> {
    const k = this.keys.task(taskId);
    const reply = await this.run('startStep', [k.task, k.steps], [generation, field, JSON.stringify(started)]);
    if (reply[0] === 'STALE') throw new StaleLeaseError(taskId);
    return reply[0] === 'EXISTS' ? (JSON.parse(str(reply[1])) as StepRecord) : undefined;
  }

  /** Rewrites a journalled step (result, failure, external reference). Fenced. */
  async writeStep(taskId: string, generation: number, field: string, record: StepRecord): Promise<void> {
    const k = this.keys.task(taskId);
    const reply = await this.run('writeStep', [k.task, k.steps], [generation, field, JSON.stringify(record)]);
    if (reply[0] === 'STALE') throw new StaleLeaseError(taskId);
  }

  /** The whole step journal of a task, by "<turn>:<name>". */
  async readSteps(taskId: string): Promise<Record<string, StepRecord>> {
    const all = await this.redis.hgetall(this.keys.task(taskId).steps);
    return Object.fromEntries(Object.entries(all).map(([field, json]) => [field, JSON.parse(json) as StepRecord]));
  }

  /** An adapter's value for this task (ctx.adapterState), or undefined. */
  async readAdapterState(taskId: string, key: string): Promise<JsonValue | undefined> {
    const raw = await this.redis.hget(this.keys.task(taskId).task, `${ADAPTER_STATE_FIELD}${key}`);
    return raw === null ? undefined : (JSON.parse(raw) as JsonValue);
  }

  /**
   * Stores an adapter's value in the task hash (so it expires with the task), fenced by the
   * lease generation.
   */
  async writeAdapterState(taskId: string, generation: number, key: string, value: JsonValue): Promise<void> {
    const ok = await this.redis.eval(
      "if redis.call('HGET', KEYS[1], 'leaseGeneration') ~= ARGV[1] then return 0 end redis.call('HSET', KEYS[1], ARGV[2], ARGV[3]) return 1",
      1,
      this.keys.task(taskId).task,
      generation,
      `${ADAPTER_STATE_FIELD}${key}`,
      JSON.stringify(value),
    );
    if (ok !== 1) throw new StaleLeaseError(taskId);
  }

  /** Record the turn's progress (attempt, steps) without an event; fenced like every write. */
  async writeTurnRecord(taskId: string, generation: number, record: TurnRecord): Promise<void> {
    const k = this.keys.task(taskId);
    const ok = await this.redis.eval(
      "if redis.call('HGET', KEYS[1], 'leaseGeneration') ~= ARGV[1] then return 0 end redis.call('HSET', KEYS[2], ARGV[2], ARGV[3]) return 1",
      2,
      k.task,
      k.turns,
      generation,
      record.turn,
      JSON.stringify(record),
    );
    if (ok !== 1) throw new StaleLeaseError(taskId);
  }

  async readTurnRecords(taskId: string): Promise<TurnRecord[]> {
    const all = await this.redis.hgetall(this.keys.task(taskId).turns);
    return Object.values(all)
      .map((json) => JSON.parse(json) as TurnRecord)
      .sort((a, b) => a.turn - b.turn);
  }
}
