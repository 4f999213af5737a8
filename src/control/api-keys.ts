// API keys: a secret a client sends in the X-API-Key header instead of a token. A key reads
// `a2ak_<name>_<secret>`: the name finds the resource in the process's view (one map lookup),
// the whole key's SHA-256 is compared with the stored one in constant time.
//
// Only the digest is stored. A plain SHA-256 is enough here, where a password would need a slow
// hash (scrypt, Argon2): the secret is 256 random bits made by this gateway, not chosen by a
// person, so there is no dictionary to try and no brute force that a slower hash would make any
// less hopeless; a fast digest keeps each request's check in microseconds.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { operationScopes, type Principal } from '../auth/principal.ts';
import { invalidApiKey } from '../auth/credentials.ts';
import type { ControlView } from './control-view.ts';

const KEY_PREFIX = 'a2ak_';
/** 32 bytes: 256 bits of entropy, 43 base64url characters. */
const SECRET_BYTES = 32;
/** The longest X-API-Key read: prefix, the longest name, "_" and the secret, with room. */
export const MAX_API_KEY_LENGTH = 256;

/** The principal subject of an API key's owner: its tasks are the owner's, whichever of its keys made them. */
export const apiKeySubject = (owner: string): string => `key:${owner}`;

export const digestOfKey = (key: string): string => createHash('sha256').update(key, 'utf8').digest('base64url');

/** A new key for the resource `name`, and the digest to store (the key itself is shown once, never stored). */
export function newApiKey(name: string): { key: string; keyHash: string } {
  const key = `${KEY_PREFIX}${name}_${randomBytes(SECRET_BYTES).toString('base64url')}`;
  return { key, keyHash: digestOfKey(key) };
}

/** The resource name a presented key names, or undefined when it is not shaped like a key of ours. */
function nameOfKey(key: string): string | undefined {
  if (key.length > MAX_API_KEY_LENGTH || !key.startsWith(KEY_PREFIX)) return undefined;
  const end = key.indexOf('_', KEY_PREFIX.length);
  return end <= KEY_PREFIX.length ? undefined : key.slice(KEY_PREFIX.length, end);
}

/** Authenticates API keys against the live view: a deleted or expired key is refused as soon as this process's view has the change. */
export class ApiKeyVerifier {
  constructor(
    private readonly view: ControlView,
    private readonly now: () => number = Date.now,
  ) {}

  verify(key: string): Principal {
    const name = nameOfKey(key);
    const resource = name === undefined ? undefined : this.view.get('api-keys', name);
    const given = Buffer.from(digestOfKey(key));
    const stored = Buffer.from(resource?.spec.keyHash ?? '');
    if (resource === undefined || given.length !== stored.length || !timingSafeEqual(given, stored)) {
      throw invalidApiKey('API_KEY_INVALID', 'The API key is not valid: it is unknown, mistyped or was revoked. Ask an admin for a new one.');
    }
    if (Date.parse(resource.spec.expiresAt) <= this.now()) {
      throw invalidApiKey('API_KEY_EXPIRED', `The API key expired at ${resource.spec.expiresAt}: ask an admin for a new one.`);
    }
    const { spec } = resource;
    return { tenant: spec.tenant, subject: apiKeySubject(spec.owner), scopes: operationScopes(spec.scopes), grants: new Set(spec.scopes), method: 'api-key' };
  }
}
