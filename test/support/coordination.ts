// Helpers for the sub-agent coordination suites: fan-out messages, a coordinator's assignments
// over both bindings, and what the children's turn records and stored events say about how
// they actually ran.
import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { JsonObject, Message, StreamResponse, Task, TaskState } from '../../src/protocol/types.ts';
import { TaskStore, type TurnRecord } from '../../src/store/task-store.ts';
import type { AssignmentView } from '../../src/tasks/assignment-views.ts';
import { rpc, waitFor, type TestGateway } from './harness.ts';

export type { AssignmentView };

export const TERMINAL: ReadonlySet<TaskState> = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED']);

export interface FanoutData {
  assignments: { role?: string; text: string }[];
  maxParallel?: number;
  onFailure?: 'continue' | 'fail-fast';
  review?: boolean;
}

/** The demo's `fanout` skill with its assignments spelled out in a data part. */
export function fanoutMessage(data: FanoutData, extra: Partial<Message> = {}): Message {
  return {
    messageId: `m-${randomBytes(8).toString('hex')}`,
    role: 'ROLE_USER',
    parts: [{ text: 'fanout' }, { data: data as unknown as JsonObject, mediaType: 'application/json' }],
    ...extra,
  };
}

/** A thin JSON-RPC client for one gateway, in one tenant. */
export function client(gw: TestGateway, tenant?: string) {
  const withTenant = (params: Record<string, unknown>): Record<string, unknown> => (tenant === undefined ? params : { ...params, tenant });
  const call = async <T>(method: string, params: Record<string, unknown>): Promise<T> => {
    const { body } = await rpc(gw.jsonRpcUrl, method, withTenant(params));
    expect(body.error, `${method} ${JSON.stringify(params).slice(0, 200)}`).toBeUndefined();
    return body.result as T;
  };
  const api = {
    /** Raw call: the error, if any, is the caller's to check. */
    raw: (method: string, params: Record<string, unknown>) => rpc(gw.jsonRpcUrl, method, withTenant(params)),
    async send(message: Message | Record<string, unknown>, returnImmediately = true): Promise<Task> {
      return (await call<{ task: Task }>('SendMessage', { message, configuration: { returnImmediately } })).task;
    },
    getTask: (id: string, historyLength?: number) => call<Task>('GetTask', historyLength === undefined ? { id } : { id, historyLength }),
    cancel: (id: string) => call<Task>('CancelTask', { id }),
    assignments: async (id: string) => (await call<{ taskId: string; assignments: AssignmentView[] }>('ListTaskAssignments', { id })).assignments,
    async restAssignments(id: string): Promise<{ status: number; body: { taskId?: string; assignments?: AssignmentView[] } }> {
      const base = tenant === undefined ? gw.restUrl : `${gw.restUrl}/${encodeURIComponent(tenant)}`;
      const response = await fetch(`${base}/tasks/${encodeURIComponent(id)}/assignments`, { headers: { 'A2A-Version': '1.0' } });
      return { status: response.status, body: (await response.json()) as { taskId?: string; assignments?: AssignmentView[] } };
    },
    waitForState(id: string, accept: (state: TaskState) => boolean, timeoutMs = 30_000, what = `task ${id} state`): Promise<Task> {
      return waitFor(
        async () => {
          const task = await api.getTask(id);
          return accept(task.status.state) ? task : undefined;
        },
        timeoutMs,
        what,
      );
    },
    waitForTerminal(id: string, timeoutMs = 30_000): Promise<Task> {
      return api.waitForState(id, (s) => TERMINAL.has(s), timeoutMs, `task ${id} to end`);
    },
  };
  return api;
}

export const stateOf = (event: StreamResponse): TaskState | undefined =>
  'statusUpdate' in event ? event.statusUpdate.status.state : 'task' in event ? event.task.status.state : undefined;

/** Every event stored in a task's replay buffer, oldest first. */
export async function storedEvents(gw: TestGateway, taskId: string): Promise<StreamResponse[]> {
  const entries = await gw.redis.xrange(`${gw.prefix}:{${taskId}}:events`, '-', '+');
  return entries.map(([, fields]) => JSON.parse(fields[1] as string) as StreamResponse);
}

export function turnRecords(gw: TestGateway, taskId: string): Promise<TurnRecord[]> {
  return new TaskStore(gw.redis, gw.prefix, 3600).turns.readTurnRecords(taskId);
}

/**
 * The most intervals open at one instant. An interval ending at the same millisecond another
 * starts does not overlap it (ends are counted first).
 */
export function maxOverlap(intervals: readonly { start: number; end: number }[]): number {
  const points = intervals.flatMap(({ start, end }) => [
    { at: start, delta: 1 },
    { at: end, delta: -1 },
  ]);
  points.sort((a, b) => a.at - b.at || a.delta - b.delta);
  let open = 0;
  let max = 0;
  for (const { delta } of points) {
    open += delta;
    max = Math.max(max, open);
  }
  return max;
}

/** [start, end] of each child's (last) execution of turn 1, from its turn record. */
export async function executionIntervals(gw: TestGateway, childIds: readonly string[]): Promise<{ taskId: string; start: number; end: number }[]> {
  return Promise.all(
    childIds.map(async (taskId) => {
      const [record] = await turnRecords(gw, taskId);
      expect(record?.startedAtMs, `child ${taskId} has a started turn`).toBeTypeOf('number');
      expect(record?.finishedAtMs, `child ${taskId} has a finished turn`).toBeTypeOf('number');
      return { taskId, start: record?.startedAtMs as number, end: record?.finishedAtMs as number };
    }),
  );
}

/** The concatenated text of an artifact's text parts. */
export const artifactText = (task: Task, name: string): string | undefined =>
  task.artifacts?.find((a) => a.name === name)?.parts.map((p) => p.text ?? '').join('');

export const statusText = (task: Task): string => task.status.message?.parts.map((p) => p.text ?? '').join('') ?? '';

/** A child that never ran: no WORKING status ever stored, no attempt in its turn record. */
export async function neverStarted(gw: TestGateway, childId: string): Promise<void> {
  const events = await storedEvents(gw, childId);
  expect(events.map(stateOf).filter((s) => s !== undefined), `child ${childId}`).not.toContain('TASK_STATE_WORKING');
  const records = await turnRecords(gw, childId);
  expect(records.every((r) => r.startedAtMs === undefined && r.attempts === undefined && r.workerId === undefined), JSON.stringify(records)).toBe(true);
}

async function assignmentsWhen(api: ReturnType<typeof client>, coordinatorId: string, ready: (list: AssignmentView[]) => boolean, what: string): Promise<AssignmentView[]> {
  return waitFor(
    async () => {
      const list = await api.assignments(coordinatorId);
      return ready(list) ? list : undefined;
    },
    30_000,
    what,
  );
}

/**
 * A coordinator of 6 long assignments (2 at a time) is canceled once 2 run: it is CANCELED,
 * every child ends CANCELED (the running ones stopped by their worker), and the 4 queued ones
 * never start.
 */
export async function cancelPropagation(gw: TestGateway): Promise<void> {
  const api = client(gw);
  // A running child is stopped only by the worker that runs it, which must be listening (on a
  // Cluster a worker subscribes each running turn's own channel, so there is nothing to count yet).
  if (!gw.redis.isCluster) {
    const [, listeners] = (await gw.redis.pubsub('NUMSUB', `${gw.prefix}:cancel`)) as [string, number];
    expect(listeners, "workers subscribed to this gateway's cancel requests").toBeGreaterThan(0);
  }
  const coordinator = await api.send(fanoutMessage({ assignments: Array.from({ length: 6 }, () => ({ text: 'long 200' })), maxParallel: 2, review: false }));
  const before = await assignmentsWhen(
    api,
    coordinator.id,
    (list) => list.length === 6 && list.filter((a) => a.taskState === 'TASK_STATE_WORKING').length === 2,
    'two children working',
  );
  const running = before.filter((a) => a.taskState === 'TASK_STATE_WORKING').map((a) => a.taskId);
  const queued = before.filter((a) => a.startOrder === undefined).map((a) => a.taskId);
  expect(running).toEqual(before.filter((a) => a.index < 2).map((a) => a.taskId));
  expect(queued).toHaveLength(4);

  const canceled = await api.cancel(coordinator.id);
  expect(canceled.status.state).toBe('TASK_STATE_CANCELED');

  for (const a of before) expect((await api.waitForTerminal(a.taskId)).status.state, `child ${a.index}`).toBe('TASK_STATE_CANCELED');
  const after = await assignmentsWhen(api, coordinator.id, (list) => list.every((a) => a.state === 'canceled'), 'every assignment settled as canceled');
  expect((await api.getTask(coordinator.id)).status.state).toBe('TASK_STATE_CANCELED');
  // Stopped well before their 200 steps: canceled, not finished.
  for (const id of running) expect((await turnRecords(gw, id))[0]?.outcome).toBe('TASK_STATE_CANCELED');
  for (const id of queued) {
    await neverStarted(gw, id);
    expect(after.find((a) => a.taskId === id)?.startOrder, `queued child ${id} was never granted a slot`).toBeUndefined();
  }
  expect(after.filter((a) => a.startOrder !== undefined).map((a) => a.taskId)).toEqual(running);
}
