// Schedules (gateway extension): a one-time and a cron schedule fire the right number of times,
// across a gateway and worker restart; firings missed while no worker ran follow the lateness
// policy (skip, run-once, catch-up with a cap) and are recorded, never dropped silently; pause,
// resume, delete, list, the per-owner limit and input validation. Real Redis, BullMQ job
// schedulers, real worker roles stopped and started.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agents } from '../src/agents/agents.ts';
import { startGatewayRole, type GatewayHandle } from '../src/gateway/server.ts';
import { createLogger } from '../src/logging/logger.ts';
import { startWorkerRole, type WorkerHandle } from '../src/runtime/worker-role.ts';
import { CronExpressionParser } from 'cron-parser';
import { createScheduleQueue, upsertCronJob } from '../queues/schedules.ts';
import { ROOT, rpc, startTestGateway, waitFor, type TestGateway } from './support/harness.ts';

interface Firing {
  firingId: string;
  scheduledFor: string;
  state: string;
  taskId?: string;
  reason?: string;
  late?: boolean;
}
interface Schedule {
  id: string;
  state: string;
  firedCount: number;
  skippedCount: number;
  nextFireAt?: string;
  firings: Firing[];
}

const SCHEDULES = { minIntervalSeconds: 1, lateAfterMs: 1_500 };

let gw: TestGateway;
const extraWorkers: WorkerHandle[] = [];
/** The gateway after the restart test (on the same port as gw's). */
let restarted: GatewayHandle | undefined;

beforeAll(async () => {
  gw = await startTestGateway({ name: 'sched', inProcessWorker: false, config: { schedules: SCHEDULES, push: { enabled: false } } });
});

afterAll(async () => {
  for (const worker of extraWorkers) await worker.close().catch(() => undefined);
  await restarted?.close();
  await gw?.close();
});

async function startWorker(config = gw.config): Promise<WorkerHandle> {
  const worker = await startWorkerRole(config, await Agents.load(config, ROOT), createLogger('silent'), { baseDir: ROOT });
  extraWorkers.push(worker);
  return worker;
}

async function stopWorker(worker: WorkerHandle): Promise<void> {
  extraWorkers.splice(extraWorkers.indexOf(worker), 1);
  await worker.close();
}

async function call<T>(method: string, params: Record<string, unknown>, url = gw.jsonRpcUrl): Promise<T> {
  const { body } = await rpc(url, method, params);
  if (body.error !== undefined) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
  return body.result as T;
}

const getSchedule = (id: string, url?: string): Promise<Schedule> => call<Schedule>('GetSchedule', { id }, url);

/** Cron times in (after, until]. */
function cronTimes(cron: string, afterMs: number, untilMs: number): number[] {
  const iterator = CronExpressionParser.parse(cron, { tz: 'UTC', currentDate: new Date(afterMs), endDate: new Date(untilMs) });
  const times: number[] = [];
  while (iterator.hasNext()) {
    const t = iterator.next().getTime();
    if (t > afterMs && t <= untilMs) times.push(t);
  }
  return times;
}

describe('schedules', () => {
  it('the card declares the schedules extension', async () => {
    const card = (await (await fetch(`${gw.url}/.well-known/agent-card.json`)).json()) as { capabilities: { extensions?: { uri: string }[] } };
    expect(card.capabilities.extensions?.map((e) => e.uri)).toContain('urn:a2a-gateway:ext:schedules:v1');
  });

  it('a one-time schedule fires once: a task of the caller, with the schedule in its metadata', async () => {
    const worker = await startWorker();
    try {
      const at = new Date(Date.now() + 1_500).toISOString();
      const created = await call<Schedule>('CreateSchedule', { message: { parts: [{ text: 'echo scheduled' }] }, at, name: 'once' });
      expect(created).toMatchObject({ state: 'active', nextFireAt: at, firedCount: 0 });
      const fired = await waitFor(async () => {
        const schedule = await getSchedule(created.id);
        return schedule.firings[0]?.state === 'started' ? schedule : undefined;
      }, 15_000, 'the firing');
      expect(fired.state).toBe('completed');
      expect(fired.firedCount).toBe(1);
      expect(fired.firings).toHaveLength(1);
      const taskId = fired.firings[0]?.taskId as string;
      const task = await waitFor(async () => {
        const read = await call<{ status: { state: string }; metadata: Record<string, unknown> }>('GetTask', { id: taskId });
        return read.status.state === 'TASK_STATE_COMPLETED' ? read : undefined;
      }, 15_000, 'the fired task to complete');
      expect(task.metadata.a2aGateway).toMatchObject({ schedule: { id: created.id, firingId: fired.firings[0]?.firingId, scheduledFor: at } });
      // Nothing fires again later.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect((await getSchedule(created.id)).firings).toHaveLength(1);
      // Completed: readable for the retention period, no longer listed nor counted against the owner's limit.
      expect(await gw.redis.pttl(`${gw.prefix}:{sched:${created.id}}:schedule`)).toBeGreaterThan(0);
      const listed = await call<{ schedules: { id: string }[] }>('ListSchedules', {});
      expect(listed.schedules.map((s) => s.id)).not.toContain(created.id);
    } finally {
      await stopWorker(worker);
    }
  });

  it('a cron schedule fires once per planned time across a gateway and worker restart', async () => {
    let worker = await startWorker();
    const cron = '* * * * * *'; // every second
    const contextId = `ctx-cron-${Date.now()}`;
    const created = await call<Schedule>('CreateSchedule', { message: { parts: [{ text: 'echo tick' }], contextId }, cron, lateness: { policy: 'catch-up', catchUpMax: 10 } });
    const createdAtMs = Date.now();
    await waitFor(async () => ((await getSchedule(created.id)).firedCount >= 2 ? true : undefined), 15_000, 'two firings');
    // Restart both roles (same Redis, same prefix); the gateway comes back on the same port.
    await stopWorker(worker);
    const agents = await Agents.load(gw.config, ROOT);
    await gw.gateway.close();
    restarted = await startGatewayRole({ ...gw.config, port: gw.gateway.port }, agents, createLogger('silent'), { baseDir: ROOT });
    {
      worker = await startWorker();
      await waitFor(async () => ((await getSchedule(created.id)).firedCount >= 5 ? true : undefined), 20_000, 'more firings after the restart');
      await call('PauseSchedule', { id: created.id });
      await new Promise((resolve) => setTimeout(resolve, 500)); // a firing decided before the pause finishes starting
      const schedule = await getSchedule(created.id);
      const planned = schedule.firings.map((f) => Date.parse(f.scheduledFor)).sort((a, b) => a - b);
      // Every planned second from creation to the last firing is there exactly once: none twice, none skipped silently.
      const expected = cronTimes(cron, createdAtMs - 1_000, planned.at(-1) as number).filter((t) => t >= (planned[0] as number));
      expect(planned).toEqual(expected);
      expect(planned[0]).toBeLessThanOrEqual(createdAtMs + 1_000);
      // Catch-up (cap 10) covered the restart: every one of them fired, each as its own task.
      expect(schedule.firings.every((f) => f.state === 'started')).toBe(true);
      const taskIds = schedule.firings.map((f) => f.taskId);
      expect(new Set(taskIds).size).toBe(taskIds.length);
      const listed = await call<{ tasks: { id: string }[] }>('ListTasks', { contextId, pageSize: 100 });
      expect(listed.tasks.map((t) => t.id).sort()).toEqual([...taskIds].sort());
      await stopWorker(worker);
    }
  }, 60_000);
});

// Each test waits seconds with no worker running, so they run at once, each on a prefix of its
// own: a worker one test starts must not handle another test's missed firings.
describe.concurrent('firings missed while no worker ran follow the lateness policy', () => {
  const isolated = (): Promise<TestGateway> => startTestGateway({ name: 'schedlate', inProcessWorker: false, config: { schedules: SCHEDULES, push: { enabled: false } } });

  it.each([
    ['skip', { policy: 'skip' }, (missed: number) => ({ lateFired: 0, skipped: missed })],
    ['run-once', { policy: 'run-once' }, (missed: number) => ({ lateFired: 1, skipped: missed - 1 })],
    ['catch-up, at most 2', { policy: 'catch-up', catchUpMax: 2 }, (missed: number) => ({ lateFired: 2, skipped: missed - 2 })],
  ])('%s', async (_name, lateness, expect_) => {
    const own = await isolated();
    const url = own.jsonRpcUrl;
    try {
      // No worker runs: every planned second passes unhandled.
      const created = await call<Schedule>('CreateSchedule', { message: { parts: [{ text: 'echo late' }] }, cron: '* * * * * *', lateness }, url);
      await new Promise((resolve) => setTimeout(resolve, 4_500));
      const worker = await startWorker(own.config);
      try {
        const schedule = await waitFor(async () => {
          const read = await getSchedule(created.id, url);
          return read.firings.some((f) => f.late === true || f.state === 'skipped') && read.firings.every((f) => f.state !== 'starting') ? read : undefined;
        }, 15_000, 'the missed firings to be decided');
        await call('DeleteSchedule', { id: created.id }, url);
        const late = schedule.firings.filter((f) => f.late === true);
        const skipped = schedule.firings.filter((f) => f.state === 'skipped');
        const missed = late.length + skipped.length;
        expect(missed).toBeGreaterThanOrEqual(3);
        const want = expect_(missed);
        expect(late.length).toBe(want.lateFired);
        expect(skipped.length).toBe(want.skipped);
        expect(schedule.skippedCount).toBe(want.skipped);
        for (const firing of skipped) expect(firing.reason).toMatch(/missed while nothing ran/);
        // The late firings are the most recent missed ones.
        const missedTimes = [...late, ...skipped].map((f) => Date.parse(f.scheduledFor)).sort((a, b) => a - b);
        expect(late.map((f) => Date.parse(f.scheduledFor)).sort((a, b) => a - b)).toEqual(missedTimes.slice(missedTimes.length - want.lateFired));
        for (const firing of late) expect(firing.state).toBe('started');
      } finally {
        await stopWorker(worker);
      }
    } finally {
      await own.close();
    }
  }, 40_000);

  it.each([
    ['run-once', 'started', 1, 0],
    ['skip', 'skipped', 0, 1],
  ] as const)('a one-time schedule due while no gateway and no worker ran (%s): decided once after the restart', async (policy, firingState, firedCount, skippedCount) => {
    const own = await isolated();
    try {
      const at = new Date(Date.now() + 1_000).toISOString();
      let created: Schedule;
      try {
        created = await call<Schedule>('CreateSchedule', { message: { parts: [{ text: 'echo once, late' }] }, at, lateness: { policy } }, own.jsonRpcUrl);
      } finally {
        await own.gateway.close();
      }
      // Past its time and past lateAfterMs with nothing running, then a new gateway and a worker.
      await new Promise((resolve) => setTimeout(resolve, 1_000 + SCHEDULES.lateAfterMs + 1_000));
      const after = await startGatewayRole({ ...own.config, port: 0 }, await Agents.load(own.config, ROOT), createLogger('silent'), { baseDir: ROOT });
      const worker = await startWorker(own.config);
      try {
        const afterUrl = `${after.url}/a2a/jsonrpc`;
        const schedule = await waitFor(async () => {
          const read = await getSchedule(created.id, afterUrl);
          return read.state !== 'active' && read.firings.length > 0 && read.firings.every((f) => f.state !== 'starting') ? read : undefined;
        }, 20_000, 'the one-time firing to be decided');
        expect(schedule).toMatchObject({ state: 'completed', firedCount, skippedCount });
        expect(schedule.firings).toEqual([expect.objectContaining({ scheduledFor: at, state: firingState })]);
        if (firingState === 'started') {
          expect(schedule.firings[0]?.late).toBe(true);
          const taskId = schedule.firings[0]?.taskId as string;
          await waitFor(async () => ((await call<{ status: { state: string } }>('GetTask', { id: taskId }, afterUrl)).status.state === 'TASK_STATE_COMPLETED' ? true : undefined), 15_000, 'the late task to complete');
        } else {
          expect(schedule.firings[0]?.reason).toMatch(/missed while nothing ran/);
        }
        // Decided once: nothing fires later.
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        expect((await getSchedule(created.id, afterUrl)).firings).toHaveLength(1);
      } finally {
        await stopWorker(worker);
        await after.close();
      }
    } finally {
      await own.close();
    }
  }, 60_000);
});

describe('schedule reconciler', () => {
  it('re-creates the job an active schedule lost (a crash between storing it and adding its job) and drops index entries of schedules that never came to be', async () => {
    const worker = await startWorker();
    try {
      const created = await call<Schedule>('CreateSchedule', { message: { parts: [{ text: 'echo found' }] }, cron: '* * * * * *' });
      const queue = createScheduleQueue(gw.redis, gw.prefix);
      try {
        await queue.removeJobScheduler(created.id);
        expect(await queue.getJobScheduler(created.id)).toBeUndefined();
        const firedBefore = (await getSchedule(created.id)).firedCount;
        // An entry whose record was never written, indexed long ago.
        await gw.redis.zadd(`${gw.prefix}:{schedidx}:all`, Date.now() - 120_000, 'never-created');
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        expect((await getSchedule(created.id)).firedCount).toBeLessThanOrEqual(firedBefore + 1); // at most one already in flight
        expect(await worker.schedules?.reconciler.reconcileOnce()).toBe(true);
        expect(await queue.getJobScheduler(created.id)).toBeDefined();
        expect(await gw.redis.zscore(`${gw.prefix}:{schedidx}:all`, 'never-created')).toBeNull();
        await waitFor(async () => ((await getSchedule(created.id)).firedCount >= firedBefore + 2 ? true : undefined), 10_000, 'firings again');
      } finally {
        await call('DeleteSchedule', { id: created.id });
        await queue.close();
      }
      expect(await gw.redis.zscore(`${gw.prefix}:{schedidx}:all`, created.id)).toBeNull();
    } finally {
      await stopWorker(worker);
    }
  }, 30_000);
});

describe('schedule management', () => {
  it('pause stops firings, resume restarts them without catching up the paused time; delete removes it', async () => {
    const worker = await startWorker();
    try {
      const created = await call<Schedule>('CreateSchedule', { message: { parts: [{ text: 'echo p' }] }, cron: '* * * * * *', lateness: { policy: 'catch-up', catchUpMax: 10 } });
      await waitFor(async () => ((await getSchedule(created.id)).firedCount >= 1 ? true : undefined), 10_000, 'a firing');
      const paused = await call<Schedule>('PauseSchedule', { id: created.id });
      const pausedAtMs = Date.now();
      expect(paused.state).toBe('paused');
      expect(paused.nextFireAt).toBeUndefined();
      await new Promise((resolve) => setTimeout(resolve, 500));
      const atPause = (await getSchedule(created.id)).firings.length;
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      expect((await getSchedule(created.id)).firings.length).toBe(atPause);
      const resumedAtMs = Date.now();
      expect((await call<Schedule>('ResumeSchedule', { id: created.id })).state).toBe('active');
      const after = await waitFor(async () => {
        const read = await getSchedule(created.id);
        return read.firings.length > atPause ? read : undefined;
      }, 10_000, 'a firing after resume');
      // Nothing planned while paused was fired or recorded as skipped: pausing said not to run.
      const duringPause = after.firings.filter((f) => Date.parse(f.scheduledFor) > pausedAtMs && Date.parse(f.scheduledFor) < resumedAtMs);
      expect(duringPause).toEqual([]);
      expect(after.firings.every((f) => f.state !== 'skipped')).toBe(true);

      const listed = await call<{ schedules: { id: string }[] }>('ListSchedules', {});
      expect(listed.schedules.map((s) => s.id)).toContain(created.id);
      expect(await call('DeleteSchedule', { id: created.id })).toEqual({});
      const gone = await rpc(gw.jsonRpcUrl, 'GetSchedule', { id: created.id });
      expect((gone.body.error as { code: number }).code).toBe(-32001);
      expect(JSON.stringify(gone.body.error)).toContain('SCHEDULE_NOT_FOUND');
      const relisted = await call<{ schedules: { id: string }[] }>('ListSchedules', {});
      expect(relisted.schedules.map((s) => s.id)).not.toContain(created.id);
    } finally {
      await stopWorker(worker);
    }
  }, 30_000);

  it('over HTTP+JSON too: create, get, pause, resume, list, delete', async () => {
    const headers = { 'Content-Type': 'application/json', 'A2A-Version': '1.0' };
    const at = new Date(Date.now() + 3_600_000).toISOString();
    const created = (await (await fetch(`${gw.restUrl}/schedules`, { method: 'POST', headers, body: JSON.stringify({ message: { parts: [{ text: 'echo rest' }] }, at }) })).json()) as Schedule;
    expect(created.state).toBe('active');
    expect(((await (await fetch(`${gw.restUrl}/schedules/${created.id}`, { headers })).json()) as Schedule).id).toBe(created.id);
    expect(((await (await fetch(`${gw.restUrl}/schedules/${created.id}:pause`, { method: 'POST', headers })).json()) as Schedule).state).toBe('paused');
    expect(((await (await fetch(`${gw.restUrl}/schedules/${created.id}:resume`, { method: 'POST', headers })).json()) as Schedule).state).toBe('active');
    expect(((await (await fetch(`${gw.restUrl}/schedules`, { headers })).json()) as { schedules: Schedule[] }).schedules.some((s) => s.id === created.id)).toBe(true);
    expect((await fetch(`${gw.restUrl}/schedules/${created.id}`, { method: 'DELETE', headers })).status).toBe(200);
    expect((await fetch(`${gw.restUrl}/schedules/${created.id}`, { headers })).status).toBe(404);
  });

  it.each([
    ['both at and cron', { at: new Date(Date.now() + 60_000).toISOString(), cron: '* * * * *' }, 'at'],
    ['neither', {}, 'at'],
    ['a bad cron', { cron: 'every tuesday' }, 'cron'],
    ['a bad time zone', { cron: '0 9 * * *', timeZone: 'Mars/Olympus' }, 'timeZone'],
    ['a time in the past', { at: '2020-01-01T00:00:00Z' }, 'at'],
    ['a catch-up over the cap', { cron: '0 9 * * *', lateness: { policy: 'catch-up', catchUpMax: 50 } }, 'lateness.catchUpMax'],
  ])('refuses %s with -32602, storing nothing', async (_what, fields, field) => {
    const before = await gw.snapshotKeys();
    const { body } = await rpc(gw.jsonRpcUrl, 'CreateSchedule', { message: { parts: [{ text: 'echo x' }] }, ...fields });
    expect((body.error as { code: number }).code).toBe(-32602);
    expect(JSON.stringify(body.error)).toContain(`"field":"${field}"`);
    expect([...(await gw.snapshotKeys()).keys()].filter((k) => k.includes('{sched:'))).toEqual([...before.keys()].filter((k) => k.includes('{sched:')));
  });

  it('refuses a cron more frequent than schedules.minIntervalSeconds, and more schedules than schedules.maxPerOwner', async () => {
    const strict = await startTestGateway({ name: 'schedlim', inProcessWorker: false, config: { schedules: { minIntervalSeconds: 60, maxPerOwner: 2 }, push: { enabled: false } } });
    try {
      const fast = await rpc(strict.jsonRpcUrl, 'CreateSchedule', { message: { parts: [{ text: 'echo x' }] }, cron: '*/10 * * * * *' });
      expect(JSON.stringify(fast.body.error)).toContain('shortest interval allowed is 60 s');
      for (let i = 0; i < 2; i += 1) expect((await rpc(strict.jsonRpcUrl, 'CreateSchedule', { message: { parts: [{ text: 'echo x' }] }, cron: '0 9 * * *' })).body.error).toBeUndefined();
      const third = await rpc(strict.jsonRpcUrl, 'CreateSchedule', { message: { parts: [{ text: 'echo x' }] }, cron: '0 9 * * *' });
      expect((third.body.error as { code: number }).code).toBe(-31429);
      expect(JSON.stringify(third.body.error)).toContain('SCHEDULE_LIMIT');
    } finally {
      await strict.close();
    }
  });
});

describe('schedules.minIntervalSeconds holds over every firing', () => {
  let strict: TestGateway;
  beforeAll(async () => {
    strict = await startTestGateway({ name: 'schedmin', config: { schedules: { minIntervalSeconds: 60, lateAfterMs: 60_000 }, push: { enabled: false } } });
  });
  afterAll(async () => {
    await strict?.close();
  });
  const create = (fields: Record<string, unknown>): Promise<{ status: number; body: Record<string, unknown> }> =>
    rpc(strict.jsonRpcUrl, 'CreateSchedule', { message: { parts: [{ text: 'echo x' }] }, ...fields });

  /** A fixed-offset zone (Etc/GMT∓N) whose wall clock reads about noon now, so "the next two firings" start far from midnight. */
  function noonZone(): string {
    const shift = 12 - new Date().getUTCHours();
    return shift === 0 ? 'Etc/GMT' : `Etc/GMT${shift > 0 ? '-' : '+'}${Math.abs(shift)}`;
  }

  it.each<[string, { timeZone?: string; minIntervalSeconds?: number }, string]>([
    ['* 41,43 * * * *', {}, '00:41:00 then 00:41:01'],
    ['*/5 * * * * *', {}, '00:00:00 then 00:00:05'],
    ['0,30 * * * * *', {}, '00:00:00 then 00:00:30'],
    // Four firings a day: 00:00, 00:59, 23:00, 23:59. The next two from noon are an hour apart,
    // but 23:59 and the next day's 00:00 are one minute apart, less than a 2-minute minimum.
    ['0 0,59 0,23 * * *', { timeZone: 'noon', minIntervalSeconds: 120 }, '23:59:00 then 00:00:00 1 day(s) later'],
    // Once a week at 02:30, minimum 7 days less half an hour: the week whose Sunday loses an hour
    // to daylight saving is half an hour too short.
    ['0 30 2 * * 0', { timeZone: 'Europe/Paris', minIntervalSeconds: 7 * 86_400 - 1_800 }, 'daylight-saving change in Europe/Paris'],
  ])('refuses %s with -32602 naming the setting, storing nothing', async (cron, options, where) => {
    const gateway = options.minIntervalSeconds === undefined ? strict : await startTestGateway({ name: 'schedmin', inProcessWorker: false, config: { schedules: { minIntervalSeconds: options.minIntervalSeconds }, push: { enabled: false } } });
    try {
      const before = await gateway.snapshotKeys();
      const timeZone = options.timeZone === 'noon' ? noonZone() : (options.timeZone ?? 'UTC');
      const { body } = await rpc(gateway.jsonRpcUrl, 'CreateSchedule', { message: { parts: [{ text: 'echo x' }] }, cron, timeZone });
      const error = body.error as { code: number; data: unknown };
      expect(error.code).toBe(-32602);
      const text = JSON.stringify(error);
      expect(text).toContain('"field":"cron"');
      expect(text).toContain('schedules.minIntervalSeconds');
      expect(text).toContain(where);
      expect([...(await gateway.snapshotKeys()).keys()].filter((k) => k.includes('{sched'))).toEqual([...before.keys()].filter((k) => k.includes('{sched')));
    } finally {
      if (gateway !== strict) await gateway.close();
    }
  });

  it.each([
    ['0 */5 * * * *', 'UTC'],
    ['0 0 * * *', 'UTC'],
    ['0 0 9 * * MON-FRI', 'Europe/Paris'],
    ['0 * * * * *', 'America/New_York'],
    ['0 0,59 0,23 * * 1', 'UTC'], // 23:59 on Monday, then 00:00 on the next Monday
  ])('accepts %s (%s)', async (cron, timeZone) => {
    const { body } = await create({ cron, timeZone });
    expect(body.error).toBeUndefined();
    await rpc(strict.jsonRpcUrl, 'DeleteSchedule', { id: (body.result as { id: string }).id });
  });

  it('a firing planned sooner than the minimum after the previous one is skipped with the reason, whatever the stored expression says', async () => {
    const { body } = await create({ cron: '0 0 * * * *', lateness: { policy: 'catch-up', catchUpMax: 10 } });
    const id = (body.result as { id: string }).id;
    try {
      // Someone with Redis access rewrites the schedule to fire every second, record and job alike.
      const key = `${strict.prefix}:{sched:${id}}:schedule`;
      const definition = JSON.parse((await strict.redis.hget(key, 'definition')) as string) as Record<string, unknown>;
      await strict.redis.hset(key, 'definition', JSON.stringify({ ...definition, cron: '* * * * * *' }));
      const queue = createScheduleQueue(strict.redis, strict.prefix);
      try {
        await upsertCronJob(queue, id, '* * * * * *', 'UTC');
        const schedule = await waitFor(async () => {
          const read = (await rpc(strict.jsonRpcUrl, 'GetSchedule', { id })).body.result as Schedule;
          return read.firings.filter((f) => f.state === 'skipped').length >= 3 ? read : undefined;
        }, 20_000, 'firings skipped as too soon');
        await queue.removeJobScheduler(id);
        const started = schedule.firings.filter((f) => f.state === 'started' || f.state === 'starting');
        const skipped = schedule.firings.filter((f) => f.state === 'skipped');
        expect(started).toHaveLength(1);
        for (const firing of skipped) {
          expect(firing.reason).toMatch(/^planned \d+ s after the previous firing; the shortest interval allowed is 60 s \(schedules.minIntervalSeconds\)$/);
          expect(Date.parse(firing.scheduledFor) - Date.parse(started[0]?.scheduledFor as string)).toBeLessThan(60_000);
        }
        expect(schedule.skippedCount).toBe(skipped.length);
      } finally {
        await queue.close();
      }
    } finally {
      await rpc(strict.jsonRpcUrl, 'DeleteSchedule', { id });
    }
  }, 30_000);
});
