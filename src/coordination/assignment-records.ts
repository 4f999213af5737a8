// A coordinator's assignments as the coordinator records them: one record per sub-agent's piece
// of a turn, and the settings of the delegation that made them (stored by
// src/store/assignments/assignment-store.ts).
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
