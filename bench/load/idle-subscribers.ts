// Idle SSE subscribers: park one long task on the server, attach N SubscribeToTask streams to
// it, and charge the server's RSS growth to those streams. Uses raw node:http (one socket per
// stream) because it is the leanest client: 10k undici streams would cost the load generator
// far more memory than the thing we are measuring.

import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { createParser } from 'eventsource-parser';
import { callRpc, createIdSource, rpcBody, sendMessageParams, taskOf } from './rpc.ts';

export interface IdleSubscriberOptions {
  url: string;
  /** Samples the server child's resident memory (KB); injected so this module stays /proc-agnostic. */
  readRssKb: () => number;
  subscribers: number;
  batchSize?: number;
  warmup?: number;
  settleMs?: number;
  /** Max wait for one batch to receive its first events. */
  batchTimeoutMs?: number;
  /** Optional off-process memory probe (e.g. Redis used_memory), sampled next to RSS. */
  sampleExtraKb?: () => Promise<number>;
  log?: (msg: string) => void;
}

export interface IdleSubscriberResult {
  requested: number;
  established: number;
  failed: number;
  baselineRssKb: number;
  afterRssKb: number;
  kbPerSubscriber: number;
  extraBaselineKb?: number;
  extraAfterKb?: number;
  extraKbPerSubscriber?: number;
  /** Events received after the snapshot while "idle" (should be ~0; heartbeats are comments). */
  eventsWhileIdle: number;
  openSeconds: number;
  canceled: boolean;
}

interface Subscriber {
  /** Resolves true once the first SSE event (the Task snapshot) arrived, false on failure. */
  ready: Promise<boolean>;
  close(): void;
}

interface SubscriberCounters {
  eventsAfterFirst: number;
}

function openSubscriber(target: URL, taskId: string, agent: http.Agent, body: string, counters: SubscriberCounters): Subscriber {
  let req: http.ClientRequest | undefined;
  const ready = new Promise<boolean>((resolve) => {
    let settled = false;
    const settle = (ok: boolean): void => {
      if (!settled) {
        settled = true;
        resolve(ok);
      }
    };
    req = http.request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          accept: 'text/event-stream',
          'a2a-version': '1.0',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        if (res.statusCode !== 200 || !String(res.headers['content-type'] ?? '').includes('text/event-stream')) {
          res.resume();
          settle(false);
          return;
        }
        res.setEncoding('utf8');
        let events = 0;
        const parser = createParser({
          onEvent: (ev) => {
            events += 1;
            if (events === 1) {
              // The snapshot must be a JSON-RPC result naming our task, not an error event.
              settle(ev.data.includes('"result"') && ev.data.includes(taskId));
            } else {
              counters.eventsAfterFirst += 1;
            }
          },
        });
        res.on('data', (chunk: string) => parser.feed(chunk));
        res.on('end', () => settle(false));
        res.on('error', () => settle(false));
      },
    );
    req.on('error', () => settle(false));
    req.end(body);
  });
  return {
    ready,
    close: () => req?.destroy(),
  };
}

async function openMany(
  count: number,
  batchSize: number,
  batchTimeoutMs: number,
  target: URL,
  taskId: string,
  agent: http.Agent,
  counters: SubscriberCounters,
  nextRpcId: () => number,
): Promise<{ subs: Subscriber[]; established: number; failed: number }> {
  const subs: Subscriber[] = [];
  let established = 0;
  let failed = 0;
  for (let offset = 0; offset < count; offset += batchSize) {
    const batch: Subscriber[] = [];
    const n = Math.min(batchSize, count - offset);
    for (let i = 0; i < n; i++) {
      batch.push(openSubscriber(target, taskId, agent, rpcBody(nextRpcId(), 'SubscribeToTask', { id: taskId }), counters));
    }
    // Wait for the whole batch before opening the next one, so the listen backlog never
    // sees more than `batchSize` pending SYNs.
    // The timer is aborted once the batch settles so it cannot keep the process alive.
    const timer = new AbortController();
    const timeout = sleep(batchTimeoutMs, 'timeout' as const, { signal: timer.signal }).catch(() => 'timeout' as const);
    const results = await Promise.all(batch.map((s) => Promise.race([s.ready, timeout])));
    timer.abort();
    results.forEach((r, i) => {
      const sub = batch[i] as Subscriber;
      if (r === true) {
        established += 1;
        subs.push(sub);
      } else {
        failed += 1;
        sub.close();
      }
    });
  }
  return { subs, established, failed };
}

export async function runIdleSubscribers(opts: IdleSubscriberOptions): Promise<IdleSubscriberResult> {
  const log = opts.log ?? (() => undefined);
  const batchSize = opts.batchSize ?? 500;
  const warmup = opts.warmup ?? 100;
  const settleMs = opts.settleMs ?? 3000;
  const batchTimeoutMs = opts.batchTimeoutMs ?? 30_000;
  const target = new URL(opts.url);
  const nextId = createIdSource();
  let rpcId = 0;
  const nextRpcId = (): number => ++rpcId;
  const counters: SubscriberCounters = { eventsAfterFirst: 0 };
  // keepAlive + unlimited sockets: every stream gets its own socket and nothing is queued.
  const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });

  const started = await callRpc(opts.url, 'SendMessage', sendMessageParams(nextId(), { text: 'long 100000', returnImmediately: true }));
  const taskId = taskOf(started).id;
  log(`long task ${taskId} started`);

  let subs: Subscriber[] = [];
  let result: IdleSubscriberResult | undefined;
  try {
    // Warm-up: first-use costs (JIT, lazily created pools/buffers) must land in the baseline.
    const warm = await openMany(warmup, batchSize, batchTimeoutMs, target, taskId, agent, counters, nextRpcId);
    if (warm.established === 0) throw new Error(`warm-up: no subscriber received a first event (${warm.failed} failed)`);
    for (const s of warm.subs) s.close();
    await sleep(settleMs);
    counters.eventsAfterFirst = 0;

    const baselineRssKb = opts.readRssKb();
    const extraBaselineKb = opts.sampleExtraKb ? await opts.sampleExtraKb() : undefined;

    const t0 = Date.now();
    const opened = await openMany(opts.subscribers, batchSize, batchTimeoutMs, target, taskId, agent, counters, nextRpcId);
    subs = opened.subs;
    const openSeconds = (Date.now() - t0) / 1000;
    log(`${opened.established}/${opts.subscribers} subscribers established in ${openSeconds.toFixed(1)} s (${opened.failed} failed)`);

    await sleep(settleMs);
    const afterRssKb = opts.readRssKb();
    const extraAfterKb = opts.sampleExtraKb ? await opts.sampleExtraKb() : undefined;
    const denom = opened.established > 0 ? opened.established : Number.NaN;

    result = {
      requested: opts.subscribers,
      established: opened.established,
      failed: opened.failed,
      baselineRssKb,
      afterRssKb,
      kbPerSubscriber: (afterRssKb - baselineRssKb) / denom,
      eventsWhileIdle: counters.eventsAfterFirst,
      openSeconds,
      canceled: false,
    };
    if (extraBaselineKb !== undefined && extraAfterKb !== undefined) {
      result.extraBaselineKb = extraBaselineKb;
      result.extraAfterKb = extraAfterKb;
      result.extraKbPerSubscriber = (extraAfterKb - extraBaselineKb) / denom;
    }
  } finally {
    for (const s of subs) s.close();
    subs = [];
    agent.destroy();
    let canceled = false;
    try {
      await callRpc(opts.url, 'CancelTask', { id: taskId }, { timeoutMs: 30_000 });
      canceled = true;
    } catch (err) {
      log(`CancelTask failed: ${(err as Error).message}`);
    }
    log(`long task ${taskId} ${canceled ? 'canceled' : 'NOT canceled'}`);
    if (result) result.canceled = canceled;
  }
  if (!result) throw new Error('idle subscriber run produced no result'); // unreachable: try either assigns or throws
  return result;
}
