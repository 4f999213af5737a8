// A turn's attempts across workers: a run whose worker was lost (killed, or its lease lapsed) is
// taken over by another attempt, up to maxTurnAttempts; past it the turn fails.
import { logFailure } from '../../logging/operator-failures.ts';
import type { Logger } from '../../logging/logger.ts';
import type { JsonObject, TaskStatus } from '../../protocol/types.ts';
import { GATEWAY_METADATA_KEY, type TurnRecord } from '../../store/task-store.ts';
import { turnsFinished } from '../../telemetry/metrics.ts';
import type { TraceContext } from '../../telemetry/spans.ts';
import type { TurnJobData } from '../../../queues/turns.ts';
import { agentMessage, type TurnLease } from '../turn-context.ts';
import { tellCoordinator } from './delegation.ts';
import type { AcquiredLease, ExhaustedLease } from './lease.ts';
import type { TurnRunnerSetup } from './options.ts';
import { finalStatus } from './status.ts';

/** Another run of this turn was lost: says which, so an operator can follow a turn across workers. */
export function reportWorkerLost(runner: TurnRunnerSetup, lease: AcquiredLease, logger: Logger, jobId: string): void {
  logFailure(logger, 'worker-lost', {
    cause: `the worker running this turn${lease.turnRecord?.workerId === undefined ? '' : ` (${lease.turnRecord.workerId})`} stopped renewing its lease: killed, or cut off from Redis for longer than lockDurationMs`,
    turn: lease.turn,
    attempt: lease.attempts,
    maxTurnAttempts: runner.options.maxTurnAttempts,
    resumption: lease.resumption,
    previousWorker: lease.turnRecord?.workerId,
    workerId: runner.workerId,
    jobId,
  });
}

/**
 * Tells the task's watchers that the turn goes on after its worker was lost: until now they
 * heard nothing (a lost worker says nothing; stall detection finds it one lock period later).
 * Appended outside the adapter's emit sequence, so a re-run's own events still match the
 * earlier run's and are not stored twice.
 */
export async function announceResumption(runner: TurnRunnerSetup, fence: TurnLease, turn: number, attempt: number): Promise<void> {
  const { maxTurnAttempts } = runner.options;
  const text = `The worker running this turn was lost; another worker resumes it now (attempt ${attempt} of ${maxTurnAttempts}, maxTurnAttempts).`;
  const status: TaskStatus = { state: 'TASK_STATE_WORKING', message: agentMessage(fence, text), timestamp: new Date().toISOString() };
  const metadata: JsonObject = { [GATEWAY_METADATA_KEY]: { workerLost: { turn, attempt, maxTurnAttempts } } };
  await runner.options.store.turns.appendEvents({
    taskId: fence.taskId,
    ownerKey: fence.ownerKey,
    contextId: fence.contextId,
    generation: fence.generation,
    artifacts: undefined,
    status,
    events: [{ statusUpdate: { taskId: fence.taskId, contextId: fence.contextId, status, metadata } }],
    now: new Date(),
  });
}

/**
 * Fails a turn whose attempts used up maxTurnAttempts, each one's worker lost while running it
 * (the store's acquireLease answers `exhausted`). Nothing the lost runs stored is read or written
 * again: what they grew (artifacts, an answer) may be what killed them, so the stored artifacts
 * stay as they are.
 */
export async function failExhausted(runner: TurnRunnerSetup, data: TurnJobData, lease: ExhaustedLease, trace: TraceContext, logger: Logger, agentName: string): Promise<undefined> {
  const lost = lease.lostWorkers.filter((worker) => worker.turn === lease.turn).map((worker) => worker.workerId);
  const reason =
    `Turn ${lease.turn} was not run again: its ${lease.attempts - 1} attempts reached maxTurnAttempts (${runner.options.maxTurnAttempts}), and the worker running it was lost each time` +
    `${lost.length === 0 ? '' : ` (${[...new Set(lost)].join(', ')})`}. Something in this turn stops the workers that run it (a backend's output, the adapter); ` +
    'the task keeps the lost workers (lostWorkers, shown by inspect). Send the message as a new task, or raise maxTurnAttempts.';
  const fence: TurnLease = { taskId: data.taskId, contextId: lease.contextId, ownerKey: data.ownerKey, generation: lease.generation, callerScopes: [], trace };
  const status = finalStatus(fence, 'TASK_STATE_FAILED', reason);
  const record: TurnRecord = {
    ...(lease.turnRecord ?? { turn: lease.turn, inputMessageIds: [], acceptedAtMs: Date.now() }),
    attempts: lease.attempts - 1,
    workerId: runner.workerId,
    finishedAtMs: Date.now(),
    outcome: 'TASK_STATE_FAILED',
    reason,
  };
  logFailure(logger, 'turn-failed', { cause: reason, taskId: data.taskId, contextId: lease.contextId, agent: agentName, owner: data.ownerKey, turn: lease.turn, attempts: lease.attempts - 1, lostWorkers: lost });
  const finished = await runner.options.store.turns.finishTurn({
    taskId: data.taskId,
    ownerKey: data.ownerKey,
    contextId: lease.contextId,
    generation: lease.generation,
    status: status.status,
    agentMessage: status.message,
    turnRecord: record,
    artifacts: undefined,
    now: new Date(),
  });
  if (finished.kind === 'stale') return undefined;
  turnsFinished.inc({ agent: agentName, state: 'TASK_STATE_FAILED' });
  if (finished.kind === 'done') await tellCoordinator(runner, fence, lease.links, 'TASK_STATE_FAILED', reason);
  return undefined;
}
