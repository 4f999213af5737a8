// What a turn's job throws so BullMQ runs it again later or elsewhere, without a decision about the turn.
import type { RunningShareFull } from '../../../queues/running-share.ts';

/** Thrown so BullMQ hands the job to another worker at once: this one is shutting down. */
export class TurnHandedBackError extends Error {
  constructor(taskId: string) {
    super(`Turn of task ${taskId} handed back: its worker is shutting down; another worker continues it.`);
    this.name = 'TurnHandedBackError';
  }
}

/**
 * Thrown before a turn starts when its owner or tenant already runs its share of turns
 * (limits.maxRunningTurnsPerOwner, limits.maxRunningTurnsPerTenant): the job goes back to the
 * queue for a moment, without spending an attempt, and the worker takes someone else's turn.
 */
export class TurnDeferredError extends Error {
  constructor(
    taskId: string,
    readonly share: RunningShareFull,
  ) {
    super(
      `Turn of task ${taskId} deferred: its ${share.full} runs ${share.running} turns, its share (limits.${share.full === 'owner' ? 'maxRunningTurnsPerOwner' : 'maxRunningTurnsPerTenant'} = ${share.cap}); it runs once one of them ends.`,
    );
    this.name = 'TurnDeferredError';
  }
}

/** Thrown so BullMQ retries later: another live worker holds the task's lease right now. */
export class LeaseHeldError extends Error {
  constructor(taskId: string, holder: string) {
    super(`Task ${taskId} is leased by ${holder}; retrying once that lease ends.`);
    this.name = 'LeaseHeldError';
  }
}
