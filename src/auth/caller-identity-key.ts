// The key that signs caller tokens to backends: a file the operator gives every gateway and
// worker (callerIdentityKeyFile), else one generated in dataDir. Loaded only when some agent or
// role has callerIdentity on, so a deployment that never uses it gets no key file.
import { join, resolve } from 'node:path';
import type { JWK } from 'jose';
import type { GatewayConfig } from '../config/schema.ts';
import { CallerTokenSigner } from './caller-identity.ts';
import { loadOrCreatePrivateJwk, readPrivateJwk } from './keys/key-file.ts';

export const CALLER_IDENTITY_KEY_FILE = 'caller-identity-key.json';

/** Names of the agents and roles whose backends get the caller token ("agent x", "role y"). */
export function callerIdentityUsers(config: GatewayConfig): string[] {
  const agents = Object.entries(config.agents ?? {})
    .filter(([, agent]) => agent.callerIdentity.enabled)
    .map(([name]) => `agent "${name}"`);
  const roles = Object.entries(config.delegation.roles)
    .filter(([, role]) => role.callerIdentity.enabled)
    .map(([name]) => `role "${name}"`);
  return [...agents, ...roles];
}

/** The private key, or undefined when no backend gets caller tokens. */
export async function loadCallerIdentityKey(config: GatewayConfig, baseDir: string): Promise<JWK | undefined> {
  if (callerIdentityUsers(config).length === 0) return undefined;
  if (config.callerIdentityKeyFile !== undefined) {
    try {
      return await readPrivateJwk(resolve(baseDir, config.callerIdentityKeyFile));
    } catch (error) {
      throw new Error(`callerIdentityKeyFile (A2A_CALLER_IDENTITY_KEY_FILE): ${(error as Error).message}`);
    }
  }
  // ES256: the algorithm JWT libraries of every language verify.
  return loadOrCreatePrivateJwk(join(resolve(process.cwd(), config.dataDir), CALLER_IDENTITY_KEY_FILE), { alg: 'ES256', use: 'sig' });
}

/**
 * The signer workers use, or undefined when no backend gets caller tokens. The issuer is the
 * gateway's publicUrl, which must be set: a worker does not know where clients reach the
 * gateway, and a backend finds the keys under it.
 */
export async function loadCallerTokenSigner(config: GatewayConfig, baseDir: string): Promise<CallerTokenSigner | undefined> {
  const users = callerIdentityUsers(config);
  if (users.length === 0) return undefined;
  if (config.publicUrl === undefined) {
    throw new Error(
      `callerIdentity is on for ${users.join(', ')}, but publicUrl (A2A_PUBLIC_URL) is not set: ` +
        'the caller token names the gateway by it (iss), and backends fetch its keys from <publicUrl>/.well-known/jwks.json. Set publicUrl on every gateway and worker.',
    );
  }
  return CallerTokenSigner.create((await loadCallerIdentityKey(config, baseDir)) as JWK, config.publicUrl);
}
