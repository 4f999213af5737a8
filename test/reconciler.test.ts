// The reconciler: an open task whose turn job is gone (removed, lost by Redis, failed for good,
// never added) is queued again and completes; active-set entries of tasks that are gone or no
// longer active are removed, so they stop counting against the owner's cap; one lock lets only
// one worker process sweep at a time; a task whose job is alive is left alone.
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { turnQueueName, TurnQueues, turnJobId, type TurnJobData } from '../queues/turns.ts';
import { Agents } from '../src/agents/agents.ts';
import type { Logger } from '../src/logging/logger.ts';
import type { Task } from '../src/protocol/types.ts';
import { Reconciler } from '../src/runtime/reconciler.ts';
import { startWorkerRole, type WorkerHandle } from '../src/runtime/worker-role.ts';
import { TaskStore } from '../src/store/task-store.ts';
import { REDIS_URL, ROOT, rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';

interface Harness {
  gw: TestGateway;
  store: TaskStore;
  /** The default agent's turn queue (all these tests' tasks are the default agent's). */
  queue: Queue<TurnJobData>;
  queues: TurnQueues;
  connection: Redis;
}

const open: Harness[] = [];
const workers: WorkerHandle[] = [];

afterEach(async () => {
  for (const worker of workers.splice(0)) await worker.close();
  for (const h of open.splice(0)) {
    await h.queues.close();
    h.connection.disconnect();
    await h.gw.close();
  }
});

afterAll(async () => {
  for (const worker of workers) await worker.close();
});

/** A gateway with no worker, so a queued turn stays queued until the test starts one. */
async function harness(name: string, config: Record<string, unknown> = {}): Promise<Harness> {
  const gw = await startTestGateway({ name, inProcessWorker: false, config: { reconcileIntervalMs: 0, ...config } });
  const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const queues = new TurnQueues(connection, gw.prefix);
  const h = { gw, store: new TaskStore(gw.redis, gw.prefix), queue: queues.of('default'), queues, connection };
  open.push(h);
  return h;
}

function recordingLogger(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  return {
    warnings,
    debug: () => undefined,
    info: () => undefined,
    warn: (message) => warnings.push(message),
    error: () => undefined,
  };
}

function reconciler(h: Harness, logger: Logger = recordingLogger(), queues: TurnQueues = h.queues): Reconciler {
  return new Reconciler({ store: h.store, queues, logger, intervalMs: 0, quietForMs: h.gw.config.lockDurationMs * 2 });
}

async function send(h: Harness, text: string): Promise<Task> {
  const reply = await rpc(h.gw.jsonRpcUrl, 'SendMessage', { message: textMessage(text), configuration: { returnImmediately: true } });
  expect(reply.body.error).toBeUndefined();
  return (reply.body.result as { task: Task }).task;
}

/** Ages the task past the reconciler's quiet period instead of sleeping through it. */
async function makeQuiet(h: Harness, taskId: string): Promise<void> {
  await h.gw.redis.hset(`${h.gw.prefix}:{${taskId}}:task`, 'updatedAtMs', String(Date.now() - 10 * h.gw.config.lockDurationMs));
}

async function removeJob(h: Harness, taskId: string): Promise<void> {
  const job = await h.queue.getJob(turnJobId(taskId, 1));
  expect(job, 'the turn was queued').toBeDefined();
  await job?.remove();
  expect(await h.queue.getJob(turnJobId(taskId, 1))).toBeUndefined();
}

async function startWorker(h: Harness, config: Record<string, unknown> = {}, logger?: Logger): Promise<WorkerHandle> {
  const worker = await startWorkerRole({ ...h.gw.config, ...config }, await Agents.load({ ...h.gw.config, ...config }, ROOT), logger ?? recordingLogger());
  workers.push(worker);
  return worker;
}

async function finalState(h: Harness, taskId: string): Promise<string> {
  return waitFor(async () => {
    const task = (await rpc(h.gw.jsonRpcUrl, 'GetTask', { id: taskId })).body.result as Task;
    return ['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED'].includes(task.status.state) ? task.status.state : undefined;
  }, 30_000, `task ${taskId} to end`);
}

async function activeSetKey(h: Harness): Promise<string> {
  // Every SCAN step: on a Redis shared with other suites one step of 1000 may not reach the key.
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await h.gw.redis.scan(cursor, 'MATCH', h.store.keys.ownerActivePattern(), 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  expect(keys).toHaveLength(1);
  return keys[0] as string;
}

describe('reconciler', () => {
  it('queues the turn of an open task whose job was removed again, with one warning, and a worker completes it', async () => {
    const h = await harness('reconcile-missing');
    const task = await send(h, 'long 2');
    await removeJob(h, task.id);
    await makeQuiet(h, task.id);

    const logger = recordingLogger();
    const worker = await startWorker(h, {}, logger);
    // Without the sweep nothing would ever run this task: there is no job to take.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await rpc(h.gw.jsonRpcUrl, 'GetTask', { id: task.id })).body.result).toMatchObject({ status: { state: 'TASK_STATE_SUBMITTED' } });

    const report = await worker.reconciler.reconcileOnce();
    expect(report).toMatchObject({ swept: true, requeued: [{ taskId: task.id, turn: 1, job: 'missing' }] });
    const warnings = logger.warnings.filter((w) => w.includes(task.id));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/turn 1 of task/);
    expect(await finalState(h, task.id)).toBe('TASK_STATE_COMPLETED');
    // The lock is released after the sweep, so the next interval's sweeper can take it.
    expect(await h.gw.redis.exists(h.store.keys.reconcilerLock())).toBe(0);
  });

  it('replaces a job that failed for good while its task is still open', async () => {
    const h = await harness('reconcile-failed');
    const task = await send(h, 'echo again');
    const jobId = turnJobId(task.id, 1);
    const data = (await h.queue.getJob(jobId))?.data as TurnJobData;
    await removeJob(h, task.id);
    // The same job id, failed with no retries left, as after a turn job gave up.
    await h.queue.add('turn', data, { jobId, attempts: 1 });
    const failingConnection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const failing = new Worker<TurnJobData>(turnQueueName('default'), async () => {
      throw new Error('infrastructure trouble');
    }, { connection: failingConnection, prefix: h.gw.prefix });
    await waitFor(async () => ((await h.queue.getJobState(jobId)) === 'failed' ? true : undefined), 20_000, 'the job to fail');
    await failing.close();
    failingConnection.disconnect();
    await makeQuiet(h, task.id);

    const report = await reconciler(h).reconcileOnce();
    expect(report.requeued).toEqual([{ taskId: task.id, turn: 1, job: 'failed' }]);
    // Queued again with a priority (every turn has one: see turnPriority).
    expect(await h.queue.getJobState(jobId)).toBe('prioritized');
    await startWorker(h);
    expect(await finalState(h, task.id)).toBe('TASK_STATE_COMPLETED');
  });

  it('runs on its own every reconcileIntervalMs in a worker process', async () => {
    const h = await harness('reconcile-interval');
    const task = await send(h, 'echo later');
    await removeJob(h, task.id);
    await makeQuiet(h, task.id);
    await startWorker(h, { reconcileIntervalMs: 200 });
    expect(await finalState(h, task.id)).toBe('TASK_STATE_COMPLETED');
  });

  it('leaves a task alone whose job is alive, and one that changed recently', async () => {
    const h = await harness('reconcile-alive');
    const alive = await send(h, 'echo alive');
    const recent = await send(h, 'echo recent');
    await makeQuiet(h, alive.id);
    await removeJob(h, recent.id);
    const before = await h.queue.getJob(turnJobId(alive.id, 1));

    const logger = recordingLogger();
    const report = await reconciler(h, logger).reconcileOnce();
    expect(report).toEqual({ swept: true, requeued: [], pruned: [], woken: [] });
    expect(logger.warnings).toEqual([]);
    const after = await h.queue.getJob(turnJobId(alive.id, 1));
    expect(after?.timestamp).toBe(before?.timestamp);
    expect(await h.queue.getJobState(turnJobId(alive.id, 1))).toBe('prioritized');
    expect(await h.queue.getJob(turnJobId(recent.id, 1))).toBeUndefined();
    expect(await h.queue.getJobCounts('waiting', 'prioritized')).toEqual({ waiting: 0, prioritized: 1 });
  });

  it('suspects a task whose last run no job carried (a turn started where it was accepted) once its lease lapsed, before one a job carries', async () => {
    const h = await harness('reconcile-without-job');
    const local = await send(h, 'long 2');
    const queued = await send(h, 'long 2');
    for (const task of [local, queued]) {
      await removeJob(h, task.id);
      const taskKey = `${h.gw.prefix}:{${task.id}}:task`;
      const ownerKey = (await h.gw.redis.hget(taskKey, 'owner')) as string;
      // A run takes the lease (the local one without a job), then its process dies: the lease lapses.
      const lease = await h.store.turns.acquireLease({ taskId: task.id, ownerKey, contextId: task.contextId, workerId: 'host:1:gone', leaseTtlMs: 60_000, withoutJob: task === local, now: new Date() });
      expect(lease.kind).toBe('acquired');
      await h.gw.redis.del(`${h.gw.prefix}:{${task.id}}:lease`);
      // Quiet for longer than a run without a job must be, not as long as one with a job.
      await h.gw.redis.hset(taskKey, 'updatedAtMs', String(Date.now() - 3_000));
    }
    const sweep = new Reconciler({ store: h.store, queues: h.queues, logger: recordingLogger(), intervalMs: 0, quietForMs: 60_000, withoutJobQuietForMs: 1_000 });
    const report = await sweep.reconcileOnce();
    expect(report.requeued).toEqual([{ taskId: local.id, turn: 1, job: 'missing' }]);
    expect(await h.queue.getJob(turnJobId(local.id, 1))).toBeDefined();
    expect(await h.queue.getJob(turnJobId(queued.id, 1))).toBeUndefined();
  });

  it('removes active-set entries of deleted and finished tasks, which frees the owner\'s active-task cap', async () => {
    const h = await harness('reconcile-prune', { limits: { requestsPerSecond: 0, maxActiveTasks: 3 } });
    const live = await send(h, 'echo live');
    const canceled = await send(h, 'echo canceled');
    expect((await rpc(h.gw.jsonRpcUrl, 'CancelTask', { id: canceled.id })).body.error).toBeUndefined();
    const key = await activeSetKey(h);
    // Leftovers of a crash a while ago: a task whose keys are gone, and a finished one still listed.
    // (A fresh entry newer than its task is a claim whose task is being created or resumed: it stays, see below.)
    const crashedAt = Date.now() - 60_000;
    await h.gw.redis.zadd(key, crashedAt, 'deleted-task', crashedAt, canceled.id);
    expect(await h.gw.redis.zcard(key)).toBe(3);
    // A fresh claim is no leftover: the sweep keeps it (its task is being created).
    await h.gw.redis.zadd(key, Date.now(), 'being-created');

    const report = await reconciler(h).reconcileOnce();
    expect(report.pruned.map((p) => [p.taskId, p.state]).sort()).toEqual([
      [canceled.id, 'TASK_STATE_CANCELED'],
      ['deleted-task', undefined],
    ]);
    expect(report.requeued).toEqual([]);
    expect((await h.gw.redis.zrange(key, 0, -1)).sort()).toEqual(['being-created', live.id].sort());
    await h.gw.redis.zrem(key, 'being-created');
    await send(h, 'echo accepted');
  });

  it('lets only one process sweep at a time: a racing sweeper does nothing, and a sweeper releases only its own lock', async () => {
    const h = await harness('reconcile-race');
    const task = await send(h, 'echo raced');
    await removeJob(h, task.id);
    await makeQuiet(h, task.id);

    // Holds the first sweeper inside its sweep, after it took the lock.
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const gated = new Proxy(h.queue, {
      get(target, property, receiver) {
        if (property === 'getJob') {
          return async (id: string) => {
            await gate;
            return target.getJob(id);
          };
        }
        const value: unknown = Reflect.get(target, property, receiver);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const firstLogger = recordingLogger();
    const secondLogger = recordingLogger();
    const first = reconciler(h, firstLogger, { of: () => gated, forOwner: () => gated, tenantBusyOwners: async () => 1, close: async () => undefined } as unknown as TurnQueues);
    const second = reconciler(h, secondLogger);
    const lock = h.store.keys.reconcilerLock();

    const firstSweep = first.reconcileOnce();
    await waitFor(async () => ((await h.gw.redis.exists(lock)) === 1 ? true : undefined), 10_000, 'the first sweeper to take the lock');
    const secondReport = await second.reconcileOnce();
    expect(secondReport).toEqual({ swept: false, requeued: [], pruned: [], woken: [] });
    expect(await h.queue.getJob(turnJobId(task.id, 1))).toBeUndefined();

    // As if the first sweeper's lock had lapsed and another process had taken it meanwhile.
    await h.gw.redis.set(lock, 'another-process');
    release();
    const firstReport = await firstSweep;
    expect(firstReport.requeued).toEqual([{ taskId: task.id, turn: 1, job: 'missing' }]);
    expect(await h.gw.redis.get(lock)).toBe('another-process');
    expect(firstLogger.warnings).toHaveLength(1);
    expect(secondLogger.warnings).toEqual([]);
    expect(await h.queue.getJobCounts('waiting', 'prioritized')).toEqual({ waiting: 0, prioritized: 1 });
    // While that other process holds the lock, no one else sweeps either.
    expect(await first.reconcileOnce()).toEqual({ swept: false, requeued: [], pruned: [], woken: [] });
  });
});
