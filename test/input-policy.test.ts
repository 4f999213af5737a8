// What a message does to a task whose turn is queued or running, per agent (inputPolicy):
// enqueue (the next turn's input), reject (refused, nothing changes) and interrupt (the running
// turn stops through the cancel stages, scoped to the turn, and the next turn starts at once with
// everything pending). Three agents of one gateway, one per policy.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSse } from './support/sse.ts';
import { rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';

let gw: TestGateway;
const demo = (inputPolicy: string) => ({ adapter: 'demo', adapterOptions: { stepMs: 20 }, inputPolicy });

beforeAll(async () => {
  gw = await startTestGateway({
    name: 'input-policy',
    config: { agents: { queue: demo('enqueue'), strict: demo('reject'), fresh: demo('interrupt'), tight: { ...demo('enqueue'), limits: { maxQueuedMessages: 2 } } } },
  });
});

afterAll(async () => {
  await gw?.close();
});

interface TaskView {
  id: string;
  contextId: string;
  status: { state: string; message?: { parts: { text?: string }[] } };
  history?: { messageId: string; role: string; parts: { text?: string }[] }[];
  artifacts?: { artifactId: string; parts: { text?: string }[] }[];
}

const rpcUrl = (agent: string): string => `${gw.url}/agents/${agent}/a2a/jsonrpc`;

async function send(agent: string, text: string, extra: Record<string, unknown> = {}, configuration: Record<string, unknown> = {}): Promise<{ task?: TaskView; error?: { code: number; message: string; data: { reason?: string; metadata?: Record<string, string> }[] } }> {
  const reply = await rpc(rpcUrl(agent), 'SendMessage', { message: textMessage(text, extra), configuration });
  return { task: (reply.body.result as { task?: TaskView } | undefined)?.task, error: reply.body.error as never };
}

async function getTask(agent: string, id: string): Promise<TaskView> {
  return (await rpc(rpcUrl(agent), 'GetTask', { id })).body.result as TaskView;
}

async function turnRecords(taskId: string): Promise<{ turn: number; inputMessageIds: string[]; outcome?: string; reason?: string }[]> {
  const all = await gw.redis.hgetall(`${gw.prefix}:{${taskId}}:turns`);
  return Object.values(all).map((json) => JSON.parse(json)).sort((a, b) => a.turn - b.turn);
}

async function untilRunning(id: string): Promise<void> {
  await waitFor(async () => ((await gw.redis.xlen(`${gw.prefix}:{${id}}:events`)) >= 4 ? true : undefined), 20_000, 'progress');
}

describe('inputPolicy reject', () => {
  it('refuses a message to a task whose turn runs, changes nothing, and takes it once the turn is over', async () => {
    const started = (await send('strict', 'long 40', {}, { returnImmediately: true })).task as TaskView;
    await untilRunning(started.id);
    const keys = `${gw.prefix}:{${started.id}}`;
    const [historyBefore, inboxBefore] = [await gw.redis.llen(`${keys}:history`), await gw.redis.llen(`${keys}:inbox`)];
    const follow = textMessage('echo too soon', { taskId: started.id });
    const refused = await rpc(rpcUrl('strict'), 'SendMessage', { message: follow });
    const error = refused.body.error as { code: number; message: string; data: { metadata?: Record<string, string> }[] };
    expect(error.code).toBe(-32004);
    expect(error.message).toMatch(/refuses messages until it ends \(inputPolicy reject\)/);
    expect(error.data[0]?.metadata).toMatchObject({ reason: 'TASK_BUSY', inputPolicy: 'reject', taskId: started.id });
    // The HTTP+JSON binding refuses alike.
    const rest = await fetch(`${gw.url}/agents/strict/a2a/rest/message:send`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
      body: JSON.stringify({ message: follow }),
    });
    expect(rest.status).toBe(400);
    expect(((await rest.json()) as { error: { status: string } }).error.status).toBe('FAILED_PRECONDITION');
    expect(await gw.redis.llen(`${keys}:history`)).toBe(historyBefore);
    expect(await gw.redis.llen(`${keys}:inbox`)).toBe(inboxBefore);
    expect(await gw.redis.sismember(`${keys}:msgids`, follow.messageId as string)).toBe(0);
    const done = await waitFor(async () => {
      const task = await getTask('strict', started.id);
      return task.status.state === 'TASK_STATE_COMPLETED' ? task : undefined;
    }, 30_000, 'the turn to end');
    expect(done.status.state).toBe('TASK_STATE_COMPLETED');
    // A terminal task refuses for its own reason; an interrupted dialogue takes the answer.
    const asked = (await send('strict', 'dialogue')).task as TaskView;
    expect(asked.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    const answered = (await send('strict', 'Ada', { taskId: asked.id })).task as TaskView;
    expect(answered.status.state).toBe('TASK_STATE_COMPLETED');
  });

  it('still answers a re-sent message it accepted before the turn started', async () => {
    const message = textMessage('long 30');
    const first = await rpc(rpcUrl('strict'), 'SendMessage', { message, configuration: { returnImmediately: true } });
    const again = await rpc(rpcUrl('strict'), 'SendMessage', { message, configuration: { returnImmediately: true } });
    expect(again.body.error).toBeUndefined();
    expect((again.body.result as { task: TaskView }).task.id).toBe((first.body.result as { task: TaskView }).task.id);
  });
});

describe('inputPolicy interrupt', () => {
  it('stops the running turn through the cancel stages and answers the new message in the next turn', async () => {
    const started = (await send('fresh', 'long 500', {}, { returnImmediately: true })).task as TaskView;
    const { reader: stream } = await openSse(`${gw.url}/agents/fresh/a2a/rest/tasks/${started.id}:subscribe`, { method: 'POST', headers: { 'A2A-Version': '1.0' } });
    await untilRunning(started.id);
    const answer = (await send('fresh', 'echo the new question', { taskId: started.id })).task as TaskView;
    // The blocking call returns when the turn that took its message is over.
    expect(answer.status.state).toBe('TASK_STATE_COMPLETED');
    expect(answer.artifacts?.find((a) => a.artifactId === 'echo')?.parts.map((p) => p.text).join('')).toBe('echo the new question');
    const [first, second] = await turnRecords(started.id);
    expect(first).toMatchObject({ turn: 1, outcome: 'TASK_STATE_CANCELED', reason: expect.stringMatching(/interrupted by a new message/) });
    expect(second).toMatchObject({ turn: 2, outcome: 'TASK_STATE_COMPLETED' });
    // The task itself was never canceled: the stream saw the turn's cancel stages, then the next turn to its end.
    await stream.done;
    const events = stream.events.map((e) => JSON.parse(e.data) as { statusUpdate?: { status: { state: string }; metadata?: { cancellation?: { stage: string; scope?: string; turn?: number } } } });
    const stages = events.flatMap((e) => (e.statusUpdate?.metadata?.cancellation === undefined ? [] : [e.statusUpdate.metadata.cancellation]));
    expect(stages.map((s) => [s.stage, s.scope, s.turn])).toEqual([
      ['requested', 'turn', 1],
      ['acknowledged', 'turn', 1],
      ['stopped', 'turn', 1],
    ]);
    expect(events.filter((e) => e.statusUpdate?.status.state === 'TASK_STATE_CANCELED')).toEqual([]);
    expect(events.at(-1)?.statusUpdate?.status.state).toBe('TASK_STATE_COMPLETED');
  });

  it('lets a message join a turn that has not started, and runs one turn for both', async () => {
    const paused = await startTestGateway({ name: 'input-policy-queued', inProcessWorker: false, config: { agents: { fresh: demo('interrupt') } } });
    try {
      const url = `${paused.url}/agents/fresh/a2a/jsonrpc`;
      const first = await rpc(url, 'SendMessage', { message: textMessage('echo one'), configuration: { returnImmediately: true } });
      const taskId = (first.body.result as { task: TaskView }).task.id;
      const second = await rpc(url, 'SendMessage', { message: textMessage('echo two', { taskId }), configuration: { returnImmediately: true } });
      expect(second.body.error).toBeUndefined();
      const records = Object.values(await paused.redis.hgetall(`${paused.prefix}:{${taskId}}:turns`)).map((j) => JSON.parse(j) as { inputMessageIds: string[] });
      expect(records).toHaveLength(1);
      expect(records[0]?.inputMessageIds).toHaveLength(2);
    } finally {
      await paused.close();
    }
  });

  it('under a burst of messages racing turns that end on their own: every message is answered once, no task is canceled', async () => {
    const tasks = await Promise.all(Array.from({ length: 6 }, () => send('fresh', 'long 3', {}, { returnImmediately: true })));
    await Promise.all(
      tasks.map(async ({ task }, i) => {
        await new Promise((r) => setTimeout(r, 10 * i));
        await Promise.all([1, 2, 3].map((n) => send('fresh', `echo ${n}`, { taskId: task?.id }, { returnImmediately: true })));
      }),
    );
    for (const { task } of tasks) {
      const final = await waitFor(async () => {
        const read = await getTask('fresh', task?.id as string);
        return read.status.state === 'TASK_STATE_COMPLETED' || read.status.state === 'TASK_STATE_CANCELED' ? read : undefined;
      }, 30_000, 'each task to end');
      expect(final.status.state).toBe('TASK_STATE_COMPLETED');
      const records = await turnRecords(final.id);
      const inputs = records.flatMap((r) => r.inputMessageIds);
      // Every message was the input of exactly one turn, and the last turn completed.
      expect(new Set(inputs).size).toBe(4);
      expect(inputs).toHaveLength(4);
      expect(records.at(-1)?.outcome).toBe('TASK_STATE_COMPLETED');
      for (const record of records.slice(0, -1)) expect(['TASK_STATE_COMPLETED', 'TASK_STATE_CANCELED']).toContain(record.outcome);
    }
  });
});

describe('inputPolicy enqueue (the default)', () => {
  it('queues the message as the next turn, which runs after the current one completes', async () => {
    const started = (await send('queue', 'long 20', {}, { returnImmediately: true })).task as TaskView;
    await untilRunning(started.id);
    const follow = (await send('queue', 'echo after', { taskId: started.id })).task as TaskView;
    expect(follow.status.state).toBe('TASK_STATE_COMPLETED');
    const records = await turnRecords(started.id);
    expect(records.map((r) => r.outcome)).toEqual(['TASK_STATE_COMPLETED', 'TASK_STATE_COMPLETED']);
  });
});

describe('the messages waiting for a running turn are bounded (limits.maxQueuedMessages)', () => {
  it('refuses the one past the bound with 429 and a reason, storing nothing', async () => {
    const started = (await send('tight', 'long 200', {}, { returnImmediately: true })).task as TaskView;
    await untilRunning(started.id);
    for (const n of [1, 2]) expect((await send('tight', `echo ${n}`, { taskId: started.id }, { returnImmediately: true })).error).toBeUndefined();
    const third = textMessage('echo 3', { taskId: started.id });
    const refused = await rpc(rpcUrl('tight'), 'SendMessage', { message: third, configuration: { returnImmediately: true } });
    expect(refused.status).toBe(429);
    expect(JSON.stringify(refused.body.error)).toMatch(/INBOX_FULL/);
    expect(await gw.redis.llen(`${gw.prefix}:{${started.id}}:inbox`)).toBe(2);
    expect(await gw.redis.sismember(`${gw.prefix}:{${started.id}}:msgids`, third.messageId as string)).toBe(0);
    await rpc(rpcUrl('tight'), 'CancelTask', { id: started.id });
  });
});
