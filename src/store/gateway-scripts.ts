// The scripts the gateway's operations call (gateway-operations.ts), described for callScript:
// keys and arguments by name in their Lua's order (src/store/lua/<name>-<keys>.lua), replies decoded.
import type { InputPolicy } from '../config/schema.ts';
import type { JsonObject, Message, TaskState, TaskStatus } from '../protocol/types.ts';
import { arg, defineScript } from './script-call.ts';
import type { ScriptReply } from './scripts.ts';
import { str } from './script-reply.ts';
import type { TaskVersions, TurnRecord } from './task-records.ts';
import { boundedTaskReadOf } from './task-read.ts';
import { leaseResultOf, type LeaseResult } from './lease-reply.ts';

/** The owner's storage quota would be passed; nothing changed. */
export interface OverQuota {
  kind: 'over-quota';
  quota: 'bytes' | 'tasks';
  /** What the owner has stored now (bytes or tasks). */
  stored: number;
  /** When the earliest of the owner's charged tasks is next looked at for expiry (ms), if any. */
  nextCheckAtMs: number | undefined;
}

const overQuotaOf = (reply: ScriptReply): OverQuota => ({
  kind: 'over-quota',
  quota: reply[1] === 'tasks' ? 'tasks' : 'bytes',
  stored: Number(reply[2]),
  nextCheckAtMs: reply[3] === '' || reply[3] === null || reply[3] === undefined ? undefined : Number(reply[3]),
});

/** What a claim in the owner's slot refuses: the active-task cap or the storage quota. */
export type OwnerRefusal = { outcome: 'TOO_MANY_ACTIVE'; active: number } | { outcome: 'OVER_QUOTA'; overQuota: OverQuota };

const ownerRefusalOf = (reply: ScriptReply): OwnerRefusal | undefined =>
  reply[0] === 'TOO_MANY_ACTIVE' ? { outcome: 'TOO_MANY_ACTIVE', active: Number(reply[1]) } : reply[0] === 'OVER_QUOTA' ? { outcome: 'OVER_QUOTA', overQuota: overQuotaOf(reply) } : undefined;

export type TaskClaim =
  /** `active`: the owner's tasks queued or running now, this one included; `quotaChecksDue`: its quota checks that are due. */
  | { outcome: 'CLAIMED'; active: number; quotaChecksDue: number }
  /** The message's key was claimed before, for this task. */
  | { outcome: 'CLAIMED_BEFORE'; taskId: string }
  /** The owner's stored-bytes rate cannot pay for the message yet: the ms until it can. */
  | { outcome: 'BYTE_RATE'; waitMs: number }
  | OwnerRefusal;

/** claimTask's arguments after its taskId and now (createClaimedTask takes those from createTask's). */
const claimTerms = {
  idempotencyTtlSeconds: arg.int,
  maxActiveTasks: arg.int,
  chargeBytes: arg.intOrZero,
  maxBytes: arg.intOrZero,
  maxTasks: arg.intOrZero,
  checkAtMs: arg.intOrZero,
  /** The owner's stored-bytes rate (limits.storedBytesPerSecond), taken when the task is claimed; 0 = not taken here. */
  storedPerSecond: arg.intOrZero,
  storedBurst: arg.intOrZero,
  storedCost: arg.intOrZero,
};

const claimKeys = ['idempotency', 'ownerActiveTasks', 'ownerQuota', 'ownerQuotaChecks', 'ownerTasks', 'ownerContextTasks', 'ownerStoredBytes'] as const;

const taskClaimOf = (reply: ScriptReply): TaskClaim =>
  ownerRefusalOf(reply) ??
  (reply[0] === 'CLAIMED_BEFORE'
    ? { outcome: 'CLAIMED_BEFORE', taskId: str(reply[1]) }
    : reply[0] === 'BYTE_RATE'
      ? { outcome: 'BYTE_RATE', waitMs: Number(reply[1]) }
      : { outcome: 'CLAIMED', active: Number(reply[1]), quotaChecksDue: Number(reply[2] ?? 0) });

export const claimTaskScript = defineScript({
  name: 'claimTask',
  keys: claimKeys,
  args: { taskId: arg.text, nowMs: arg.int, ...claimTerms },
  reply: taskClaimOf,
});

/** A sub-agent's links as the task hash keeps them. */
export interface StoredLinks {
  parentTaskId: string;
  role: string;
  readOnly: '1' | '0';
}

/** What createTask did: nothing (the task exists), or created the task (and took its first turn's lease, when asked). */
export type TaskCreation = { outcome: 'CREATED'; eventId: string; lease: LeaseResult | undefined } | { outcome: 'EXISTS' };

const createdOf = (reply: ScriptReply): TaskCreation =>
  reply[0] === 'EXISTS' ? { outcome: 'EXISTS' } : { outcome: 'CREATED', eventId: str(reply[1]), lease: reply.length > 2 ? leaseResultOf(reply.slice(2)) : undefined };

export const createTaskScript = defineScript({
  name: 'createTask',
  keys: ['task', 'history', 'events', 'messageIds', 'turns', 'lease', 'artifactChunks', 'pushCursors'],
  args: {
    taskId: arg.text,
    ownerKey: arg.text,
    tenant: arg.text,
    contextId: arg.text,
    status: arg.json<TaskStatus>(),
    messageJson: arg.text,
    messageId: arg.text,
    nowMs: arg.int,
    publishedEvent: arg.text,
    turnRecord: arg.json<TurnRecord>(),
    eventChannel: arg.text,
    metadata: arg.json<JsonObject>(),
    versions: arg.json<TaskVersions>(),
    links: arg.optionalJson<StoredLinks>(),
    callerScopes: arg.jsonList,
    messageDigest: arg.optionalText,
    callerExtensions: arg.jsonList,
    storedEvent: arg.text,
    answerHistoryLength: arg.optionalInt,
    messageAtByte: arg.optionalInt,
    /** The worker that takes the first turn's lease in the same call (a turn started where it was accepted); none: no lease taken. */
    leaseWorkerId: arg.optionalText,
    leaseTtlMs: arg.intOrZero,
    nowIso: arg.text,
    turnDeadlineMs: arg.intOrZero,
    maxTurnAttempts: arg.intOrZero,
    artifactsInlineBytes: arg.intOrZero,
  },
  reply: createdOf,
});

/**
 * The claim and the create in one call on a single Redis (createClaimedTask-14.lua): claimTask's
 * reply, and createTask's beside a claim that claimed.
 */
export const createClaimedTaskScript = defineScript({
  name: 'createClaimedTask',
  keys: [...createTaskScript.keys.filter((key) => key !== 'pushCursors'), ...claimKeys, 'pushCursors'],
  args: { ...createTaskScript.args, ...claimTerms },
  reply: (reply): Exclude<TaskClaim, { outcome: 'CLAIMED' }> | (Extract<TaskClaim, { outcome: 'CLAIMED' }> & { created: TaskCreation }) => {
    const claim = taskClaimOf(reply);
    return claim.outcome === 'CLAIMED' ? { ...claim, created: createdOf(reply.slice(3)) } : claim;
  },
});

export type TurnClaim =
  /** `active`: the owner's tasks queued or running now; `added`: this claim added the task to them. */
  { outcome: 'CLAIMED'; active: number; added: boolean } | OwnerRefusal;

const turnClaimOf = (reply: ScriptReply): TurnClaim => ownerRefusalOf(reply) ?? { outcome: 'CLAIMED', active: Number(reply[1]), added: Number(reply[2]) === 1 };

export const claimTurnScript = defineScript({
  name: 'claimTurn',
  keys: ['ownerActiveTasks', 'ownerQuota', 'ownerQuotaChecks'],
  args: { taskId: arg.text, nowMs: arg.int, maxActiveTasks: arg.int, resumes: arg.flag, chargeBytes: arg.int, maxBytes: arg.intOrZero, checkAtMs: arg.intOrZero },
  reply: turnClaimOf,
});

export type AcceptOutcome =
  | { outcome: 'NOT_FOUND' | 'REFUSED' | 'CONFLICT' | 'CONTEXT_MISMATCH' }
  | { outcome: 'BUSY' | 'TERMINAL'; state: TaskState }
  | { outcome: 'INBOX_FULL'; waiting: number }
  | { outcome: 'JOINED' | 'INTERRUPTING' | 'DUPLICATE' | 'QUEUED'; turn: number }
  /**
   * `eventId`: the id of the SUBMITTED status update it announced (every event of the new turn
   * comes after it); `contextId`: the task's; `lease`: the new turn's, when the call took it (leaseWorkerId).
   */
  | { outcome: 'RESUMED'; turn: number; eventId: string; contextId: string; lease: LeaseResult | undefined }
  | { outcome: 'FORWARDED'; childId: string }
  | { outcome: 'GENERATION_MISMATCH'; generation: number };

const decodeAccept = (reply: ScriptReply): AcceptOutcome => {
  switch (reply[0]) {
    case 'NOT_FOUND':
    case 'REFUSED':
    case 'CONFLICT':
    case 'CONTEXT_MISMATCH':
      return { outcome: reply[0] };
    case 'BUSY':
    case 'TERMINAL':
      return { outcome: reply[0], state: str(reply[1]) as TaskState };
    case 'INBOX_FULL':
      return { outcome: 'INBOX_FULL', waiting: Number(reply[1]) };
    case 'FORWARDED':
      return { outcome: 'FORWARDED', childId: str(reply[1]) };
    case 'GENERATION_MISMATCH':
      return { outcome: 'GENERATION_MISMATCH', generation: Number(reply[1]) };
    case 'JOINED':
    case 'INTERRUPTING':
    case 'DUPLICATE':
      return { outcome: reply[0], turn: Number(reply[1]) };
    case 'RESUMED':
      return { outcome: 'RESUMED', turn: Number(reply[1]), eventId: str(reply[2]), contextId: str(reply[3]), lease: reply.length > 4 ? leaseResultOf(reply.slice(4)) : undefined };
    default:
      return { outcome: 'QUEUED', turn: Number(reply[1]) };
  }
};

export const acceptMessageScript = defineScript({
  name: 'acceptMessage',
  keys: ['task', 'history', 'inbox', 'messageIds', 'events', 'turns', 'assignments', 'questions', 'lease', 'artifactChunks', 'pushCursors'],
  args: {
    ownerKey: arg.text,
    contextId: arg.optionalText,
    message: arg.json<Message>(),
    messageId: arg.text,
    nowMs: arg.int,
    nowIso: arg.text,
    eventChannel: arg.text,
    taskId: arg.text,
    ownerRefused: arg.flag,
    inputPolicy: (value: InputPolicy) => value,
    cancelChannel: arg.text,
    callerScopes: arg.jsonList,
    maxQueuedMessages: arg.intOrZero,
    messageDigest: arg.optionalText,
    callerExtensions: arg.jsonList,
    trace: arg.optionalJson<Record<string, string>>(),
    /** The generation the caller expects the task at (undefined = any). */
    expectedGeneration: arg.optionalInt,
    /** The history length a sender watching since before the call waits to be answered with (-1 = all; undefined: none waits so). */
    answerHistory: arg.optionalInt,
    /** The worker that takes the lease of the turn the message resumes, in the same call (a turn started where it was accepted); none: the run takes it. */
    leaseWorkerId: arg.optionalText,
    leaseTtlMs: arg.intOrZero,
    turnDeadlineMs: arg.intOrZero,
    maxTurnAttempts: arg.intOrZero,
    artifactsInlineBytes: arg.intOrZero,
  },
  reply: decodeAccept,
});

/**
 * A follow-up's claim and accept in one call on a single Redis (acceptClaimedMessage-13.lua): the
 * claim it needed, if any (decided from the task as the call found it), the task's contextId ('' for
 * no task) and acceptMessage's reply. `outcome` is the claim's (UNCLAIMED when none was needed), for
 * the retry of a claim at the cap.
 */
export const acceptClaimedMessageScript = defineScript({
  name: 'acceptClaimedMessage',
  keys: [...acceptMessageScript.keys.filter((key) => key !== 'pushCursors'), 'ownerActiveTasks', 'ownerQuota', 'ownerQuotaChecks', 'pushCursors'],
  args: {
    ...acceptMessageScript.args,
    maxActiveTasks: arg.intOrZero,
    chargeBytes: arg.intOrZero,
    maxBytes: arg.intOrZero,
    checkAtMs: arg.intOrZero,
  },
  reply: (reply): { outcome: TurnClaim['outcome'] | 'UNCLAIMED'; claim: TurnClaim | undefined; contextId: string; accept: AcceptOutcome } => {
    const claimed = Number(reply[0]);
    const claim = claimed === 0 ? undefined : turnClaimOf(reply.slice(2, 2 + claimed));
    return { outcome: claim?.outcome ?? 'UNCLAIMED', claim, contextId: str(reply[1]), accept: decodeAccept(reply.slice(2 + claimed)) };
  },
});

export const quotaRefundScript = defineScript({
  name: 'quotaRefund',
  keys: ['ownerQuota', 'ownerQuotaChecks'],
  args: { taskId: arg.text, bytes: arg.int },
  reply: (): void => undefined,
});

export const readTaskScript = defineScript({
  name: 'readTask',
  keys: ['task', 'history', 'events', 'artifactChunks'],
  /** historyLength: -1 = all. payAfterBytes: a task whose artifacts weigh more answers LargeTask, not built (absent = no bound). */
  args: { ownerKey: arg.text, historyLength: arg.int, payAfterBytes: arg.intOrZero },
  reply: boundedTaskReadOf,
});

/** A task's stream entries after an id, and what the replay bound had dropped when they were read. */
export interface EventsAfterRead {
  entries: [string, string[]][];
  trimmedThroughId: string;
  trimmedCount: number;
}

export const readEventsAfterScript = defineScript({
  name: 'readEventsAfter',
  keys: ['task', 'events'],
  /** start: XRANGE's ('-', or '(' and the id read after); count: the most entries read. */
  args: { start: arg.text, count: arg.int },
  reply: (reply): EventsAfterRead => ({
    trimmedThroughId: typeof reply[0] === 'string' ? reply[0] : '',
    trimmedCount: Number(reply[1] ?? 0),
    entries: (reply[2] ?? []) as unknown as [string, string[]][],
  }),
});

export type CancelOutcome =
  | { outcome: 'NOT_FOUND' | 'CANCELED' | 'REQUESTED' }
  | { outcome: 'NOT_CANCELABLE'; state: TaskState }
  | { outcome: 'GENERATION_MISMATCH'; generation: number };

export const cancelTaskScript = defineScript({
  name: 'cancelTask',
  keys: ['task', 'events', 'lease', 'inbox', 'history', 'turns', 'messageIds', 'steps', 'emitted', 'artifactChunks', 'pushCursors'],
  args: {
    ownerKey: arg.text,
    nowMs: arg.int,
    nowIso: arg.text,
    eventChannel: arg.text,
    cancelChannel: arg.text,
    taskId: arg.text,
    retentionSeconds: arg.int,
    requestedBy: arg.optionalText,
    /** The generation the caller expects the task at (undefined = any). */
    expectedGeneration: arg.optionalInt,
  },
  reply: (reply): CancelOutcome => {
    if (reply[0] === 'NOT_CANCELABLE') return { outcome: 'NOT_CANCELABLE', state: str(reply[1]) as TaskState };
    if (reply[0] === 'GENERATION_MISMATCH') return { outcome: 'GENERATION_MISMATCH', generation: Number(reply[1]) };
    return { outcome: reply[0] === 'NOT_FOUND' || reply[0] === 'CANCELED' ? reply[0] : 'REQUESTED' };
  },
});
