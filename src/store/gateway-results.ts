// What the gateway's task operations answer (gateway-operations.ts).
import type { Task, TaskState } from '../protocol/types.ts';
import type { AcceptOutcome, OverQuota } from './gateway-scripts.ts';

export type { OverQuota };

export type CreateResult =
  /** `active`: the owner's tasks queued or running now, this one included (its turn's queue priority). */
  /** `quotaChecksDue`: the owner's quota checks that are due (a sweep may release expired tasks' charges). */
  /** `enqueued`: `queueFirstTurn` went out with the task's script (see createTask). */
  | { kind: 'created'; task: Task; eventId: string; active: number; quotaChecksDue: number; enqueued: boolean }
  | { kind: 'duplicate'; taskId: string }
  | { kind: 'too-many-active'; active: number }
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

/** acceptMessage's reply as the caller's answer; `active`: the owner's active tasks after a resume. */
export function acceptResultOf(reply: AcceptOutcome, active: number): AcceptResult {
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
    case 'JOINED':
      return { kind: 'joined', turn: reply.turn };
    case 'INTERRUPTING':
      return { kind: 'interrupting', turn: reply.turn };
    case 'DUPLICATE':
      return { kind: 'duplicate', turn: reply.turn };
    case 'RESUMED':
      return { kind: 'resumed', turn: reply.turn, active };
    case 'QUEUED':
      return { kind: 'queued', turn: reply.turn };
  }
}
