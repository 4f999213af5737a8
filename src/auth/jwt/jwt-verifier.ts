// Bearer JWTs from configured issuers (jose). Each token is checked against exactly the issuer
// its `iss` names: that issuer's keys, audience and algorithm allow-list, so a key or an
// algorithm trusted for one issuer never validates another's tokens.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  errors,
  jwtVerify,
  type JSONWebKeySet,
  type JWTPayload,
  type JWTVerifyGetKey,
} from 'jose';
import type { IssuerConfig } from '../../config/schema.ts';
import { A2AError } from '../../protocol/errors.ts';
import { operationScopes, userSubject, type Principal } from '../principal.ts';
import { bearerChallenge } from './challenge.ts';
import { VerifiedTokens } from './verified-tokens.ts';
import { KeyFetchFailures } from './key-fetch-failures.ts';
import type { Logger } from '../../logging/logger.ts';

export interface JwtVerifierOptions {
  issuers: IssuerConfig[];
  clockToleranceSeconds: number;
  jwksCacheSeconds: number;
  /** Directory jwksFile paths are relative to. */
  baseDir: string;
  /** Verified tokens kept so a re-sent token skips the signature check (0 = verify every time). */
  verifiedTokenCacheEntries?: number;
  /** Where a failed JWKS fetch is reported (rate-limited per issuer); none: not reported. */
  logger?: Logger;
}

interface TrustedIssuer {
  config: IssuerConfig;
  keys: JWTVerifyGetKey;
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

export class JwtVerifier {
  private readonly issuers = new Map<string, TrustedIssuer>();
  private verified: VerifiedTokens;
  private readonly failures: KeyFetchFailures;

  constructor(private readonly options: JwtVerifierOptions) {
    this.verified = new VerifiedTokens(options.verifiedTokenCacheEntries ?? 0, options.jwksCacheSeconds * 1000);
    const failures = new KeyFetchFailures(options.logger);
    this.failures = failures;
    for (const config of options.issuers) {
      if (this.issuers.has(config.issuer)) throw new Error(`Two configured issuers have the same "issuer" ${config.issuer}; merge them.`);
      this.issuers.set(config.issuer, { config, keys: keySetOf(config, options, failures) });
    }
  }

  /**
   * Trusts exactly `issuers` from now on (the control plane's live set: src/control/). An issuer
   * whose settings did not change keeps its fetched keys; the verified tokens are forgotten, so a
   * token of an issuer just removed is refused from the next request on.
   */
  replaceIssuers(issuers: readonly IssuerConfig[]): void {
    const next = new Map<string, TrustedIssuer>();
    for (const config of issuers) {
      if (next.has(config.issuer)) throw new Error(`Two issuers have the same "issuer" ${config.issuer}; merge them.`);
      const kept = this.issuers.get(config.issuer);
      next.set(config.issuer, kept !== undefined && JSON.stringify(kept.config) === JSON.stringify(config) ? kept : { config, keys: keySetOf(config, this.options, this.failures) });
    }
    this.issuers.clear();
    for (const [issuer, trusted] of next) this.issuers.set(issuer, trusted);
    this.verified = new VerifiedTokens(this.options.verifiedTokenCacheEntries ?? 0, this.options.jwksCacheSeconds * 1000);
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
      ({ payload } = await jwtVerify(token, trusted.keys, {
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

function keySetOf(config: IssuerConfig, options: JwtVerifierOptions, failures: KeyFetchFailures): JWTVerifyGetKey {
  if (config.jwksUri !== undefined) {
    const jwksUri = config.jwksUri;
    // jose refetches on an unknown kid (after a 30 s cooldown) and once the cache is stale,
    // which is how rotation reaches us.
    const remote = createRemoteJWKSet(new URL(config.jwksUri), { cacheMaxAge: options.jwksCacheSeconds * 1000, timeoutDuration: 5000 });
    return async (header, token) => {
      let key: Awaited<ReturnType<typeof remote>>;
      try {
        key = await remote(header, token);
      } catch (error) {
        // Choosing among the keys can fail on the token (no such kid); anything else is the
        // issuer's endpoint failing, which says nothing about the token.
        if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys || error instanceof errors.JOSENotSupported) throw error;
        failures.failed({ id: config.id, issuer: config.issuer, jwksUri }, error);
        throw new IssuerKeysUnavailable(config.id, error);
      }
      failures.recovered(config.id);
      return key;
    };
  }
  if (config.jwks !== undefined) return createLocalJWKSet(config.jwks as JSONWebKeySet);
  const path = resolve(options.baseDir, config.jwksFile as string);
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`Issuer ${config.id}: jwksFile ${path} cannot be read as JSON (${(error as Error).message}).`);
  }
  return createLocalJWKSet(parsed as JSONWebKeySet);
}

/** The issuer's keys could not be fetched: a retryable outage, not a bad token. */
class IssuerKeysUnavailable extends Error {
  constructor(issuerId: string, cause: unknown) {
    super(`The keys of issuer ${issuerId} cannot be fetched: ${(cause as Error).message}`, { cause });
    this.name = 'IssuerKeysUnavailable';
  }
}

function translateJoseError(error: unknown): A2AError {
  if (error instanceof IssuerKeysUnavailable) {
    return new A2AError('UNAVAILABLE', "The token issuer's keys cannot be fetched right now; retry shortly.", { retryAfterSeconds: 5, cause: error });
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
