// Push delivery load (gateway only; the SDK server delivers push notifications in process with
// no queue, so there is nothing comparable). Tasks are SendMessage calls with returnImmediately
// whose configuration carries a webhook config pointing at a receiver in this process.
//   1. Throughput: `senders` workers send tasks as fast as they can for `seconds`; the phase
//      ends when every event of every task reached the receiver. deliveries/s = deliveries over
//      first send to last delivery.
//   2. Latency: tasks sent at half the rate phase 1 delivered, for `seconds`, so the figure is
//      the delivery path's own, not a backlog's: from the event's append to Redis (its stream id
//      holds the time, and the webhook-id ends with it) to the receiver reading the request.
// Every task's deliveries are checked in both phases: one per event of its stream, in stream
// order, each under its own webhook-id; anything else is a failure. (A repeated id is a retry
// after a lost answer: allowed, counted.)
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { Agent, request } from 'undici';
import { percentileSorted } from '../stats.ts';
import { RPC_HEADERS, createIdSource, rpcBody } from './rpc.ts';

export interface PushLoadOptions {
  url: string;
  senders: number;
  seconds: number;
  /** Demo text of each task (`echo …`: task, working, artifact, completed). */
  text?: string;
  /** How long to wait for the backlog after the senders stop. */
  drainTimeoutMs?: number;
  /** Where the gateway keeps its tasks: each task's event count is read from its stream. */
  redisUrl: string;
  keyPrefix: string;
}

export interface PushLoadResult {
  tasks: number;
  deliveries: number;
  deliveriesPerSec: number;
  /** Event appended → receiver got it, at half the throughput's rate. */
  latencyP50Ms: number;
  latencyP99Ms: number;
  latencyMaxMs: number;
  /** Tasks sent per second in the latency phase. */
  latencyPhaseTasksPerSec: number;
  /** Tasks whose deliveries were not exactly their events, in order, once each. */
  failed: number;
  failures: string[];
  duplicates: number;
  durationSec: number;
}

interface Receiver {
  hook: string;
  /** Webhook ids per task, first arrival only, in arrival order. */
  received: Map<string, string[]>;
  latencies: number[];
  duplicates: number;
  lastDeliveryMs: number;
  close(): Promise<void>;
}

const eventPlace = (webhookId: string): [number, number] => {
  const [, ms = 'NaN', seq = '0'] = /\.(\d+)-(\d+)$/.exec(webhookId) ?? [];
  return [Number(ms), Number(seq)];
};
const before = (a: [number, number], b: [number, number]): boolean => a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);

async function startReceiver(): Promise<Receiver> {
  const seen = new Set<string>();
  const state = { received: new Map<string, string[]>(), latencies: [] as number[], duplicates: 0, lastDeliveryMs: 0 };
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = String(req.headers['webhook-id'] ?? '');
      if (seen.has(id)) state.duplicates += 1;
      else {
        seen.add(id);
        state.latencies.push(Date.now() - eventPlace(id)[0]);
        const taskId = id.split('.')[0] ?? '';
        const list = state.received.get(taskId) ?? [];
        list.push(id);
        state.received.set(taskId, list);
      }
      state.lastDeliveryMs = performance.now();
      res.writeHead(204);
      res.end();
    });
  });
  const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
  return Object.assign(state, {
    hook: `http://127.0.0.1:${port}/hook`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }) as Receiver;
}

/** Waits until every task finished and all its events arrived; returns each task's event count. */
async function drain(redis: Redis, keyPrefix: string, tasks: string[], receiver: Receiver, timeoutMs: number): Promise<Map<string, number>> {
  const expected = new Map<string, number>();
  const until = performance.now() + timeoutMs;
  for (;;) {
    const open = tasks.filter((t) => expected.get(t) === undefined || (receiver.received.get(t)?.length ?? 0) < (expected.get(t) as number));
    if (open.length === 0 || performance.now() > until) return expected;
    const pipeline = redis.pipeline();
    for (const t of open) pipeline.hget(`${keyPrefix}:{${t}}:task`, 'finishedAtMs').xlen(`${keyPrefix}:{${t}}:events`);
    const replies = (await pipeline.exec()) ?? [];
    open.forEach((t, i) => {
      if (replies[2 * i]?.[1] !== null && replies[2 * i]?.[1] !== undefined) expected.set(t, Number(replies[2 * i + 1]?.[1]));
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function check(tasks: string[], expected: Map<string, number>, receiver: Receiver): string[] {
  const failures: string[] = [];
  for (const taskId of tasks) {
    const ids = receiver.received.get(taskId) ?? [];
    const ordered = ids.every((id, i) => i === 0 || before(eventPlace(ids[i - 1] as string), eventPlace(id)));
    const want = expected.get(taskId);
    if (want === undefined || ids.length !== want || !ordered) failures.push(`${taskId}: ${ids.length}/${want ?? '?'} deliveries${ordered ? '' : ', out of order'}`);
  }
  return failures;
}

export async function runPushLoad(options: PushLoadOptions): Promise<PushLoadResult> {
  const dispatcher = new Agent({ connections: options.senders });
  const redis = new Redis(options.redisUrl);
  const nextId = createIdSource();
  const drainTimeoutMs = options.drainTimeoutMs ?? 120_000;
  const send = async (hook: string, tasks: string[]): Promise<void> => {
    const body = rpcBody(nextId(), 'SendMessage', {
      message: { messageId: nextId(), role: 'ROLE_USER', parts: [{ text: options.text ?? 'echo push' }] },
      configuration: { returnImmediately: true, taskPushNotificationConfig: { url: hook } },
    });
    const response = await request(options.url, { method: 'POST', headers: RPC_HEADERS, body, dispatcher });
    const id = ((await response.body.json()) as { result?: { task?: { id?: string } } }).result?.task?.id;
    if (id !== undefined) tasks.push(id);
  };
  try {
    // 1. Throughput.
    const saturated = await startReceiver();
    const tasks: string[] = [];
    const startedMs = performance.now();
    const deadline = startedMs + options.seconds * 1000;
    await Promise.all(
      Array.from({ length: options.senders }, async () => {
        while (performance.now() < deadline) await send(saturated.hook, tasks);
      }),
    );
    const expected = await drain(redis, options.keyPrefix, tasks, saturated, drainTimeoutMs);
    await saturated.close();
    const durationSec = ((saturated.lastDeliveryMs || performance.now()) - startedMs) / 1000;
    const deliveries = saturated.latencies.length;
    const deliveriesPerSec = deliveries / durationSec;

    // 2. Latency, paced at half of what phase 1 delivered.
    const paced = await startReceiver();
    const pacedTasks: string[] = [];
    const eventsPerTask = deliveries / Math.max(1, tasks.length);
    const tasksPerSec = Math.max(1, deliveriesPerSec / Math.max(1, eventsPerTask) / 2);
    const inFlight: Promise<void>[] = [];
    const pacedStart = performance.now();
    for (let n = 0; performance.now() - pacedStart < options.seconds * 1000; n += 1) {
      const due = pacedStart + (n * 1000) / tasksPerSec;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      inFlight.push(send(paced.hook, pacedTasks));
    }
    await Promise.all(inFlight);
    const pacedExpected = await drain(redis, options.keyPrefix, pacedTasks, paced, drainTimeoutMs);
    await paced.close();
    const sorted = paced.latencies.sort((a, b) => a - b);
    const failures = [...check(tasks, expected, saturated), ...check(pacedTasks, pacedExpected, paced)];
    return {
      tasks: tasks.length,
      deliveries,
      deliveriesPerSec,
      latencyP50Ms: percentileSorted(sorted, 50),
      latencyP99Ms: percentileSorted(sorted, 99),
      latencyMaxMs: sorted.at(-1) ?? Number.NaN,
      latencyPhaseTasksPerSec: tasksPerSec,
      failed: failures.length,
      failures: failures.slice(0, 100),
      duplicates: saturated.duplicates + paced.duplicates,
      durationSec,
    };
  } finally {
    redis.disconnect();
    await dispatcher.close();
  }
}
