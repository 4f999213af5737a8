// The demo adapter's transfer skill through the real runtime (gateway, Redis task store, BullMQ
// workers): each charge is a journalled step that appends its idempotency key to a ledger file;
// after a crash, finished charges are replayed, an interrupted one is reconciled with the ledger
// (present: not repeated; absent: charged again under a new step name), and no key is ever
// charged twice.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaskStore, type StepRecord } from '../src/store/task-store.ts';
import { rpc, spawnWorkerProcess, startTestGateway, textMessage, waitFor, type TestGateway, type WorkerProcess } from './support/harness.ts';

const ADAPTER = 'demo';
const dir = mkdtempSync(join(tmpdir(), 'a2a-transfer-'));
const ledgerFile = join(dir, 'ledger.txt');

interface TaskView {
  id: string;
  status: { state: string; message?: { parts: { text?: string }[] } };
  artifacts?: { artifactId: string; parts: { text?: string; data?: Record<string, number> }[] }[];
}

const ledger = (taskId: string): string[] => {
  try {
    return readFileSync(ledgerFile, 'utf8').split('\n').filter((line) => line.startsWith(`${taskId}:`));
  } catch {
    return [];
  }
};

const send = async (gw: TestGateway, text: string, blocking: boolean): Promise<TaskView> => {
  const reply = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage(text), configuration: { returnImmediately: !blocking } });
  return (reply.body.result as { task: TaskView }).task;
};

const completed = (gw: TestGateway, taskId: string): Promise<TaskView> =>
  waitFor(async () => {
    const task = (await rpc(gw.jsonRpcUrl, 'GetTask', { id: taskId })).body.result as TaskView;
    return task.status.state === 'TASK_STATE_COMPLETED' ? task : undefined;
  }, 45_000, `task ${taskId} to complete`);

const report = (task: TaskView): { text: string; data: Record<string, number> } => {
  const parts = task.artifacts?.find((a) => a.artifactId === 'transfer-report')?.parts ?? [];
  return { text: parts[0]?.text ?? '', data: parts[1]?.data ?? {} };
};

let withWorker: TestGateway;
let noWorker: TestGateway;
let builtIn: TestGateway;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  withWorker = await startTestGateway({ name: 'transfer', config: { adapter: ADAPTER, adapterOptions: { ledgerFile, stepMs: 5 } } });
  noWorker = await startTestGateway({ name: 'transfer-crash', inProcessWorker: false, config: { adapter: ADAPTER, adapterOptions: { ledgerFile, stepMs: 300 } } });
  builtIn = await startTestGateway({ name: 'transfer-noledger' });
});

afterAll(async () => {
  for (const worker of workers) worker.kill('SIGKILL');
  await Promise.all([withWorker?.close(), noWorker?.close(), builtIn?.close()]);
  rmSync(dir, { recursive: true, force: true });
});

const workerEnv = (stepMs: number) => ({ A2A_ADAPTER: ADAPTER, A2A_ADAPTER_OPTIONS: JSON.stringify({ ledgerFile, stepMs }) });

describe('demo transfer skill', () => {
  it('is on the agent card', async () => {
    const card = (await (await fetch(`${withWorker.url}/.well-known/agent-card.json`)).json()) as { skills: { id: string }[] };
    expect(card.skills.map((s) => s.id)).toContain('transfer');
  });

  it('charges n times, once each, journals every charge as done and reports it', async () => {
    const task = await send(withWorker, 'transfer 4', true);
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(ledger(task.id)).toEqual([1, 2, 3, 4].map((i) => `${task.id}:1:charge-${i}`));
    expect(report(task).text.split('\n')).toEqual([1, 2, 3, 4].map((i) => `charge-${i}: charged`));
    expect(report(task).data).toMatchObject({ charges: 4, charged: 4, replayed: 0, reconciledCharged: 0, recharged: 0, attempt: 1 });
    const steps = await new TaskStore(withWorker.redis, withWorker.prefix).turns.readSteps(task.id);
    expect(Object.keys(steps).sort()).toEqual(['1:charge-1', '1:charge-2', '1:charge-3', '1:charge-4']);
    for (const step of Object.values(steps)) expect(step).toMatchObject({ state: 'done', reference: `ledger:${step.idempotencyKey}` });
  });

  it('is refused without a ledger file', async () => {
    const task = await send(builtIn, 'transfer 2', true);
    expect(task.status.state).toBe('TASK_STATE_REJECTED');
    expect(task.status.message?.parts[0]?.text).toBe('the transfer skill needs adapterOptions.ledgerFile');
  });

  it('after a worker is killed inside a charge, reconciles that charge as made and repeats nothing', async () => {
    const first = await spawnWorkerProcess(noWorker.prefix, workerEnv(300));
    workers.push(first);
    const { id } = await send(noWorker, 'transfer 4', false);
    // Inside charge-2's crash window: its ledger line is written, its result is not journalled.
    await waitFor(() => (ledger(id).includes(`${id}:1:charge-2`) ? true : undefined), 30_000, 'the second charge');
    first.kill('SIGKILL');
    await first.exited;
    const second = await spawnWorkerProcess(noWorker.prefix, workerEnv(20));
    workers.push(second);

    const task = await completed(noWorker, id);
    expect(ledger(id)).toEqual([1, 2, 3, 4].map((i) => `${id}:1:charge-${i}`));
    const { text, data } = report(task);
    expect(text).toContain('charge-1: replayed');
    expect(text).toContain(`charge-2: unknown, reconciled as charged (ledger:${id}:1:charge-2)`);
    expect(text).toContain('charge-4: charged');
    expect(data).toMatchObject({ charges: 4, replayed: 1, reconciledCharged: 1, recharged: 0, attempt: 2 });
    const journal = await new TaskStore(noWorker.redis, noWorker.prefix).turns.readSteps(id);
    expect(journal['1:charge-2']).toMatchObject({ state: 'unknown', attempt: 1, surfacedToAttempt: 2 } satisfies Partial<StepRecord>);
    second.kill('SIGKILL');
    await second.exited;
  });

  it('charges an unknown step that never reached the ledger again, under a new step name', async () => {
    const { id } = await send(noWorker, 'transfer 3', false);
    // A worker that journalled charge-2 as started and died before charging: stage its record.
    const store = new TaskStore(noWorker.redis, noWorker.prefix);
    const started: StepRecord = { name: 'charge-2', turn: 1, idempotencyKey: `${id}:1:charge-2`, state: 'started', attempt: 1, startedAtMs: Date.now() };
    await noWorker.redis.hset(store.keys.task(id).steps, '1:charge-2', JSON.stringify(started));
    const worker = await spawnWorkerProcess(noWorker.prefix, workerEnv(20));
    workers.push(worker);

    const task = await completed(noWorker, id);
    expect(ledger(id)).toEqual([`${id}:1:charge-1`, `${id}:1:charge-2-again`, `${id}:1:charge-3`]);
    expect(report(task).text).toContain('charge-2: unknown, not in the ledger; charged as charge-2-again');
    expect(report(task).data).toMatchObject({ charges: 3, charged: 2, recharged: 1 });
    const journal = await store.turns.readSteps(id);
    expect(journal['1:charge-2']?.state).toBe('unknown');
    expect(journal['1:charge-2-again']?.state).toBe('done');
  });
});
