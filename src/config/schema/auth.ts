// Authentication settings: trusted token issuers, signing partners, and their tolerances.
import { z } from 'zod';
import { scope } from './scopes.ts';
import { booleanish, shortName } from './values.ts';

/** A JSON Web Key as configured (public keys only; validated again when imported). */
const jwk = z.looseObject({ kty: z.string().min(1) });

export const JWT_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;

/** A trusted token issuer. Exactly one of jwksUri, jwks and jwksFile names its keys. */
export const issuerSchema = z
  .strictObject({
    /** Short name: part of every owner id this issuer's tokens create (so equal subjects of two issuers never share tasks). */
    id: shortName,
    /** The exact `iss` claim. */
    issuer: z.string().min(1),
    /** Accepted `aud` values: a token must carry one of them. */
    audience: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
    /** Remote JWKS, cached and refetched when a token names an unknown `kid` (key rotation). */
    jwksUri: z.string().url().optional(),
    /** Inline JWKS. */
    jwks: z
      .object({
        /** Public JWKs. */
        keys: z.array(jwk).min(1),
      })
      .optional(),
    /** JWKS file (relative to the config file). */
    jwksFile: z.string().min(1).optional(),
    /** Allowed `alg` values; anything else (`none`, HS256 …) is refused before any key is used. */
    algorithms: z.array(z.enum(JWT_ALGORITHMS)).min(1).default(['RS256', 'ES256', 'EdDSA']),
    /** Claims every token must carry besides iss, aud, sub and exp. */
    requiredClaims: z.array(z.string().min(1)).default([]),
    /** Claim holding the caller's tenant (absent = the default tenant ""). */
    tenantClaim: z.string().min(1).default('tenant'),
  })
  .refine((i) => [i.jwksUri, i.jwks, i.jwksFile].filter((v) => v !== undefined).length === 1, {
    message: 'set exactly one of jwksUri, jwks and jwksFile',
  });
export type IssuerConfig = z.infer<typeof issuerSchema>;

/** A partner that signs its requests (RFC 9421) instead of sending a token. */
export const partnerSchema = z.strictObject({
  /** The partner becomes principal `partner:<id>`. */
  id: shortName,
  /** Its public keys by `keyid`; several allow rotation. Ed25519 (OKP) or ECDSA P-256 (EC) JWKs. */
  keys: z
    .array(
      z.object({
        /** The `keyid` its signatures name. */
        keyId: z.string().min(1),
        /** Public JWK. */
        publicKey: jwk,
      }),
    )
    .min(1),
  /** What the partner may do (scopes, as a token would grant them). */
  scopes: z.array(scope).min(1),
  /** The tenant the partner acts in. */
  tenant: z.string().default(''),
});
export type PartnerConfig = z.infer<typeof partnerSchema>;

export const authSchema = z.strictObject({
  /** false turns authentication off (logged as a warning at start; the card then declares no security). */
  enabled: booleanish.default(true),
  /** Trusted issuers; with none, a local development issuer is created in dataDir (npm run token). */
  issuers: z.array(issuerSchema).default([]),
  /** Partners that sign their requests (RFC 9421) instead of sending a token. */
  partners: z.array(partnerSchema).default([]),
  /** Leeway for exp/nbf/iat. */
  clockToleranceSeconds: z.coerce.number().int().min(0).max(600).default(30),
  /** A signed request's `created` must be this recent (and not in the future beyond the clock tolerance); nonces are kept this long. */
  signatureMaxAgeSeconds: z.coerce.number().int().min(1).max(3600).default(300),
  /** How long a fetched remote JWKS is trusted before it is fetched again. */
  jwksCacheSeconds: z.coerce.number().int().min(1).default(600),
  /**
   * Bearer tokens kept after they verified, so a token sent again skips the signature check until
   * its exp (plus clockToleranceSeconds) or for jwksCacheSeconds, whichever ends first (0 = verify every request).
   */
  verifiedTokenCacheEntries: z.coerce.number().int().min(0).max(1_000_000).default(10_000),
});
