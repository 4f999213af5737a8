// How the gateway authenticates callers, from the auth settings: bearer JWTs of the configured
// issuers (or of the local development issuer when none is), HTTP message signatures of
// configured partners, or nobody at all; the risky choices are said out loud at start.
import { AUTHENTICATION_OFF, createAuthenticator, type Authenticator } from '../auth/authenticator.ts';
import type { DevIssuer } from '../auth/dev-issuer.ts';
import { JwtVerifier } from '../auth/jwt/jwt-verifier.ts';
import { RequestSignatureVerifier } from '../auth/signatures/verify-request.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { Logger } from '../logging/logger.ts';
import type { RedisClient } from '../redis/connection.ts';
import { ApiKeyVerifier } from '../control/api-keys.ts';
import type { ControlView } from '../control/control-view.ts';
import { connectLiveCredentials } from '../control/live-credentials.ts';

/** How callers are authenticated, and the JWT verifier behind it (undefined when authentication is off). */
export interface GatewayAuthentication {
  authenticator: Authenticator;
  /** Its trusted issuers can be replaced at run time (replaceIssuers); their state is /readyz's admin detail; close() stops their discovery. */
  jwt: JwtVerifier | undefined;
}

/**
 * With the control plane's `view`, partners and issuers written through the admin API count as
 * configured ones (src/control/live-credentials.ts) and API keys are taken; signed requests are
 * then always checked, since a partner may be registered at any time.
 */
export function createGatewayAuthenticator(config: GatewayConfig, devIssuer: DevIssuer | undefined, redis: RedisClient, baseDir: string, logger: Logger, view?: ControlView): GatewayAuthentication {
  const authentication = authenticationOf(config, devIssuer, redis, baseDir, logger, view);
  const { authenticator } = authentication;
  if (!authenticator.enabled) {
    logger.warn('authentication is OFF (auth.enabled=false): every caller is anonymous and the agent card declares no security');
  } else if (devIssuer !== undefined) {
    logger.warn(
      `NO TOKEN ISSUER CONFIGURED: accepting tokens of the local DEVELOPMENT issuer, whose key is in ${devIssuer.keyFile}; anyone who can read that file can mint tokens. For local use only: configure auth.issuers before exposing this gateway (it refuses to start like this when NODE_ENV=production or production=true).`,
    );
  }
  return authentication;
}

function authenticationOf(config: GatewayConfig, devIssuer: DevIssuer | undefined, redis: RedisClient, baseDir: string, logger: Logger, view: ControlView | undefined): GatewayAuthentication {
  const { auth } = config;
  if (!auth.enabled) return { authenticator: AUTHENTICATION_OFF, jwt: undefined };
  const issuers = devIssuer === undefined ? auth.issuers : [devIssuer.issuerConfig()];
  const jwt = new JwtVerifier({
    issuers,
    clockToleranceSeconds: auth.clockToleranceSeconds,
    jwksCacheSeconds: auth.jwksCacheSeconds,
    verifiedTokenCacheEntries: auth.verifiedTokenCacheEntries,
    discoveryRefreshSeconds: auth.discoveryRefreshSeconds,
    issuerFetchTimeoutMs: auth.issuerFetchTimeoutMs,
    issuerFetchMaxBytes: auth.issuerFetchMaxBytes,
    baseDir,
    logger,
  });
  const signatures =
    auth.partners.length === 0 && view === undefined
      ? undefined
      : new RequestSignatureVerifier({
          partners: auth.partners,
          redis,
          keyPrefix: config.keyPrefix,
          maxAgeSeconds: auth.signatureMaxAgeSeconds,
          clockToleranceSeconds: auth.clockToleranceSeconds,
        });
  if (view === undefined || signatures === undefined) return { authenticator: createAuthenticator(jwt, signatures), jwt };
  connectLiveCredentials({ view, configPartners: auth.partners, configIssuers: issuers, signatures, jwt, logger });
  return { authenticator: createAuthenticator(jwt, signatures, new ApiKeyVerifier(view)), jwt };
}
