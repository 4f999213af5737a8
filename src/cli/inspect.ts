// `a2a-gateway tasks inspect <taskId>`: what an operator needs to explain a task — its state,
// owner, versions, who holds its lease, every turn with its attempts, hand-backs, budget,
// worker, steps and outcome, and how much history and replay buffer it keeps. Reads Redis
// directly, for any owner.
import type { Redis } from 'ioredis';
import type { AssignmentRecord } from '../coordination/assignment-store.ts';
import type { StepRecord, TaskVersions, TurnRecord } from '../store/task-store.ts';
import { RedisKeys } from '../store/keys.ts';

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
  versions: TaskVersions | undefined;
  lease: { holder: string | undefined; expiresInMs: number | undefined; generation: number };
  /**
   * The task's current (latest) turn as its hash counts it, which is ahead of the turn record
   * while the turn runs: attempts (hand-backs excluded), hand-backs at shutdown, budget spent.
   */
  currentTurn: { turn: number; attempts: number; handBacks: number; budgetSpent: number };
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

export async function inspectTask(redis: Redis, prefix: string, taskId: string): Promise<TaskInspection | undefined> {
  const k = new RedisKeys(prefix).task(taskId);
  const [hash, holder, leaseTtl, turns, steps, historyLength, inboxLength, eventCount, first, last, ttl, assignments] = await Promise.all([
    redis.hgetall(k.task),
    redis.get(k.lease),
    redis.pttl(k.lease),
    redis.hgetall(k.turns),
    redis.hgetall(k.steps),
    redis.llen(k.history),
    redis.llen(k.inbox),
    redis.xlen(k.events),
    redis.xrange(k.events, '-', '+', 'COUNT', 1),
    redis.xrevrange(k.events, '+', '-', 'COUNT', 1),
    redis.ttl(k.task),
    redis.hvals(k.assignments),
  ]);
  if (hash.id === undefined) return undefined;
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
    versions: hash.versions ? (JSON.parse(hash.versions) as TaskVersions) : undefined,
    lease: { holder: holder ?? undefined, expiresInMs: leaseTtl > 0 ? leaseTtl : undefined, generation: Number(hash.leaseGeneration ?? 0) },
    currentTurn: {
      turn: Number(hash.turn ?? 0),
      attempts: Number(hash.turnAttempts ?? 0),
      handBacks: Number(hash.turnHandBacks ?? 0),
      budgetSpent: Number(hash.turnBudgetSpent ?? 0),
    },
    turns: Object.values(turns)
      .map((json) => JSON.parse(json) as TurnRecord)
      .sort((a, b) => a.turn - b.turn),
    journal: Object.values(steps)
      .map((json) => JSON.parse(json) as StepRecord)
      .sort((a, b) => a.startedAtMs - b.startedAtMs)
      // Handed to the adapter as unknown, or started and never finished while no worker runs
      // the task: an attempt was lost mid-step.
      .map((step) => ({ ...step, unknown: step.state === 'unknown' || (step.state === 'started' && holder === null) })),
    historyMessages: historyLength,
    queuedMessages: inboxLength,
    events: {
      count: eventCount,
      first: first[0]?.[0],
      last: last[0]?.[0],
      trimmed: hash.eventsTrimmedThrough === undefined ? undefined : { count: Number(hash.eventsTrimmed ?? 0), throughId: hash.eventsTrimmedThrough },
    },
    expiresInSeconds: ttl > 0 ? ttl : undefined,
    coordinator: hash.parentTaskId ? { taskId: hash.parentTaskId, role: hash.role ?? '', readOnly: hash.readOnly === '1' } : undefined,
    assignments: assignments
      .map((json) => JSON.parse(json) as AssignmentRecord)
      .sort((a, b) => a.queuedAtMs - b.queuedAtMs || a.delegation.localeCompare(b.delegation) || a.index - b.index),
    parked: hash.suspended === '1',
  };
}

export function formatInspection(t: TaskInspection): string {
  const lines = [
    `task       ${t.taskId}`,
    `state      ${t.state}`,
    `owner      ${t.owner}${t.tenant ? ` (tenant ${t.tenant})` : ''}`,
    `context    ${t.contextId}`,
    `created    ${t.createdAt ?? '-'}   updated ${t.updatedAt ?? '-'}   finished ${t.finishedAt ?? '-'}`,
    `versions   gateway ${t.versions?.gateway ?? '?'}, adapter ${t.versions?.adapter ?? '?'}, card ${t.versions?.card ?? '?'}`,
    `lease      ${t.lease.holder === undefined ? 'free' : `held by ${t.lease.holder}, ${t.lease.expiresInMs} ms left`} (generation ${t.lease.generation})`,
    `current    turn ${t.currentTurn.turn}: attempts ${t.currentTurn.attempts}, handed back ${t.currentTurn.handBacks}, budget spent ${t.currentTurn.budgetSpent}`,
    `cancel     ${t.cancelRequestedAt === undefined ? 'not requested' : `requested at ${t.cancelRequestedAt}`}`,
    `history    ${t.historyMessages} messages, ${t.queuedMessages} queued for the next turn`,
    `events     ${t.events.count} in the replay buffer${t.events.count > 0 ? ` (${t.events.first} .. ${t.events.last})` : ''}${
      t.events.trimmed === undefined ? '' : `; ${t.events.trimmed.count} older ones trimmed (through ${t.events.trimmed.throughId})`
    }`,
    `expires    ${t.expiresInSeconds === undefined ? 'never (still open)' : `in ${t.expiresInSeconds} s`}`,
    `turns      ${t.turns.length}${t.parked ? ' (the current one is parked, waiting for its assignments)' : ''}`,
  ];
  if (t.coordinator !== undefined) {
    lines.splice(4, 0, `assigned   by coordinator ${t.coordinator.taskId} as role ${t.coordinator.role}${t.coordinator.readOnly ? ' (read-only reviewer)' : ''}`);
  }
  for (const turn of t.turns) {
    lines.push(
      `  turn ${turn.turn}: ${turn.outcome ?? 'open'}, attempts ${turn.attempts ?? 0}${turn.handBacks ? `, handed back ${turn.handBacks}` : ''}${
        turn.budgetSpent !== undefined || turn.budgetLimit !== undefined ? `, budget ${turn.budgetSpent ?? 0}${turn.budgetLimit === undefined ? '' : ` of ${turn.budgetLimit}`}` : ''
      }, worker ${turn.workerId ?? '-'}, adapter ${turn.adapter ?? '-'}`,
    );
    if (turn.reason !== undefined) lines.push(`    reason: ${turn.reason}`);
    if (turn.startedAtMs !== undefined) lines.push(`    started ${new Date(turn.startedAtMs).toISOString()}${turn.finishedAtMs ? `, finished ${new Date(turn.finishedAtMs).toISOString()}` : ''}`);
    for (const step of turn.steps ?? []) lines.push(`    step ${step.name} (attempt ${step.attempt}) at ${new Date(step.atMs).toISOString()}`);
  }
  if (t.journal.length > 0) lines.push(`journal    ${t.journal.length} steps, ${t.journal.filter((s) => s.unknown).length} unknown`);
  for (const step of t.journal) {
    lines.push(
      `  ${step.turn}:${step.name} ${step.unknown ? `UNKNOWN (started in attempt ${step.attempt}, no result${step.surfacedToAttempt ? `; handed to attempt ${step.surfacedToAttempt} to reconcile` : ''})` : `${step.state} (attempt ${step.attempt})`}, key ${step.idempotencyKey}${step.reference ? `, reference ${step.reference}` : ''}`,
    );
  }
  if (t.assignments.length > 0) lines.push(`assignments ${t.assignments.length}`);
  for (const a of t.assignments) {
    lines.push(
      `  ${a.delegation}[${a.index}] ${a.role}${a.kind === 'review' ? ' (reviewer)' : ''}: ${a.state}, task ${a.taskId}${a.grantSeq === undefined ? '' : `, started #${a.grantSeq}`}${a.question ? `, asks: ${a.question}` : ''}`,
    );
  }
  return lines.join('\n');
}
