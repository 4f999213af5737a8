// A schedule: a message sent to an agent later (once, `at`) or repeatedly (`cron`, in a time
// zone), each firing a new task owned by the schedule's owner. Gateway extension (A2A 1.0 has no
// schedule method), declared on the card by src/extensions/schedules.ts.
import type { JsonObject, Part } from '../protocol/types.ts';

export const LATENESS_POLICIES = ['skip', 'run-once', 'catch-up'] as const;
export type LatenessPolicy = (typeof LATENESS_POLICIES)[number];

/** What the caller asked for, as stored. */
export interface ScheduleDefinition {
  /** The message each firing sends (no messageId: each firing gets its own). */
  message: { parts: Part[]; contextId?: string; metadata?: JsonObject; extensions?: string[] };
  /** One-time: when (ms since the epoch). */
  at?: number;
  /** Repeating: a cron expression (5 fields, or 6 with seconds). */
  cron?: string;
  timeZone: string;
  /** What happens to firings missed while nothing ran (decided by the schedFire script). */
  lateness: { policy: LatenessPolicy; catchUpMax: number };
  /** Metadata of each firing's task. */
  metadata?: JsonObject;
  name?: string;
  /** The push config put on every task a firing starts (its secrets are never shown). */
  push?: SchedulePush;
}

/** A schedule's push config: the webhook fields of a TaskPushNotificationConfig. */
export interface SchedulePush {
  url: string;
  token?: string;
  authentication?: { scheme: string; credentials?: string };
}

export type ScheduleState = 'active' | 'paused' | 'completed';

export interface FiringRecord {
  firingId: string;
  scheduledFor: number;
  state: 'starting' | 'started' | 'skipped' | 'failed';
  taskId?: string;
  reason?: string;
  late?: boolean;
  decidedAtMs: number;
  startedAtMs?: number;
}

export interface ScheduleRecord {
  id: string;
  ownerKey: string;
  definition: ScheduleDefinition;
  state: ScheduleState;
  createdAtMs: number;
  lastScheduledForMs: number;
  firedCount: number;
  skippedCount: number;
  failedCount: number;
  firings: FiringRecord[];
}

/** A schedule as the API returns it. */
export interface ScheduleView {
  id: string;
  name?: string;
  state: ScheduleState;
  message: ScheduleDefinition['message'];
  at?: string;
  cron?: string;
  timeZone: string;
  lateness: ScheduleDefinition['lateness'];
  metadata?: JsonObject;
  /** The push config each firing's task gets, secrets masked. */
  taskPushNotificationConfig?: SchedulePush;
  createdAt: string;
  nextFireAt?: string;
  firedCount: number;
  skippedCount: number;
  failedCount: number;
  /** The newest firings, newest first. */
  firings: { firingId: string; scheduledFor: string; state: FiringRecord['state']; taskId?: string; reason?: string; late?: boolean }[];
}
