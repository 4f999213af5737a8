// A worker process dies mid-turn (SIGKILL): the turn is recovered by another worker process
// after stall detection (invariant 3: attempts carried, not reset), no event is lost, doubled
// or reordered in the replay buffer, and a subscriber that was watching sees exactly the
// stored sequence and is closed after the terminal event (invariant 7).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StreamResponse, Task, TaskState } from '../src/protocol/types.ts';
import type { TurnRecord } from '../src/store/task-store.ts';
import { keepWorkersRunning, rpc, startTestGateway, stopWorkerProcesses, textMessage, waitFor, type TestGateway, type WorkerProcess } from './support/harness.ts';
import { openSse, type SseReader } from './support/sse.ts';

const TERMINAL: ReadonlySet<TaskState> = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED']);

let gw: TestGateway;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  gw = await startTestGateway({ name: 'recovery', inProcessWorker: false });
  const env = { A2A_ADAPTER_OPTIONS: '{"stepMs":50}' };
  await keepWorkersRunning(workers, gw.prefix, env);
}, 180_000);

afterAll(async () => {
  await stopWorkerProcesses(workers);
  await gw?.close();
}, 60_000);

interface XEvent {
  id: string;
  event: StreamResponse;
}

async function xrange(taskId: string): Promise<XEvent[]> {
  const entries = await gw.redis.xrange(`${gw.prefix}:{${taskId}}:events`, '-', '+');
  return entries.map(([id, fields]) => {
    expect(fields[0]).toBe('r');
    return { id, event: JSON.parse(fields[1] as string) as StreamResponse };
  });
}

const stateOf = (event: StreamResponse): TaskState | undefined =>
  'statusUpdate' in event ? event.statusUpdate.status.state : 'task' in event ? event.task.status.state : undefined;

const isProgress = (event: StreamResponse): boolean =>
  'statusUpdate' in event && event.statusUpdate.status.message?.metadata?.['progress'] !== undefined;

function compareIds(a: string, b: string): number {
  const [am, as] = a.split('-').map(Number) as [number, number];
  const [bm, bs] = b.split('-').map(Number) as [number, number];
  return am !== bm ? am - bm : as - bs;
}

async function getTask(taskId: string): Promise<Task> {
  const { body } = await rpc(gw.jsonRpcUrl, 'GetTask', { id: taskId });
  expect(body.error).toBeUndefined();
  return body.result as Task;
}

async function subscribe(taskId: string): Promise<SseReader> {
  const { response, reader } = await openSse(gw.jsonRpcUrl, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Accept: 'text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'SubscribeToTask', params: { id: taskId } }),
  });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
  return reader;
}

const pidOf = (workerId: string): number => {
  const match = /:(\d+):[^:]+$/.exec(workerId);
  if (match === null) throw new Error(`worker id ${workerId} does not look like host:pid:suffix`);
  return Number(match[1]);
};

describe('worker recovery after SIGKILL', () => {
  it('completes the turn on the surviving worker with attempts carried and an exact replay [guarantee:task.durable]', async () => {
    const sent = await rpc(gw.jsonRpcUrl, 'SendMessage', {
      message: textMessage('long 60'),
      configuration: { returnImmediately: true },
    });
    expect(sent.body.error).toBeUndefined();
    const taskId = ((sent.body.result as { task: Task }).task).id;
    const keys = {
      lease: `${gw.prefix}:{${taskId}}:lease`,
      turns: `${gw.prefix}:{${taskId}}:turns`,
    };

    // A watcher opened before anything goes wrong.
    const sse = await subscribe(taskId);

    const holderId = await waitFor(async () => (await gw.redis.get(keys.lease)) ?? undefined, 60_000, 'a worker to take the lease');
    const holderPid = pidOf(holderId);
    const victim = workers.find((w) => w.pid === holderPid);
    const survivor = workers.find((w) => w.pid !== holderPid);
    expect(victim, `lease holder ${holderId} is one of our worker processes`).toBeDefined();
    expect(survivor).toBeDefined();

    // Let the first attempt make visible progress, then kill its worker mid-turn.
    await waitFor(async () => (await xrange(taskId)).filter((e) => isProgress(e.event)).length >= 3 || undefined, 60_000, 'progress events');
    const beforeKill = await xrange(taskId);
    expect(beforeKill.some((e) => stateOf(e.event) !== undefined && TERMINAL.has(stateOf(e.event) as TaskState))).toBe(false);
    victim?.kill('SIGKILL');
    expect(await victim?.exited).toBe('SIGKILL');

    // The surviving worker picks the turn up after stall detection and finishes it.
    const final = await waitFor(
      async () => {
        const task = await getTask(taskId);
        return TERMINAL.has(task.status.state) ? task : undefined;
      },
      120_000,
      'the task to reach a terminal state after the kill',
    );
    expect(final.status.state).toBe('TASK_STATE_COMPLETED');
    expect(final.artifacts?.map((a) => a.name)).toEqual(['report']);
    expect(final.artifacts?.[0]?.parts[0]?.text).toMatch(/^Completed 60 steps .*\(attempt 2\)\.$/);

    // Invariant 3: the turn record counts the second attempt and names the survivor; the
    // first attempt's recorded steps were carried over, not reset.
    const record = JSON.parse((await gw.redis.hget(keys.turns, '1')) as string) as TurnRecord;
    expect(record.attempts).toBe(2);
    expect(record.workerId).toBeDefined();
    expect(pidOf(record.workerId as string)).toBe(survivor?.pid);
    expect(record.workerId).not.toBe(holderId);
    expect(record.outcome).toBe('TASK_STATE_COMPLETED');
    expect(record.steps?.some((s) => s.attempt === 1)).toBe(true);
    expect(record.steps?.filter((s) => s.attempt === 2)).toHaveLength(60);
    expect(await gw.redis.hlen(keys.turns)).toBe(1);
    expect(await gw.redis.exists(keys.lease)).toBe(0);

    // The replay buffer: strictly increasing ids, one terminal event, and it is the last.
    const events = await xrange(taskId);
    for (let i = 1; i < events.length; i++) expect(compareIds((events[i] as XEvent).id, (events[i - 1] as XEvent).id)).toBeGreaterThan(0);
    const terminal = events.filter((e) => TERMINAL.has(stateOf(e.event) as TaskState));
    expect(terminal).toHaveLength(1);
    expect(stateOf(terminal[0]?.event as StreamResponse)).toBe('TASK_STATE_COMPLETED');
    expect(events.at(-1)?.id).toBe(terminal[0]?.id);
    expect('task' in (events[0] as XEvent).event).toBe(true);
    // The second attempt re-ran the turn from the top; the progress it repeated was stored by
    // the first attempt already and is not stored again (appends are idempotent per turn run):
    // progress runs 1..60, each once, in order.
    const progress = events.filter((e) => isProgress(e.event)).map((e) => (e.event as { statusUpdate: { status: { message?: { metadata?: { progress?: number } } } } }).statusUpdate.status.message?.metadata?.progress);
    expect(progress).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
    const artifactEvents = events.filter((e) => 'artifactUpdate' in e.event);
    expect(artifactEvents).toHaveLength(1);

    // The watcher saw exactly the stored sequence, and its stream closed after COMPLETED.
    await Promise.race([
      sse.done,
      new Promise((_, reject) => setTimeout(() => reject(new Error('SubscribeToTask stream did not close after COMPLETED')), 30_000)),
    ]);
    const received = sse.events.map((e) => {
      const envelope = JSON.parse(e.data) as { jsonrpc: string; id: number; result?: StreamResponse; error?: unknown };
      expect(envelope.error).toBeUndefined();
      expect(envelope.id).toBe(7);
      return { id: e.id, event: envelope.result as StreamResponse };
    });
    expect(received.length).toBeGreaterThan(1);
    // First a Task snapshot whose id is the stored event it includes ...
    const [snapshot, ...rest] = received;
    expect('task' in (snapshot?.event as StreamResponse)).toBe(true);
    const snapshotIndex = events.findIndex((e) => e.id === snapshot?.id);
    expect(snapshotIndex).toBeGreaterThanOrEqual(0);
    // ... then every stored event after it, same ids, same data, nothing else.
    expect(rest).toEqual(events.slice(snapshotIndex + 1).map((e) => ({ id: e.id, event: e.event })));
    // The snapshot was taken before the kill, so the watcher lived through the recovery.
    expect(compareIds(snapshot?.id as string, beforeKill.at(-1)?.id as string)).toBeLessThanOrEqual(0);
    expect(stateOf(rest.at(-1)?.event as StreamResponse)).toBe('TASK_STATE_COMPLETED');

    // Nothing is written after the final event (no zombie writer).
    await new Promise((r) => setTimeout(r, 3_000));
    const later = await xrange(taskId);
    expect(later.map((e) => e.id)).toEqual(events.map((e) => e.id));
    expect((await getTask(taskId)).status.state).toBe('TASK_STATE_COMPLETED');
  }, 300_000);
});
