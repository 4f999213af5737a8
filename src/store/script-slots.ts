// The check that a script call names keys of one Cluster hash slot, run on a single Redis too
// when SLOT_CHECK_ENV is set, so a cross-slot script fails the test suite, not a Cluster.
import { keySlot } from '../redis/key-slot.ts';

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
