// Graceful shutdown on SIGTERM: a worker hands its running turn back (lease released, job
// re-queued) so another worker continues at once, not after a stall timeout; a gateway ends
// its SSE streams with a reconnect hint and exits cleanly.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TurnRecord } from '../src/store/task-store.ts';
import { REDIS_URL, ROOT, rpc, spawnWorkerProcess, startTestGateway, textMessage, waitFor, type TestGateway, type WorkerProcess } from './support/harness.ts';

// Long enough that recovery by stall detection would take far longer than this test allows.
const SLOW_STALL_ENV = { A2A_LOCK_DURATION_MS: '60000', A2A_STALLED_INTERVAL_MS: '30000', A2A_SHUTDOWN_GRACE_MS: '200', A2A_ADAPTER_OPTIONS: '{"stepMs":50}' };

let gw: TestGateway;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  gw = await startTestGateway({ name: 'shutdown', inProcessWorker: false });
});

afterAll(async () => {
  for (const worker of workers) worker.kill('SIGKILL');
  await gw?.close();
});

describe('worker shutdown', () => {
  it('hands a running turn back on SIGTERM; another worker finishes it long before a stall timeout', async () => {
    const first = await spawnWorkerProcess(gw.prefix, SLOW_STALL_ENV);
    workers.push(first);
    const reply = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('long 60'), configuration: { returnImmediately: true } });
    const taskId = ((reply.body.result as { task: { id: string } }).task).id;
    const leaseKey = `${gw.prefix}:{${taskId}}:lease`;
    const firstHolder = await waitFor(async () => (await gw.redis.get(leaseKey)) ?? undefined, 20_000, 'the first worker to take the lease');
    expect(firstHolder).toContain(`:${first.pid}:`);
    await waitFor(async () => ((await gw.redis.xlen(`${gw.prefix}:{${taskId}}:events`)) >= 5 ? true : undefined), 20_000, 'progress');

    const second = await spawnWorkerProcess(gw.prefix, SLOW_STALL_ENV);
    workers.push(second);
    const stoppedAt = Date.now();
    first.kill('SIGTERM');
    expect(await first.exited).toBe('0');

    const final = await waitFor(async () => {
      const task = (await rpc(gw.jsonRpcUrl, 'GetTask', { id: taskId })).body.result as { status: { state: string } };
      return task.status.state === 'TASK_STATE_COMPLETED' ? task : undefined;
    }, 25_000, 'the second worker to finish the turn');
    expect(final.status.state).toBe('TASK_STATE_COMPLETED');
    // A stall would only be noticed after the 60 s lock; the hand-back makes it seconds.
    expect(Date.now() - stoppedAt).toBeLessThan(30_000);
    const record = JSON.parse((await gw.redis.hget(`${gw.prefix}:{${taskId}}:turns`, '1')) as string) as TurnRecord;
    expect(record.attempts).toBe(2);
    expect(record.workerId).toContain(`:${second.pid}:`);
    expect(record.outcome).toBe('TASK_STATE_COMPLETED');
  });
});

describe('gateway shutdown', () => {
  it('ends open streams with an SSE retry hint and exits 0 on SIGTERM; the task goes on', async () => {
    const worker = await spawnWorkerProcess(gw.prefix, { A2A_ADAPTER_OPTIONS: '{"stepMs":100}' });
    workers.push(worker);
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'serve'], {
      cwd: ROOT,
      env: { ...process.env, A2A_PORT: '0', A2A_KEY_PREFIX: gw.prefix, A2A_REDIS_URL: REDIS_URL, A2A_LOG_LEVEL: 'warn', A2A_AUTH_ENABLED: 'false' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    let banner = '';
    const rpcUrl = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        banner += chunk.toString();
        const url = /JSON-RPC:\s+(\S+)/.exec(banner)?.[1];
        if (url !== undefined) resolve(url);
      });
      setTimeout(() => reject(new Error(`serve did not start: ${banner}`)), 30_000).unref();
    });

    const reply = await rpc(rpcUrl, 'SendMessage', { message: textMessage('long 40'), configuration: { returnImmediately: true } });
    const taskId = ((reply.body.result as { task: { id: string } }).task).id;
    const response = await fetch(rpcUrl, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Accept: 'text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SubscribeToTask', params: { id: taskId } }),
    });
    const body = response.text();
    await new Promise((resolve) => setTimeout(resolve, 500));
    child.kill('SIGTERM');
    const text = await body; // ends when the gateway ends the stream
    expect(text).toMatch(/\nretry: \d+\n\n$/);
    expect(await exited).toBe(0);

    // The task was not stopped by its watcher's gateway going away.
    const final = await waitFor(async () => {
      const task = (await rpc(gw.jsonRpcUrl, 'GetTask', { id: taskId })).body.result as { status: { state: string } };
      return task.status.state === 'TASK_STATE_COMPLETED' ? task : undefined;
    }, 20_000, 'the task to complete');
    expect(final.status.state).toBe('TASK_STATE_COMPLETED');
  });
});
