// The keys one gateway or worker process holds, as its configuration asks for them.
import { join, resolve } from 'node:path';
import type { JWK } from 'jose';
import type { GatewayConfig } from '../../config/schema.ts';
import { loadCallerIdentityKey } from '../caller-identity-key.ts';
import { loadDevIssuer, type DevIssuer } from '../dev-issuer.ts';
import { loadOrCreatePrivateJwk, publicJwkOf, readPrivateJwk, readPublicJwk } from './key-file.ts';

export const CARD_SIGNING_KEY_FILE = 'card-signing-key.json';

export interface GatewayKeys {
  /** Private JWK that signs the agent card; undefined when cardSigning is off. */
  cardSigningKey: JWK | undefined;
  /** Present when authentication is on and no issuer is configured. */
  devIssuer: DevIssuer | undefined;
  /** Public keys for /.well-known/jwks.json: the card signing key's, and the caller identity key's when a backend gets caller tokens. */
  publishedKeys: JWK[];
}

/**
 * Loads (or generates, in dataDir) the keys the configuration calls for. `baseDir` is where
 * cardSigningKeyFile is resolved (the config file's directory); dataDir is relative to the
 * working directory, like every path given on the command line.
 */
export async function loadGatewayKeys(config: GatewayConfig, baseDir: string): Promise<GatewayKeys> {
  const dataDir = resolve(process.cwd(), config.dataDir);

  let cardSigningKey: JWK | undefined;
  if (config.cardSigning) {
    if (config.cardSigningKeyFile !== undefined) {
      const path = resolve(baseDir, config.cardSigningKeyFile);
      try {
        cardSigningKey = await readPrivateJwk(path);
      } catch (error) {
        throw new Error(`cardSigningKeyFile (A2A_CARD_SIGNING_KEY_FILE): ${(error as Error).message}`);
      }
    } else {
      // ES256 rather than EdDSA: it is the algorithm A2A card verifiers most commonly accept.
      cardSigningKey = await loadOrCreatePrivateJwk(join(dataDir, CARD_SIGNING_KEY_FILE), { alg: 'ES256', use: 'sig' });
    }
  }

  const devIssuer = config.auth.enabled && config.auth.issuers.length === 0 ? await loadDevIssuer(dataDir) : undefined;

  // Keys that signed earlier cards stay published for an overlap window after a rotation, so a
  // verifier holding a card (or a JWKS) from before the rotation never fails mid-rotation.
  const previous: JWK[] = [];
  for (const file of config.cardSigningPreviousKeyFiles) {
    try {
      previous.push(await readPublicJwk(resolve(baseDir, file)));
    } catch (error) {
      throw new Error(`cardSigningPreviousKeyFiles: ${(error as Error).message}`);
    }
  }
  // The development issuer's key is not published: its tokens are only for this deployment,
  // which reads the key from dataDir.
  const current = cardSigningKey === undefined ? [] : [publicJwkOf(cardSigningKey)];
  // Backends verify the caller tokens workers sign with this key (src/auth/caller-identity.ts).
  const callerKey = await loadCallerIdentityKey(config, baseDir);
  const callerKeys = callerKey === undefined ? [] : [publicJwkOf(callerKey)];
  for (const file of callerKey === undefined ? [] : config.callerIdentityPublishedKeyFiles) {
    try {
      const key = await readPublicJwk(resolve(baseDir, file));
      if (!callerKeys.some((k) => k.kid === key.kid)) callerKeys.push(key);
    } catch (error) {
      throw new Error(`callerIdentityPublishedKeyFiles: ${(error as Error).message}`);
    }
  }
  const published = [...current, ...previous.filter((key) => !current.some((c) => c.kid === key.kid))];
  return { cardSigningKey, devIssuer, publishedKeys: [...published, ...callerKeys.filter((key) => !published.some((p) => p.kid === key.kid))] };
}
