// `a2a-gateway keys generate`: the private keys a production deployment supplies instead of
// letting each process generate its own in dataDir (which differ between pods, so a card or a
// webhook signed by one would not verify against another's keys): the agent card's signing key,
// the webhook signing key, and a partner's request-signing key pair. Writes them to a folder and
// prints the configuration that uses them.
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { constants, mkdirSync, openSync, writeSync, closeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { calculateJwkThumbprint, type JWK } from 'jose';
import { stringify } from 'yaml';
import { publicJwkOf } from '../auth/keys/key-file.ts';

export interface KeyGenerationOptions {
  /** Folder the key files go to (created when missing). */
  dir: string;
  /** The partner whose request-signing key pair is made (its principal is partner:<id>). */
  partnerId: string;
  /** Replace key files already there; without it an existing file stops the command. */
  force: boolean;
  /** Names the partner's key (its keyid); the date makes a rotation's next key distinct. */
  now?: Date;
}

export interface GeneratedKeys {
  cardSigningKeyFile: string;
  pushSigningKeyFile: string;
  partner: { id: string; keyId: string; privateJwkFile: string; privatePemFile: string; publicJwk: JWK };
  /** The configuration lines to print: variables, then the A2A_CONFIG fragment. */
  configuration: string;
}

export const CARD_SIGNING_KEY_FILE = 'card-signing-key.json';
export const PUSH_SIGNING_KEY_FILE = 'push-signing-key.json';

async function privateJwkOf(key: KeyObject, alg: 'ES256' | 'EdDSA'): Promise<JWK> {
  const jwk = key.export({ format: 'jwk' }) as JWK;
  return { ...jwk, kid: await calculateJwkThumbprint(publicJwkOf(jwk), 'sha256'), alg, use: 'sig' };
}

/** Writes a private file readable by its owner only; refuses to replace one unless forced. */
function writePrivate(path: string, text: string, force: boolean): void {
  let fd: number;
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | (force ? constants.O_TRUNC : constants.O_EXCL), 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new Error(`${path} already exists; keys are not replaced silently (a running deployment may use it). Choose another --dir, or pass --force to replace it.`);
    }
    throw error;
  }
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
}

export async function generateKeys(options: KeyGenerationOptions): Promise<GeneratedKeys> {
  const dir = resolve(options.dir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // P-256 for the card (ES256 is what JWS verifiers support most widely); webhook signatures
  // are Ed25519 by Standard Webhooks' v1a scheme; partners may use either, Ed25519 here.
  const card = await privateJwkOf(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey, 'ES256');
  const push = await privateJwkOf(generateKeyPairSync('ed25519').privateKey, 'EdDSA');
  const partnerPair = generateKeyPairSync('ed25519');
  const partnerJwk = partnerPair.privateKey.export({ format: 'jwk' }) as JWK;
  const keyId = `${options.partnerId}-${(options.now ?? new Date()).toISOString().slice(0, 10)}`;
  const partnerPrivate: JWK = { ...partnerJwk, kid: keyId };

  const cardSigningKeyFile = join(dir, CARD_SIGNING_KEY_FILE);
  const pushSigningKeyFile = join(dir, PUSH_SIGNING_KEY_FILE);
  const privateJwkFile = join(dir, `partner-${options.partnerId}.private.jwk.json`);
  const privatePemFile = join(dir, `partner-${options.partnerId}.private.pem`);
  const files: [string, string][] = [
    [cardSigningKeyFile, `${JSON.stringify(card, null, 2)}\n`],
    [pushSigningKeyFile, `${JSON.stringify(push, null, 2)}\n`],
    [privateJwkFile, `${JSON.stringify(partnerPrivate, null, 2)}\n`],
    [privatePemFile, partnerPair.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()],
  ];
  for (const [path, text] of files) writePrivate(path, text, options.force);

  const publicJwk = publicJwkOf(partnerJwk);
  const partnersFragment = stringify({
    auth: { partners: [{ id: options.partnerId, scopes: ['a2a:read', 'a2a:write'], keys: [{ keyId, publicKey: publicJwk }] }] },
  });
  const configuration = [
    `# Keys written to ${dir} (private: readable by their owner only; store them as secrets).`,
    '# Every gateway and worker must get the same two files, so a signature made by one verifies with the keys any other publishes:',
    `A2A_CARD_SIGNING_KEY_FILE=${cardSigningKeyFile}`,
    `A2A_PUSH_SIGNING_KEY_FILE=${pushSigningKeyFile}`,
    `# Partner "${options.partnerId}" signs its requests (RFC 9421, keyid "${keyId}") with ${privateJwkFile}`,
    `# (or the same key as PEM: ${privatePemFile}); give it that file, and add this to the A2A_CONFIG file:`,
    partnersFragment.trimEnd(),
    '# In Kubernetes, the gateway keys as the Secret deploy/kubernetes mounts:',
    `#   kubectl create secret generic a2a-gateway-keys --from-file=${cardSigningKeyFile} --from-file=${pushSigningKeyFile}`,
    '',
  ].join('\n');
  return { cardSigningKeyFile, pushSigningKeyFile, partner: { id: options.partnerId, keyId, privateJwkFile, privatePemFile, publicJwk }, configuration };
}

export const KEYS_USAGE = `usage: a2a-gateway keys generate [--dir <folder>] [--partner <id>] [--force]
  --dir      where the key files go (default: keys)
  --partner  the partner whose request-signing key pair is made (default: partner)
  --force    replace key files already in the folder`;

/** Parses `keys generate …` arguments; returns the problem as a string when they are wrong. */
export function parseKeysArguments(args: readonly string[]): KeyGenerationOptions | string {
  const [sub, ...rest] = args;
  if (sub !== 'generate') return sub === undefined ? 'missing subcommand' : `unknown subcommand "${sub}"`;
  const options: KeyGenerationOptions = { dir: 'keys', partnerId: 'partner', force: false };
  for (let index = 0; index < rest.length; index += 1) {
    const flag = rest[index];
    if (flag === '--force') {
      options.force = true;
      continue;
    }
    const value = rest[index + 1];
    if ((flag === '--dir' || flag === '--partner') && value !== undefined && !value.startsWith('--')) {
      if (flag === '--dir') options.dir = value;
      else options.partnerId = value;
      index += 1;
      continue;
    }
    return flag === '--dir' || flag === '--partner' ? `${flag} needs a value` : `unknown option "${flag ?? ''}"`;
  }
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(options.partnerId)) {
    return `--partner "${options.partnerId}": letters, digits, "_", "." and "-" only, 1 to 64 characters (it becomes principal partner:<id> and a file name)`;
  }
  return options;
}
