// Bounds of each task's replay buffer.
import { z } from 'zod';

/** The replay buffer of each task (its events stream), bounded for open tasks too (docs/replay.md). */
export const replaySchema = z.strictObject({
  /** Most events one task's buffer keeps; the oldest go first (0 = no count bound). A resume from before the buffer gets a snapshot. */
  maxEvents: z.coerce.number().int().min(0).default(2_000),
  /** Events older than this leave the buffer of a task that is still open (0 = no age bound). */
  maxAgeSeconds: z.coerce.number().int().min(0).default(86_400),
  /**
   * Events a push config has not been sent yet stay past maxEvents and maxAgeSeconds, up to this
   * many in the buffer (0 = no cap); past it they go, and that config gets a Task snapshot next.
   */
  pushHoldMaxEvents: z.coerce.number().int().min(0).default(10_000),
  /**
   * Most bytes of events one task's buffer keeps, counted as stored; the oldest go first, as past
   * maxEvents, and the newest event always stays (0 = no byte bound).
   */
  maxBytes: z.coerce.number().int().min(0).default(16 * 1024 * 1024),
  /** What push configs hold past the bounds, in bytes (0 = no cap); past it the oldest go, as past pushHoldMaxEvents. */
  pushHoldMaxBytes: z.coerce.number().int().min(0).default(64 * 1024 * 1024),
});
