// Replay-buffer ids ("<ms>-<seq>") order numerically, part by part: a resumed stream skips what it
// had and keeps what it had not by this order (src/events/hub.ts compareEventIds). The text of two
// ids of the same shape compares as their numbers do; any other pair is compared by its numbers.
import { describe, expect, it } from 'vitest';
import { compareEventIds } from '../src/events/hub.ts';
import { ownerFromKey, ownerKeyOf } from '../src/store/owner.ts';

describe('compareEventIds', () => {
  const ordered: [string, string][] = [
    ['1733486400000-0', '1733486400000-1'],
    ['1733486400000-9', '1733486400000-10'],
    ['1733486400000-99', '1733486400001-0'],
    ['999-5', '1000-0'],
    ['99-12', '100-1'],
    ['0-1', '5-0'],
    ['1733486400000-10', '1733486400000-11'],
  ];
  it.each(ordered)('%s comes before %s', (earlier, later) => {
    expect(compareEventIds(earlier, later)).toBe(-1);
    expect(compareEventIds(later, earlier)).toBe(1);
  });

  it('finds an id equal to itself', () => {
    expect(compareEventIds('1733486400000-7', '1733486400000-7')).toBe(0);
    expect(compareEventIds('0-0', '0-0')).toBe(0);
  });
});

describe('ownerFromKey', () => {
  it('gives back the owner a key was made from, the same each time, and one no caller can change', () => {
    const owner = { agent: 'a/b', tenant: 'acme:eu', subject: 'user 1' };
    const key = ownerKeyOf(owner);
    const read = ownerFromKey(key);
    expect(read).toEqual(owner);
    expect(ownerFromKey(key)).toBe(read);
    expect(() => {
      (read as { subject: string }).subject = 'someone else';
    }).toThrow(TypeError);
    expect(ownerFromKey(key)).toEqual(owner);
  });
});
