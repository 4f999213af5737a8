// The status a turn ends with, and how a run of its adapter ended.
import type { OutcomeMessage, OutcomeVerification, TurnOutcome } from '../../../adapters/types.ts';
import type { TurnParked } from '../../coordination/delegator.ts';
import type { Message, TaskState, TaskStatus } from '../../protocol/types.ts';
import { agentMessage, type TurnLease } from '../turn-context.ts';
import type { PendingAppends } from '../turn-write-queue.ts';

/** The task state each adapter outcome leaves. */
export const OUTCOME_STATES: Record<TurnOutcome['state'], TaskState> = {
  completed: 'TASK_STATE_COMPLETED',
  // A direct Message completes the task that keeps the exchange (see src/tasks/direct-reply.ts).
  message: 'TASK_STATE_COMPLETED',
  'input-required': 'TASK_STATE_INPUT_REQUIRED',
  'auth-required': 'TASK_STATE_AUTH_REQUIRED',
  failed: 'TASK_STATE_FAILED',
  rejected: 'TASK_STATE_REJECTED',
};

export const INTERRUPTED_TEXT = 'Stopped: a new message interrupted this turn; the next turn answers it.';

/** How a turn's run ended: an outcome to store, or the turn parked for its assignments. */
export type AdapterRun =
  | {
      status: TaskStatus;
      message: Message | undefined;
      reason?: string;
      verification?: OutcomeVerification;
      interrupted?: boolean;
      /** The adapter answered with a direct Message; finishTurn keeps it as the reply if the client cannot hold the task yet. */
      directReply?: Message;
      /** Appends of the adapter's events still unanswered when this end was decided: the final write goes out behind them (turn/finish.ts). */
      pendingAppends?: PendingAppends;
    }
  | { parked: TurnParked };

/** A run's end that the turn's final write stores (not a park). */
export type TurnEnd = Exclude<AdapterRun, { parked: TurnParked }>;

/** A final status in `state`, its message (if any) from the agent. */
export function finalStatus(fence: TurnLease, state: TaskState, content: OutcomeMessage | undefined): { status: TaskStatus; message: Message | undefined } {
  const message = content === undefined || content === '' ? undefined : agentMessage(fence, content);
  const status: TaskStatus = { state, timestamp: new Date().toISOString() };
  if (message !== undefined) status.message = message;
  return { status, message };
}

/** A failed end whose reason is both the agent's message and the turn record's reason. */
export function failedWith(fence: TurnLease, reason: string): TurnEnd {
  return { ...finalStatus(fence, 'TASK_STATE_FAILED', reason), reason };
}
