// A new task's creation event (StreamResponse {task}) carries the task's first message, which
// its history holds already. So the replay buffer keeps it without the message: the stored
// entry is the event's JSON with an empty history, marked with where the message goes
// (`~<offset>:<json>`, which no JSON parser takes, so a reader that forgets to inflate fails
// loudly), and every reader puts the history's first message back in before the event leaves
// the store. JSON.stringify writes a nested value exactly as it writes it alone, so the event put
// back together is byte for byte the one that was published live. A message of at most
// INLINE_MESSAGE_BYTES stays in the event: keeping it twice costs less than the read that would
// put it back, and the duplicate that matters for memory is a big message's.
import type { RedisClient } from '../redis/connection.ts';
import type { StreamResponse, Task } from '../protocol/types.ts';

const MARK = '~';
/** First messages up to this size (JSON bytes) are kept in the creation event as well as in the history. */
export const INLINE_MESSAGE_BYTES = 4096;
const EMPTY_HISTORY = '"history":[]';

export interface CreationEvent {
  /** The event as published live and returned to readers. */
  full: string;
  /** The event as the replay buffer keeps it. */
  stored: string;
}

/** Both forms of a new task's creation event; `messageJson` is the first message exactly as its history stores it. */
export function creationEvent(task: Task, messageJson: string): CreationEvent {
  const compact = JSON.stringify({ task: { ...task, history: [] } } satisfies StreamResponse);
  const at = compact.indexOf(EMPTY_HISTORY);
  const full = JSON.stringify({ task } satisfies StreamResponse);
  if (at < 0 || task.history?.length !== 1 || !storedOnce(Buffer.byteLength(messageJson))) return { full, stored: full };
  const offset = at + EMPTY_HISTORY.length - 1;
  // Kept whole if splicing would not give the same bytes (it always does; this guards the invariant).
  // Compared in place: building the spliced copy would cost a large message's size once more.
  const spliced = full.length === compact.length + messageJson.length && full.startsWith(messageJson, offset) && full.startsWith(compact.slice(0, offset)) && full.endsWith(compact.slice(offset));
  if (!spliced) return { full, stored: full };
  return { full, stored: `${MARK}${offset}:${compact}` };
}

/** Whether a first message of this many JSON bytes is kept only in the history (else in the creation event too). */
export function storedOnce(messageBytes: number): boolean {
  return messageBytes > INLINE_MESSAGE_BYTES;
}

/** True for a stored entry that needs the task's first message put back in (see inflate). */
export function refersToHistory(stored: string): boolean {
  return stored.startsWith(MARK);
}

/** The event a stored entry stands for; `firstMessageJson` is the history's first entry (undefined: gone, the history stays empty). */
export function inflate(stored: string, firstMessageJson: string | undefined): string {
  if (!refersToHistory(stored)) return stored;
  const colon = stored.indexOf(':');
  const offset = Number(stored.slice(MARK.length, colon));
  const compact = stored.slice(colon + 1);
  return firstMessageJson === undefined ? compact : compact.slice(0, offset) + firstMessageJson + compact.slice(offset);
}

/** Inflates stored entries, reading the history's first message (one LINDEX) only if one of them needs it. */
export async function inflateAll(redis: RedisClient, historyKey: string, stored: readonly string[]): Promise<string[]> {
  if (!stored.some(refersToHistory)) return [...stored];
  const first = (await redis.lindex(historyKey, 0)) ?? undefined;
  return stored.map((json) => inflate(json, first));
}
