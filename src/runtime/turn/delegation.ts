// A turn's part in sub-agent coordination: the ctx.delegate it is offered, parking a
// coordinator's turn for its assignments, and telling a coordinator that a sub-agent's turn ended.
import { textOf, type TurnParked } from '../../coordination/delegator.ts';
import { isTerminal, type TaskState, type TaskStatus } from '../../protocol/types.ts';
import { ownerFromKey, StaleLeaseError } from '../../store/task-store.ts';
import { newId } from '../../ids.ts';
import type { TurnContext, TurnLease } from '../turn-context.ts';
import type { AcquiredLease } from './lease.ts';
import type { TurnRunnerOptions, TurnRunnerSetup } from './options.ts';

/** Offers ctx.delegate to the turn's adapter: refused without coordination, and for a read-only sub-agent. */
export function offerDelegation(runner: TurnRunnerSetup, context: TurnContext, fence: TurnLease, lease: AcquiredLease): void {
  const coordination = runner.options.coordination;
  const readOnly = lease.links?.readOnly === true;
  context.useDelegation(
    coordination === undefined || readOnly ? undefined : (name, assignments, options) => coordination.delegator.delegate(fence, name, assignments, options),
    { resumed: lease.resumed, readOnly },
  );
}

/** Parks a coordinator's turn: no lease, no worker; its assignments' end wakes it. */
export async function park(runner: TurnRunnerSetup, fence: TurnLease, parked: TurnParked): Promise<void> {
  const coordination = runner.options.coordination as NonNullable<TurnRunnerOptions['coordination']>;
  if (!(await coordination.assignments.suspend(fence.taskId, fence.contextId, fence.generation, parked.statusText, newId()))) {
    throw new StaleLeaseError(fence.taskId);
  }
  // A child may have asked its question while this run was still deciding to park.
  await coordination.delegator.surfaceQuestion(fence.taskId);
}

/** A sub-agent's turn ended in `state`: its coordinator learns it (slot freed, next assignment started, coordinator woken). */
export async function tellCoordinator(runner: TurnRunnerSetup, fence: TurnLease, links: { parentTaskId: string } | undefined, state: TaskState, text: string | undefined): Promise<void> {
  const coordination = runner.options.coordination;
  if (coordination === undefined || links === undefined) return;
  await coordination.delegator.childTurnEnded(
    { taskId: fence.taskId, coordinatorId: links.parentTaskId, ownerKey: fence.ownerKey, contextId: fence.contextId, trace: fence.trace },
    state,
    text,
  );
}

/**
 * A turn ended: a sub-agent's coordinator learns it, and a coordinator that ended takes its
 * unfinished assignments with it.
 */
export async function afterTurnEnded(runner: TurnRunnerSetup, fence: TurnLease, lease: AcquiredLease, status: TaskStatus): Promise<void> {
  const coordination = runner.options.coordination;
  if (coordination === undefined) return;
  await tellCoordinator(runner, fence, lease.links, status.state, textOf(status.message));
  if (lease.resumed && isTerminal(status.state)) {
    await coordination.delegator.cancelAssignments(fence.taskId, ownerFromKey(fence.ownerKey));
    await coordination.assignments.expire(fence.taskId, coordination.retentionSeconds);
  }
}
