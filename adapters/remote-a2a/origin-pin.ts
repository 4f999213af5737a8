// Where the a2a adapter may send a request, and with it the agent's outbound credentials: the
// origin of the configured `url` (the card is fetched from there), and the origins the operator
// listed in `allowedOrigins`. A downstream's card is the downstream's own word, so an interface
// URL it names on another origin is not followed on that word alone: a hostile or compromised
// downstream could otherwise collect the gateway's credentials for it anywhere.
import { DownstreamOriginError } from './errors.ts';

/** Redirects followed for one call at most (each on the origin of the call). */
export const MAX_REDIRECTS = 5;

export class OriginPin {
  /** The configured URL's origin. */
  readonly pinned: string;
  private readonly allowed: ReadonlySet<string>;

  constructor(configuredUrl: string, allowedOrigins: readonly string[] = []) {
    this.pinned = new URL(configuredUrl).origin;
    this.allowed = new Set([this.pinned, ...allowedOrigins.map((origin) => new URL(origin).origin)]);
  }

  allows(url: string | URL): boolean {
    return this.allowed.has(new URL(url).origin);
  }

  /** Throws unless a call to `url` is allowed; `what` says what named it ("the card", "a call"). */
  check(url: string | URL, what: string): void {
    const origin = new URL(url).origin;
    if (this.allowed.has(origin)) return;
    throw new DownstreamOriginError(
      `${what} names ${origin}, another origin than the configured downstream ${this.pinned}; nothing was sent there (the agent's credentials are pinned to ${this.pinned}). ` +
        `If ${origin} is the same downstream, add "${origin}" to the a2a adapter option allowedOrigins.`,
    );
  }
}

/**
 * Throws for a redirect that leaves the origin of the call it answers: the credentials applied
 * to that call are never sent on to another origin, whether or not that origin is allowed (a
 * downstream served from there names it in its card, and the operator allows it).
 */
export function refuseCrossOriginRedirect(from: URL, to: URL): void {
  if (from.origin === to.origin) return;
  throw new DownstreamOriginError(
    `the downstream at ${from.origin} redirected a call to ${to.origin}, another origin; the redirect was not followed and no credential was sent there. ` +
      `A downstream served from ${to.origin} must name it in its card, and the operator add it to the a2a adapter option allowedOrigins.`,
  );
}
