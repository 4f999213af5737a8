// The Redis Cluster hash slot of a key (CRC16/XMODEM of its hash tag, or of the whole key, mod
// 16384), as CLUSTER KEYSLOT computes it: commands on keys of several tasks are grouped by the
// node that serves them without asking Redis, and a script may only name keys of one slot
// (docs/redis-slots.md; the store checks its scripts' keys in src/store/script-slots.ts).

const TABLE = (() => {
  const table = new Uint16Array(256);
  for (let byte = 0; byte < 256; byte += 1) {
    let crc = byte << 8;
    for (let bit = 0; bit < 8; bit += 1) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[byte] = crc;
  }
  return table;
})();

export const SLOT_COUNT = 16384;

/** The part of a key that is hashed: the first non-empty `{…}`, else the whole key. */
export function hashTagOf(key: string): string {
  return hashedPart(Buffer.from(key, 'utf8')).toString('utf8');
}

function hashedPart(key: Buffer): Buffer {
  const open = key.indexOf(0x7b); // {
  if (open === -1) return key;
  const close = key.indexOf(0x7d, open + 1); // }
  if (close === -1 || close === open + 1) return key;
  return key.subarray(open + 1, close);
}

export function keySlot(key: string): number {
  let crc = 0;
  for (const byte of hashedPart(Buffer.from(key, 'utf8'))) crc = ((crc << 8) & 0xffff) ^ (TABLE[((crc >> 8) ^ byte) & 0xff] as number);
  return crc % SLOT_COUNT;
}
