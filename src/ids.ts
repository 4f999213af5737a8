// Server-generated ids: ULIDs (time-ordered, 80 random bits). The ulid package draws one byte
// from the OS per character by default, which showed up as 14% of a busy gateway's CPU; a
// pooled crypto-random buffer gives the same randomness at a fraction of the cost.
import { createHash, randomFillSync } from 'node:crypto';
import { ulid } from 'ulid';

const POOL_SIZE = 4096;
const pool = Buffer.alloc(POOL_SIZE);
let offset = POOL_SIZE;

function pooledRandom(): number {
  if (offset >= POOL_SIZE) {
    randomFillSync(pool);
    offset = 0;
  }
  return (pool[offset++] as number) / 256;
}

export function newId(): string {
  return ulid(undefined, pooledRandom);
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/**
 * An id derived from `parts` (the same parts give the same id), shaped like a ULID (26 Crockford
 * base32 characters) so it fits wherever a task id goes. For what only the server creates and must
 * find again after a crash, e.g. a coordinator's n-th assignment: no caller can choose or pre-empt it.
 */
export function derivedId(...parts: string[]): string {
  const digest = createHash('sha256').update(parts.join('\u0000')).digest();
  let bits = 0;
  let value = 0;
  let id = '';
  for (const byte of digest) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5 && id.length < 26) {
      id += CROCKFORD[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    if (id.length === 26) break;
    value &= (1 << bits) - 1;
  }
  return id;
}
