// A large message's digest (what tells a re-send from a reused messageId) is computed on the
// assembly thread, not the event loop: canonicalizing and hashing a megabyte took the event loop
// about 16 ms. The digest is the same function's, so re-sends and reuse are told apart as before,
// for new tasks and follow-ups alike.
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
