// Client side of partner-signed requests (RFC 9421 + RFC 9530): what a partner runs to call the
// gateway without a bearer token. Kept free of gateway internals (no config, no Redis) so the
// example and partners' own code can import it on its own.
import { createHash, createPrivateKey, KeyObject, randomBytes, type JsonWebKey } from 'node:crypto';
import { createSigner, httpbis } from 'http-message-signatures';

export type SignatureAlgorithm = 'ed25519' | 'ecdsa-p256-sha256';
export type DigestAlgorithm = 'sha-256' | 'sha-512';

/** Components every signature must cover: together they bind method, full URI and body. */
export const REQUIRED_COMPONENTS = ['@method', '@target-uri', 'content-digest'] as const;
/** Signature parameters every signature must carry: freshness, which key, and replay protection. */
export const REQUIRED_PARAMETERS = ['created', 'keyid', 'nonce'] as const;

const DIGEST_HASHES: Record<DigestAlgorithm, string> = { 'sha-256': 'sha256', 'sha-512': 'sha512' };

export function digestOf(body: string | Uint8Array, algorithm: DigestAlgorithm): Buffer {
  return createHash(DIGEST_HASHES[algorithm]).update(body).digest();
}

/** RFC 9530 `Content-Digest` value for the exact body bytes (an empty body has a digest too). */
export function contentDigest(body: string | Uint8Array, algorithm: DigestAlgorithm = 'sha-256'): string {
  return `${algorithm}=:${digestOf(body, algorithm).toString('base64')}:`;
}

/** The algorithm a key can produce or check, or undefined for a key type we do not accept. */
export function algorithmOfKey(key: KeyObject): SignatureAlgorithm | undefined {
  if (key.asymmetricKeyType === 'ed25519') return 'ed25519';
  if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') return 'ecdsa-p256-sha256';
  return undefined;
}

/**
 * `@target-uri` is compared as a string, so both sides serialise it the same way (WHATWG URL:
 * lower-case scheme and host, default port dropped, "/" for an empty path).
 */
export function normalizeTargetUri(url: string): string {
  return new URL(url).href;
}

export type SignatureParameterName = 'created' | 'expires' | 'keyid' | 'alg' | 'nonce';

export interface SignRequestInput {
  method: string;
  /** Absolute URL the request is sent to, exactly as the gateway is addressed (its public URL). */
  url: string;
  headers: Record<string, string>;
  /** Exact body text that is sent ('' when none: its digest is still signed). */
  body: string;
  keyId: string;
  privateKey: KeyObject | JsonWebKey;
  alg: SignatureAlgorithm;
  /** Creation time in seconds since the epoch; default now. */
  created?: number;
  /** Expiry in seconds since the epoch; only added when given. */
  expires?: number;
  /** Default: 16 random bytes, base64url. */
  nonce?: string;
  /** Covered components; default the required ones, plus content-type when that header is present. */
  components?: string[];
  /** Signature parameters to include; default created, keyid, alg, nonce (and expires when given). */
  parameters?: SignatureParameterName[];
  /** Signature label; default "sig1". */
  label?: string;
}

/** Returns the headers to send: the given ones plus Content-Digest, Signature-Input and Signature. */
export async function signRequest(input: SignRequestInput): Promise<Record<string, string>> {
  const key = input.privateKey instanceof KeyObject ? input.privateKey : createPrivateKey({ key: input.privateKey, format: 'jwk' });
  if (key.type !== 'private') throw new Error('signRequest needs a private key.');
  const keyAlgorithm = algorithmOfKey(key);
  if (keyAlgorithm !== input.alg) {
    throw new Error(`The private key is ${keyAlgorithm ?? 'of an unsupported type'}, but alg is ${input.alg}: use an Ed25519 key for ed25519 and a P-256 key for ecdsa-p256-sha256.`);
  }

  // The digest replaces any earlier one: a stale digest would make the gateway refuse the body.
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(input.headers)) {
    if (name.toLowerCase() !== 'content-digest') headers[name] = value;
  }
  headers['Content-Digest'] = contentDigest(input.body);

  const hasContentType = Object.keys(headers).some((name) => name.toLowerCase() === 'content-type');
  const components = input.components ?? [...REQUIRED_COMPONENTS, ...(hasContentType ? ['content-type'] : [])];
  const parameters = input.parameters ?? ['created', 'keyid', 'alg', 'nonce', ...(input.expires === undefined ? [] : (['expires'] as const))];

  const signed = await httpbis.signMessage(
    {
      key: createSigner(key, input.alg, input.keyId),
      name: input.label ?? 'sig1',
      fields: components,
      params: parameters,
      paramValues: {
        created: new Date((input.created ?? Math.floor(Date.now() / 1000)) * 1000),
        ...(input.expires === undefined ? {} : { expires: new Date(input.expires * 1000) }),
        nonce: input.nonce ?? randomBytes(16).toString('base64url'),
      },
    },
    { method: input.method.toUpperCase(), url: normalizeTargetUri(input.url), headers },
  );
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(signed.headers)) out[name] = Array.isArray(value) ? value.join(', ') : value;
  return out;
}
