// The Redis Cluster hash slot of a key (CRC16-XMODEM of its hash tag, mod 16384), as
// CLUSTER KEYSLOT computes it: a script may only name keys of one slot (docs/redis-slots.md).

const TABLE = (() => {
  const table = new Uint16Array(256);
  for (let byte = 0; byte < 256; byte++) {
    let crc = byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[byte] = crc;
  }
  return table;
})();

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ (TABLE[((crc >> 8) ^ byte) & 0xff] as number);
  return crc;
}

/** The part of a key that is hashed: the first non-empty `{…}`, else the whole key. */
export function hashTagOf(key: string): string {
  const open = key.indexOf('{');
  if (open === -1) return key;
  const close = key.indexOf('}', open + 1);
  return close === -1 || close === open + 1 ? key : key.slice(open + 1, close);
}

export function keySlot(key: string): number {
  return crc16(Buffer.from(hashTagOf(key), 'utf8')) % 16384;
}

/**
 * Set in the test suite (vitest.config.ts) and inherited by the workers it spawns: every script
 * call is checked, so a script naming keys of two slots fails the suite on a single Redis too.
 */
export const SLOT_CHECK_ENV = 'A2A_CHECK_SCRIPT_SLOTS';

export class CrossSlotError extends Error {
  constructor(script: string, keys: readonly string[]) {
    const slots = keys.map((key) => `${key} (slot ${keySlot(key)})`).join(', ');
    super(`Script ${script} names keys of more than one hash slot: ${slots}. On Redis Cluster it would fail with CROSSSLOT; split it into single-slot steps (docs/redis-slots.md).`);
    this.name = 'CrossSlotError';
  }
}

/** Throws CrossSlotError when `keys` span more than one slot. */
export function assertOneSlot(script: string, keys: readonly string[]): void {
  const first = keys[0];
  if (first === undefined) return;
  const slot = keySlot(first);
  if (keys.some((key) => keySlot(key) !== slot)) throw new CrossSlotError(script, keys);
}
