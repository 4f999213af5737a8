// Durability of remote turns: real worker processes running the a2a adapter are SIGKILLed and
// shut down mid-turn, the downstream agent is killed and restarted, and a downstream that never
// answers meets the turn deadline. Every promise the gateway makes for its own turns (lease,
// fencing, replay, staged cancel, step journal) holds for a turn whose work happens elsewhere.
import { createServer, type Server, type Socket } from 'node:net';
import { GetTaskRequest, SendMessageRequest, Task as SdkTask } from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agents } from '../src/agents/agents.ts';
import { createLogger } from '../src/logging/logger.ts';
import { startWorkerRole } from '../src/runtime/worker-role.ts';
import type { DownstreamState } from '../adapters/remote-a2a/downstream-state.ts';
import { downstreamMessageId } from '../adapters/remote-a2a/message-id.ts';
import type { StreamResponse, Task, TaskState } from '../src/protocol/types.ts';
import type { StepRecord, TurnRecord } from '../src/store/task-store.ts';
import { spawnDownstreamAgent, type DownstreamAgentProcess } from './support/downstream-agent.ts';
import { keepWorkersRunning, ROOT, rpc, startTestGateway, stopWorkerProcesses, textMessage, waitFor, type TestGateway, type WorkerProcess } from './support/harness.ts';
import { openSse, type SseEvent } from './support/sse.ts';

const FAST = { retryInitialDelayMs: 100, retryMaxDelayMs: 500, pollInitialDelayMs: 100, pollMaxDelayMs: 400 };
const TERMINAL: ReadonlySet<TaskState> = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED']);
const STREAM_HEADERS = { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Accept: 'text/event-stream' };

let downstream: DownstreamAgentProcess;
let gw: TestGateway;
const workers: WorkerProcess[] = [];

function workerEnv(): Record<string, string> {
  return {
    A2A_ADAPTER: 'a2a',
    A2A_ADAPTER_OPTIONS: JSON.stringify({ url: downstream.url, ...FAST }),
    A2A_SHUTDOWN_GRACE_MS: '100',
  };
}

beforeAll(async () => {
  downstream = await spawnDownstreamAgent();
  gw = await startTestGateway({ name: 'remote-recovery', inProcessWorker: false, config: { adapter: 'a2a', adapterOptions: { url: downstream.url, ...FAST } } });
  await keepWorkersRunning(workers, gw.prefix, workerEnv());
}, 180_000);

afterAll(async () => {
  // A replacement still starting (its test failed first) is listed once ready, then stopped here.
  await pendingReplacement.catch(() => undefined);
  await stopWorkerProcesses(workers);
  await gw?.close();
  await downstream?.close();
}, 60_000);

let pendingReplacement: Promise<void> = Promise.resolve();
/**
 * Keeps two live workers: replaces the ones a test killed. Tests start it as soon as their victim
 * has exited, so the replacement starts while the turn recovers instead of after the test.
 */
const replenish = (): Promise<void> => (pendingReplacement = keepWorkersRunning(workers, gw.prefix, workerEnv()));

async function getTask(taskId: string, on: TestGateway = gw): Promise<Task> {
  const { body } = await rpc(on.jsonRpcUrl, 'GetTask', { id: taskId });
  expect(body.error).toBeUndefined();
  return body.result as Task;
}

/** The task once it is terminal, read from `on` (the suite's gateway by default). */
async function finalTask(taskId: string, options: { on?: TestGateway; timeoutMs?: number; what?: string } = {}): Promise<Task> {
  return waitFor(
    async () => {
      const task = await getTask(taskId, options.on);
      return TERMINAL.has(task.status.state) ? task : undefined;
    },
    options.timeoutMs ?? 90_000,
    options.what ?? `task ${taskId} to end`,
  );
}

/** What a send lost with its worker did first: the downstream at `url` took `messageId` ("slow 1500") and made a task. */
async function deliveredDownstream(url: string, messageId: string): Promise<SdkTask> {
  const direct = await new ClientFactory().createFromUrl(url);
  return (await direct.sendMessage(
    SendMessageRequest.fromJSON({ message: { messageId, role: 'ROLE_USER', parts: [{ text: 'slow 1500' }] }, configuration: { returnImmediately: true } }),
  )) as SdkTask;
}

/** The "slow 1500" turn ended as the downstream finished it. */
function expectSlowCompleted(final: Task): void {
  expect(final.status.state).toBe('TASK_STATE_COMPLETED');
  expect((final.artifacts ?? []).find((a) => a.artifactId === 'slow')?.parts[0]?.text).toBe('done after 1500 ms');
}

async function downstreamOf(taskId: string): Promise<DownstreamState | undefined> {
  const raw = await gw.redis.hget(`${gw.prefix}:{${taskId}}:task`, 'adapter:downstream');
  return raw === null ? undefined : (JSON.parse(raw) as DownstreamState);
}

async function stepsOf(taskId: string): Promise<Record<string, StepRecord>> {
  const raw = await gw.redis.hgetall(`${gw.prefix}:{${taskId}}:steps`);
  return Object.fromEntries(Object.entries(raw).map(([field, json]) => [field, JSON.parse(json) as StepRecord]));
}

async function turnRecord(taskId: string, turn = 1): Promise<TurnRecord> {
  return JSON.parse((await gw.redis.hget(`${gw.prefix}:{${taskId}}:turns`, String(turn))) ?? '{}') as TurnRecord;
}

/** The worker process holding the task's lease. */
async function holderOf(taskId: string): Promise<WorkerProcess> {
  const holder = await waitFor(async () => (await gw.redis.get(`${gw.prefix}:{${taskId}}:lease`)) ?? undefined, 60_000, 'a worker to take the lease');
  const pid = Number(/:(\d+):[^:]+$/.exec(holder)?.[1]);
  const worker = workers.find((w) => w.pid === pid);
  expect(worker, `lease holder ${holder} is one of our worker processes`).toBeDefined();
  return worker as WorkerProcess;
}

async function startTask(text: string): Promise<string> {
  const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage(text), configuration: { returnImmediately: true } });
  expect(body.error).toBeUndefined();
  return (body.result as { task: Task }).task.id;
}

const resultOf = (event: SseEvent): StreamResponse => {
  const parsed = JSON.parse(event.data) as { result?: StreamResponse; error?: unknown };
  expect(parsed.error, event.data).toBeUndefined();
  return parsed.result as StreamResponse;
};

function compareIds(a: string, b: string): number {
  const [am, as] = a.split('-').map(Number) as [number, number];
  const [bm, bs] = b.split('-').map(Number) as [number, number];
  return am !== bm ? am - bm : as - bs;
}

/** The artifact text a client builds by applying the chunks in order. */
function assembled(events: StreamResponse[], artifactId: string): string {
  let parts: string[] = [];
  for (const event of events) {
    if (!('artifactUpdate' in event) || event.artifactUpdate.artifact.artifactId !== artifactId) continue;
    const texts = event.artifactUpdate.artifact.parts.map((p) => p.text ?? '');
    parts = event.artifactUpdate.append === true ? [...parts, ...texts] : texts;
  }
  return parts.join('');
}

describe('a worker SIGKILLed while a remote turn streams', () => {
  it('the turn completes on another worker, the downstream got the message once, and replay has no gap or duplicate', async () => {
    const chunks = 40;
    const message = textMessage(`stream ${chunks} 150`);
    const stream = await openSse(gw.jsonRpcUrl, {
      method: 'POST',
      headers: STREAM_HEADERS,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendStreamingMessage', params: { message } }),
    });
    expect(stream.response.status).toBe(200);
    const first = resultOf((await stream.reader.waitForEvents(1, 30_000))[0] as SseEvent);
    const taskId = 'task' in first ? first.task.id : '';
    expect(taskId).not.toBe('');

    const victim = await holderOf(taskId);
    // Mid-stream: some chunks relayed, most still to come.
    await waitFor(() => (stream.reader.events.filter((e) => 'artifactUpdate' in resultOf(e)).length >= 5 ? true : undefined), 60_000, 'five relayed chunks');
    const seenBeforeKill = stream.reader.events.length;
    victim.kill('SIGKILL');
    expect(await victim.exited).toBe('SIGKILL');
    const replacing = replenish();

    await withTimeout(stream.reader.done, 120_000, 'the live stream to end after the turn completed elsewhere');
    const final = await finalTask(taskId);
    expect(final.status.state).toBe('TASK_STATE_COMPLETED');
    const expected = Array.from({ length: chunks }, (_, i) => `w${i + 1} `).join('');
    expect((final.artifacts ?? []).find((a) => a.artifactId === 'stream')?.parts.map((p) => p.text).join('')).toBe(expected);

    // Another worker ran attempt 2 and re-attached: the send step is the first attempt's.
    const record = await turnRecord(taskId);
    expect(record.attempts).toBe(2);
    expect(record.workerId).not.toContain(`:${victim.pid}:`);
    const send = (await stepsOf(taskId))['1:send'];
    expect(send?.state).toBe('done');
    expect(send?.attempt).toBe(1);
    expect(send?.reference).toBe((await downstreamOf(taskId))?.taskId);
    // The downstream received the message exactly once.
    const stats = await downstream.stats();
    expect(stats.messages[downstreamMessageId(send?.idempotencyKey ?? '')]).toBe(1);

    // The live stream: strictly increasing ids, the chunks assembled exactly once, and equal to the replay buffer.
    const liveEvents = stream.reader.events;
    expect(liveEvents.length).toBeGreaterThan(seenBeforeKill);
    const ids = liveEvents.map((e) => e.id as string);
    for (let i = 1; i < ids.length; i++) expect(compareIds(ids[i - 1] as string, ids[i] as string)).toBeLessThan(0);
    expect(assembled(liveEvents.map(resultOf), 'stream')).toBe(expected);
    const buffer = await gw.redis.xrange(`${gw.prefix}:{${taskId}}:events`, '-', '+');
    const afterFirst = buffer.map(([id]) => id).filter((id) => compareIds(id, ids[0] as string) > 0);
    expect(ids.slice(1)).toEqual(afterFirst);

    // A client that saw events up to just before the kill resumes with Last-Event-ID: exactly the rest.
    const resumeFrom = liveEvents[seenBeforeKill - 2] as SseEvent;
    const resumed = await openSse(gw.jsonRpcUrl, {
      method: 'POST',
      headers: { ...STREAM_HEADERS, 'Last-Event-ID': resumeFrom.id as string },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SubscribeToTask', params: { id: taskId } }),
    });
    await withTimeout(resumed.reader.done, 30_000, 'the replay to close after the terminal event');
    const tail = liveEvents.slice(seenBeforeKill - 1);
    expect(resumed.reader.events.map((e) => e.id)).toEqual(tail.map((e) => e.id));
    expect(resumed.reader.events.map(resultOf)).toEqual(tail.map(resultOf));
    await replacing;
  }, 240_000);

  it('killed before the downstream task id was known: the next worker finds the message downstream or sends it again, never under a new id', async () => {
    // The downstream counts the message, then keeps the caller waiting 4 s before naming its task.
    const taskId = await startTask('late 4000 stream 3 50');
    const messageId = downstreamMessageId(`${taskId}:1:send`);
    const victim = await holderOf(taskId);
    await waitFor(async () => ((await downstream.stats()).messages[messageId] === 1 ? true : undefined), 30_000, 'the downstream to receive the message');
    const before = (await stepsOf(taskId))['1:send'];
    expect(before?.state).toBe('started');
    expect(before?.reference).toBeUndefined();
    victim.kill('SIGKILL');
    await victim.exited;
    const replacing = replenish();

    const final = await finalTask(taskId);
    expect(final.status.state).toBe('TASK_STATE_COMPLETED');
    expect((final.artifacts ?? []).find((a) => a.artifactId === 'stream')?.parts.map((p) => p.text).join('')).toBe('w1 w2 w3 ');
    const steps = await stepsOf(taskId);
    // The lost send is unknown (never run blindly). Whether the downstream had stored its task by
    // the time the next worker looked is a race: found, the turn re-attached; not found, the
    // message went again as its own journalled step, with the same messageId.
    expect(steps['1:send']?.state).toBe('unknown');
    expect(steps['1:locate-2']?.state).toBe('done');
    const resent = steps['1:send-2'] !== undefined;
    expect((await downstream.stats()).messages[messageId]).toBe(resent ? 2 : 1);
    expect(resent ? steps['1:send-2']?.reference : (steps['1:locate-2']?.value as { taskId?: string } | undefined)?.taskId).toBe((await downstreamOf(taskId))?.taskId);
    await replacing;
  }, 240_000);
});

describe('a send step left unknown without a reference (its worker died before the downstream answered)', () => {
  /** A gateway with no worker yet, a task of it, and its send step journalled as started without a reference. */
  async function lostSend(name: string, text: string, url = downstream.url): Promise<{ idle: TestGateway; taskId: string; messageId: string }> {
    const idle = await startTestGateway({ name, inProcessWorker: false, config: { adapter: 'a2a', adapterOptions: { url, ...FAST } } });
    const { body } = await rpc(idle.jsonRpcUrl, 'SendMessage', { message: textMessage(text), configuration: { returnImmediately: true } });
    const taskId = (body.result as { task: Task }).task.id;
    const started: StepRecord = { name: 'send', turn: 1, idempotencyKey: `${taskId}:1:send`, state: 'started', attempt: 1, startedAtMs: Date.now() };
    await idle.redis.hset(`${idle.prefix}:{${taskId}}:steps`, '1:send', JSON.stringify(started));
    return { idle, taskId, messageId: downstreamMessageId(`${taskId}:1:send`) };
  }

  async function runToEnd(idle: TestGateway, taskId: string): Promise<Task> {
    const worker = await startWorkerRole(idle.config, await Agents.load(idle.config, ROOT), createLogger('silent'));
    try {
      return await finalTask(taskId, { on: idle, timeoutMs: 30_000, what: 'the recovered turn to end' });
    } finally {
      await worker.close();
    }
  }

  it('that reached the downstream: found there by its messageId and re-attached, not sent again', async () => {
    const { idle, taskId, messageId } = await lostSend('remote-lost-arrived', 'slow 1500');
    try {
      // What the lost send did before its worker died: the downstream got it and made a task.
      const arrived = await deliveredDownstream(downstream.url, messageId);
      const final = await runToEnd(idle, taskId);
      expectSlowCompleted(final);
      const steps = await idle.redis.hgetall(`${idle.prefix}:{${taskId}}:steps`);
      expect(Object.keys(steps).sort()).toEqual(['1:locate-2', '1:send']);
      expect((JSON.parse(steps['1:locate-2'] ?? '{}') as StepRecord).value).toMatchObject({ kind: 'task', taskId: arrived.id });
      expect((await downstream.stats()).messages[messageId]).toBe(1);
    } finally {
      await idle.close();
    }
  }, 60_000);

  it('whose look downstream was lost too (its worker died mid-look): looked for again and re-attached, not sent again', async () => {
    const { idle, taskId, messageId } = await lostSend('remote-lost-look', 'slow 1500');
    try {
      const arrived = await deliveredDownstream(downstream.url, messageId);
      // What a second worker leaves when it dies while looking: the send surfaced as unknown, the look started without a result.
      const steps = `${idle.prefix}:{${taskId}}:steps`;
      const send = JSON.parse((await idle.redis.hget(steps, '1:send')) ?? '{}') as StepRecord;
      const looking: StepRecord = { name: 'locate-2', turn: 1, idempotencyKey: `${taskId}:1:locate-2`, state: 'started', attempt: 2, startedAtMs: Date.now() };
      await idle.redis.hset(steps, '1:send', JSON.stringify({ ...send, state: 'unknown', surfacedToAttempt: 2 }), '1:locate-2', JSON.stringify(looking));

      const final = await runToEnd(idle, taskId);
      expectSlowCompleted(final);
      const journal = await idle.redis.hgetall(steps);
      expect(Object.keys(journal).sort()).toEqual(['1:locate-2', '1:locate-2-2', '1:send']);
      expect((JSON.parse(journal['1:locate-2'] ?? '{}') as StepRecord).state).toBe('unknown');
      expect((JSON.parse(journal['1:locate-2-2'] ?? '{}') as StepRecord).value).toMatchObject({ kind: 'task', taskId: arrived.id });
      expect((await downstream.stats()).messages[messageId]).toBe(1);
    } finally {
      await idle.close();
    }
  }, 60_000);

  it('that reached the downstream, which cannot be reached when the next worker looks: the look waits for it, the message is not sent again', async () => {
    // A downstream of its own: this one is killed and restarted (the suite's counts its starts).
    const away = await spawnDownstreamAgent();
    const { idle, taskId, messageId } = await lostSend('remote-lost-unreachable', 'slow 1500', away.url);
    try {
      const arrived = await deliveredDownstream(away.url, messageId);
      // Killed once it has stored the task as working (a restarted agent finishes only those).
      const direct = await new ClientFactory().createFromUrl(away.url);
      await waitFor(async () => ((SdkTask.toJSON(await direct.getTask(GetTaskRequest.fromJSON({ id: arrived.id }))) as Task).status.state === 'TASK_STATE_WORKING' ? true : undefined), 10_000, 'the downstream task to be working');
      await away.kill();
      const worker = await startWorkerRole(idle.config, await Agents.load(idle.config, ROOT), createLogger('silent'));
      try {
        // The worker looks (and keeps failing to reach the downstream) before it is back.
        await waitFor(async () => ((await idle.redis.hget(`${idle.prefix}:{${taskId}}:steps`, '1:locate-2')) === null ? undefined : true), 30_000, 'the look to start');
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        await away.restart();
        const final = await finalTask(taskId, { on: idle, timeoutMs: 30_000, what: 'the recovered turn to end' });
        expect(final.status.state).toBe('TASK_STATE_COMPLETED');
        const journal = await idle.redis.hgetall(`${idle.prefix}:{${taskId}}:steps`);
        expect(Object.keys(journal).sort()).toEqual(['1:locate-2', '1:send']);
        expect((JSON.parse(journal['1:locate-2'] ?? '{}') as StepRecord).value).toMatchObject({ kind: 'task', taskId: arrived.id });
        expect((await away.stats()).messages[messageId]).toBe(1);
      } finally {
        await worker.close();
      }
    } finally {
      await idle.close();
      await away.close();
    }
  }, 90_000);

  it('that never arrived: sent again, once, with the same messageId', async () => {
    const { idle, taskId, messageId } = await lostSend('remote-lost-never', 'echo sent once');
    try {
      const final = await runToEnd(idle, taskId);
      expect(final.status.state).toBe('TASK_STATE_COMPLETED');
      const steps = await idle.redis.hgetall(`${idle.prefix}:{${taskId}}:steps`);
      expect(Object.keys(steps).sort()).toEqual(['1:locate-2', '1:send', '1:send-2']);
      expect((JSON.parse(steps['1:locate-2'] ?? '{}') as StepRecord).value).toBeNull();
      expect((await downstream.stats()).messages[messageId]).toBe(1);
    } finally {
      await idle.close();
    }
  }, 60_000);
});

describe('a worker shut down while a remote turn runs', () => {
  it('hands the turn back without canceling the downstream task, and another worker re-attaches to it', async () => {
    const taskId = await startTask('slow 5000');
    const holder = await holderOf(taskId);
    const downstreamTaskId = await waitFor(async () => (await stepsOf(taskId))['1:send']?.reference, 30_000, 'the downstream task id in the step journal');
    holder.kill('SIGTERM');
    await holder.exited;
    const replacing = replenish();
    const final = await finalTask(taskId);
    expect(final.status.state).toBe('TASK_STATE_COMPLETED');
    expect((final.artifacts ?? []).find((a) => a.artifactId === 'slow')?.parts[0]?.text).toBe('done after 5000 ms');
    const record = await turnRecord(taskId);
    expect(record.handBacks).toBe(1);
    const stats = await downstream.stats();
    expect(stats.cancels).not.toContain(downstreamTaskId);
    expect(stats.messages[downstreamMessageId(`${taskId}:1:send`)]).toBe(1);
    await replacing;
  }, 240_000);
});

describe('a send step left unknown with its reference journalled', () => {
  it('is reconciled by re-attaching to the referenced downstream task, never by sending again', async () => {
    // The state a worker leaves when it dies between journalling the reference and the step's result.
    const idle = await startTestGateway({ name: 'remote-unknown', inProcessWorker: false, config: { adapter: 'a2a', adapterOptions: { url: downstream.url, ...FAST } } });
    try {
      const existing = SdkTask.toJSON(await deliveredDownstream(downstream.url, `pre-${Date.now()}`)) as Task;
      const { body } = await rpc(idle.jsonRpcUrl, 'SendMessage', { message: textMessage('echo this must not be sent'), configuration: { returnImmediately: true } });
      const taskId = (body.result as { task: Task }).task.id;
      const started: StepRecord = { name: 'send', turn: 1, idempotencyKey: `${taskId}:1:send`, state: 'started', attempt: 1, startedAtMs: Date.now(), reference: existing.id };
      await idle.redis.hset(`${idle.prefix}:{${taskId}}:steps`, '1:send', JSON.stringify(started));

      const worker = await startWorkerRole(idle.config, await Agents.load(idle.config, ROOT), createLogger('silent'));
      try {
        const final = await finalTask(taskId, { on: idle, timeoutMs: 30_000, what: 'the re-attached turn to end' });
        expectSlowCompleted(final);
        const steps = await idle.redis.hgetall(`${idle.prefix}:{${taskId}}:steps`);
        expect(Object.keys(steps)).toEqual(['1:send']);
        expect((JSON.parse(steps['1:send'] ?? '{}') as StepRecord).state).toBe('unknown');
        expect((await downstream.stats()).messages[downstreamMessageId(`${taskId}:1:send`)]).toBeUndefined();
      } finally {
        await worker.close();
      }
    } finally {
      await idle.close();
    }
  }, 60_000);
});

describe('the downstream agent restarts mid-task', () => {
  it('the turn rides it out with backoff and completes from the restarted agent', async () => {
    const taskId = await startTask('slow 3000');
    const downstreamTaskId = await waitFor(async () => (await stepsOf(taskId))['1:send']?.reference, 30_000, 'the downstream task id in the step journal');
    await downstream.kill();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect((await getTask(taskId)).status.state).toBe('TASK_STATE_WORKING');
    await downstream.restart();
    const final = await finalTask(taskId);
    expect(final.status.state).toBe('TASK_STATE_COMPLETED');
    // Finished by the restarted agent (its store kept the task), not sent again.
    expect((final.artifacts ?? []).find((a) => a.artifactId === 'slow')?.parts[0]?.text).toBe('done after a restart');
    const stats = await downstream.stats();
    expect(stats.starts).toBe(2);
    expect(stats.messages[downstreamMessageId(`${taskId}:1:send`)]).toBe(1);
    expect((await downstreamOf(taskId))?.taskId).toBe(downstreamTaskId);
    // Watchers were told the downstream was away.
    const events = await gw.redis.xrange(`${gw.prefix}:{${taskId}}:events`, '-', '+');
    expect(events.some(([, fields]) => (fields[1] ?? '').includes('not reachable right now'))).toBe(true);
  }, 240_000);
});

describe('deadlines', () => {
  let blackHole: Server;
  let connections = 0;
  const sockets = new Set<Socket>();
  let deadlineGw: TestGateway;

  beforeAll(async () => {
    // Accepts every connection and drops it at once: a downstream that is there but never answers.
    blackHole = createServer((socket) => {
      connections += 1;
      sockets.add(socket);
      socket.destroy();
    });
    await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
  });

  afterAll(async () => {
    await deadlineGw?.close();
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => blackHole.close(() => resolve()));
  });

  it('an unreachable downstream is retried with backoff until the turn deadline, which fails the turn', async () => {
    const address = blackHole.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    deadlineGw = await startTestGateway({ name: 'remote-deadline', config: { adapter: 'a2a', turnDeadlineMs: 3_000, adapterOptions: { url: `http://127.0.0.1:${port}`, ...FAST } } });
    const { body } = await rpc(deadlineGw.jsonRpcUrl, 'SendMessage', { message: textMessage('echo anyone?'), configuration: { returnImmediately: true } });
    const taskId = (body.result as { task: Task }).task.id;
    const final = await finalTask(taskId, { on: deadlineGw, timeoutMs: 30_000, what: 'the deadline' });
    expect(final.status.state).toBe('TASK_STATE_FAILED');
    expect(final.status.message?.parts[0]?.text).toContain('turnDeadlineMs');
    // Backoff, not a busy loop and not a single try.
    expect(connections).toBeGreaterThanOrEqual(3);
    expect(connections).toBeLessThan(40);
    const events = await deadlineGw.redis.xrange(`${deadlineGw.prefix}:{${taskId}}:events`, '-', '+');
    expect(events.filter(([, fields]) => (fields[1] ?? '').includes('not reachable right now'))).toHaveLength(1);
  }, 60_000);

  it('a turn that reaches its deadline cancels the downstream task', async () => {
    const shortGw = await startTestGateway({ name: 'remote-deadline-cancel', config: { adapter: 'a2a', turnDeadlineMs: 2_000, adapterOptions: { url: downstream.url, ...FAST } } });
    try {
      const { body } = await rpc(shortGw.jsonRpcUrl, 'SendMessage', { message: textMessage('slow 60000') });
      const task = (body.result as { task: Task }).task;
      expect(task.status.state).toBe('TASK_STATE_FAILED');
      const send = JSON.parse((await shortGw.redis.hget(`${shortGw.prefix}:{${task.id}}:steps`, '1:send')) ?? '{}') as StepRecord;
      expect(send.reference).toBeDefined();
      expect((await downstream.stats()).cancels).toContain(send.reference);
    } finally {
      await shortGw.close();
    }
  }, 60_000);
});

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
    }),
  ]);
}
