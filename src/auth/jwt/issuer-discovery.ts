// OpenID Connect Discovery (and RFC 8414) for an issuer configured by its URL alone: its
// `<issuer>/.well-known/openid-configuration` names the JWKS its tokens are signed with. The
// document is read within the fetch bounds, must name exactly the configured issuer (a
// document that names another one is refused: trusting it would let one provider speak for
// another), and its jwks_uri must be https, or loopback only when the issuer itself is.
// Discovery runs at once, again every refresh interval, and after a failure sooner, with a
// pause that doubles up to the interval. A failure keeps what was discovered before: the
// gateway goes on verifying with the keys it had. Each change of state (discovered, failing,
// recovered, a new jwks_uri) is one log line, never one per request or per retry.
import { z } from 'zod';
import { isLoopbackHost, issuerUrlProblem } from '../../config/schema/auth.ts';
import type { Logger } from '../../logging/logger.ts';
import { causeOf, logFailure } from '../../logging/operator-failures.ts';
import { fetchJsonObject, IssuerFetchError, type FetchBounds, type FetchFunction } from './bounded-fetch.ts';

/** What /readyz says of an issuer's discovery. */
export interface DiscoveryStatus {
  /** The discovery document's URL. */
  url: string;
  /** pending: the first attempt has not settled; ok: the last attempt succeeded; failing: it did not. */
  state: 'pending' | 'ok' | 'failing';
  /** The jwks_uri in use (kept from the last success while discovery fails). */
  jwksUri?: string;
  discoveredAt?: string;
  failingSince?: string;
  error?: string;
  nextAttemptAt?: string;
}

export interface DiscoveryOptions {
  /** The interval between successful discoveries. */
  refreshMs: number;
  /** The first pause after a failure; it doubles up to refreshMs while failures go on. */
  retryMinMs: number;
  bounds: FetchBounds;
  logger?: Logger;
  fetch?: FetchFunction;
  now?: () => number;
  /** Told each jwks_uri a successful discovery names (the same one again included). */
  onDiscovered: (jwksUri: string) => void;
}

/** OpenID Connect Discovery 1.0 §4: the configuration is at the issuer plus this path (a trailing "/" of the issuer dropped). */
export const discoveryUrlOf = (issuer: string): string => `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;

/** The members we use; the rest of the document is the provider's business. */
const discoveryDocument = z.looseObject({
  issuer: z.string({ error: 'it has no "issuer" string' }),
  jwks_uri: z.string({ error: 'it has no "jwks_uri" string' }),
});

export class IssuerDiscovery {
  readonly url: string;
  private readonly now: () => number;
  private jwksUri: string | undefined;
  private discoveredAtMs: number | undefined;
  private failure: { sinceMs: number; error: string; count: number } | undefined;
  private nextAtMs: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private first: Promise<void> | undefined;
  private closed = false;

  constructor(
    readonly issuer: { id: string; issuer: string },
    private readonly options: DiscoveryOptions,
  ) {
    this.url = discoveryUrlOf(issuer.issuer);
    this.now = options.now ?? Date.now;
  }

  /** Runs the first discovery (and, from it, the later ones). */
  start(): void {
    this.first ??= this.attempt();
  }

  /** Settles when the first attempt has (a token that arrives at start waits for it, not for a retry). */
  async firstAttempt(): Promise<void> {
    this.start();
    await this.first;
  }

  /** The jwks_uri last discovered, if any. */
  current(): string | undefined {
    return this.jwksUri;
  }

  /** The last failure's cause, while failing. */
  failureCause(): string | undefined {
    return this.failure?.error;
  }

  status(): DiscoveryStatus {
    const state = this.failure !== undefined ? 'failing' : this.discoveredAtMs === undefined ? 'pending' : 'ok';
    const at = (ms: number | undefined): string | undefined => (ms === undefined ? undefined : new Date(ms).toISOString());
    return {
      url: this.url,
      state,
      ...(this.jwksUri === undefined ? {} : { jwksUri: this.jwksUri }),
      ...(this.discoveredAtMs === undefined ? {} : { discoveredAt: at(this.discoveredAtMs) }),
      ...(this.failure === undefined ? {} : { failingSince: at(this.failure.sinceMs), error: this.failure.error }),
      ...(this.nextAtMs === undefined ? {} : { nextAttemptAt: at(this.nextAtMs) }),
    };
  }

  /** Stops the schedule; an attempt under way finishes but changes nothing. */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.nextAtMs = undefined;
  }

  private async attempt(): Promise<void> {
    let jwksUri: string;
    try {
      jwksUri = await this.discover();
    } catch (error) {
      if (!this.closed) this.failed(error);
      return;
    }
    if (!this.closed) this.discovered(jwksUri);
  }

  private async discover(): Promise<string> {
    // The configuration schema holds this already; an issuer set given at run time is held to it too.
    const refused = issuerUrlProblem(this.issuer.issuer);
    if (refused !== undefined) throw new IssuerFetchError(`issuer ${this.issuer.id} cannot be discovered: ${refused}`);
    const raw = await fetchJsonObject(this.url, this.options.bounds, this.options.fetch);
    const parsed = discoveryDocument.safeParse(raw);
    if (!parsed.success) throw new IssuerFetchError(`${this.url} is not an OpenID Connect discovery document: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    const document = parsed.data;
    if (document.issuer !== this.issuer.issuer) {
      throw new IssuerFetchError(
        `${this.url} names issuer ${JSON.stringify(document.issuer)}, not the configured ${JSON.stringify(this.issuer.issuer)}; they must be equal exactly ` +
          '(OpenID Connect Discovery §4.3, RFC 8414 §3.3): fix auth.issuers[].issuer to the provider\'s own issuer string',
      );
    }
    const problem = issuerUrlProblem(document.jwks_uri, isLoopbackHost(new URL(this.issuer.issuer).hostname));
    if (problem !== undefined) throw new IssuerFetchError(`the jwks_uri of ${this.url} is refused: ${problem}`);
    return document.jwks_uri;
  }

  private discovered(jwksUri: string): void {
    const { logger } = this.options;
    const previous = this.jwksUri;
    const wasFailing = this.failure;
    this.jwksUri = jwksUri;
    this.discoveredAtMs = this.now();
    this.failure = undefined;
    const fields = { issuerId: this.issuer.id, issuer: this.issuer.issuer, jwksUri };
    if (wasFailing !== undefined) {
      logger?.info('issuer discovered again', { ...fields, failedAttempts: wasFailing.count, failingSince: new Date(wasFailing.sinceMs).toISOString() });
    } else if (previous === undefined) {
      logger?.info('issuer discovered', fields);
    }
    if (previous !== undefined && previous !== jwksUri) logger?.info('issuer names a new jwks_uri', { ...fields, previousJwksUri: previous });
    this.options.onDiscovered(jwksUri);
    this.schedule(this.options.refreshMs);
  }

  private failed(error: unknown): void {
    const count = (this.failure?.count ?? 0) + 1;
    const pauseMs = Math.min(this.options.refreshMs, this.options.retryMinMs * 2 ** (count - 1));
    const cause = causeOf(error);
    if (this.failure === undefined && this.options.logger !== undefined) {
      logFailure(this.options.logger, 'issuer-discovery-failed', {
        cause,
        issuerId: this.issuer.id,
        issuer: this.issuer.issuer,
        discoveryUrl: this.url,
        // What its tokens get meanwhile: verified with the keys last discovered, or refused.
        keepsJwksUri: this.jwksUri ?? null,
        retryInMs: pauseMs,
      });
    }
    this.failure = { sinceMs: this.failure?.sinceMs ?? this.now(), error: cause, count };
    this.schedule(pauseMs);
  }

  private schedule(delayMs: number): void {
    clearTimeout(this.timer);
    this.nextAtMs = this.now() + delayMs;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.attempt();
    }, delayMs);
    // A pending rediscovery never keeps the process alive on its own.
    this.timer.unref();
  }
}
