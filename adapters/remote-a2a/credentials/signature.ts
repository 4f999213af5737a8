// RFC 9421 request signing with the gateway's partner key (the key the downstream registered for
// it), using the same signer partners use to call this gateway. Every request is signed afresh:
// a new nonce and `created` per attempt, and a content digest of the exact body.
import { createPrivateKey, type KeyObject } from 'node:crypto';
import { algorithmOfKey, signRequest, type SignatureAlgorithm } from '../../../src/auth/signatures/sign-request.ts';
import { RemoteA2aOptionsError } from '../options.ts';
import type { Secret } from './secret.ts';
import type { OutboundCredentials, OutgoingRequest } from './types.ts';

export class SignatureCredentials implements OutboundCredentials {
  private key: KeyObject;
  private alg: SignatureAlgorithm;

  constructor(
    private readonly keyId: string,
    private readonly privateKey: Secret,
    private readonly option: string,
  ) {
    ({ key: this.key, alg: this.alg } = this.load());
  }

  async apply(request: OutgoingRequest): Promise<void> {
    const headers: Record<string, string> = {};
    request.headers.forEach((value, name) => {
      headers[name] = value;
    });
    const signed = await signRequest({ method: request.method, url: request.url, headers, body: request.body, keyId: this.keyId, privateKey: this.key, alg: this.alg });
    for (const [name, value] of Object.entries(signed)) request.headers.set(name, value);
  }

  /** A replaced key file is worth one more try. */
  async renew(): Promise<boolean> {
    if (!this.privateKey.reload()) return false;
    try {
      ({ key: this.key, alg: this.alg } = this.load());
      return true;
    } catch {
      return false;
    }
  }

  private load(): { key: KeyObject; alg: SignatureAlgorithm } {
    let key: KeyObject;
    try {
      key = createPrivateKey({ key: JSON.parse(this.privateKey.current()) as import('node:crypto').JsonWebKey, format: 'jwk' });
    } catch {
      throw new RemoteA2aOptionsError(`a2a adapter: option ${this.option}: is not a private JWK (JSON with kty, crv, x and d)`);
    }
    const alg = algorithmOfKey(key);
    if (alg === undefined) throw new RemoteA2aOptionsError(`a2a adapter: option ${this.option}: the key must be Ed25519 or ECDSA P-256`);
    return { key, alg };
  }
}
