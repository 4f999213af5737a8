// Partners authenticate by signing each request (RFC 9421 HTTP Message Signatures) with a key
// configured for them, instead of sending a bearer token. What a signature must bind:
//   - `@method` and `@target-uri`: the full absolute URI the partner addressed, so a signature
//     made for another gateway, path or query is useless here;
//   - `content-digest` (RFC 9530), recomputed here over the exact body bytes. It is required on
//     every request, bodiless GETs included (the digest of the empty body), so one rule covers
//     all operations and a body can never be slipped into a request signed without one;
//   - parameters `created` (freshness window), `keyid` (which partner key) and `nonce`, recorded
//     in Redis once the signature verified, so a captured request cannot be replayed.
// Nothing is written to Redis for a request that fails any check.
import { createPublicKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import { createVerifier, httpbis, MalformedSignatureError, UnsupportedAlgorithmError } from 'http-message-signatures';
import type { RedisClient } from '../../redis/connection.ts';
import { isInnerList, parseDictionary, serializeDictionary, serializeItem, type Dictionary, type InnerList, type Item } from 'structured-headers';
import type { PartnerConfig } from '../../config/schema.ts';
import { A2AError } from '../../protocol/errors.ts';
import { AUTH_REALM } from '../jwt/challenge.ts';
import { operationScopes, partnerSubject, type Principal } from '../principal.ts';
import { NonceStore } from '../../store/signatures/nonce-store.ts';
import {
  algorithmOfKey,
  digestOf,
  normalizeTargetUri,
  REQUIRED_COMPONENTS,
  REQUIRED_PARAMETERS,
  type DigestAlgorithm,
  type SignatureAlgorithm,
} from './sign-request.ts';

/** What is known of a request once its headers arrived, before its body is read. */
export interface SignedRequestHead {
  /** 'POST' */
  method: string;
  /** Absolute URI as the client addressed it, e.g. 'http://127.0.0.1:8080/a2a/jsonrpc?x=1'. */
  targetUri: string;
  /** Case-insensitive lookup of request headers (multiple values joined with ', '). */
  header(name: string): string | undefined;
}

export interface SignedRequestInput extends SignedRequestHead {
  /** Exact body text (utf8) as received; '' when none. */
  body: string;
}

/** A signature that verified over the request's headers; the body's digest is still to check. */
export interface VerifiedSignatureHead {
  /** The partner, once the body matches its Content-Digest and the nonce was new. */
  completeWithBody(body: string): Promise<Principal>;
}

export interface RequestSignatureVerifierOptions {
  partners: PartnerConfig[];
  redis: RedisClient;
  keyPrefix: string;
  /** How old `created` may be; nonces are remembered for this long plus the clock tolerance. */
  maxAgeSeconds: number;
  /** How far in the future `created` may be, and how long past `expires` is still accepted. */
  clockToleranceSeconds: number;
  /** Milliseconds since the epoch; for tests. */
  now?: () => number;
}

/** Short codes in the error's metadata.reason, one per way a signed request can be refused. */
export type SignatureFailureReason =
  | 'MALFORMED_SIGNATURE'
  | 'SIGNATURE_MISSING_COMPONENT'
  | 'SIGNATURE_MISSING_PARAMETER'
  | 'UNKNOWN_KEY'
  | 'ALGORITHM_MISMATCH'
  | 'NONCE_INVALID'
  | 'SIGNATURE_EXPIRED'
  | 'SIGNATURE_NOT_YET_VALID'
  | 'DIGEST_MISSING'
  | 'DIGEST_MALFORMED'
  | 'DIGEST_UNSUPPORTED'
  | 'DIGEST_MISMATCH'
  | 'BAD_SIGNATURE'
  | 'NONCE_REUSED';

const NONCE_MIN_LENGTH = 8;
const NONCE_MAX_LENGTH = 128;
const DIGEST_ALGORITHMS: readonly DigestAlgorithm[] = ['sha-256', 'sha-512'];

/** RFC 9421 §5.1: what a signature must look like to be accepted here. */
const ACCEPT_SIGNATURE = `sig1=(${REQUIRED_COMPONENTS.map((c) => `"${c}"`).join(' ')});created`;

export function signatureRefusal(reason: SignatureFailureReason, message: string): A2AError {
  return new A2AError('UNAUTHENTICATED', message, {
    metadata: { reason },
    headers: { 'WWW-Authenticate': `Signature realm="${AUTH_REALM}"`, 'Accept-Signature': ACCEPT_SIGNATURE },
  });
}

interface PartnerKey {
  partner: PartnerConfig;
  keyId: string;
  publicKey: KeyObject;
  alg: SignatureAlgorithm;
}

interface SelectedSignature {
  label: string;
  input: InnerList;
  signature: Item;
  key: PartnerKey;
}

export class RequestSignatureVerifier {
  private keys: Map<string, PartnerKey>;
  private readonly nonces: NonceStore;
  private readonly now: () => number;

  constructor(private readonly options: RequestSignatureVerifierOptions) {
    this.keys = partnerKeysOf(options.partners);
    this.nonces = new NonceStore(options.redis, options.keyPrefix);
    this.now = options.now ?? Date.now;
  }

  /** Accepts exactly the keys of `partners` from now on (the control plane's live set: src/control/); throws, changing nothing, when they conflict. */
  replacePartners(partners: readonly PartnerConfig[]): void {
    this.keys = partnerKeysOf(partners);
  }

  /** True when the request carries a Signature or Signature-Input header (so it is a signed request, not a bearer one). */
  static isSigned(request: SignedRequestHead): boolean {
    return request.header('signature') !== undefined || request.header('signature-input') !== undefined;
  }

  /** Verifies and returns the partner principal; throws UNAUTHENTICATED with metadata.reason naming what failed. */
  async verify(request: SignedRequestInput): Promise<Principal> {
    return (await this.verifyHead(request)).completeWithBody(request.body);
  }

  /**
   * Verifies everything the headers carry, the signature included (it covers the
   * Content-Digest header, not the body), so a request is refused before its body is read.
   * Only the digest's match with the body and the nonce claim wait for the body.
   */
  async verifyHead(request: SignedRequestHead): Promise<VerifiedSignatureHead> {
    const targetUri = normalizeTargetUri(request.targetUri);
    const { label, input, signature, key } = this.select(request);
    const [components, parameters] = input;

    const covered = new Set<string>();
    for (const [name, componentParameters] of components) {
      if (typeof name !== 'string') throw signatureRefusal('MALFORMED_SIGNATURE', 'Every covered component in Signature-Input must be a quoted string.');
      const serialized = serializeItem([name, componentParameters]);
      if (covered.has(serialized)) throw signatureRefusal('MALFORMED_SIGNATURE', `Signature-Input lists the component ${serialized} twice.`);
      covered.add(serialized);
    }
    // Only the bare identifiers count: parameters such as ;key or ;req change what is bound.
    const missingComponents = REQUIRED_COMPONENTS.filter((c) => !covered.has(`"${c}"`));
    if (missingComponents.length > 0) {
      throw signatureRefusal(
        'SIGNATURE_MISSING_COMPONENT',
        `The signature does not cover ${missingComponents.map((c) => `"${c}"`).join(', ')}: sign at least ${REQUIRED_COMPONENTS.map((c) => `"${c}"`).join(' ')}.`,
      );
    }
    const missingParameters = REQUIRED_PARAMETERS.filter((p) => !parameters.has(p));
    if (missingParameters.length > 0) {
      throw signatureRefusal(
        'SIGNATURE_MISSING_PARAMETER',
        `The signature has no ${missingParameters.map((p) => `"${p}"`).join(', ')} parameter: include ${REQUIRED_PARAMETERS.join(', ')} in Signature-Input.`,
      );
    }

    const alg = parameters.get('alg');
    if (alg !== undefined && alg !== key.alg) {
      throw signatureRefusal(
        'ALGORITHM_MISMATCH',
        `Key "${key.keyId}" signs with ${key.alg}, but the signature says alg=${JSON.stringify(String(alg))}: sign with that key's algorithm (or omit alg).`,
      );
    }
    const nonce = parameters.get('nonce');
    if (typeof nonce !== 'string' || nonce.length < NONCE_MIN_LENGTH || nonce.length > NONCE_MAX_LENGTH) {
      throw signatureRefusal('NONCE_INVALID', `The "nonce" parameter must be a quoted string of ${NONCE_MIN_LENGTH} to ${NONCE_MAX_LENGTH} characters, new for every request.`);
    }
    this.checkTime(parameters.get('created'), parameters.get('expires'));
    const digests = readContentDigest(request);

    const headers = coveredHeaders(request, components);
    // The library verifies every signature it finds and the last one with a known key decides,
    // so it is only shown the one selected here.
    headers['signature-input'] = serializeDictionary(new Map([[label, input]]));
    headers.signature = serializeDictionary(new Map([[label, signature]]));
    let verified: boolean | null;
    try {
      verified = await httpbis.verifyMessage(
        {
          keyLookup: async (params) =>
            params.keyid === key.keyId ? { id: key.keyId, algs: [key.alg], verify: createVerifier(key.publicKey, key.alg) } : null,
          // The library checks created/expires against the wall clock with no way to inject one,
          // and calls a future `created` "too old"; checkTime did both above, so its checks are off.
          tolerance: Number.POSITIVE_INFINITY,
          notAfter: Number.POSITIVE_INFINITY,
        },
        // A string url is taken verbatim as @target-uri, so both sides use normalizeTargetUri's form.
        { method: request.method, url: targetUri, headers },
      );
    } catch (error) {
      throw libraryRefusal(error);
    }
    if (verified !== true) {
      throw signatureRefusal(
        'BAD_SIGNATURE',
        `The signature does not verify with key "${key.keyId}": sign the exact method, target URI (${targetUri}) and covered headers you send, with the private key of that keyid.`,
      );
    }

    return {
      completeWithBody: async (body) => {
        checkDigestMatches(digests, body);
        // Recorded only now: refused requests must not burn nonces or fill Redis. A nonce outlives
        // every moment its `created` is accepted (claimed at created - tolerance at the earliest,
        // accepted until created + maxAge), so a replay is either caught here or too old.
        const ttlMs = (this.options.maxAgeSeconds + this.options.clockToleranceSeconds) * 1000;
        if (!(await this.nonces.claim(key.partner.id, nonce, ttlMs))) {
          throw signatureRefusal('NONCE_REUSED', 'This nonce was already used: every request needs a new nonce and a new signature.');
        }
        const { partner } = key;
        return { tenant: partner.tenant, subject: partnerSubject(partner.id), scopes: operationScopes(partner.scopes), grants: new Set(partner.scopes), method: 'signature' };
      },
    };
  }

  /** The first signature (in Signature-Input order) whose keyid is a configured partner key. */
  private select(request: SignedRequestHead): SelectedSignature {
    const inputs = parseSignatureHeader(request, 'Signature-Input');
    if (inputs.size === 0) throw signatureRefusal('MALFORMED_SIGNATURE', 'A signed request needs a Signature-Input header describing its signature.');
    const unknown: string[] = [];
    for (const [label, member] of inputs) {
      if (!isInnerList(member)) {
        throw signatureRefusal('MALFORMED_SIGNATURE', `Signature-Input "${label}" must be an inner list of covered components with parameters.`);
      }
      const keyId = member[1].get('keyid');
      if (typeof keyId !== 'string') continue;
      const key = this.keys.get(keyId);
      if (key !== undefined) return { label, input: member, signature: signatureBytes(request, label), key };
      unknown.push(keyId);
    }
    if (unknown.length === 0) {
      throw signatureRefusal('SIGNATURE_MISSING_PARAMETER', 'The signature has no "keyid" parameter: name the partner key you signed with.');
    }
    throw signatureRefusal(
      'UNKNOWN_KEY',
      `No partner key with keyid ${unknown.map((k) => JSON.stringify(k)).join(', ')} is configured on this gateway: sign with a registered key.`,
    );
  }

  private checkTime(created: unknown, expires: unknown): void {
    if (typeof created !== 'number' || !Number.isInteger(created)) {
      throw signatureRefusal('MALFORMED_SIGNATURE', 'The "created" parameter must be an integer (seconds since the epoch).');
    }
    if (expires !== undefined && (typeof expires !== 'number' || !Number.isInteger(expires))) {
      throw signatureRefusal('MALFORMED_SIGNATURE', 'The "expires" parameter must be an integer (seconds since the epoch).');
    }
    const nowSeconds = this.now() / 1000;
    const { maxAgeSeconds, clockToleranceSeconds } = this.options;
    if (created > nowSeconds + clockToleranceSeconds) {
      throw signatureRefusal('SIGNATURE_NOT_YET_VALID', `The signature's "created" time is in the future; check the signer's clock (tolerance ${clockToleranceSeconds} s).`);
    }
    if (nowSeconds - created > maxAgeSeconds) {
      throw signatureRefusal('SIGNATURE_EXPIRED', `The signature was created more than ${maxAgeSeconds} s ago: sign each request when you send it.`);
    }
    if (expires !== undefined && nowSeconds > expires + clockToleranceSeconds) {
      throw signatureRefusal('SIGNATURE_EXPIRED', 'The signature has expired (its "expires" time has passed): sign the request again.');
    }
  }
}

function partnerKeysOf(partners: readonly PartnerConfig[]): Map<string, PartnerKey> {
  const keys = new Map<string, PartnerKey>();
  for (const partner of partners) {
    for (const { keyId, publicKey } of partner.keys) {
      const owner = keys.get(keyId);
      if (owner !== undefined) {
        // A keyid must name one partner, or a signature could be attributed to either.
        throw new Error(`Partners ${owner.partner.id} and ${partner.id} both configure keyId "${keyId}"; key ids must be unique across partners.`);
      }
      keys.set(keyId, { partner, keyId, ...importPartnerKey(partner.id, keyId, publicKey) });
    }
  }
  return keys;
}

/** A partner's public JWK as a key and the algorithm it signs with; throws saying what is wrong with it. */
export function importPartnerKey(partnerId: string, keyId: string, jwk: PartnerConfig['keys'][number]['publicKey']): { publicKey: KeyObject; alg: SignatureAlgorithm } {
  if ('d' in jwk) throw new Error(`Partner ${partnerId} key "${keyId}" is a private key; configure only the public part (drop "d").`);
  let publicKey: KeyObject;
  try {
    publicKey = createPublicKey({ key: jwk, format: 'jwk' });
  } catch (error) {
    throw new Error(`Partner ${partnerId} key "${keyId}" is not a usable JWK: ${(error as Error).message}`);
  }
  const alg = algorithmOfKey(publicKey);
  if (alg === undefined) throw new Error(`Partner ${partnerId} key "${keyId}" must be an Ed25519 (OKP) or P-256 (EC) key.`);
  return { publicKey, alg };
}

function parseSignatureHeader(request: SignedRequestHead, name: 'Signature' | 'Signature-Input'): Dictionary {
  const value = request.header(name);
  if (value === undefined) {
    throw signatureRefusal('MALFORMED_SIGNATURE', `The request has no ${name} header: a signed request needs both Signature-Input and Signature.`);
  }
  try {
    return parseDictionary(value);
  } catch {
    throw signatureRefusal('MALFORMED_SIGNATURE', `The ${name} header is not a valid structured-field dictionary (RFC 8941).`);
  }
}

function signatureBytes(request: SignedRequestHead, label: string): Item {
  const member = parseSignatureHeader(request, 'Signature').get(label);
  if (member === undefined || isInnerList(member) || !(member[0] instanceof ArrayBuffer)) {
    throw signatureRefusal('MALFORMED_SIGNATURE', `The Signature header needs a byte sequence (:base64:) under the label "${label}" used in Signature-Input.`);
  }
  return member;
}

/**
 * The library reads header fields from a plain record, while the bindings only offer a lookup,
 * so the record holds exactly the fields the signature covers.
 */
function coveredHeaders(request: SignedRequestHead, components: Item[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name] of components) {
    const field = String(name).toLowerCase();
    if (field.startsWith('@')) continue;
    const value = request.header(field);
    if (value === undefined) {
      throw signatureRefusal('MALFORMED_SIGNATURE', `The signature covers the "${field}" header, which the request does not carry.`);
    }
    headers[field] = value;
  }
  return headers;
}

/**
 * RFC 9530: the Content-Digest members this gateway checks (sha-256, sha-512; other algorithms
 * are ignored), read from the header before the body arrives.
 */
function readContentDigest(request: SignedRequestHead): Map<DigestAlgorithm, Buffer> {
  const header = request.header('content-digest');
  if (header === undefined) {
    throw signatureRefusal(
      'DIGEST_MISSING',
      'The request has no Content-Digest header: send sha-256=:<base64 of SHA-256 of the body>: (also for an empty body) and cover it in the signature.',
    );
  }
  let members: Dictionary;
  try {
    members = parseDictionary(header);
  } catch {
    throw signatureRefusal('DIGEST_MALFORMED', 'The Content-Digest header is not a valid structured-field dictionary such as sha-256=:<base64>:.');
  }
  const digests = new Map<DigestAlgorithm, Buffer>();
  for (const algorithm of DIGEST_ALGORITHMS) {
    const member = members.get(algorithm);
    if (member === undefined) continue;
    if (isInnerList(member) || !(member[0] instanceof ArrayBuffer)) {
      throw signatureRefusal('DIGEST_MALFORMED', `The Content-Digest ${algorithm} value must be a byte sequence (:base64:).`);
    }
    digests.set(algorithm, Buffer.from(member[0]));
  }
  if (digests.size === 0) throw signatureRefusal('DIGEST_UNSUPPORTED', 'The Content-Digest has no sha-256 or sha-512 value: use one of those.');
  return digests;
}

/** Every checked member must match the exact body bytes. */
function checkDigestMatches(digests: Map<DigestAlgorithm, Buffer>, bodyText: string): void {
  const body = Buffer.from(bodyText, 'utf8');
  for (const [algorithm, given] of digests) {
    const expected = digestOf(body, algorithm);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw signatureRefusal('DIGEST_MISMATCH', 'The Content-Digest does not match the body: sign the exact bytes you send.');
    }
  }
}

function libraryRefusal(error: unknown): A2AError {
  if (error instanceof UnsupportedAlgorithmError) {
    return signatureRefusal('ALGORITHM_MISMATCH', 'The signature\'s alg does not match the key it names.');
  }
  if (error instanceof MalformedSignatureError) {
    return signatureRefusal('MALFORMED_SIGNATURE', `The signature cannot be read: ${error.message}.`);
  }
  // Anything else comes from building the signature base (an unsupported or unusable component)
  // or from the crypto layer rejecting the signature bytes outright.
  const detail = error instanceof Error ? error.message : String(error);
  return signatureRefusal('MALFORMED_SIGNATURE', `The signature cannot be checked: ${detail}.`);
}
