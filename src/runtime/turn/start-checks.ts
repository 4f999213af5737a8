// What is decided before a turn's adapter runs: a shutdown, cancel or interrupt that came first,
// an adapter the task cannot move to, a deadline or budget a lost worker's run already passed.
import { TURN_INTERRUPTED, WORKER_SHUTDOWN } from '../../../adapters/abort-reasons.ts';
import type { AgentLimits } from '../../agents/agent-settings.ts';
import type { TurnRecord } from '../../store/task-store.ts';
import type { TurnLease } from '../turn-context.ts';
import { budgetReason } from '../turn-budget.ts';
import { isCompatibleAdapter } from '../version-policy.ts';
import { deadlineReason } from './deadline.ts';
import { handBack, type AcquiredLease } from './lease.ts';
import type { TurnRunnerSetup } from './options.ts';
import { failedWith, finalStatus, INTERRUPTED_TEXT, type AdapterRun } from './status.ts';

export interface StartingTurn {
  fence: TurnLease;
  lease: AcquiredLease;
  record: TurnRecord;
  controller: AbortController;
  limits: AgentLimits;
  /** `name@version` of the adapter this worker would run the turn with. */
  adapterVersion: string;
  /** The turn's budget (undefined = none). */
  budgetLimit: number | undefined;
}

/** How the turn ends without its adapter running; undefined when the adapter runs it. */
export async function checkBeforeStart(runner: TurnRunnerSetup, starting: StartingTurn): Promise<AdapterRun | undefined> {
  const { fence, lease, record, controller, limits, adapterVersion, budgetLimit } = starting;
  const { store } = runner.options;
  if (controller.signal.reason === WORKER_SHUTDOWN && lease.cancelRequestedAtMs === undefined) {
    // Shutdown began while the lease was being taken: this is a hand-back, not a cancel.
    await handBack(runner, fence, record);
  }
  const interrupted = lease.cancelRequestedAtMs === undefined && (lease.interrupted || controller.signal.reason === TURN_INTERRUPTED);
  if (interrupted) {
    // A new message asked this turn to stop before its adapter ran here (or while a lost
    // worker ran it): the next turn takes over with everything queued.
    await store.turns.acknowledgeCancel({ taskId: fence.taskId, contextId: lease.contextId, generation: lease.generation, status: lease.status, interruptedTurn: lease.turn, now: new Date() });
    return { ...finalStatus(fence, 'TASK_STATE_CANCELED', INTERRUPTED_TEXT), interrupted: true };
  }
  if (lease.cancelRequestedAtMs !== undefined || controller.signal.aborted) {
    await store.turns.acknowledgeCancel({ taskId: fence.taskId, contextId: lease.contextId, generation: lease.generation, status: lease.status, now: new Date() });
    return finalStatus(fence, 'TASK_STATE_CANCELED', 'Canceled before the turn started.');
  }
  if (lease.versions !== undefined && !isCompatibleAdapter(lease.versions.adapter, adapterVersion)) {
    return failedWith(
      fence,
      `Task ${fence.taskId} started under adapter ${lease.versions.adapter}; this worker runs ${adapterVersion}, which is not compatible (different name or major version). Run a compatible worker, or start a new task.`,
    );
  }
  if (lease.deadlineAtMs !== undefined && Date.now() >= lease.deadlineAtMs) return failedWith(fence, deadlineReason(lease.turn, limits));
  // A lost worker's last charge passed the limit before it could fail the turn.
  if (budgetLimit !== undefined && lease.budgetSpent > budgetLimit) return failedWith(fence, budgetReason(lease.turn, lease.budgetSpent, budgetLimit));
  return undefined;
}
