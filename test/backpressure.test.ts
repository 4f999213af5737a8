// Queue depth beyond the configured bound is answered with 503 and Retry-After, before
// anything is stored, over both bindings; once workers drain the queue, messages are taken again.
import { Agents } from '../src/agents/agents.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/logging/logger.ts';
import { startWorkerRole, type WorkerHandle } from '../src/runtime/worker-role.ts';
import { expectUnchanged, ROOT, rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';

let gw: TestGateway;
let worker: WorkerHandle | undefined;

beforeAll(async () => {
  gw = await startTestGateway({ name: 'backpressure', inProcessWorker: false, config: { maxQueuedTurns: 3 } });
});

afterAll(async () => {
  await worker?.close();
  await gw?.close();
});

const send = (text: string) => rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage(text), configuration: { returnImmediately: true } });
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('queue depth bound', () => {
  it('refuses new messages with 503 and Retry-After while the queue is full, storing nothing', async () => {
    for (let i = 0; i < 3; i++) expect((await send(`echo ${i}`)).status).toBe(200);
    await pause(300); // the gateway re-reads the depth at most every 200 ms

    const refused = await expectUnchanged(gw, async () => {
      const response = await fetch(gw.jsonRpcUrl, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'SendMessage', params: { message: textMessage('echo one too many') } }),
      });
      return { status: response.status, retryAfter: response.headers.get('retry-after'), body: (await response.json()) as { id: number; error: { code: number; message: string } } };
    });
    expect(refused.status).toBe(503);
    expect(refused.retryAfter).toBe('1');
    expect(refused.body.id).toBe(7);
    expect(refused.body.error.code).toBe(-32603);
    expect(refused.body.error.message).toMatch(/3 turns of agent "default" are waiting for a worker, the limit is 3 \(maxQueuedTurns\)/);

    const rest = await fetch(`${gw.restUrl}/message:send`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
      body: JSON.stringify({ message: textMessage('echo rest') }),
    });
    expect(rest.status).toBe(503);
    expect(rest.headers.get('retry-after')).toBe('1');
    expect(((await rest.json()) as { error: { status: string } }).error.status).toBe('UNAVAILABLE');
  });

  it('takes messages again once workers drained the queue', async () => {
    worker = await startWorkerRole(gw.config, await Agents.load(gw.config, ROOT), createLogger('silent'));
    const accepted = await waitFor(async () => {
      await pause(250);
      const reply = await send('echo after drain');
      return reply.status === 200 ? reply : undefined;
    }, 20_000, 'the queue to drain');
    expect((accepted.body.result as { task: { id: string } }).task.id).toBeTruthy();
  });
});
