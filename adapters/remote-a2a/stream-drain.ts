// Ending a downstream stream that delivered its last event.
import type { StreamResponse } from '@a2a-js/sdk';

/** How long a stream that delivered its last event may take to close by itself. */
const DRAIN_MS = 250;

/**
 * Reads a finished stream to its end, briefly: a response read to the end leaves its connection
 * in the pool, while one cut off is closed, and a new connection per turn costs the downstream
 * (and us) far more than the wait. A stream that stays open (AUTH_REQUIRED keeps it so) is cut
 * off with `cutOff`, which also settles the read still waiting on it.
 */
export async function drain(stream: AsyncGenerator<StreamResponse, void, undefined>, cutOff: () => void): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), DRAIN_MS);
  });
  try {
    for (let i = 0; i < 100; i++) {
      const next = await Promise.race([stream.next(), timeout]);
      if (next === 'timeout') break;
      if (next.done === true) return;
    }
    cutOff();
  } catch {
    // A stream that breaks after its last event has nothing more to give.
  } finally {
    clearTimeout(timer);
  }
}
