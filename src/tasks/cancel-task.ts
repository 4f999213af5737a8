// CancelTask (spec 3.1.5), for the task's owner and for operators: a queued task is canceled at
// once, a running one is asked to stop and waited for (cancelWaitMs); a coordinator's
// assignments are canceled with it, and a canceled sub-agent task is settled on its coordinator.
import type { Delegator } from '../coordination/delegator.ts';
import { A2AError, taskNotFound } from '../protocol/errors.ts';
import { generationConflict } from '../extensions/task-generations.ts';
import { isTerminal, type CancelTaskRequest, type Task } from '../protocol/types.ts';
import { ownerKeyOf, type Owner, type TaskStore } from '../store/task-store.ts';
import { cancelStages } from '../telemetry/metrics.ts';
import { readTaskAnswer } from './task-answer.ts';
import type { TaskEvents } from './task-events.ts';

export interface CancelDeps {
  store: TaskStore;
  events: TaskEvents;
  delegator: Delegator;
  /** How long a cancel of a running task waits for its worker to stop it. */
  cancelWaitMs: number;
}

/**
 * `requestedBy`: an operator canceling the owner's task (recorded on it); undefined for the owner.
 * `expectedGeneration`: refuse (ABORTED, nothing changed) unless the task is at it (task-generations extension).
 * `answersSpliced`: the answer goes through serializeAnswer untranslated (Caller.answersSpliced),
 * so a large task's artifacts may come as the assembly thread's bytes (./task-answer.ts).
 */
export async function cancelTask(deps: CancelDeps, owner: Owner, request: CancelTaskRequest, requestedBy?: string, expectedGeneration?: number, answersSpliced = false): Promise<Task> {
  const { store } = deps;
  const result = await store.gateway.cancelTask(request.id, owner, new Date(), requestedBy, expectedGeneration);
  if (result.kind === 'not-found') throw taskNotFound(request.id);
  if (result.kind === 'generation-mismatch') throw generationConflict(request.id, expectedGeneration ?? 0, result.generation, 'CancelTask');
  // A queued task is canceled here at once (requested and stopped); a running one's worker does the rest.
  if (result.kind === 'canceled' || result.kind === 'requested') cancelStages.inc({ stage: 'requested' });
  if (result.kind === 'canceled') cancelStages.inc({ stage: 'stopped' });
  if (result.kind === 'canceled' || result.kind === 'requested') await propagateCancel(deps, owner, request.id, result.kind);
  if (result.kind === 'not-cancelable') {
    throw new A2AError('TASK_NOT_CANCELABLE', `Task ${request.id} is already ${result.state} and can no longer be canceled.`, {
      metadata: { taskId: request.id, state: result.state },
    });
  }
  if (result.kind === 'requested') {
    // Only the state decides here: a task of tens of megabytes is not read whole to learn it.
    const head = await store.gateway.readTaskHead(request.id, owner);
    if (head !== undefined && !isTerminal(head.state)) {
      await deps.events.waitForTurnEnd(request.id, head.lastEventId, deps.cancelWaitMs, isTerminal);
    }
    const after = await readOwnTask(store, request.id, owner, answersSpliced);
    // The running turn ended on its own before its worker saw the request: the task was not
    // canceled, and answering with its COMPLETED (or FAILED) snapshot would read as success.
    if (isTerminal(after.status.state) && after.status.state !== 'TASK_STATE_CANCELED') {
      throw new A2AError('TASK_NOT_CANCELABLE', `Task ${request.id} reached ${after.status.state} before the cancel request took effect; it was not canceled.`, {
        metadata: { taskId: request.id, state: after.status.state },
      });
    }
    return after;
  }
  return readOwnTask(store, request.id, owner, answersSpliced);
}

/**
 * Canceling a coordinator cancels its assignments (queued ones never start); a sub-agent's
 * task canceled before it ran is settled on its coordinator at once (a running one is
 * settled by its worker).
 */
async function propagateCancel(deps: CancelDeps, owner: Owner, taskId: string, kind: 'canceled' | 'requested'): Promise<void> {
  const { store, delegator } = deps;
  await delegator.cancelAssignments(taskId, owner);
  if (kind !== 'canceled') return;
  const head = await store.gateway.readTaskHead(taskId, owner);
  // The server's own link, never the task's metadata (which a caller could have written).
  const coordinator = head === undefined ? undefined : await store.gateway.parentOf(taskId);
  if (head === undefined || coordinator === undefined) return;
  await delegator.childTurnEnded(
    { taskId, coordinatorId: coordinator, ownerKey: ownerKeyOf(owner), contextId: head.contextId },
    head.state,
    'Canceled by its owner.',
  );
}

/** The task as the answer: a large one assembled off the event loop (./task-answer.ts). */
async function readOwnTask(store: TaskStore, taskId: string, owner: Owner, answersSpliced: boolean): Promise<Task> {
  const read = await readTaskAnswer(store, owner, taskId, undefined, answersSpliced);
  if (read === undefined) throw taskNotFound(taskId);
  return read.task;
}
