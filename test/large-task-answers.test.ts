// GetTask of a large task (artifacts past one stored segment) is assembled off the event loop:
// the artifacts are parsed, merged and serialized on the assembly thread, and the JSON bindings
// splice the bytes into their answer (src/protocol/json-fragment.ts). Whatever the binding, the
// caller reads exactly the task: JSON-RPC and REST (spliced), the official client, gRPC and the
// 0.3 JSON-RPC form (parsed).
import { createHash } from 'node:crypto';
import { ClientFactory, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';
import { GetTaskRequest, type Task as ProtoTask } from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Task } from '../src/protocol/types.ts';
import { JsonFragment, serializeAnswer } from '../src/protocol/json-fragment.ts';
import { artifactAssembly } from '../src/tasks/artifact-assembly.ts';
import { rawGrpc } from './support/grpc.ts';
import { rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';
import { openMonitor } from './support/monitor.ts';

/** Well past LARGE_TASK_BYTES (one segment, 256 KiB), with characters of every UTF-8 width. */
const TEXT = `echo ${'a'.repeat(400_000)} é ✓ 𝄞 "quoted" \\ \u0000 ${'z'.repeat(300_000)}`;
const REST_HEADERS = { 'A2A-Version': '1.0' };

let gw: TestGateway;
let task: Task;

beforeAll(async () => {
  gw = await startTestGateway({ name: 'large-answers', config: { grpcPort: 0, maxBodyBytes: 4 * 1024 * 1024 }, adapterOptions: { stepMs: 5 } });
  const sent = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage(TEXT) });
  task = (sent.body.result as { task: Task }).task;
  expect(task.status.state).toBe('TASK_STATE_COMPLETED');
});

afterAll(async () => {
  await gw?.close();
});

/** The echoed text, from wherever the artifacts came. */
const echoed = (artifacts: readonly { parts: readonly unknown[] }[] | undefined): string => digest((artifacts ?? []).flatMap((artifact) => artifact.parts.map(textOf)).join(''));

/** A text part's text, in the JSON shape or the official client's (proto) shape. */
function textOf(part: unknown): string {
  const { text, content } = part as { text?: unknown; content?: { $case?: string; value?: unknown } };
  if (typeof text === 'string') return text;
  return content?.$case === 'text' && typeof content.value === 'string' ? content.value : '';
}

/** Length and hash, so a failure prints a line, not a megabyte. */
const digest = (text: string): string => `${text.length} chars, sha256 ${createHash('sha256').update(text).digest('hex')}`;

describe('a large task read back', () => {
  it("is read on the assembly thread's own connection: the event loop's connections carry none of its artifacts", async () => {
    const redis = gw.gateway.store.redis as import('ioredis').Redis;
    const monitor = await openMonitor(redis);
    const reads: { source: string; command: string }[] = [];
    const taskKey = `${gw.prefix}:{${task.id}}`;
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (args.some((arg) => arg.startsWith(taskKey))) reads.push({ source, command: (args[0] ?? '').toLowerCase() });
    });
    try {
      const assembledBefore = artifactAssembly.assembled;
      const read = (await rpc(gw.jsonRpcUrl, 'GetTask', { id: task.id })).body.result as Task;
      expect(artifactAssembly.assembled, 'assembled on the thread').toBe(assembledBefore + 1);
      expect(echoed(read.artifacts)).toMatch(/^7\d{5} chars/);
      await redis.ping();
      await waitFor(() => (reads.some((entry) => entry.command === 'hget') ? true : undefined), 5_000, 'the segment reads');
      // Each client's address, to its connection's name.
      const names = new Map(
        (await redis.client('LIST') as string)
          .split('\n')
          .map((line) => [/ addr=(\S+)/.exec(line)?.[1], / name=(\S*)/.exec(line)?.[1]] as const)
          .filter((entry): entry is readonly [string, string] => entry[0] !== undefined && entry[1] !== undefined),
      );
      // Commands a script ran show as from "lua": the one the event loop sent is its EVALSHA.
      const bySource = reads.filter((entry) => entry.source !== 'lua').map((entry) => ({ ...entry, name: names.get(entry.source) }));
      // The segments (HGET of each) are the megabytes: all of them on the thread's connection.
      const segmentReads = bySource.filter((entry) => entry.command === 'hget');
      expect(segmentReads.length).toBeGreaterThan(1);
      expect(new Set(segmentReads.map((entry) => entry.name))).toEqual(new Set(['a2a-gateway:assembly']));
      // The event loop decided the task was large with its small read, and read no more.
      expect(bySource.filter((entry) => entry.name === 'a2a-gateway:commands').map((entry) => entry.command)).toEqual(['evalsha']);
    } finally {
      monitor.disconnect();
    }
  });

  it('over JSON-RPC and REST is the task as stored, byte for byte the answer a parse would give', async () => {
    const assembledBefore = artifactAssembly.assembled;
    const viaRpc = (await rpc(gw.jsonRpcUrl, 'GetTask', { id: task.id })).body.result as Task;
    expect(artifactAssembly.assembled, 'assembled on the thread').toBe(assembledBefore + 1);
    expect(echoed(viaRpc.artifacts)).toMatch(/^7\d{5} chars/);
    const rest = await fetch(`${gw.restUrl}/tasks/${task.id}`, { headers: REST_HEADERS });
    expect(rest.status).toBe(200);
    const text = await rest.text();
    expect(Number(rest.headers.get('content-length'))).toBe(Buffer.byteLength(text));
    const viaRest = JSON.parse(text) as Task;
    expect(JSON.stringify(viaRest) === JSON.stringify(viaRpc), 'REST and JSON-RPC read the same task').toBe(true);
    // The answer is what serializing the parsed task gives: no placeholder, no stray byte.
    expect(text === JSON.stringify(viaRest), 'the answer is the serialized task').toBe(true);
    expect(viaRest.history?.length).toBeGreaterThan(0);
  });

  it('through the official client, gRPC and 0.3 JSON-RPC is the same task', async () => {
    const viaRpc = (await rpc(gw.jsonRpcUrl, 'GetTask', { id: task.id })).body.result as Task;
    for (const transport of [new JsonRpcTransportFactory(), new RestTransportFactory()]) {
      const client = await new ClientFactory({ transports: [transport] }).createFromUrl(gw.url);
      const read = await client.getTask(GetTaskRequest.fromJSON({ id: task.id }));
      expect(echoed(read.artifacts), 'official client').toBe(echoed(viaRpc.artifacts));
    }
    const grpc = rawGrpc(gw.gateway.grpc?.address as string);
    try {
      const read = await grpc.unary<ProtoTask>('getTask', GetTaskRequest.fromJSON({ id: task.id }));
      expect(read.error).toBeUndefined();
      expect(echoed(read.response?.artifacts), 'gRPC').toBe(echoed(viaRpc.artifacts));
    } finally {
      grpc.close();
    }
    const legacy = await rpc(gw.jsonRpcUrl, 'tasks/get', { id: task.id }, { 'A2A-Version': '0.3' });
    const legacyTask = legacy.body.result as { artifacts?: { parts: { kind: string; text?: string }[] }[] };
    expect(digest(legacyTask.artifacts?.flatMap((artifact) => artifact.parts.map((part) => part.text ?? '')).join('') ?? ''), '0.3').toBe(echoed(viaRpc.artifacts));
  });
});

describe('a prebuilt JSON fragment', () => {
  it('is spliced in by serializeAnswer and refused by any other serializer', () => {
    const fragment = new JsonFragment(Buffer.from('[{"artifactId":"a","parts":[{"text":"é"}]}]'));
    const answer = serializeAnswer({ jsonrpc: '2.0', id: 1, result: { id: 't', artifacts: fragment, note: 'after' } });
    expect(typeof answer).not.toBe('string');
    const text = Buffer.concat(answer as Uint8Array[]).toString();
    expect(JSON.parse(text)).toEqual({ jsonrpc: '2.0', id: 1, result: { id: 't', artifacts: [{ artifactId: 'a', parts: [{ text: 'é' }] }], note: 'after' } });
    expect(() => JSON.stringify({ artifacts: fragment })).toThrow(/serializeAnswer/);
    // A caller's own text that looks like a placeholder stays text.
    expect(serializeAnswer({ text: '\u0000json-fragment:0' })).toBe(JSON.stringify({ text: '\u0000json-fragment:0' }));
  });
});
