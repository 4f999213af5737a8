// The gateway's Ed25519 keys that sign webhook deliveries (Standard Webhooks v1a). The current
// key is generated in dataDir on first use (or read from push.signingKeyFile); the keys of
// push.signingPreviousKeyFiles signed before a rotation and keep signing beside it for the
// overlap. Every public half is published on /.well-known/jwks.json. Every worker must sign with
// the same keys: give them the same files.
import { join, resolve } from 'node:path';
import type { JWK } from 'jose';
import type { GatewayConfig } from '../config/schema.ts';
import { loadOrCreatePrivateJwk, readPrivateJwk, signingAlgorithmOf } from '../auth/keys/key-file.ts';
import type { PushStore } from '../store/push/push-store.ts';

export const PUSH_SIGNING_KEY_FILE = 'push-signing-key.json';

export interface PushSigningKeys {
  current: JWK;
  /** Keys of earlier rotations, not the current one. */
  previous: JWK[];
}

async function readEd25519(path: string, setting: string): Promise<JWK> {
  let key: JWK;
  try {
    key = await readPrivateJwk(path);
  } catch (error) {
    throw new Error(`${setting}: ${(error as Error).message}`);
  }
  if (signingAlgorithmOf(key) !== 'EdDSA') throw new Error(`${setting}: ${path} must hold an Ed25519 key (Standard Webhooks v1a)`);
  return key;
}

export async function loadPushSigningKey(config: GatewayConfig, baseDir: string): Promise<JWK> {
  if (config.push.signingKeyFile === undefined) {
    return loadOrCreatePrivateJwk(join(resolve(process.cwd(), config.dataDir), PUSH_SIGNING_KEY_FILE), { alg: 'EdDSA', use: 'sig' });
  }
  return readEd25519(resolve(baseDir, config.push.signingKeyFile), 'push.signingKeyFile (A2A_PUSH_SIGNING_KEY_FILE)');
}

export async function loadPushSigningKeys(config: GatewayConfig, baseDir: string): Promise<PushSigningKeys> {
  const current = await loadPushSigningKey(config, baseDir);
  const previous: JWK[] = [];
  for (const file of config.push.signingPreviousKeyFiles) {
    const key = await readEd25519(resolve(baseDir, file), 'push.signingPreviousKeyFiles (A2A_PUSH_SIGNING_PREVIOUS_KEY_FILES)');
    if (key.kid !== current.kid && !previous.some((p) => p.kid === key.kid)) previous.push(key);
  }
  return { current, previous };
}

/**
 * Until when (ms) the previous keys sign beside the current one: signingKeyOverlapSeconds from
 * the moment the current key first signed, which the first process to sign with it records in
 * Redis for all (a restart does not reopen the overlap).
 */
export async function previousKeysSignUntil(store: Pick<PushStore, 'signingKeyFirstUsedAt'>, keys: PushSigningKeys, overlapSeconds: number, nowMs: number = Date.now()): Promise<number> {
  if (keys.previous.length === 0 || overlapSeconds === 0) return 0;
  const since = await store.signingKeyFirstUsedAt(keys.current.kid ?? '', nowMs);
  return since + overlapSeconds * 1000;
}
