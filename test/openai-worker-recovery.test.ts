// A worker process running a model turn is SIGKILLed mid-reply. Another worker process runs the
// turn again (attempt 2) and the model answers differently after the same first word (as a
// sampling model does): the new attempt's first chunk replaces the partial reply, so the task
// completes with the second reply whole, never spliced onto the first; the lost attempt's tokens (never reported) are not charged, and a watcher
// that resumes with Last-Event-ID sees every stored event once, in order.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StreamResponse, Task, TaskArtifactUpdateEvent } from '../src/protocol/types.ts';
import type { TurnRecord } from '../src/store/task-store.ts';
import { startFakeOpenAIServer, type FakeOpenAIServer } from './support/fake-openai-server.ts';
import { keepWorkersRunning, rpc, startTestGateway, stopWorkerProcesses, textMessage, waitFor, type TestGateway, type WorkerProcess } from './support/harness.ts';
import { openSse, type SseReader } from './support/sse.ts';

let fake: FakeOpenAIServer;
let gw: TestGateway;
const workers: WorkerProcess[] = [];

const WORDS = 40;
/** The second try's reply: the same first word, then different ones. */
const EXPECTED = Array.from({ length: WORDS }, (_, i) => (i === 0 ? 'w1' : `w${i + 1}-t2`)).join(' ');

beforeAll(async () => {
  fake = await startFakeOpenAIServer();
  const adapterOptions = { baseURL: fake.baseURL, model: 'fake-model', systemPrompt: 'Recovery test.' };
  gw = await startTestGateway({ name: 'openai-recovery', inProcessWorker: false, config: { adapter: 'openai', adapterOptions } });
  const env = { A2A_ADAPTER: 'openai', A2A_ADAPTER_OPTIONS: JSON.stringify(adapterOptions) };
  await keepWorkersRunning(workers, gw.prefix, env);
}, 180_000);

afterAll(async () => {
  await stopWorkerProcesses(workers);
  await gw?.close();
  await fake?.close();
}, 60_000);

interface Stored {
  id: string;
  event: StreamResponse;
}

async function storedEvents(taskId: string): Promise<Stored[]> {
  const entries = await gw.redis.xrange(`${gw.prefix}:{${taskId}}:events`, '-', '+');
  return entries.map(([id, fields]) => ({ id, event: JSON.parse(fields[1] as string) as StreamResponse }));
}

async function subscribe(taskId: string, lastEventId?: string): Promise<SseReader> {
  const { response, reader } = await openSse(gw.jsonRpcUrl, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      'A2A-Version': '1.0',
      Accept: 'text/event-stream',
      ...(lastEventId === undefined ? {} : { 'Last-Event-ID': lastEventId }),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'SubscribeToTask', params: { id: taskId } }),
  });
  expect(response.status).toBe(200);
  return reader;
}

const received = (reader: SseReader): Stored[] =>
  reader.events.map((e) => {
    const envelope = JSON.parse(e.data) as { result?: StreamResponse; error?: unknown };
    expect(envelope.error).toBeUndefined();
    return { id: e.id as string, event: envelope.result as StreamResponse };
  });

const chunkOf = (event: StreamResponse): TaskArtifactUpdateEvent | undefined => ('artifactUpdate' in event ? event.artifactUpdate : undefined);
const textOfChunk = (chunk: TaskArtifactUpdateEvent): string => chunk.artifact.parts.map((p) => p.text ?? '').join('');
const pidOf = (workerId: string): number => Number(/:(\d+):[^:]+$/.exec(workerId)?.[1]);

describe('a model turn whose worker is SIGKILLed mid-reply', () => {
  it('completes on another worker with one whole reply, no double-counted usage, and a gapless resumable stream', async () => {
    const m = `#${randomBytes(4).toString('hex')}`;
    const sent = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage(`vary slow=100 words=${WORDS} ${m}`), configuration: { returnImmediately: true } });
    expect(sent.body.error).toBeUndefined();
    const taskId = (sent.body.result as { task: Task }).task.id;
    const watcher = await subscribe(taskId);

    // The first attempt streams part of its reply into the artifact.
    await waitFor(async () => (await storedEvents(taskId)).filter((e) => chunkOf(e.event) !== undefined).length >= 3 || undefined, 60_000, 'reply chunks from the first attempt');
    const holder = (await gw.redis.get(`${gw.prefix}:{${taskId}}:lease`)) as string;
    const victim = workers.find((w) => w.pid === pidOf(holder));
    expect(victim, `lease holder ${holder} is one of our workers`).toBeDefined();
    victim?.kill('SIGKILL');
    expect(await victim?.exited).toBe('SIGKILL');
    // The watcher's connection drops too; it will resume from the last id it saw.
    await waitFor(() => (watcher.events.length > 0 ? true : undefined), 10_000, 'the watcher to have seen events');
    watcher.abort();
    await watcher.done;
    const seenBefore = received(watcher);
    const lastSeen = seenBefore.at(-1)?.id as string;

    // The model server saw the dead worker's request go away mid-reply.
    const first = await fake.waitFor(() => (fake.requestsFor(m)[0]?.clientDisconnected === true ? fake.requestsFor(m)[0] : undefined), 20_000, 'the first request to be dropped');
    expect(first.chunksSent).toBeLessThan(WORDS);

    const resumed = await subscribe(taskId, lastSeen);
    await Promise.race([resumed.done, new Promise((_, reject) => setTimeout(() => reject(new Error('the resumed stream did not close after COMPLETED')), 90_000))]);

    const { body } = await rpc(gw.jsonRpcUrl, 'GetTask', { id: taskId });
    const task = body.result as Task;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(task.artifacts?.map((a) => a.artifactId)).toEqual(['reply-1']);
    expect(task.artifacts?.[0]?.parts.map((p) => p.text ?? '').join('')).toBe(EXPECTED);
    const requests = fake.requestsFor(m);
    expect(requests).toHaveLength(2);
    expect(requests[1]?.messages).toEqual(requests[0]?.messages);
    expect(requests[1]?.replyText).toBe(EXPECTED);

    const record = JSON.parse((await gw.redis.hget(`${gw.prefix}:{${taskId}}:turns`, '1')) as string) as TurnRecord;
    expect(record.attempts).toBe(2);
    expect(pidOf(record.workerId as string)).not.toBe(victim?.pid);
    // The lost attempt never learnt its usage (it comes at the end of a stream): only the
    // second call is recorded and charged.
    const secondPromptTokens = Math.ceil((requests[1]?.messages ?? []).reduce((n, msg) => n + msg.content.length, 0) / 4);
    expect(record.usage).toEqual({ model: 'fake-model', inputTokens: secondPromptTokens, outputTokens: WORDS });
    expect(task.metadata?.['a2aGateway']).toMatchObject({ usage: { inputTokens: secondPromptTokens, outputTokens: WORDS, totalTokens: secondPromptTokens + WORDS } });

    // The stored stream: the retry's first chunk replaces (append: false), so applying every
    // chunk in order gives the whole reply, never a splice; one last chunk.
    const stored = await storedEvents(taskId);
    const chunks = stored.map((e) => chunkOf(e.event)).filter((c): c is TaskArtifactUpdateEvent => c !== undefined);
    const replacing = chunks.filter((c) => !c.append);
    expect(replacing).toHaveLength(2);
    expect(textOfChunk(replacing[1] as TaskArtifactUpdateEvent)).toBe('w1 ');
    expect(replacing[1]?.artifact.metadata).toMatchObject({ attempt: 2, replacesEarlierAttempt: true });
    let text = '';
    for (const chunk of chunks) text = chunk.append ? text + textOfChunk(chunk) : textOfChunk(chunk);
    expect(text).toBe(EXPECTED);
    expect(chunks.filter((c) => c.lastChunk)).toHaveLength(1);
    expect(chunks.at(-1)?.lastChunk).toBe(true);

    // What the watcher saw before its drop, then after resuming, is the stored stream: no gap,
    // no duplicate, in order, ending with COMPLETED.
    const seen = [...seenBefore, ...received(resumed)];
    const firstSeen = stored.findIndex((e) => e.id === seen[0]?.id);
    expect(firstSeen).toBeGreaterThanOrEqual(0);
    expect(seen.map((e) => e.id)).toEqual(stored.slice(firstSeen).map((e) => e.id));
    expect(new Set(seen.map((e) => e.id)).size).toBe(seen.length);
    expect(seen.slice(1)).toEqual(stored.slice(firstSeen + 1));
    const last = seen.at(-1)?.event;
    expect(last !== undefined && 'statusUpdate' in last && last.statusUpdate.status.state).toBe('TASK_STATE_COMPLETED');
  }, 240_000);
});
