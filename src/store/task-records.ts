// Records stored beside a task: what it started under, its turns, its step journal, its links.
import type { JsonObject, JsonValue, TaskState } from '../protocol/types.ts';
import type { TurnUsage } from '../../adapters/types.ts';

/** What a task started under (invariant 9): continuing under an incompatible one is an error. */
export interface TaskVersions {
  gateway: string;
  /** "<adapter name>@<adapter version>" */
  adapter: string;
  card: string;
}

export interface TurnRecord {
  turn: number;
  inputMessageIds: string[];
  acceptedAtMs: number;
  attempts?: number;
  startedAtMs?: number;
  finishedAtMs?: number;
  workerId?: string;
  /** The adapter that ran the turn (name@version), so a result can be traced to its code. */
  adapter?: string;
  outcome?: TaskState;
  reason?: string;
  steps?: { name: string; atMs: number; attempt: number; detail?: JsonObject }[];
  /** Times a shutting-down worker handed the turn back; these did not count as attempts. */
  handBacks?: number;
  /** Units the turn spent across all its attempts (ctx.budget), as of the record's last write. */
  budgetSpent?: number;
  /** The budget the turn ran under (turnBudget), when it had one. */
  budgetLimit?: number;
  /** What the turn's model calls consumed (ctx.recordUsage), across its attempts as recorded. */
  usage?: TurnUsage;
}

/** One side-effecting step in the journal (invariant 4). */
export interface StepRecord {
  name: string;
  turn: number;
  /** Derived from task, turn and step: the key to hand to the external system. */
  idempotencyKey: string;
  /** `unknown`: found started-without-result after a lost attempt and handed to the adapter. */
  state: 'started' | 'done' | 'failed' | 'unknown';
  attempt: number;
  startedAtMs: number;
  finishedAtMs?: number;
  /** An external id the step recorded while running (e.g. a downstream task or payment id). */
  reference?: string;
  value?: JsonValue;
  error?: string;
  /** The attempt the unknown outcome was handed to, for reconciliation. */
  surfacedToAttempt?: number;
}

/** How a sub-agent's task hangs off its coordinator. */
export interface TaskLinks {
  parentTaskId: string;
  role: string;
  /** A reviewer: it may not journal side effects or delegate. */
  readOnly: boolean;
}
