// Verifies the agent card a gateway serves against its JWKS (A2A 1.0, section 8.4): each entry of
// `signatures` is a detached JWS (RFC 7515, appendix F) over the RFC 8785 canonical JSON of the
// card without `signatures` and without empty values. Needs jose and canonicalize (npm install jose canonicalize).
import canonicalize from 'canonicalize';
import { base64url, createRemoteJWKSet, flattenedVerify } from 'jose';

/**
 * Spec 8.4.1: what the signature covers has no empty values (null, "", [] or {}, at any depth),
 * e.g. a security requirement `{ "schemes": { "bearer": { "list": [] } } }` is not signed.
 */
function withoutEmptyValues(value) {
  if (value === null || value === '') return undefined;
  if (Array.isArray(value)) {
    const items = value.map(withoutEmptyValues).filter((item) => item !== undefined);
    return items.length > 0 ? items : undefined;
  }
  if (typeof value === 'object') {
    const entries = Object.entries(value).map(([key, item]) => [key, withoutEmptyValues(item)]).filter(([, item]) => item !== undefined);
    return entries.length > 0 ? Object.fromEntries(entries) : undefined;
  }
  return value;
}

/**
 * Resolves with the key id that signed `card`, or throws. `jwksUrl` is the gateway's
 * /.well-known/jwks.json, taken from configuration you trust: never from the card or its
 * signature header (`jku`), which whoever forged the card would have written too.
 */
export async function verifyAgentCard(card, jwksUrl) {
  const { signatures = [], ...unsigned } = card;
  if (signatures.length === 0) throw new Error('the card is not signed');
  const payload = base64url.encode(canonicalize(withoutEmptyValues(unsigned)));
  const keys = createRemoteJWKSet(new URL(jwksUrl));
  const failures = [];
  for (const { protected: header, signature } of signatures) {
    try {
      const { protectedHeader } = await flattenedVerify({ protected: header, payload, signature }, keys, { algorithms: ['ES256', 'EdDSA'] });
      return protectedHeader.kid;
    } catch (error) {
      failures.push(error.message);
    }
  }
  throw new Error(`no signature of the card verifies against ${jwksUrl}: ${failures.join('; ')}`);
}

/** Fetches the card at `cardUrl` (as an A2A 1.0 client) and verifies it; resolves with the card. */
export async function fetchVerifiedCard(cardUrl, jwksUrl) {
  const response = await fetch(cardUrl, { headers: { 'A2A-Version': '1.0' } });
  if (!response.ok) throw new Error(`GET ${cardUrl} answered ${response.status}`);
  const card = await response.json();
  await verifyAgentCard(card, jwksUrl);
  return card;
}
