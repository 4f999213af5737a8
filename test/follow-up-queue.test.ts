// The documented follow-up policy: a message to a task whose turn is still running is
// accepted and queued as the next turn's input (not refused, not run concurrently); a message
// to a task in a terminal state is refused with UnsupportedOperationError (-32004) and changes
// nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Message, StreamResponse, Task, TaskState } from '../src/protocol/types.ts';
import type { TurnRecord } from '../src/store/task-store.ts';
import { rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';

let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({ name: 'followup', adapterOptions: { stepMs: 50 }, config: { cancelWaitMs: 30_000 } });
});

afterAll(async () => {
  await gw?.close();
});

const TERMINAL: ReadonlySet<TaskState> = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED']);

const stateOf = (event: StreamResponse): TaskState | undefined =>
  'statusUpdate' in event ? event.statusUpdate.status.state : 'task' in event ? event.task.status.state : undefined;

type RpcOutcome = { task?: Task; error?: { code: number; message: string } };

async function sendMessage(message: Record<string, unknown>, returnImmediately: boolean): Promise<RpcOutcome> {
  const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message, configuration: { returnImmediately } });
  if (body.error !== undefined) return { error: body.error as { code: number; message: string } };
  return { task: (body.result as { task: Task }).task };
}

async function getTask(taskId: string): Promise<Task> {
  const { body } = await rpc(gw.jsonRpcUrl, 'GetTask', { id: taskId });
  expect(body.error).toBeUndefined();
  return body.result as Task;
}

async function storedEvents(taskId: string): Promise<StreamResponse[]> {
  const entries = await gw.redis.xrange(`${gw.prefix}:{${taskId}}:events`, '-', '+');
  return entries.map(([, fields]) => JSON.parse(fields[1] as string) as StreamResponse);
}

async function turnRecords(taskId: string): Promise<Record<string, TurnRecord>> {
  const all = await gw.redis.hgetall(`${gw.prefix}:{${taskId}}:turns`);
  return Object.fromEntries(Object.entries(all).map(([turn, json]) => [turn, JSON.parse(json) as TurnRecord]));
}

function waitForTerminal(taskId: string): Promise<Task> {
  return waitFor(
    async () => {
      const task = await getTask(taskId);
      return TERMINAL.has(task.status.state) ? task : undefined;
    },
    90_000,
    `task ${taskId} to end`,
  );
}

/** Starts "long <n>" and returns once its turn is visibly running. */
async function startLong(steps: number): Promise<Task> {
  const started = await sendMessage(textMessage(`long ${steps}`), true);
  expect(started.error).toBeUndefined();
  const taskId = started.task?.id as string;
  await waitFor(
    async () => (await storedEvents(taskId)).filter((e) => 'statusUpdate' in e && e.statusUpdate.status.message !== undefined).length >= 2 || undefined,
    60_000,
    'the first turn to make progress',
  );
  return started.task as Task;
}

const textOf = (m: Message): string => m.parts.map((p) => p.text ?? '').join('');

/**
 * The content of this task's own keys (BullMQ's bookkeeping keys change on their own, and a
 * DUMP of a hash is not a stable fingerprint: its field order may change without a write).
 */
async function taskKeys(taskId: string): Promise<Record<string, unknown>> {
  const keys = (await gw.redis.keys(`${gw.prefix}:{${taskId}}:*`)).sort();
  const content: Record<string, unknown> = {};
  for (const key of keys) {
    const type = await gw.redis.type(key);
    if (type === 'hash') content[key] = await gw.redis.hgetall(key);
    else if (type === 'list') content[key] = await gw.redis.lrange(key, 0, -1);
    else if (type === 'set') content[key] = (await gw.redis.smembers(key)).sort();
    else if (type === 'stream') content[key] = await gw.redis.xrange(key, '-', '+');
    else if (type === 'string') content[key] = await gw.redis.get(key);
    else content[key] = type;
  }
  return content;
}

describe('follow-up to a task whose turn is running', () => {
  it('is queued as the next turn and answered with the task', async () => {
    const task = await startLong(20);
    const followUp = textMessage('echo queued', { taskId: task.id });
    const reply = await sendMessage(followUp, true);
    expect(reply.error).toBeUndefined();
    expect(reply.task?.id).toBe(task.id);
    // Accepted while the first turn was still running (the follow-up did not wait for it).
    expect(reply.task?.status.state).toBe('TASK_STATE_WORKING');
    expect(TERMINAL.has(reply.task?.status.state as TaskState)).toBe(false);

    const final = await waitForTerminal(task.id);
    expect(final.status.state).toBe('TASK_STATE_COMPLETED');
    // Both turns' results: the first turn's report and the follow-up's echo.
    expect(final.artifacts?.map((a) => a.name).sort()).toEqual(['echo', 'report']);
    expect(final.artifacts?.find((a) => a.name === 'echo')?.parts).toEqual([{ text: 'echo queued' }]);

    // History: first input, first turn's answer, then the follow-up and its answer.
    const history = final.history ?? [];
    expect(history.map((m) => m.role)).toEqual(['ROLE_USER', 'ROLE_AGENT', 'ROLE_USER', 'ROLE_AGENT']);
    expect(textOf(history[0] as Message)).toBe('long 20');
    expect(textOf(history[1] as Message)).toBe('long job finished: 20 steps');
    expect(history[2]?.messageId).toBe(followUp.messageId);
    expect(textOf(history[3] as Message)).toBe('echo complete');

    // Two turns, each with its own input, run one after the other.
    const turns = await turnRecords(task.id);
    expect(Object.keys(turns).sort()).toEqual(['1', '2']);
    expect(turns['2']?.inputMessageIds).toEqual([followUp.messageId]);
    expect(turns['1']?.outcome).toBe('TASK_STATE_COMPLETED');
    expect(turns['2']?.outcome).toBe('TASK_STATE_COMPLETED');
    expect(turns['2']?.startedAtMs as number).toBeGreaterThanOrEqual(turns['1']?.finishedAtMs as number);

    // One terminal event for the whole task, the last one; the first turn's end did not announce COMPLETED.
    const events = await storedEvents(task.id);
    expect(events.filter((e) => TERMINAL.has(stateOf(e) as TaskState)).map(stateOf)).toEqual(['TASK_STATE_COMPLETED']);
    expect(stateOf(events.at(-1) as StreamResponse)).toBe('TASK_STATE_COMPLETED');
    // Nothing from the follow-up's turn was stored before the first turn's report.
    const order = events.flatMap((e) => ('artifactUpdate' in e ? [e.artifactUpdate.artifact.name] : []));
    expect(order).toEqual(['report', 'echo']);
  });

  it('a blocking follow-up returns once its own queued turn is over', async () => {
    const task = await startLong(20);
    const followUp = textMessage('echo blocking follow-up', { taskId: task.id });
    const reply = await sendMessage(followUp, false);
    expect(reply.error).toBeUndefined();
    expect(reply.task?.id).toBe(task.id);
    expect(reply.task?.status.state).toBe('TASK_STATE_COMPLETED');
    expect(reply.task?.artifacts?.find((a) => a.name === 'echo')?.parts).toEqual([{ text: 'echo blocking follow-up' }]);
    expect(Object.keys(await turnRecords(task.id)).sort()).toEqual(['1', '2']);
  });

  it('several follow-ups queued during one turn become the next turn together', async () => {
    const task = await startLong(20);
    const a = textMessage('echo first', { taskId: task.id });
    const b = textMessage('second', { taskId: task.id });
    expect((await sendMessage(a, true)).error).toBeUndefined();
    expect((await sendMessage(b, true)).error).toBeUndefined();
    const final = await waitForTerminal(task.id);
    expect(final.status.state).toBe('TASK_STATE_COMPLETED');
    const turns = await turnRecords(task.id);
    expect(Object.keys(turns).sort()).toEqual(['1', '2']);
    expect(turns['2']?.inputMessageIds).toEqual([a.messageId, b.messageId]);
    expect(final.artifacts?.find((x) => x.name === 'echo')?.parts).toEqual([{ text: 'echo first' }, { text: 'second' }]);
    const users = (final.history ?? []).filter((m) => m.role === 'ROLE_USER').map((m) => m.messageId);
    expect(users.slice(1)).toEqual([a.messageId, b.messageId]);
  });
});

describe('follow-up to a task in a terminal state', () => {
  it('is refused with -32004 and changes nothing (COMPLETED and CANCELED)', async () => {
    const completed = await sendMessage(textMessage('echo done'), false);
    expect(completed.task?.status.state).toBe('TASK_STATE_COMPLETED');

    const running = await startLong(500);
    const canceled = await rpc(gw.jsonRpcUrl, 'CancelTask', { id: running.id });
    expect((canceled.body.result as Task | undefined)?.status.state).toBe('TASK_STATE_CANCELED');

    for (const task of [completed.task as Task, running]) {
      await new Promise((r) => setTimeout(r, 500));
      const before = await taskKeys(task.id);
      const late = textMessage('echo too late', { taskId: task.id });
      const reply = await sendMessage(late, false);
      expect(reply.task).toBeUndefined();
      expect(reply.error?.code).toBe(-32004);
      // Not even recorded as seen: the same message may be sent as a new task later.
      expect(await taskKeys(task.id)).toEqual(before);
      const after = await getTask(task.id);
      expect((after.history ?? []).some((m) => m.messageId === late.messageId)).toBe(false);
      // Over the streaming method too: refused before any stream starts.
      const streamed = await rpc(gw.jsonRpcUrl, 'SendStreamingMessage', { message: textMessage('echo streamed late', { taskId: task.id }) });
      expect((streamed.body.error as { code: number } | undefined)?.code).toBe(-32004);
      expect(await taskKeys(task.id)).toEqual(before);
    }
  });
});
