// Graceful shutdown on SIGTERM: a worker hands its running turn back (lease released, job
// re-queued) so another worker continues at once, not after a stall timeout; a gateway ends
// its SSE streams with a reconnect hint, its gRPC streams with UNAVAILABLE and the event id to
// resume from, and exits cleanly.
import { Agents } from '../src/agents/agents.ts';
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { loadAdapter } from '../adapters/module-loader.ts';
import { createLogger } from '../src/logging/logger.ts';
import { TurnHandedBackError, TurnRunner } from '../src/runtime/turn-runner.ts';
import { ownerKeyOf, TaskStore, type Owner, type TurnRecord } from '../src/store/task-store.ts';
import { SubscribeToTaskRequest } from '@a2a-js/sdk';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { detailsOf, eventIdOf, metadataOf, rawGrpc } from './support/grpc.ts';
import { compareEventIds } from '../src/events/hub.ts';
import { nodeEntryArgs } from './support/compiled-sources.ts';
import { whenChildReady } from './support/child-ready.ts';
import { createStoredTask, isRunning, REDIS_URL, ROOT, rpc, spawnWorkerProcess, startTestGateway, stopWorkerProcesses, textMessage, waitFor, type TestGateway, type WorkerProcess } from './support/harness.ts';

// Long enough that recovery by stall detection would take far longer than this test allows.
const SLOW_STALL_ENV = { A2A_LOCK_DURATION_MS: '60000', A2A_STALLED_INTERVAL_MS: '30000', A2A_SHUTDOWN_GRACE_MS: '200', A2A_ADAPTER_OPTIONS: '{"stepMs":50}' };
// At 50 ms a step, 3 s or more a run: several times the second or so a loaded machine needs from
// seeing progress to the worker handing the turn back, so the SIGTERM lands while it runs; and
// every hand-back restarts the turn from step one, so a longer turn is paid in full once more.
const LONG_TURN = 'long 60';

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
    // Both workers are up before the turn starts: starting one takes seconds on a busy machine,
    // and the turn must still be running when its worker is told to stop.
    const pair = await Promise.all([spawnWorkerProcess(gw.prefix, SLOW_STALL_ENV), spawnWorkerProcess(gw.prefix, SLOW_STALL_ENV)]);
    workers.push(...pair);
    const reply = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage(LONG_TURN), configuration: { returnImmediately: true } });
    const taskId = ((reply.body.result as { task: { id: string } }).task).id;
    const leaseKey = `${gw.prefix}:{${taskId}}:lease`;
    const firstHolder = await waitFor(async () => (await gw.redis.get(leaseKey)) ?? undefined, 20_000, 'a worker to take the lease');
    const first = pair.find((w) => firstHolder.includes(`:${w.pid}:`)) as WorkerProcess;
    const second = pair.find((w) => w !== first) as WorkerProcess;
    expect(first).toBeDefined();
    await waitFor(async () => ((await gw.redis.xlen(`${gw.prefix}:{${taskId}}:events`)) >= 5 ? true : undefined), 20_000, 'progress');
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
    // The hand-back undid the first worker's attempt: no worker was lost.
    expect(record.attempts).toBe(1);
    expect(record.handBacks).toBe(1);
    expect(record.workerId).toContain(`:${second.pid}:`);
    expect(record.outcome).toBe('TASK_STATE_COMPLETED');
    // The next test's turn must land only on workers configured for it.
    await stopWorkerProcesses(pair);
  });

  it('does not count hand-backs as attempts: a turn handed back three times with maxTurnAttempts 2 completes', async () => {
    const env = { ...SLOW_STALL_ENV, A2A_MAX_TURN_ATTEMPTS: '2' };
    // Four workers up front, so each hand-back finds a live one at once; no other worker runs,
    // so the one that finishes the turn is also limited to two attempts.
    // Two start-ups at a time: about half the wall time of one after the other on two cores.
    for (let i = 0; i < 2; i++) workers.push(...(await Promise.all([spawnWorkerProcess(gw.prefix, env), spawnWorkerProcess(gw.prefix, env)])));
    const running = (): WorkerProcess[] => workers.filter(isRunning);
    const reply = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage(LONG_TURN), configuration: { returnImmediately: true } });
    const taskId = ((reply.body.result as { task: { id: string } }).task).id;
    const keys = { task: `${gw.prefix}:{${taskId}}:task`, lease: `${gw.prefix}:{${taskId}}:lease`, events: `${gw.prefix}:{${taskId}}:events` };
    let deadline: string | null = null;
    for (let handBack = 1; handBack <= 3; handBack++) {
      const holder = await waitFor(async () => {
        const id = await gw.redis.get(keys.lease);
        return running().find((w) => id?.includes(`:${w.pid}:`));
      }, 20_000, `a live worker to take the turn (hand-back ${handBack})`);
      const progressFrom = await gw.redis.xlen(keys.events);
      await waitFor(async () => ((await gw.redis.xlen(keys.events)) >= progressFrom + 2 ? true : undefined), 20_000, 'progress');
      deadline ??= await gw.redis.hget(keys.task, 'turnDeadlineAtMs');
      holder.kill('SIGTERM');
      expect(await holder.exited).toBe('0');
      expect(await gw.redis.hget(keys.task, 'turnHandBacks')).toBe(String(handBack));
    }

    const final = await waitFor(async () => {
      const task = (await rpc(gw.jsonRpcUrl, 'GetTask', { id: taskId })).body.result as { status: { state: string; message?: { parts: { text: string }[] } } };
      return task.status.state === 'TASK_STATE_COMPLETED' || task.status.state === 'TASK_STATE_FAILED' ? task : undefined;
    }, 40_000, 'the last worker to end the turn');
    expect(final.status.message?.parts[0]?.text).not.toMatch(/maxTurnAttempts/);
    expect(final.status.state).toBe('TASK_STATE_COMPLETED');
    const record = JSON.parse((await gw.redis.hget(`${gw.prefix}:{${taskId}}:turns`, '1')) as string) as TurnRecord;
    expect(record).toMatchObject({ attempts: 1, handBacks: 3, outcome: 'TASK_STATE_COMPLETED' });
    expect(running().some((w) => record.workerId?.includes(`:${w.pid}:`))).toBe(true);
    expect(await gw.redis.hget(keys.task, 'turnAttempts')).toBe('1');
    // The deadline is still the one fixed at the turn's first start.
    expect(deadline).not.toBeNull();
    expect(await gw.redis.hget(keys.task, 'turnDeadlineAtMs')).toBe(deadline);
    // The next test's turn must not land on workers configured for this one.
    await stopWorkerProcesses(workers);
  }, 180_000);

  it('hands a turn back, not cancels it, when shutdown begins while its lease is being taken', async () => {
    const owner: Owner = { agent: 'default', tenant: '', subject: 'shutdown-race' };
    const store = new TaskStore(gw.redis, gw.prefix);
    const { taskId, contextId } = await createStoredTask(store, { taskId: `race-${Date.now()}`, contextId: 'race-ctx', owner, text: 'long 3' });
    const runner = new TurnRunner({
      store,
      agents: Agents.single({ ...gw.config, turnDeadlineMs: 0 }, await loadAdapter('demo', { stepMs: 5 }, ROOT)),
      logger: createLogger('silent'),
      maxTurnAttempts: 2,
      leaseTtlMs: 2_000,
    });
    const running = runner.process({ jobId: `${taskId}-t1`, data: { taskId, turn: 1, ownerKey: ownerKeyOf(owner), contextId }, waitedMs: undefined });
    // The turn is registered before its lease is taken; shutdown reaches it in that window.
    expect(runner.handBackAll()).toBe(1);
    await expect(running).rejects.toBeInstanceOf(TurnHandedBackError);
    const hash = await gw.redis.hgetall(store.keys.task(taskId).task);
    expect(hash.state).not.toBe('TASK_STATE_CANCELED');
    expect(hash).toMatchObject({ turnAttempts: '0', turnHandBacks: '1' });
    expect(hash.cancelOutcome).toBeUndefined();
    expect(await gw.redis.exists(store.keys.task(taskId).lease)).toBe(0);
  });
});

describe('gateway shutdown', () => {
  it('ends open streams with an SSE retry hint (gRPC ones with UNAVAILABLE and the last event id) and exits 0 on SIGTERM; the task goes on', async () => {
    // Started alongside the gateway process; listed at once, so the suite's end kills it whatever fails.
    const starting = spawnWorkerProcess(gw.prefix, { A2A_ADAPTER_OPTIONS: '{"stepMs":100}' }).then((worker) => workers.push(worker));
    const child = spawn(process.execPath, [...nodeEntryArgs('src/cli/main.ts'), 'serve'], {
      cwd: ROOT,
      env: { ...process.env, A2A_PORT: '0', A2A_GRPC_PORT: '0', A2A_KEY_PREFIX: gw.prefix, A2A_REDIS_URL: REDIS_URL, A2A_LOG_LEVEL: 'warn', A2A_AUTH_ENABLED: 'false' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    // A failure before the SIGTERM below must not leave the gateway running after the suite.
    onTestFinished(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    const { value: [rpcUrl, grpcAddress] } = await whenChildReady(child, {
      name: 'gateway process',
      ready: (banner): [string, string] | undefined => {
        const url = /JSON-RPC:\s+(\S+)/.exec(banner)?.[1];
        const address = /gRPC:\s+(\S+)/.exec(banner)?.[1];
        return url !== undefined && address !== undefined ? [url, address] : undefined;
      },
    });
    await starting;

    const reply = await rpc(rpcUrl, 'SendMessage', { message: textMessage('long 40'), configuration: { returnImmediately: true } });
    const taskId = ((reply.body.result as { task: { id: string } }).task).id;
    const response = await fetch(rpcUrl, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Accept: 'text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SubscribeToTask', params: { id: taskId } }),
    });
    const body = response.text();
    const grpc = rawGrpc(grpcAddress);
    onTestFinished(() => grpc.close());
    let firstEvent: () => void = () => undefined;
    const streaming = new Promise<void>((resolve) => (firstEvent = resolve));
    const watched = grpc.stream('subscribeToTask', SubscribeToTaskRequest.fromJSON({ id: taskId }), metadataOf({ 'a2a-version': '1.0' }), () => firstEvent());
    // Both streams are open (the SSE response's head came back; the gRPC one delivered an event).
    await Promise.race([streaming, watched.done]);
    child.kill('SIGTERM');
    const text = await body; // ends when the gateway ends the stream
    expect(text).toMatch(/\nretry: \d+\n\n$/);
    const cut = await watched.done;
    expect(cut.error?.code).toBe(GrpcStatus.UNAVAILABLE);
    expect(cut.events.length).toBeGreaterThan(0);
    const hint = detailsOf(cut.error as NonNullable<typeof cut.error>).errorInfo?.metadata;
    expect(hint).toMatchObject({ reason: 'SHUTTING_DOWN', taskId });
    // The last event written; the client received it or one before it (grpc-js may surface the status first).
    expect(compareEventIds(eventIdOf(cut.events.at(-1) as (typeof cut.events)[number]), hint?.lastEventId as string)).toBeLessThanOrEqual(0);
    expect(await exited).toBe(0);

    // The task was not stopped by its watcher's gateway going away.
    const final = await waitFor(async () => {
      const task = (await rpc(gw.jsonRpcUrl, 'GetTask', { id: taskId })).body.result as { status: { state: string } };
      return task.status.state === 'TASK_STATE_COMPLETED' ? task : undefined;
    }, 20_000, 'the task to complete');
    expect(final.status.state).toBe('TASK_STATE_COMPLETED');
  });
});
