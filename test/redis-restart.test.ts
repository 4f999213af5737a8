// Redis faults (issue 4, item 5) against a real redis-server this file starts and SIGKILLs:
// with `appendonly yes`, a Redis restart mid-load loses no task whose id a client got; the
// gateway, its event hub and the BullMQ workers reconnect by themselves; a short outage is
// invisible to clients (requests wait, streams resume exactly, blocked calls complete); a
// longer one is answered within redisOutageGraceMs with 503 + Retry-After (JSON-RPC -32603),
// ends open streams with an error naming the Last-Event-ID to resume from, and fails blocked
// calls instead of leaving them hanging. Nothing a refused request carried is stored later.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventHub } from '../src/events/hub.ts';
import { startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';
import { whenRedisReady } from './support/redis-server.ts';
import { openSse, type SseEvent, type SseReader } from './support/sse.ts';

const HEADERS = { 'Content-Type': 'application/json', 'A2A-Version': '1.0' };
const STREAM_HEADERS = { ...HEADERS, Accept: 'text/event-stream' };
/** No client call may take longer than this: a hang fails the test instead of timing it out. */
const CLIENT_TIMEOUT_MS = 30_000;

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** One redis-server process of ours: AOF fsynced on every write, no RDB snapshots. */
class RedisProcess {
  private child: ChildProcess | undefined;
  private exited: Promise<void> | undefined;

  constructor(
    readonly port: number,
    readonly dir: string,
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  async start(): Promise<void> {
    if (this.running) throw new Error('redis-server is already running');
    const child = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--appendonly', 'yes', '--appendfsync', 'always', '--dir', this.dir, '--save', ''],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    await whenRedisReady(child, 'redis-server');
  }

  /** SIGKILL: no shutdown, no final fsync beyond what `appendfsync always` already did. */
  async kill(): Promise<void> {
    if (this.child === undefined || !this.running) return;
    this.child.kill('SIGKILL');
    await this.exited;
  }
}

interface HttpReply {
  status: number;
  retryAfter: string | null;
  body: Record<string, unknown>;
  elapsedMs: number;
  answeredAt: number;
}

async function post(url: string, body: unknown): Promise<HttpReply> {
  const started = Date.now();
  const response = await fetch(url, {
    method: 'POST',
    headers: HEADERS,
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
  });
  const json = (await response.json()) as Record<string, unknown>;
  const answeredAt = Date.now();
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body: json, elapsedMs: answeredAt - started, answeredAt };
}

const rpcCall = (gw: TestGateway, method: string, params: unknown): Promise<HttpReply> =>
  post(gw.jsonRpcUrl, { jsonrpc: '2.0', id: 1, method, params });

interface TaskView {
  id: string;
  status: { state: string };
}

const resultTask = (reply: HttpReply): TaskView => {
  const result = reply.body.result as { task?: TaskView } & TaskView;
  return result.task ?? result;
};

async function getTask(gw: TestGateway, id: string): Promise<TaskView | undefined> {
  try {
    const reply = await rpcCall(gw, 'GetTask', { id, historyLength: 0 });
    return reply.status === 200 && reply.body.result !== undefined ? resultTask(reply) : undefined;
  } catch {
    return undefined;
  }
}

/** The task's replay buffer strictly after `afterId`, read straight from Redis. */
async function storedEvents(redis: Redis, gw: TestGateway, taskId: string, afterId: string): Promise<{ id: string; event: unknown }[]> {
  const entries = await redis.xrange(`${gw.prefix}:{${taskId}}:events`, `(${afterId}`, '+');
  return entries.map(([id, fields]) => ({ id, event: JSON.parse(fields[fields.indexOf('r') + 1] as string) as unknown }));
}

/** How often the task's first turn was started (the turn record's attempts). */
async function turnAttempts(gw: TestGateway, taskId: string): Promise<number> {
  const record = await probe.hget(`${gw.prefix}:{${taskId}}:turns`, '1');
  return (JSON.parse(record ?? '{}') as { attempts?: number }).attempts ?? 0;
}

/** JSON-RPC SSE events as (id, StreamResponse) pairs; an error frame has no id. */
function streamed(events: SseEvent[]): { id: string | undefined; event: unknown; error: { code: number; message: string; data: unknown[] } | undefined }[] {
  return events.map((e) => {
    const frame = JSON.parse(e.data) as { result?: unknown; error?: { code: number; message: string; data: unknown[] } };
    return { id: e.id, event: frame.result, error: frame.error };
  });
}

async function subscribe(gw: TestGateway, taskId: string, lastEventId?: string): Promise<SseReader> {
  const headers: Record<string, string> = lastEventId === undefined ? STREAM_HEADERS : { ...STREAM_HEADERS, 'Last-Event-ID': lastEventId };
  const { response, reader } = await openSse(gw.jsonRpcUrl, {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SubscribeToTask', params: { id: taskId } }),
  });
  expect(response.status).toBe(200);
  return reader;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves with the time it took, or rejects after `timeoutMs` (a hang must fail the test). */
async function within<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} did not settle within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

const redisDir = mkdtempSync(join(tmpdir(), 'a2a-redis-restart-'));
let server: RedisProcess;
let probe: Redis;
const gateways: TestGateway[] = [];

beforeAll(async () => {
  server = new RedisProcess(await freePort(), redisDir);
  await server.start();
  // Reconnects by itself like everything else here; only used for assertions.
  probe = new Redis(server.url, { maxRetriesPerRequest: null, retryStrategy: () => 100 });
  probe.on('error', () => undefined);
});

afterAll(async () => {
  if (server !== undefined && !server.running) await server.start().catch(() => undefined); // a failed test may have left it down
  for (const gw of gateways) await gw.close().catch(() => undefined);
  probe?.disconnect();
  await server?.kill();
  rmSync(redisDir, { recursive: true, force: true });
});

async function startGateway(name: string, config: Record<string, unknown>): Promise<TestGateway> {
  const gw = await startTestGateway({
    name,
    config: { redisUrl: server.url, blockingTimeoutMs: 60_000, ...config },
    adapterOptions: { stepMs: 50 },
  });
  gateways.push(gw);
  return gw;
}

async function waitForReady(gw: TestGateway, timeoutMs: number): Promise<number> {
  const started = Date.now();
  await waitFor(
    async () => {
      const response = await fetch(`${gw.url}/readyz`, { signal: AbortSignal.timeout(5_000) }).catch(() => undefined);
      return response?.status === 200 ? true : undefined;
    },
    timeoutMs,
    'the gateway to report ready',
  );
  return Date.now() - started;
}

describe('a Redis restart (kill -9, AOF always) shorter than redisOutageGraceMs', () => {
  it('loses no task whose id was returned, and gateway, hub and workers carry on by themselves', async () => {
    const gw = await startGateway('redis-blip', { redisOutageGraceMs: 8_000 });
    const send = (text: string, returnImmediately = true): Promise<HttpReply> =>
      rpcCall(gw, 'SendMessage', { message: textMessage(text), configuration: { returnImmediately } });

    // An SSE subscriber on a task that runs across the outage.
    const watched = resultTask(await send('long 80'));
    await waitFor(async () => ((await probe.xlen(`${gw.prefix}:{${watched.id}}:events`)) >= 3 ? true : undefined), 20_000, 'progress');
    const stream = await subscribe(gw, watched.id);
    await stream.waitForEvents(2);

    // The load: 30 tasks whose ids the client got back.
    const batch = await Promise.all(Array.from({ length: 30 }, () => send('long 10')));
    for (const reply of batch) expect(reply.status).toBe(200);
    const ids = [watched.id, ...batch.map((reply) => resultTask(reply).id)];
    // A blocking SendMessage in flight when Redis dies.
    const blockingStarted = Date.now();
    const blocking = send('long 30', false);
    // Its task is stored and it waits (the stream's listener plus its own).
    await waitFor(() => (gw.gateway.hub.listenerCount() >= 2 ? true : undefined), 10_000, 'the blocked call to wait');
    await sleep(300);

    const killedAt = Date.now();
    await server.kill();
    // Requests that arrive while Redis is down wait for it (the outage is within the grace).
    const duringOutage = [send('long 5'), send('long 5'), rpcCall(gw, 'GetTask', { id: watched.id, historyLength: 0 })];
    await sleep(1_000);
    await server.start();
    const redisBackAt = Date.now();
    const redisBackAfterMs = redisBackAt - killedAt;
    // Workers take new work after the restart (their blocking connection came back).
    const fresh = within(send('hello after the restart', false), 30_000, 'a new blocking SendMessage').then((reply) => ({ reply, atMs: Date.now() }));
    const gatewayReadyMs = await waitForReady(gw, 20_000);
    await waitFor(() => (gw.gateway.hub.connected ? true : undefined), 20_000, 'the event hub to resubscribe');
    const hubBackMs = Date.now() - redisBackAt;
    const freshReply = await fresh;
    expect(resultTask(freshReply.reply).status.state).toBe('TASK_STATE_COMPLETED');
    const freshTurnMs = freshReply.atMs - redisBackAt;
    ids.push(resultTask(freshReply.reply).id);

    // Riding out: every request issued during the outage succeeded once Redis was back.
    const rode = await within(Promise.all(duringOutage), 20_000, 'requests issued during the outage');
    for (const reply of rode) {
      expect(reply.status).toBe(200);
      expect(reply.body.error).toBeUndefined();
    }
    ids.push(resultTask(rode[0] as HttpReply).id, resultTask(rode[1] as HttpReply).id);

    // The blocked call completed after the restart, well before blockingTimeoutMs.
    const blocked = await within(blocking, 50_000, 'the blocking SendMessage in flight');
    expect(blocked.status).toBe(200);
    expect(resultTask(blocked).status.state).toBe('TASK_STATE_COMPLETED');
    expect(Date.now() - blockingStarted).toBeLessThan(60_000);
    ids.push(resultTask(blocked).id);

    // No task lost: every id a client got exists and completes.
    for (const id of ids) expect(await probe.exists(`${gw.prefix}:{${id}}:task`), `task ${id} survived`).toBe(1);
    const states = await waitFor(
      async () => {
        const tasks = await Promise.all(ids.map((id) => getTask(gw, id)));
        return tasks.every((t) => t?.status.state === 'TASK_STATE_COMPLETED') ? tasks : undefined;
      },
      60_000,
      'every task to complete',
    ).catch(async (error: Error) => {
      const tasks = await Promise.all(ids.map((id) => getTask(gw, id)));
      throw new Error(`${error.message}: ${JSON.stringify(tasks.map((t, i) => [ids[i], t?.status.state]))}`);
    });
    expect(states).toHaveLength(ids.length);
    // An outage costs a turn at most one attempt. A turn whose write was cut off mid-reply
    // is retried (an infrastructure error, by design); but a job whose lock lapsed and which
    // stall detection handed back to the same worker must not start over while its first run
    // goes on: that cascade used to burn every attempt and fail the turn.
    for (const id of ids) expect(await turnAttempts(gw, id), `attempts of task ${id}`).toBeLessThanOrEqual(2);

    // The stream went on by itself and ended at the terminal event; it carries exactly the
    // stored events after its snapshot: none lost in the outage, none twice after the re-read.
    await within(stream.done, 30_000, 'the SSE stream to end');
    const seen = streamed(stream.events);
    expect(seen.every((e) => e.error === undefined)).toBe(true);
    const snapshotId = seen[0]?.id as string;
    const stored = await storedEvents(probe, gw, watched.id, snapshotId);
    expect(seen.slice(1).map((e) => e.id)).toEqual(stored.map((e) => e.id));
    expect(seen.slice(1).map((e) => e.event)).toEqual(stored.map((e) => e.event));
    expect(new Set(seen.map((e) => e.id)).size).toBe(seen.length);
    // The outage fell inside the stream: it saw events from before and after it.
    expect(seen.some((e) => Number(e.id?.split('-')[0]) < killedAt)).toBe(true);
    expect(stored.some((e) => Number(e.id.split('-')[0]) > killedAt + 1_000)).toBe(true);

    console.log(
      `[redis-restart] redis back ${redisBackAfterMs} ms after the kill; then gateway ready after ${gatewayReadyMs} ms, hub resubscribed after ${hubBackMs} ms, a new blocking SendMessage completed after ${freshTurnMs} ms; ${ids.length} tasks, none lost`,
    );
  }, 180_000);
});

describe('a Redis outage longer than redisOutageGraceMs', () => {
  it('answers new requests with 503 + Retry-After within the grace, ends streams with a resume hint, fails blocked calls, and stores nothing it refused', async () => {
    const graceMs = 3_000;
    // No queue-depth read before CreateTask: a refused SendMessage's first command is the write.
    const gw = await startGateway('redis-outage', { redisOutageGraceMs: graceMs, maxQueuedTurns: 0 });

    // Both turns need only be running when Redis dies (a second or so in; nothing completes while
    // it is down): what is left of them, or all of them if cut mid-write, runs after the restart
    // while the test waits for it.
    const watched = resultTask(await rpcCall(gw, 'SendMessage', { message: textMessage('long 80'), configuration: { returnImmediately: true } }));
    await waitFor(async () => ((await probe.xlen(`${gw.prefix}:{${watched.id}}:events`)) >= 3 ? true : undefined), 20_000, 'progress');
    const stream = await subscribe(gw, watched.id);
    await stream.waitForEvents(2);
    const blockedMessage = textMessage('long 60');
    const blocking = rpcCall(gw, 'SendMessage', { message: blockedMessage });
    await waitFor(async () => ((await probe.keys(`${gw.prefix}:{*}:task`)).length === 2 ? true : undefined), 10_000, 'the blocked task to exist');

    await server.kill();
    const killedAt = Date.now();

    // New requests while Redis is down: a bounded, clear, retryable refusal on both bindings.
    const [viaRpc, viaRest] = await within(
      Promise.all([
        rpcCall(gw, 'SendMessage', { message: textMessage('refused 1'), configuration: { returnImmediately: true } }),
        post(`${gw.restUrl}/message:send`, { message: textMessage('refused 2'), configuration: { returnImmediately: true } }),
      ]),
      CLIENT_TIMEOUT_MS,
      'SendMessage while Redis is down',
    );
    for (const reply of [viaRpc, viaRest]) {
      expect(reply.status).toBe(503);
      expect(Number(reply.retryAfter)).toBeGreaterThanOrEqual(1);
      // It waited for a reconnect first (a blip would have been ridden out), then gave up.
      expect(reply.answeredAt - killedAt).toBeGreaterThanOrEqual(graceMs - 1_000);
      expect(reply.elapsedMs).toBeLessThan(graceMs + 2_500);
    }
    const rpcError = viaRpc.body.error as { code: number; message: string; data: { '@type': string }[] };
    expect(rpcError.code).toBe(-32603);
    expect(rpcError.message).toMatch(/task store \(Redis\) is unreachable/);
    expect(rpcError.message).toMatch(/retry/i);
    expect(rpcError.data.some((d) => d['@type'] === 'type.googleapis.com/google.rpc.RetryInfo')).toBe(true);
    const restError = viaRest.body.error as { code: number; status: string; message: string };
    expect(restError).toMatchObject({ code: 503, status: 'UNAVAILABLE' });
    expect(restError.message).toMatch(/task store \(Redis\) is unreachable/);

    // Once the outage is known, a request fails at once.
    const late = await rpcCall(gw, 'GetTask', { id: watched.id });
    expect(late.status).toBe(503);
    expect(late.elapsedMs).toBeLessThan(1_500);

    // The blocked SendMessage failed too, naming its task, instead of waiting for blockingTimeoutMs.
    const blocked = await within(blocking, graceMs + 5_000, 'the blocked SendMessage');
    const blockedAfterMs = Date.now() - killedAt;
    expect(blocked.status).toBe(503);
    expect(blocked.retryAfter).not.toBeNull();
    const blockedError = blocked.body.error as { code: number; message: string; data: { metadata?: { taskId?: string } }[] };
    expect(blockedError.code).toBe(-32603);
    expect(blockedError.message).toMatch(/Redis/);
    expect(blockedError.message).toMatch(/same messageId/);
    const blockedTaskId = blockedError.data.find((d) => d.metadata?.taskId !== undefined)?.metadata?.taskId as string;
    expect(blockedTaskId).toMatch(/\S/);

    // The open stream ended with an error that says where to resume.
    await within(stream.done, graceMs + 5_000, 'the SSE stream to end');
    const streamEndedAfterMs = Date.now() - killedAt;
    const firstPart = streamed(stream.events);
    const last = firstPart.at(-1);
    const delivered = firstPart.filter((e) => e.error === undefined);
    const lastEventId = delivered.at(-1)?.id as string;
    expect(last?.error?.code).toBe(-32603);
    expect(last?.error?.message).toContain(`Last-Event-ID: ${lastEventId}`);
    expect(firstPart.filter((e) => e.error !== undefined)).toHaveLength(1);

    await sleep(500);
    await server.start();
    const gatewayReadyMs = await waitForReady(gw, 20_000);

    // Resuming with Last-Event-ID: together, the two connections saw every stored event
    // after the snapshot exactly once, in order.
    const resumed = await subscribe(gw, watched.id, lastEventId);
    await within(resumed.done, 60_000, 'the resumed stream to end');
    const secondPart = streamed(resumed.events);
    expect(secondPart.every((e) => e.error === undefined)).toBe(true);
    const all = [...delivered.slice(1), ...secondPart];
    const stored = await storedEvents(probe, gw, watched.id, delivered[0]?.id as string);
    expect(all.map((e) => e.id)).toEqual(stored.map((e) => e.id));
    expect(all.map((e) => e.event)).toEqual(stored.map((e) => e.event));
    expect((all.at(-1)?.event as { statusUpdate?: { status: { state: string } } }).statusUpdate?.status.state, JSON.stringify(all.at(-1)?.event)).toBe('TASK_STATE_COMPLETED');

    expect(await turnAttempts(gw, watched.id)).toBeLessThanOrEqual(2);

    // The blocked call is retryable as its error said: the same message returns the same task.
    const retried = await within(rpcCall(gw, 'SendMessage', { message: blockedMessage }), 50_000, 'the retried SendMessage');
    expect(retried.status).toBe(200);
    expect(resultTask(retried).id).toBe(blockedTaskId);
    expect(resultTask(retried).status.state).toBe('TASK_STATE_COMPLETED');

    // The refused messages were never stored, not even after Redis came back.
    await sleep(500);
    expect((await probe.keys(`${gw.prefix}:{*}:task`)).sort()).toEqual([`${gw.prefix}:{${watched.id}}:task`, `${gw.prefix}:{${blockedTaskId}}:task`].sort());

    console.log(
      `[redis-outage] refused SendMessage after ${viaRpc.elapsedMs}/${viaRest.elapsedMs} ms (grace ${graceMs}), later requests after ${late.elapsedMs} ms; blocked call failed ${blockedAfterMs} ms and the stream ended ${streamEndedAfterMs} ms after the kill; gateway ready ${gatewayReadyMs} ms after the restart`,
    );
  }, 180_000);
});

describe('the event hub after a reconnect', () => {
  it('signals the gap only once its subscription is back, so a re-read cannot miss what is published next', async () => {
    const gw = gateways[0] ?? (await startGateway('redis-hub', {}));
    // A hub of our own whose connection does not re-subscribe by itself: only the hub's own
    // re-subscription (awaited before it signals the gap) brings live delivery back.
    const subscriber = new Redis(server.url, { autoResubscribe: false, connectionName: 'redis-restart-test-hub', retryStrategy: () => 50 });
    subscriber.on('error', () => undefined);
    const hub = new EventHub(subscriber, gw.gateway.store.keys);
    try {
      const clientId = String(await subscriber.client('ID'));
      await hub.start();
      const received: string[] = [];
      let gaps = 0;
      const gapSeen = new Promise<void>((resolve) => {
        hub.listen(
          'hub-task',
          (event) => received.push(event.id),
          () => {
            gaps += 1;
            resolve();
          },
        );
      });
      await probe.client('KILL', 'ID', clientId);
      await within(gapSeen, 10_000, 'the gap signal after a reconnect');
      // Published right after the gap signal (what a feed's buffer re-read would race with).
      await probe.publish(gw.gateway.store.keys.eventChannel('hub-task'), '1-1\n{"statusUpdate":{}}');
      await waitFor(() => (received.length > 0 ? true : undefined), 5_000, 'the event published after the gap');
      expect(received).toEqual(['1-1']);
      expect(gaps).toBe(1);
    } finally {
      subscriber.disconnect();
    }
  });
});
