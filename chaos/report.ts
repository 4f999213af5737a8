// What the chaos run proves, read back from Redis and the ledger after the faults stopped:
// every task id a client got back is stored and terminal (lost = 0), no charge hit the ledger
// twice (duplicates = 0), and every SSE stream received exactly the replay buffer's events
// (mismatched = 0). Everything else in the table says how hard the run actually hit the system.
import type { Redis } from 'ioredis';
import { RedisKeys } from '../src/store/keys.ts';
import { analyzeLedger, readLedger } from './ledger.ts';
import type { LoadResult, SubmittedTask } from './load.ts';
import { compareWithBuffer, type StreamRecord } from './streams.ts';

const TERMINAL = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED']);

export interface FaultCounts {
  workerKills: number;
  gatewayKills: number;
  redisRestarts: number;
}

export interface ChaosResult {
  seed: number;
  tasksRequested: number;
  /** Task ids returned to the client (load tasks only). */
  submitted: number;
  completed: number;
  failed: number;
  /** Failure reasons (task ids elided) → how many tasks failed with it. */
  failedReasons: Record<string, number>;
  /** Canceled or rejected tasks (none expected: nobody cancels, and the ledger is configured). */
  otherTerminal: Record<string, number>;
  /** Returned ids whose task is missing or not terminal. Must be 0. */
  lost: number;
  lostTasks: { taskId: string; why: string }[];
  /** Tasks stored for which no client ever received an id (e.g. a reply lost with its gateway). */
  orphans: number;
  /** Submissions given up on / refused outright. */
  abandoned: number;
  refused: { messageId: string; answer: string }[];
  retries: Record<string, number>;
  slowestRequestMs: number;
  ledgerLines: number;
  /** Ledger keys that appear more than once. Must be 0. */
  duplicates: number;
  duplicateKeys: string[];
  /** One charge made under two step names (charge-i and charge-i-again both in the ledger): a silent repeat. */
  doubleCharges: number;
  doubleChargeKeys: string[];
  /** Completed transfers whose ledger lacks one of their charges. */
  missingCharges: number;
  /** Steps found started-without-result and handed to a later attempt (journal state 'unknown'). */
  unknownSteps: number;
  /** ... of which the ledger showed as charged (not repeated) / as never charged (charged again under a new name). */
  reconciledCharged: number;
  recharged: number;
  /**
   * Unknown steps handed back to the very attempt that started them. Only a re-sent start
   * command (the client's reply was lost with a crashed Redis) can produce that: the step
   * never ran, yet its own attempt is told its outcome is unknown.
   */
  selfUnknownSteps: number;
  selfUnknownKeys: string[];
  /** The same event stored twice in one task's replay buffer. */
  bufferDuplicates: number;
  bufferDuplicateTasks: string[];
  streamsWatched: number;
  streamsChecked: number;
  streamsSkipped: number;
  streamsResumed: number;
  resumes: number;
  resumesElsewhere: number;
  /** Error frames (no id) gateways sent before ending a stream, e.g. while Redis was unreachable. */
  streamErrorFrames: number;
  /** Streams whose received (id, data) sequence differs from XRANGE. Must be 0. */
  mismatched: number;
  mismatches: { taskId: string; problem: string }[];
  anchors: number;
  anchorsCompleted: number;
  faults: FaultCounts;
  unexpectedExits: { name: string; how: string; logFile: string }[];
  durationMs: number;
  ok: boolean;
}

interface TaskFacts {
  state: string | undefined;
  reason: string;
  artifacts: string;
  steps: Record<string, string>;
  buffer: { id: string; data: string }[];
}

async function readFacts(redis: Redis, keys: RedisKeys, taskId: string): Promise<TaskFacts> {
  const k = keys.task(taskId);
  const [hash, steps, events] = await Promise.all([
    redis.hmget(k.task, 'state', 'status', 'artifacts'),
    redis.hgetall(k.steps),
    redis.xrange(k.events, '-', '+'),
  ]);
  const [state, status, artifacts] = hash;
  let reason = '';
  try {
    const parsed = JSON.parse(status ?? '{}') as { message?: { parts?: { text?: string }[] } };
    reason = parsed.message?.parts?.map((p) => p.text ?? '').join(' ') ?? '';
  } catch {
    reason = '(unreadable status)';
  }
  return {
    state: state ?? undefined,
    reason: reason.split(taskId).join('<task>').slice(0, 160),
    artifacts: artifacts ?? '[]',
    steps,
    buffer: events.map(([id, fields]) => ({ id, data: fields[1] ?? '' })),
  };
}

/** Sums of the transfer-report data parts (what each completed transfer says it reconciled). */
function reportSums(artifactsJson: string): { reconciledCharged: number; recharged: number } {
  let reconciledCharged = 0;
  let recharged = 0;
  try {
    const artifacts = JSON.parse(artifactsJson) as { artifactId: string; parts: { data?: Record<string, unknown> }[] }[];
    for (const artifact of artifacts) {
      if (artifact.artifactId !== 'transfer-report') continue;
      for (const part of artifact.parts) {
        if (typeof part.data?.['reconciledCharged'] === 'number') reconciledCharged += part.data['reconciledCharged'];
        if (typeof part.data?.['recharged'] === 'number') recharged += part.data['recharged'];
      }
    }
  } catch {
    // an unreadable artifact list is reported through missingCharges of a completed task
  }
  return { reconciledCharged, recharged };
}

async function storedTaskIds(redis: Redis, prefix: string): Promise<string[]> {
  const ids: string[] = [];
  let cursor = '0';
  // Bounded: the run's own Redis holds only this run's keys; 10 000 pages is far beyond it.
  for (let page = 0; page < 10_000; page++) {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}:{*}:task`, 'COUNT', 1000);
    for (const key of batch) {
      const match = /\{(.+)\}:task$/.exec(key);
      if (match?.[1] !== undefined) ids.push(match[1]);
    }
    cursor = next;
    if (cursor === '0') break;
  }
  return ids;
}

export async function buildReport(input: {
  redis: Redis;
  prefix: string;
  seed: number;
  tasksRequested: number;
  load: LoadResult;
  anchors: string[];
  streams: StreamRecord[];
  ledgerFile: string;
  faults: FaultCounts;
  unexpectedExits: { name: string; how: string; logFile: string }[];
  durationMs: number;
}): Promise<ChaosResult> {
  const keys = new RedisKeys(input.prefix);
  const tasks: SubmittedTask[] = input.load.submitted;
  const facts = new Map<string, TaskFacts>();
  for (const taskId of [...tasks.map((t) => t.taskId), ...input.anchors, ...input.streams.map((s) => s.taskId)]) {
    if (!facts.has(taskId)) facts.set(taskId, await readFacts(input.redis, keys, taskId));
  }

  const result: ChaosResult = {
    seed: input.seed,
    tasksRequested: input.tasksRequested,
    submitted: tasks.length,
    completed: 0,
    failed: 0,
    failedReasons: {},
    otherTerminal: {},
    lost: 0,
    lostTasks: [],
    orphans: 0,
    abandoned: input.load.abandoned.length,
    refused: input.load.refused,
    retries: input.load.retriesByCause,
    slowestRequestMs: input.load.slowestRequestMs,
    ledgerLines: 0,
    duplicates: 0,
    duplicateKeys: [],
    doubleCharges: 0,
    doubleChargeKeys: [],
    missingCharges: 0,
    unknownSteps: 0,
    reconciledCharged: 0,
    recharged: 0,
    selfUnknownSteps: 0,
    selfUnknownKeys: [],
    bufferDuplicates: 0,
    bufferDuplicateTasks: [],
    streamsWatched: input.streams.length,
    streamsChecked: 0,
    streamsSkipped: 0,
    streamsResumed: 0,
    resumes: 0,
    resumesElsewhere: 0,
    streamErrorFrames: 0,
    mismatched: 0,
    mismatches: [],
    anchors: input.anchors.length,
    anchorsCompleted: 0,
    faults: input.faults,
    unexpectedExits: input.unexpectedExits,
    durationMs: input.durationMs,
    ok: false,
  };

  const ledger = analyzeLedger(readLedger(input.ledgerFile));
  result.ledgerLines = ledger.lines;
  result.duplicates = ledger.duplicates;
  result.duplicateKeys = ledger.duplicateKeys;
  result.doubleCharges = ledger.doubleCharges;
  result.doubleChargeKeys = ledger.doubleChargeKeys;
  const byCharge = ledger.charges;

  for (const task of tasks) {
    const fact = facts.get(task.taskId) as TaskFacts;
    if (fact.state === undefined) {
      result.lost += 1;
      result.lostTasks.push({ taskId: task.taskId, why: 'missing from Redis' });
      continue;
    }
    if (!TERMINAL.has(fact.state)) {
      result.lost += 1;
      result.lostTasks.push({ taskId: task.taskId, why: `still ${fact.state}` });
      continue;
    }
    if (fact.state === 'TASK_STATE_COMPLETED') {
      result.completed += 1;
      for (let i = 1; i <= task.charges; i++) {
        if (!byCharge.has(`${task.taskId}:1:charge-${i}`)) result.missingCharges += 1;
      }
    } else if (fact.state === 'TASK_STATE_FAILED') {
      result.failed += 1;
      result.failedReasons[fact.reason] = (result.failedReasons[fact.reason] ?? 0) + 1;
    } else {
      const label = `${fact.state}: ${fact.reason}`;
      result.otherTerminal[label] = (result.otherTerminal[label] ?? 0) + 1;
    }
    for (const json of Object.values(fact.steps)) {
      const step = JSON.parse(json) as { state?: string; attempt?: number; surfacedToAttempt?: number; idempotencyKey?: string };
      if (step.state !== 'unknown') continue;
      result.unknownSteps += 1;
      if (step.surfacedToAttempt === step.attempt) {
        result.selfUnknownSteps += 1;
        result.selfUnknownKeys.push(`${step.idempotencyKey ?? '?'} (started and surfaced in attempt ${String(step.attempt)})`);
      }
    }
    const sums = reportSums(fact.artifacts);
    result.reconciledCharged += sums.reconciledCharged;
    result.recharged += sums.recharged;
  }
  for (const anchor of input.anchors) {
    const fact = facts.get(anchor) as TaskFacts;
    if (fact.state === 'TASK_STATE_COMPLETED') result.anchorsCompleted += 1;
    else {
      result.lost += fact.state === undefined || !TERMINAL.has(fact.state) ? 1 : 0;
      result.lostTasks.push({ taskId: anchor, why: `anchor is ${fact.state ?? 'missing'}` });
    }
  }
  for (const [taskId, fact] of facts) {
    const payloads = new Map<string, string>();
    for (const event of fact.buffer) {
      const first = payloads.get(event.data);
      if (first !== undefined) {
        result.bufferDuplicates += 1;
        result.bufferDuplicateTasks.push(`${taskId}: ${first} and ${event.id} carry the same event ${event.data.slice(0, 200)}`);
      }
      payloads.set(event.data, event.id);
    }
  }

  const known = new Set([...tasks.map((t) => t.taskId), ...input.anchors]);
  result.orphans = (await storedTaskIds(input.redis, input.prefix)).filter((id) => !known.has(id)).length;

  for (const stream of input.streams) {
    if (stream.outcome === 'skipped') {
      result.streamsSkipped += 1;
      continue;
    }
    result.streamsChecked += 1;
    if (stream.resumes > 0) result.streamsResumed += 1;
    result.resumes += stream.resumes;
    result.resumesElsewhere += stream.resumesElsewhere;
    result.streamErrorFrames += stream.errorFrames.length;
    const fact = facts.get(stream.taskId) as TaskFacts;
    let problem = compareWithBuffer(stream, fact.buffer);
    if (problem === undefined && stream.outcome !== 'terminal') problem = `stream never saw its terminal event (${stream.note ?? stream.outcome})`;
    if (problem !== undefined) {
      result.mismatched += 1;
      result.mismatches.push({ taskId: stream.taskId, problem: `${stream.kind}: ${problem}` });
    }
  }

  // Beyond the three numbers the issue names, a charge made twice under two names and an event
  // stored twice are the same promises broken less visibly; they fail the run too.
  result.ok =
    result.lost === 0 &&
    result.duplicates === 0 &&
    result.doubleCharges === 0 &&
    result.mismatched === 0 &&
    result.bufferDuplicates === 0 &&
    result.submitted > 0;
  return result;
}
