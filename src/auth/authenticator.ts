// Who is calling: a partner's signed request (RFC 9421) or a bearer JWT. Runs once per HTTP
// request, before any operation, so an unauthenticated request changes nothing.
import { A2AError } from '../protocol/errors.ts';
import { AUTH_REALM, bearerChallenge } from './jwt/challenge.ts';
import { invalidToken, type JwtVerifier } from './jwt/jwt-verifier.ts';
import type { Principal } from './principal.ts';
import { RequestSignatureVerifier, type SignedRequestInput } from './signatures/verify-request.ts';

export type CallerRequest = SignedRequestInput;

export interface Authenticator {
  /** The caller, or undefined when authentication is off (operations then use the anonymous principal). */
  authenticate(request: CallerRequest): Promise<Principal | undefined>;
  /** The schemes accepted, for the card: bearer tokens always, signatures when partners exist. */
  readonly acceptsSignatures: boolean;
  readonly enabled: boolean;
}

export const AUTHENTICATION_OFF: Authenticator = {
  enabled: false,
  acceptsSignatures: false,
  authenticate: () => Promise.resolve(undefined),
};

export function createAuthenticator(jwt: JwtVerifier, signatures: RequestSignatureVerifier | undefined): Authenticator {
  const challenges = [bearerChallenge()];
  if (signatures !== undefined) challenges.push(`Signature realm="${AUTH_REALM}"`);
  const missing = (): A2AError =>
    new A2AError(
      'UNAUTHENTICATED',
      signatures === undefined
        ? 'This request carries no credentials: send "Authorization: Bearer <token>".'
        : 'This request carries no credentials: send "Authorization: Bearer <token>", or sign it as a registered partner (RFC 9421).',
      { metadata: { reason: 'CREDENTIALS_MISSING' }, headers: { 'WWW-Authenticate': challenges.join(', ') } },
    );
  return {
    enabled: true,
    acceptsSignatures: signatures !== undefined,
    async authenticate(request) {
      if (RequestSignatureVerifier.isSigned(request)) {
        if (signatures === undefined) {
          throw new A2AError('UNAUTHENTICATED', 'This gateway has no partners registered: signed requests are not accepted. Send a bearer token.', {
            metadata: { reason: 'SIGNATURES_NOT_ACCEPTED' },
            headers: { 'WWW-Authenticate': challenges.join(', ') },
          });
        }
        return signatures.verify(request);
      }
      const authorization = request.header('authorization');
      if (authorization === undefined || authorization.trim() === '') throw missing();
      const match = /^Bearer[ ]+([A-Za-z0-9\-._~+/]+=*)\s*$/i.exec(authorization);
      if (match === null) {
        throw invalidToken('MALFORMED_CREDENTIALS', 'The Authorization header must be "Bearer <token>" (RFC 6750).');
      }
      return jwt.verify(match[1] as string);
    },
  };
}
