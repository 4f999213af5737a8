// The messageId of a turn's message to the downstream agent, derived from the send step's
// idempotency key: every attempt of the turn sends the same id, so a re-send after a crash is
// recognisable to a downstream that de-duplicates by messageId.
import { createHash } from 'node:crypto';

/** The downstream messageId for a send step: stable across attempts, so a re-send is recognisable. */
export function downstreamMessageId(idempotencyKey: string): string {
  return `a2agw-${createHash('sha256').update(idempotencyKey).digest('base64url').slice(0, 32)}`;
}
