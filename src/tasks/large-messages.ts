// A large message costs the gateway's event loop its size several times over (its digest, the
// JSON written to Redis, the creation event, the answer), in stretches no other request can run
// during. So one owner's large messages are stored one at a time on each gateway process (an
// owner sending eight at once does not chain eight such stretches into one), and each gives the
// event loop back between its heavy steps, so another caller's small request waits for one step
// at most, not for a whole message. Small messages are not touched.
import type { Message } from '../protocol/types.ts';

/** From this many bytes (about: see approximateBytes) a message is large. */
export const LARGE_MESSAGE_BYTES = 65_536;

/** A message's size without serialising it: its parts' strings and, for data parts, their JSON. */
export function approximateBytes(message: Message): number {
  let bytes = 0;
  for (const part of message.parts) {
    bytes += (part.text?.length ?? 0) + (part.raw?.length ?? 0) + (part.url?.length ?? 0);
    if (part.data !== undefined) bytes += JSON.stringify(part.data).length;
    if (part.metadata !== undefined) bytes += JSON.stringify(part.metadata).length;
  }
  if (message.metadata !== undefined) bytes += JSON.stringify(message.metadata).length;
  return bytes;
}

/** Lets whatever I/O is waiting run before the next step. */
export const yieldToOthers = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class LargeMessageGate {
  /** Owner key → the end of its last large message's turn here. */
  private readonly tails = new Map<string, Promise<void>>();

  /**
   * Waits for the owner's large message before this one (if `message` is large) and yields once;
   * the returned function ends this one's turn. Returns at once for a small message.
   */
  async enter(ownerKey: string, message: Message): Promise<{ large: boolean; leave: () => void }> {
    if (approximateBytes(message) < LARGE_MESSAGE_BYTES) return { large: false, leave: () => undefined };
    const before = this.tails.get(ownerKey);
    let leave: () => void = () => undefined;
    const mine = new Promise<void>((resolve) => {
      leave = resolve;
    });
    const tail = (before ?? Promise.resolve()).then(() => mine);
    this.tails.set(ownerKey, tail);
    void tail.then(() => {
      if (this.tails.get(ownerKey) === tail) this.tails.delete(ownerKey);
    });
    await before;
    await yieldToOthers();
    return { large: true, leave };
  }
}
