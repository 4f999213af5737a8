// Storing a turn's end: its record and final status (fenced by the lease), what it tells the
// caller about its result, the replicas' confirmation, its metrics and log lines, and whether a
// queued follow-up opens the next turn.
import type { OutcomeVerification } from '../../../adapters/types.ts';
import { textOf } from '../../coordination/delegator.ts';
import { VERIFICATION_EXTENSION_URI } from '../../extensions/verification.ts';
import type { Logger } from '../../logging/logger.ts';
import { logFailure } from '../../logging/operator-failures.ts';
import type { JsonObject } from '../../protocol/types.ts';
import { StaleLeaseError, type CarriedEvent, type EventPlace, type FinishResult, type TurnRecord } from '../../store/task-store.ts';
import { cancelStages, turnDuration, turnsFinished } from '../../telemetry/metrics.ts';
import { A2A, markError } from '../../telemetry/spans.ts';
import { markStage } from '../../telemetry/stage-marks.ts';
import type { Span } from '@opentelemetry/api';
import type { TurnJobData } from '../../../queues/turns.ts';
import type { TurnLease } from '../turn-context.ts';
import type { PendingAppends } from '../turn-write-queue.ts';
import { afterTurnEnded } from './delegation.ts';
import type { AcquiredLease } from './lease.ts';
import type { TurnRunnerSetup } from './options.ts';
import { refusalOf } from './adapter-run.ts';
import { failedWith, type TurnEnd } from './status.ts';

/** What opens a turn of a job: the trace it continues (W3C headers), and whether it is the job's first turn. */
export interface FollowUp {
  trace: Record<string, string> | undefined;
  first: boolean;
}

/**
 * What a completed task says about its result (invariant 8): whether the adapter checked it,
 * how and what it found, when the adapter verifies its results or the caller asked (the
 * verification extension). A result nobody asked about says nothing, rather than a "not
 * verified" on every task that would teach readers to ignore it. (Completed is terminal: no
 * later turn's result can inherit this one.)
 */
function outcomeOf(verification: OutcomeVerification | undefined, asked: boolean): JsonObject | undefined {
  if (verification === undefined) return asked ? { verified: false, method: 'none: the agent does not check its results' } : undefined;
  const outcome: JsonObject = { verified: verification.verified, method: verification.method };
  if (verification.evidence !== undefined) outcome.evidence = verification.evidence;
  return outcome;
}

export interface EndingTurn {
  data: TurnJobData;
  fence: TurnLease;
  lease: AcquiredLease;
  record: TurnRecord;
  outcome: TurnEnd;
  agentName: string;
  adapterVersion: string;
  /** process.hrtime.bigint() when the lease was taken. */
  leasedAt: bigint;
  span: Span | undefined;
  logger: Logger;
}

/** Stores the turn's end; what opened the next turn when a queued follow-up did. */
export async function finishTurn(runner: TurnRunnerSetup, ending: EndingTurn): Promise<FollowUp | undefined> {
  const { data, fence, lease, agentName, adapterVersion, leasedAt, span, logger } = ending;
  let { outcome } = ending;
  let finished = await storeEnd(runner, ending, outcome, outcome.pendingAppends);
  if ((finished.kind === 'unstored' || finished.kind === 'refused') && outcome.pendingAppends !== undefined) {
    // It went out behind the adapter's last appends (or carried the last), and they were not all
    // stored: decided again once they have answered, as runAdapter decides when it waits for them
    // (a stale lease throws).
    const refused = await refusalOf(outcome.pendingAppends.settled);
    if (refused !== undefined) {
      logger.warn('turn failed: it tried to store more than a limit allows', { taskId: fence.taskId, turn: lease.turn, reason: refused.message });
      outcome = failedWith(fence, refused.message);
    }
    finished = await storeEnd(runner, ending, outcome, undefined);
  }
  markStage(data.taskId, 'finished');
  if (finished.kind === 'unstored' || finished.kind === 'refused') {
    throw new Error(`finishTurn of task ${data.taskId} answered ${finished.kind} to a call that named and carried no event: a store script out of step with this worker`);
  }
  if (finished.kind === 'stale') {
    logger.warn('turn result discarded: a newer lease holds the task', { taskId: data.taskId, turn: lease.turn });
    return undefined;
  }
  await runner.options.replicaAck?.turnFinished(data.taskId);
  const state = outcome.status.state;
  // An interrupted turn (inputPolicy interrupt) is no cancellation: the task goes on.
  const endedAs = outcome.interrupted === true ? 'interrupted' : state;
  turnsFinished.inc({ agent: agentName, state: endedAs });
  turnDuration.observe({ agent: agentName, state: endedAs }, Number(process.hrtime.bigint() - leasedAt) / 1e9);
  if (endedAs === 'TASK_STATE_CANCELED') cancelStages.inc({ stage: 'stopped' });
  span?.setAttribute(A2A.state, endedAs);
  logger.debug('turn finished', { turn: lease.turn, attempt: lease.attempts, state, workerId: runner.workerId });
  if (state === 'TASK_STATE_FAILED') {
    markError(span, new Error(outcome.reason ?? 'the turn failed'), 'TASK_STATE_FAILED');
    logFailure(logger, 'turn-failed', { cause: outcome.reason ?? (textOf(outcome.status.message) || 'the adapter ended the turn as failed'), turn: lease.turn, attempt: lease.attempts, adapter: adapterVersion });
  }
  if (finished.kind === 'done') await afterTurnEnded(runner, fence, lease, outcome.status);
  return finished.kind === 'next' ? { trace: finished.trace, first: false } : undefined;
}

/**
 * The turn's record and final status stored (fenced). `pending`: the adapter's appends still
 * pending; the final write carries the last one when it can take it (TurnWriteQueue.offerToFinal),
 * else goes out behind them and names the last, which must have been stored first.
 */
async function storeEnd(runner: TurnRunnerSetup, ending: EndingTurn, outcome: TurnEnd, pending: PendingAppends | undefined): Promise<FinishResult> {
  const carried = pending?.takeHeld();
  // Sent after the last append's command, on the same connection: it reaches the store behind it.
  if (pending !== undefined && carried === undefined) await pending.sent;
  let finished: FinishResult;
  try {
    finished = await writeEnd(runner, ending, outcome, carried === undefined ? pending?.last : undefined, carried?.event);
  } catch (error) {
    carried?.settle(error as Error);
    throw error;
  }
  carried?.settle(finished.kind === 'refused' ? finished.refusal : finished.kind === 'stale' ? new StaleLeaseError(ending.data.taskId) : undefined);
  return finished;
}

function writeEnd(runner: TurnRunnerSetup, ending: EndingTurn, outcome: TurnEnd, follows: EventPlace | undefined, carried: CarriedEvent | undefined): Promise<FinishResult> {
  const { data, lease, record } = ending;
  record.finishedAtMs = Date.now();
  record.outcome = outcome.status.state;
  if (outcome.reason !== undefined) record.reason = outcome.reason;
  if (outcome.interrupted === true) record.reason = 'interrupted by a new message (inputPolicy interrupt)';
  return runner.options.store.turns.finishTurn({
    taskId: data.taskId,
    ownerKey: data.ownerKey,
    contextId: lease.contextId,
    generation: lease.generation,
    status: outcome.status,
    agentMessage: outcome.message,
    turnRecord: record,
    artifacts: lease.artifacts,
    // Stage 3 of 3 of a cancellation (stopped) rides on the final status update (an
    // interrupted turn's, on the next turn's first status).
    eventMetadata: outcome.status.state === 'TASK_STATE_CANCELED' ? { cancellation: { stage: 'stopped', at: new Date().toISOString() } } : undefined,
    outcome: outcome.status.state === 'TASK_STATE_COMPLETED' ? outcomeOf(outcome.verification, lease.callerExtensions.includes(VERIFICATION_EXTENSION_URI)) : undefined,
    interrupted: outcome.interrupted === true,
    ...(outcome.directReply === undefined ? {} : { directReply: outcome.directReply }),
    ...(follows === undefined ? {} : { follows }),
    ...(carried === undefined ? {} : { carried }),
    now: new Date(),
  });
}
