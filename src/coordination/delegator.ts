// ctx.delegate and what keeps a coordinator's assignments moving: child tasks are created
// and recorded on the coordinator, started as slots free up (FIFO, at most maxParallel at once
// across all workers), settled as they end, and the coordinator's parked turn is woken when
// its delegation is over. Every step is idempotent, so a worker lost at any point is repaired
// by the next run of the coordinator's turn (which re-reads the children themselves).
import { DelegationFailedError, type Assignment, type AssignmentEvidence, type DelegationOptions, type DelegationResult } from '../../adapters/delegation.ts';
import { enqueueTurn, turnJobId, withTrace, type TurnQueues } from '../../queues/turns.ts';
import type { TraceContext } from '../telemetry/spans.ts';
import type { Agents } from '../agents/agents.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { derivedId, newId } from '../ids.ts';
import { GATEWAY_METADATA_KEY, ownerFromKey, StaleLeaseError, type Owner, type TaskStore, type TaskVersions } from '../store/task-store.ts';
import type { Artifact, JsonObject, Message, Part, TaskState } from '../protocol/types.ts';
import type { AssignmentStore } from '../store/assignments/assignment-store.ts';
import { SETTLED_STATES, type AssignmentRecord, type DelegationSettings, type SettledState } from './assignment-records.ts';

const NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const MAX_ASSIGNMENTS = 1000;
/** A reviewer is one more assignment, in a delegation of its own named after the reviewed one. */
const reviewDelegationOf = (name: string): string => `${name}#review`;

/** Thrown inside a coordinator's turn so the runner parks it instead of finishing it. */
export class TurnParked extends Error {
  constructor(readonly statusText: string) {
    super(statusText);
    this.name = 'TurnParked';
  }
}

/** The coordinator's turn as the delegator sees it. */
export interface CoordinatorTurn {
  taskId: string;
  contextId: string;
  ownerKey: string;
  generation: number;
  /** What the coordinator's caller's credentials granted: its sub-agents see the same. */
  callerScopes?: readonly string[];
  /** The trace context of the coordinator's turn span (tracing on): its assignments' turns continue it. */
  trace?: TraceContext;
}

export interface DelegatorOptions {
  store: TaskStore;
  assignments: AssignmentStore;
  queues: TurnQueues;
  defaultMaxParallel: number;
  /** Per-role limits from configuration. */
  roleLimits: Record<string, number>;
  idempotencyTtlSeconds: number;
  /** Versions recorded on a child task: its role's adapter (within the coordinator's agent) and this gateway's. */
  versionsFor(agent: string, role: string): TaskVersions;
  /** Tasks an owner of the agent may have queued or running, sub-agents' included (0 = no cap). */
  maxActiveTasksFor(agent: string): number;
}

/** Assignment state from a child's task state ('running' while it is still open). */
function assignmentStateOf(state: TaskState): SettledState | 'input-required' | 'running' {
  switch (state) {
    case 'TASK_STATE_COMPLETED':
      return 'completed';
    case 'TASK_STATE_FAILED':
      return 'failed';
    case 'TASK_STATE_CANCELED':
      return 'canceled';
    case 'TASK_STATE_REJECTED':
      return 'rejected';
    case 'TASK_STATE_INPUT_REQUIRED':
    case 'TASK_STATE_AUTH_REQUIRED':
      return 'input-required';
    default:
      return 'running';
  }
}

/** A message's text parts joined (undefined when it has none). */
export const textOf = (message: Message | undefined): string | undefined => {
  const text = message?.parts
    .map((part) => part.text)
    .filter((t): t is string => t !== undefined)
    .join('\n');
  return text === undefined || text === '' ? undefined : text;
};

export class Delegator {
  constructor(private readonly options: DelegatorOptions) {}

  /** The delegator of a process: settings from configuration, versions and caps from each agent. */
  static forAgents(config: GatewayConfig, agents: Agents, parts: Pick<DelegatorOptions, 'store' | 'assignments' | 'queues'>): Delegator {
    const agentOf = (name: string) => agents.get(name) ?? agents.default;
    return new Delegator({
      ...parts,
      defaultMaxParallel: config.delegation.maxParallel,
      roleLimits: Object.fromEntries(
        Object.entries(config.delegation.roles).flatMap(([role, settings]) => (settings.maxParallel === undefined ? [] : [[role, settings.maxParallel]])),
      ),
      idempotencyTtlSeconds: config.idempotencyTtlSeconds,
      versionsFor: (agent, role) => agentOf(agent).versionsFor(role),
      maxActiveTasksFor: (agent) => agentOf(agent).settings.limits.maxActiveTasks,
    });
  }

  /** ctx.delegate: returns the delegation's evidence once it is over, otherwise parks the turn (throws TurnParked). */
  async delegate(turn: CoordinatorTurn, name: string, assignments: readonly Assignment[], options: DelegationOptions = {}): Promise<DelegationResult> {
    if (!NAME.test(name)) throw new Error(`Delegation name "${name}" must be 1 to 64 letters, digits, "_", "." or "-".`);
    const known = await this.options.assignments.readDelegation(turn.taskId, name);
    const settings = known ?? (await this.start(turn, name, assignments, options));
    const records = await this.current(turn, name);
    const result = await this.evidence(turn, settings, records);
    const stopped = records.find((r) => r.state === 'failed' || r.state === 'rejected' || r.state === 'canceled');
    if (settings.onFailure === 'fail-fast' && stopped !== undefined) {
      await this.cancelOpen(turn.taskId, ownerFromKey(turn.ownerKey), records, 'Canceled: the delegation failed fast.');
      const final = await this.evidence(turn, settings, await this.current(turn, name));
      throw new DelegationFailedError(final, final.assignments.find((a) => a.taskId === stopped.taskId) as AssignmentEvidence);
    }
    const open = records.filter((r) => !SETTLED_STATES.has(r.state));
    if (open.length > 0) {
      await this.startGranted(turn.taskId, turn.ownerKey, turn.contextId, turn.trace);
      throw new TurnParked(`Waiting for ${open.length} of ${records.length} assignments of "${name}" (${records.length - open.length} done).`);
    }
    if (settings.reviewer !== undefined) result.review = await this.review(turn, settings, result);
    return result;
  }

  /** Called when a child task's turn ended: settle its assignment, start the next ones, wake the coordinator. */
  async childTurnEnded(child: { taskId: string; coordinatorId: string; ownerKey: string; contextId: string; trace?: TraceContext }, state: TaskState, text: string | undefined): Promise<void> {
    const outcome = assignmentStateOf(state);
    if (outcome === 'running') return;
    await this.settleAndWake(child.coordinatorId, child.ownerKey, child.contextId, child.taskId, outcome, text ?? '', child.trace);
  }

  /** Cancels a coordinator's open assignments (queued ones never start). */
  async cancelAssignments(coordinatorId: string, owner: Owner): Promise<void> {
    await this.cancelOpen(coordinatorId, owner, await this.options.assignments.readAssignments(coordinatorId), 'Canceled with its coordinator.');
  }

  private async cancelOpen(coordinatorId: string, owner: Owner, records: readonly AssignmentRecord[], reason: string): Promise<void> {
    for (const record of records) {
      if (SETTLED_STATES.has(record.state)) continue;
      const result = await this.options.store.gateway.cancelTask(record.taskId, owner, new Date());
      // A running child is stopped by its worker, which settles it; one that never ran is settled here.
      if (result.kind === 'canceled') await this.options.assignments.settle(coordinatorId, record.taskId, 'canceled', reason);
    }
  }

  /** The coordinator asks its caller the oldest waiting question of its children, if it can now. */
  surfaceQuestion(coordinatorId: string): Promise<string | undefined> {
    return this.options.assignments.surfaceQuestion(coordinatorId, newId());
  }

  private async start(turn: CoordinatorTurn, name: string, assignments: readonly Assignment[], options: DelegationOptions): Promise<DelegationSettings> {
    if (assignments.length === 0 || assignments.length > MAX_ASSIGNMENTS) {
      throw new Error(`A delegation needs 1 to ${MAX_ASSIGNMENTS} assignments, got ${assignments.length}.`);
    }
    for (const assignment of assignments) {
      if (!NAME.test(assignment.role)) throw new Error(`Role "${assignment.role}" must be 1 to 64 letters, digits, "_", "." or "-".`);
    }
    const requested = options.maxParallel ?? this.options.defaultMaxParallel;
    if (!Number.isInteger(requested) || requested < 1) throw new Error(`maxParallel must be a positive integer, got ${String(requested)}.`);
    // A delegation may ask for less parallelism than configured, never for more: what a request
    // (say, a data part of a caller's message) asks for is clamped to delegation.maxParallel.
    const maxParallel = Math.min(requested, this.options.defaultMaxParallel);
    const roleLimits: Record<string, number> = { ...this.options.roleLimits };
    for (const [role, limit] of Object.entries(options.roleLimits ?? {})) {
      if (Number.isInteger(limit) && limit >= 1) roleLimits[role] = Math.min(limit, roleLimits[role] ?? maxParallel);
    }
    const settings: DelegationSettings = {
      name,
      count: assignments.length,
      maxParallel,
      roleLimits,
      onFailure: options.onFailure ?? 'continue',
    };
    if (options.reviewer !== undefined) settings.reviewer = options.reviewer;
    await this.record(turn, settings, assignments.map((assignment, index) => ({ assignment, index, kind: 'work' as const })));
    return settings;
  }

  /** Creates the children (idempotently: a retried call finds the same tasks) and records them on the coordinator. */
  private async record(
    turn: CoordinatorTurn,
    settings: DelegationSettings,
    items: { assignment: Assignment; index: number; kind: AssignmentRecord['kind']; readOnly?: boolean }[],
  ): Promise<void> {
    const owner = ownerFromKey(turn.ownerKey);
    const records: AssignmentRecord[] = [];
    for (const { assignment, index, kind, readOnly } of items) {
      const parts: Part[] = typeof assignment.input === 'string' ? [{ text: assignment.input }] : assignment.input;
      // Derived from the coordinator and position: a retried delegation finds the child its
      // first attempt created, and no caller can create (or pre-create) a task of this id.
      const childId = derivedId(turn.taskId, settings.name, String(index));
      const message: Message = {
        messageId: `${turn.taskId}.${settings.name}.${index}`,
        role: 'ROLE_USER',
        parts,
        taskId: childId,
        contextId: turn.contextId,
        referenceTaskIds: [turn.taskId],
      };
      const link = { parentTaskId: turn.taskId, assignment: { delegation: settings.name, index, role: assignment.role, kind } };
      const metadata: JsonObject = { ...(assignment.metadata ?? {}), [GATEWAY_METADATA_KEY]: link };
      const created = await this.options.store.gateway.createTask({
        taskId: childId,
        owner,
        contextId: turn.contextId,
        message,
        metadata,
        idempotencyTtlSeconds: this.options.idempotencyTtlSeconds,
        versions: this.options.versionsFor(owner.agent, assignment.role),
        // Sub-agents' tasks count against their owner's active-task cap like any other.
        maxActiveTasks: this.options.maxActiveTasksFor(owner.agent),
        links: { parentTaskId: turn.taskId, role: assignment.role, readOnly: readOnly === true },
        callerScopes: turn.callerScopes ?? [],
        now: new Date(),
      });
      if (created.kind === 'too-many-active') {
        throw new Error(
          `Delegation "${settings.name}" cannot create assignment ${index}: its owner has ${created.active} tasks queued or running, the limit is ${this.options.maxActiveTasksFor(owner.agent)} (limits.maxActiveTasks), and sub-agents' tasks count too.`,
        );
      }
      // Adopted only with the server's own link to this coordinator (defence in depth: the id is the server's to begin with).
      if (created.kind === 'duplicate' && (await this.options.store.gateway.parentOf(childId)) !== turn.taskId) {
        throw new Error(`Task ${childId} exists but is not an assignment of coordinator ${turn.taskId}; it is not adopted.`);
      }
      records.push({ taskId: childId, delegation: settings.name, index, role: assignment.role, kind, state: 'queued', queuedAtMs: Date.now() });
    }
    if (!(await this.options.assignments.register(turn.taskId, turn.generation, settings, records))) throw new StaleLeaseError(turn.taskId);
  }

  /**
   * The delegation's assignments, repaired against the children themselves: a child that ended
   * while its worker died before settling it is settled now, and a started child whose turn
   * was never enqueued is enqueued (turn jobs are deduplicated, so this is safe to repeat).
   */
  private async current(turn: CoordinatorTurn, name: string): Promise<AssignmentRecord[]> {
    const owner = ownerFromKey(turn.ownerKey);
    let records = (await this.options.assignments.readAssignments(turn.taskId)).filter((r) => r.delegation === name);
    let repaired = false;
    for (const record of records) {
      if (SETTLED_STATES.has(record.state) || record.state === 'queued') continue;
      const child = await this.options.store.gateway.readTask(record.taskId, owner, 0);
      const state = child === undefined ? 'canceled' : assignmentStateOf(child.task.status.state);
      if (state === 'running') {
        if (child?.task.status.state === 'TASK_STATE_SUBMITTED') await this.enqueueChild(record.taskId, turn.ownerKey, turn.contextId, turn.trace);
        continue;
      }
      if (state === record.state) continue;
      await this.options.assignments.settle(turn.taskId, record.taskId, state, textOf(child?.task.status.message) ?? '');
      repaired = true;
    }
    if (repaired) records = (await this.options.assignments.readAssignments(turn.taskId)).filter((r) => r.delegation === name);
    return records.sort((a, b) => a.index - b.index);
  }

  private async evidence(turn: CoordinatorTurn, settings: DelegationSettings, records: AssignmentRecord[]): Promise<DelegationResult> {
    const owner = ownerFromKey(turn.ownerKey);
    const assignments: AssignmentEvidence[] = [];
    for (const record of records) {
      if (!SETTLED_STATES.has(record.state)) continue;
      const child = await this.options.store.gateway.readTask(record.taskId, owner, 0);
      const evidence: AssignmentEvidence = {
        index: record.index,
        role: record.role,
        taskId: record.taskId,
        state: record.state as SettledState,
        artifacts: child?.task.artifacts ?? ([] as Artifact[]),
      };
      const message = textOf(child?.task.status.message) ?? record.message;
      if (message !== undefined) evidence.message = message;
      assignments.push(evidence);
    }
    return {
      name: settings.name,
      onFailure: settings.onFailure,
      assignments,
      completed: assignments.filter((a) => a.state === 'completed').length,
      failed: assignments.filter((a) => a.state === 'failed' || a.state === 'rejected').length,
      canceled: assignments.filter((a) => a.state === 'canceled').length,
    };
  }

  /** Runs the read-only reviewer over the settled results (parking the turn while it works). */
  private async review(turn: CoordinatorTurn, settings: DelegationSettings, result: DelegationResult): Promise<NonNullable<DelegationResult['review']>> {
    const reviewer = settings.reviewer as NonNullable<DelegationSettings['reviewer']>;
    const name = reviewDelegationOf(settings.name);
    if ((await this.options.assignments.readDelegation(turn.taskId, name)) === undefined) {
      const reviewSettings: DelegationSettings = { name, count: 1, maxParallel: 1, roleLimits: {}, onFailure: 'continue' };
      const evidence = { delegation: settings.name, completed: result.completed, failed: result.failed, canceled: result.canceled, assignments: result.assignments };
      const input: Part[] = [
        { text: `review ${reviewer.instructions ?? `the ${result.assignments.length} results of "${settings.name}"`}` },
        { data: evidence as unknown as JsonObject, mediaType: 'application/json' },
      ];
      await this.record(turn, reviewSettings, [{ assignment: { role: reviewer.role, input }, index: 0, kind: 'review', readOnly: true }]);
    }
    const [record] = await this.current(turn, name);
    if (record === undefined || !SETTLED_STATES.has(record.state)) {
      await this.startGranted(turn.taskId, turn.ownerKey, turn.contextId, turn.trace);
      throw new TurnParked(`Waiting for the ${reviewer.role} to review the results of "${settings.name}".`);
    }
    const [verdict] = (await this.evidence(turn, { ...settings, name }, [record])).assignments as [AssignmentEvidence];
    return {
      taskId: verdict.taskId,
      role: verdict.role,
      state: verdict.state,
      verdict: verdict.message ?? '',
      artifacts: verdict.artifacts,
    };
  }

  /** `trace`: the ending child turn's context; the wake and the assignments started next continue its trace (the coordinator's). */
  private async settleAndWake(coordinatorId: string, ownerKey: string, contextId: string, childId: string, outcome: SettledState | 'input-required', text: string, trace?: TraceContext): Promise<void> {
    const settled = await this.options.assignments.settle(coordinatorId, childId, outcome, text);
    if (settled.kind === 'question') await this.surfaceQuestion(coordinatorId);
    if (settled.kind === 'wake') {
      // A wake is a fresh job of the same turn: the coordinator's parked run may still be
      // finishing (its job id is taken), and the runner waits for its lease to be free.
      await this.options.queues.forOwner(ownerKey).add(
        'turn',
        withTrace({ taskId: coordinatorId, turn: settled.turn, ownerKey, contextId }, trace),
        { jobId: `${turnJobId(coordinatorId, settled.turn)}-w${settled.wakeSeq}` },
      );
    }
    if (outcome !== 'input-required') await this.startGranted(coordinatorId, ownerKey, contextId, trace);
  }

  private async startGranted(coordinatorId: string, ownerKey: string, contextId: string, trace: TraceContext): Promise<void> {
    for (const childId of await this.options.assignments.grant(coordinatorId)) await this.enqueueChild(childId, ownerKey, contextId, trace);
  }

  private enqueueChild(childId: string, ownerKey: string, contextId: string, trace: TraceContext): Promise<void> {
    return enqueueTurn(this.options.queues, { taskId: childId, turn: 1, ownerKey, contextId }, trace);
  }
}
