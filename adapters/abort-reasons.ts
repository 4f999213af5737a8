// Why a turn's abort signal fired. The runtime aborts ctx.signal for four different reasons and
// an adapter that fronts another system must tell them apart: a cancel, a deadline or an
// interrupt (a new message replaces the turn) ends the turn's work, so work it started elsewhere
// should be canceled too, while a worker shutdown only hands the turn to another worker, which
// continues it, so that work must be left running.
// The reasons are shared objects so the runtime and adapters compare them by identity.

/** Why ctx.signal fired. */
export type AbortCause = 'cancel' | 'deadline' | 'interrupt' | 'shutdown';

/** The reason of a turn stopped because its worker is shutting down (it is handed back, not ended). */
export const WORKER_SHUTDOWN = new DOMException('The worker is shutting down', 'AbortError');

/** The reason of a turn that ran past its deadline (it fails). */
export const TURN_DEADLINE = new DOMException('The turn ran past its deadline', 'AbortError');

/** The reason of a turn a new message interrupted (input policy "interrupt"): the task goes on with the next turn. */
export const TURN_INTERRUPTED = new DOMException('A new message interrupted the turn', 'AbortError');

/** The reason of a turn whose task was canceled (CancelTask). */
export function taskCanceled(): DOMException {
  return new DOMException('Task canceled', 'AbortError');
}

/** Why the signal fired, or undefined while it has not. */
export function abortCauseOf(signal: AbortSignal): AbortCause | undefined {
  if (!signal.aborted) return undefined;
  if (signal.reason === WORKER_SHUTDOWN) return 'shutdown';
  if (signal.reason === TURN_DEADLINE) return 'deadline';
  if (signal.reason === TURN_INTERRUPTED) return 'interrupt';
  return 'cancel';
}
