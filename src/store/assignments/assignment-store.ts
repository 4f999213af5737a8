// A coordinator's assignments in Redis: the delegations it made, each assignment's state, the
// FIFO queue of assignments waiting for a slot, and the slots in use. All of it lives under the
// coordinator's hash tag, so every change is one script next to the coordinator's task.
import type { RedisClient } from '../../redis/connection.ts';
import type { StreamResponse, TaskStatus } from '../../protocol/types.ts';
import type { AssignmentRecord, DelegationSettings, SettledState } from '../../coordination/assignment-records.ts';
import { RedisKeys } from '../keys.ts';
import { DEFAULT_REPLAY_BOUND, type ReplayBound } from '../replay-bound.ts';
import { scriptCaller, type ScriptCaller } from '../script-call.ts';
import {
  grantSlotsScript,
  registerAssignmentsScript,
  settleAssignmentScript,
  surfaceQuestionScript,
  suspendTurnScript,
  type SettleReply,
} from '../assignment-scripts.ts';

export type SettleResult = SettleReply;

export class AssignmentStore {
  private readonly call: ScriptCaller;
  private readonly keys: RedisKeys;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
    replay: ReplayBound = DEFAULT_REPLAY_BOUND,
  ) {
    this.keys = new RedisKeys(prefix);
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
