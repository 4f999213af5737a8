// The scripts of a coordinator's assignments (src/store/assignments/assignment-store.ts), described
// for callScript: keys and arguments by name in their Lua's order, replies decoded. All keys are
// the coordinator task's (one slot).
import { arg, defineScript } from './script-call.ts';
import { str } from './script-reply.ts';

/** The coordinator's assignment keys, as every assignment script takes them first. */
const ASSIGNMENT_KEYS = ['task', 'assignments', 'pendingAssignments', 'delegations', 'slots'] as const;

export const registerAssignmentsScript = defineScript({
  name: 'registerAssignments',
  keys: ASSIGNMENT_KEYS,
  args: {
    generation: arg.int,
    delegation: arg.text,
    /** The delegation's settings, as JSON. */
    settings: arg.json<object>(),
    /** One JSON record per assignment, in FIFO order. */
    records: arg.eachJson<{ taskId: string }>(),
  },
  /** False when the lease was lost. */
  reply: (reply): boolean => reply[0] !== 'STALE',
});

export const grantSlotsScript = defineScript({
  name: 'grantSlots',
  keys: ASSIGNMENT_KEYS,
  args: { nowMs: arg.int },
  /** The children granted a slot, in grant order. */
  reply: (reply): string[] => reply.map(str),
});

export type AssignmentOutcome = 'completed' | 'failed' | 'canceled' | 'rejected' | 'input-required';
export type SettleReply = { kind: 'unknown' | 'already' | 'question' | 'settled' } | { kind: 'wake'; wakeSeq: number; turn: number };

export const settleAssignmentScript = defineScript({
  name: 'settleAssignment',
  keys: [...ASSIGNMENT_KEYS, 'questions'],
  args: {
    childId: arg.text,
    outcome: (value: AssignmentOutcome) => value,
    /** The child's question (input-required) or final message ('' = none). */
    text: arg.text,
    nowMs: arg.int,
  },
  reply: (reply): SettleReply => {
    switch (reply[0]) {
      case 'WAKE':
        return { kind: 'wake', wakeSeq: Number(reply[1]), turn: Number(reply[2]) };
      case 'QUESTION':
        return { kind: 'question' };
      case 'SETTLED':
        return { kind: 'settled' };
      case 'ALREADY':
        return { kind: 'already' };
      default:
        return { kind: 'unknown' };
    }
  },
});

export const suspendTurnScript = defineScript({
  name: 'suspendTurn',
  keys: ['task', 'lease', 'events', 'pushCursors'],
  args: {
    generation: arg.int,
    /** The working status, saying what the turn waits for. */
    status: arg.json<object>(),
    event: arg.json<object>(),
    nowMs: arg.int,
    eventChannel: arg.text,
  },
  /** False when the lease was lost. */
  reply: (reply): boolean => reply[0] === 'SUSPENDED',
});

export const surfaceQuestionScript = defineScript({
  name: 'surfaceQuestion',
  keys: ['task', 'history', 'events', 'assignments', 'questions', 'pushCursors'],
  args: { nowMs: arg.int, nowIso: arg.text, eventChannel: arg.text, messageId: arg.text },
  /** The child whose question was put to the caller, if one was. */
  reply: (reply): string | undefined => (reply[0] === 'ASKED' ? str(reply[1]) : undefined),
});
