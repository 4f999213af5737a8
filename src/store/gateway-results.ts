// What the gateway's task operations take and answer (gateway-operations.ts).
import type { JsonObject, Message, Task, TaskState } from '../protocol/types.ts';
import type { AcceptOutcome, OverQuota } from './gateway-scripts.ts';
import type { LeaseResult, LeaseTerms } from './lease-reply.ts';
import type { Owner } from './owner.ts';
import type { TaskLinks, TaskVersions } from './task-records.ts';

export type { OverQuota };

export type CreateResult =
  /** `active`: the owner's tasks queued or running now, this one included (its turn's queue priority). */
  /** `quotaChecksDue`: the owner's quota checks that are due (a sweep may release expired tasks' charges). */
  /** `enqueued`: `queueFirstTurn` went out with the task's script (see createTask). */
  /** `lease`: the first turn's lease, when `takeLease` asked for it (see CreateTaskInput). */
  | { kind: 'created'; task: Task; eventId: string; active: number; quotaChecksDue: number; enqueued: boolean; lease: LeaseResult | undefined }
  | { kind: 'duplicate'; taskId: string }
  | { kind: 'too-many-active'; active: number }
  /** The owner's stored-bytes rate cannot pay for the message yet (CreateTaskInput.storedBytes): nothing changed. */
  | { kind: 'byte-rate'; waitMs: number }
  | OverQuota;

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

export type AcceptResult =
  | { kind: 'not-found' }
  /** The messageId was taken before with other content; nothing changed. */
  | { kind: 'conflict' }
  | { kind: 'context-mismatch' }
  | { kind: 'duplicate'; turn: number }
  | { kind: 'terminal'; state: TaskState }
  /**
   * `eventId`: the SUBMITTED status update the accept announced; `contextId`: the task's; `lease`:
   * the new turn's, when the accept was asked to take it (takeLease).
   */
  | { kind: 'resumed'; turn: number; active: number; eventId: string; contextId: string; lease?: LeaseResult }
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
  /** The task is not at the generation the caller expected (it is at `generation`); nothing changed. */
  | { kind: 'generation-mismatch'; generation: number }
  | OverQuota;

export type CancelResult =
  | { kind: 'not-found' }
  | { kind: 'not-cancelable'; state: TaskState }
  | { kind: 'canceled' }
  | { kind: 'requested' }
  /** The task is not at the generation the caller expected (it is at `generation`); nothing changed. */
  | { kind: 'generation-mismatch'; generation: number };

/** acceptMessage's reply as the caller's answer; `active`: the owner's active tasks after a resume. */
export function acceptResultOf(reply: AcceptOutcome, active: number, contextId: string): AcceptResult {
  switch (reply.outcome) {
    case 'NOT_FOUND':
    case 'REFUSED':
      return { kind: 'not-found' };
    case 'CONFLICT':
      return { kind: 'conflict' };
    case 'CONTEXT_MISMATCH':
      return { kind: 'context-mismatch' };
    case 'BUSY':
      return { kind: 'busy', state: reply.state };
    case 'TERMINAL':
      return { kind: 'terminal', state: reply.state };
    case 'INBOX_FULL':
      return { kind: 'inbox-full', waiting: reply.waiting };
    case 'FORWARDED':
      return { kind: 'forwarded', childId: reply.childId };
    case 'GENERATION_MISMATCH':
      return { kind: 'generation-mismatch', generation: reply.generation };
    case 'JOINED':
      return { kind: 'joined', turn: reply.turn };
    case 'INTERRUPTING':
      return { kind: 'interrupting', turn: reply.turn };
    case 'DUPLICATE':
      return { kind: 'duplicate', turn: reply.turn };
    case 'RESUMED':
      return { kind: 'resumed', turn: reply.turn, active, eventId: reply.eventId, contextId, ...(reply.lease === undefined ? {} : { lease: reply.lease }) };
    case 'QUEUED':
      return { kind: 'queued', turn: reply.turn };
  }
}

/** What createTask stores: the task, its first message, and how it is claimed in the owner's slot. */
export interface CreateTaskInput {
  taskId: string;
  owner: Owner;
  contextId: string;
  message: Message;
  metadata: JsonObject;
  idempotencyTtlSeconds: number;
  versions: TaskVersions;
  /** Most tasks the owner may have queued or running (0 = no cap). */
  maxActiveTasks: number;
  /**
   * A sub-agent's task: how it hangs off its coordinator. Its creation is remembered under a
   * key of its own (keys.childCreated), out of every caller's reach, not the message id's.
   */
  links?: TaskLinks;
  /** What the caller's credentials granted (ctx.caller.scopes of the task's turns). */
  callerScopes?: readonly string[];
  /** The extensions the request activated (ctx.extensions of the task's turns). */
  callerExtensions?: readonly string[];
  /** Digest of the message as sent (messageDigestOf): a re-send with other content is a conflict. */
  messageDigest?: string;
  /** What the task's storage charges to the owner's quota (none: not charged). */
  quota?: QuotaCharge;
  /**
   * The message's bytes for the owner's stored-bytes rate (limits.storedBytesPerSecond), taken
   * by the claim itself when it claims the task (none: not taken here).
   */
  storedBytes?: { perSecond: number; burst: number; cost: number };
  /**
   * Queues the task's first turn, given the owner's active tasks; its commands must go out on
   * this store's connection. On a single Redis it is called right behind the task's script, so
   * auto-pipelining sends both in one write (one round trip) and Redis runs them in that order:
   * the task is stored before its job exists. On a Cluster the two may go to different nodes,
   * so there it is left to the caller, after the task is stored.
   */
  queueFirstTurn?: (active: number) => Promise<void>;
  /**
   * Takes the first turn's lease in the create's own call, for a turn that starts in this process
   * (src/runtime/local-turns.ts): what acquireLease would do next, without a round trip or a
   * script of its own. Only for a task this call creates on a fresh claim; the lease is in the
   * result. Not with `queueFirstTurn`: a job would find the lease held.
   */
  takeLease?: LeaseTerms;
  /**
   * The caller waits for the task's turn to end, reading this much history (-1 = all): the
   * turn's final event then carries the task (LiveEvent.answer), so the wait ends without a read.
   */
  answerHistoryLength?: number;
  /** `message` as JSON, when the caller serialised it already (a large message is then not serialised twice). */
  messageJson?: string;
  now: Date;
}
