// One run of a turn's adapter: its context (fenced by the lease), its deadline, its span, and the
// end the run decides: an outcome, a failure, a cancel, an interrupt or a park for assignments.
import type { Adapter, CallerIdentity, TurnOutcome } from '../../../adapters/types.ts';
import { TURN_DEADLINE, TURN_INTERRUPTED, WORKER_SHUTDOWN } from '../../../adapters/abort-reasons.ts';
import { delegationChain } from '../../auth/caller-identity.ts';
import type { AgentLimits } from '../../agents/agent-settings.ts';
import { isOutputLimitError } from '../../limits/output-limits.ts';
import { isConsumerBudgetError, type TurnMeter } from '../../consumers/consumer-meter.ts';
import type { Logger } from '../../logging/logger.ts';
import type { JsonValue, Message } from '../../protocol/types.ts';
import { isRedisCommandTooLargeError } from '../../redis/connection.ts';
import { ownerFromKey, type TurnRecord } from '../../store/task-store.ts';
import { asDirectReply } from '../../tasks/direct-reply.ts';
import { A2A, GEN_AI, inSpan } from '../../telemetry/spans.ts';
import { AdapterContractError, checkOutcome } from '../adapter-contract.ts';
import { budgetReason } from '../turn-budget.ts';
import { TurnContext, type TurnLease } from '../turn-context.ts';
import type { PendingAppends } from '../turn-write-queue.ts';
import { deadlineReason, watchDeadline } from './deadline.ts';
import { offerDelegation } from './delegation.ts';
import { handBack, type AcquiredLease } from './lease.ts';
import type { TurnRunnerSetup } from './options.ts';
import type { RunningTurn } from './running-turns.ts';
import { failedWith, finalStatus, INTERRUPTED_TEXT, OUTCOME_STATES, type AdapterRun } from './status.ts';

/** Who a task's turn runs for, as its adapter sees it (ctx.caller). */
function callerOf(ownerKey: string, scopes: readonly string[], delegatedBy: readonly string[]): CallerIdentity {
  const { agent, tenant, subject } = ownerFromKey(ownerKey);
  return { agent, tenant, principal: subject, scopes, ...(delegatedBy.length === 0 ? {} : { delegatedBy }) };
}

/** Characters of text in parts (what a model's input is estimated from). */
const textChars = (parts: readonly { text?: string }[]): number => parts.reduce((n, part) => n + (typeof part.text === 'string' ? part.text.length : 0), 0);

/** The meter of the turn's consumer, if its owner is one's (src/consumers/consumer-meter.ts). */
function meterOf(runner: TurnRunnerSetup, ownerKey: string): TurnMeter | undefined {
  const meters = runner.options.consumerMeters;
  if (meters === undefined) return undefined;
  const { agent, tenant, subject } = ownerFromKey(ownerKey);
  return meters.forTurn(tenant, subject, runner.options.agents.get(agent)?.settings);
}

export interface AdapterTurn {
  adapter: Adapter;
  limits: AgentLimits;
  fence: TurnLease;
  lease: AcquiredLease;
  input: Message[];
  record: TurnRecord;
  turn: RunningTurn;
  logger: Logger;
}

export async function runAdapter(runner: TurnRunnerSetup, { adapter, limits, fence, lease, input, record, turn, logger }: AdapterTurn): Promise<AdapterRun> {
  const { options } = runner;
  const { controller } = turn;
  const first = input[0];
  const skill = first?.metadata?.skill;
  // A sub-agent's coordinators (the caller identity a backend is told names them as actors).
  const delegatedBy = lease.links === undefined ? [] : await delegationChain(lease.links.parentTaskId, (id) => options.store.gateway.parentOf(id));
  const meter = meterOf(runner, fence.ownerKey);
  // A consumer whose token or spend budget is spent gets no model call: the turn fails at once.
  const spent = meter === undefined ? undefined : await meter.start(input.reduce((n, message) => n + textChars(message.parts), 0));
  if (spent !== undefined) return failedWith(fence, spent.message);
  const context = new TurnContext({
    store: options.store,
    lease: fence,
    turn: lease.turn,
    attempt: lease.attempts,
    input,
    history: lease.history.slice(0, lease.turnInputStart),
    artifacts: lease.artifacts,
    artifactBytes: lease.artifactBytes,
    requestedSkill: typeof skill === 'string' ? skill : undefined,
    signal: controller.signal,
    turnRecord: record,
    adapterName: adapter.name,
    emitScope: `${lease.turn}.${lease.resumption}`,
    mayRepeatEarlierRun: lease.attempts > 1 || lease.handBacks > 0,
    logger,
    caller: callerOf(fence.ownerKey, lease.callerScopes, delegatedBy),
    extensions: lease.callerExtensions,
    outputLimits: { maxArtifactBytes: limits.maxArtifactBytes, maxTurnOutputBytes: limits.maxTurnOutputBytes, maxTaskOutputBytes: limits.maxTaskOutputBytes },
    ...(options.byteRates === undefined ? {} : { outputPacer: options.byteRates.outputPacer(fence.ownerKey) }),
    readContextHistory: (maxTasks) => options.store.turns.readContextHistory(fence.ownerKey, fence.contextId, fence.taskId, maxTasks),
    ...(meter === undefined ? {} : { meter }),
  });
  const budgetLimit = limits.turnBudget > 0 ? limits.turnBudget : undefined;
  const budget = context.useBudget(budgetLimit, lease.budgetSpent);
  offerDelegation(runner, context, fence, lease);
  // Stage 2 of a cancellation goes through the context's write queue, so it is stored after
  // whatever the adapter emitted before and before the final status.
  turn.acknowledge = (interruptedTurn) => void context.acknowledgeCancel(interruptedTurn).catch(() => undefined);
  if (controller.signal.aborted && controller.signal.reason !== WORKER_SHUTDOWN) turn.acknowledge(controller.signal.reason === TURN_INTERRUPTED ? lease.turn : undefined);
  // The lease script already recorded who runs which attempt; the record is written with
  // the outcome (and by recordStep), so starting a turn costs no extra round trip.
  record.startedAtMs = Date.now();
  let result: TurnOutcome | undefined;
  let failure: Error | undefined;
  const deadline = watchDeadline(controller, lease.deadlineAtMs);
  try {
    const agentName = ownerFromKey(fence.ownerKey).agent;
    // GenAI convention: the adapter's run is an invoke_agent span of the agent it runs for.
    const running = inSpan(
      `invoke_agent ${agentName}`,
      {
        attributes: {
          [GEN_AI.operationName]: 'invoke_agent',
          [GEN_AI.agentName]: agentName,
          [GEN_AI.conversationId]: fence.contextId,
          [A2A.adapter]: `${adapter.name}@${adapter.version}`,
          [A2A.taskId]: fence.taskId,
        },
        parent: fence.trace,
      },
      (_span, own) => {
        context.useTrace(own);
        return adapter.run(context);
      },
    );
    result = await Promise.race([running, deadline.abandoned]);
  } catch (error) {
    failure = error instanceof Error || error instanceof DOMException ? (error as Error) : new Error(String(error as JsonValue));
  } finally {
    deadline.stop();
  }
  if (failure !== undefined && controller.signal.reason === TURN_DEADLINE) {
    turn.acknowledge = undefined;
    await context.settle().catch(() => undefined);
    return failedWith(fence, deadlineReason(lease.turn, limits));
  }
  // From here on the turn is deciding its end: a cancel seen now is not acknowledged (it would
  // land after the final status); the finish script records whether it came too late.
  turn.acknowledge = undefined;
  // Everything the adapter emitted (and an acknowledgement already queued) is stored before
  // the final status is. A write refused for what it would store (an output bound, a command
  // past redisMaxCommandBytes) ends the turn here, whatever the adapter did with the error:
  // running it again would be refused again. When the writes still pending are all appends of
  // the adapter's events (an adapter that returns right after emitting its result without
  // awaiting it), the final write goes out behind them without waiting for their answers (one
  // round trip less), or carries the last of them when it is the only one and still held back,
  // and ends the turn only if that event was stored; finishTurn waits for them and decides again
  // when it was not (turn/finish.ts).
  const pendingAppends = failure === undefined && !controller.signal.aborted && context.parkedAs === undefined ? context.pendingAppends() : undefined;
  let refused: Error | undefined;
  if (pendingAppends === undefined) {
    refused = await refusalOf(context.settle());
  } else {
    pendingAppends.settled.catch(() => undefined);
  }
  if (refused !== undefined && !controller.signal.aborted) {
    logger.warn('turn failed: it tried to store more than a limit allows', { taskId: fence.taskId, turn: lease.turn, reason: refused.message });
    return failedWith(fence, refused.message);
  }
  // Parked by ctx.delegate (even if the adapter caught it): the turn waits for its assignments.
  if (context.parkedAs !== undefined && !controller.signal.aborted) return { parked: context.parkedAs };
  // Decided whatever the adapter did with the error: the spending is recorded and final.
  if (budget.exceeded !== undefined && budgetLimit !== undefined) return following(pendingAppends, failedWith(fence, budgetReason(lease.turn, budget.spent(), budgetLimit, budget.exceeded)));
  if (meter?.exceeded !== undefined && !controller.signal.aborted) return following(pendingAppends, failedWith(fence, meter.exceeded.message));
  // An adapter that failed or was stopped has no appends pending here (pendingAppends is undefined).
  if (failure !== undefined) {
    if (controller.signal.reason === WORKER_SHUTDOWN) await handBack(runner, fence, record);
    if (controller.signal.reason === TURN_INTERRUPTED) return { ...finalStatus(fence, 'TASK_STATE_CANCELED', INTERRUPTED_TEXT), interrupted: true };
    if (controller.signal.aborted) return finalStatus(fence, 'TASK_STATE_CANCELED', 'Canceled while running.');
  }
  // A broken contract fails the turn once, whatever the adapter did with the error it got:
  // retrying would break it again, and a task must never be left without a valid state.
  let outcome: TurnOutcome | undefined;
  try {
    if (context.contractViolation !== undefined) throw context.contractViolation;
    if (failure === undefined) outcome = checkOutcome(result, adapter.name, { directMessages: adapter.directMessages === true });
  } catch (error) {
    if (!(error instanceof AdapterContractError)) throw error;
    // The turn-failed line below carries the violation as its cause.
    logger.debug('adapter broke its contract; the turn fails', { taskId: fence.taskId, turn: lease.turn, adapter: `${adapter.name}@${adapter.version}`, reason: error.message });
    return following(pendingAppends, failedWith(fence, error.message));
  }
  if (outcome === undefined) return failedWith(fence, `The ${adapter.name} adapter failed: ${(failure as Error).message}`);
  const final = finalStatus(fence, OUTCOME_STATES[outcome.state], outcome.message);
  if (outcome.state === 'message' && final.message !== undefined && lease.links === undefined && lease.turn === 1) {
    // A sub-agent's and a later turn's client holds the task already: for them it just completes.
    return following(pendingAppends, { ...final, directReply: asDirectReply(final.message) });
  }
  return following(pendingAppends, outcome.state === 'completed' && outcome.verification !== undefined ? { ...final, verification: outcome.verification } : final);
}

/** A run's end, with the appends its final write goes out behind (see runAdapter). */
function following(pendingAppends: PendingAppends | undefined, run: AdapterRun): AdapterRun {
  return pendingAppends === undefined || 'parked' in run ? run : { ...run, pendingAppends };
}

/** The failure of the turn's writes that ends it as failed (an output bound, a command too large, a consumer's budget); other failures are thrown. */
export async function refusalOf(settled: Promise<void>): Promise<Error | undefined> {
  try {
    await settled;
    return undefined;
  } catch (error) {
    if (isOutputLimitError(error) || isRedisCommandTooLargeError(error) || isConsumerBudgetError(error)) return error;
    throw error;
  }
}
