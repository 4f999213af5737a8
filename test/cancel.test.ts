// Invariant 6 (cancellation has stages and works across processes; a queued turn is canceled
// without ever starting) and invariant 5 (a client disconnect never cancels). The gateway
// runs no worker of its own: every turn here runs in a separate `a2a-gateway worker` process.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StreamResponse, Task, TaskState } from '../src/protocol/types.ts';
import { turnQueuePrefix } from '../queues/turns.ts';
import { TaskStore, type TurnRecord } from '../src/store/task-store.ts';
import { rpc, spawnWorkerProcess, startTestGateway, textMessage, waitFor, type TestGateway, type WorkerProcess } from './support/harness.ts';
import { openSse } from './support/sse.ts';

const TERMINAL: ReadonlySet<TaskState> = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED']);
// One turn at a time: in the cancel race below, later tasks are still queued (or just starting)
// when their CancelTask arrives, so every stage of the race is exercised.
const WORKER_ENV = { A2A_ADAPTER_OPTIONS: '{"stepMs":50}', A2A_WORKER_CONCURRENCY: '1' };

let gw: TestGateway;
const workers: WorkerProcess[] = [];

async function ensureWorker(): Promise<WorkerProcess> {
  const live = workers.find((w) => w.child.exitCode === null && w.child.signalCode === null);
  if (live !== undefined) return live;
  const worker = await spawnWorkerProcess(gw.prefix, WORKER_ENV);
  workers.push(worker);
  return worker;
}

beforeAll(async () => {
  // CancelTask waits for a running turn to stop; give a noisy machine plenty of time.
  gw = await startTestGateway({ name: 'cancel', inProcessWorker: false, config: { cancelWaitMs: 30_000 } });
});

afterAll(async () => {
  for (const w of workers) {
    if (w.child.exitCode === null && w.child.signalCode === null) w.kill('SIGKILL');
  }
  await Promise.all(workers.map((w) => w.exited));
  await gw?.close();
});

const stateOf = (event: StreamResponse): TaskState | undefined =>
  'statusUpdate' in event ? event.statusUpdate.status.state : 'task' in event ? event.task.status.state : undefined;

async function storedEvents(taskId: string): Promise<{ id: string; event: StreamResponse }[]> {
  const entries = await gw.redis.xrange(`${gw.prefix}:{${taskId}}:events`, '-', '+');
  return entries.map(([id, fields]) => ({ id, event: JSON.parse(fields[1] as string) as StreamResponse }));
}

async function terminalEvents(taskId: string): Promise<TaskState[]> {
  return (await storedEvents(taskId)).map((e) => stateOf(e.event)).filter((s): s is TaskState => s !== undefined && TERMINAL.has(s));
}

async function turnRecord(taskId: string, turn = 1): Promise<TurnRecord | undefined> {
  const json = await gw.redis.hget(`${gw.prefix}:{${taskId}}:turns`, String(turn));
  return json === null ? undefined : (JSON.parse(json) as TurnRecord);
}

async function send(text: string, returnImmediately = true): Promise<Task> {
  const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage(text), configuration: { returnImmediately } });
  expect(body.error).toBeUndefined();
  return (body.result as { task: Task }).task;
}

async function getTask(taskId: string): Promise<Task> {
  const { body } = await rpc(gw.jsonRpcUrl, 'GetTask', { id: taskId });
  expect(body.error).toBeUndefined();
  return body.result as Task;
}

async function cancel(taskId: string): Promise<{ task?: Task; error?: { code: number; message: string } }> {
  const { body } = await rpc(gw.jsonRpcUrl, 'CancelTask', { id: taskId });
  if (body.error !== undefined) return { error: body.error as { code: number; message: string } };
  return { task: body.result as Task };
}

function waitForTerminal(taskId: string, timeoutMs = 90_000): Promise<Task> {
  return waitFor(
    async () => {
      const task = await getTask(taskId);
      return TERMINAL.has(task.status.state) ? task : undefined;
    },
    timeoutMs,
    `task ${taskId} to reach a terminal state`,
  );
}

describe('cancellation', () => {
  it('(a) cancels a queued turn so that it never starts', async () => {
    expect(workers).toHaveLength(0); // nothing can have picked the turn up yet
    const task = await send('long 5');
    expect(task.status.state).toBe('TASK_STATE_SUBMITTED');
    const jobKey = `${turnQueuePrefix(gw.prefix, 'default', gw.redis)}:turns-default:${task.id}-t1`;
    expect(await gw.redis.exists(jobKey)).toBe(1); // the turn is really queued

    const canceled = await cancel(task.id);
    expect(canceled.error).toBeUndefined();
    expect(canceled.task?.status.state).toBe('TASK_STATE_CANCELED');

    // Now a worker comes along and takes the queued job.
    await ensureWorker();
    await waitFor(async () => (await gw.redis.exists(jobKey)) === 0 || undefined, 60_000, 'the worker to consume the queued job');
    // The worker is demonstrably alive and working: a fresh task completes.
    const control = await send('echo control');
    expect((await waitForTerminal(control.id)).status.state).toBe('TASK_STATE_COMPLETED');
    await new Promise((r) => setTimeout(r, 3_000));

    const events = await storedEvents(task.id);
    expect(events.map((e) => stateOf(e.event))).toEqual(['TASK_STATE_SUBMITTED', 'TASK_STATE_CANCELED']);
    expect(events.some((e) => stateOf(e.event) === 'TASK_STATE_WORKING')).toBe(false);
    const record = await turnRecord(task.id);
    expect(record).toBeDefined();
    expect(record?.startedAtMs).toBeUndefined();
    expect(record?.attempts).toBeUndefined();
    expect(record?.workerId).toBeUndefined();
    // No worker ever took the turn's lease: no attempt was counted or assigned.
    const hash = await gw.redis.hgetall(`${gw.prefix}:{${task.id}}:task`);
    expect(hash.turnAttempts).toBe('0');
    expect(hash.turnWorker).toBeUndefined();
    const final = await getTask(task.id);
    expect(final.status.state).toBe('TASK_STATE_CANCELED');
    expect(final.artifacts ?? []).toEqual([]);
    expect(await gw.redis.exists(`${gw.prefix}:{${task.id}}:lease`)).toBe(0);
  }, 180_000);

  it('(b) cancels a turn running in another worker process', async () => {
    const worker = await ensureWorker();
    const task = await send('long 500');
    const leaseKey = `${gw.prefix}:{${task.id}}:lease`;
    const holder = await waitFor(async () => (await gw.redis.get(leaseKey)) ?? undefined, 60_000, 'the worker to lease the task');
    expect(holder).toContain(`:${worker.pid}:`); // the turn runs in the child process, not here
    await waitFor(
      async () => (await storedEvents(task.id)).filter((e) => 'statusUpdate' in e.event && e.event.statusUpdate.status.message !== undefined).length >= 2 || undefined,
      60_000,
      'progress of the running turn',
    );

    const canceled = await cancel(task.id);
    expect(canceled.error).toBeUndefined();
    expect(canceled.task?.status.state).toBe('TASK_STATE_CANCELED');

    // Stopped, by the worker that ran it: the worker finalized its turn record as canceled.
    const record = await turnRecord(task.id);
    expect(record?.outcome).toBe('TASK_STATE_CANCELED');
    expect(record?.workerId).toBe(holder);
    expect(record?.finishedAtMs).toBeTypeOf('number');
    expect((record?.steps?.length ?? 0)).toBeLessThan(500);
    expect(await gw.redis.exists(leaseKey)).toBe(0);

    const events = await storedEvents(task.id);
    const terminal = await terminalEvents(task.id);
    expect(terminal).toEqual(['TASK_STATE_CANCELED']);
    expect(stateOf(events.at(-1)?.event as StreamResponse)).toBe('TASK_STATE_CANCELED');

    // The adapter really stopped: nothing is appended after the terminal event (one still
    // running would append a step every 50 ms, some twenty in this second).
    await new Promise((r) => setTimeout(r, 1_000));
    expect((await storedEvents(task.id)).map((e) => e.id)).toEqual(events.map((e) => e.id));
    const final = await getTask(task.id);
    expect(final.status.state).toBe('TASK_STATE_CANCELED');
    expect(final.artifacts ?? []).toEqual([]);

    // A second cancel of the now-canceled task is refused.
    const again = await cancel(task.id);
    expect(again.error?.code).toBe(-32002);
  }, 180_000);

  it('(c) racing CancelTask against fast turns ends every task in exactly one terminal state', async () => {
    await ensureWorker();
    // Occupy the worker's single slot, so the first cancels below meet queued turns for sure;
    // then free it (by canceling the blocker) while more tasks arrive and are canceled, so the
    // later cancels race turns that are queued, starting, running or already done.
    const blocker = await send('long 1000');
    await waitFor(async () => (await gw.redis.exists(`${gw.prefix}:{${blocker.id}}:lease`)) === 1 || undefined, 60_000, 'the blocker to run');
    const sendAndCancel = async (i: number, delayMs: number) => {
      await new Promise((r) => setTimeout(r, delayMs));
      const task = await send(`echo race ${i}`);
      const canceled = await cancel(task.id);
      return { taskId: task.id, canceled };
    };
    const queuedPhase = await Promise.all(Array.from({ length: 10 }, (_, i) => sendAndCancel(i, 0)));
    const [blockerCanceled, ...racePhase] = await Promise.all([
      cancel(blocker.id),
      ...Array.from({ length: 10 }, (_, i) => sendAndCancel(10 + i, i * 20)),
    ]);
    expect(blockerCanceled.task?.status.state).toBe('TASK_STATE_CANCELED');
    const results = [...queuedPhase, ...(racePhase as Awaited<ReturnType<typeof sendAndCancel>>[])];
    const outcomes: string[] = [];
    for (const { taskId, canceled } of results) {
      const final = await waitForTerminal(taskId);
      expect(['TASK_STATE_COMPLETED', 'TASK_STATE_CANCELED']).toContain(final.status.state);
      if (canceled.error !== undefined) {
        expect(canceled.error.code, `CancelTask error for ${taskId}: ${canceled.error.message}`).toBe(-32002);
        expect(final.status.state).toBe('TASK_STATE_COMPLETED');
        outcomes.push('not-cancelable');
      } else {
        expect(canceled.task?.id).toBe(taskId);
        expect(canceled.task?.status.state, `CancelTask of ${taskId} returned a task in ${canceled.task?.status.state}`).toBe('TASK_STATE_CANCELED');
        expect(final.status.state).toBe('TASK_STATE_CANCELED');
        outcomes.push('canceled');
      }
    }
    expect((await waitForTerminal(blocker.id)).status.state).toBe('TASK_STATE_CANCELED');
    // Let any late writer (a worker that picked up a canceled turn) show itself.
    await new Promise((r) => setTimeout(r, 2_000));
    for (const { taskId } of results) {
      const final = await getTask(taskId);
      const terminal = await terminalEvents(taskId);
      expect(terminal, `terminal events of ${taskId}`).toEqual([final.status.state]);
      const events = await storedEvents(taskId);
      expect(stateOf(events.at(-1)?.event as StreamResponse)).toBe(final.status.state);
      if (final.status.state === 'TASK_STATE_CANCELED') {
        // A canceled echo did not produce its result anyway.
        expect(final.artifacts ?? []).toEqual([]);
      } else {
        expect(final.artifacts?.map((a) => a.name)).toEqual(['echo']);
      }
    }
    // Turns canceled while queued behind the blocker: canceled, every one.
    expect(outcomes.slice(0, 10)).toEqual(Array.from({ length: 10 }, () => 'canceled'));
    console.info(`cancel race: ${outcomes.filter((o) => o === 'canceled').length} canceled, ${outcomes.filter((o) => o === 'not-cancelable').length} not cancelable`);
  }, 180_000);

  it('(d) a client disconnect does not cancel the task', async () => {
    await ensureWorker();
    const { response, reader } = await openSse(gw.jsonRpcUrl, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Accept: 'text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendStreamingMessage', params: { message: textMessage('long 40') } }),
    });
    expect(response.status).toBe(200);
    const first = await reader.waitForEvents(2, 60_000);
    const taskId = ((JSON.parse(first[0]?.data as string) as { result: { task: Task } }).result.task).id;
    reader.abort();
    await reader.done;

    // The disconnect happened while the turn was still going.
    const atDisconnect = await getTask(taskId);
    expect(TERMINAL.has(atDisconnect.status.state)).toBe(false);
    // The gateway dropped its listener for the closed connection ...
    await waitFor(() => gw.gateway.hub.listenerCount(taskId) === 0 || undefined, 10_000, 'the listener to be released');

    // ... and the task went on to complete.
    const final = await waitForTerminal(taskId);
    expect(final.status.state).toBe('TASK_STATE_COMPLETED');
    expect(final.artifacts?.map((a) => a.name)).toEqual(['report']);
    expect(await terminalEvents(taskId)).toEqual(['TASK_STATE_COMPLETED']);
    expect(await gw.redis.hget(`${gw.prefix}:{${taskId}}:task`, 'cancelRequestedAtMs')).toBeNull();
  }, 180_000);

  it('(e) a cancel request that loses to the finishing turn answers TaskNotCancelable, not the COMPLETED task', async () => {
    // A gateway with no worker at all, and this test playing the worker through the store,
    // so the interleaving is exact: the turn is running, CancelTask is requested and waits,
    // and the turn then completes without having seen the request.
    const lone = await startTestGateway({ name: 'cancel-lost', inProcessWorker: false, config: { cancelWaitMs: 30_000 } });
    try {
      const store = new TaskStore(lone.redis, lone.prefix);
      const sent = await rpc(lone.jsonRpcUrl, 'SendMessage', { message: textMessage('echo too late'), configuration: { returnImmediately: true } });
      const task = (sent.body.result as { task: Task }).task;
      const ownerKey = (await store.gateway.taskOwnerKey(task.id)) as string;
      const lease = await store.turns.acquireLease({ taskId: task.id, ownerKey, contextId: task.contextId, workerId: 'test-worker', leaseTtlMs: 60_000, now: new Date() });
      expect(lease.kind).toBe('acquired');
      if (lease.kind !== 'acquired') return;

      const pending = rpc(lone.jsonRpcUrl, 'CancelTask', { id: task.id });
      await waitFor(async () => (await lone.redis.hget(store.keys.task(task.id).task, 'cancelRequestedAtMs')) ?? undefined, 10_000, 'the cancel request');
      const finished = await store.turns.finishTurn({
        taskId: task.id,
        ownerKey,
        contextId: task.contextId,
        generation: lease.generation,
        status: { state: 'TASK_STATE_COMPLETED', timestamp: new Date().toISOString() },
        agentMessage: undefined,
        turnRecord: { turn: 1, inputMessageIds: [], acceptedAtMs: Date.now(), outcome: 'TASK_STATE_COMPLETED' },
        artifacts: [],
        now: new Date(),
      });
      expect(finished.kind).toBe('done');

      const { body } = await pending;
      expect(body.result, 'CancelTask must not report success for a task that completed').toBeUndefined();
      expect((body.error as { code: number }).code).toBe(-32002);
    } finally {
      await lone.close();
    }
  }, 180_000);
});
