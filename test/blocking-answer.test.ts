// A blocking SendMessage that creates a task is answered from the task the finish script
// publishes with the turn's final event (createTask's answerHistory, LiveEvent.answer): no read
// of its own, the same task GetTask reads, and nothing extra for any other listener of the task.
import { randomBytes } from 'node:crypto';
import { SendMessageRequest, TaskState, type Task } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskField } from '../src/store/task-hash.ts';
import type { LargeTask, TaskRead } from '../src/store/task-read.ts';
import { rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';
import { openSse } from './support/sse.ts';

let gw: TestGateway;
let client: Client;
/** Task ids the gateway's store read, in call order. */
const reads: string[] = [];

beforeAll(async () => {
  gw = await startTestGateway({ name: 'blocking-answer', adapterOptions: { stepMs: 40 } });
  const store = gw.gateway.store;
  // Every read of a task goes through readTaskWithin (readTask too, and an answer's read that
  // assembles a large task off the event loop).
  const readTaskWithin = store.gateway.readTaskWithin.bind(store.gateway);
  store.gateway.readTaskWithin = (taskId: string, ...rest): Promise<TaskRead | LargeTask | undefined> => {
    reads.push(taskId);
    return readTaskWithin(taskId, ...rest);
  };
  client = await new ClientFactory({ transports: [new JsonRpcTransportFactory()] }).createFromUrl(gw.url);
});

afterAll(async () => {
  await gw?.close();
});

const newMessageId = (): string => `ba-${randomBytes(8).toString('hex')}`;

async function sendBlocking(text: string, configuration: Record<string, unknown> = {}, metadata?: Record<string, unknown>): Promise<Task> {
  const result = await client.sendMessage(
    SendMessageRequest.fromJSON({ message: { messageId: newMessageId(), role: 'ROLE_USER', parts: [{ text }] }, configuration, ...(metadata ? { metadata } : {}) }),
  );
  expect('status' in result, JSON.stringify(result)).toBe(true);
  return result as Task;
}

const answerField = (taskId: string): Promise<string | null> => gw.redis.hget(gw.gateway.store.keys.task(taskId).task, taskField.answerHistory);

describe('a blocking SendMessage that creates a task', () => {
  it.each([
    ['all of the history', undefined],
    ['no history', 0],
    ['the last message', 1],
  ])('is answered with %s without a read, as GetTask reads the task (official client)', async (_what, historyLength) => {
    const task = await sendBlocking('echo answered from the final event', historyLength === undefined ? {} : { historyLength }, { origin: 'test' });
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(reads).not.toContain(task.id);
    const read = await client.getTask({ id: task.id, historyLength, tenant: '' });
    expect(task).toEqual(read);
    expect(task.history.length).toBe(historyLength ?? 2);
    expect(task.artifacts[0]?.parts[0]?.content).toEqual({ $case: 'text', value: 'echo answered from the final event' });
    // Used once, then gone: a later turn's end publishes nothing extra.
    expect(await answerField(task.id)).toBeNull();
  });

  it('is read instead when the task is too large to ride in the event (raw HTTP)', async () => {
    const text = `echo ${'x'.repeat(70_000)}`;
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage(text) });
    const task = (body.result as { task: { id: string; status: { state: string }; artifacts: { parts: { text: string }[] }[] } }).task;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(task.artifacts[0]?.parts[0]?.text).toBe(text);
    expect(reads.filter((id) => id === task.id)).toHaveLength(1);
    const { body: got } = await rpc(gw.jsonRpcUrl, 'GetTask', { id: task.id });
    expect(task).toEqual(got.result);
  });

  it('leaves no answer to publish when the call does not wait', async () => {
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('echo not waited for'), configuration: { returnImmediately: true } });
    const id = (body.result as { task: { id: string } }).task.id;
    expect(await answerField(id)).toBeNull();
  });

  it('gives a SubscribeToTask stream of the same task only its events', async () => {
    const contextId = `ctx-${randomBytes(6).toString('hex')}`;
    const waiting = rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('long 8', { contextId }) });
    const taskId = await waitFor(async () => {
      const { body } = await rpc(gw.jsonRpcUrl, 'ListTasks', { contextId });
      const tasks = (body.result as { tasks: { id: string; status: { state: string } }[] }).tasks;
      return tasks[0]?.status.state === 'TASK_STATE_WORKING' ? tasks[0].id : undefined;
    }, 10_000, 'the task to start');
    expect(await answerField(taskId)).toBe('-1');
    const { response, reader } = await openSse(gw.jsonRpcUrl, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Accept: 'text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SubscribeToTask', params: { id: taskId } }),
    });
    expect(response.status).toBe(200);
    await reader.done;
    const { body } = await waiting;
    expect((body.result as { task: { id: string } }).task.id).toBe(taskId);
    // The stream's own snapshot, and no read for the waiting call.
    expect(reads.filter((id) => id === taskId)).toHaveLength(1);
    // Had the answer leaked, the last frame's data would be two lines: no longer one JSON value.
    const frames = reader.events.map((event) => JSON.parse(event.data) as { result: Record<string, { status?: { state: string } }> });
    const last = frames.at(-1)?.result ?? {};
    expect(Object.keys(last)).toEqual(['statusUpdate']);
    expect(last.statusUpdate?.status?.state).toBe('TASK_STATE_COMPLETED');
  });
});
