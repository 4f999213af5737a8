// Re-sent messages (same messageId) never start a second task or a second turn, whether they
// arrive one after the other or at the same time; and invariant 1, persist before announce:
// a task id is only returned once the task and its input are stored, and a turn's results are
// stored before its terminal status event is published.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Message, StreamResponse, Task, TaskState } from '../src/protocol/types.ts';
import { REDIS_URL, rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';

let gw: TestGateway;
/** A second gateway process-equivalent on the same prefix: its own HTTP server and Redis connections. */
let other: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({ name: 'idem', adapterOptions: { stepMs: 20 } });
  other = await startTestGateway({ name: 'idem-2', inProcessWorker: false, config: { keyPrefix: gw.prefix } });
});

afterAll(async () => {
  await other?.close();
  await gw?.close();
});

const stateOf = (event: StreamResponse): TaskState | undefined =>
  'statusUpdate' in event ? event.statusUpdate.status.state : 'task' in event ? event.task.status.state : undefined;

type RpcOutcome = { task?: Task; error?: { code: number; message: string } };

async function sendMessage(message: Record<string, unknown>, returnImmediately = false, url = gw.jsonRpcUrl): Promise<RpcOutcome> {
  // Bounded well below the suite timeout, so a blocked call that never returns is reported as such.
  const call = rpc(url, 'SendMessage', { message, configuration: { returnImmediately } });
  const timeout = new Promise<never>((_, reject) =>
    setTimeout(() => reject(new Error(`SendMessage ${String(message.messageId)} got no answer within 40 s`)), 40_000).unref(),
  );
  const { body } = await Promise.race([call, timeout]);
  if (body.error !== undefined) return { error: body.error as { code: number; message: string } };
  return { task: (body.result as { task: Task }).task };
}

async function getTask(taskId: string, url = gw.jsonRpcUrl): Promise<RpcOutcome> {
  const { body } = await rpc(url, 'GetTask', { id: taskId });
  if (body.error !== undefined) return { error: body.error as { code: number; message: string } };
  return { task: body.result as Task };
}

async function storedEvents(taskId: string): Promise<StreamResponse[]> {
  const entries = await gw.redis.xrange(`${gw.prefix}:{${taskId}}:events`, '-', '+');
  return entries.map(([, fields]) => JSON.parse(fields[1] as string) as StreamResponse);
}

async function storedHistory(taskId: string): Promise<Message[]> {
  return (await gw.redis.lrange(`${gw.prefix}:{${taskId}}:history`, 0, -1)).map((m) => JSON.parse(m) as Message);
}

async function taskCount(): Promise<number> {
  let cursor = '0';
  let count = 0;
  do {
    const [next, batch] = await gw.redis.scan(cursor, 'MATCH', `${gw.prefix}:{*}:task`, 'COUNT', 1000);
    cursor = next;
    count += batch.length;
  } while (cursor !== '0');
  return count;
}

/** Waits a moment for any second turn a duplicate may have started, then checks the task has one. */
async function expectSingleTurnTask(taskId: string, messageId: string, turns = 1): Promise<Task> {
  await new Promise((r) => setTimeout(r, 1_500));
  expect(await gw.redis.hlen(`${gw.prefix}:{${taskId}}:turns`)).toBe(turns);
  const history = await storedHistory(taskId);
  expect(history.filter((m) => m.messageId === messageId)).toHaveLength(1);
  const events = await storedEvents(taskId);
  expect(events.filter((e) => stateOf(e) === 'TASK_STATE_COMPLETED')).toHaveLength(1);
  expect(stateOf(events.at(-1) as StreamResponse)).toBe('TASK_STATE_COMPLETED');
  expect(events.filter((e) => 'task' in e)).toHaveLength(1);
  const read = await getTask(taskId);
  expect(read.task?.status.state).toBe('TASK_STATE_COMPLETED');
  return read.task as Task;
}

describe('idempotent SendMessage', () => {
  it('a message sent twice in sequence makes one task and one turn [guarantee:send.idempotent]', async () => {
    const before = await taskCount();
    const message = textMessage('echo exactly once');
    const first = await sendMessage(message);
    expect(first.error).toBeUndefined();
    expect(first.task?.status.state).toBe('TASK_STATE_COMPLETED');
    const second = await sendMessage(message);
    expect(second.error).toBeUndefined();
    expect(second.task?.id).toBe(first.task?.id);
    expect(second.task?.status.state).toBe('TASK_STATE_COMPLETED');
    // Once more, while nothing waits on it.
    const third = await sendMessage(message, true);
    expect(third.task?.id).toBe(first.task?.id);

    const task = await expectSingleTurnTask(first.task?.id as string, message.messageId as string);
    expect(task.artifacts).toHaveLength(1);
    expect(task.artifacts?.[0]?.parts).toEqual([{ text: 'echo exactly once' }]);
    expect(await taskCount()).toBe(before + 1);
  });

  it('five concurrent copies of a message make one task and one turn [guarantee:send.idempotent]', async () => {
    const before = await taskCount();
    const message = textMessage('echo concurrently');
    const replies = await Promise.all(Array.from({ length: 5 }, () => sendMessage(message)));
    for (const reply of replies) expect(reply.error).toBeUndefined();
    const ids = new Set(replies.map((r) => r.task?.id));
    expect(ids.size).toBe(1);
    for (const reply of replies) expect(reply.task?.status.state).toBe('TASK_STATE_COMPLETED');

    const task = await expectSingleTurnTask([...ids][0] as string, message.messageId as string);
    expect(task.artifacts).toHaveLength(1);
    expect(await taskCount()).toBe(before + 1);
  });

  it('five concurrent returnImmediately copies, then a blocking one, still make one task and one turn', async () => {
    const before = await taskCount();
    const message = textMessage('long 5');
    const replies = await Promise.all(Array.from({ length: 5 }, () => sendMessage(message, true)));
    const ids = new Set(replies.map((r) => r.task?.id));
    expect(ids.size).toBe(1);
    const blocking = await sendMessage(message);
    expect(blocking.task?.id).toBe([...ids][0]);
    expect(blocking.task?.status.state).toBe('TASK_STATE_COMPLETED');
    const task = await expectSingleTurnTask([...ids][0] as string, message.messageId as string);
    expect(task.artifacts?.map((a) => a.name)).toEqual(['report']);
    expect(await taskCount()).toBe(before + 1);
  });

  async function startDialogue(): Promise<Task> {
    const started = await sendMessage(textMessage('dialogue'));
    expect(started.error).toBeUndefined();
    expect(started.task?.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    return started.task as Task;
  }

  function expectGreetedOnce(task: Task, answerId: string): void {
    expect(task.artifacts).toHaveLength(1);
    expect(task.artifacts?.[0]?.parts).toEqual([{ text: 'Hello, Ada!' }]);
    const texts = (task.history ?? []).map((m) => `${m.role}:${m.parts.map((p) => p.text ?? '').join('')}`);
    expect(texts).toEqual(['ROLE_USER:dialogue', 'ROLE_AGENT:What is your name?', 'ROLE_USER:Ada', 'ROLE_AGENT:greeted']);
    expect((task.history ?? []).filter((m) => m.messageId === answerId)).toHaveLength(1);
  }

  it('an answer to an input-required task re-sent in sequence starts only one extra turn', async () => {
    const dialogue = await startDialogue();
    const answer = textMessage('Ada', { taskId: dialogue.id });
    const first = await sendMessage(answer);
    expect(first.error).toBeUndefined();
    expect(first.task?.id).toBe(dialogue.id);
    expect(first.task?.status.state).toBe('TASK_STATE_COMPLETED');
    // The same answer again, after its turn is over: the same task back, not a new turn, not an error.
    const again = await sendMessage(answer);
    expect(again.error).toBeUndefined();
    expect(again.task?.id).toBe(dialogue.id);
    expect(again.task?.status.state).toBe('TASK_STATE_COMPLETED');
    const againImmediately = await sendMessage(answer, true);
    expect(againImmediately.task?.id).toBe(dialogue.id);

    const task = await expectSingleTurnTask(dialogue.id, answer.messageId as string, 2);
    expectGreetedOnce(task, answer.messageId as string);
  });

  it('an answer to an input-required task re-sent concurrently starts only one extra turn', async () => {
    const dialogue = await startDialogue();
    const answer = textMessage('Ada', { taskId: dialogue.id });
    const replies = await Promise.all(Array.from({ length: 5 }, () => sendMessage(answer)));
    for (const reply of replies) {
      expect(reply.error).toBeUndefined();
      expect(reply.task?.id).toBe(dialogue.id);
    }
    const task = await expectSingleTurnTask(dialogue.id, answer.messageId as string, 2);
    expectGreetedOnce(task, answer.messageId as string);
  });
});

describe('persist before announce (invariant 1)', () => {
  it('a returned task id is readable at once from another gateway, with its input message [guarantee:task.durable]', async () => {
    for (let i = 0; i < 20; i++) {
      const message = textMessage(i % 2 === 0 ? `echo persisted ${i}` : 'long 3');
      const sent = await sendMessage(message, true);
      expect(sent.error).toBeUndefined();
      const taskId = sent.task?.id as string;
      // Right away, through another gateway's HTTP server and Redis connections.
      const read = await getTask(taskId, other.jsonRpcUrl);
      expect(read.error, `GetTask ${taskId} on the second gateway right after SendMessage returned`).toBeUndefined();
      expect(read.task?.id).toBe(taskId);
      expect(read.task?.history?.[0]?.messageId).toBe(message.messageId);
      expect(read.task?.history?.[0]?.parts).toEqual(message.parts);
    }
  });

  it("a turn's results are stored before its terminal event is published", async () => {
    // An independent listener on the event channels: when it hears a terminal event it reads
    // the stored task at once, on another connection.
    const subscriber = new Redis(REDIS_URL);
    const reader = new Redis(REDIS_URL);
    const seenAtTerminal = new Map<string, { artifacts: string | null; history: string[]; state: string | null }>();
    const reads: Promise<void>[] = [];
    try {
      subscriber.on('pmessage', (_pattern: string, channel: string, payload: string) => {
        const event = JSON.parse(payload.slice(payload.indexOf('\n') + 1)) as StreamResponse;
        const state = stateOf(event);
        if (state !== 'TASK_STATE_COMPLETED') return;
        const taskId = gw.gateway.store.keys.taskOfEventChannel(channel) ?? '';
        reads.push(
          (async () => {
            const [artifacts, history, stateNow] = await Promise.all([
              reader.hget(`${gw.prefix}:{${taskId}}:task`, 'artifacts'),
              reader.lrange(`${gw.prefix}:{${taskId}}:history`, 0, -1),
              reader.hget(`${gw.prefix}:{${taskId}}:task`, 'state'),
            ]);
            seenAtTerminal.set(taskId, { artifacts, history, state: stateNow });
          })(),
        );
      });
      await subscriber.psubscribe(`${gw.prefix}:ev:*`);

      const taskIds: string[] = [];
      for (let i = 0; i < 10; i++) {
        const sent = await sendMessage(textMessage(i % 2 === 0 ? `echo result ${i}` : 'stream a b c'), true);
        taskIds.push(sent.task?.id as string);
      }
      await waitFor(() => taskIds.every((id) => seenAtTerminal.has(id)) || undefined, 60_000, 'every terminal event');
      await Promise.all(reads);
      for (const taskId of taskIds) {
        const seen = seenAtTerminal.get(taskId);
        expect(seen?.state).toBe('TASK_STATE_COMPLETED');
        const artifacts = JSON.parse(seen?.artifacts ?? '[]') as unknown[];
        expect(artifacts, `artifacts of ${taskId} when COMPLETED was announced`).toHaveLength(1);
        // The agent's final message is in the history too.
        const last = JSON.parse(seen?.history.at(-1) ?? '{}') as Message;
        expect(last.role).toBe('ROLE_AGENT');
      }
    } finally {
      subscriber.disconnect();
      reader.disconnect();
    }
  });
});
