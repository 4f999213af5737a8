// Why an issuer's keys could not be had for a token: said apart from a bad token, because the
// caller's right answer differs (retry later, or ask the operator), not get a new token.

/** The issuer's keys could not be fetched: a retryable outage, not a bad token (503). */
export class IssuerKeysUnavailable extends Error {
  override readonly name = 'IssuerKeysUnavailable';

  constructor(issuerId: string, cause: unknown) {
    super(`The keys of issuer ${issuerId} cannot be fetched: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/**
 * An issuer configured by its URL alone whose discovery has never succeeded: no key of it is
 * known, so none of its tokens can be verified (401; the cause is logged and on /readyz).
 */
export class IssuerNotDiscovered extends Error {
  override readonly name = 'IssuerNotDiscovered';

  constructor(issuerId: string, cause: string | undefined) {
    super(`Issuer ${issuerId} has not been discovered yet${cause === undefined ? '' : `: ${cause}`}`);
  }
}
