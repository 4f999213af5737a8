// Types for verify-caller.mjs, for backends written in TypeScript.
import type { JWTPayload } from 'jose';

export interface CallerVerifierOptions {
  /** The gateway's publicUrl: the tokens' issuer, and where its keys are (/.well-known/jwks.json). */
  gatewayUrl: string;
  /** This backend's own origin, e.g. "https://agent.example.com". */
  audience: string;
}

export function callerVerifier(options: CallerVerifierOptions): (token: string) => Promise<JWTPayload>;
