// Tells the operator when an issuer's JWKS cannot be fetched, without letting a flood of tokens
// flood the log: every token of that issuer fails the same way while its endpoint is down, so one
// line per issuer per interval says it, with how many failures the line stands for.
import type { Logger } from '../../logging/logger.ts';
import { causeOf, logFailure } from '../../logging/operator-failures.ts';

/** At most one line per issuer this often while its keys keep failing. */
export const KEY_FETCH_LOG_INTERVAL_MS = 60_000;

export class KeyFetchFailures {
  /** Per issuer id: when its last line was written, and the failures since then not logged. */
  private readonly seen = new Map<string, { loggedAtMs: number; suppressed: number }>();

  constructor(
    private readonly logger: Logger | undefined,
    private readonly intervalMs = KEY_FETCH_LOG_INTERVAL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  failed(issuer: { id: string; issuer: string; jwksUri: string }, error: unknown): void {
    if (this.logger === undefined) return;
    const nowMs = this.now();
    const last = this.seen.get(issuer.id);
    if (last !== undefined && nowMs - last.loggedAtMs < this.intervalMs) {
      last.suppressed += 1;
      return;
    }
    this.seen.set(issuer.id, { loggedAtMs: nowMs, suppressed: 0 });
    logFailure(this.logger, 'jwks-fetch-failed', {
      cause: causeOf(error),
      issuerId: issuer.id,
      issuer: issuer.issuer,
      jwksUri: issuer.jwksUri,
      // Failures since the previous line that were not logged on their own.
      suppressed: last?.suppressed ?? 0,
      nextLineAfterMs: this.intervalMs,
    });
  }

  /** The keys came back: the next failure is news again and logs at once. */
  recovered(issuerId: string): void {
    this.seen.delete(issuerId);
  }
}
