// The gateway's Ed25519 key that signs webhook deliveries (Standard Webhooks v1a). Generated in
// dataDir on first use (or read from push.signingKeyFile); its public half is published on
// /.well-known/jwks.json. Every worker must sign with the same key: give them the same file.
import { join, resolve } from 'node:path';
import type { JWK } from 'jose';
import type { GatewayConfig } from '../config/schema.ts';
import { loadOrCreatePrivateJwk, readPrivateJwk, signingAlgorithmOf } from '../auth/keys/key-file.ts';

export const PUSH_SIGNING_KEY_FILE = 'push-signing-key.json';

export async function loadPushSigningKey(config: GatewayConfig, baseDir: string): Promise<JWK> {
  if (config.push.signingKeyFile === undefined) {
    return loadOrCreatePrivateJwk(join(resolve(process.cwd(), config.dataDir), PUSH_SIGNING_KEY_FILE), { alg: 'EdDSA', use: 'sig' });
  }
  const path = resolve(baseDir, config.push.signingKeyFile);
  let key: JWK;
  try {
    key = await readPrivateJwk(path);
  } catch (error) {
    throw new Error(`push.signingKeyFile (A2A_PUSH_SIGNING_KEY_FILE): ${(error as Error).message}`);
  }
  if (signingAlgorithmOf(key) !== 'EdDSA') throw new Error(`push.signingKeyFile (A2A_PUSH_SIGNING_KEY_FILE): ${path} must hold an Ed25519 key (Standard Webhooks v1a)`);
  return key;
}
