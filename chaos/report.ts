// What the chaos run proves, read back from Redis and the ledger after the faults stopped:
// every task id a client got back is stored and terminal (lost = 0), no charge hit the ledger
// twice (duplicates = 0), and every SSE stream received exactly the replay buffer's events
// (mismatched = 0). Coordinators: every one whose id came back is terminal (lost coordinators
// = 0) and COMPLETED with all its assignments, or ended with a reason; their child transfers
// are held to the same ledger checks. Push deliveries are judged in push-report.ts. Everything else in the table says how hard the run
// actually hit the system.
import type { RedisClient } from '../src/redis/connection.ts';
import { scanKeys } from '../src/redis/cross-slot.ts';
import { RedisKeys } from '../src/store/keys.ts';
import { judgeCoordinator, type AssignmentListing } from './coordinators.ts';
import { analyzeLedger, readLedger } from './ledger.ts';
import type { BackendLoad, BackendReport } from './backends.ts';
import type { LoadResult, SubmittedTask } from './load.ts';
import type { ChaosPushResult } from './push-report.ts';
import type { GenerationReport } from './generations.ts';
import { compareWithBuffer, type StreamRecord } from './streams.ts';

const TERMINAL = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED']);

export const SINGLE_REDIS_SETUP = 'one redis-server, appendonly yes, appendfsync always';

export interface FaultCounts {
  workerKills: number;
  gatewayKills: number;
  redisRestarts: number;
  /** Cluster mode: masters SIGKILLed (each failed over, then restarted as a replica). */
  masterKills: number;
  /** Cluster mode: the longest wait from a master's kill until its replica served its slots. */
  slowestFailoverMs: number;
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
  /** Fanout coordinators asked for / whose id came back. */
  coordinatorsRequested: number;
  coordinatorsSubmitted: number;
  /** COMPLETED with every assignment completed in the combined artifact. */
  coordinatorsCompleted: number;
  /** Ended otherwise (including the unexplained ones below). */
  coordinatorsFailed: number;
  /** Reason → how many coordinators ended with it. */
  coordinatorFailedReasons: Record<string, number>;
  /** Ended otherwise without a reason, or completed without saying how. Must be 0. */
  coordinatorsUnexplained: number;
  coordinatorsUnexplainedList: { taskId: string; why: string }[];
  /** Returned coordinator ids whose task is missing or not terminal. Must be 0. */
  lostCoordinators: number;
  lostCoordinatorTasks: { taskId: string; why: string }[];
  /** Child tasks listed by the coordinators / completed. */
  assignmentsListed: number;
  assignmentsCompleted: number;
  /** Child failure reasons → how many. */
  assignmentFailedReasons: Record<string, number>;
  /** Listed child tasks missing or not terminal. Must be 0. */
  lostChildren: number;
  lostChildTasks: { taskId: string; why: string }[];
  /** Ledger lines charged by listed child tasks. */
  childLedgerLines: number;
  /** A listing that failed, or disagrees with the combined artifact / the children. Must be 0. */
  coordinatorProblems: { taskId: string; problem: string }[];
  /** Stored tasks whose parent is one of our coordinators but that it does not list. */
  strayChildren: number;
  /** Ledger lines charged by such stray children: an assignment run twice. Must be 0. */
  strayChildCharges: number;
  strayChildTasks: string[];
  faults: FaultCounts;
  unexpectedExits: { name: string; how: string; logFile: string }[];
  durationMs: number;
  /** Remote and model turns, when the run had backends. */
  backends: BackendReport | undefined;
  /** Push deliveries to the harness's receivers, when the run had push. */
  push: ChaosPushResult | undefined;
  /** Task generations sampled during the run, judged (chaos/generations.ts); undefined when not sampled. */
  generations: GenerationReport | undefined;
  /** Which Redis the run used: the single server, or the Cluster and its redisWaitReplicas. */
  redisSetup: string;
  ok: boolean;
}

interface TaskFacts {
  state: string | undefined;
  reason: string;
  artifacts: string;
  steps: Record<string, string>;
  buffer: { id: string; data: string }[];
  /** The newest event the replay bound dropped ('' = none): streams are checked from after it. */
  trimmedThroughId: string;
}

async function readFacts(redis: RedisClient, keys: RedisKeys, taskId: string): Promise<TaskFacts> {
  const k = keys.task(taskId);
  const [hash, steps, events] = await Promise.all([
    redis.hmget(k.task, 'state', 'status', 'artifacts', 'eventsTrimmedThrough'),
    redis.hgetall(k.steps),
    redis.xrange(k.events, '-', '+'),
  ]);
  const [state, status, artifacts, trimmedThroughId] = hash;
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
    trimmedThroughId: trimmedThroughId ?? '',
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

async function storedTaskIds(redis: RedisClient, prefix: string): Promise<string[]> {
  const ids: string[] = [];
  // The run's own Redis holds only this run's keys (on a Cluster: every master is scanned).
  for await (const batch of scanKeys(redis, `${prefix}:{*}:task`, 1000)) {
    for (const key of batch) {
      const match = /\{(.+)\}:task$/.exec(key);
      if (match?.[1] !== undefined) ids.push(match[1]);
    }
  }
  return ids;
}

export async function buildReport(input: {
  redis: RedisClient;
  prefix: string;
  seed: number;
  tasksRequested: number;
  load: LoadResult;
  anchors: string[];
  /** How many coordinators were asked for, and each submitted coordinator's assignment listing. */
  coordinatorsRequested?: number;
  assignmentListings?: Map<string, AssignmentListing>;
  streams: StreamRecord[];
  ledgerFile: string;
  faults: FaultCounts;
  unexpectedExits: { name: string; how: string; logFile: string }[];
  durationMs: number;
  /** Which Redis the run used (default: SINGLE_REDIS_SETUP). */
  redisSetup?: string;
  /** Remote and model tasks (when the run had backends) and what checking them found. */
  backends?: { load: BackendLoad; report: BackendReport };
  /** What the push receivers got, judged (when the run had push). */
  push?: ChaosPushResult;
  /** Task generations sampled during the run, judged (chaos/generations.ts). */
  generations?: GenerationReport;
}): Promise<ChaosResult> {
  const keys = new RedisKeys(input.prefix);
  const tasks: SubmittedTask[] = input.load.submitted;
  const coordinators = input.load.coordinators;
  const listings = input.assignmentListings ?? new Map<string, AssignmentListing>();
  // Each coordinator's children, from the gateway's listing: child id → expected charges.
  const children = new Map<string, { coordinatorId: string; index: number; charges: number }>();
  for (const coordinator of coordinators) {
    const listing = listings.get(coordinator.taskId);
    if (listing === undefined || 'error' in listing) continue;
    for (const assignment of listing.assignments) {
      if (assignment.kind !== 'work') continue;
      children.set(assignment.taskId, { coordinatorId: coordinator.taskId, index: assignment.index, charges: coordinator.charges[assignment.index] ?? 0 });
    }
  }
  const facts = new Map<string, TaskFacts>();
  const backendIds = input.backends?.load.tasks.map((t) => t.taskId) ?? [];
  for (const taskId of [...tasks.map((t) => t.taskId), ...input.anchors, ...coordinators.map((c) => c.taskId), ...children.keys(), ...input.streams.map((s) => s.taskId), ...backendIds]) {
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
    coordinatorsRequested: input.coordinatorsRequested ?? coordinators.length,
    coordinatorsSubmitted: coordinators.length,
    coordinatorsCompleted: 0,
    coordinatorsFailed: 0,
    coordinatorFailedReasons: {},
    coordinatorsUnexplained: 0,
    coordinatorsUnexplainedList: [],
    lostCoordinators: 0,
    lostCoordinatorTasks: [],
    assignmentsListed: children.size,
    assignmentsCompleted: 0,
    assignmentFailedReasons: {},
    lostChildren: 0,
    lostChildTasks: [],
    childLedgerLines: 0,
    coordinatorProblems: [],
    strayChildren: 0,
    strayChildCharges: 0,
    strayChildTasks: [],
    faults: input.faults,
    unexpectedExits: input.unexpectedExits,
    durationMs: input.durationMs,
    redisSetup: input.redisSetup ?? SINGLE_REDIS_SETUP,
    backends: input.backends?.report,
    push: input.push,
    generations: input.generations,
    ok: false,
  };
  if (input.backends !== undefined) {
    result.abandoned += input.backends.load.abandoned.length;
    result.refused = [...result.refused, ...input.backends.load.refused];
  }

  const ledger = analyzeLedger(readLedger(input.ledgerFile));
  result.ledgerLines = ledger.lines;
  result.duplicates = ledger.duplicates;
  result.duplicateKeys = ledger.duplicateKeys;
  result.doubleCharges = ledger.doubleCharges;
  result.doubleChargeKeys = ledger.doubleChargeKeys;
  const byCharge = ledger.charges;

  /** The journal and transfer-report numbers of one terminal transfer (a load task or a child). */
  const accountSteps = (fact: TaskFacts): void => {
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
  };
  // Ledger lines by task id (a key is "<taskId>:<turn>:<step>"; task ids hold no ':').
  const ledgerLinesByTask = new Map<string, number>();
  for (const variants of byCharge.values()) {
    for (const key of variants) {
      const taskId = key.slice(0, key.indexOf(':'));
      ledgerLinesByTask.set(taskId, (ledgerLinesByTask.get(taskId) ?? 0) + 1);
    }
  }

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
    accountSteps(fact);
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

  for (const coordinator of coordinators) {
    const fact = facts.get(coordinator.taskId) as TaskFacts;
    const expected = coordinator.charges.length;
    const verdict = judgeCoordinator(fact, expected);
    const problem = (text: string): void => {
      result.coordinatorProblems.push({ taskId: coordinator.taskId, problem: text });
    };
    if (verdict.kind === 'lost') {
      result.lostCoordinators += 1;
      result.lostCoordinatorTasks.push({ taskId: coordinator.taskId, why: verdict.why });
    } else if (verdict.kind === 'completed') {
      result.coordinatorsCompleted += 1;
    } else {
      result.coordinatorsFailed += 1;
      const reason = verdict.kind === 'failed' ? verdict.reason : `WITHOUT A REASON: ${verdict.why}`;
      result.coordinatorFailedReasons[reason] = (result.coordinatorFailedReasons[reason] ?? 0) + 1;
      if (verdict.kind === 'unexplained') {
        result.coordinatorsUnexplained += 1;
        result.coordinatorsUnexplainedList.push({ taskId: coordinator.taskId, why: verdict.why });
      }
    }
    if (verdict.kind === 'lost' && fact.state === undefined) continue;
    const listing = listings.get(coordinator.taskId);
    if (listing === undefined || 'error' in listing) {
      problem(`could not list its assignments: ${listing === undefined ? 'never asked' : listing.error}`);
      continue;
    }
    const work = listing.assignments.filter((a) => a.kind === 'work').sort((a, b) => a.index - b.index);
    if (verdict.kind !== 'lost' && work.length !== expected) problem(`lists ${work.length} assignments, ${expected} were asked for`);
    // The combined artifact must name the same children the gateway lists, in the states they are in.
    const combined = verdict.kind === 'lost' ? undefined : verdict.combined;
    for (const entry of combined?.assignments ?? []) {
      const listed = work.find((a) => a.index === entry.index);
      if (listed === undefined) problem(`combined artifact names assignment ${entry.index} (${entry.taskId}), the listing does not`);
      else if (listed.taskId !== entry.taskId) problem(`assignment ${entry.index}: combined artifact names ${entry.taskId}, the listing ${listed.taskId}`);
      else {
        const childState = facts.get(entry.taskId)?.state;
        if (childState !== `TASK_STATE_${entry.state.toUpperCase()}`) problem(`assignment ${entry.index}: combined artifact says ${entry.state}, child ${entry.taskId} is ${childState ?? 'missing'}`);
      }
    }
  }

  for (const [childId, child] of children) {
    const fact = facts.get(childId) as TaskFacts;
    result.childLedgerLines += ledgerLinesByTask.get(childId) ?? 0;
    if (fact.state === undefined || !TERMINAL.has(fact.state)) {
      result.lostChildren += 1;
      result.lostChildTasks.push({ taskId: childId, why: `assignment ${child.index} of ${child.coordinatorId} is ${fact.state ?? 'missing from Redis'}` });
      continue;
    }
    if (fact.state === 'TASK_STATE_COMPLETED') {
      result.assignmentsCompleted += 1;
      for (let i = 1; i <= child.charges; i++) {
        if (!byCharge.has(`${childId}:1:charge-${i}`)) result.missingCharges += 1;
      }
    } else {
      const label = `${fact.state.replace('TASK_STATE_', '')}: ${fact.reason}`;
      result.assignmentFailedReasons[label] = (result.assignmentFailedReasons[label] ?? 0) + 1;
    }
    accountSteps(fact);
  }

  const known = new Set([...tasks.map((t) => t.taskId), ...input.anchors, ...coordinators.map((c) => c.taskId), ...children.keys(), ...backendIds]);
  const unknownIds = (await storedTaskIds(input.redis, input.prefix)).filter((id) => !known.has(id));
  // A stored child of one of our coordinators that the coordinator does not list: its
  // assignment was created twice. If it charged, that assignment's transfer ran twice.
  const coordinatorIds = new Set(coordinators.map((c) => c.taskId));
  let strays = 0;
  for (const id of unknownIds) {
    const parent = await input.redis.hget(keys.task(id).task, 'parentTaskId');
    if (parent === null || !coordinatorIds.has(parent)) continue;
    strays += 1;
    const charged = ledgerLinesByTask.get(id) ?? 0;
    result.strayChildCharges += charged;
    result.strayChildTasks.push(`${id} (parent ${parent}): ${charged} ledger lines`);
  }
  result.strayChildren = strays;
  result.orphans = unknownIds.length - strays;

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
    let problem = compareWithBuffer(stream, fact.buffer, fact.trimmedThroughId);
    // A stream the watcher stopped following misses whatever came after: say why it stopped
    // first, or the events it never waited for read as events the gateway failed to send.
    if (stream.outcome !== 'terminal') {
      const stopped = `stream never saw its terminal event (${stream.outcome}${stream.note === undefined ? '' : `: ${stream.note}`})`;
      problem = problem === undefined ? stopped : `${stopped}; ${problem}`;
    }
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
    result.submitted > 0 &&
    result.lostCoordinators === 0 &&
    result.coordinatorsUnexplained === 0 &&
    result.lostChildren === 0 &&
    result.coordinatorProblems.length === 0 &&
    result.strayChildCharges === 0 &&
    (result.coordinatorsRequested === 0 || result.coordinatorsSubmitted > 0) &&
    (result.backends === undefined ||
      (result.backends.lost === 0 && result.backends.wrongResults.length === 0 && result.backends.downstreamDuplicates.length === 0)) &&
    (result.push === undefined || result.push.ok) &&
    (result.generations === undefined || result.generations.ok);
  return result;
}
