// Interrupted is not failed, but a turn has limits: its deadline is fixed when it first starts
// and survives a change of worker; past it, the turn fails with a reason naming the limit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TurnRecord } from '../src/store/task-store.ts';
import { rpc, spawnWorkerProcess, startTestGateway, textMessage, waitFor, type TestGateway, type WorkerProcess } from './support/harness.ts';

const ENV = { A2A_TURN_DEADLINE_MS: '4000', A2A_ADAPTER_OPTIONS: '{"stepMs":100}' };
let gw: TestGateway;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  gw = await startTestGateway({ name: 'deadline', inProcessWorker: false });
});

afterAll(async () => {
  for (const worker of workers) worker.kill('SIGKILL');
  await gw?.close();
});

describe('turn deadline', () => {
  it('is carried across a lost worker and fails the turn with a reason naming turnDeadlineMs', async () => {
    const first = await spawnWorkerProcess(gw.prefix, ENV);
    workers.push(first);
    const reply = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('long 200'), configuration: { returnImmediately: true } });
    const taskId = ((reply.body.result as { task: { id: string } }).task).id;
    const taskKey = `${gw.prefix}:{${taskId}}:task`;
    const deadline = await waitFor(async () => (await gw.redis.hget(taskKey, 'turnDeadlineAtMs')) ?? undefined, 20_000, 'the turn to start');
    const startedAt = Number(await gw.redis.hget(taskKey, 'turnLeasedAtMs'));
    expect(Number(deadline) - startedAt).toBe(4000);
    await waitFor(async () => ((await gw.redis.xlen(`${gw.prefix}:{${taskId}}:events`)) >= 4 ? true : undefined), 20_000, 'progress');
    first.kill('SIGKILL');
    await first.exited;
    workers.push(await spawnWorkerProcess(gw.prefix, ENV));

    const final = await waitFor(async () => {
      const task = (await rpc(gw.jsonRpcUrl, 'GetTask', { id: taskId })).body.result as { status: { state: string; message?: { parts: { text: string }[] } } };
      return task.status.state === 'TASK_STATE_FAILED' || task.status.state === 'TASK_STATE_COMPLETED' ? task : undefined;
    }, 30_000, 'the turn to end');
    // 200 steps of 100 ms would take 20 s: only the deadline can have ended it.
    expect(final.status.state).toBe('TASK_STATE_FAILED');
    expect(final.status.message?.parts[0]?.text).toMatch(/deadline of 4000 ms .*turnDeadlineMs/);
    // The second worker kept the first start's deadline instead of starting a fresh one.
    expect(await gw.redis.hget(taskKey, 'turnDeadlineAtMs')).toBe(deadline);
    const record = JSON.parse((await gw.redis.hget(`${gw.prefix}:{${taskId}}:turns`, '1')) as string) as TurnRecord;
    expect(record.attempts).toBe(2);
    expect(record.reason).toMatch(/turnDeadlineMs/);
  });
});
