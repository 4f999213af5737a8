// Sub-agent coordination (issue 5) on one gateway with an in-process worker: cancel
// propagation, a child's question surfaced on its coordinator and the answer forwarded,
// the partial-failure policies, who may see the children, and idempotent coordinators.
// The concurrency and worker-loss checks, which need worker processes, are in
// coordination-recovery.test.ts.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JsonObject, StreamResponse, Task } from '../src/protocol/types.ts';
import { scanKeys } from '../src/redis/cross-slot.ts';
import { ROOT, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';
import { openSse } from './support/sse.ts';
import { artifactText, cancelPropagation, client, fanoutMessage, neverStarted, stateOf, statusText } from './support/coordination.ts';

let gw: TestGateway;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  gw = await startTestGateway({
    name: 'coord',
    config: { delegation: { roles: { broken: { adapter: join(ROOT, 'test/fixtures/failing-adapter.mjs') } } } },
  });
  api = client(gw);
});

afterAll(async () => {
  await gw?.close();
});

const gatewayMetadata = (task: Task): JsonObject => (task.metadata?.a2aGateway ?? {}) as JsonObject;

describe('cancel propagation', () => {
  it('canceling the coordinator cancels running children and queued ones never start', () => cancelPropagation(gw));
});

describe("a child's question", () => {
  it('is asked by the coordinator, and the answer reaches the child', async () => {
    const coordinator = await api.send(fanoutMessage({ assignments: [{ text: 'dialogue' }, { text: 'stream a b' }], review: false }));
    const asking = await api.waitForState(coordinator.id, (s) => s === 'TASK_STATE_INPUT_REQUIRED');
    const [dialogue, streamer] = await api.assignments(coordinator.id);
    expect(statusText(asking)).toBe('Assignment 0 (specialist) asks: What is your name?');
    expect((asking.status.message?.metadata?.a2aGateway as JsonObject).awaitingAssignment).toMatchObject({ taskId: dialogue?.taskId, index: 0 });
    expect(dialogue?.state).toBe('input-required');
    expect(dialogue?.question).toBe('What is your name?');

    await api.send(textMessage('Ada', { taskId: coordinator.id }));
    const child = await api.waitForTerminal(dialogue?.taskId as string);
    expect(child.status.state).toBe('TASK_STATE_COMPLETED');
    expect(artifactText(child, 'greeting')).toBe('Hello, Ada!');
    const answer = (await api.getTask(child.id, 100)).history?.find((m) => m.role === 'ROLE_USER' && m.parts[0]?.text === 'Ada');
    expect(answer?.referenceTaskIds).toEqual([coordinator.id]);

    const done = await api.waitForTerminal(coordinator.id);
    expect(done.status.state).toBe('TASK_STATE_COMPLETED');
    expect(artifactText(done, 'combined')).toBe('Hello, Ada! a b');
    expect((await api.getTask(streamer?.taskId as string)).status.state).toBe('TASK_STATE_COMPLETED');
  });

  it('of two children are asked one after the other, each answer going to its own child', async () => {
    const coordinator = await api.send(fanoutMessage({ assignments: [{ text: 'dialogue' }, { text: 'dialogue' }], review: false }));
    const first = await api.waitForState(coordinator.id, (s) => s === 'TASK_STATE_INPUT_REQUIRED');
    const firstChild = ((first.status.message?.metadata?.a2aGateway as JsonObject).awaitingAssignment as JsonObject).taskId as string;
    await api.send(textMessage('Ada', { taskId: coordinator.id }));
    const second = await waitFor(
      async () => {
        const task = await api.getTask(coordinator.id);
        const awaiting = ((task.status.message?.metadata?.a2aGateway as JsonObject | undefined)?.awaitingAssignment as JsonObject | undefined)?.taskId;
        return task.status.state === 'TASK_STATE_INPUT_REQUIRED' && awaiting !== firstChild ? task : undefined;
      },
      30_000,
      'the second question',
    );
    expect(statusText(second)).toMatch(/^Assignment [01] \(specialist\) asks: What is your name\?$/);
    const secondChild = ((second.status.message?.metadata?.a2aGateway as JsonObject).awaitingAssignment as JsonObject).taskId as string;
    const ids = (await api.assignments(coordinator.id)).map((a) => a.taskId);
    expect(new Set([firstChild, secondChild])).toEqual(new Set(ids));

    await api.send(textMessage('Bob', { taskId: coordinator.id }));
    const done = await api.waitForTerminal(coordinator.id);
    expect(done.status.state).toBe('TASK_STATE_COMPLETED');
    expect(artifactText(await api.getTask(firstChild), 'greeting')).toBe('Hello, Ada!');
    expect(artifactText(await api.getTask(secondChild), 'greeting')).toBe('Hello, Bob!');
    const inOrder = ids[0] === firstChild ? 'Hello, Ada! Hello, Bob!' : 'Hello, Bob! Hello, Ada!';
    expect(artifactText(done, 'combined')).toBe(inOrder);
    // The coordinator's history holds both questions and both answers, in that order.
    const history = (await api.getTask(coordinator.id, 100)).history ?? [];
    const dialogue = history.filter((m) => m.parts.some((p) => /asks:|^Ada$|^Bob$/.test(p.text ?? ''))).map((m) => m.parts[0]?.text);
    expect(dialogue).toEqual([statusText(first), 'Ada', statusText(second), 'Bob']);
  });

  it("ends the coordinator's SendStreamingMessage stream at INPUT_REQUIRED", async () => {
    const message = fanoutMessage({ assignments: [{ text: 'dialogue' }], review: false });
    const { response, reader } = await openSse(gw.jsonRpcUrl, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Accept: 'text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'SendStreamingMessage', params: { message } }),
    });
    expect(response.status).toBe(200);
    await Promise.race([reader.done, new Promise((_, reject) => setTimeout(() => reject(new Error('stream still open')), 30_000))]);
    const events = reader.events.map((e) => (JSON.parse(e.data) as { result: StreamResponse }).result);
    const states = events.map(stateOf).filter((s) => s !== undefined);
    // The parked coordinator is WORKING (waiting for its assignment): the stream stays open then.
    expect(states).toContain('TASK_STATE_WORKING');
    expect(states.at(-1)).toBe('TASK_STATE_INPUT_REQUIRED');
    const last = events.at(-1) as { statusUpdate: { taskId: string; status: Task['status'] } };
    expect(last.statusUpdate.status.message?.parts[0]?.text).toBe('Assignment 0 (specialist) asks: What is your name?');
    const coordinatorId = last.statusUpdate.taskId;
    await api.send(textMessage('Grace', { taskId: coordinatorId }));
    expect(artifactText(await api.waitForTerminal(coordinatorId), 'combined')).toBe('Hello, Grace!');
  });
});

describe('partial failure', () => {
  it('continue: every assignment runs, the failure is reported and the reviewer rejects it', async () => {
    const coordinator = await api.send(
      fanoutMessage({
        assignments: [
          { role: 'specialist', text: 'stream a' },
          { role: 'broken', text: 'x' },
          { role: 'specialist', text: 'stream b' },
        ],
        onFailure: 'continue',
        review: true,
      }),
    );
    const done = await api.waitForTerminal(coordinator.id);
    expect(done.status.state).toBe('TASK_STATE_COMPLETED');
    expect(statusText(done)).toMatch(/^Combined 2 of 3 assignments \(1 failed, 0 canceled\)\./);
    expect(artifactText(done, 'combined')).toBe('a b');
    const verdict = done.artifacts?.find((a) => a.artifactId === 'review-fanout');
    expect(verdict?.parts[0]?.text).toBe('reject: assignment 1 failed of 3');
    const list = await api.assignments(coordinator.id);
    expect(list.map((a) => [a.kind, a.role, a.state])).toEqual([
      ['work', 'specialist', 'completed'],
      ['work', 'broken', 'failed'],
      ['work', 'specialist', 'completed'],
      ['review', 'reviewer', 'completed'],
    ]);
    expect(verdict?.metadata).toMatchObject({ reviewerTaskId: list[3]?.taskId, role: 'reviewer', state: 'completed' });
    // The evidence the reviewer judged (and the coordinator combined) names the failure.
    const evidence = done.artifacts?.find((a) => a.name === 'combined')?.parts[1]?.data as JsonObject;
    expect(evidence).toMatchObject({ completed: 2, failed: 1, canceled: 0, verdict: 'reject: assignment 1 failed of 3' });
    expect((evidence.assignments as JsonObject[])[1]).toMatchObject({ index: 1, role: 'broken', state: 'failed', message: 'this role fails on purpose', taskId: list[1]?.taskId });
    const reviewer = await api.getTask(list[3]?.taskId as string, 10);
    const judged = reviewer.history?.[0]?.parts.find((p) => p.data !== undefined)?.data as JsonObject;
    expect((judged.assignments as JsonObject[]).map((a) => a.state)).toEqual(['completed', 'failed', 'completed']);
  });

  it('fail-fast: the first failure fails the coordinator and the rest never start', async () => {
    const coordinator = await api.send(
      fanoutMessage({
        assignments: [
          { role: 'broken', text: 'x' },
          { text: 'long 50' },
          { text: 'long 50' },
        ],
        maxParallel: 1,
        onFailure: 'fail-fast',
        review: false,
      }),
    );
    const done = await api.waitForTerminal(coordinator.id);
    expect(done.status.state).toBe('TASK_STATE_FAILED');
    const list = await api.assignments(coordinator.id);
    expect(statusText(done)).toContain(`Assignment 0 (broken, task ${list[0]?.taskId}) ended failed: this role fails on purpose`);
    expect(list.map((a) => a.state)).toEqual(['failed', 'canceled', 'canceled']);
    for (const a of list.slice(1)) {
      expect((await api.getTask(a.taskId)).status.state).toBe('TASK_STATE_CANCELED');
      expect(a.startOrder, `assignment ${a.index} was granted a slot`).toBeUndefined();
      await neverStarted(gw, a.taskId);
    }
  });
});

describe('owners and idempotency', () => {
  it('the owner sees the children, another tenant sees nothing, and a re-sent message makes no second set', async () => {
    const acme = client(gw, 'acme');
    const other = client(gw, 'other');
    const message = textMessage('fanout 3 alpha beta gamma');
    const coordinator = await acme.send(message);
    // Re-sent while the first turn is still delegating, and again once it is over.
    await waitFor(async () => ((await acme.assignments(coordinator.id)).length > 0 ? true : undefined), 30_000, 'assignments');
    expect((await acme.send(message)).id).toBe(coordinator.id);
    const done = await acme.waitForTerminal(coordinator.id);
    expect(done.status.state).toBe('TASK_STATE_COMPLETED');
    expect((await acme.send(message)).id).toBe(coordinator.id);
    // Room for anything the re-sent message might wrongly have started to show up below.
    await new Promise((r) => setTimeout(r, 500));

    const list = await acme.assignments(coordinator.id);
    expect(list.map((a) => [a.kind, a.index, a.state])).toEqual([
      ['work', 0, 'completed'],
      ['work', 1, 'completed'],
      ['work', 2, 'completed'],
      ['review', 0, 'completed'],
    ]);
    expect(artifactText(done, 'combined')).toBe('alpha beta gamma');
    const rest = await acme.restAssignments(coordinator.id);
    expect(rest.status).toBe(200);
    expect(rest.body).toEqual({ taskId: coordinator.id, assignments: list });

    const child = await acme.getTask(list[0]?.taskId as string, 10);
    expect(gatewayMetadata(child).parentTaskId).toBe(coordinator.id);
    expect(child.contextId).toBe(coordinator.contextId);
    expect(child.history?.[0]?.referenceTaskIds).toEqual([coordinator.id]);

    const listed = (await acme.raw('ListTasks', { contextId: coordinator.contextId, pageSize: 100 })).body.result as { tasks: Task[] };
    expect(new Set(listed.tasks.map((t) => t.id))).toEqual(new Set([coordinator.id, ...list.map((a) => a.taskId)]));
    // Exactly one coordinator and one set of children exist under this gateway's prefix.
    const coordinators = listed.tasks.filter((t) => gatewayMetadata(t).parentTaskId === undefined);
    expect(coordinators.map((t) => t.id)).toEqual([coordinator.id]);
    let children = 0;
    // Every master's keys on a Cluster (SCAN walks one node's).
    for await (const keys of scanKeys(gw.redis, `${gw.prefix}:{*}:task`, 1000)) {
      for (const key of keys) if ((await gw.redis.hget(key, 'parentTaskId')) === coordinator.id) children += 1;
    }
    expect(children).toBe(4);

    for (const [method, params] of [
      ['GetTask', { id: child.id }],
      ['ListTaskAssignments', { id: coordinator.id }],
      ['GetTask', { id: coordinator.id }],
    ] as const) {
      const { body } = await other.raw(method, params);
      expect((body.error as { code: number } | undefined)?.code, `${method} from another tenant`).toBe(-32001);
    }
    expect((await other.restAssignments(coordinator.id)).status).toBe(404);
    const foreign = (await other.raw('ListTasks', { contextId: coordinator.contextId })).body.result as { tasks: Task[] };
    expect(foreign.tasks).toEqual([]);
  });
});
