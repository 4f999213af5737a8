// What an adapter hands to sub-agents (ctx.delegate) and what it gets back. Results are
// evidence about what each sub-agent did (state, artifacts, messages), never permission:
// the coordinator decides what to make of them.
import type { Artifact, JsonObject, Part } from '../src/protocol/types.ts';

/** One sub-agent's piece of work: which role does it, with which input. */
export interface Assignment {
  /** A role name from the `delegation.roles` setting (an unknown role runs on the demo adapter). */
  role: string;
  /** The sub-agent's input message: text, or parts. */
  input: string | Part[];
  /** Stored on the child task's metadata (next to `a2aGateway.parentTaskId`). */
  metadata?: JsonObject;
}

export interface DelegationOptions {
  /** Assignments of this coordinator that run at once (default: the `delegation.maxParallel` setting, 4). */
  maxParallel?: number;
  /** Per-role limits within this coordinator, e.g. `{ researcher: 2 }` (default: the role's setting). */
  roleLimits?: Record<string, number>;
  /**
   * `continue` (default): every assignment runs to its end, failures are reported in the result.
   * `fail-fast`: the first failed, rejected or canceled assignment cancels the rest (queued ones
   * never start) and `delegate` rejects with DelegationFailedError carrying the evidence.
   */
  onFailure?: 'continue' | 'fail-fast';
  /**
   * A read-only reviewer that sees every result once all assignments settled; its verdict is
   * recorded on the coordinator (an artifact `review`) and returned as `review`.
   */
  reviewer?: { role: string; instructions?: string };
}

/** What one assignment did. */
export interface AssignmentEvidence {
  index: number;
  role: string;
  /** The child task: the owner can GetTask and SubscribeToTask it. */
  taskId: string;
  state: 'completed' | 'failed' | 'canceled' | 'rejected';
  artifacts: Artifact[];
  /** The child's final status message. */
  message?: string;
}

export interface DelegationResult {
  name: string;
  onFailure: 'continue' | 'fail-fast';
  /** In assignment order. */
  assignments: AssignmentEvidence[];
  completed: number;
  /** Failed or rejected. */
  failed: number;
  canceled: number;
  review?: { taskId: string; role: string; state: AssignmentEvidence['state']; verdict: string; artifacts: Artifact[] };
}

/** Rejects `delegate` under the fail-fast policy; the adapter may catch it and decide. */
export class DelegationFailedError extends Error {
  constructor(
    readonly result: DelegationResult,
    readonly failedAssignment: AssignmentEvidence,
  ) {
    super(
      `Assignment ${failedAssignment.index} (${failedAssignment.role}, task ${failedAssignment.taskId}) ended ${failedAssignment.state}` +
        `${failedAssignment.message === undefined ? '' : `: ${failedAssignment.message}`}; the delegation "${result.name}" failed fast and canceled the rest.`,
    );
    this.name = 'DelegationFailedError';
  }
}
