// Standard Webhooks signatures (standardwebhooks.com): every delivery carries webhook-id (the
// delivery id, the same on every retry: receivers dedup on it), webhook-timestamp (seconds) and
// webhook-signature, over "<id>.<timestamp>.<body>": `v1a,<base64>` with the gateway's Ed25519
// key (public key on /.well-known/jwks.json), plus `v1,<base64>` (HMAC-SHA256) when the config's
// token is a Standard Webhooks secret (`whsec_…`).
import { createHmac, createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import type { JWK } from 'jose';

/** A config token of this form is a signing secret: it signs (v1) and is never sent. */
export const HMAC_SECRET_PREFIX = 'whsec_';

export const isHmacSecret = (token: string | undefined): token is string => token !== undefined && token.startsWith(HMAC_SECRET_PREFIX);

export interface WebhookHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

const signedContent = (id: string, timestampSeconds: number, body: string): string => `${id}.${timestampSeconds}.${body}`;

function hmacKey(secret: string): Buffer {
  return Buffer.from(secret.slice(HMAC_SECRET_PREFIX.length), 'base64');
}

function ed25519Key(privateJwk: JWK): KeyObject {
  if (privateJwk.kty !== 'OKP' || privateJwk.crv !== 'Ed25519') throw new Error('the push signing key must be an Ed25519 (OKP) key');
  return createPrivateKey({ key: privateJwk as never, format: 'jwk' });
}

/** Keys of an earlier rotation, and until when (ms) they sign beside the current key. */
export interface PreviousSigningKeys {
  keys: JWK[];
  untilMs: number;
}

export class WebhookSigner {
  private readonly privateKey: KeyObject;
  private readonly previousKeys: KeyObject[];
  private readonly previousUntilMs: number;
  /** The key's id on /.well-known/jwks.json. */
  readonly keyId: string;

  constructor(privateJwk: JWK, previous: PreviousSigningKeys = { keys: [], untilMs: 0 }) {
    this.privateKey = ed25519Key(privateJwk);
    this.previousKeys = previous.keys.map(ed25519Key);
    this.previousUntilMs = previous.untilMs;
    this.keyId = privateJwk.kid ?? '';
  }

  /**
   * The delivery's webhook-* headers: a `v1a` signature by the current key, one by each previous
   * key while the rotation's overlap lasts (receivers accept any one signature they can verify),
   * and `v1` with the config's HMAC secret.
   */
  headers(id: string, body: string, hmacSecret: string | undefined, now: Date = new Date()): WebhookHeaders {
    const timestamp = Math.floor(now.getTime() / 1000);
    const content = Buffer.from(signedContent(id, timestamp, body));
    const signers = now.getTime() < this.previousUntilMs ? [this.privateKey, ...this.previousKeys] : [this.privateKey];
    const signatures = signers.map((key) => `v1a,${sign(null, content, key).toString('base64')}`);
    if (hmacSecret !== undefined) signatures.push(`v1,${createHmac('sha256', hmacKey(hmacSecret)).update(content).digest('base64')}`);
    return { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signatures.join(' ') };
  }
}

/** A receiver's check of a v1a signature with the gateway's public JWK (what docs/push.md shows, and the tests use). */
export function verifyEd25519Signature(publicJwk: JWK, headers: { id: string; timestamp: string; signature: string }, body: string): boolean {
  const key = createPublicKey({ key: publicJwk as never, format: 'jwk' });
  const content = Buffer.from(signedContent(headers.id, Number(headers.timestamp), body));
  return headers.signature
    .split(' ')
    .filter((entry) => entry.startsWith('v1a,'))
    .some((entry) => verify(null, content, key, Buffer.from(entry.slice(4), 'base64')));
}
