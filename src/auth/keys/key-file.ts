// Private keys the gateway generates for itself (the development issuer's, the card signing
// key) live as JWK files in the data directory, readable by their owner only.
import { randomBytes } from 'node:crypto';
import { link, mkdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';

export type SigningAlgorithm = 'EdDSA' | 'ES256';

export interface KeyFileOptions {
  /** Used only when the file has to be created; an existing file must hold a key for it. */
  alg: SigningAlgorithm;
  use: 'sig';
}

/** Members a public JWK may carry; everything else (d, p, q, dp, dq, qi, oth, k, key_ops …) stays private. */
const PUBLIC_MEMBERS = ['kty', 'crv', 'x', 'y', 'n', 'e', 'kid', 'alg', 'use'] as const;

export function publicJwkOf(privateJwk: JWK): JWK {
  const publicJwk: JWK = {};
  for (const member of PUBLIC_MEMBERS) {
    const value = privateJwk[member];
    if (value !== undefined) (publicJwk as Record<string, unknown>)[member] = value;
  }
  return publicJwk;
}

/** The JWS algorithm a key signs with: its `alg`, else what its curve implies. */
export function signingAlgorithmOf(jwk: JWK): SigningAlgorithm {
  const implied = jwk.kty === 'OKP' && jwk.crv === 'Ed25519' ? 'EdDSA' : jwk.kty === 'EC' && jwk.crv === 'P-256' ? 'ES256' : undefined;
  if (implied === undefined) {
    throw new Error(`unsupported key type ${jwk.kty ?? '(none)'}${jwk.crv ? `/${jwk.crv}` : ''}: use an Ed25519 (OKP) or P-256 (EC) key`);
  }
  // RFC 9864's fully specified "Ed25519" names the same algorithm as EdDSA with an Ed25519 key.
  const declared = jwk.alg === 'Ed25519' ? 'EdDSA' : jwk.alg;
  if (declared !== undefined && declared !== implied) {
    throw new Error(`the key says alg "${jwk.alg}", but a ${jwk.kty}/${jwk.crv} key signs with ${implied}`);
  }
  return implied;
}

/**
 * Reads a private signing JWK file and checks it is usable: Ed25519 or P-256, private part
 * present, importable. A missing `kid` or `use` is filled in (kid = RFC 7638 thumbprint).
 */
export async function readPrivateJwk(path: string): Promise<JWK> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new Error(`cannot read the key file ${path}: ${(error as Error).message}`);
  }
  return parsePrivateJwk(text, path);
}

async function parsePrivateJwk(text: string, path: string): Promise<JWK> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`the key file ${path} is not JSON (it must hold one private JWK)`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new Error(`the key file ${path} must hold one private JWK object`);
  }
  const jwk = parsed as JWK;
  if (typeof jwk.d !== 'string' || jwk.d === '') {
    throw new Error(`the key file ${path} holds no private key (the JWK has no "d"); it needs the private JWK, not the public one`);
  }
  let alg: SigningAlgorithm;
  try {
    alg = signingAlgorithmOf(jwk);
    await importJWK(jwk, alg);
  } catch (error) {
    throw new Error(`the key file ${path} holds no usable signing key: ${(error as Error).message}`);
  }
  return {
    ...jwk,
    kid: jwk.kid ?? (await calculateJwkThumbprint(publicJwkOf(jwk), 'sha256')),
    // "Ed25519" becomes "EdDSA": the name the JWS headers and most verifiers use.
    alg,
    use: jwk.use ?? 'sig',
  };
}

/**
 * The private JWK in `path`, generated and stored (mode 0600) when there is none yet.
 *
 * A gateway and a worker sharing the data directory may both find the file missing and both
 * generate a key; only one may win, or tokens minted by one would fail at the other. So the
 * key is written completely to a private temp file first and then hard-linked into place,
 * which fails if the file already exists; the loser reads the winner's key. Readers therefore
 * never see a half-written file either.
 */
export async function loadOrCreatePrivateJwk(path: string, options: KeyFileOptions): Promise<JWK> {
  const existing = await readIfPresent(path);
  if (existing !== undefined) return checkAlgorithm(await parsePrivateJwk(existing, path), path, options.alg);

  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const text = `${JSON.stringify(await generatePrivateJwk(options), null, 2)}\n`;
  const temp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  await writeFile(temp, text, { mode: 0o600, flag: 'wx' });
  try {
    await link(temp, path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EPERM' || code === 'ENOTSUP' || code === 'EOPNOTSUPP' || code === 'ENOSYS') {
      // Some mounted file systems have no hard links; exclusive create still picks one winner.
      await writeFile(path, text, { mode: 0o600, flag: 'wx' }).catch((fallbackError: NodeJS.ErrnoException) => {
        if (fallbackError.code !== 'EEXIST') throw fallbackError;
      });
    } else if (code !== 'EEXIST') {
      throw new Error(`cannot store the generated key at ${path}: ${(error as Error).message}`);
    }
  } finally {
    await unlink(temp).catch(() => undefined);
  }
  return checkAlgorithm(await readSettled(path), path, options.alg);
}

async function generatePrivateJwk(options: KeyFileOptions): Promise<JWK> {
  const { privateKey } = await generateKeyPair(options.alg, { extractable: true });
  const exported = await exportJWK(privateKey);
  const jwk: JWK = { ...publicJwkOf(exported), d: exported.d };
  return { ...jwk, kid: await calculateJwkThumbprint(publicJwkOf(jwk), 'sha256'), alg: options.alg, use: options.use };
}

async function readIfPresent(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`cannot read the key file ${path}: ${(error as Error).message}`);
  }
}

/**
 * Reads the file another process just created. Only the no-hard-link fallback can expose a
 * file still being written, so an unparsable read is retried briefly before it counts.
 */
async function readSettled(path: string): Promise<JWK> {
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await parsePrivateJwk(await readFile(path, 'utf8'), path);
    } catch (error) {
      if (attempt >= 20) throw error;
      await sleep(50);
    }
  }
}

function checkAlgorithm(jwk: JWK, path: string, expected: SigningAlgorithm): JWK {
  const actual = signingAlgorithmOf(jwk);
  if (actual !== expected) {
    throw new Error(`the key file ${path} holds an ${actual} key where an ${expected} key belongs; move it away to have a new key generated`);
  }
  return jwk;
}

/**
 * The public part of the JWK in `path` (a private or a public key file), with its kid: what a
 * verifier needs of a key that signed earlier cards (cardSigningPreviousKeyFiles).
 */
export async function readPublicJwk(path: string): Promise<JWK> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    throw new Error(`the key file ${path} cannot be read as JSON (${(error as Error).message})`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error(`the key file ${path} must hold one JWK object`);
  const jwk = publicJwkOf(parsed as JWK);
  let alg: SigningAlgorithm;
  try {
    alg = signingAlgorithmOf(jwk);
    await importJWK(jwk, alg);
  } catch (error) {
    throw new Error(`the key file ${path} holds no usable verification key: ${(error as Error).message}`);
  }
  return { ...jwk, kid: jwk.kid ?? (await calculateJwkThumbprint(jwk, 'sha256')), alg, use: 'sig' };
}
