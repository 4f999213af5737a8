// Fan-out load (gateway only): `coordinators` workers each loop "blocking SendMessage to the demo
// `fanout` skill, wait for the answer" until the round's deadline, like the stream load's
// workers. Every coordinator delegates `assignments` echo children to sub-agent tasks (at most
// maxParallel at a time, no reviewer), so the gateway runs coordinators × (assignments + the
// coordinator's parked and resumed turns) through its queue. Calls in flight at the deadline
// are finished and counted; the round's duration runs to the last answer.
//
// A coordinator counts only if its blocking call came back TASK_STATE_COMPLETED and the data
// part of its `combined` artifact says `completed` == assignments (and nothing failed or was
// canceled); anything else is recorded as a failure with its reason.
//
// The @a2a-js/sdk server has no delegation, so there is nothing to compare against.

import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { percentileSorted } from '../stats.ts';
import { RPC_HEADERS, createIdSource, rpcBody } from './rpc.ts';

export interface FanoutLoadOptions {
  url: string;
  coordinators: number;
  assignments: number;
  maxParallel?: number;
  /** The children's demo skill text; `echo …` completes at once. */
  childText?: string;
  /** Length of the round; coordinators still running at the end are waited for. */
  seconds: number;
  /** Hard cap for one coordinator's blocking call. */
  timeoutMs?: number;
}

export interface FanoutFailure {
  /** Which worker (0 .. coordinators-1) sent the coordinator. */
  worker: number;
  reason: string;
}

export interface FanoutLoadResult {
  /** Concurrent coordinators (workers). */
  coordinators: number;
  assignmentsPerCoordinator: number;
  /** Coordinators sent while the clock ran. */
  sent: number;
  /** Coordinators that ended COMPLETED with every assignment completed. */
  completed: number;
  /** Assignments of those coordinators (completed × assignments). */
  assignmentsCompleted: number;
  coordinatorsPerSec: number;
  assignmentsPerSec: number;
  /** Latency of the completed coordinators' blocking calls (send to answer). */
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Coordinators that did not count, priming ones included. */
  failed: number;
  /** The first MAX_KEPT_FAILURES of them, with why (priming failures are prefixed "priming: "). */
  failures: FanoutFailure[];
  durationSec: number;
}

/** A broken server fails every call at once; a hundred reasons say as much as ten thousand. */
const MAX_KEPT_FAILURES = 100;

interface CombinedData {
  completed?: unknown;
  failed?: unknown;
  canceled?: unknown;
}

interface TaskShape {
  id?: string;
  status?: { state?: string; message?: { parts?: Array<{ text?: string }> } };
  artifacts?: Array<{ artifactId?: string; name?: string; parts?: Array<{ data?: unknown }> }>;
}

/** The reason a coordinator does not count, or undefined when it completed every assignment. */
function checkCoordinator(body: string, assignments: number): string | undefined {
  let envelope: { result?: { task?: TaskShape } & TaskShape; error?: { code?: number; message?: string } };
  try {
    envelope = JSON.parse(body) as typeof envelope;
  } catch {
    return `non-JSON body: ${body.slice(0, 200)}`;
  }
  if (envelope.error) return `JSON-RPC error ${envelope.error.code ?? ''}: ${envelope.error.message ?? ''}`.trim();
  const task = envelope.result?.task ?? envelope.result;
  if (!task) return 'result without a task';
  const state = task.status?.state ?? '(no state)';
  const statusText = (task.status?.message?.parts ?? []).map((p) => p.text ?? '').join('');
  if (state !== 'TASK_STATE_COMPLETED') return `task ${task.id ?? '?'} ended ${state}${statusText ? `: ${statusText}` : ''}`;
  const combined = task.artifacts?.find((a) => a.artifactId === 'combined' || a.name === 'combined');
  if (!combined) return `task ${task.id ?? '?'} completed without a "combined" artifact`;
  const data = combined.parts?.find((p) => p.data !== undefined && p.data !== null && typeof p.data === 'object')?.data as CombinedData | undefined;
  if (!data) return `task ${task.id ?? '?'}: "combined" artifact has no data part`;
  if (data.completed !== assignments || (data.failed ?? 0) !== 0 || (data.canceled ?? 0) !== 0) {
    return (
      `task ${task.id ?? '?'}: completed ${String(data.completed)} of ${assignments} ` +
      `(failed ${String(data.failed)}, canceled ${String(data.canceled)})`
    );
  }
  return undefined;
}

export async function runFanoutLoad(opts: FanoutLoadOptions): Promise<FanoutLoadResult> {
  const nextId = createIdSource();
  const maxParallel = opts.maxParallel ?? 4;
  const childText = opts.childText ?? 'echo x';
  const timeoutMs = opts.timeoutMs ?? 120_000;
  // One socket per worker: a blocking call holds its connection until its fan-out is over.
  const dispatcher = new Agent({ connections: opts.coordinators + 4, keepAliveTimeout: 30_000, pipelining: 1 });
  const assignmentList = Array.from({ length: opts.assignments }, () => ({ role: 'specialist', text: childText }));

  const latencies: number[] = [];
  const failures: FanoutFailure[] = [];
  let failed = 0;
  let timedFailed = 0;
  let rpcId = 0;
  let timing = false;
  let deadline = Number.NaN;

  /** One coordinator; returns false on a transport error so the worker can back off. */
  async function oneCoordinator(worker: number): Promise<boolean> {
    const body = rpcBody(++rpcId, 'SendMessage', {
      message: {
        messageId: nextId(),
        role: 'ROLE_USER',
        parts: [{ text: 'fanout' }, { data: { assignments: assignmentList, maxParallel, review: false }, mediaType: 'application/json' }],
      },
    });
    const t0 = performance.now();
    let reason: string | undefined;
    try {
      const res = await request(opts.url, {
        method: 'POST',
        headers: RPC_HEADERS,
        body,
        dispatcher,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        signal: AbortSignal.timeout(timeoutMs),
      });
      const text = await res.body.text();
      reason = res.statusCode === 200 ? checkCoordinator(text, opts.assignments) : `HTTP ${res.statusCode}: ${text.slice(0, 200)}`;
    } catch (err) {
      reason = `transport: ${(err as Error).message}`;
    }
    const elapsed = performance.now() - t0;
    // Priming calls (before the clock starts) are not counted, but their failures still say
    // something is wrong, so they are kept.
    if (reason !== undefined) {
      failed += 1;
      if (timing) timedFailed += 1;
      if (failures.length < MAX_KEPT_FAILURES) failures.push({ worker, reason: timing ? reason : `priming: ${reason}` });
    } else if (timing) {
      latencies.push(elapsed);
    }
    return reason === undefined || !reason.startsWith('transport');
  }

  async function worker(index: number): Promise<void> {
    while (performance.now() < deadline) {
      if (!(await oneCoordinator(index))) await sleep(20); // no hot loop against a refusing server
    }
  }

  let start = Number.NaN;
  try {
    // One unmeasured coordinator per worker first: opens every keep-alive connection and warms
    // the delegation path, so the round measures fan-out, not connection ramp-up.
    await Promise.all(Array.from({ length: opts.coordinators }, (_, i) => oneCoordinator(i)));
    timing = true;
    start = performance.now();
    deadline = start + opts.seconds * 1000;
    await Promise.all(Array.from({ length: opts.coordinators }, (_, i) => worker(i)));
  } finally {
    await dispatcher.close().catch(() => undefined);
  }
  const durationSec = (performance.now() - start) / 1000;

  latencies.sort((a, b) => a - b);
  const completed = latencies.length;
  return {
    coordinators: opts.coordinators,
    assignmentsPerCoordinator: opts.assignments,
    sent: completed + timedFailed,
    completed,
    assignmentsCompleted: completed * opts.assignments,
    coordinatorsPerSec: durationSec > 0 ? completed / durationSec : Number.NaN,
    assignmentsPerSec: durationSec > 0 ? (completed * opts.assignments) / durationSec : Number.NaN,
    p50Ms: percentileSorted(latencies, 50),
    p99Ms: percentileSorted(latencies, 99),
    maxMs: completed > 0 ? (latencies[completed - 1] as number) : Number.NaN,
    failed,
    failures,
    durationSec,
  };
}
