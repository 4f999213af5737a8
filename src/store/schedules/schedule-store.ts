// Schedules in Redis: the owner's claim (owner slot) first, then the schedule's record and
// firings (schedule slot), each step one single-slot script (docs/redis-slots.md).
import type { RedisClient } from '../../redis/connection.ts';
import { RedisLock } from '../locks.ts';
import { scriptCaller, type ScriptCaller } from '../script-call.ts';
import { schedClaimScript, schedCreateScript, schedFireScript, schedFiringDoneScript, schedSetStateScript, type DueFiring, type FireDecision } from '../schedule-scripts.ts';
import { allSchedulesKey, ownerSchedulesKey, scheduleKeys, scheduleReconcilerLockKey } from './schedule-keys.ts';
import type { FiringRecord, ScheduleDefinition, ScheduleRecord, ScheduleState } from '../../schedules/schedule-types.ts';

/** Firing records kept per schedule (the newest). */
export const FIRINGS_KEPT = 200;

const str = (value: unknown): string => (value === null || value === undefined ? '' : String(value));

export type { DueFiring };

export class ScheduleStore {
  private readonly call: ScriptCaller;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {
    this.call = scriptCaller(redis);
  }

  /** The lock of the reconcile pass, held as `token` (one worker reconciles at a time). */
  reconcilerLock(token: string): RedisLock {
    return new RedisLock(this.redis, this.call, scheduleReconcilerLockKey(this.prefix), token);
  }

  /** Claims a place in the owner's index; false when the owner is at its limit. */
  async claim(ownerKey: string, scheduleId: string, maxPerOwner: number): Promise<{ claimed: true } | { claimed: false; count: number }> {
    return this.call(schedClaimScript, { ownerSchedules: ownerSchedulesKey(this.prefix, ownerKey) }, { scheduleId, nowMs: Date.now(), maxPerOwner });
  }

  async unclaim(ownerKey: string, scheduleId: string): Promise<void> {
    await this.redis.zrem(ownerSchedulesKey(this.prefix, ownerKey), scheduleId);
  }

  /** Index steps of the global schedule index (a hint for the reconciler; index entries only move forward). */
  async indexAll(scheduleId: string, nowMs: number): Promise<void> {
    await this.redis.zadd(allSchedulesKey(this.prefix), 'NX', nowMs, scheduleId);
  }

  async unindexAll(scheduleId: string): Promise<void> {
    await this.redis.zrem(allSchedulesKey(this.prefix), scheduleId);
  }

  /** One page of the global index: schedule ids and when they were indexed. */
  async allPage(offset: number, count: number): Promise<{ id: string; indexedAtMs: number }[]> {
    const flat = await this.redis.zrange(allSchedulesKey(this.prefix), offset, offset + count - 1, 'WITHSCORES');
    const page: { id: string; indexedAtMs: number }[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) page.push({ id: flat[i] as string, indexedAtMs: Number(flat[i + 1]) });
    return page;
  }

  async create(scheduleId: string, ownerKey: string, definition: ScheduleDefinition, nowMs: number): Promise<void> {
    const handledUntil = definition.at === undefined ? nowMs : Math.min(nowMs, definition.at - 1);
    await this.call(schedCreateScript, { schedule: scheduleKeys(this.prefix, scheduleId).schedule }, { scheduleId, ownerKey, definition, nowMs, handledUntilMs: handledUntil });
  }

  /** The schedule, when it exists and is the owner's (any owner when ownerKey is undefined). */
  async read(scheduleId: string, ownerKey: string | undefined, firings = 20): Promise<ScheduleRecord | undefined> {
    const k = scheduleKeys(this.prefix, scheduleId);
    // The counts and the firings' index in one transaction: a firing decided between two reads
    // would be listed without being counted.
    const read = await this.redis.multi().hgetall(k.schedule).zrevrange(k.firingIndex, 0, Math.max(0, firings - 1)).exec();
    const fields = (read?.[0]?.[1] ?? {}) as Record<string, string>;
    if (fields.owner === undefined || (ownerKey !== undefined && fields.owner !== ownerKey)) return undefined;
    const ids = firings > 0 ? ((read?.[1]?.[1] ?? []) as string[]) : [];
    const records = ids.length === 0 ? [] : await this.redis.hmget(k.firings, ...ids);
    return {
      id: str(fields.id),
      ownerKey: fields.owner,
      definition: JSON.parse(str(fields.definition)) as ScheduleDefinition,
      state: str(fields.state) as ScheduleState,
      createdAtMs: Number(fields.createdAtMs),
      lastScheduledForMs: Number(fields.lastScheduledForMs),
      firedCount: Number(fields.firedCount ?? 0),
      skippedCount: Number(fields.skippedCount ?? 0),
      failedCount: Number(fields.failedCount ?? 0),
      firings: records.flatMap((json) => (json === null ? [] : [JSON.parse(json) as FiringRecord])),
    };
  }

  /** An owner's schedule ids, newest first, one page. */
  async list(ownerKey: string, offset: number, count: number): Promise<{ ids: string[]; total: number }> {
    const key = ownerSchedulesKey(this.prefix, ownerKey);
    const [ids, total] = await Promise.all([this.redis.zrevrange(key, offset, offset + count - 1), this.redis.zcard(key)]);
    return { ids, total };
  }

  async setState(scheduleId: string, ownerKey: string, action: 'pause' | 'resume' | 'delete'): Promise<{ before: string; after: string } | undefined> {
    return this.call(schedSetStateScript, scheduleKeys(this.prefix, scheduleId), { ownerKey, action, nowMs: Date.now() });
  }

  /**
   * Decides what fires now (the schedFire script); returns firings to start, and how many this
   * decision skipped as planned sooner than `minIntervalMs` after the previous firing.
   */
  async decide(
    scheduleId: string,
    input: { nowMs: number; lateAfterMs: number; candidates: number[]; taskIds: string[]; omitted: number; retentionMs: number; minIntervalMs: number },
  ): Promise<FireDecision> {
    const { nowMs, lateAfterMs, candidates, taskIds, omitted, retentionMs, minIntervalMs } = input;
    return this.call(schedFireScript, scheduleKeys(this.prefix, scheduleId), { nowMs, lateAfterMs, candidates, taskIds, omitted, firingsKept: FIRINGS_KEPT, retentionMs, minIntervalMs });
  }

  async firingDone(scheduleId: string, firingId: string, outcome: 'started' | 'failed', taskId: string, reason = ''): Promise<void> {
    await this.call(schedFiringDoneScript, scheduleKeys(this.prefix, scheduleId), { firingId, outcome, taskId, reason, nowMs: Date.now() });
  }
}
