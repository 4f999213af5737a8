// Runs a task's open turn on a worker: take the lease, run the adapter with a fenced context,
// store the outcome, and continue with queued follow-ups while the lease is ours. The steps of a
// turn are in ./turn/: the lease, the checks before the adapter runs, the adapter's run and its
// deadline, attempts after a lost worker, finishing, delegation, and the cancel watch.
import { hostname } from 'node:os';
import type { Attributes, Span } from '@opentelemetry/api';
import { newId } from '../ids.ts';
import { turnQueueName, type TurnJobData } from '../../queues/turns.ts';
import { withFields } from '../logging/logger.ts';
import type { RedisClient } from '../redis/connection.ts';
import { ownerFromKey, StaleLeaseError, type LeaseResult, type LeaseTerms, type TurnRecord } from '../store/task-store.ts';
import type { TurnLease } from './turn-context.ts';
import type { Agent } from '../agents/agents.ts';
import { leaseTakeovers, queueWait } from '../telemetry/metrics.ts';
import { A2A, activeContext, contextOfCarrier, inSpan, SpanKind, spanOf, traceIdsOf, type TraceContext } from '../telemetry/spans.ts';
import { tracingEnabled } from '../telemetry/tracing.ts';
import { markStage } from '../telemetry/stage-marks.ts';
import { isShareFull, type RunningSlot } from '../../queues/running-share.ts';
import { runAdapter } from './turn/adapter-run.ts';
import { announceResumption, failExhausted, reportWorkerLost } from './turn/attempts.ts';
import { park } from './turn/delegation.ts';
import { LeaseHeldError, TurnDeferredError } from './turn/errors.ts';
import { finishTurn, type FollowUp } from './turn/finish.ts';
import { acquireTurnLease, giveBackUnstarted, keepLeaseRenewed } from './turn/lease.ts';
import type { TurnRunnerOptions, TurnRunnerSetup } from './turn/options.ts';
import { RunningTurns, type RunningTurn } from './turn/running-turns.ts';
import { checkBeforeStart } from './turn/start-checks.ts';
import type { AdapterRun } from './turn/status.ts';
import { OneRunPerKey } from './one-run-per-key.ts';

export { LeaseHeldError, TurnDeferredError, TurnHandedBackError } from './turn/errors.ts';
export type { TurnRunnerOptions } from './turn/options.ts';

/** A turn to run: a job the queue delivered, or a new task's first turn started where it was accepted (local-turns.ts). */
export interface TurnDelivery {
  data: TurnJobData;
  /** The job's id; for a turn started where it was accepted, the id its job would have had. */
  jobId: string;
  /** How long it waited to start (from being queued, or due when delayed); undefined for a retry, whose wait is its backoff. */
  waitedMs: number | undefined;
  /** No queue job carries it (a turn started where it was accepted): its leases say so, for the reconciler. */
  withoutJob?: boolean;
  /** A turn started where it was accepted, registered before the task's create (reserve()), with the lease that create took, if it did. */
  reserved?: { turn: RunningTurn; lease: LeaseResult | undefined };
}

/** A new task's first turn registered here before its create, which takes its lease on these terms (reserve()). */
export interface ReservedTurn {
  readonly turn: RunningTurn;
  readonly terms: LeaseTerms;
  /** The task was not created (a re-sent message, a limit, an error): the registration goes. */
  cancel(): void;
}

export class TurnRunner {
  readonly workerId = `${hostname()}:${process.pid}:${newId().slice(-6)}`;
  /** What the steps of a turn (./turn/) share with this runner. */
  private readonly setup: TurnRunnerSetup;
  /** The turns running in this process, and the cancels, interrupts and shutdown that stop them. */
  private readonly running: RunningTurns;
  /** A second job of a task this process still runs waits for that run. */
  private readonly runs = new OneRunPerKey();

  constructor(private readonly options: TurnRunnerOptions) {
    this.setup = { options, workerId: this.workerId };
    this.running = new RunningTurns(options.store.channels);
  }

  /** Subscribes to cancel requests and interrupts, so whichever worker process runs the turn sees them. */
  listenForCancels(subscriber: RedisClient): Promise<void> {
    return this.running.listenForCancels(subscriber);
  }

  runningTurns(): number {
    return this.running.size;
  }

  /** The turns running in this process now, by agent. */
  runningTurnsByAgent(): Map<string, number> {
    return this.running.byAgent();
  }

  /**
   * Stops every running turn without deciding it: each adapter sees its abort signal, the
   * lease is released and the job goes back to the queue, so another worker continues the
   * turn at once instead of after a stall timeout.
   */
  handBackAll(): number {
    return this.running.handBackAll();
  }

  /**
   * Registers a turn before the call that takes its lease (a new task's create, createTask's
   * takeLease; a follow-up's accept, acceptMessage's), so a cancel published once that call has
   * run finds the turn here, as one published after acquireLease would. Undefined on a Cluster,
   * where a task's cancels are subscribed per task (one more round trip before the call): the run
   * takes the lease there. Undefined too while a turn of the task is registered here already: a
   * follow-up sent while its task's turn runs here must not take that turn's place in the
   * registry (its cancels would stop reaching it); the run then registers and takes the lease itself.
   */
  reserve(taskId: string, ownerKey: string): ReservedTurn | undefined {
    if (this.running.sharded || this.running.has(taskId)) return undefined;
    const agent = this.agentOf(ownerKey);
    const turn = this.running.register(taskId, agent.name, false);
    const { leaseTtlMs, maxTurnAttempts } = this.options;
    return {
      turn,
      terms: { workerId: this.workerId, leaseTtlMs, turnDeadlineMs: agent.settings.limits.turnDeadlineMs, maxTurnAttempts },
      cancel: () => this.running.unregister(taskId, turn),
    };
  }

  /** Gives back the lease a new task's create took (createTask's takeLease) for a run here that will not start: its turn goes to the queue. */
  giveBackUnstartedLease(taskId: string, lease: LeaseResult | undefined): Promise<void> {
    return lease?.kind === 'acquired' ? giveBackUnstarted(this.setup, taskId, lease) : Promise.resolve();
  }

  /** Advances the delivered turn's task until no turn is open or the lease is lost. */
  async process(delivery: TurnDelivery): Promise<void> {
    // A coordinator's wake job can arrive while its parking run still finishes in this same
    // process (same worker id, so the lease would not stop it): one run per task at a time.
    const { taskId } = delivery.data;
    markStage(taskId, 'picked');
    await this.runs.run(taskId, () => this.processAlone(delivery));
  }

  private async processAlone(delivery: TurnDelivery): Promise<void> {
    const { data } = delivery;
    const { taskId } = data;
    const turn = delivery.reserved?.turn ?? this.running.register(taskId, ownerFromKey(data.ownerKey).agent);
    turn.inPlace = true;
    // A lease the create took and no run used yet: given back should the run stop before its turn starts.
    let unusedLease = delivery.reserved?.lease;
    let slot: RunningSlot | undefined;
    // A slot this task already held belongs to a live worker when that worker still holds the
    // lease (a duplicate delivery): that one gives it back, not this run.
    let keepSlot = false;
    try {
      const taken = this.options.runningShare === undefined ? undefined : await this.options.runningShare.take(data.ownerKey, taskId);
      if (taken !== undefined && isShareFull(taken)) throw new TurnDeferredError(taskId, taken);
      slot = taken;
      if (delivery.waitedMs !== undefined) queueWait.observe({ agent: turn.agent }, Math.max(0, delivery.waitedMs) / 1000);
      await this.running.watchCancels(taskId, turn);
      // The job's first turn continues the trace the job carries; each follow-up turn, the trace
      // of the request whose message opened it (finishTurn hands it over).
      let next: FollowUp | undefined = { trace: data.trace, first: true };
      for (;;) {
        const leased = unusedLease;
        unusedLease = undefined;
        next = await this.tracedOpenTurn(delivery, next, turn, leased);
        if (next === undefined) return;
        this.running.nextTurn(turn);
      }
    } catch (error) {
      if (error instanceof LeaseHeldError && slot?.fresh === false) keepSlot = true;
      if (unusedLease?.kind === 'acquired') await giveBackUnstarted(this.setup, taskId, unusedLease);
      throw error;
    } finally {
      if (!keepSlot) slot?.release();
      this.running.unregister(taskId, turn);
    }
  }

  /**
   * One turn, in its span, continuing the trace `opened` names (the trace context travels in the
   * job's data, and for a follow-up in the task's hash): its context is passed on explicitly to
   * the adapter, its downstream calls and the sub-agent turns it starts.
   */
  private tracedOpenTurn(delivery: TurnDelivery, opened: FollowUp, turn: RunningTurn, leased: LeaseResult | undefined): Promise<FollowUp | undefined> {
    const { data, jobId } = delivery;
    if (!tracingEnabled()) return this.runOpenTurn(delivery, turn, undefined, undefined, leased);
    const attributes: Attributes = { [A2A.taskId]: data.taskId, [A2A.contextId]: data.contextId, [A2A.agent]: turn.agent, [A2A.workerId]: this.workerId };
    // Under BullMQ's consumer span (telemetry.queueSpans registers the context manager its hook
    // needs) the job's first turn is its child; otherwise the turn span is the consumer span.
    const consumer = opened.first ? activeContext() : undefined;
    if (spanOf(consumer) !== undefined) return inSpan(`turn ${turn.agent}`, { attributes, parent: consumer }, (span, own) => this.runOpenTurn(delivery, turn, span, own, leased));
    const messaging = { 'messaging.system': 'bullmq', 'messaging.operation.type': 'process', 'messaging.destination.name': turnQueueName(turn.agent), 'messaging.message.id': jobId };
    return inSpan(`turn ${turn.agent}`, { kind: SpanKind.CONSUMER, attributes: { ...attributes, ...messaging }, parent: contextOfCarrier(opened.trace) }, (span, own) =>
      this.runOpenTurn(delivery, turn, span, own, leased),
    );
  }

  /** Runs the open turn once (under `leased` when its lease is taken already); what opened the next turn when a queued follow-up did. */
  private async runOpenTurn(delivery: TurnDelivery, turn: RunningTurn, span: Span | undefined, traceContext: TraceContext, leased: LeaseResult | undefined): Promise<FollowUp | undefined> {
    const { data, jobId } = delivery;
    // Every line about this turn names its task, agent and owner (the adapter's ctx.log too) and, tracing on, its span.
    const logger = withFields(this.options.logger, { taskId: data.taskId, contextId: data.contextId, agent: turn.agent, owner: data.ownerKey, ...traceIdsOf(span) });
    const agent = this.agentOf(data.ownerKey);
    const { limits } = agent.settings;
    const budgetLimit = limits.turnBudget > 0 ? limits.turnBudget : undefined;
    const lease = leased ?? (await acquireTurnLease(this.setup, data, limits, delivery.withoutJob === true));
    if (lease.kind === 'gone' || lease.kind === 'closed') return undefined;
    if (lease.kind === 'held') throw new LeaseHeldError(data.taskId, lease.holder);
    if (lease.kind === 'exhausted') return failExhausted(this.setup, data, lease, traceContext, logger, agent.name);
    turn.turn = lease.turn;
    markStage(data.taskId, 'leased');
    const leasedAt = process.hrtime.bigint();
    span?.setAttributes({ [A2A.turn]: lease.turn, [A2A.attempt]: lease.attempts });
    if (lease.attempts > 1) {
      leaseTakeovers.inc({ agent: agent.name });
      reportWorkerLost(this.setup, lease, logger, jobId);
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
    const stopRenewing = keepLeaseRenewed(this.setup, data.taskId);
    try {
      let outcome: AdapterRun | undefined = await checkBeforeStart(this.setup, { fence, lease, record, controller: turn.controller, limits, adapterVersion, budgetLimit });
      if (outcome === undefined) {
        if (lease.attempts > 1) await announceResumption(this.setup, fence, lease.turn, lease.attempts);
        outcome = await runAdapter(this.setup, { adapter, limits, fence, lease, input, record, turn, logger });
      }
      markStage(data.taskId, 'adapted');
      if ('parked' in outcome) {
        await park(this.setup, fence, outcome.parked);
        return undefined;
      }
      return await finishTurn(this.setup, { data, fence, lease, record, outcome, agentName: agent.name, adapterVersion, leasedAt, span, logger });
    } catch (error) {
      if (error instanceof StaleLeaseError) {
        logger.warn('turn stopped: a newer lease holds the task', { taskId: data.taskId, turn: lease.turn });
        return undefined;
      }
      throw error;
    } finally {
      stopRenewing();
    }
  }

  /** The agent a task belongs to (its owner key names it); every worker loads every agent it serves. */
  private agentOf(ownerKey: string): Agent {
    const name = ownerFromKey(ownerKey).agent;
    // A removed agent's queued turns still find it: its stand-in fails them with the reason.
    const agent = this.options.agents.forTurn(name);
    if (agent === undefined) throw new Error(`This worker does not run agent "${name}" (workerAgents, or a configuration without that agent).`);
    return agent;
  }
}
