// Invariant 6: cancellation has stages — requested → acknowledged (the executing worker saw
// it) → stopped — each with a timestamp in the task's metadata and as a status event, across
// processes; and when a cancel races the turn's own end, the task says which one won.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StreamResponse } from '../src/protocol/types.ts';
import { ownerKeyOf, TaskStore } from '../src/store/task-store.ts';
import { createStoredTask, rpc, spawnWorkerProcess, startTestGateway, textMessage, waitFor, type TestGateway, type WorkerProcess } from './support/harness.ts';

interface Cancellation {
  requestedAt: string | null;
  acknowledgedAt: string | null;
  stoppedAt: string | null;
  outcome: string | null;
}
type TaskJson = { id: string; status: { state: string }; metadata?: { a2aGateway?: { cancellation: Cancellation } } };

let gw: TestGateway;
let worker: WorkerProcess | undefined;

beforeAll(async () => {
  gw = await startTestGateway({ name: 'cancel-stages', inProcessWorker: false });
});

afterAll(async () => {
  worker?.kill('SIGKILL');
  await gw?.close();
});

async function start(text: string): Promise<string> {
  const reply = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage(text), configuration: { returnImmediately: true } });
  return (reply.body.result as { task: TaskJson }).task.id;
}

async function stages(taskId: string): Promise<string[]> {
  const entries = await gw.redis.xrange(`${gw.prefix}:{${taskId}}:events`, '-', '+');
  return entries
    .map(([, fields]) => JSON.parse(fields[1] as string) as StreamResponse)
    .flatMap((event) => {
      const stage = 'statusUpdate' in event ? (event.statusUpdate.metadata?.cancellation as { stage?: string } | undefined)?.stage : undefined;
      return stage === undefined ? [] : [`${stage}:${'statusUpdate' in event ? event.statusUpdate.status.state : ''}`];
    });
}

describe('cancellation stages', () => {
  it('a queued task: requested and stopped at once, never acknowledged (no worker ran it)', async () => {
    const taskId = await start('long 5');
    const reply = await rpc(gw.jsonRpcUrl, 'CancelTask', { id: taskId });
    const task = reply.body.result as TaskJson;
    expect(task.status.state).toBe('TASK_STATE_CANCELED');
    const cancellation = task.metadata?.a2aGateway?.cancellation as Cancellation;
    expect(cancellation.requestedAt).not.toBeNull();
    expect(cancellation.acknowledgedAt).toBeNull();
    expect(cancellation.stoppedAt).not.toBeNull();
    expect(cancellation.outcome).toBe('TASK_STATE_CANCELED');
    expect(await stages(taskId)).toEqual(['stopped:TASK_STATE_CANCELED']);
  });

  it('a running turn in another process: requested → acknowledged → stopped, in order, as events and metadata', async () => {
    worker = await spawnWorkerProcess(gw.prefix, { A2A_ADAPTER_OPTIONS: '{"stepMs":100}' });
    const taskId = await start('long 300');
    await waitFor(async () => ((await gw.redis.xlen(`${gw.prefix}:{${taskId}}:events`)) >= 4 ? true : undefined), 20_000, 'the turn to run');
    const task = (await rpc(gw.jsonRpcUrl, 'CancelTask', { id: taskId })).body.result as TaskJson;
    expect(task.status.state).toBe('TASK_STATE_CANCELED');
    const c = task.metadata?.a2aGateway?.cancellation as Cancellation;
    expect(c.outcome).toBe('TASK_STATE_CANCELED');
    for (const at of [c.requestedAt, c.acknowledgedAt, c.stoppedAt]) expect(at).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(Date.parse(c.requestedAt as string)).toBeLessThanOrEqual(Date.parse(c.acknowledgedAt as string));
    expect(Date.parse(c.acknowledgedAt as string)).toBeLessThanOrEqual(Date.parse(c.stoppedAt as string));
    expect(await stages(taskId)).toEqual(['requested:TASK_STATE_WORKING', 'acknowledged:TASK_STATE_WORKING', 'stopped:TASK_STATE_CANCELED']);
    // A second request changes nothing and is refused: the task is terminal.
    const again = await rpc(gw.jsonRpcUrl, 'CancelTask', { id: taskId });
    expect((again.body.error as { code: number }).code).toBe(-32002);
    expect(await stages(taskId)).toHaveLength(3);
  });

  it('a cancel that loses the race to completion: the task says completion won', async () => {
    // Deterministically: the turn holds its lease when the cancel is requested, and its worker
    // finishes it as completed before acting on the request.
    const store = new TaskStore(gw.redis, gw.prefix);
    const owner = { agent: 'default', tenant: '', subject: 'anonymous' };
    const taskId = 'race-task';
    const contextId = 'race-ctx';
    await createStoredTask(store, { taskId, contextId, owner, text: 'echo', messageId: 'race-m' });
    const lease = await store.turns.acquireLease({ taskId, ownerKey: ownerKeyOf(owner), contextId, workerId: 'w-race', leaseTtlMs: 60_000, now: new Date() });
    if (lease.kind !== 'acquired') throw new Error(lease.kind);
    expect((await store.gateway.cancelTask(taskId, owner, new Date())).kind).toBe('requested');
    await store.turns.finishTurn({
      taskId,
      ownerKey: ownerKeyOf(owner),
      contextId,
      generation: lease.generation,
      status: { state: 'TASK_STATE_COMPLETED', timestamp: new Date().toISOString() },
      agentMessage: undefined,
      turnRecord: { turn: 1, inputMessageIds: ['race-m'], acceptedAtMs: Date.now() },
      artifacts: [],
      now: new Date(),
    });
    const task = (await rpc(gw.jsonRpcUrl, 'GetTask', { id: taskId })).body.result as TaskJson;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    const c = task.metadata?.a2aGateway?.cancellation as Cancellation;
    expect(c.requestedAt).not.toBeNull();
    expect(c.stoppedAt).toBeNull();
    expect(c.outcome).toBe('TASK_STATE_COMPLETED');
    expect(await stages(taskId)).toEqual(['requested:TASK_STATE_WORKING']);
  });
});
