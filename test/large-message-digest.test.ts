// What a large message no longer costs the event loop. Its digest (what tells a re-send from a
// reused messageId) is computed on the assembly thread: canonicalizing and hashing a megabyte
// took the event loop about 16 ms. The digest is the same function's, so re-sends and reuse are
// told apart as before. And a returnImmediately answer is the task as created, not read back:
// reading a megabyte back to answer with what was just sent took it about 9 ms more.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Task } from '../src/protocol/types.ts';
import { artifactAssembly } from '../src/tasks/artifact-assembly.ts';
import { LARGE_MESSAGE_BYTES } from '../src/tasks/large-messages.ts';
import { messageDigestOf } from '../src/tasks/message-digest.ts';
import { rpc, startTestGateway, textMessage, type TestGateway } from './support/harness.ts';
import { startOwnRedis, type OwnRedis } from './support/redis-server.ts';

let own: OwnRedis;
let redis: Redis;
let gw: TestGateway;

beforeAll(async () => {
  own = await startOwnRedis();
  redis = new Redis(own.url);
  gw = await startTestGateway({ name: 'large-digest', config: { redisUrl: own.url, maxBodyBytes: 4 * 1024 * 1024 }, adapterOptions: { stepMs: 5 } });
});

afterAll(async () => {
  await gw?.close();
  await redis?.quit();
  await own?.stop();
});

const send = (message: Record<string, unknown>): Promise<{ status: number; body: Record<string, unknown> }> =>
  rpc(gw.jsonRpcUrl, 'SendMessage', { message, configuration: { returnImmediately: true } });

describe('a large message digest', () => {
  it('is computed on the thread, stored as the event loop would compute it, and tells a re-send from a reused messageId', async () => {
    const message = textMessage('é'.repeat(LARGE_MESSAGE_BYTES));
    const before = artifactAssembly.digested;
    const first = await send(message);
    const task = first.body.result as { task: Task };
    expect(artifactAssembly.digested).toBe(before + 1);
    const stored = await redis.hget(`${gw.prefix}:{${task.task.id}}:task`, `digest:${String(message.messageId)}`);
    expect(stored).toBe(messageDigestOf(message as never));

    // The same message again: its task, no error.
    const again = await send(message);
    expect((again.body.result as { task: Task }).task.id).toBe(task.task.id);
    // The same messageId with other content: refused, named.
    const reused = await send({ ...message, parts: [{ text: `${'é'.repeat(LARGE_MESSAGE_BYTES)}!` }] });
    expect(JSON.stringify(reused.body.error)).toContain('MESSAGE_ID_REUSED');
    expect(artifactAssembly.digested).toBe(before + 3);
  });

  it('a small message is digested on the event loop, as before', async () => {
    const before = artifactAssembly.digested;
    const sent = await send(textMessage('small'));
    expect(sent.body.result).toBeDefined();
    expect(artifactAssembly.digested).toBe(before);
  });
});

describe('a returnImmediately answer to a new task', () => {
  it('is the task as created, history and metadata as sent, without reading it back', async () => {
    const reads = gw.gateway.store.gateway as unknown as { readTaskWithin: (taskId: string, ...rest: unknown[]) => Promise<unknown> };
    const readWithin = reads.readTaskWithin;
    const readIds: string[] = [];
    reads.readTaskWithin = function (this: unknown, taskId: string, ...rest: unknown[]) {
      readIds.push(taskId);
      return readWithin.call(this, taskId, ...rest);
    };
    try {
      const message = textMessage('x'.repeat(200_000));
      const sent = await rpc(gw.jsonRpcUrl, 'SendMessage', { message, metadata: { note: 'kept' }, configuration: { returnImmediately: true } });
      const task = (sent.body.result as { task: Task }).task;
      expect(readIds).not.toContain(task.id);
      expect(task.status.state).toBe('TASK_STATE_SUBMITTED');
      expect(task.metadata).toEqual({ note: 'kept' });
      expect(task.history).toEqual([{ ...message, taskId: task.id, contextId: task.contextId }]);
      // What a read gives, field for field and in the same order (artifacts aside: the turn may have run).
      const read = (await rpc(gw.jsonRpcUrl, 'GetTask', { id: task.id })).body.result as Task;
      expect(read.history?.[0]).toEqual(task.history?.[0]);
      expect(Object.keys(task)).toEqual(Object.keys(read).filter((key) => key !== 'artifacts'));

      // historyLength 0: no history, as a read would give.
      const bare = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('y'), configuration: { returnImmediately: true, historyLength: 0 } });
      expect((bare.body.result as { task: Task }).task.history).toBeUndefined();
    } finally {
      reads.readTaskWithin = readWithin;
    }
  });
});

describe('a blocking SendMessage with a large first message', () => {
  it('waits from after the creation event instead of reading that event back, and answers the finished task', async () => {
    const store = gw.gateway.store.gateway as unknown as { readEvent: (taskId: string, id: string) => Promise<string | undefined> };
    const readEvent = store.readEvent;
    const eventsRead: string[] = [];
    store.readEvent = function (this: unknown, taskId: string, id: string) {
      eventsRead.push(`${taskId} ${id}`);
      return readEvent.call(this, taskId, id);
    };
    try {
      const message = textMessage(`echo ${'z'.repeat(200_000)}`);
      const sent = await rpc(gw.jsonRpcUrl, 'SendMessage', { message });
      const task = (sent.body.result as { task: Task }).task;
      expect(task.status.state).toBe('TASK_STATE_COMPLETED');
      expect(task.history?.[0]).toEqual({ ...message, taskId: task.id, contextId: task.contextId });
      const [[creationEventId]] = (await redis.xrange(`${gw.prefix}:{${task.id}}:events`, '-', '+', 'COUNT', 1)) as [[string, string[]]];
      expect(eventsRead).not.toContain(`${task.id} ${creationEventId}`);
    } finally {
      store.readEvent = readEvent;
    }
  });
});
