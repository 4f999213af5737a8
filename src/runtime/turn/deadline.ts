// A turn's deadline (turnDeadlineMs, counted from its first start across workers): at it the
// adapter's signal fires; an adapter that ignores it is abandoned after a grace period (its later
// writes are fenced out once the turn is finished).
import { TURN_DEADLINE } from '../../../adapters/abort-reasons.ts';
import type { AgentLimits } from '../../agents/agent-settings.ts';

/** How long an adapter may keep running after its abort signal fired for the deadline. */
const DEADLINE_GRACE_MS = 5_000;

export function deadlineReason(turn: number, limits: AgentLimits): string {
  return `Turn ${turn} ran past its deadline of ${limits.turnDeadlineMs} ms from its first start (turnDeadlineMs), across all the workers that ran it.`;
}

export interface DeadlineWatch {
  /** Rejects (with TURN_DEADLINE) once the grace after the deadline has passed; never resolves. */
  abandoned: Promise<never>;
  /** Stops watching: the adapter's run has ended. */
  stop(): void;
}

/** Watches the deadline at `deadlineAtMs` (undefined = none): aborts `controller` at it, gives up on the run a grace period later. */
export function watchDeadline(controller: AbortController, deadlineAtMs: number | undefined): DeadlineWatch {
  let deadlineTimer: NodeJS.Timeout | undefined;
  let graceTimer: NodeJS.Timeout | undefined;
  const abandoned = new Promise<never>((_, reject) => {
    if (deadlineAtMs === undefined) return;
    deadlineTimer = setTimeout(() => {
      controller.abort(TURN_DEADLINE);
      graceTimer = setTimeout(() => reject(TURN_DEADLINE), DEADLINE_GRACE_MS);
    }, Math.max(0, deadlineAtMs - Date.now()));
  });
  return {
    abandoned,
    stop: () => {
      clearTimeout(deadlineTimer);
      clearTimeout(graceTimer);
    },
  };
}
