// Exact wire behaviour, over raw HTTP on both bindings:
// - ProtoJSON: requests may use proto field names (history_length, context_id, page_size, …)
//   as well as JSON names, and a field given under both is refused; free-form keys are kept.
// - A re-sent messageId with the same content is the same message; with other content (text,
//   parts, task, context) it is a conflict with a clear error, and nothing is stored.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectUnchanged, rpc, startTestGateway, textMessage, turnJobsSettled, waitFor, type TestGateway } from './support/harness.ts';

let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({ name: 'wire' });
});

afterAll(async () => {
  await gw?.close();
});

interface TaskView {
  id: string;
  contextId: string;
  status: { state: string };
  history?: unknown[];
  metadata?: Record<string, unknown>;
}

const rest = async (method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> => {
  const response = await fetch(`${gw.restUrl}${path}`, {
    method,
    headers: { 'A2A-Version': '1.0', ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

async function sendJsonRpc(params: Record<string, unknown>): Promise<TaskView> {
  const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', params);
  expect(body.error, JSON.stringify(body.error)).toBeUndefined();
  return (body.result as { task: TaskView }).task;
}

describe('ProtoJSON: proto field names are accepted', () => {
  let task: TaskView;

  beforeAll(async () => {
    // Completed: the user's message and the agent's answer make a history of two.
    task = await sendJsonRpc({ message: textMessage('echo history') });
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(task.history?.length).toBe(2);
  });

  it('GetTask history_length: 1 returns one message (JSON-RPC and HTTP+JSON query)', async () => {
    const viaRpc = await rpc(gw.jsonRpcUrl, 'GetTask', { id: task.id, history_length: 1 });
    expect((viaRpc.body.result as TaskView).history).toHaveLength(1);
    const viaRest = await rest('GET', `/tasks/${task.id}?history_length=1`);
    expect(viaRest.status).toBe(200);
    expect((viaRest.body as unknown as TaskView).history).toHaveLength(1);
    // And 0 means none, as with historyLength.
    const none = await rpc(gw.jsonRpcUrl, 'GetTask', { id: task.id, history_length: 0 });
    expect((none.body.result as TaskView).history).toBeUndefined();
  });

  it('ListTasks filters by context_id and pages by page_size (JSON-RPC body and HTTP+JSON query)', async () => {
    const contextId = `ctx-${randomBytes(6).toString('hex')}`;
    const mine = [await sendJsonRpc({ message: textMessage('echo one', { contextId }) }), await sendJsonRpc({ message: textMessage('echo two', { contextId }) })];
    await sendJsonRpc({ message: textMessage('echo elsewhere') });
    const listed = await rpc(gw.jsonRpcUrl, 'ListTasks', { context_id: contextId, page_size: 1, include_artifacts: true });
    const page = listed.body.result as { tasks: TaskView[]; nextPageToken: string; totalSize: number; pageSize: number };
    expect(page.totalSize).toBe(2);
    expect(page.pageSize).toBe(1);
    expect(page.tasks).toHaveLength(1);
    expect(page.tasks[0]?.contextId).toBe(contextId);
    const next = await rpc(gw.jsonRpcUrl, 'ListTasks', { context_id: contextId, page_size: 1, page_token: page.nextPageToken });
    const second = next.body.result as { tasks: TaskView[]; nextPageToken: string };
    expect(second.tasks.map((t) => t.id).concat(page.tasks.map((t) => t.id)).sort()).toEqual(mine.map((t) => t.id).sort());
    expect(second.nextPageToken).toBe('');
    const viaRest = await rest('GET', `/tasks?context_id=${contextId}&page_size=5&history_length=1`);
    const restPage = viaRest.body as unknown as { tasks: TaskView[] };
    expect(restPage.tasks.map((t) => t.id).sort()).toEqual(mine.map((t) => t.id).sort());
    for (const listedTask of restPage.tasks) expect(listedTask.history).toHaveLength(1);
  });

  it('SendMessage with proto names throughout: message_id, context_id, return_immediately, history_length', async () => {
    const contextId = `ctx-${randomBytes(6).toString('hex')}`;
    const messageId = `m-${randomBytes(6).toString('hex')}`;
    const params = {
      message: { message_id: messageId, context_id: contextId, role: 'ROLE_USER', parts: [{ text: 'echo snake', media_type: 'text/plain' }] },
      configuration: { return_immediately: true, history_length: 0 },
      metadata: { caller_key: 'kept as sent' },
    };
    const sent = await sendJsonRpc(params);
    expect(sent.contextId).toBe(contextId);
    // returnImmediately honoured: answered before the turn ended (or at least without history).
    expect(sent.history).toBeUndefined();
    const done = await waitFor(async () => {
      const read = (await rpc(gw.jsonRpcUrl, 'GetTask', { id: sent.id })).body.result as TaskView & { history: { messageId: string; parts: { mediaType?: string }[] }[] };
      return read.status.state === 'TASK_STATE_COMPLETED' ? read : undefined;
    });
    expect(done.history[0]?.messageId).toBe(messageId);
    expect(done.history[0]?.parts[0]?.mediaType).toBe('text/plain');
    // Free-form keys are the caller's own: not renamed.
    expect(done.metadata?.caller_key).toBe('kept as sent');
    // Over HTTP+JSON too.
    const viaRest = await rest('POST', '/message:send', { ...params, message: { ...params.message, message_id: `${messageId}-r` } });
    expect(viaRest.status).toBe(200);
    const restTask = (viaRest.body as { task: TaskView }).task;
    expect(restTask.contextId).toBe(contextId);
    await waitFor(async () => ((await rest('GET', `/tasks/${restTask.id}`)).body as unknown as TaskView).status.state === 'TASK_STATE_COMPLETED');
  });

  it('a field given under both names is refused with -32602 / 400 naming it, and nothing is stored', async () => {
    await turnJobsSettled(gw);
    const both = await expectUnchanged(gw, () => rpc(gw.jsonRpcUrl, 'SendMessage', { message: { ...textMessage('echo twice'), message_id: 'other' } }));
    const error = both.body.error as { code: number; data: { fieldViolations?: { field: string; description: string }[] }[] };
    expect(error.code).toBe(-32602);
    expect(error.data.find((d) => d.fieldViolations)?.fieldViolations?.[0]).toMatchObject({ field: 'message.messageId', description: expect.stringMatching(/given twice/) });
    const viaRest = await rest('GET', '/tasks?historyLength=1&history_length=2');
    expect(viaRest.status).toBe(400);
  });
});

describe('a re-sent messageId', () => {
  const expectConflict = (answer: { status: number; body: Record<string, unknown> }, binding: 'rpc' | 'rest', taskId: string): void => {
    if (binding === 'rpc') {
      expect(answer.status).toBe(200);
      const error = answer.body.error as { code: number; message: string; data: { reason?: string; metadata?: Record<string, string> }[] };
      expect(error.code).toBe(-32602);
      expect(error.message).toMatch(/already sent with other content/);
      expect(error.data[0]?.metadata).toMatchObject({ reason: 'MESSAGE_ID_REUSED', taskId });
    } else {
      expect(answer.status).toBe(409);
      const error = answer.body.error as { status: string; message: string; details: { metadata?: Record<string, string> }[] };
      expect(error.status).toBe('ALREADY_EXISTS');
      expect(error.details[0]?.metadata).toMatchObject({ reason: 'MESSAGE_ID_REUSED', taskId });
    }
  };

  for (const binding of ['rpc', 'rest'] as const) {
    const send = (message: Record<string, unknown>) =>
      binding === 'rpc' ? rpc(gw.jsonRpcUrl, 'SendMessage', { message }) : rest('POST', '/message:send', { message });
    const taskOf = (answer: { body: Record<string, unknown> }): TaskView =>
      binding === 'rpc' ? (answer.body.result as { task: TaskView }).task : (answer.body as { task: TaskView }).task;

    it(`${binding}: the same content is the same task; other text, parts or context is a conflict and stores nothing [guarantee:send.idempotent]`, async () => {
      const message = textMessage('echo original');
      const first = taskOf(await send(message));
      const again = taskOf(await send({ ...message }));
      expect(again.id).toBe(first.id);
      await turnJobsSettled(gw);
      const variants = [
        { ...message, parts: [{ text: 'echo changed' }] },
        { ...message, parts: [{ text: 'echo original' }, { text: 'and more' }] },
        { ...message, contextId: 'another-context' },
      ];
      for (const variant of variants) expectConflict(await expectUnchanged(gw, () => send(variant)), binding, first.id);
    });

    it(`${binding}: the creating messageId re-sent as a follow-up of its own task is a conflict, not a dropped message`, async () => {
      const message = textMessage('dialogue');
      const task = taskOf(await send(message));
      expect(task.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
      await turnJobsSettled(gw);
      expectConflict(await expectUnchanged(gw, () => send({ ...message, taskId: task.id, parts: [{ text: 'Ada' }] })), binding, task.id);
      // The task still waits for its answer, which a new messageId gives.
      const answered = taskOf(await send(textMessage('Ada', { taskId: task.id })));
      expect(answered.status.state).toBe('TASK_STATE_COMPLETED');
    });

    it(`${binding}: a follow-up re-sent with the same content is one message; with other content a conflict`, async () => {
      const task = taskOf(await send(textMessage('dialogue')));
      const answer = textMessage('Grace', { taskId: task.id });
      const answered = taskOf(await send(answer));
      expect(answered.status.state).toBe('TASK_STATE_COMPLETED');
      const resent = taskOf(await send({ ...answer }));
      expect(resent.id).toBe(task.id);
      expect(resent.history?.filter((m) => (m as { messageId: string }).messageId === answer.messageId)).toHaveLength(1);
      await turnJobsSettled(gw);
      expectConflict(await expectUnchanged(gw, () => send({ ...answer, parts: [{ text: 'Hopper' }] })), binding, task.id);
    });
  }
});
