// What a task keeps about its downstream task between turns and workers (ctx.adapterState):
// which downstream task and context a follow-up continues, and how the last turn left it.
import type { TaskState, TaskStatus } from '../../src/protocol/types.ts';

/** adapterState key: the downstream task and context this task continues. */
export const DOWNSTREAM_STATE_KEY = 'downstream';

/** Which downstream status a turn saw last: its message id, else its timestamp. */
export type StatusMark = { messageId: string | null; timestamp: string | null };

/** What adapterState keeps between turns (and workers). */
export type DownstreamState = {
  /** The turn that wrote it. */
  turn: number;
  /** null after a direct Message reply (no downstream task). */
  taskId: string | null;
  contextId: string | null;
  /** The downstream task's state when the turn ended. */
  state: TaskState | null;
  /** The downstream status the turn ended on. */
  status: StatusMark | null;
};

const INTERRUPTED: ReadonlySet<TaskState> = new Set(['TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED']);

/** True when the earlier turn ended on a downstream question, so this turn's input answers it. */
export function continues(previous: DownstreamState | undefined): boolean {
  return previous?.taskId != null && previous.state !== null && INTERRUPTED.has(previous.state);
}

export function markOf(status: TaskStatus): StatusMark {
  return { messageId: status.message?.messageId ?? null, timestamp: status.timestamp ?? null };
}

/** True when `status` is the one `mark` recorded. */
export function sameStatus(status: TaskStatus, mark: StatusMark | null): boolean {
  if (mark === null) return false;
  const messageId = status.message?.messageId ?? null;
  return messageId !== null ? messageId === mark.messageId : mark.messageId === null && (status.timestamp ?? null) === mark.timestamp;
}

