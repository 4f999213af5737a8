// The task's lease on the worker side: taken before a turn runs (the store's acquireLease script
// checks and fences it), renewed while the turn runs, given back at shutdown.
import type { AgentLimits } from '../../agents/agent-settings.ts';
import { StaleLeaseError, type AcquiredLease, type LeaseResult, type TurnRecord } from '../../store/task-store.ts';
import type { TurnJobData } from '../../../queues/turns.ts';
import type { TurnLease } from '../turn-context.ts';
import { TurnHandedBackError } from './errors.ts';
import type { TurnRunnerSetup } from './options.ts';

export type { AcquiredLease };
/** No lease: the turn's attempts are used up by workers lost while running it. */
export type ExhaustedLease = Extract<LeaseResult, { kind: 'exhausted' }>;

/** Takes the lease of the job's task for this worker, the open turn's deadline and attempts counted; `withoutJob`: no queue job carries the run. */
export function acquireTurnLease(runner: TurnRunnerSetup, data: TurnJobData, limits: AgentLimits, withoutJob: boolean): Promise<LeaseResult> {
  return runner.options.store.turns.acquireLease({
    taskId: data.taskId,
    ownerKey: data.ownerKey,
    contextId: data.contextId,
    workerId: runner.workerId,
    leaseTtlMs: runner.options.leaseTtlMs,
    turnDeadlineMs: limits.turnDeadlineMs,
    maxTurnAttempts: runner.options.maxTurnAttempts,
    withoutJob,
    now: new Date(),
  });
}

/** Renews the lease every third of its time-to-live until the returned function is called. */
export function keepLeaseRenewed(runner: TurnRunnerSetup, taskId: string): () => void {
  const { store, leaseTtlMs } = runner.options;
  const renew = setInterval(() => {
    store.turns.renewLease(taskId, runner.workerId, leaseTtlMs).catch(() => undefined);
  }, Math.max(50, Math.floor(leaseTtlMs / 3)));
  renew.unref();
  return () => clearInterval(renew);
}

/**
 * Gives the turn back to the queue at shutdown. The attempt is undone in the same script
 * that releases the lease (fenced), so hand-backs never use up maxTurnAttempts.
 */
export async function handBack(runner: TurnRunnerSetup, fence: TurnLease, record: TurnRecord): Promise<never> {
  const handedBack: TurnRecord = { ...record, attempts: Math.max(0, (record.attempts ?? 1) - 1), handBacks: (record.handBacks ?? 0) + 1 };
  if (!(await runner.options.store.turns.handBackTurn(fence.taskId, runner.workerId, fence.generation, handedBack))) throw new StaleLeaseError(fence.taskId);
  throw new TurnHandedBackError(fence.taskId);
}

/**
 * Gives back a lease a task's create took for a run that stopped before its turn started (the
 * owner's running share full, shutdown, Redis trouble): as a hand-back, so the attempt is undone
 * and the job that takes the turn over finds the lease free. Fenced: a newer lease is left alone.
 */
export async function giveBackUnstarted(runner: TurnRunnerSetup, taskId: string, lease: AcquiredLease): Promise<void> {
  const record: TurnRecord = { ...(lease.turnRecord ?? { turn: lease.turn, inputMessageIds: [], acceptedAtMs: Date.now() }), attempts: 0, handBacks: lease.handBacks + 1 };
  await runner.options.store.turns.handBackTurn(taskId, runner.workerId, lease.generation, record).catch(() => false);
}
