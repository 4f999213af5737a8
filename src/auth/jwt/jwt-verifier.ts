// Bearer JWTs from configured issuers (jose). Each token is checked against exactly the issuer
// its `iss` names: that issuer's keys, audience and algorithm allow-list, so a key or an
// algorithm trusted for one issuer never validates another's tokens.
import { decodeJwt, decodeProtectedHeader, errors, jwtVerify, type JWTPayload } from 'jose';
import type { IssuerConfig } from '../../config/schema.ts';
import { A2AError } from '../../protocol/errors.ts';
import { operationScopes, userSubject, type Principal } from '../principal.ts';
import { bearerChallenge } from './challenge.ts';
import { VerifiedTokens } from './verified-tokens.ts';
import { KeyFetchFailures } from './key-fetch-failures.ts';
import type { Logger } from '../../logging/logger.ts';
import type { FetchFunction } from './bounded-fetch.ts';
import { IssuerKeysUnavailable, IssuerNotDiscovered } from './issuer-errors.ts';
import { discoveryUrlOf } from './issuer-discovery.ts';
import { isDiscovered, issuerKeysOf, type IssuerKeyContext, type IssuerKeys, type IssuerStatus } from './issuer-keys.ts';

export type { IssuerStatus } from './issuer-keys.ts';

export interface JwtVerifierOptions {
  issuers: IssuerConfig[];
  clockToleranceSeconds: number;
  jwksCacheSeconds: number;
  /** Directory jwksFile paths are relative to. */
  baseDir: string;
  /** Verified tokens kept so a re-sent token skips the signature check (0 = verify every time). */
  verifiedTokenCacheEntries?: number;
  /** Where a failed JWKS fetch or discovery is reported (once per state change or interval); none: not reported. */
  logger?: Logger;
  /** How often an issuer configured by its URL alone is discovered again (auth.discoveryRefreshSeconds; default an hour). */
  discoveryRefreshSeconds?: number;
  /** Bounds of one discovery or JWKS fetch (auth.issuerFetchTimeoutMs, auth.issuerFetchMaxBytes). */
  issuerFetchTimeoutMs?: number;
  issuerFetchMaxBytes?: number;
  /** An unknown `kid` refetches an issuer's JWKS at most this often (default 30 s, jose's). */
  jwksCooldownMs?: number;
  /** The first pause after a failed discovery or JWKS fetch, doubling while failures go on (default 1 s). */
  issuerRetryMinMs?: number;
  /** The fetch used for issuer endpoints (tests); the global one by default. */
  fetch?: FetchFunction;
}

/** An issuer in use: its configuration, the same configuration's canonical form, and its keys. */
interface TrustedIssuer {
  config: IssuerConfig;
  fingerprint: string;
  keys: IssuerKeys;
}

/** An issuer configured by its URL alone, as the agent card declares it (an OpenID Connect security scheme). */
export interface OpenIdConnectIssuer {
  id: string;
  issuer: string;
  audience: IssuerConfig['audience'];
  /** Its discovery document (the scheme's openIdConnectUrl). */
  openIdConnectUrl: string;
}

/**
 * `typ` values of a token meant for this gateway: a plain JWT or an OAuth access token
 * (RFC 9068 `at+jwt`). Media types compare case-insensitively and may drop "application/"
 * (RFC 7515 §4.1.9). Any other type (an ID token's "JWT+id", a logout token, a DPoP proof)
 * was issued for another purpose and is refused, so it cannot be replayed here.
 */
const ACCEPTED_TOKEN_TYPES = new Set(['jwt', 'application/jwt', 'at+jwt', 'application/at+jwt']);

/** Thrown for a credential we cannot accept: 401 with an RFC 6750 challenge. */
export function invalidToken(reason: string, message: string): A2AError {
  return new A2AError('UNAUTHENTICATED', message, {
    metadata: { reason },
    headers: { 'WWW-Authenticate': bearerChallenge({ error: 'invalid_token', description: message }) },
  });
}

/**
 * Verifies bearer JWTs of a set of trusted issuers. The set can be replaced while the gateway
 * runs (replaceIssuers): what an unchanged issuer holds (fetched keys, discovery) is kept.
 * close() stops the background discoveries.
 */
export class JwtVerifier {
  private issuers = new Map<string, TrustedIssuer>();
  private readonly verified: VerifiedTokens;
  private readonly keyContext: IssuerKeyContext;

  constructor(private readonly options: JwtVerifierOptions) {
    this.verified = new VerifiedTokens(options.verifiedTokenCacheEntries ?? 0, options.jwksCacheSeconds * 1000);
    const cooldownMs = options.jwksCooldownMs ?? 30_000;
    this.keyContext = {
      baseDir: options.baseDir,
      jwksCacheMs: options.jwksCacheSeconds * 1000,
      jwksCooldownMs: cooldownMs,
      retryMinMs: options.issuerRetryMinMs ?? 1000,
      retryMaxMs: Math.max(cooldownMs, options.issuerRetryMinMs ?? 1000),
      discoveryRefreshMs: (options.discoveryRefreshSeconds ?? 3600) * 1000,
      bounds: { timeoutMs: options.issuerFetchTimeoutMs ?? 5000, maxBytes: options.issuerFetchMaxBytes ?? 256 * 1024 },
      failures: new KeyFetchFailures(options.logger),
      ...(options.logger === undefined ? {} : { logger: options.logger }),
      ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
    };
    this.replaceIssuers(options.issuers);
  }

  /**
   * Makes `issuers` the trusted set, all or nothing: a set that cannot be used (two issuers with
   * the same `issuer` or `id`, an unreadable jwksFile) throws and changes nothing. An issuer
   * whose configuration is unchanged keeps its keys and discovery; a new or changed one starts
   * afresh (its discovery at once); a removed or changed one is stopped, and no token verified
   * under the old set is taken from the cache again.
   */
  replaceIssuers(issuers: readonly IssuerConfig[]): void {
    const next = new Map<string, TrustedIssuer>();
    const ids = new Set<string>();
    const built: IssuerKeys[] = [];
    try {
      for (const config of issuers) {
        if (next.has(config.issuer)) throw new Error(`Two issuers have the same "issuer" ${config.issuer}; merge them.`);
        if (ids.has(config.id)) throw new Error(`Two issuers have the same id "${config.id}"; an id names the owners of one issuer's tokens, so give each its own.`);
        ids.add(config.id);
        const fingerprint = canonicalJson(config);
        const current = this.issuers.get(config.issuer);
        if (current?.fingerprint === fingerprint) {
          next.set(config.issuer, current);
          continue;
        }
        const keys = issuerKeysOf(config, this.keyContext);
        built.push(keys);
        next.set(config.issuer, { config, fingerprint, keys });
      }
    } catch (error) {
      for (const keys of built) keys.close();
      throw error;
    }
    const dropped = [...this.issuers.values()].filter((trusted) => next.get(trusted.config.issuer) !== trusted);
    this.issuers = next;
    for (const trusted of dropped) trusted.keys.close();
    if (dropped.length > 0) this.verified.clear();
    for (const keys of built) keys.start();
  }

  /** The trusted issuers' configurations, in the order given. */
  currentIssuers(): IssuerConfig[] {
    return [...this.issuers.values()].map((trusted) => trusted.config);
  }

  /** Each issuer's state (discovery, JWKS fetch), for /readyz's admin detail. */
  issuerStatus(): IssuerStatus[] {
    return [...this.issuers.values()].map((trusted) => trusted.keys.status());
  }

  /** The issuers configured by their URL alone, which the agent card declares as OpenID Connect schemes. */
  openIdConnectIssuers(): OpenIdConnectIssuer[] {
    return this.currentIssuers()
      .filter(isDiscovered)
      .map((config) => ({ id: config.id, issuer: config.issuer, audience: config.audience, openIdConnectUrl: discoveryUrlOf(config.issuer) }));
  }

  /** Stops every issuer's background work (discovery schedules). */
  close(): void {
    for (const trusted of this.issuers.values()) trusted.keys.close();
  }

  /** Verifies a compact JWT and returns its principal; throws UNAUTHENTICATED naming what failed. */
  async verify(token: string): Promise<Principal> {
    const known = this.verified.get(token);
    if (known !== undefined) return known;
    let unverified: JWTPayload;
    try {
      unverified = decodeJwt(token);
    } catch {
      throw invalidToken('MALFORMED_TOKEN', 'The bearer token is not a JWT (three base64url parts with a JSON payload).');
    }
    let typ: unknown;
    try {
      typ = decodeProtectedHeader(token).typ;
    } catch {
      throw invalidToken('MALFORMED_TOKEN', 'The bearer token is not a JWT (its header is not base64url JSON).');
    }
    if (typ !== undefined && (typeof typ !== 'string' || !ACCEPTED_TOKEN_TYPES.has(typ.toLowerCase()))) {
      throw invalidToken(
        'WRONG_TOKEN_TYPE',
        `The token's type (typ ${JSON.stringify(typ)}) is not an access token: send a token with typ "JWT" or "at+jwt" (or none).`,
      );
    }
    // Only picks which issuer's rules to apply; nothing from the payload is trusted before jwtVerify.
    const trusted = typeof unverified.iss === 'string' ? this.issuers.get(unverified.iss) : undefined;
    if (trusted === undefined) {
      throw invalidToken('UNKNOWN_ISSUER', 'The token was not issued by an issuer this gateway trusts (check its "iss").');
    }
    const { config } = trusted;
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, trusted.keys.getKey, {
        issuer: config.issuer,
        audience: config.audience,
        algorithms: config.algorithms,
        clockTolerance: this.options.clockToleranceSeconds,
        requiredClaims: ['sub', 'exp', ...config.requiredClaims],
      }));
    } catch (error) {
      throw translateJoseError(error);
    }
    const tenant = payload[config.tenantClaim];
    if (tenant !== undefined && typeof tenant !== 'string') {
      throw invalidToken('MALFORMED_TOKEN', `The token's "${config.tenantClaim}" claim must be a string.`);
    }
    if (typeof payload.sub !== 'string' || payload.sub === '') throw invalidToken('MALFORMED_TOKEN', 'The token\'s "sub" claim must be a non-empty string.');
    const grants = grantsOf(payload);
    const principal: Principal = { tenant: tenant ?? '', subject: userSubject(config.id, payload.sub), scopes: operationScopes(grants), grants, method: 'jwt' };
    // exp is required above; jwtVerify accepted it up to the clock tolerance past it.
    this.verified.remember(token, principal, ((payload.exp as number) + this.options.clockToleranceSeconds) * 1000);
    return { ...principal };
  }
}

/** OAuth `scope` (space-separated, RFC 9068) or `scp` (array). */
function grantsOf(payload: JWTPayload): Set<string> {
  const raw = payload.scope ?? payload.scp;
  const listed = typeof raw === 'string' ? raw.split(' ') : Array.isArray(raw) ? raw.filter((s): s is string => typeof s === 'string') : [];
  return new Set(listed.filter((s) => s !== ''));
}

/** JSON with object members in sorted order: equal configurations give equal text whatever order they were written in. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) =>
    inner !== null && typeof inner === 'object' && !Array.isArray(inner)
      ? Object.fromEntries(Object.entries(inner as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : inner,
  );
}

function translateJoseError(error: unknown): A2AError {
  if (error instanceof IssuerKeysUnavailable) {
    return new A2AError('UNAVAILABLE', "The token issuer's keys cannot be fetched right now; retry shortly.", { retryAfterSeconds: 5, cause: error });
  }
  if (error instanceof IssuerNotDiscovered) {
    return invalidToken(
      'ISSUER_NOT_DISCOVERED',
      "The token's issuer is trusted, but the gateway has not been able to discover its keys (OpenID Connect discovery); the operator sees why on /readyz. Retry later.",
    );
  }
  if (error instanceof errors.JWTExpired) return invalidToken('TOKEN_EXPIRED', 'The token has expired: get a new one.');
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'nbf' || error.claim === 'iat') {
      return invalidToken('TOKEN_NOT_YET_VALID', `The token is not valid yet ("${error.claim}" is in the future); check the issuer's clock.`);
    }
    if (error.claim === 'aud') return invalidToken('WRONG_AUDIENCE', 'The token is meant for another audience: request one for this gateway.');
    if (error.claim === 'iss') return invalidToken('UNKNOWN_ISSUER', 'The token was not issued by an issuer this gateway trusts.');
    return invalidToken('CLAIM_INVALID', `The token's "${error.claim}" claim is missing or invalid (${error.reason}).`);
  }
  if (error instanceof errors.JOSEAlgNotAllowed || error instanceof errors.JOSENotSupported) {
    return invalidToken('ALGORITHM_NOT_ALLOWED', 'The token is signed with an algorithm this issuer is not allowed to use.');
  }
  if (error instanceof errors.JWKSNoMatchingKey) return invalidToken('UNKNOWN_KEY', 'The token names a signing key ("kid") the issuer does not publish.');
  if (error instanceof errors.JWSSignatureVerificationFailed) return invalidToken('BAD_SIGNATURE', 'The token\'s signature does not verify.');
  if (error instanceof errors.JOSEError) return invalidToken('MALFORMED_TOKEN', `The token cannot be verified: ${error.message}.`);
  throw error;
}
