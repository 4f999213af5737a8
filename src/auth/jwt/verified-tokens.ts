// Bearer tokens this process has verified, so a client that sends the same token with every
// request pays for one signature check, not one per request (an Ed25519 or ECDSA verify costs
// 0.1–0.25 ms of CPU, a large share of a whole blocking SendMessage). Only tokens that passed
// every check are kept, so a flood of bad tokens cannot fill it; it is bounded by entry count,
// least recently used out first.
//
// An entry lives no longer than the token is valid (exp plus the clock tolerance) and no longer
// than the issuer's keys are trusted without a refetch (jwksCacheSeconds): a key an issuer
// removes stops validating its tokens here as soon as it would stop in the key set's own cache.
import { createHash } from 'node:crypto';
import type { Principal } from '../principal.ts';

interface Entry {
  principal: Principal;
  expiresAtMs: number;
}

export class VerifiedTokens {
  private readonly entries = new Map<string, Entry>();

  constructor(
    /** Entries kept at most (0 = no cache: every request is verified). */
    private readonly maxEntries: number,
    /** The longest an entry may live, whatever the token's exp. */
    private readonly maxAgeMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /** The principal of a token verified before and still within its entry's life, else undefined. */
  get(token: string): Principal | undefined {
    if (this.maxEntries <= 0) return undefined;
    const key = keyOf(token);
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    this.entries.delete(key);
    if (entry.expiresAtMs <= this.now()) return undefined;
    // Re-inserted: a Map iterates in insertion order, so the first key is the least recently used.
    this.entries.set(key, entry);
    // A copy: whatever a request does with its principal stays with that request.
    return { ...entry.principal };
  }

  /** Forgets every token (the trusted issuers changed: what one verified may no longer hold). */
  clear(): void {
    this.entries.clear();
  }

  /** Keeps a token that passed verification until `validUntilMs` (exp plus tolerance), at most maxAgeMs. */
  remember(token: string, principal: Principal, validUntilMs: number): void {
    if (this.maxEntries <= 0) return;
    const expiresAtMs = Math.min(validUntilMs, this.now() + this.maxAgeMs);
    if (expiresAtMs <= this.now()) return;
    const key = keyOf(token);
    this.entries.delete(key);
    this.entries.set(key, { principal, expiresAtMs });
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
  }
}

// A digest, not the token: the cache holds no credential a heap dump could replay.
const keyOf = (token: string): string => createHash('sha256').update(token).digest('base64url');
