// An issuer's keys behind a JWKS URL. jose's remote key set caches them (auth.jwksCacheSeconds)
// and refetches when a token names an unknown `kid` once its cooldown has passed, which is how
// key rotation reaches us. Around it, this file adds what an outage needs:
//  - every fetch is bounded in bytes and time (bounded-fetch.ts);
//  - after a failed fetch, no new fetch for a pause that doubles while it keeps failing, so a
//    flood of tokens is not a flood of fetches each waiting out the timeout;
//  - while the endpoint fails, the keys last fetched still verify the tokens they signed (a
//    token naming a key not among them is answered 503: it may be valid, we cannot tell);
//  - the failure is logged once per interval (key-fetch-failures.ts) and kept for /readyz.
import { createLocalJWKSet, createRemoteJWKSet, customFetch, errors, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import { causeOf } from '../../logging/operator-failures.ts';
import { boundedFetchFor, type FetchBounds, type FetchFunction } from './bounded-fetch.ts';
import { IssuerKeysUnavailable } from './issuer-errors.ts';
import type { KeyFetchFailures } from './key-fetch-failures.ts';

/** What /readyz says of an issuer's remote JWKS. */
export interface KeyFetchStatus {
  jwksUri: string;
  /** pending: never fetched yet; ok: the last fetch succeeded; failing: it did not. */
  state: 'pending' | 'ok' | 'failing';
  /** Keys held (from the last successful fetch). */
  keys: number;
  fetchedAt?: string;
  failingSince?: string;
  error?: string;
}

export interface RemoteKeysOptions {
  /** How long fetched keys are trusted before they are fetched again. */
  cacheMaxAgeMs: number;
  /** An unknown `kid` refetches the JWKS at most this often (jose's cooldown). */
  cooldownMs: number;
  /** The first pause after a failed fetch; it doubles up to retryMaxMs while failures go on. */
  retryMinMs: number;
  retryMaxMs: number;
  bounds: FetchBounds;
  failures: KeyFetchFailures;
  fetch?: FetchFunction;
  now?: () => number;
}

type KeyResult = Awaited<ReturnType<JWTVerifyGetKey>>;

/** Errors about the token (which key it names), not about the endpoint. */
const isTokenError = (error: unknown): boolean =>
  error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys || error instanceof errors.JOSENotSupported;

export class RemoteKeys {
  private readonly remote: ReturnType<typeof createRemoteJWKSet>;
  private readonly now: () => number;
  /** Answers read from the endpoint (jose may still refuse one as not a JWKS), and when the last came. */
  private answers = 0;
  private answeredAtMs = 0;
  /** The last answer that jose took as keys: how many answers had been read then, and when. */
  private good: { answers: number; atMs: number } | undefined;
  /** Failing since, why, how many times in a row, when the next fetch may go, and the answers read by the last failure. */
  private failure: { sinceMs: number; error: string; count: number; retryAtMs: number; answers: number } | undefined;
  /** The held keys as a local set, rebuilt only when jose holds a new JWKS. */
  private held: { jwks: JSONWebKeySet; set: ReturnType<typeof createLocalJWKSet> } | undefined;

  constructor(
    readonly issuer: { id: string; issuer: string; jwksUri: string },
    private readonly options: RemoteKeysOptions,
  ) {
    this.now = options.now ?? Date.now;
    const bounded = boundedFetchFor(options.bounds, options.fetch);
    this.remote = createRemoteJWKSet(new URL(issuer.jwksUri), {
      cacheMaxAge: options.cacheMaxAgeMs,
      cooldownDuration: options.cooldownMs,
      timeoutDuration: options.bounds.timeoutMs,
      [customFetch]: async (input: string | URL | Request, init?: RequestInit) => {
        const response = await bounded(input, init);
        this.answers += 1;
        this.answeredAtMs = this.now();
        return response;
      },
    });
  }

  /** jose's key lookup for jwtVerify, with the pause after failures and the held keys as fallback. */
  readonly getKey: JWTVerifyGetKey = async (header, token) => {
    const failure = this.failure;
    if (failure !== undefined && this.now() < failure.retryAtMs) return this.fromHeld(header, token, failure.error);
    let key: KeyResult;
    try {
      key = await this.remote(header, token);
    } catch (error) {
      if (isTokenError(error)) {
        this.succeeded();
        throw error;
      }
      this.failed(error);
      return this.fromHeld(header, token, causeOf(error));
    }
    this.succeeded();
    return key;
  };

  /** Fetches now (a newly discovered jwks_uri is checked at once, not on the first token). */
  async refresh(): Promise<void> {
    try {
      await this.remote.reload();
      this.succeeded();
    } catch (error) {
      this.failed(error);
    }
  }

  status(): KeyFetchStatus {
    const keys = this.remote.jwks()?.keys.length ?? 0;
    const state = this.failure !== undefined ? 'failing' : this.good === undefined ? 'pending' : 'ok';
    return {
      jwksUri: this.issuer.jwksUri,
      state,
      keys,
      ...(this.good === undefined ? {} : { fetchedAt: new Date(this.good.atMs).toISOString() }),
      ...(this.failure === undefined ? {} : { failingSince: new Date(this.failure.sinceMs).toISOString(), error: this.failure.error }),
    };
  }

  private async fromHeld(header: Parameters<JWTVerifyGetKey>[0], token: Parameters<JWTVerifyGetKey>[1], cause: string): Promise<KeyResult> {
    const jwks = this.remote.jwks();
    if (jwks === undefined) throw new IssuerKeysUnavailable(this.issuer.id, new Error(cause));
    if (this.held?.jwks !== jwks) this.held = { jwks, set: createLocalJWKSet(jwks) };
    try {
      return await this.held.set(header, token);
    } catch (error) {
      // A key we do not hold may be one the issuer added since: not a verdict on the token.
      if (error instanceof errors.JWKSNoMatchingKey) throw new IssuerKeysUnavailable(this.issuer.id, new Error(cause));
      throw error;
    }
  }

  private failed(error: unknown): void {
    const nowMs = this.now();
    const count = (this.failure?.count ?? 0) + 1;
    const pauseMs = Math.min(this.options.retryMaxMs, this.options.retryMinMs * 2 ** (count - 1));
    this.failure = { sinceMs: this.failure?.sinceMs ?? nowMs, error: causeOf(error), count, retryAtMs: nowMs + pauseMs, answers: this.answers };
    this.options.failures.failed(this.issuer, error);
  }

  /**
   * A lookup went through jose without an endpoint error. Only an answer read since the last
   * failure proves the endpoint back: keys served from the cache say nothing about it.
   */
  private succeeded(): void {
    if (this.answers === 0 || this.answers === this.good?.answers) return;
    if (this.failure !== undefined && this.answers <= this.failure.answers) return;
    this.good = { answers: this.answers, atMs: this.answeredAtMs };
    if (this.failure === undefined) return;
    this.failure = undefined;
    this.options.failures.recovered(this.issuer.id);
  }
}
