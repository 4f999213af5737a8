// Every answer built from a large task (artifacts past one stored segment) besides GetTask
// (test/large-task-answers.test.ts) is assembled off the event loop too: a blocking SendMessage's
// final answer, CancelTask's answer, and a stream's opening snapshot (SubscribeToTask, a
// follow-up's SendStreamingMessage). Each went through the assembly thread, never through the
// on-loop read (readLargeTask), and is byte for byte what serializing the task as that read
// builds it gives; the official client reads the same task.
import { createHash } from 'node:crypto';
import { CancelTaskRequest, SendMessageRequest, SubscribeToTaskRequest, type StreamResponse, type Task as ProtoTask } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory, RestTransportFactory, type Client } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JsonFragment, serializeFramed } from '../src/protocol/json-fragment.ts';
import type { Task } from '../src/protocol/types.ts';
import { parseStoredArtifacts, storedArtifactsText } from '../src/store/stored-artifacts.ts';
import { ownerFromKey } from '../src/store/task-store.ts';
import type { TaskRead } from '../src/store/task-read.ts';
import { artifactAssembly } from '../src/tasks/artifact-assembly.ts';
import { startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';
import { openSse } from './support/sse.ts';

/** 300 appended chunks of about 2 kB: well past LARGE_TASK_BYTES (256 KiB). */
const MAKE = 'make 300 2000';
const CHUNKS = 300;
const JSON_HEADERS = { 'Content-Type': 'application/json', 'A2A-Version': '1.0' };

let gw: TestGateway;
/** Task ids the on-loop read (readLargeTask) was asked for by the gateway. */
const onLoopReads: string[] = [];
let readOnLoop: (taskId: string, owner: Parameters<TestGateway['gateway']['store']['gateway']['readTask']>[1], historyLength: number | undefined) => Promise<TaskRead | undefined>;

beforeAll(async () => {
  gw = await startTestGateway({ name: 'large-answer-paths', config: { agents: { big: { adapter: 'test/fixtures/large-artifacts-adapter.mjs' } } } });
  const operations = gw.gateway.store.gateway;
  readOnLoop = operations.readTask.bind(operations);
  const readLargeTask = operations.readLargeTask.bind(operations);
  operations.readLargeTask = (taskId, ...rest) => {
    onLoopReads.push(taskId);
    return readLargeTask(taskId, ...rest);
  };
});

afterAll(async () => {
  await gw?.close();
});

/** The task as the on-loop read builds it, serialized: what every answer was before. */
async function serializedAsBefore(taskId: string, historyLength?: number): Promise<string> {
  const owner = ownerFromKey((await gw.redis.hget(gw.gateway.store.keys.task(taskId).task, 'owner')) ?? '');
  const before = onLoopReads.length;
  const read = await readOnLoop(taskId, owner, historyLength);
  onLoopReads.length = before; // the reference read is not the gateway's
  expect(read, `task ${taskId}`).toBeDefined();
  return JSON.stringify((read as TaskRead).task);
}

/** Length and hash, so a failure prints a line, not a megabyte. */
const digest = (text: string): string => `${text.length} chars, sha256 ${createHash('sha256').update(text).digest('hex')}`;

/** The artifacts' text, in the JSON shape or the official client's (proto) shape. */
function artifactText(artifacts: readonly { parts: readonly unknown[] }[] | undefined): string {
  const textOf = (part: unknown): string => {
    const { text, content } = part as { text?: unknown; content?: { $case?: string; value?: unknown } };
    if (typeof text === 'string') return text;
    return content?.$case === 'text' && typeof content.value === 'string' ? content.value : '';
  };
  return digest((artifacts ?? []).flatMap((artifact) => artifact.parts.map(textOf)).join(''));
}

async function jsonRpc(method: string, params: unknown, id = 7): Promise<string> {
  const response = await fetch(gw.jsonRpcUrl, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ jsonrpc: '2.0', id, method, params }) });
  const text = await response.text();
  expect(response.status, text.slice(0, 300)).toBe(200);
  expect(Number(response.headers.get('content-length'))).toBe(Buffer.byteLength(text));
  return text;
}

async function rest(path: string, body: unknown): Promise<string> {
  const response = await fetch(`${gw.restUrl}${path}`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify(body) });
  const text = await response.text();
  expect(response.status, text.slice(0, 300)).toBe(200);
  expect(Number(response.headers.get('content-length'))).toBe(Buffer.byteLength(text));
  return text;
}

/** A task past one segment, waiting for input (nothing moves until it is sent a message). */
async function largeWaitingTask(): Promise<string> {
  const text = await jsonRpc('SendMessage', { message: textMessage(`${MAKE} input`) });
  const task = (JSON.parse(text) as { result: { task: Task } }).result.task;
  expect(task.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
  return task.id;
}

/** A task past one segment whose turn holds (running) until it is canceled. */
async function largeHeldTask(): Promise<string> {
  const text = await jsonRpc('SendMessage', { message: textMessage(`${MAKE} hold`), configuration: { returnImmediately: true } });
  const taskId = (JSON.parse(text) as { result: { task: Task } }).result.task.id;
  await waitFor(
    async () => {
      const read = await serializedAsBefore(taskId, 0);
      return ((JSON.parse(read) as Task).artifacts?.[0]?.parts.length ?? 0) === CHUNKS || undefined;
    },
    30_000,
    'every chunk to be stored',
  );
  return taskId;
}

/** Runs `call` and checks it assembled `times` answers on the thread and read nothing on the event loop. */
async function offTheLoop<T>(times: number, call: () => Promise<T>): Promise<T> {
  const assembled = artifactAssembly.assembled;
  const onLoop = onLoopReads.length;
  const result = await call();
  expect(artifactAssembly.assembled - assembled, 'answers assembled on the thread').toBe(times);
  expect(onLoopReads.slice(onLoop), 'reads parsed on the event loop').toEqual([]);
  return result;
}

const client = (transport: JsonRpcTransportFactory | RestTransportFactory): Promise<Client> => new ClientFactory({ transports: [transport] }).createFromUrl(gw.url);

describe('a blocking SendMessage answered with a large task', () => {
  it('is the task as serialized before, byte for byte (JSON-RPC and REST)', async () => {
    const viaRpc = await offTheLoop(1, () => jsonRpc('SendMessage', { message: textMessage(`${MAKE} done`) }, 11));
    const taskId = (JSON.parse(viaRpc) as { result: { task: Task } }).result.task.id;
    expect(viaRpc === `{"jsonrpc":"2.0","id":11,"result":{"task":${await serializedAsBefore(taskId)}}}`, 'JSON-RPC answer').toBe(true);
    const viaRest = await offTheLoop(1, () => rest('/message:send', { message: textMessage(`${MAKE} done`) }));
    const restId = (JSON.parse(viaRest) as { task: Task }).task.id;
    expect(viaRest === `{"task":${await serializedAsBefore(restId)}}`, 'REST answer').toBe(true);
  });

  it('reads the same through the official client', async () => {
    for (const transport of [new JsonRpcTransportFactory(), new RestTransportFactory()]) {
      const sent = (await (await client(transport)).sendMessage(
        SendMessageRequest.fromJSON({ message: { messageId: `m-${Date.now()}-${Math.random()}`, role: 'ROLE_USER', parts: [{ text: `${MAKE} done` }] } }),
      )) as ProtoTask;
      expect(sent.id).not.toBe('');
      expect(artifactText(sent.artifacts)).toBe(artifactText((JSON.parse(await serializedAsBefore(sent.id)) as Task).artifacts));
    }
  });
});

describe('CancelTask of a large task', () => {
  it('answers a waiting task canceled at once with the task as serialized before (JSON-RPC and REST)', async () => {
    const first = await largeWaitingTask();
    const viaRpc = await offTheLoop(1, () => jsonRpc('CancelTask', { id: first }, 12));
    expect(viaRpc === `{"jsonrpc":"2.0","id":12,"result":${await serializedAsBefore(first)}}`, 'JSON-RPC answer').toBe(true);
    expect((JSON.parse(viaRpc) as { result: Task }).result.status.state).toBe('TASK_STATE_CANCELED');
    const second = await largeWaitingTask();
    const viaRest = await offTheLoop(1, () => rest(`/tasks/${second}:cancel`, {}));
    expect(viaRest === (await serializedAsBefore(second)), 'REST answer').toBe(true);
  });

  it('answers a running task once its turn stopped, deciding on its state without reading it whole', async () => {
    const taskId = await largeHeldTask();
    const answer = await offTheLoop(1, () => jsonRpc('CancelTask', { id: taskId }, 13));
    expect((JSON.parse(answer) as { result: Task }).result.status.state).toBe('TASK_STATE_CANCELED');
    expect(answer === `{"jsonrpc":"2.0","id":13,"result":${await serializedAsBefore(taskId)}}`, 'JSON-RPC answer').toBe(true);
  });

  it('reads the same through the official client', async () => {
    for (const transport of [new JsonRpcTransportFactory(), new RestTransportFactory()]) {
      const taskId = await largeWaitingTask();
      const canceled = await (await client(transport)).cancelTask(CancelTaskRequest.fromJSON({ id: taskId }));
      expect(artifactText(canceled.artifacts)).toBe(artifactText((JSON.parse(await serializedAsBefore(taskId)) as Task).artifacts));
    }
  });
});

describe("a stream's opening snapshot of a large task", () => {
  /** The first event of a stream opened by `init`, as the client read it. */
  async function firstEvent(url: string, init: { method: string; body?: string }): Promise<{ id: string | undefined; data: string; close: () => Promise<void> }> {
    const { response, reader } = await openSse(url, { ...init, headers: { ...JSON_HEADERS, Accept: 'text/event-stream' } });
    expect(response.status).toBe(200);
    const [first] = await reader.waitForEvents(1, 30_000);
    return {
      id: first?.id,
      data: first?.data ?? '',
      close: async () => {
        reader.abort();
        await reader.done;
      },
    };
  }

  it('SubscribeToTask: the task as serialized before, with its event id (JSON-RPC and REST)', async () => {
    for (const taskId of [await largeWaitingTask(), await largeHeldTask()]) {
      const viaRpc = await offTheLoop(1, () => firstEvent(gw.jsonRpcUrl, { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 14, method: 'SubscribeToTask', params: { id: taskId } }) }));
      await viaRpc.close();
      expect(viaRpc.data === `{"jsonrpc":"2.0","id":14,"result":{"task":${await serializedAsBefore(taskId)}}}`, 'JSON-RPC frame').toBe(true);
      const lastEventId = await gw.redis.xrevrange(gw.gateway.store.keys.task(taskId).events, '+', '-', 'COUNT', 1);
      expect(viaRpc.id).toBe(lastEventId[0]?.[0]);
      const viaRest = await offTheLoop(1, () => firstEvent(`${gw.restUrl}/tasks/${taskId}:subscribe`, { method: 'POST' }));
      await viaRest.close();
      expect(viaRest.data === `{"task":${await serializedAsBefore(taskId)}}`, 'REST frame').toBe(true);
    }
  });

  it('SendStreamingMessage to a large waiting task: its snapshot holds the artifacts as serialized before', async () => {
    const taskId = await largeWaitingTask();
    const before = JSON.parse(await serializedAsBefore(taskId)) as Task;
    const stream = await offTheLoop(1, () =>
      firstEvent(gw.jsonRpcUrl, { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 15, method: 'SendStreamingMessage', params: { message: textMessage('make 0 0 input', { taskId }) } }) }),
    );
    await stream.close();
    const snapshot = (JSON.parse(stream.data) as { result: { task: Task } }).result.task;
    // The frame is exactly the serialized value (no placeholder, no stray byte), its artifacts the task's.
    expect(stream.data === JSON.stringify(JSON.parse(stream.data)), 'the frame is serialized JSON').toBe(true);
    expect(JSON.stringify(snapshot.artifacts) === JSON.stringify(before.artifacts), 'artifacts').toBe(true);
    expect(snapshot.history?.at(-1)?.parts[0]).toEqual({ text: 'make 0 0 input' });
  });

  it('reads the same through the official client', async () => {
    const taskId = await largeWaitingTask();
    const expected = artifactText((JSON.parse(await serializedAsBefore(taskId)) as Task).artifacts);
    for (const transport of [new JsonRpcTransportFactory(), new RestTransportFactory()]) {
      const controller = new AbortController();
      const events = (await client(transport)).resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: taskId }), { signal: controller.signal });
      const first = await events.next();
      controller.abort();
      await events.return(undefined).catch(() => undefined);
      const payload = (first.value as StreamResponse).payload;
      expect(payload?.$case).toBe('task');
      const task = (payload as { value: ProtoTask }).value;
      expect(task.id).toBe(taskId);
      expect(artifactText(task.artifacts)).toBe(expected);
    }
  });
});

describe('a framed answer holding a JSON fragment', () => {
  it('is the frame around the serialized value with the bytes in place, and throws when the frame re-encodes its text', () => {
    const fragment = new JsonFragment(Buffer.from('[{"artifactId":"a","parts":[{"text":"é ✓"}]}]'));
    const framed = serializeFramed({ task: { id: 't', artifacts: fragment } }, (json) => `{"jsonrpc":"2.0","id":3,"result":${json}}`);
    expect(typeof framed).not.toBe('string');
    expect(Buffer.concat(framed as Uint8Array[]).toString()).toBe('{"jsonrpc":"2.0","id":3,"result":{"task":{"id":"t","artifacts":[{"artifactId":"a","parts":[{"text":"é ✓"}]}]}}}');
    // Without a fragment: the frame's text as it is.
    expect(serializeFramed({ task: { id: 't' } }, (json) => `<${json}>`)).toBe('<{"task":{"id":"t"}}>');
    expect(() => serializeFramed({ artifacts: fragment }, (json) => JSON.stringify(json))).toThrow(/placeholder went missing/);
  });
});

describe('the assembly thread given pending chunks as views of one socket read', () => {
  it('assembles what merging them on the event loop gives, byte for byte', async () => {
    const snapshot = JSON.stringify([{ artifactId: 'a', name: 'big', parts: [{ text: 'start é' }] }]);
    const chunkJson = Array.from({ length: 500 }, (_, i) => JSON.stringify({ append: true, artifact: { artifactId: i % 7 === 0 ? `b${i}` : 'a', parts: [{ text: `${i} ✓ 𝄞 "q" \\` }] } }));
    // As a reply parser hands them over: views into one larger allocation, between other bytes.
    const socketRead = Buffer.from(chunkJson.map((chunk) => `$${chunk}\r\n`).join(''));
    const views: Uint8Array[] = [];
    let at = 0;
    for (const chunk of chunkJson) {
      at += 1;
      views.push(socketRead.subarray(at, at + Buffer.byteLength(chunk)));
      at += Buffer.byteLength(chunk) + 2;
    }
    const segments = [Buffer.from(snapshot.slice(0, 20)), Buffer.from(snapshot.slice(20))];
    const expected = JSON.stringify(parseStoredArtifacts(storedArtifactsText({ snapshot: segments, chunks: chunkJson })).artifacts);
    const assembled = await artifactAssembly.assemble({ snapshot: segments, chunks: views });
    expect(Buffer.from(assembled).toString() === expected, 'assembled artifacts').toBe(true);
    expect(JSON.parse(expected)).toHaveLength(1 + Math.ceil(500 / 7));
  });
});
