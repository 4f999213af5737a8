// Issue 24 item 2, end to end: an OpenAI-compatible server that streams without end, in 1 MiB
// deltas or in one 8 MiB delta, against a gateway whose worker runs the openai adapter. Before,
// every delta went into Redis (the artifact re-sent whole with each chunk) until a command grew
// past what ioredis could build and the worker process died. Now the task FAILS with a reason
// naming the bound, the task's keys hold at most about what the bounds allow, the server is asked
// once and sees the worker go, and the worker goes on to run the next task.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Task } from '../src/protocol/types.ts';
import { scanKeys } from '../src/redis/cross-slot.ts';
import { rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';
import { startHostileModelServer, type HostileModelServer } from './support/hostile-model-server.ts';
import { startFakeOpenAIServer, type FakeOpenAIServer } from './support/fake-openai-server.ts';

const MIB = 1024 * 1024;
const LIMITS = { maxArtifactBytes: 2 * MIB, maxTurnOutputBytes: 4 * MIB, maxTaskOutputBytes: 8 * MIB };

let endless: HostileModelServer;
let oversized: HostileModelServer;
let wellBehaved: FakeOpenAIServer;
let gw: TestGateway;

beforeAll(async () => {
  endless = await startHostileModelServer(MIB, Number.POSITIVE_INFINITY);
  oversized = await startHostileModelServer(8 * MIB, Number.POSITIVE_INFINITY);
  wellBehaved = await startFakeOpenAIServer();
  const agent = (baseURL: string) => ({ adapter: 'openai', adapterOptions: { baseURL, model: 'hostile', maxRetries: 3, retryBaseDelayMs: 10 } });
  gw = await startTestGateway({
    name: 'hostile-model',
    config: {
      agents: { endless: agent(endless.baseURL), oversized: agent(oversized.baseURL), fine: agent(wellBehaved.baseURL) },
      limits: { requestsPerSecond: 0, maxActiveTasks: 0, unauthenticatedPerSecond: 0, maxStreamsPerOwner: 0, maxConcurrentListsPerOwner: 0, ...LIMITS },
    },
  });
}, 120_000);

afterAll(async () => {
  await gw?.close();
  await endless?.close();
  await oversized?.close();
  await wellBehaved?.close();
}, 60_000);

async function send(agent: string, text: string): Promise<string> {
  const sent = await rpc(`${gw.url}/agents/${agent}/a2a/jsonrpc`, 'SendMessage', { message: textMessage(text), configuration: { returnImmediately: true } });
  expect(sent.body.error).toBeUndefined();
  return (sent.body.result as { task: Task }).task.id;
}

async function ended(agent: string, taskId: string): Promise<Task> {
  return waitFor(
    async () => {
      const { body } = await rpc(`${gw.url}/agents/${agent}/a2a/jsonrpc`, 'GetTask', { id: taskId });
      const task = body.result as Task | undefined;
      return task !== undefined && ['TASK_STATE_FAILED', 'TASK_STATE_COMPLETED'].includes(task.status.state) ? task : undefined;
    },
    90_000,
    `task ${taskId} to end`,
  );
}

/** Bytes Redis holds for the task's keys (MEMORY USAGE of each, exactly). */
async function taskMemory(taskId: string): Promise<number> {
  let total = 0;
  for await (const batch of scanKeys(gw.redis, `${gw.prefix}:{${taskId}}:*`, 100)) {
    for (const key of batch) total += Number(await gw.redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
  }
  return total;
}

const reasonOf = (task: Task): string => task.status.message?.parts.map((part) => ('text' in part ? part.text : '')).join(' ') ?? '';

describe('a hostile model server', () => {
  it('streaming 1 MiB deltas without end: the task fails naming limits.maxArtifactBytes, Redis holds about that much', async () => {
    const taskId = await send('endless', 'write forever');
    const task = await ended('endless', taskId);
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    expect(reasonOf(task)).toMatch(/limits\.maxArtifactBytes \(2097152 bytes for one artifact/);
    // The artifact in the task hash and the chunk events in the replay buffer, each at most the bound.
    expect(await taskMemory(taskId)).toBeLessThan(3 * LIMITS.maxArtifactBytes);
    expect(endless.requests).toBe(1);
    await expect.poll(() => endless.closedEarly, { timeout: 10_000 }).toBe(1);
  }, 120_000);

  it('streaming an 8 MiB delta: the stream is cut at backendLimits.maxEventBytes and not asked again', async () => {
    const taskId = await send('oversized', 'one huge delta');
    const task = await ended('oversized', taskId);
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    expect(reasonOf(task)).toMatch(/backendLimits\.maxEventBytes \(4 MiB\)/);
    expect(oversized.requests).toBe(1);
    expect(await taskMemory(taskId)).toBeLessThan(MIB);
  }, 120_000);

  it('leaves the worker running: the next agent’s task completes', async () => {
    const taskId = await send('fine', 'hello after the storm');
    const task = await ended('fine', taskId);
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
  }, 120_000);
});

describe('a turn whose write is past redisMaxCommandBytes', () => {
  let guarded: TestGateway;
  let stream: HostileModelServer;

  beforeAll(async () => {
    // 1.5 MiB deltas against a 1 MiB command bound, with output bounds far above it: the command
    // guard, not an output bound, is what refuses the chunk.
    stream = await startHostileModelServer(1.5 * MIB, Number.POSITIVE_INFINITY);
    guarded = await startTestGateway({
      name: 'command-bound',
      config: {
        redisMaxCommandBytes: MIB,
        agents: { model: { adapter: 'openai', adapterOptions: { baseURL: stream.baseURL, model: 'hostile', maxRetries: 3, retryBaseDelayMs: 10 } } },
        limits: { requestsPerSecond: 0, maxActiveTasks: 0, unauthenticatedPerSecond: 0, maxStreamsPerOwner: 0, maxConcurrentListsPerOwner: 0 },
      },
    });
  }, 120_000);

  afterAll(async () => {
    await guarded?.close();
    await stream?.close();
  }, 60_000);

  it('fails that turn naming redisMaxCommandBytes; the worker lives on', async () => {
    const url = `${guarded.url}/agents/model/a2a/jsonrpc`;
    const sent = await rpc(url, 'SendMessage', { message: textMessage('too big a command'), configuration: { returnImmediately: true } });
    const taskId = (sent.body.result as { task: Task }).task.id;
    const task = await waitFor(
      async () => {
        const { body } = await rpc(url, 'GetTask', { id: taskId });
        const found = body.result as Task | undefined;
        return found !== undefined && found.status.state !== 'TASK_STATE_WORKING' && found.status.state !== 'TASK_STATE_SUBMITTED' ? found : undefined;
      },
      90_000,
      'the task to end',
    );
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    expect(reasonOf(task)).toMatch(/redisMaxCommandBytes \(1048576 bytes, A2A_REDIS_MAX_COMMAND_BYTES\)/);
    expect(stream.requests).toBe(1);
    expect(guarded.worker?.runner).toBeDefined();
  }, 120_000);
});
