// RFC 6750 §3 challenges: what a client needs to know to come back with a usable token.
export const AUTH_REALM = 'a2a-gateway';

const quoted = (value: string): string => `"${value.replace(/["\\]/g, "'")}"`;

export function bearerChallenge(detail?: { error: 'invalid_token' | 'insufficient_scope' | 'invalid_request'; description: string; scope?: string }): string {
  const parts = [`realm=${quoted(AUTH_REALM)}`];
  if (detail !== undefined) {
    parts.push(`error=${quoted(detail.error)}`, `error_description=${quoted(detail.description)}`);
    if (detail.scope !== undefined) parts.push(`scope=${quoted(detail.scope)}`);
  }
  return `Bearer ${parts.join(', ')}`;
}
