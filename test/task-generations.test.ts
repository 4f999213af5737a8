// Task generations (the task-generations extension, issue 30): two gateways on one Redis prefix
// (A with the worker, B without). Every change of a task grows its generation, read the same on
// both gateways; GetTask on B waits for a change made through A and answers at its bound when
// none comes; a SendMessage or CancelTask naming a stale generation is refused with ABORTED
// (JSON-RPC -31409, HTTP 409) and changes nothing.
import { CancelTaskRequest, GetTaskRequest, SendMessageRequest, TaskState, type Task } from '@a2a-js/sdk';
import { status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import { ClientFactory, JsonRpcTransportFactory, ServiceParameters, withA2AExtensions, type Client } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  GENERATION_AFTER_HEADER,
  GENERATION_MATCH_HEADER,
  GENERATION_WAIT_HEADER,
  TASK_GENERATIONS_URI,
} from '../src/extensions/task-generations.ts';
import { taskField } from '../src/store/task-hash.ts';
import { detailsOf, metadataOf, rawGrpc } from './support/grpc.ts';
import { expectUnchanged, rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';

let a: TestGateway;
let b: TestGateway;
let clientA: Client;
let clientB: Client;

const EXT = { 'A2A-Extensions': TASK_GENERATIONS_URI };

beforeAll(async () => {
  // A cuts every wait for a generation to 1.5 s (taskGenerationMaxWaitMs); B keeps the default.
  a = await startTestGateway({ name: 'gen-a', config: { taskGenerationMaxWaitMs: 1_500 } });
  b = await startTestGateway({ name: 'gen-b', inProcessWorker: false, config: { keyPrefix: a.prefix, grpcPort: 0 } });
  clientA = await new ClientFactory({ transports: [new JsonRpcTransportFactory()] }).createFromUrl(a.url);
  clientB = await new ClientFactory({ transports: [new JsonRpcTransportFactory()] }).createFromUrl(b.url);
}, 60_000);

afterAll(async () => {
  await b?.close();
  await a?.close();
});

/** Service parameters (headers) that activate the extension, plus any given. */
const withGenerations = (headers: Record<string, string> = {}): ServiceParameters =>
  ServiceParameters.create(withA2AExtensions(TASK_GENERATIONS_URI), (parameters) => Object.assign(parameters, headers));

const generationOf = (task: { metadata?: Record<string, unknown> | undefined } | undefined): number | undefined =>
  (task?.metadata?.[TASK_GENERATIONS_URI] as { generation?: number } | undefined)?.generation;

async function send(client: Client, text: string, taskId?: string, contextId?: string): Promise<Task> {
  const message = { messageId: `gen-${Math.random().toString(36).slice(2)}`, role: 'ROLE_USER', parts: [{ text }], ...(taskId ? { taskId, contextId } : {}) };
  const result = await client.sendMessage(SendMessageRequest.fromJSON({ message }), { serviceParameters: withGenerations() });
  expect('status' in result, JSON.stringify(result)).toBe(true);
  return result as Task;
}

const getTask = (client: Client, id: string, headers: Record<string, string> = {}): Promise<Task> =>
  client.getTask({ id, tenant: '' }, { serviceParameters: withGenerations(headers) });

/** A task waiting for input (the demo's dialogue), created through gateway A. */
async function waitingTask(): Promise<{ task: Task; generation: number }> {
  const task = await send(clientA, 'dialogue');
  expect(task.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
  const generation = generationOf(task);
  expect(generation).toBeGreaterThan(0);
  return { task, generation: generation as number };
}

describe('task generations across two gateways', () => {
  it('the card declares the extension', async () => {
    const card = (await (await fetch(`${b.url}/.well-known/agent-card.json`)).json()) as { capabilities: { extensions?: { uri: string }[] } };
    expect(card.capabilities.extensions?.map((extension) => extension.uri)).toContain(TASK_GENERATIONS_URI);
  });

  it('grows with each change, reads the same on both gateways, and never repeats (official client)', async () => {
    const { task, generation } = await waitingTask();
    expect(generationOf(await getTask(clientB, task.id))).toBe(generation);
    const answered = await send(clientB, 'Ada', task.id, task.contextId);
    expect(answered.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const after = generationOf(answered) as number;
    // Taken, submitted, working, the artifact, completed: each a change.
    expect(after).toBeGreaterThan(generation + 2);
    expect(generationOf(await getTask(clientA, task.id))).toBe(after);
    const listed = await rpc(b.jsonRpcUrl, 'ListTasks', { contextId: task.contextId }, EXT);
    expect(generationOf((listed.body.result as { tasks: Task[] }).tasks[0])).toBe(after);
    // The stored metadata is untouched: the generation is shown, not kept there.
    expect(await a.redis.hget(a.gateway.store.keys.task(task.id).task, taskField.metadata)).not.toContain(TASK_GENERATIONS_URI);
    expect(Number(await a.redis.hget(a.gateway.store.keys.task(task.id).task, taskField.generation))).toBe(after);
  });

  it('shows nothing to a request that does not activate the extension', async () => {
    const { task } = await waitingTask();
    const plain = await rpc(b.jsonRpcUrl, 'GetTask', { id: task.id });
    expect(JSON.stringify(plain.body.result)).not.toContain(TASK_GENERATIONS_URI);
  });

  it('never goes back while a task streams its output', async () => {
    const task = await send(clientA, 'stream one two three four five six seven eight');
    const seen: number[] = [generationOf(task) as number];
    await waitFor(async () => {
      const read = await getTask(clientB, task.id);
      seen.push(generationOf(read) as number);
      return read.status?.state === TaskState.TASK_STATE_COMPLETED ? true : undefined;
    }, 20_000, 'the stream to complete');
    for (let i = 1; i < seen.length; i++) expect(seen[i]).toBeGreaterThanOrEqual(seen[i - 1] as number);
  });

  it('GetTask on B waits until a change made through A passes the named generation', async () => {
    const { task, generation } = await waitingTask();
    const started = Date.now();
    const waiting = getTask(clientB, task.id, { [GENERATION_AFTER_HEADER]: String(generation), [GENERATION_WAIT_HEADER]: '25000' });
    // Nothing changed yet: the wait is still open a moment later.
    let settled = false;
    void waiting.then(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(settled).toBe(false);
    await send(clientA, 'Grace', task.id, task.contextId);
    const read = await waiting;
    expect(generationOf(read)).toBeGreaterThan(generation);
    // It answered because of the change, well before its bound.
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it('GetTask answers at its bound, with the task as it is, when nothing changes', async () => {
    const { task, generation } = await waitingTask();
    const started = Date.now();
    const read = await getTask(clientB, task.id, { [GENERATION_AFTER_HEADER]: String(generation), [GENERATION_WAIT_HEADER]: '600' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(550);
    expect(generationOf(read)).toBe(generation);
    expect(read.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
  });

  it("a wait longer than the gateway's taskGenerationMaxWaitMs is cut to it", async () => {
    const { task, generation } = await waitingTask();
    const started = Date.now();
    const read = await getTask(clientA, task.id, { [GENERATION_AFTER_HEADER]: String(generation), [GENERATION_WAIT_HEADER]: '60000' });
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(1_400);
    expect(took).toBeLessThan(30_000);
    expect(generationOf(read)).toBe(generation);
  });

  it('GetTask past an older generation answers at once; a malformed header is INVALID_PARAMS', async () => {
    const { task, generation } = await waitingTask();
    const read = await rpc(b.jsonRpcUrl, 'GetTask', { id: task.id }, { ...EXT, [GENERATION_AFTER_HEADER]: String(generation - 1), [GENERATION_WAIT_HEADER]: '25000' });
    expect(generationOf(read.body.result as Task)).toBe(generation);
    const bad = await rpc(b.jsonRpcUrl, 'GetTask', { id: task.id }, { ...EXT, [GENERATION_AFTER_HEADER]: 'soon' });
    expect((bad.body.error as { code: number }).code).toBe(-32602);
  });

  it('a SendMessage naming a stale generation is refused (JSON-RPC -31409, REST 409) and changes nothing', async () => {
    const { task, generation } = await waitingTask();
    const message = textMessage('Linus', { taskId: task.id, contextId: task.contextId });
    const refused = await expectUnchanged(a, () =>
      rpc(b.jsonRpcUrl, 'SendMessage', { message, metadata: { [TASK_GENERATIONS_URI]: { expectedGeneration: generation - 1 } } }, EXT),
    );
    const error = refused.body.error as { code: number; message: string; data: { metadata?: Record<string, string> }[] };
    expect(error.code).toBe(-31409);
    expect(error.message).toContain(`generation ${generation}`);
    expect(error.data.find((detail) => detail.metadata !== undefined)?.metadata).toMatchObject({ currentGeneration: String(generation), reason: 'TASK_GENERATION_MISMATCH' });

    const rest = await expectUnchanged(a, () =>
      fetch(`${b.restUrl}/message:send`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', ...EXT, [GENERATION_MATCH_HEADER]: String(generation + 5) },
        body: JSON.stringify({ message }),
      }),
    );
    expect(rest.status).toBe(409);
    expect(((await rest.json()) as { error: { status: string } }).error.status).toBe('ABORTED');

    // SendStreamingMessage too: refused before its stream starts.
    const streamed = await expectUnchanged(a, () =>
      fetch(`${b.restUrl}/message:stream`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Accept: 'text/event-stream', ...EXT, [GENERATION_MATCH_HEADER]: String(generation - 1) },
        body: JSON.stringify({ message }),
      }),
    );
    expect(streamed.status).toBe(409);

    // The right generation is taken.
    const taken = await rpc(b.jsonRpcUrl, 'SendMessage', { message, metadata: { [TASK_GENERATIONS_URI]: { expectedGeneration: generation } } }, EXT);
    expect(generationOf((taken.body.result as { task: Task }).task)).toBeGreaterThan(generation);
  });

  it('of two senders expecting the same generation, one is taken and the other refused', async () => {
    const { task, generation } = await waitingTask();
    const sendAt = (gateway: TestGateway, text: string) =>
      rpc(gateway.jsonRpcUrl, 'SendMessage', { message: textMessage(text, { taskId: task.id, contextId: task.contextId }), configuration: { returnImmediately: true } }, {
        ...EXT,
        [GENERATION_MATCH_HEADER]: String(generation),
      });
    const answers = await Promise.all([sendAt(a, 'first'), sendAt(b, 'second')]);
    const codes = answers.map((answer) => (answer.body.error as { code?: number } | undefined)?.code ?? 'ok').sort();
    expect(codes).toEqual([-31409, 'ok'].sort());
  });

  it('a CancelTask naming a stale generation is refused and changes nothing; the current one cancels', async () => {
    const { task, generation } = await waitingTask();
    const cancelAt = (expected: number) =>
      fetch(`${b.restUrl}/tasks/${task.id}:cancel`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', ...EXT },
        body: JSON.stringify({ id: task.id, metadata: { [TASK_GENERATIONS_URI]: { expectedGeneration: expected } } }),
      });
    const stale = await expectUnchanged(a, () => cancelAt(generation - 1));
    expect(stale.status).toBe(409);
    const body = (await stale.json()) as { error: { status: string; message: string } };
    expect(body.error.status).toBe('ABORTED');
    const canceled = await cancelAt(generation);
    expect(canceled.status).toBe(200);
    const read = (await canceled.json()) as { status: { state: string }; metadata?: Record<string, unknown> };
    expect(read.status.state).toBe('TASK_STATE_CANCELED');
    expect(generationOf(read)).toBeGreaterThan(generation);
  });

  it('over gRPC: the parameters travel as metadata; a stale generation is ABORTED, the current one waits and cancels', async () => {
    const { task, generation } = await waitingTask();
    const grpc = rawGrpc(b.gateway.grpc?.address as string);
    try {
      const withExtension = (more: Record<string, string> = {}) => metadataOf({ 'a2a-version': '1.0', 'a2a-extensions': TASK_GENERATIONS_URI, ...more });
      const bound = await grpc.unary<Task>('getTask', GetTaskRequest.fromJSON({ id: task.id }), withExtension({ [GENERATION_AFTER_HEADER.toLowerCase()]: String(generation), [GENERATION_WAIT_HEADER.toLowerCase()]: '300' }));
      expect(bound.error).toBeUndefined();
      expect(generationOf(bound.response)).toBe(generation);
      const stale = await expectUnchanged(a, () =>
        grpc.unary<Task>('cancelTask', CancelTaskRequest.fromJSON({ id: task.id }), withExtension({ [GENERATION_MATCH_HEADER.toLowerCase()]: String(generation - 1) })),
      );
      expect(stale.error?.code).toBe(GrpcStatus.ABORTED);
      expect(detailsOf(stale.error as ServiceError).errorInfo?.metadata).toMatchObject({ currentGeneration: String(generation), reason: 'TASK_GENERATION_MISMATCH' });
      const canceled = await grpc.unary<Task>('cancelTask', CancelTaskRequest.fromJSON({ id: task.id }), withExtension({ [GENERATION_MATCH_HEADER.toLowerCase()]: String(generation) }));
      expect(canceled.error).toBeUndefined();
      expect(canceled.response?.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
      expect(generationOf(canceled.response)).toBeGreaterThan(generation);
    } finally {
      grpc.close();
    }
  });
});
