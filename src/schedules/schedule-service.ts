// The schedule operations (gateway extension, see schedule-types.ts) for one owner: create,
// get, list, pause, resume, delete. Creating claims a place in the owner's index (owner slot),
// stores the schedule (its own slot), then starts its BullMQ job (a job scheduler for cron, a
// delayed job for a one-time schedule); a failure after the claim undoes it.
import type { Queue } from 'bullmq';
import { addOneTimeJob, removeScheduleJobs, upsertCronJob, type ScheduleJobData } from '../../queues/schedules.ts';
import { newId } from '../ids.ts';
import { A2AError, invalidParams } from '../protocol/errors.ts';
import { LimitExceededError } from '../limits/limit-refusal.ts';
import { ownerKeyOf, type Owner } from '../store/task-store.ts';
import type { ScheduleStore } from '../store/schedules/schedule-store.ts';
import { firingsCloserThan } from './cron-spacing.ts';
import { cronProblem, nextTimes, timeZoneProblem } from './schedule-timing.ts';
import type { ScheduleDefinition, ScheduleRecord, ScheduleView, SchedulePush } from './schedule-types.ts';
import type { PushConfigs } from '../push/push-configs.ts';
import { maskedToken, SECRET_MASK } from '../push/push-config.ts';
import type { z } from 'zod';
import type { createScheduleRequestSchema } from '../protocol/schemas.ts';

export type CreateScheduleRequest = z.infer<typeof createScheduleRequestSchema>;

export interface ScheduleSettings {
  maxPerOwner: number;
  minIntervalSeconds: number;
  maxCatchUp: number;
}

/** One-time schedules may be at most this far ahead. */
const MAX_AHEAD_MS = 10 * 366 * 24 * 3600 * 1000;

export const scheduleNotFound = (id: string): A2AError =>
  new A2AError('TASK_NOT_FOUND', `Schedule ${id} was not found: it does not exist, was deleted, or is not yours.`, {
    metadata: { scheduleId: id, reason: 'SCHEDULE_NOT_FOUND' },
  });

export function scheduleView(record: ScheduleRecord, nowMs: number = Date.now()): ScheduleView {
  const { definition } = record;
  const view: ScheduleView = {
    id: record.id,
    state: record.state,
    message: definition.message,
    timeZone: definition.timeZone,
    lateness: definition.lateness,
    createdAt: new Date(record.createdAtMs).toISOString(),
    firedCount: record.firedCount,
    skippedCount: record.skippedCount,
    failedCount: record.failedCount,
    firings: record.firings.map((f) => ({
      firingId: f.firingId,
      scheduledFor: new Date(f.scheduledFor).toISOString(),
      state: f.state,
      ...(f.taskId === undefined || f.state === 'skipped' ? {} : { taskId: f.taskId }),
      ...(f.reason === undefined ? {} : { reason: f.reason }),
      ...(f.late === true ? { late: true } : {}),
    })),
  };
  if (definition.name !== undefined) view.name = definition.name;
  if (definition.metadata !== undefined) view.metadata = definition.metadata;
  if (definition.push !== undefined) view.taskPushNotificationConfig = maskedPush(definition.push);
  if (definition.at !== undefined) {
    view.at = new Date(definition.at).toISOString();
    if (record.state === 'active') view.nextFireAt = view.at;
  }
  if (definition.cron !== undefined) {
    view.cron = definition.cron;
    if (record.state === 'active') view.nextFireAt = new Date(nextTimes(definition.cron, definition.timeZone, nowMs, 1)[0] as number).toISOString();
  }
  return view;
}

/** A schedule's push config as reads show it: secrets masked, as for a task's configs. */
function maskedPush(push: SchedulePush): SchedulePush {
  const view: SchedulePush = { url: push.url };
  if (push.token !== undefined) view.token = maskedToken(push.token);
  if (push.authentication !== undefined) {
    view.authentication = { scheme: push.authentication.scheme };
    if (push.authentication.credentials !== undefined) view.authentication.credentials = SECRET_MASK;
  }
  return view;
}

export class ScheduleService {
  constructor(
    private readonly store: ScheduleStore,
    private readonly queue: Queue<ScheduleJobData>,
    private readonly settings: ScheduleSettings,
    /** Checks a schedule's push config as for a task's; undefined when push notifications are off. */
    private readonly push?: PushConfigs,
  ) {}

  /** The schedule's push config, checked like a task's (receiver policy, no masks), or undefined. */
  private async pushOf(request: CreateScheduleRequest): Promise<SchedulePush | undefined> {
    const input = request.taskPushNotificationConfig;
    if (input === undefined) return undefined;
    if (this.push === undefined) {
      throw new A2AError('PUSH_NOTIFICATION_NOT_SUPPORTED', 'This gateway sends no push notifications (push.enabled is false); create the schedule without taskPushNotificationConfig.');
    }
    const checked = await this.push.prepare('', input, 'taskPushNotificationConfig.');
    const push: SchedulePush = { url: checked.url };
    if (checked.token !== undefined) push.token = checked.token;
    if (checked.authentication !== undefined) push.authentication = checked.authentication;
    return push;
  }

  private definitionOf(request: CreateScheduleRequest, nowMs: number): ScheduleDefinition {
    const timeZone = request.timeZone ?? 'UTC';
    const zoneProblem = timeZoneProblem(timeZone);
    if (zoneProblem !== undefined) throw invalidParams([{ field: 'timeZone', description: zoneProblem }]);
    const lateness = { policy: request.lateness?.policy ?? 'run-once', catchUpMax: request.lateness?.catchUpMax ?? 1 };
    if (lateness.catchUpMax > this.settings.maxCatchUp) {
      throw invalidParams([{ field: 'lateness.catchUpMax', description: `is at most ${this.settings.maxCatchUp} (schedules.maxCatchUp)` }]);
    }
    const { role: _role, ...message } = request.message;
    const definition: ScheduleDefinition = { message, timeZone, lateness };
    if (request.name !== undefined) definition.name = request.name;
    if (request.metadata !== undefined) definition.metadata = request.metadata;
    if (request.cron !== undefined) {
      const problem = cronProblem(request.cron, timeZone);
      if (problem !== undefined) throw invalidParams([{ field: 'cron', description: problem }]);
      // Every pair of consecutive firings, not only the next two: `* 41,43 * * * *` fires once a
      // second for a minute each hour.
      const tooClose = firingsCloserThan(request.cron, timeZone, this.settings.minIntervalSeconds, nowMs);
      if (tooClose !== undefined) {
        throw invalidParams([
          {
            field: 'cron',
            description: `fires ${tooClose.gapSeconds} s after the firing before it (${tooClose.where}); the shortest interval allowed is ${this.settings.minIntervalSeconds} s (schedules.minIntervalSeconds)`,
          },
        ]);
      }
      definition.cron = request.cron;
    } else {
      const at = Date.parse(request.at as string);
      if (at <= nowMs) throw invalidParams([{ field: 'at', description: 'is in the past; a one-time schedule needs a future time' }]);
      if (at - nowMs > MAX_AHEAD_MS) throw invalidParams([{ field: 'at', description: 'is more than 10 years ahead' }]);
      definition.at = at;
    }
    return definition;
  }

  async create(owner: Owner, request: CreateScheduleRequest): Promise<ScheduleView> {
    const nowMs = Date.now();
    const definition = this.definitionOf(request, nowMs);
    const push = await this.pushOf(request);
    if (push !== undefined) definition.push = push;
    const ownerKey = ownerKeyOf(owner);
    const id = newId();
    const claim = await this.store.claim(ownerKey, id, this.settings.maxPerOwner);
    if (!claim.claimed) {
      throw new LimitExceededError(
        'schedules.maxPerOwner',
        'RESOURCE_EXHAUSTED',
        `You have ${claim.count} schedules with this agent, the most allowed (schedules.maxPerOwner); nothing was stored. Delete one first.`,
        { metadata: { reason: 'SCHEDULE_LIMIT', limit: String(this.settings.maxPerOwner) } },
      );
    }
    try {
      // Indexed before it exists: a crash before its job is added leaves an entry the schedule
      // reconciler finds (and completes, or drops when the record never came to be).
      await this.store.indexAll(id, nowMs);
      await this.store.create(id, ownerKey, definition, nowMs);
      if (definition.cron !== undefined) await upsertCronJob(this.queue, id, definition.cron, definition.timeZone);
      else await addOneTimeJob(this.queue, id, definition.at as number);
    } catch (error) {
      await this.store.setState(id, ownerKey, 'delete').catch(() => undefined);
      await removeScheduleJobs(this.queue, id).catch(() => undefined);
      await this.store.unclaim(ownerKey, id).catch(() => undefined);
      await this.store.unindexAll(id).catch(() => undefined);
      throw new A2AError('UNAVAILABLE', `The schedule could not be stored (${(error as Error).message}); nothing was kept. Retry after the Retry-After delay.`, {
        retryAfterSeconds: 1,
        cause: error,
      });
    }
    return this.get(owner, id);
  }

  async get(owner: Owner, id: string): Promise<ScheduleView> {
    const record = await this.store.read(id, ownerKeyOf(owner));
    if (record === undefined) throw scheduleNotFound(id);
    return scheduleView(record);
  }

  async list(owner: Owner, request: { pageSize?: number; pageToken?: string }): Promise<{ schedules: ScheduleView[]; nextPageToken: string; totalSize: number }> {
    const pageSize = request.pageSize ?? 50;
    const offset = request.pageToken === undefined || request.pageToken === '' ? 0 : Number(request.pageToken);
    const ownerKey = ownerKeyOf(owner);
    const page = await this.store.list(ownerKey, offset, pageSize);
    // Index entries are hints: one whose schedule is gone is left out.
    const records = await Promise.all(page.ids.map((id) => this.store.read(id, ownerKey, 5)));
    const schedules = records.flatMap((record) => (record === undefined ? [] : [scheduleView(record)]));
    const next = offset + page.ids.length;
    return { schedules, nextPageToken: next < page.total ? String(next) : '', totalSize: page.total };
  }

  async pause(owner: Owner, id: string): Promise<ScheduleView> {
    const changed = await this.store.setState(id, ownerKeyOf(owner), 'pause');
    if (changed === undefined) throw scheduleNotFound(id);
    if (changed.after === 'paused') await removeScheduleJobs(this.queue, id);
    return this.get(owner, id);
  }

  async resume(owner: Owner, id: string): Promise<ScheduleView> {
    const ownerKey = ownerKeyOf(owner);
    const changed = await this.store.setState(id, ownerKey, 'resume');
    if (changed === undefined) throw scheduleNotFound(id);
    const record = await this.store.read(id, ownerKey, 0);
    if (record !== undefined && record.state === 'active') {
      const { definition } = record;
      if (definition.cron !== undefined) await upsertCronJob(this.queue, id, definition.cron, definition.timeZone);
      else await addOneTimeJob(this.queue, id, definition.at as number);
    }
    return this.get(owner, id);
  }

  async delete(owner: Owner, id: string): Promise<Record<string, never>> {
    const ownerKey = ownerKeyOf(owner);
    if ((await this.store.read(id, ownerKey, 0)) === undefined) throw scheduleNotFound(id);
    // Jobs first: a firing that slips through finds the schedule gone and starts nothing.
    await removeScheduleJobs(this.queue, id);
    await this.store.setState(id, ownerKey, 'delete');
    await this.store.unclaim(ownerKey, id);
    await this.store.unindexAll(id);
    return {};
  }
}
