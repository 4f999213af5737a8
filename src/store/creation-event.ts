// A new task's creation event (StreamResponse {task}) carries the task's first message, which
// its history holds already. So the replay buffer keeps it without the message: the stored
// entry is the event's JSON with an empty history, marked with where the message goes
// (`~<offset>:<json>`, which no JSON parser takes, so a reader that forgets to inflate fails
// loudly), and every reader puts the history's first message back in before the event leaves
// the store. The event published live is put together the same way, by the script that stores
// it (createTask-7.lua; a large one is announced by its id and read back like any other), so
// live and replayed events are the same bytes, and JSON.stringify writes a nested value exactly
// as it writes it alone, so those are the bytes of JSON.stringify({task}). A message of at most
// INLINE_MESSAGE_BYTES stays in the event: keeping it twice costs less than the read that would
// put it back, and the duplicate that matters for memory is a big message's.
import type { RedisClient } from '../redis/connection.ts';
import type { StreamResponse, Task } from '../protocol/types.ts';

const MARK = '~';
/** First messages up to this size (JSON bytes) are kept in the creation event as well as in the history. */
export const INLINE_MESSAGE_BYTES = 4096;
const EMPTY_HISTORY = '"history":[]';

export interface CreationEvent {
  /** The event as the replay buffer keeps it. */
  stored: string;
  /**
   * The event as published live, or undefined when `stored` refers to the history: the script
   * puts it back together itself (or announces it by id, when large), so the gateway neither
   * writes the event with the message in it nor sends the message to Redis twice.
   */
  published: string | undefined;
  /** When `stored` refers to the history: the byte of `stored` after which the message goes back in. */
  messageAtByte: number | undefined;
}

/** The task's creation event as kept and as published; `messageJson` is the first message exactly as its history stores it. */
export function creationEvent(task: Task, messageJson: string): CreationEvent {
  if (task.history?.length !== 1 || !storedOnce(Buffer.byteLength(messageJson))) {
    const full = JSON.stringify({ task } satisfies StreamResponse);
    return { stored: full, published: full, messageAtByte: undefined };
  }
  const compact = JSON.stringify({ task: { ...task, history: [] } } satisfies StreamResponse);
  // The first "history":[] is the task's own: one inside a string would have its quotes escaped.
  const at = compact.indexOf(EMPTY_HISTORY);
  if (at < 0) {
    const full = JSON.stringify({ task } satisfies StreamResponse);
    return { stored: full, published: full, messageAtByte: undefined };
  }
  const offset = at + EMPTY_HISTORY.length - 1;
  const head = `${MARK}${offset}:`;
  // JSON.stringify writes a nested value exactly as alone: the message put back at `offset` gives
  // the event JSON.stringify({task}) would (test/message-stored-once.test.ts checks it).
  return { stored: `${head}${compact}`, published: undefined, messageAtByte: head.length + Buffer.byteLength(compact.slice(0, offset)) };
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
