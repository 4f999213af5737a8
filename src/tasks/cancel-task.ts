// CancelTask (spec 3.1.5), for the task's owner and for operators: a queued task is canceled at
// once, a running one is asked to stop and waited for (cancelWaitMs); a coordinator's
// assignments are canceled with it, and a canceled sub-agent task is settled on its coordinator.
import type { Delegator } from '../coordination/delegator.ts';
import { A2AError, taskNotFound } from '../protocol/errors.ts';
import { generationConflict } from '../extensions/task-generations.ts';
import { isTerminal, type CancelTaskRequest, type Task } from '../protocol/types.ts';
import { ownerKeyOf, type Owner, type TaskStore } from '../store/task-store.ts';
import { cancelStages } from '../telemetry/metrics.ts';
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
 */
export async function cancelTask(deps: CancelDeps, owner: Owner, request: CancelTaskRequest, requestedBy?: string, expectedGeneration?: number): Promise<Task> {
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
    const read = await store.gateway.readTask(request.id, owner, 0);
    if (read !== undefined && !isTerminal(read.task.status.state)) {
      await deps.events.waitForTurnEnd(request.id, read.lastEventId, deps.cancelWaitMs, isTerminal);
    }
    const after = await readOwnTask(store, request.id, owner);
    // The running turn ended on its own before its worker saw the request: the task was not
    // canceled, and answering with its COMPLETED (or FAILED) snapshot would read as success.
    if (isTerminal(after.status.state) && after.status.state !== 'TASK_STATE_CANCELED') {
      throw new A2AError('TASK_NOT_CANCELABLE', `Task ${request.id} reached ${after.status.state} before the cancel request took effect; it was not canceled.`, {
        metadata: { taskId: request.id, state: after.status.state },
      });
    }
    return after;
  }
  return readOwnTask(store, request.id, owner);
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
  const read = await store.gateway.readTask(taskId, owner, 0);
  // The server's own link, never the task's metadata (which a caller could have written).
  const coordinator = read === undefined ? undefined : await store.gateway.parentOf(taskId);
  if (read === undefined || coordinator === undefined) return;
  await delegator.childTurnEnded(
    { taskId, coordinatorId: coordinator, ownerKey: ownerKeyOf(owner), contextId: read.task.contextId },
    read.task.status.state,
    'Canceled by its owner.',
  );
}

async function readOwnTask(store: TaskStore, taskId: string, owner: Owner): Promise<Task> {
  const read = await store.gateway.readTask(taskId, owner, undefined);
  if (read === undefined) throw taskNotFound(taskId);
  return read.task;
}
