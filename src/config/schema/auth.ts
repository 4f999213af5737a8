// Authentication settings: trusted token issuers, signing partners, and their tolerances.
import { z } from 'zod';
import { scope } from './scopes.ts';
import { booleanish, shortName } from './values.ts';

/** A JSON Web Key as configured (public keys only; validated again when imported). */
const jwk = z.looseObject({ kty: z.string().min(1) });

export const JWT_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;

/** Loopback host names and addresses: the one place a plain-http issuer is accepted (a sidecar or a test provider). */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return host === 'localhost' || host.endsWith('.localhost') || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * Why `url` may not be fetched for an issuer's metadata or keys, or undefined when it may: an
 * https URL without credentials or fragment, or plain http to a loopback host when
 * `allowLoopback` (never for a URL that a remote document named on behalf of a public issuer).
 */
export function issuerUrlProblem(url: string, allowLoopback = true): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `${JSON.stringify(url)} is not a URL`;
  }
  if (parsed.username !== '' || parsed.password !== '') return `${parsed.origin} must not carry credentials in the URL`;
  if (parsed.hash !== '') return `${JSON.stringify(url)} must not have a fragment`;
  const loopback = isLoopbackHost(parsed.hostname);
  if (loopback && !allowLoopback) return `${parsed.origin} is a loopback address, which only an issuer on loopback itself may name`;
  if (parsed.protocol === 'https:') return undefined;
  if (parsed.protocol === 'http:' && loopback) return undefined;
  return `${JSON.stringify(url)} must be an https URL (plain http only to localhost or 127.0.0.1)`;
}

/**
 * A trusted token issuer. At most one of jwksUri, jwks and jwksFile names its keys; with none,
 * the issuer is discovered (OpenID Connect Discovery): its `issuer` must then be an https URL,
 * whose /.well-known/openid-configuration names the JWKS.
 */
export const issuerSchema = z
  .strictObject({
    /** Short name: part of every owner id this issuer's tokens create (so equal subjects of two issuers never share tasks). */
    id: shortName,
    /** The exact `iss` claim; with no jwksUri, jwks or jwksFile, also the URL its keys are discovered from (https). */
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
  .superRefine((i, ctx) => {
    const sources = [i.jwksUri, i.jwks, i.jwksFile].filter((v) => v !== undefined).length;
    if (sources > 1) ctx.addIssue({ code: 'custom', message: 'set at most one of jwksUri, jwks and jwksFile (none: the keys are discovered from the issuer URL)' });
    if (sources > 0) return;
    const problem = issuerUrlProblem(i.issuer);
    if (problem !== undefined || new URL(i.issuer).search !== '') {
      ctx.addIssue({
        code: 'custom',
        path: ['issuer'],
        message: `an issuer without jwksUri, jwks or jwksFile is discovered from its URL, so it must be an https URL without query or fragment: ${problem ?? 'it has a query'}`,
      });
    }
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
  /** How often an issuer configured by its URL alone is discovered again (its jwks_uri re-read); a failed discovery is retried sooner, with backoff. */
  discoveryRefreshSeconds: z.coerce.number().int().min(10).max(86_400).default(3600),
  /** The longest one fetch of an issuer's discovery document or JWKS may take, body included. */
  issuerFetchTimeoutMs: z.coerce.number().int().min(100).max(60_000).default(5000),
  /** The most bytes one discovery document or JWKS may have; a larger answer is refused (unread when it declares its length, else cut off at the bound). */
  issuerFetchMaxBytes: z.coerce.number().int().min(1024).max(16 * 1024 * 1024).default(256 * 1024),
});
