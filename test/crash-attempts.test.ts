// A turn whose runs keep losing their worker is not run forever: taking its lease counts the
// attempt, a take-over from a lapsed lease records the lost worker on the task (lostWorkers),
// and past maxTurnAttempts the lease script answers EXHAUSTED without reading what the lost
// runs stored (their artifacts may be what killed them). The worker then fails the turn with a
// reason naming maxTurnAttempts and the lost workers. End to end: worker processes SIGKILLed
// mid-turn, one after the other, until the task is FAILED.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedisClient } from '../src/redis/connection.ts';
import type { Task } from '../src/protocol/types.ts';
import { inspectTask } from '../src/operator/task-inspection.ts';
import { ownerKeyOf, TaskStore, type LostWorker, type Owner, type TurnRecord } from '../src/store/task-store.ts';
import {
  createStoredTask,
  deletePrefix,
  isRunning,
  keepWorkersRunning,
  openTestRedis,
  rpc,
  startTestGateway,
  stopWorkerProcesses,
  textMessage,
  uniquePrefix,
  waitFor,
  type TestGateway,
  type WorkerProcess,
} from './support/harness.ts';

describe('acquireLease past maxTurnAttempts', () => {
  const owner: Owner = { agent: 'default', tenant: '', subject: 'crash-attempts' };
  const ownerKey = ownerKeyOf(owner);
  let redis: RedisClient;
  let prefix: string;
  let store: TaskStore;

  beforeAll(() => {
    prefix = uniquePrefix('crash-attempts');
    redis = openTestRedis();
    store = new TaskStore(redis, prefix, 600);
  });

  afterAll(async () => {
    await deletePrefix(redis, prefix);
    await redis.quit();
  });

  it('records each lost worker and answers exhausted, reading nothing the lost runs stored', async () => {
    const taskId = `crash-${randomBytes(6).toString('hex')}`;
    const contextId = `ctx-${taskId}`;
    await createStoredTask(store, { taskId, contextId, owner });
    const take = (workerId: string) => store.turns.acquireLease({ taskId, ownerKey, contextId, workerId, leaseTtlMs: 60_000, maxTurnAttempts: 2, now: new Date() });
    const lapse = () => redis.del(`${prefix}:{${taskId}}:lease`);

    expect((await take('w1')).kind).toBe('acquired');
    await lapse();
    const second = await take('w2');
    expect(second.kind === 'acquired' && second.attempts).toBe(2);
    await lapse();
    const third = await take('w3');
    expect(third.kind).toBe('exhausted');
    if (third.kind !== 'exhausted') return;
    expect(third.attempts).toBe(3);
    expect(third.lostWorkers.map((w: LostWorker) => [w.workerId, w.turn, w.attempt])).toEqual([
      ['w1', 1, 1],
      ['w2', 1, 2],
    ]);
    // The lease is w3's: the failing write is fenced like any other.
    expect(await redis.get(`${prefix}:{${taskId}}:lease`)).toBe('w3');
    expect(JSON.parse((await redis.hget(`${prefix}:{${taskId}}:task`, 'lostWorkers')) as string)).toHaveLength(2);
  });

  it('a worker re-taking its own lease, or a hand-back, is no lost worker', async () => {
    const taskId = `crash-${randomBytes(6).toString('hex')}`;
    const contextId = `ctx-${taskId}`;
    await createStoredTask(store, { taskId, contextId, owner });
    const first = await store.turns.acquireLease({ taskId, ownerKey, contextId, workerId: 'w1', leaseTtlMs: 60_000, maxTurnAttempts: 5, now: new Date() });
    if (first.kind !== 'acquired') throw new Error('no lease');
    await store.turns.handBackTurn(taskId, 'w1', first.generation, { turn: 1, inputMessageIds: [], acceptedAtMs: Date.now() });
    await store.turns.acquireLease({ taskId, ownerKey, contextId, workerId: 'w2', leaseTtlMs: 60_000, maxTurnAttempts: 5, now: new Date() });
    await store.turns.acquireLease({ taskId, ownerKey, contextId, workerId: 'w2', leaseTtlMs: 60_000, maxTurnAttempts: 5, now: new Date() });
    expect(await redis.hget(`${prefix}:{${taskId}}:task`, 'lostWorkers')).toBeNull();
  });
});

describe('worker processes killed mid-turn, again and again', () => {
  let gw: TestGateway;
  const workers: WorkerProcess[] = [];
  const env = { A2A_ADAPTER_OPTIONS: '{"stepMs":100}', A2A_MAX_TURN_ATTEMPTS: '2' };

  beforeAll(async () => {
    gw = await startTestGateway({ name: 'crash-loop', inProcessWorker: false, config: { maxTurnAttempts: 2 } });
    await keepWorkersRunning(workers, gw.prefix, env);
  }, 180_000);

  afterAll(async () => {
    await stopWorkerProcesses(workers);
    await gw?.close();
  }, 60_000);

  const pidOf = (workerId: string): number => Number((/:(\d+):[^:]+$/.exec(workerId) as RegExpExecArray)[1]);

  it('ends FAILED naming maxTurnAttempts and the lost workers, instead of looping [guarantee:task.durable]', async () => {
    const sent = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('long 600'), configuration: { returnImmediately: true } });
    expect(sent.body.error).toBeUndefined();
    const taskId = (sent.body.result as { task: Task }).task.id;
    const taskKey = `${gw.prefix}:{${taskId}}:task`;
    const leaseKey = `${gw.prefix}:{${taskId}}:lease`;
    const killed: string[] = [];
    // Each attempt's worker is killed once it is running the turn: attempts 1 and 2.
    for (let attempt = 1; attempt <= 2; attempt++) {
      const holder = await waitFor(
        async () => {
          const [worker, attempts] = await gw.redis.hmget(taskKey, 'turnWorker', 'turnAttempts');
          return Number(attempts) === attempt && worker !== null && (await gw.redis.get(leaseKey)) === worker ? worker : undefined;
        },
        90_000,
        `attempt ${attempt} to take the lease`,
      );
      const victim = workers.find((w) => w.pid === pidOf(holder) && isRunning(w));
      expect(victim, `${holder} is one of our worker processes`).toBeDefined();
      victim?.kill('SIGKILL');
      await victim?.exited;
      killed.push(holder);
      await keepWorkersRunning(workers, gw.prefix, env);
    }
    const final = await waitFor(
      async () => {
        const { body } = await rpc(gw.jsonRpcUrl, 'GetTask', { id: taskId });
        const task = body.result as Task;
        return task.status.state === 'TASK_STATE_FAILED' || task.status.state === 'TASK_STATE_COMPLETED' ? task : undefined;
      },
      120_000,
      'the task to end',
    );
    expect(final.status.state).toBe('TASK_STATE_FAILED');
    const reason = final.status.message?.parts[0]?.text ?? '';
    expect(reason).toMatch(/maxTurnAttempts \(2\)/);
    expect(reason).toMatch(/lost/);
    for (const worker of killed) expect(reason).toContain(worker);
    const lost = JSON.parse((await gw.redis.hget(taskKey, 'lostWorkers')) as string) as LostWorker[];
    expect(lost.map((w) => w.workerId)).toEqual(killed);
    // What an operator sees (inspect, the operator API).
    expect((await inspectTask(gw.redis, gw.prefix, taskId))?.lostWorkers.map((w) => [w.workerId, w.turn, w.attempt])).toEqual([
      [killed[0], 1, 1],
      [killed[1], 1, 2],
    ]);
    const record = JSON.parse((await gw.redis.hget(`${gw.prefix}:{${taskId}}:turns`, '1')) as string) as TurnRecord;
    expect([record.outcome, record.attempts]).toEqual(['TASK_STATE_FAILED', 2]);
    // Not run a third time: the surviving workers are alive and no lease is held.
    expect(await gw.redis.exists(leaseKey)).toBe(0);
    expect(workers.filter(isRunning).length).toBe(2);
  }, 300_000);
});
