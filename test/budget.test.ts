// A turn's budget (turnBudget, spent through ctx.budget) is part of the turn, not of the worker
// running it (invariant 3): the spent total is stored with the task, a worker that takes the
// turn over after a crash continues from it, a turn over budget fails naming the limit, and a
// new turn starts from 0. The demo's `long` skill charges one unit per step.
import { Agents } from '../src/agents/agents.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAdapter } from '../adapters/module-loader.ts';
import { formatInspection, inspectTask } from '../src/cli/inspect.ts';
import { createLogger } from '../src/logging/logger.ts';
import type { StreamResponse, Task } from '../src/protocol/types.ts';
import { TurnRunner } from '../src/runtime/turn-runner.ts';
import { startWorkerRole, type WorkerHandle } from '../src/runtime/worker-role.ts';
import { ownerKeyOf, TaskStore, type Owner, type TurnRecord } from '../src/store/task-store.ts';
import { createStoredTask, ROOT, rpc, spawnWorkerProcess, startTestGateway, textMessage, waitFor, type TestGateway, type WorkerProcess } from './support/harness.ts';
import { openSse } from './support/sse.ts';

const TERMINAL = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED']);

const gateways: TestGateway[] = [];
const workers: WorkerHandle[] = [];
const processes: WorkerProcess[] = [];

afterAll(async () => {
  for (const p of processes) if (p.child.exitCode === null && p.child.signalCode === null) p.kill('SIGKILL');
  await Promise.all(processes.map((p) => p.exited));
  for (const w of workers) await w.close();
  for (const gw of gateways) await gw.close();
}, 60_000);

async function gateway(name: string, options: { inProcessWorker: boolean; config?: Record<string, unknown>; stepMs?: number }): Promise<TestGateway> {
  const gw = await startTestGateway({
    name,
    inProcessWorker: options.inProcessWorker,
    config: options.config ?? {},
    adapterOptions: { stepMs: options.stepMs ?? 5 },
  });
  gateways.push(gw);
  return gw;
}

async function send(gw: TestGateway, text: string, extra: Record<string, unknown> = {}): Promise<Task> {
  const reply = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage(text, extra), configuration: { returnImmediately: true } });
  expect(reply.body.error).toBeUndefined();
  return (reply.body.result as { task: Task }).task;
}

async function getTask(gw: TestGateway, id: string): Promise<Task> {
  return (await rpc(gw.jsonRpcUrl, 'GetTask', { id })).body.result as Task;
}

async function finalTask(gw: TestGateway, id: string, timeoutMs = 30_000): Promise<Task> {
  return waitFor(async () => {
    const task = await getTask(gw, id);
    return TERMINAL.has(task.status.state) ? task : undefined;
  }, timeoutMs, `task ${id} to end`);
}

const spentOf = async (gw: TestGateway, id: string): Promise<number> => Number((await gw.redis.hget(`${gw.prefix}:{${id}}:task`, 'turnBudgetSpent')) ?? 0);

async function turnRecord(gw: TestGateway, id: string, turn: number): Promise<TurnRecord> {
  return JSON.parse((await gw.redis.hget(`${gw.prefix}:{${id}}:turns`, String(turn))) as string) as TurnRecord;
}

const progressOf = (event: StreamResponse): unknown =>
  'statusUpdate' in event ? event.statusUpdate.status.message?.metadata?.['progress'] : undefined;

describe('turn budget', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await gateway('budget', { inProcessWorker: true, config: { turnBudget: 5 } });
  });

  it('fails a turn that goes over budget, naming the limit in the stored status and the final event', async () => {
    const { response, reader } = await openSse(gw.jsonRpcUrl, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Accept: 'text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendStreamingMessage', params: { message: textMessage('long 20') } }),
    });
    expect(response.status).toBe(200);
    await Promise.race([reader.done, new Promise((_, reject) => setTimeout(() => reject(new Error('stream did not end')), 30_000))]);
    const events = reader.events.map((e) => (JSON.parse(e.data) as { result: StreamResponse }).result);
    const last = events.at(-1) as StreamResponse;
    expect('statusUpdate' in last).toBe(true);
    const finalStatus = (last as { statusUpdate: { taskId: string; status: Task['status'] } }).statusUpdate;
    expect(finalStatus.status.state).toBe('TASK_STATE_FAILED');
    // Failed by the runner for the budget, not passed through as an adapter error.
    const limitText = /^Turn 1 ran out of budget: the turn used 6 of its budget of 5 units \(turnBudget\)/;
    expect(finalStatus.status.message?.parts[0]?.text).toMatch(limitText);
    // Steps 1..5 fit the budget; step 6's charge was the one that passed it, so it never ran.
    expect(events.map(progressOf).filter((p) => p !== undefined)).toEqual([1, 2, 3, 4, 5]);

    const taskId = finalStatus.taskId;
    const stored = await getTask(gw, taskId);
    expect(stored.status.state).toBe('TASK_STATE_FAILED');
    expect(stored.status.message?.parts[0]?.text).toMatch(limitText);
    // The charge that passed the limit is recorded, not dropped.
    expect(await spentOf(gw, taskId)).toBe(6);
    const record = await turnRecord(gw, taskId, 1);
    expect(record).toMatchObject({ budgetSpent: 6, budgetLimit: 5, outcome: 'TASK_STATE_FAILED' });
    expect(record.reason).toMatch(limitText);
    expect(record.steps?.map((s) => s.name)).toEqual(['step-1', 'step-2', 'step-3', 'step-4', 'step-5']);
    // What an operator sees.
    const inspection = await inspectTask(gw.redis, gw.prefix, taskId);
    expect(inspection?.currentTurn).toEqual({ turn: 1, attempts: 1, handBacks: 0, budgetSpent: 6 });
    expect(formatInspection(inspection as NonNullable<typeof inspection>)).toMatch(/turn 1: TASK_STATE_FAILED, attempts 1, budget 6 of 5,/);
  });

  it('completes a turn that spends exactly its budget', async () => {
    const task = await send(gw, 'long 5');
    const final = await finalTask(gw, task.id);
    expect(final.status.state).toBe('TASK_STATE_COMPLETED');
    expect(await spentOf(gw, task.id)).toBe(5);
    expect(await turnRecord(gw, task.id, 1)).toMatchObject({ budgetSpent: 5, budgetLimit: 5, outcome: 'TASK_STATE_COMPLETED' });
  });
});

describe('a new turn', () => {
  it('starts its budget at 0, whether it follows a queued message or an answer to a question', async () => {
    // Turn 1 spends 3, turn 2 spends 2: only a reset keeps turn 2 within a budget of 4.
    const gw = await gateway('budget-turns', { inProcessWorker: false, config: { turnBudget: 4 } });
    const first = await send(gw, 'long 3');
    const followUp = await rpc(gw.jsonRpcUrl, 'SendMessage', {
      message: textMessage('long 2', { taskId: first.id, contextId: first.contextId }),
      configuration: { returnImmediately: true },
    });
    expect(followUp.body.error).toBeUndefined();
    const worker = await startWorkerRole(gw.config, await Agents.load(gw.config, ROOT), createLogger('silent'));
    workers.push(worker);

    const final = await finalTask(gw, first.id);
    expect(final.status.state).toBe('TASK_STATE_COMPLETED');
    expect((await turnRecord(gw, first.id, 1)).budgetSpent).toBe(3);
    expect((await turnRecord(gw, first.id, 2)).budgetSpent).toBe(2);
    expect(await spentOf(gw, first.id)).toBe(2);

    // A turn resumed by an answer starts at 0 too (the dialogue spends nothing itself).
    const dialogue = await send(gw, 'dialogue');
    await waitFor(async () => ((await getTask(gw, dialogue.id)).status.state === 'TASK_STATE_INPUT_REQUIRED' ? true : undefined), 20_000, 'the question');
    await gw.redis.hset(`${gw.prefix}:{${dialogue.id}}:task`, 'turnBudgetSpent', '3');
    await send(gw, 'Ada', { taskId: dialogue.id, contextId: dialogue.contextId });
    expect((await finalTask(gw, dialogue.id)).status.state).toBe('TASK_STATE_COMPLETED');
    expect(await spentOf(gw, dialogue.id)).toBe(0);
  });
});

describe('the spent total', () => {
  it('survives a worker SIGKILL: the next worker continues from it and fails the turn once it passes the limit', async () => {
    // 20 steps of 200 ms. Killed after at least 6 charges, the retry's 20 charges from the
    // stored total must pass 25; restarted from 0 they would fit and the turn would complete.
    const env = { A2A_TURN_BUDGET: '25', A2A_ADAPTER_OPTIONS: '{"stepMs":200}' };
    const gw = await gateway('budget-kill', { inProcessWorker: false });
    const first = await spawnWorkerProcess(gw.prefix, env);
    processes.push(first);
    const task = await send(gw, 'long 20');
    const leaseKey = `${gw.prefix}:{${task.id}}:lease`;
    await waitFor(async () => ((await spentOf(gw, task.id)) >= 6 ? true : undefined), 30_000, 'six charges');
    first.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    expect(TERMINAL.has((await getTask(gw, task.id)).status.state)).toBe(false);
    // Once the dead worker's lease has lapsed nothing can still be charging: the total is settled.
    await waitFor(async () => ((await gw.redis.exists(leaseKey)) === 0 ? true : undefined), 10_000, 'the lease to lapse');
    const spentByFirst = await spentOf(gw, task.id);
    expect(spentByFirst).toBeGreaterThanOrEqual(6);
    expect(spentByFirst).toBeLessThanOrEqual(20);

    processes.push(await spawnWorkerProcess(gw.prefix, env));
    const final = await finalTask(gw, task.id, 60_000);
    expect(final.status.state).toBe('TASK_STATE_FAILED');
    expect(final.status.message?.parts[0]?.text).toMatch(/the turn used 26 of its budget of 25 units \(turnBudget\)/);
    expect(await spentOf(gw, task.id)).toBe(26);
    const record = await turnRecord(gw, task.id, 1);
    expect(record).toMatchObject({ attempts: 2, budgetSpent: 26, budgetLimit: 25, outcome: 'TASK_STATE_FAILED' });
    // The second attempt charged 26 - spentByFirst units; all but the last were steps it ran.
    expect(record.steps?.filter((s) => s.attempt === 2)).toHaveLength(26 - spentByFirst - 1);
  }, 120_000);
});

describe('a turn already past its budget', () => {
  it('is failed by the worker that takes it over, before its adapter runs again', async () => {
    // A worker lost right after the charge that passed the limit never got to fail the turn.
    const gw = await gateway('budget-takeover', { inProcessWorker: false });
    const owner: Owner = { agent: 'default', tenant: '', subject: 'budget-takeover' };
    const store = new TaskStore(gw.redis, gw.prefix);
    const { taskId, contextId } = await createStoredTask(store, { taskId: `over-${Date.now()}`, contextId: 'over-ctx', owner, text: 'long 3' });
    await gw.redis.hset(store.keys.task(taskId).task, 'turnBudgetSpent', '7');
    const runner = new TurnRunner({
      store,
      agents: Agents.single({ ...gw.config, turnDeadlineMs: 0, turnBudget: 5 }, await loadAdapter('demo', { stepMs: 5 }, ROOT)),
      logger: createLogger('silent'),
      maxTurnAttempts: 3,
      leaseTtlMs: 2_000,
    });
    await runner.process({ jobId: `${taskId}-t1`, data: { taskId, turn: 1, ownerKey: ownerKeyOf(owner), contextId }, waitedMs: undefined });

    const hash = await gw.redis.hgetall(store.keys.task(taskId).task);
    expect(hash.state).toBe('TASK_STATE_FAILED');
    expect(JSON.parse(hash.status as string)).toMatchObject({ message: { parts: [{ text: expect.stringMatching(/the turn used 7 of its budget of 5 units \(turnBudget\)/) }] } });
    expect(hash.turnBudgetSpent).toBe('7');
    const record = await turnRecord(gw, taskId, 1);
    expect(record).toMatchObject({ budgetSpent: 7, budgetLimit: 5, outcome: 'TASK_STATE_FAILED' });
    expect(record.steps).toBeUndefined();
  });
});
