// Redis keys of schedules, in the slots docs/redis-slots.md assigns: a schedule's record and
// firings in `{sched:<id>}`, an owner's index of schedules in the owner's slot `{o:<ownerKey>}`.
export interface ScheduleKeys {
  /** HASH: id, owner, definition JSON, state, createdAtMs, lastScheduledForMs, counters. */
  schedule: string;
  /** HASH firingId → firing JSON (planned time, state, task id, reason). */
  firings: string;
  /** ZSET firingId → planned time (ms): order and the cap on kept records. */
  firingIndex: string;
}

export function scheduleKeys(prefix: string, scheduleId: string): ScheduleKeys {
  const base = `${prefix}:{sched:${scheduleId}}`;
  return { schedule: `${base}:schedule`, firings: `${base}:firings`, firingIndex: `${base}:firingidx` };
}

/** ZSET scheduleId → created-at ms: every schedule (a hint the reconciler walks; its own slot). */
export const allSchedulesKey = (prefix: string): string => `${prefix}:{schedidx}:all`;

/** STRING: token of the worker reconciling schedules right now. */
export const scheduleReconcilerLockKey = (prefix: string): string => `${prefix}:{schedidx}:lock`;

/** ZSET scheduleId → created-at ms: an owner's schedules (list, per-owner limit). */
export const ownerSchedulesKey = (prefix: string, ownerKey: string): string => `${prefix}:{o:${ownerKey}}:schedules`;
