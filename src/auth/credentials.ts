// Which credentials a request presents, read from its headers alone. A request must present
// one credential, once: two Authorization fields, or a bearer token beside a signature, could
// be read differently by a proxy, a log and this gateway, so such a request is refused
// (RFC 6750 §3.1: "uses more than one method" is invalid_request, 400) instead of choosing one.
import { A2AError } from '../protocol/errors.ts';
import { AUTH_REALM, bearerChallenge } from './jwt/challenge.ts';

export type PresentedCredentials = { kind: 'none' } | { kind: 'bearer'; authorization: string } | { kind: 'signature' } | { kind: 'api-key'; key: string };

/** The header an API key is presented in (src/control/api-keys.ts). */
export const API_KEY_HEADER = 'x-api-key';

/** Thrown for an API key we cannot accept: 401. */
export function invalidApiKey(reason: string, message: string): A2AError {
  return new A2AError('UNAUTHENTICATED', message, { metadata: { reason }, headers: { 'WWW-Authenticate': bearerChallenge() } });
}

export interface CredentialHeaders {
  /** Every occurrence of a header field, in order. */
  headerValues(name: string): string[];
}

function ambiguous(message: string): A2AError {
  return new A2AError('UNAUTHENTICATED', message, {
    httpStatus: 400,
    metadata: { reason: 'AMBIGUOUS_CREDENTIALS' },
    headers: { 'WWW-Authenticate': `${bearerChallenge({ error: 'invalid_request', description: message })}, Signature realm="${AUTH_REALM}"` },
  });
}

export function presentedCredentials(request: CredentialHeaders): PresentedCredentials {
  const authorization = request.headerValues('authorization');
  const signed = request.headerValues('signature').length > 0 || request.headerValues('signature-input').length > 0;
  if (authorization.length > 1) {
    throw ambiguous(`The request carries ${authorization.length} Authorization headers: send exactly one credential.`);
  }
  if (signed && authorization.length === 1) {
    throw ambiguous('The request carries both an Authorization header and an HTTP message signature: send one or the other.');
  }
  const apiKeys = request.headerValues(API_KEY_HEADER);
  if (apiKeys.length > 1) throw ambiguous(`The request carries ${apiKeys.length} X-API-Key headers: send exactly one credential.`);
  if (apiKeys.length === 1 && (signed || authorization.length === 1)) {
    throw ambiguous('The request carries an X-API-Key header beside another credential: send one only.');
  }
  if (signed) return { kind: 'signature' };
  const [key] = apiKeys;
  if (key !== undefined && key.trim() !== '') return { kind: 'api-key', key: key.trim() };
  const [value] = authorization;
  if (value === undefined || value.trim() === '') return { kind: 'none' };
  return { kind: 'bearer', authorization: value };
}
