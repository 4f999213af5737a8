// Server-generated ids: ULIDs (time-ordered, 80 random bits). The ulid package draws one byte
// from the OS per character by default, which showed up as 14% of a busy gateway's CPU; a
// pooled crypto-random buffer gives the same randomness at a fraction of the cost.
import { randomFillSync } from 'node:crypto';
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
