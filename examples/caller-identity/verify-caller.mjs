// Verifying the caller JWT the gateway sends a backend (agent setting callerIdentity), with jose:
// the gateway's keys are at <gateway publicUrl>/.well-known/jwks.json, the issuer is that URL,
// and the audience is this backend's own origin (the origin the gateway is configured to call).
import { createRemoteJWKSet, jwtVerify } from 'jose';

/** Returns verify(token) → the token's claims, or a rejection (bad signature, wrong iss/aud, expired…). */
export function callerVerifier({ gatewayUrl, audience }) {
  const keys = createRemoteJWKSet(new URL(`${gatewayUrl}/.well-known/jwks.json`));
  return async (token) => (await jwtVerify(token, keys, { issuer: gatewayUrl, audience, typ: 'a2a-caller+jwt' })).payload;
}
