// Schedule settings: per-owner limits, shortest interval, lateness, firing workers.
import { z } from 'zod';
import { booleanish } from './values.ts';

/** Schedules (gateway extension): messages sent to an agent later or repeatedly. */
export const schedulesSchema = z.strictObject({
  /** Offer schedules (declared on the card as an extension); false answers their methods with UnsupportedOperationError. */
  enabled: booleanish.default(true),
  /** Schedules one owner (principal and agent) may have; completed ones do not count. */
  maxPerOwner: z.coerce.number().int().min(1).max(100_000).default(100),
  /**
   * Shortest time between two firings of a cron schedule, in real time: CreateSchedule refuses an
   * expression with any two consecutive firings closer (daylight-saving changes included), and a
   * firing planned sooner than this after the schedule's previous one is skipped.
   */
  minIntervalSeconds: z.coerce.number().int().min(1).max(31_622_400).default(60),
  /** A firing handled this long after its time was missed (nothing ran then): the schedule's lateness policy decides. */
  lateAfterMs: z.coerce.number().int().min(100).default(60_000),
  /** Most missed firings a catch-up policy may run at once. */
  maxCatchUp: z.coerce.number().int().min(1).max(1_000).default(10),
  /** Firing jobs one worker process runs at once. */
  concurrency: z.coerce.number().int().min(1).max(100).default(4),
  /** How often one worker re-creates jobs active schedules lack and starts firings stuck before their task (0 = off). */
  reconcileIntervalMs: z.coerce.number().int().min(0).default(60_000),
});
