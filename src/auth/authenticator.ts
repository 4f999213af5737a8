// Who is calling: a partner's signed request (RFC 9421) or a bearer JWT. Runs once per HTTP
// request, from its headers alone, before its body is read: a request without valid
// credentials costs no body buffering and no JSON parsing, and changes nothing. A signed
// request's body is checked against its signed Content-Digest once it has been read.
import { A2AError } from '../protocol/errors.ts';
import { presentedCredentials, type CredentialHeaders } from './credentials.ts';
import { AUTH_REALM, bearerChallenge } from './jwt/challenge.ts';
import { invalidToken, type JwtVerifier } from './jwt/jwt-verifier.ts';
import type { Principal } from './principal.ts';
import type { RequestSignatureVerifier, SignedRequestHead } from './signatures/verify-request.ts';

/** A request as far as authentication reads it: method, target URI and headers. */
export interface CallerRequest extends SignedRequestHead, CredentialHeaders {}

/** The outcome of the headers: the caller, pending (for a signed request) the body's check. */
export interface Authentication {
  /** The caller once the body is known (undefined when authentication is off). */
  complete(body: string): Promise<Principal | undefined>;
  /** The caller when the headers alone decide it (a bearer token, authentication off); absent for a signed request, whose body must be checked first. */
  readonly fromHeaders?: { principal: Principal | undefined };
}

export interface Authenticator {
  /** Authenticates from the headers; throws UNAUTHENTICATED (401, or 400 for ambiguous credentials). */
  authenticate(request: CallerRequest): Promise<Authentication>;
  /** The schemes accepted, for the card: bearer tokens always, signatures when partners exist. */
  readonly acceptsSignatures: boolean;
  /** API keys in X-API-Key (the control plane's: src/control/api-keys.ts). */
  readonly acceptsApiKeys?: boolean;
  readonly enabled: boolean;
}

const settled = (principal: Principal | undefined): Authentication => ({ complete: () => Promise.resolve(principal), fromHeaders: { principal } });

export const AUTHENTICATION_OFF: Authenticator = {
  enabled: false,
  acceptsSignatures: false,
  authenticate: () => Promise.resolve(settled(undefined)),
};

/** Checks an API key; throws UNAUTHENTICATED for one it cannot accept. */
export interface ApiKeyCheck {
  verify(key: string): Principal;
}

export function createAuthenticator(jwt: JwtVerifier, signatures: RequestSignatureVerifier | undefined, apiKeys?: ApiKeyCheck): Authenticator {
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
    acceptsApiKeys: apiKeys !== undefined,
    async authenticate(request) {
      const credentials = presentedCredentials(request);
      if (credentials.kind === 'api-key') {
        if (apiKeys === undefined) {
          throw new A2AError('UNAUTHENTICATED', 'This gateway does not take API keys: send "Authorization: Bearer <token>".', {
            metadata: { reason: 'API_KEYS_NOT_ACCEPTED' },
            headers: { 'WWW-Authenticate': challenges.join(', ') },
          });
        }
        return settled(apiKeys.verify(credentials.key));
      }
      if (credentials.kind === 'signature') {
        if (signatures === undefined) {
          throw new A2AError('UNAUTHENTICATED', 'This gateway has no partners registered: signed requests are not accepted. Send a bearer token.', {
            metadata: { reason: 'SIGNATURES_NOT_ACCEPTED' },
            headers: { 'WWW-Authenticate': challenges.join(', ') },
          });
        }
        const head = await signatures.verifyHead(request);
        return { complete: (body) => head.completeWithBody(body) };
      }
      if (credentials.kind === 'none') throw missing();
      const match = /^Bearer[ ]+([A-Za-z0-9\-._~+/]+=*)\s*$/i.exec(credentials.authorization);
      if (match === null) {
        throw invalidToken('MALFORMED_CREDENTIALS', 'The Authorization header must be "Bearer <token>" (RFC 6750).');
      }
      return settled(await jwt.verify(match[1] as string));
    },
  };
}
