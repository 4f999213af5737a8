// Runs a task's open turn on a worker: take the lease, run the adapter with a fenced context,
// store the outcome, and continue with queued follow-ups while the lease is ours.
import { VERIFICATION_EXTENSION_URI } from '../extensions/verification.ts';
import { hostname } from 'node:os';
import type { Job } from 'bullmq';
import type { ByteRates } from '../limits/byte-rates.ts';
import { isCluster, isRedisCommandTooLargeError, type RedisClient } from '../redis/connection.ts';
import { isOutputLimitError } from '../limits/output-limits.ts';
import { newId } from '../ids.ts';
import type { Adapter, CallerIdentity, OutcomeMessage, OutcomeVerification, TurnOutcome } from '../../adapters/types.ts';
import { taskCanceled, TURN_DEADLINE, TURN_INTERRUPTED, WORKER_SHUTDOWN } from '../../adapters/abort-reasons.ts';
import { AdapterContractError, checkOutcome } from './adapter-contract.ts';
import { turnQueueName, type TurnJobData } from '../../queues/turns.ts';
import { withFields, type Logger } from '../logging/logger.ts';
import { logFailure } from '../logging/operator-failures.ts';
import { isTerminal, type JsonObject, type JsonValue, type Message, type TaskState, type TaskStatus } from '../protocol/types.ts';
import { GATEWAY_METADATA_KEY, ownerFromKey, StaleLeaseError, type TaskStore, type TurnRecord } from '../store/task-store.ts';
import { agentMessage, TurnContext, type TurnLease } from './turn-context.ts';
import { budgetReason } from './turn-budget.ts';
import type { AssignmentStore } from '../coordination/assignment-store.ts';
import { textOf, TurnParked, type Delegator } from '../coordination/delegator.ts';
import type { Agent, Agents } from '../agents/agents.ts';
import type { AgentLimits } from '../agents/agent-settings.ts';
import { isCompatibleAdapter } from './version-policy.ts';
import { asDirectReply } from '../tasks/direct-reply.ts';
import { cancelStages, leaseTakeovers, queueWait, turnDuration, turnsFinished } from '../telemetry/metrics.ts';
import { A2A, activeContext, contextOfCarrier, GEN_AI, inSpan, markError, SpanKind, spanOf, traceIdsOf, type TraceContext } from '../telemetry/spans.ts';
import { tracingEnabled } from '../telemetry/tracing.ts';
import type { Attributes, Span } from '@opentelemetry/api';
import type { ReplicaAck } from '../redis/replica-ack.ts';
import { markStage } from '../telemetry/stage-marks.ts';
import { isShareFull, type RunningShare, type RunningShareFull, type RunningSlot } from '../../queues/running-share.ts';

const OUTCOME_STATES: Record<TurnOutcome['state'], TaskState> = {
  completed: 'TASK_STATE_COMPLETED',
  // A direct Message completes the task that keeps the exchange (see src/tasks/direct-reply.ts).
  message: 'TASK_STATE_COMPLETED',
  'input-required': 'TASK_STATE_INPUT_REQUIRED',
  'auth-required': 'TASK_STATE_AUTH_REQUIRED',
  failed: 'TASK_STATE_FAILED',
  rejected: 'TASK_STATE_REJECTED',
};

/** Thrown so BullMQ hands the job to another worker at once: this one is shutting down. */
export class TurnHandedBackError extends Error {
  constructor(taskId: string) {
    super(`Turn of task ${taskId} handed back: its worker is shutting down; another worker continues it.`);
    this.name = 'TurnHandedBackError';
  }
}

/** The abort reason that means "this worker stops", as opposed to "the task was canceled". */
const SHUTDOWN = WORKER_SHUTDOWN;
/** The abort reason of a turn that ran past its deadline. */
const DEADLINE = TURN_DEADLINE;
/** The abort reason of a turn a new message interrupted (input policy interrupt): the task goes on. */
const INTERRUPT = TURN_INTERRUPTED;
/** How long an adapter may keep running after its abort signal fired for the deadline. */
const DEADLINE_GRACE_MS = 5_000;
const INTERRUPTED_TEXT = 'Stopped: a new message interrupted this turn; the next turn answers it.';

/** What opens a turn of a job: the trace it continues (W3C headers), and whether it is the job's first turn. */
interface FollowUp {
  trace: Record<string, string> | undefined;
  first: boolean;
}

interface RunningTurn {
  /** The agent whose turn this is (a2a_active_turns). */
  agent: string;
  /** Aborts the current turn's adapter; a fresh one for each turn the job runs. */
  controller: AbortController;
  /** The turn running now (known once its lease is taken). */
  turn: number | undefined;
  /** Records that this worker saw a cancel or interrupt request (set once the turn's context exists). */
  acknowledge: ((interruptedTurn?: number) => void) | undefined;
}

/**
 * Thrown before a turn starts when its owner or tenant already runs its share of turns
 * (limits.maxRunningTurnsPerOwner, limits.maxRunningTurnsPerTenant): the job goes back to the
 * queue for a moment, without spending an attempt, and the worker takes someone else's turn.
 */
export class TurnDeferredError extends Error {
  constructor(
    taskId: string,
    readonly share: RunningShareFull,
  ) {
    super(
      `Turn of task ${taskId} deferred: its ${share.full} runs ${share.running} turns, its share (limits.${share.full === 'owner' ? 'maxRunningTurnsPerOwner' : 'maxRunningTurnsPerTenant'} = ${share.cap}); it runs once one of them ends.`,
    );
    this.name = 'TurnDeferredError';
  }
}

/** Thrown so BullMQ retries later: another live worker holds the task's lease right now. */
export class LeaseHeldError extends Error {
  constructor(taskId: string, holder: string) {
    super(`Task ${taskId} is leased by ${holder}; retrying once that lease ends.`);
    this.name = 'LeaseHeldError';
  }
}

export interface TurnRunnerOptions {
  store: TaskStore;
  /** The agents whose turns this runner may run: a task's owner names its agent, whose adapter (or role adapter) runs it under its limits. */
  agents: Agents;
  logger: Logger;
  maxTurnAttempts: number;
  /** Lease time-to-live; kept below BullMQ's lock so a dead worker's lease is gone before its job is re-run. */
  leaseTtlMs: number;
  /** Sub-agent coordination; without it ctx.delegate refuses. */
  coordination?: { delegator: Delegator; assignments: AssignmentStore; retentionSeconds: number };
  /** Running slots per owner and tenant, shared by every worker; undefined = no caps. */
  runningShare?: RunningShare;
  /**
   * redisWaitReplicas: replicas confirm a turn's final state before the turn's job is let go. A
   * refusal fails the job, which BullMQ runs again: it finds the turn finished, or, when the
   * finish was lost in a failover, runs the turn again (its steps journal keeps side effects once).
   */
  replicaAck?: ReplicaAck;
  /** Owners' output rates (limits.outputBytesPerSecond); undefined = output is not paced. */
  byteRates?: ByteRates;
}

/** Who a task's turn runs for, as its adapter sees it (ctx.caller). */
function callerOf(ownerKey: string, scopes: readonly string[]): CallerIdentity {
  const { agent, tenant, subject } = ownerFromKey(ownerKey);
  return { agent, tenant, principal: subject, scopes };
}

function deadlineReason(turn: number, limits: AgentLimits): string {
  return `Turn ${turn} ran past its deadline of ${limits.turnDeadlineMs} ms from its first start (turnDeadlineMs), across all the workers that ran it.`;
}

/** How runAdapter ended: an outcome to store, or the turn parked for its assignments. */
type AdapterRun =
  | {
      status: TaskStatus;
      message: Message | undefined;
      reason?: string;
      verification?: OutcomeVerification;
      interrupted?: boolean;
      /** The adapter answered with a direct Message; finishTurn keeps it as the reply if the client cannot hold the task yet. */
      directReply?: Message;
    }
  | { parked: TurnParked };

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

export class TurnRunner {
  readonly workerId = `${hostname()}:${process.pid}:${newId().slice(-6)}`;
  /** The turns running in this process, by task id. */
  private readonly running = new Map<string, RunningTurn>();
  /** The last run of each task in this process: a second job of the same task waits for it. */
  private readonly runs = new Map<string, Promise<void>>();

  constructor(private readonly options: TurnRunnerOptions) {
  }

  private takeOutputOf(byteRates: ByteRates, ownerKey: string): ((bytes: number) => Promise<number>) | undefined {
    if (byteRates.limits.outputBytesPerSecond <= 0) return undefined;
    return (bytes) => byteRates.takeOutput(ownerKey, bytes);
  }

  /**
   * Subscribes to cancel requests ("<taskId>") and interrupts ("<taskId> <turn>"): whichever
   * worker process runs the turn sees them. An interrupt stops only the turn it names, never a
   * later one the same job went on to. On a single Redis one channel carries every task's; on a
   * Cluster (sharded pub/sub, in the task's slot) each turn's task is subscribed while it runs.
   */
  async listenForCancels(subscriber: RedisClient): Promise<void> {
    const { keys } = this.options.store;
    const sharded = isCluster(subscriber);
    const onCancel = (channel: string, message: string): void => {
      const [taskId = '', turnText] = message.split(' ');
      if (channel !== (sharded ? keys.taskCancelChannel(taskId) : keys.cancelChannel())) return;
      const turn = this.running.get(taskId);
      if (turn === undefined) return;
      if (turnText === undefined) {
        turn.controller.abort(taskCanceled());
        turn.acknowledge?.();
        return;
      }
      if (turn.turn !== Number(turnText) || turn.controller.signal.aborted) return;
      turn.controller.abort(INTERRUPT);
      turn.acknowledge?.(turn.turn);
    };
    if (sharded) {
      subscriber.on('smessage', onCancel);
      this.cancelSubscriber = subscriber;
      return;
    }
    subscriber.on('message', onCancel);
    await subscriber.subscribe(keys.cancelChannel());
  }

  /** Set on a Cluster: the connection each running task's cancel channel is SSUBSCRIBEd on. */
  private cancelSubscriber: RedisClient | undefined;

  runningTurns(): number {
    return this.running.size;
  }

  /** The turns running in this process now, by agent. */
  runningTurnsByAgent(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const turn of this.running.values()) counts.set(turn.agent, (counts.get(turn.agent) ?? 0) + 1);
    return counts;
  }

  /**
   * Stops every running turn without deciding it: each adapter sees its abort signal, the
   * lease is released and the job goes back to the queue, so another worker continues the
   * turn at once instead of after a stall timeout.
   */
  handBackAll(): number {
    this.shuttingDown = true;
    for (const turn of this.running.values()) turn.controller.abort(SHUTDOWN);
    return this.running.size;
  }

  /** Set by handBackAll: a turn a job goes on to is handed back too. */
  private shuttingDown = false;

  /** BullMQ processor: advance the job's task until no turn is open or the lease is lost. */
  async process(job: Job<TurnJobData>): Promise<void> {
    // A coordinator's wake job can arrive while its parking run still finishes in this same
    // process (same worker id, so the lease would not stop it): one run per task at a time.
    const { taskId } = job.data;
    markStage(taskId, 'picked');
    const earlier = this.runs.get(taskId);
    const run = (async () => {
      if (earlier !== undefined) await earlier.catch(() => undefined);
      await this.processAlone(job);
    })();
    this.runs.set(taskId, run);
    try {
      await run;
    } finally {
      if (this.runs.get(taskId) === run) this.runs.delete(taskId);
    }
  }

  private async processAlone(job: Job<TurnJobData>): Promise<void> {
    const { taskId } = job.data;
    // Registered (and on a Cluster subscribed) before the lease is taken, so a cancel published
    // right after is not missed; one published before is in the lease's reply. Registered before
    // the running slot is taken too, so a shutdown meanwhile hands this turn back.
    const turn: RunningTurn = { agent: ownerFromKey(job.data.ownerKey).agent, controller: new AbortController(), turn: undefined, acknowledge: undefined };
    this.running.set(taskId, turn);
    const cancels = this.cancelSubscriber;
    const cancelChannel = this.options.store.keys.taskCancelChannel(taskId);
    let slot: RunningSlot | undefined;
    // A slot this task already held belongs to a live worker when that worker still holds the
    // lease (a duplicate delivery): that one gives it back, not this run.
    let keepSlot = false;
    try {
      const taken = this.options.runningShare === undefined ? undefined : await this.options.runningShare.take(job.data.ownerKey, taskId);
      if (taken !== undefined && isShareFull(taken)) throw new TurnDeferredError(taskId, taken);
      slot = taken;
      if (job.attemptsMade === 0) {
        // From being added (or due, when delayed) to being run, deferrals for the owner's share
        // included; a retried job's wait is its backoff, not the queue's.
        const waitedMs = (job.processedOn ?? Date.now()) - job.timestamp - (job.opts.delay ?? 0);
        queueWait.observe({ agent: turn.agent }, Math.max(0, waitedMs) / 1000);
      }
      await cancels?.ssubscribe(cancelChannel);
      // The job's first turn continues the trace the job carries; each follow-up turn, the trace
      // of the request whose message opened it (finishTurn hands it over).
      let next: FollowUp | undefined = { trace: job.data.trace, first: true };
      for (;;) {
        next = await this.tracedOpenTurn(job.data, next, turn, job.id ?? '');
        if (next === undefined) return;
        // The next turn gets a signal of its own: an interrupt of the last one must not reach it.
        turn.controller = new AbortController();
        turn.turn = undefined;
        if (this.shuttingDown) turn.controller.abort(SHUTDOWN);
      }
    } catch (error) {
      if (error instanceof LeaseHeldError && slot?.fresh === false) keepSlot = true;
      throw error;
    } finally {
      if (!keepSlot) slot?.release();
      if (this.running.get(taskId) === turn) {
        this.running.delete(taskId);
        cancels?.sunsubscribe(cancelChannel).catch(() => undefined);
      }
    }
  }

  /**
   * One turn, in its span, continuing the trace `opened` names (the trace context travels in the
   * job's data, and for a follow-up in the task's hash): its context is passed on explicitly to
   * the adapter, its downstream calls and the sub-agent turns it starts.
   */
  private tracedOpenTurn(data: TurnJobData, opened: FollowUp, turn: RunningTurn, jobId: string): Promise<FollowUp | undefined> {
    if (!tracingEnabled()) return this.runOpenTurn(data, turn, jobId, undefined, undefined);
    const attributes: Attributes = { [A2A.taskId]: data.taskId, [A2A.contextId]: data.contextId, [A2A.agent]: turn.agent, [A2A.workerId]: this.workerId };
    // Under BullMQ's consumer span (telemetry.queueSpans registers the context manager its hook
    // needs) the job's first turn is its child; otherwise the turn span is the consumer span.
    const consumer = opened.first ? activeContext() : undefined;
    if (spanOf(consumer) !== undefined) return inSpan(`turn ${turn.agent}`, { attributes, parent: consumer }, (span, own) => this.runOpenTurn(data, turn, jobId, span, own));
    const messaging = { 'messaging.system': 'bullmq', 'messaging.operation.type': 'process', 'messaging.destination.name': turnQueueName(turn.agent), 'messaging.message.id': jobId };
    return inSpan(`turn ${turn.agent}`, { kind: SpanKind.CONSUMER, attributes: { ...attributes, ...messaging }, parent: contextOfCarrier(opened.trace) }, (span, own) =>
      this.runOpenTurn(data, turn, jobId, span, own),
    );
  }

  /** Runs the open turn once; what opened the next turn when a queued follow-up did. */
  private async runOpenTurn(data: TurnJobData, turn: RunningTurn, jobId: string, span: Span | undefined, traceContext: TraceContext): Promise<FollowUp | undefined> {
    const { controller } = turn;
    const { store } = this.options;
    // Every line about this turn names its task, agent and owner (the adapter's ctx.log too) and, tracing on, its span.
    const logger = withFields(this.options.logger, { taskId: data.taskId, contextId: data.contextId, agent: turn.agent, owner: data.ownerKey, ...traceIdsOf(span) });
    const agent = this.agentOf(data.ownerKey);
    const { limits } = agent.settings;
    const budgetLimit = limits.turnBudget > 0 ? limits.turnBudget : undefined;
    const lease = await store.acquireLease({
      taskId: data.taskId,
      ownerKey: data.ownerKey,
      contextId: data.contextId,
      workerId: this.workerId,
      leaseTtlMs: this.options.leaseTtlMs,
      turnDeadlineMs: limits.turnDeadlineMs,
      maxTurnAttempts: this.options.maxTurnAttempts,
      now: new Date(),
    });
    if (lease.kind === 'gone' || lease.kind === 'closed') return undefined;
    if (lease.kind === 'held') throw new LeaseHeldError(data.taskId, lease.holder);
    if (lease.kind === 'exhausted') return this.failExhausted(data, lease, traceContext, logger, agent.name);
    turn.turn = lease.turn;
    markStage(data.taskId, 'leased');
    const leasedAt = process.hrtime.bigint();
    span?.setAttributes({ [A2A.turn]: lease.turn, [A2A.attempt]: lease.attempts });
    if (lease.attempts > 1) leaseTakeovers.inc({ agent: agent.name });

    if (lease.attempts > 1) {
      // Another run of this turn was lost (its worker killed, or its lease lapsed): say which,
      // so an operator can follow a turn across workers.
      logFailure(logger, 'worker-lost', {
        cause: `the worker running this turn${lease.turnRecord?.workerId === undefined ? '' : ` (${lease.turnRecord.workerId})`} stopped renewing its lease: killed, or cut off from Redis for longer than lockDurationMs`,
        turn: lease.turn,
        attempt: lease.attempts,
        maxTurnAttempts: this.options.maxTurnAttempts,
        resumption: lease.resumption,
        previousWorker: lease.turnRecord?.workerId,
        workerId: this.workerId,
        jobId,
      });
    }
    const fence: TurnLease = {
      taskId: data.taskId,
      contextId: lease.contextId,
      ownerKey: data.ownerKey,
      generation: lease.generation,
      callerScopes: lease.callerScopes,
      trace: traceContext,
    };
    const input = lease.history.slice(lease.turnInputStart);
    const adapter = agent.roles.adapterFor(lease.links?.role);
    const adapterVersion = `${adapter.name}@${adapter.version}`;
    const record: TurnRecord = {
      ...(lease.turnRecord ?? { turn: lease.turn, inputMessageIds: input.map((m) => m.messageId), acceptedAtMs: Date.now() }),
      attempts: lease.attempts,
      workerId: this.workerId,
      adapter: adapterVersion,
    };
    // The task hash holds the authoritative total; the record may lag it by the charges a lost
    // worker made after its last record write.
    if (lease.budgetSpent > 0) record.budgetSpent = lease.budgetSpent;
    if (budgetLimit !== undefined) record.budgetLimit = budgetLimit;
    const renew = setInterval(() => {
      store.renewLease(data.taskId, this.workerId, this.options.leaseTtlMs).catch(() => undefined);
    }, Math.max(50, Math.floor(this.options.leaseTtlMs / 3)));
    renew.unref();
    try {
      let outcome: AdapterRun;
      if (controller.signal.reason === SHUTDOWN && lease.cancelRequestedAtMs === undefined) {
        // Shutdown began while the lease was being taken: this is a hand-back, not a cancel.
        await this.handBack(fence, record);
      }
      const interrupted = lease.cancelRequestedAtMs === undefined && (lease.interrupted || controller.signal.reason === INTERRUPT);
      if (interrupted) {
        // A new message asked this turn to stop before its adapter ran here (or while a lost
        // worker ran it): the next turn takes over with everything queued.
        await store.acknowledgeCancel({ taskId: data.taskId, contextId: lease.contextId, generation: lease.generation, status: lease.status, interruptedTurn: lease.turn, now: new Date() });
        outcome = { ...this.finalStatus(fence, 'TASK_STATE_CANCELED', INTERRUPTED_TEXT), interrupted: true };
      } else if (lease.cancelRequestedAtMs !== undefined || controller.signal.aborted) {
        await store.acknowledgeCancel({ taskId: data.taskId, contextId: lease.contextId, generation: lease.generation, status: lease.status, now: new Date() });
        outcome = this.finalStatus(fence, 'TASK_STATE_CANCELED', 'Canceled before the turn started.');
      } else if (lease.versions !== undefined && !isCompatibleAdapter(lease.versions.adapter, adapterVersion)) {
        const reason = `Task ${data.taskId} started under adapter ${lease.versions.adapter}; this worker runs ${adapterVersion}, which is not compatible (different name or major version). Run a compatible worker, or start a new task.`;
        outcome = { ...this.finalStatus(fence, 'TASK_STATE_FAILED', reason), reason };
      } else if (lease.deadlineAtMs !== undefined && Date.now() >= lease.deadlineAtMs) {
        const reason = deadlineReason(lease.turn, limits);
        outcome = { ...this.finalStatus(fence, 'TASK_STATE_FAILED', reason), reason };
      } else if (budgetLimit !== undefined && lease.budgetSpent > budgetLimit) {
        // A lost worker's last charge passed the limit before it could fail the turn.
        const reason = budgetReason(lease.turn, lease.budgetSpent, budgetLimit);
        outcome = { ...this.finalStatus(fence, 'TASK_STATE_FAILED', reason), reason };
      } else {
        if (lease.attempts > 1) await this.announceResumption(fence, lease.turn, lease.attempts);
        outcome = await this.runAdapter(adapter, limits, fence, lease, input, record, turn, logger);
      }
      markStage(data.taskId, 'adapted');
      if ('parked' in outcome) {
        await this.park(fence, outcome.parked);
        return undefined;
      }
      record.finishedAtMs = Date.now();
      record.outcome = outcome.status.state;
      if (outcome.reason !== undefined) record.reason = outcome.reason;
      if (outcome.interrupted === true) record.reason = 'interrupted by a new message (inputPolicy interrupt)';
      const artifacts = lease.artifacts;
      const finished = await store.finishTurn({
        taskId: data.taskId,
        ownerKey: data.ownerKey,
        contextId: lease.contextId,
        generation: lease.generation,
        status: outcome.status,
        agentMessage: outcome.message,
        turnRecord: record,
        artifacts,
        // Stage 3 of 3 of a cancellation (stopped) rides on the final status update (an
        // interrupted turn's, on the next turn's first status).
        eventMetadata:
          outcome.status.state === 'TASK_STATE_CANCELED' ? { cancellation: { stage: 'stopped', at: new Date().toISOString() } } : undefined,
        outcome:
          outcome.status.state === 'TASK_STATE_COMPLETED' ? outcomeOf(outcome.verification, lease.callerExtensions.includes(VERIFICATION_EXTENSION_URI)) : undefined,
        interrupted: outcome.interrupted === true,
        ...(outcome.directReply === undefined ? {} : { directReply: outcome.directReply }),
        now: new Date(),
      });
      markStage(data.taskId, 'finished');
      if (finished.kind === 'stale') {
        logger.warn('turn result discarded: a newer lease holds the task', { taskId: data.taskId, turn: lease.turn });
        return undefined;
      }
      await this.options.replicaAck?.confirm([store.keys.task(data.taskId).task]);
      const state = outcome.status.state;
      // An interrupted turn (inputPolicy interrupt) is no cancellation: the task goes on.
      const endedAs = outcome.interrupted === true ? 'interrupted' : state;
      turnsFinished.inc({ agent: agent.name, state: endedAs });
      turnDuration.observe({ agent: agent.name, state: endedAs }, Number(process.hrtime.bigint() - leasedAt) / 1e9);
      if (endedAs === 'TASK_STATE_CANCELED') cancelStages.inc({ stage: 'stopped' });
      span?.setAttribute(A2A.state, endedAs);
      logger.debug('turn finished', { turn: lease.turn, attempt: lease.attempts, state, workerId: this.workerId });
      if (state === 'TASK_STATE_FAILED') {
        markError(span, new Error(outcome.reason ?? 'the turn failed'), 'TASK_STATE_FAILED');
        logFailure(logger, 'turn-failed', { cause: outcome.reason ?? (textOf(outcome.status.message) || 'the adapter ended the turn as failed'), turn: lease.turn, attempt: lease.attempts, adapter: adapterVersion });
      }
      if (finished.kind === 'done') await this.afterTurnEnded(fence, lease, outcome.status);
      return finished.kind === 'next' ? { trace: finished.trace, first: false } : undefined;
    } catch (error) {
      if (error instanceof StaleLeaseError) {
        logger.warn('turn stopped: a newer lease holds the task', { taskId: data.taskId, turn: lease.turn });
        return undefined;
      }
      throw error;
    } finally {
      clearInterval(renew);
    }
  }

  private async runAdapter(
    adapter: Adapter,
    limits: AgentLimits,
    fence: TurnLease,
    lease: Extract<Awaited<ReturnType<TaskStore['acquireLease']>>, { kind: 'acquired' }>,
    input: Message[],
    record: TurnRecord,
    turn: RunningTurn,
    logger: Logger,
  ): Promise<AdapterRun> {
    const { controller } = turn;
    const first = input[0];
    const skill = first?.metadata?.skill;
    const context = new TurnContext({
      store: this.options.store,
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
      logger,
      caller: callerOf(fence.ownerKey, lease.callerScopes),
      extensions: lease.callerExtensions,
      outputLimits: { maxArtifactBytes: limits.maxArtifactBytes, maxTurnOutputBytes: limits.maxTurnOutputBytes, maxTaskOutputBytes: limits.maxTaskOutputBytes },
      ...(this.options.byteRates === undefined ? {} : { takeOutput: this.takeOutputOf(this.options.byteRates, fence.ownerKey) }),
      readContextHistory: (maxTasks) => this.options.store.readContextHistory(fence.ownerKey, fence.contextId, fence.taskId, maxTasks),
    });
    const budgetLimit = limits.turnBudget > 0 ? limits.turnBudget : undefined;
    const budget = context.useBudget(budgetLimit, lease.budgetSpent);
    const coordination = this.options.coordination;
    const readOnly = lease.links?.readOnly === true;
    context.useDelegation(
      coordination === undefined || readOnly ? undefined : (name, assignments, options) => coordination.delegator.delegate(fence, name, assignments, options),
      { resumed: lease.resumed, readOnly },
    );
    // Stage 2 of a cancellation goes through the context's write queue, so it is stored after
    // whatever the adapter emitted before and before the final status.
    turn.acknowledge = (interruptedTurn) => void context.acknowledgeCancel(interruptedTurn).catch(() => undefined);
    if (controller.signal.aborted && controller.signal.reason !== SHUTDOWN) turn.acknowledge(controller.signal.reason === INTERRUPT ? lease.turn : undefined);
    // The lease script already recorded who runs which attempt; the record is written with
    // the outcome (and by recordStep), so starting a turn costs no extra round trip.
    record.startedAtMs = Date.now();
    let result: TurnOutcome | undefined;
    let failure: Error | undefined;
    // At the deadline the adapter's signal fires; one that ignores it is abandoned after a
    // grace period (its later writes are fenced out once the turn is finished).
    let deadlineTimer: NodeJS.Timeout | undefined;
    let graceTimer: NodeJS.Timeout | undefined;
    const abandoned = new Promise<never>((_, reject) => {
      if (lease.deadlineAtMs === undefined) return;
      deadlineTimer = setTimeout(() => {
        controller.abort(DEADLINE);
        graceTimer = setTimeout(() => reject(DEADLINE), DEADLINE_GRACE_MS);
      }, Math.max(0, lease.deadlineAtMs - Date.now()));
    });
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
      result = await Promise.race([running, abandoned]);
    } catch (error) {
      failure = error instanceof Error || error instanceof DOMException ? (error as Error) : new Error(String(error as JsonValue));
    } finally {
      clearTimeout(deadlineTimer);
      clearTimeout(graceTimer);
    }
    if (failure !== undefined && controller.signal.reason === DEADLINE) {
      turn.acknowledge = undefined;
      await context.settle().catch(() => undefined);
      const reason = deadlineReason(lease.turn, limits);
      return { ...this.finalStatus(fence, 'TASK_STATE_FAILED', reason), reason };
    }
    // From here on the turn is deciding its end: a cancel seen now is not acknowledged (it would
    // land after the final status); the finish script records whether it came too late.
    turn.acknowledge = undefined;
    // Everything the adapter emitted (and an acknowledgement already queued) is stored before
    // the final status is. A write refused for what it would store (an output bound, a command
    // past redisMaxCommandBytes) ends the turn here, whatever the adapter did with the error:
    // running it again would be refused again.
    const refused = await context.settle().then(
      () => undefined,
      (error: unknown) => {
        if (isOutputLimitError(error) || isRedisCommandTooLargeError(error)) return error;
        throw error;
      },
    );
    if (refused !== undefined && !controller.signal.aborted) {
      logger.warn('turn failed: it tried to store more than a limit allows', { taskId: fence.taskId, turn: lease.turn, reason: refused.message });
      return { ...this.finalStatus(fence, 'TASK_STATE_FAILED', refused.message), reason: refused.message };
    }
    // Parked by ctx.delegate (even if the adapter caught it): the turn waits for its assignments.
    if (context.parkedAs !== undefined && !controller.signal.aborted) return { parked: context.parkedAs };
    if (budget.exceeded !== undefined && budgetLimit !== undefined) {
      // Decided whatever the adapter did with the error: the spending is recorded and final.
      const reason = budgetReason(lease.turn, budget.spent(), budgetLimit, budget.exceeded);
      return { ...this.finalStatus(fence, 'TASK_STATE_FAILED', reason), reason };
    }
    if (failure !== undefined) {
      if (controller.signal.reason === SHUTDOWN) await this.handBack(fence, record);
      if (controller.signal.reason === INTERRUPT) return { ...this.finalStatus(fence, 'TASK_STATE_CANCELED', INTERRUPTED_TEXT), interrupted: true };
      if (controller.signal.aborted) return this.finalStatus(fence, 'TASK_STATE_CANCELED', 'Canceled while running.');
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
      return { ...this.finalStatus(fence, 'TASK_STATE_FAILED', error.message), reason: error.message };
    }
    if (outcome === undefined) {
      const reason = `The ${adapter.name} adapter failed: ${(failure as Error).message}`;
      return { ...this.finalStatus(fence, 'TASK_STATE_FAILED', reason), reason };
    }
    const final = this.finalStatus(fence, OUTCOME_STATES[outcome.state], outcome.message);
    if (outcome.state === 'message' && final.message !== undefined && lease.links === undefined && lease.turn === 1) {
      // A sub-agent's and a later turn's client holds the task already: for them it just completes.
      return { ...final, directReply: asDirectReply(final.message) };
    }
    return outcome.state === 'completed' && outcome.verification !== undefined ? { ...final, verification: outcome.verification } : final;
  }

  /**
   * Fails a turn whose attempts used up maxTurnAttempts, each one's worker lost while running it
   * (see acquireLease-6.lua). Nothing the lost runs stored is read or written again: what they
   * grew (artifacts, an answer) may be what killed them, so the stored artifacts stay as they are.
   */
  private async failExhausted(
    data: TurnJobData,
    lease: Extract<Awaited<ReturnType<TaskStore['acquireLease']>>, { kind: 'exhausted' }>,
    trace: TraceContext,
    logger: Logger,
    agentName: string,
  ): Promise<undefined> {
    const lost = lease.lostWorkers.filter((worker) => worker.turn === lease.turn).map((worker) => worker.workerId);
    const reason =
      `Turn ${lease.turn} was not run again: its ${lease.attempts - 1} attempts reached maxTurnAttempts (${this.options.maxTurnAttempts}), and the worker running it was lost each time` +
      `${lost.length === 0 ? '' : ` (${[...new Set(lost)].join(', ')})`}. Something in this turn stops the workers that run it (a backend's output, the adapter); ` +
      'the task keeps the lost workers (lostWorkers, shown by inspect). Send the message as a new task, or raise maxTurnAttempts.';
    const fence: TurnLease = { taskId: data.taskId, contextId: lease.contextId, ownerKey: data.ownerKey, generation: lease.generation, callerScopes: [], trace };
    const status = this.finalStatus(fence, 'TASK_STATE_FAILED', reason);
    const record: TurnRecord = {
      ...(lease.turnRecord ?? { turn: lease.turn, inputMessageIds: [], acceptedAtMs: Date.now() }),
      attempts: lease.attempts - 1,
      workerId: this.workerId,
      finishedAtMs: Date.now(),
      outcome: 'TASK_STATE_FAILED',
      reason,
    };
    logFailure(logger, 'turn-failed', { cause: reason, taskId: data.taskId, contextId: lease.contextId, agent: agentName, owner: data.ownerKey, turn: lease.turn, attempts: lease.attempts - 1, lostWorkers: lost });
    const finished = await this.options.store.finishTurn({
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
    const coordination = this.options.coordination;
    if (finished.kind === 'done' && coordination !== undefined && lease.links !== undefined) {
      await coordination.delegator.childTurnEnded(
        { taskId: data.taskId, coordinatorId: lease.links.parentTaskId, ownerKey: data.ownerKey, contextId: lease.contextId, trace },
        'TASK_STATE_FAILED',
        reason,
      );
    }
    return undefined;
  }

  /**
   * Tells the task's watchers that the turn goes on after its worker was lost: until now they
   * heard nothing (a lost worker says nothing; stall detection finds it one lock period later).
   * Appended outside the adapter's emit sequence, so a re-run's own events still match the
   * earlier run's and are not stored twice.
   */
  private async announceResumption(fence: TurnLease, turn: number, attempt: number): Promise<void> {
    const text = `The worker running this turn was lost; another worker resumes it now (attempt ${attempt} of ${this.options.maxTurnAttempts}, maxTurnAttempts).`;
    const status: TaskStatus = { state: 'TASK_STATE_WORKING', message: agentMessage(fence, text), timestamp: new Date().toISOString() };
    const metadata: JsonObject = { [GATEWAY_METADATA_KEY]: { workerLost: { turn, attempt, maxTurnAttempts: this.options.maxTurnAttempts } } };
    await this.options.store.appendEvents({
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

  /** Parks a coordinator's turn: no lease, no worker; its assignments' end wakes it. */
  private async park(fence: TurnLease, parked: TurnParked): Promise<void> {
    const coordination = this.options.coordination as NonNullable<TurnRunnerOptions['coordination']>;
    if (!(await coordination.assignments.suspend(fence.taskId, fence.contextId, fence.generation, parked.statusText, newId()))) {
      throw new StaleLeaseError(fence.taskId);
    }
    // A child may have asked its question while this run was still deciding to park.
    await coordination.delegator.surfaceQuestion(fence.taskId);
  }

  /**
   * A sub-agent's turn ended: its coordinator learns it (slot freed, next assignment started,
   * coordinator woken). A coordinator that ended takes its unfinished assignments with it.
   */
  private async afterTurnEnded(fence: TurnLease, lease: Extract<Awaited<ReturnType<TaskStore['acquireLease']>>, { kind: 'acquired' }>, status: TaskStatus): Promise<void> {
    const coordination = this.options.coordination;
    if (coordination === undefined) return;
    if (lease.links !== undefined) {
      await coordination.delegator.childTurnEnded(
        { taskId: fence.taskId, coordinatorId: lease.links.parentTaskId, ownerKey: fence.ownerKey, contextId: fence.contextId, trace: fence.trace },
        status.state,
        textOf(status.message),
      );
    }
    if (lease.resumed && isTerminal(status.state)) {
      await coordination.delegator.cancelAssignments(fence.taskId, ownerFromKey(fence.ownerKey));
      await coordination.assignments.expire(fence.taskId, coordination.retentionSeconds);
    }
  }

  /** The agent a task belongs to (its owner key names it); every worker loads every agent it serves. */
  private agentOf(ownerKey: string): Agent {
    const name = ownerFromKey(ownerKey).agent;
    const agent = this.options.agents.get(name);
    if (agent === undefined) throw new Error(`This worker does not run agent "${name}" (workerAgents, or a configuration without that agent).`);
    return agent;
  }

  /**
   * Gives the turn back to the queue at shutdown. The attempt is undone in the same script
   * that releases the lease (fenced), so hand-backs never use up maxTurnAttempts.
   */
  private async handBack(fence: TurnLease, record: TurnRecord): Promise<never> {
    const handedBack: TurnRecord = { ...record, attempts: Math.max(0, (record.attempts ?? 1) - 1), handBacks: (record.handBacks ?? 0) + 1 };
    if (!(await this.options.store.handBackTurn(fence.taskId, this.workerId, fence.generation, handedBack))) throw new StaleLeaseError(fence.taskId);
    throw new TurnHandedBackError(fence.taskId);
  }

  private finalStatus(fence: TurnLease, state: TaskState, content: OutcomeMessage | undefined): { status: TaskStatus; message: Message | undefined } {
    const message = content === undefined || content === '' ? undefined : agentMessage(fence, content);
    const status: TaskStatus = { state, timestamp: new Date().toISOString() };
    if (message !== undefined) status.message = message;
    return { status, message };
  }
}
