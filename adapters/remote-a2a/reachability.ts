// Whether the downstream agent can be reached, as one turn sees it: calls are retried with
// backoff while it cannot, every failure is a WARN line for the operator, and the task's
// watchers hear once per outage that the turn waits (and once that it goes on).
import { logFailure, originOf } from '../../src/logging/operator-failures.ts';
import type { AdapterContext } from '../types.ts';
import type { RemoteA2aOptions } from './options.ts';
import { withRetry } from './retry.ts';

/** "0.5 s", "10 s": a wait as the status update says it. */
function formatSeconds(ms: number): string {
  const seconds = ms / 1000;
  return `${seconds >= 10 ? Math.round(seconds) : Math.round(seconds * 10) / 10} s`;
}

export class DownstreamReachability {
  private unreachableNoticed = false;

  constructor(
    private readonly ctx: AdapterContext,
    private readonly options: RemoteA2aOptions,
    /** The turn's signal (its own abort included): no retry outlives it. */
    private readonly signal: AbortSignal,
    /** The downstream task the turn follows, once known (named in the log lines). */
    private readonly downstreamTaskId: () => string | undefined,
  ) {}

  /** Retries while the downstream is unreachable, telling watchers once per outage. */
  retrying<T>(call: () => Promise<T>): Promise<T> {
    const { options } = this;
    return withRetry(
      async () => {
        const result = await call();
        this.reachable();
        return result;
      },
      {
        signal: this.signal,
        initialDelayMs: options.retryInitialDelayMs,
        maxDelayMs: options.retryMaxDelayMs,
        onRetry: (error, attempt, within) => this.noticeUnreachable(error, { attempt, within }),
      },
    );
  }

  /**
   * The downstream could not be reached or answered 408/429/5xx: every such failure is a WARN
   * line for the operator; the watchers get one status update per outage (not one per retry,
   * which over a long outage would fill the task's replay buffer). `retry`: undefined for a broken stream.
   */
  noticeUnreachable(error: Error, retry: { attempt: number; within: number } | undefined): void {
    const cause = error.message;
    const taskId = this.downstreamTaskId();
    logFailure(this.ctx.logger, 'backend-unavailable', {
      cause,
      backend: originOf(this.options.url),
      ...(taskId === undefined ? {} : { downstreamTaskId: taskId }),
      // A broken stream is followed at once by a GetTask (whose own failures are retried and logged).
      ...(retry === undefined ? { streamBroken: true } : { callAttempt: retry.attempt, retryWithinMs: retry.within }),
    });
    if (this.unreachableNoticed) return;
    this.unreachableNoticed = true;
    const when = retry === undefined ? 'now' : `in at most ${formatSeconds(retry.within)}`;
    const text = `The downstream agent is not reachable right now (${cause}); retrying ${when}, with backoff until the turn deadline.`;
    // Not awaited: a failed write surfaces at the turn's next write (the context keeps it).
    this.ctx.emitStatus(text, { downstreamUnreachable: true }).catch(() => undefined);
    this.ctx.recordStep('downstream-unreachable', { error: error.message }).catch(() => undefined);
  }

  /** A call went through: after an outage the watchers hear that the turn goes on. */
  reachable(): void {
    if (!this.unreachableNoticed) return;
    this.unreachableNoticed = false;
    this.ctx.emitStatus('The downstream agent is reachable again; the turn goes on.', { downstreamUnreachable: false }).catch(() => undefined);
  }
}
