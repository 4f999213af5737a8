// Last-Event-ID (resuming a stream) must name an event id this gateway could have sent: a
// Redis stream id "<ms>-<seq>", each part an unsigned 64-bit number. Anything else, a sequence
// past 2^64 - 1 included (which Redis itself would refuse), is the caller's mistake.
import { invalidParams } from '../../protocol/errors.ts';
import type { Exchange } from './exchange.ts';

const MAX_UINT64 = 2n ** 64n - 1n;

export function lastEventIdOf(exchange: Pick<Exchange, 'header'>): string | undefined {
  const value = exchange.header('last-event-id');
  if (value === undefined) return undefined;
  const match = /^(\d{1,20})-(\d{1,20})$/.exec(value.trim());
  if (match === null || BigInt(match[1] as string) > MAX_UINT64 || BigInt(match[2] as string) > MAX_UINT64) {
    throw invalidParams(
      [{ field: 'Last-Event-ID', description: 'must be an event id this gateway sent, like 1700000000000-0 (two unsigned 64-bit numbers)' }],
      'Invalid Last-Event-ID',
    );
  }
  return value.trim();
}
