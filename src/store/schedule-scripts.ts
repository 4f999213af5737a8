// The scripts of schedules (src/store/schedules/schedule-store.ts), described for callScript: keys and
// arguments by name in their Lua's order, replies decoded. Each touches one slot: the owner's
// (schedClaim) or the schedule's (the others).
import { arg, defineScript } from './script-call.ts';
import { str } from './script-reply.ts';

export const schedClaimScript = defineScript({
  name: 'schedClaim',
  keys: ['ownerSchedules'],
  args: { scheduleId: arg.text, nowMs: arg.int, maxPerOwner: arg.int },
  reply: (reply): { claimed: true } | { claimed: false; count: number } => (reply[0] === 'CLAIMED' ? { claimed: true } : { claimed: false, count: Number(reply[1]) }),
});

export const schedCreateScript = defineScript({
  name: 'schedCreate',
  keys: ['schedule'],
  args: {
    scheduleId: arg.text,
    ownerKey: arg.text,
    /** The schedule's definition, as JSON. */
    definition: arg.json<unknown>(),
    nowMs: arg.int,
    /** Firing times at or before this (ms) never fire. */
    handledUntilMs: arg.int,
  },
  reply: (reply): 'CREATED' | 'EXISTS' => (reply[0] === 'EXISTS' ? 'EXISTS' : 'CREATED'),
});

export const schedSetStateScript = defineScript({
  name: 'schedSetState',
  keys: ['schedule', 'firings', 'firingIndex'],
  args: { ownerKey: arg.text, action: (value: 'pause' | 'resume' | 'delete') => value, nowMs: arg.int },
  reply: (reply): { before: string; after: string } | undefined => (reply[0] === 'OK' ? { before: str(reply[1]), after: str(reply[2]) } : undefined),
});

/** A firing decided to fire and not yet started. */
export interface DueFiring {
  firingId: string;
  scheduledFor: number;
  taskId: string;
}

export type FireDecision = { inactive: string } | { due: DueFiring[]; completed: boolean; tooSoon: number };

export const schedFireScript = defineScript({
  name: 'schedFire',
  keys: ['schedule', 'firings', 'firingIndex'],
  args: {
    nowMs: arg.int,
    lateAfterMs: arg.int,
    /** Candidate times (ms, ascending). */
    candidates: arg.json<readonly number[]>(),
    /** One task id per candidate. */
    taskIds: arg.json<readonly string[]>(),
    /** Older candidates left out of `candidates` (all missed). */
    omitted: arg.int,
    firingsKept: arg.int,
    retentionMs: arg.int,
    minIntervalMs: arg.int,
  },
  reply: (reply): FireDecision => {
    if (reply[0] === 'INACTIVE') return { inactive: str(reply[1]) };
    const due: DueFiring[] = [];
    for (let i = 3; i + 2 < reply.length; i += 3) due.push({ firingId: str(reply[i]), scheduledFor: Number(reply[i + 1]), taskId: str(reply[i + 2]) });
    return { due, completed: reply[1] === '1', tooSoon: Number(reply[2] ?? 0) };
  },
});

export const schedFiringDoneScript = defineScript({
  name: 'schedFiringDone',
  keys: ['schedule', 'firings'],
  args: { firingId: arg.text, outcome: (value: 'started' | 'failed') => value, taskId: arg.text, reason: arg.optionalText, nowMs: arg.int },
  reply: (reply): 'OK' | 'GONE' => (reply[0] === 'GONE' ? 'GONE' : 'OK'),
});
