// SendStreamingMessage load: `concurrency` workers each loop "open SSE stream, read it to the
// end" until the round's deadline. We time the first and the last SSE event of each stream
// relative to sending the request, and count streams that ended with TASK_STATE_COMPLETED.

import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { createParser } from 'eventsource-parser';
import { Agent, request } from 'undici';
import { percentileSorted } from '../stats.ts';
import { SSE_HEADERS, createIdSource, rpcBody, sendMessageParams } from './rpc.ts';

export interface StreamLoadOptions {
  url: string;
  concurrency: number;
  seconds: number;
  text?: string;
  /** Hard cap for a single stream, so a stuck server cannot stall the round. */
  streamTimeoutMs?: number;
  /** Awaited after the priming streams, just before the clock starts (e.g. to read CPU counters). */
  onStart?: () => Promise<void>;
}

export interface StreamLoadResult {
  completed: number;
  streamsPerSec: number;
  firstEventP50Ms: number;
  firstEventP99Ms: number;
  lastEventP50Ms: number;
  lastEventP99Ms: number;
  /** Transport errors, non-200 answers. */
  failed: number;
  /** Streams that ended without a COMPLETED event (e.g. a JSON-RPC error instead of SSE). */
  incomplete: number;
  avgEventsPerStream: number;
  durationSec: number;
}

interface StreamEnvelope {
  result?: {
    task?: { status?: { state?: string } };
    statusUpdate?: { status?: { state?: string } };
  };
  error?: unknown;
}

function stateOf(data: string): string | undefined {
  try {
    const env = JSON.parse(data) as StreamEnvelope;
    if (env.error) return 'ERROR';
    return env.result?.statusUpdate?.status?.state ?? env.result?.task?.status?.state;
  } catch {
    return undefined;
  }
}

export async function runStreamLoad(opts: StreamLoadOptions): Promise<StreamLoadResult> {
  const nextId = createIdSource();
  const text = opts.text ?? 'echo hello';
  const streamTimeoutMs = opts.streamTimeoutMs ?? 30_000;
  // One pooled socket per worker (plus slack) so streams never queue behind each other
  // inside the client, which would inflate time-to-first-event.
  const dispatcher = new Agent({ connections: opts.concurrency + 16, keepAliveTimeout: 30_000, pipelining: 1 });
  const firsts: number[] = [];
  const lasts: number[] = [];
  let failed = 0;
  let incomplete = 0;
  let events = 0;
  let rpcId = 0;

  let start = Number.NaN;
  let deadline = Number.NaN;
  let timing = false;

  async function oneStream(): Promise<void> {
    const body = rpcBody(++rpcId, 'SendStreamingMessage', sendMessageParams(nextId(), { text }));
    const t0 = performance.now();
    const res = await request(opts.url, {
      method: 'POST',
      headers: SSE_HEADERS,
      body,
      dispatcher,
      headersTimeout: streamTimeoutMs,
      bodyTimeout: streamTimeoutMs,
      signal: AbortSignal.timeout(streamTimeoutMs),
    });
    if (res.statusCode !== 200) {
      if (timing) failed += 1;
      await res.body.dump();
      return;
    }
    let first = Number.NaN;
    let last = Number.NaN;
    let count = 0;
    let finalState: string | undefined;
    const parser = createParser({
      onEvent: (ev) => {
        const now = performance.now() - t0;
        if (count === 0) first = now;
        last = now;
        count += 1;
        finalState = stateOf(ev.data) ?? finalState;
      },
    });
    const decoder = new TextDecoder();
    for await (const chunk of res.body) parser.feed(decoder.decode(chunk as Buffer, { stream: true }));
    if (!timing) return; // connection-priming stream, not measured
    events += count;
    if (count === 0 || finalState !== 'TASK_STATE_COMPLETED') {
      incomplete += 1;
      return;
    }
    firsts.push(first);
    lasts.push(last);
  }

  async function worker(): Promise<void> {
    while (performance.now() < deadline) {
      try {
        await oneStream();
      } catch {
        failed += 1;
        await sleep(20); // avoid a hot error loop if the server is refusing connections
      }
    }
  }

  try {
    // Prime one keep-alive connection per worker with an unmeasured stream, then start the clock
    // for everyone at once. Otherwise the first request of late-starting workers queues behind
    // the already-looping ones (Node's HTTP server serves established sockets first) and the
    // p99 measures connection ramp-up, not streaming.
    await Promise.all(Array.from({ length: opts.concurrency }, () => oneStream().catch(() => undefined)));
    await opts.onStart?.();
    timing = true;
    start = performance.now();
    deadline = start + opts.seconds * 1000;
    await Promise.all(Array.from({ length: opts.concurrency }, () => worker()));
  } finally {
    await dispatcher.close().catch(() => undefined);
  }
  const durationSec = (performance.now() - start) / 1000;
  firsts.sort((a, b) => a - b);
  lasts.sort((a, b) => a - b);
  const total = firsts.length + incomplete;
  return {
    completed: firsts.length,
    streamsPerSec: firsts.length / durationSec,
    firstEventP50Ms: percentileSorted(firsts, 50),
    firstEventP99Ms: percentileSorted(firsts, 99),
    lastEventP50Ms: percentileSorted(lasts, 50),
    lastEventP99Ms: percentileSorted(lasts, 99),
    failed,
    incomplete,
    avgEventsPerStream: total > 0 ? events / total : Number.NaN,
    durationSec,
  };
}
