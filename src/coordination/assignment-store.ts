// A coordinator's assignments in Redis: the delegations it made, each assignment's state, the
// FIFO queue of assignments waiting for a slot, and the slots in use. All of it lives under the
// coordinator's hash tag, so every change is one script next to the coordinator's task.
import type { RedisClient } from '../redis/connection.ts';
import type { StreamResponse, TaskStatus } from '../protocol/types.ts';
import type { RedisKeys } from '../store/keys.ts';
import { DEFAULT_REPLAY_BOUND, type ReplayBound } from '../store/replay-bound.ts';
import { scriptCaller, type ScriptCaller } from '../store/script-call.ts';
import {
  grantSlotsScript,
  registerAssignmentsScript,
  settleAssignmentScript,
  surfaceQuestionScript,
  suspendTurnScript,
  type SettleReply,
} from '../store/assignment-scripts.ts';

export type AssignmentState = 'queued' | 'running' | 'input-required' | 'completed' | 'failed' | 'canceled' | 'rejected';
export type SettledState = 'completed' | 'failed' | 'canceled' | 'rejected';
export type FailurePolicy = 'continue' | 'fail-fast';

export const SETTLED_STATES: ReadonlySet<AssignmentState> = new Set(['completed', 'failed', 'canceled', 'rejected']);

/** One sub-agent's piece of a coordinator's turn, as the coordinator records it. */
export interface AssignmentRecord {
  taskId: string;
  delegation: string;
  /** Position in its delegation, from 0. */
  index: number;
  role: string;
  kind: 'work' | 'review';
  state: AssignmentState;
  queuedAtMs: number;
  grantedAtMs?: number;
  /** Order in which the coordinator's slots were granted (1, 2, …): FIFO is checkable. */
  grantSeq?: number;
  settledAtMs?: number;
  /** The child's question while it waits for input. */
  question?: string;
  /** The child's final status message. */
  message?: string;
}

export interface DelegationSettings {
  name: string;
  /** Assignments in the delegation (when all settled, the coordinator resumes). */
  count: number;
  maxParallel: number;
  roleLimits: Record<string, number>;
  onFailure: FailurePolicy;
  /** The reviewer role, when the delegation asked for one. */
  reviewer?: { role: string; instructions?: string };
}

export type SettleResult = SettleReply;

export class AssignmentStore {
  private readonly call: ScriptCaller;

  constructor(
    private readonly redis: RedisClient,
    readonly keys: RedisKeys,
    replay: ReplayBound = DEFAULT_REPLAY_BOUND,
  ) {
    this.call = scriptCaller(redis, replay);
  }

  /** Records a delegation and its (already created) children; false when the lease was lost. */
  async register(coordinatorId: string, generation: number, settings: DelegationSettings, records: AssignmentRecord[]): Promise<boolean> {
    return this.call(registerAssignmentsScript, this.keys.task(coordinatorId), { generation, delegation: settings.name, settings, records });
  }

  /** Gives free slots to waiting assignments (FIFO); returns the children whose turns must be enqueued. */
  async grant(coordinatorId: string): Promise<string[]> {
    return this.call(grantSlotsScript, this.keys.task(coordinatorId), { nowMs: Date.now() });
  }

  async settle(coordinatorId: string, childId: string, outcome: SettledState | 'input-required', text: string): Promise<SettleResult> {
    return this.call(settleAssignmentScript, this.keys.task(coordinatorId), { childId, outcome, text, nowMs: Date.now() });
  }

  /** Parks the coordinator's turn (lease released, attempt not counted); false when the lease was lost. */
  async suspend(coordinatorId: string, contextId: string, generation: number, text: string, messageId: string): Promise<boolean> {
    const k = this.keys.task(coordinatorId);
    const status: TaskStatus = {
      state: 'TASK_STATE_WORKING',
      timestamp: new Date().toISOString(),
      message: { messageId, role: 'ROLE_AGENT', parts: [{ text }], taskId: coordinatorId, contextId },
    };
    const event: StreamResponse = { statusUpdate: { taskId: coordinatorId, contextId, status } };
    return this.call(suspendTurnScript, k, { generation, status, event, nowMs: Date.now(), eventChannel: this.keys.eventChannel(coordinatorId) });
  }

  /** Puts the oldest waiting child question to the coordinator's caller, if the coordinator can ask now. */
  async surfaceQuestion(coordinatorId: string, messageId: string): Promise<string | undefined> {
    const now = new Date();
    return this.call(surfaceQuestionScript, this.keys.task(coordinatorId), { nowMs: now.getTime(), nowIso: now.toISOString(), eventChannel: this.keys.eventChannel(coordinatorId), messageId });
  }

  /** A finished coordinator's records go when its task does (retention). */
  async expire(coordinatorId: string, seconds: number): Promise<void> {
    const k = this.keys.task(coordinatorId);
    const pipeline = this.redis.pipeline();
    for (const key of [k.assignments, k.pendingAssignments, k.slots, k.delegations, k.questions]) pipeline.expire(key, seconds);
    await pipeline.exec();
  }

  async readDelegation(coordinatorId: string, name: string): Promise<DelegationSettings | undefined> {
    const raw = await this.redis.hget(this.keys.task(coordinatorId).delegations, name);
    return raw === null ? undefined : (JSON.parse(raw) as DelegationSettings);
  }

  /** Every assignment of the coordinator (all delegations), in delegation then index order. */
  async readAssignments(coordinatorId: string): Promise<AssignmentRecord[]> {
    const all = await this.redis.hvals(this.keys.task(coordinatorId).assignments);
    return all
      .map((raw) => JSON.parse(raw) as AssignmentRecord)
      .sort((a, b) => a.queuedAtMs - b.queuedAtMs || a.delegation.localeCompare(b.delegation) || a.index - b.index);
  }

  async readAssignment(coordinatorId: string, childId: string): Promise<AssignmentRecord | undefined> {
    const raw = await this.redis.hget(this.keys.task(coordinatorId).assignments, childId);
    return raw === null ? undefined : (JSON.parse(raw) as AssignmentRecord);
  }
}
