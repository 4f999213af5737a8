// How a call to the downstream agent failed, sorted into the two things a turn can do about it:
// wait and try again (unreachable, overloaded, restarting), or end the turn with the reason
// (the downstream refused our credentials or the request, or broke the protocol).
import { A2AError, TaskNotFoundError } from '@a2a-js/sdk/errors';
import isNetworkError from 'is-network-error';
import { BackendLimitError } from '../bounded-response.ts';

/** The downstream (or its token endpoint) could not be reached or answered 408/429/5xx: retry later. */
export class DownstreamUnavailableError extends Error {
  constructor(
    message: string,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'DownstreamUnavailableError';
  }
}

/** The downstream (or its token endpoint) refused our credentials: retrying the same ones cannot help. */
export class DownstreamAuthError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DownstreamAuthError';
  }
}

/**
 * A call would have gone (or been redirected) to an origin the downstream's credentials are not
 * pinned to: not sent. Retrying would go there again.
 */
export class DownstreamOriginError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DownstreamOriginError';
  }
}

/** HTTP statuses that mean "not now" rather than "no". */
export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([408, 425, 429, 500, 502, 503, 504]);

/**
 * The backend limit a failure came from, if it did: the SDK may wrap the body reader's error
 * (its SSE parser, its JSON reads), so the cause chain is searched.
 */
export function backendLimitOf(error: unknown, depth = 0): BackendLimitError | undefined {
  if (error instanceof BackendLimitError) return error;
  if (typeof error !== 'object' || error === null || depth > 5) return undefined;
  return backendLimitOf((error as { cause?: unknown }).cause, depth + 1);
}

/** True when waiting and calling again may succeed. */
export function isRetryable(error: unknown): boolean {
  // A backend that sent past a limit would do it again, and a send retried would reach it twice.
  if (backendLimitOf(error) !== undefined) return false;
  if (error instanceof DownstreamUnavailableError) return true;
  // fetch's own failures (refused, reset, a body cut off mid-stream: "fetch failed", "terminated").
  return error instanceof Error && isNetworkError(error);
}

/**
 * True when the connection itself was refused: no request went out, so the downstream cannot
 * have the message. Anything else that failed after connecting may have delivered it.
 */
export function refused(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > 5) return false;
  // Several addresses tried (happy eyeballs): refused only if every one refused.
  if (error instanceof AggregateError && error.errors.length > 0) return error.errors.every((e) => refused(e, depth + 1));
  if ((error as { code?: unknown }).code === 'ECONNREFUSED') return true;
  return refused((error as { cause?: unknown }).cause, depth + 1);
}

/** One line saying what went wrong, for a failed turn's reason. */
export function describeDownstreamError(error: unknown): string {
  if (error instanceof DownstreamAuthError || error instanceof DownstreamOriginError) return error.message;
  const limit = backendLimitOf(error);
  if (limit !== undefined) return `the downstream agent went past a limit: ${limit.message} Raise ${limit.limit} (or the agent's own backendLimits) if the downstream is trusted to send that much.`;
  if (error instanceof TaskNotFoundError) {
    // Typically a downstream restarted without a durable task store: the work it was doing is gone.
    return `the downstream agent no longer knows the task this turn follows (${error.message}); it restarted without keeping its tasks, or removed the task. The turn fails rather than send the message again, which could repeat work the downstream had already done`;
  }
  if (error instanceof A2AError) return `the downstream agent answered with an error: ${error.message}`;
  if (error instanceof Error) return `the call to the downstream agent failed: ${error.message}`;
  return `the call to the downstream agent failed: ${String(error)}`;
}

/**
 * A downstream that sent past a backend limit, or named an origin it may not take us to, ends
 * the turn with the reason: polling, resubscribing or sending again would meet it again (and a
 * look for a lost send that cannot be read is no "not there").
 */
export const endsTheTurn = (error: unknown): boolean => backendLimitOf(error) !== undefined || error instanceof DownstreamOriginError;
