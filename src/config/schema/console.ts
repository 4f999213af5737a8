// Operator console settings and the recent-tasks index behind it.
import { z } from 'zod';
import { booleanish } from './values.ts';

export const consoleSchema = z.strictObject({
  /** Serve the operator console at /console/ (its data comes from the operator operations: a2a:operator to look, a2a:admin to act). */
  enabled: booleanish.default(true),
  /**
   * Most tasks the recent-tasks index (the operators' list across owners) keeps; past it the
   * least recently changed leave it first. Entries also leave after retentionSeconds untouched.
   */
  recentTasksMax: z.coerce.number().int().min(100).default(100_000),
  /**
   * How long a process gathers task changes before it writes them to the indexes: the recent-tasks
   * index in one command, and each owner's task and context indexes and active set in one command
   * per owner (docs/redis-slots.md). An owner's ListTasks order may lag a change by this much.
   */
  recentTasksFlushMs: z.coerce.number().int().min(10).max(10_000).default(1_000),
});
