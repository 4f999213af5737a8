// How an operator explains one task, read for any owner (src/store/operator-reads.ts): its state, owner,
// versions, lease, every turn with its attempts, hand-backs, budget, worker, steps and outcome,
// cancellation stages, verification outcome, sub-agent links, push deliveries, and how much
// history and replay buffer it keeps. `a2a-gateway tasks inspect` prints it; the operator
// console's task page shows it (InspectTask, src/operations/operator-operations.ts).
import type { RedisClient } from '../redis/connection.ts';
import type { AssignmentRecord } from '../coordination/assignment-records.ts';
import { AssignmentStore } from '../store/assignments/assignment-store.ts';
import type { LostWorker, StepRecord, TaskVersions, TurnRecord } from '../store/task-store.ts';
import { readTaskState } from '../store/operator-reads.ts';
import { ownerFromKey } from '../store/task-store.ts';
import { readTaskPushState } from '../store/push/push-store.ts';

/** One push config of the task and how far its deliveries got. */
export interface PushDeliveryInspection {
  configId: string;
  url: string;
  /** Set when the receiver answered 410 (or an operator disabled it). */
  disabled: boolean;
  /** The last event delivered or given up on ('' = none yet). */
  settledEventId: string;
  /** The event being delivered now ('' = none). */
  inflightEventId: string;
}

/** The three cancellation stages (invariant 6), who asked, and which terminal state won. */
export interface CancellationInspection {
  requestedAt: string | undefined;
  acknowledgedAt: string | undefined;
  stoppedAt: string | undefined;
  /** Set when an operator (not the owner) asked: "operator:<tenant>/<subject>". */
  requestedBy: string | undefined;
  outcome: string | undefined;
}

export interface TaskInspection {
  taskId: string;
  owner: string;
  tenant: string;
  contextId: string;
  state: string;
  createdAt: string | undefined;
  updatedAt: string | undefined;
  finishedAt: string | undefined;
  cancelRequestedAt: string | undefined;
  /** The agent and principal of the owner key. */
  agent: string;
  subject: string;
  cancellation: CancellationInspection;
  /** Whether the terminal result was verified, and how (invariant 8); undefined until a turn recorded one. */
  outcome: { verified: boolean; method?: string; evidence?: unknown } | undefined;
  /** The task's push configs with their delivery cursors (none when push is off or unused). */
  pushDeliveries: PushDeliveryInspection[];
  versions: TaskVersions | undefined;
  lease: { holder: string | undefined; expiresInMs: number | undefined; generation: number };
  /**
   * The task's current (latest) turn as its hash counts it, which is ahead of the turn record
   * while the turn runs: attempts (hand-backs excluded), hand-backs at shutdown, budget spent.
   */
  currentTurn: { turn: number; attempts: number; handBacks: number; budgetSpent: number };
  /** Workers lost while running a turn of the task (killed, hung, cut off), the latest last. */
  lostWorkers: LostWorker[];
  /** Bytes of events the task stored, against limits.maxTaskOutputBytes, and its latest turn's, against limits.maxTurnOutputBytes. */
  output: { taskBytes: number; turnBytes: number };
  turns: TurnRecord[];
  /** The step journal; `started` records of a turn nobody runs are unknowns to reconcile. */
  journal: (StepRecord & { unknown: boolean })[];
  historyMessages: number;
  queuedMessages: number;
  /** The replay buffer; `trimmed`: what its bound dropped (how many, and the newest one's id). */
  events: { count: number; first: string | undefined; last: string | undefined; trimmed: { count: number; throughId: string } | undefined };
  expiresInSeconds: number | undefined;
  /** A sub-agent's task: its coordinator and role. */
  coordinator: { taskId: string; role: string; readOnly: boolean } | undefined;
  /** A coordinator's assignments, in the order they were made; whether its turn is parked for them. */
  assignments: AssignmentRecord[];
  parked: boolean;
}

const iso = (ms: string | undefined): string | undefined => (ms === undefined || ms === '' ? undefined : new Date(Number(ms)).toISOString());

export async function inspectTask(redis: RedisClient, prefix: string, taskId: string): Promise<TaskInspection | undefined> {
  const [stored, assignments, push] = await Promise.all([
    readTaskState(redis, prefix, taskId),
    new AssignmentStore(redis, prefix).readAssignments(taskId),
    readTaskPushState(redis, prefix, taskId),
  ]);
  if (stored === undefined) return undefined;
  const { hash, lease, events } = stored;
  const holder = lease.holder;
  const owner = ownerFromKey(hash.owner ?? '');
  return {
    taskId,
    owner: hash.owner ?? '',
    tenant: hash.tenant ?? '',
    contextId: hash.contextId ?? '',
    state: hash.state ?? '',
    createdAt: iso(hash.createdAtMs),
    updatedAt: iso(hash.updatedAtMs),
    finishedAt: iso(hash.finishedAtMs),
    cancelRequestedAt: iso(hash.cancelRequestedAtMs),
    agent: owner.agent,
    subject: owner.subject,
    cancellation: {
      requestedAt: iso(hash.cancelRequestedAtMs),
      acknowledgedAt: iso(hash.cancelAcknowledgedAtMs),
      stoppedAt: iso(hash.cancelStoppedAtMs),
      requestedBy: hash.cancelRequestedBy || undefined,
      outcome: hash.cancelOutcome || undefined,
    },
    outcome: hash.outcome ? (JSON.parse(hash.outcome) as TaskInspection['outcome']) : undefined,
    pushDeliveries: Object.entries(push.configs)
      .map(([configId, config]) => ({
        configId,
        url: config.url,
        disabled: config.disabled !== undefined && config.disabled !== null,
        settledEventId: push.cursors[`d:${configId}`] ?? '',
        inflightEventId: push.cursors[`i:${configId}`] ?? '',
      }))
      .sort((a, b) => a.configId.localeCompare(b.configId)),
    versions: hash.versions ? (JSON.parse(hash.versions) as TaskVersions) : undefined,
    lease: { holder, expiresInMs: lease.ttlMs > 0 ? lease.ttlMs : undefined, generation: Number(hash.leaseGeneration ?? 0) },
    currentTurn: {
      turn: Number(hash.turn ?? 0),
      attempts: Number(hash.turnAttempts ?? 0),
      handBacks: Number(hash.turnHandBacks ?? 0),
      budgetSpent: Number(hash.turnBudgetSpent ?? 0),
    },
    lostWorkers: hash.lostWorkers ? (JSON.parse(hash.lostWorkers) as LostWorker[]) : [],
    output: {
      taskBytes: Number(hash.taskOutputBytes ?? 0),
      turnBytes: hash.outputTurn !== undefined && hash.outputTurn === hash.turn ? Number(hash.turnOutputBytes ?? 0) : 0,
    },
    turns: stored.turns,
    // Handed to the adapter as unknown, or started and never finished while no worker runs
    // the task: an attempt was lost mid-step.
    journal: stored.steps.map((step) => ({ ...step, unknown: step.state === 'unknown' || (step.state === 'started' && holder === undefined) })),
    historyMessages: stored.historyLength,
    queuedMessages: stored.inboxLength,
    events: {
      count: events.count,
      first: events.firstId,
      last: events.lastId,
      trimmed: hash.eventsTrimmedThrough === undefined ? undefined : { count: Number(hash.eventsTrimmed ?? 0), throughId: hash.eventsTrimmedThrough },
    },
    expiresInSeconds: stored.ttlSeconds > 0 ? stored.ttlSeconds : undefined,
    coordinator: hash.parentTaskId ? { taskId: hash.parentTaskId, role: hash.role ?? '', readOnly: hash.readOnly === '1' } : undefined,
    assignments,
    parked: hash.suspended === '1',
  };
}

