// The adapter's context for one turn: what the adapter reads (its input, history, the task's
// artifacts) and everything it may do, each checked against the adapter contract. Its writes go
// through one queue in the order the adapter made them (turn-write-queue.ts), its output through
// TurnOutput (turn-output.ts), its steps through the journal (turn-steps.ts).
import { traceHeaders, type TraceContext } from '../telemetry/spans.ts';
import { newId } from '../ids.ts';
import type { AdapterContext, AdapterState, ArtifactChunk, CallerIdentity, Assignment, DelegationOptions, DelegationResult, StepHandle, StepOutcome, TurnUsage } from '../../adapters/types.ts';
import { AdapterContractError, checkArtifactChunk, checkStateKey, checkStateValue, checkStatus, checkUsage, partsOf } from './adapter-contract.ts';
import { TurnParked } from '../coordination/delegator.ts';
import type { Artifact, JsonObject, JsonValue, Message, Part, TaskStatus } from '../protocol/types.ts';
import type { TaskStore, TurnRecord } from '../store/task-store.ts';
import { PersistedTurnBudget } from './turn-budget.ts';
import type { Logger } from '../logging/logger.ts';
import type { OutputPacer } from '../limits/byte-rates.ts';
import type { OutputLimits } from '../limits/output-limits.ts';
import { applyArtifactChunk } from '../store/stored-artifacts.ts';
import { boundLogger } from './bound-logger.ts';
import { TurnOutput } from './turn-output.ts';
import { runJournalledStep } from './turn-steps.ts';
import { TurnWriteQueue, type PendingAppends } from './turn-write-queue.ts';
import type { TurnMeter } from '../consumers/consumer-meter.ts';

export interface TurnLease {
  taskId: string;
  contextId: string;
  ownerKey: string;
  generation: number;
  /** What the credentials of the task's latest input granted (passed on to sub-agents' tasks). */
  callerScopes?: readonly string[];
  /** The trace context of the turn's span (tracing on): the sub-agent turns it starts continue it. */
  trace?: TraceContext;
}

export function agentMessage(lease: TurnLease, content: string | Part[], metadata?: JsonObject): Message {
  const message: Message = {
    messageId: newId(),
    role: 'ROLE_AGENT',
    parts: partsOf(content),
    taskId: lease.taskId,
    contextId: lease.contextId,
  };
  if (metadata !== undefined) message.metadata = metadata;
  return message;
}

/** Applies one chunk to the artifact list the way a client applying the events would (one definition with the store's readers). */
export { applyArtifactChunk };

/** Everything a turn's context is built from (the runner fills it from the lease). */
export interface TurnContextInit {
  store: TaskStore;
  lease: TurnLease;
  turn: number;
  attempt: number;
  input: readonly Message[];
  history: readonly Message[];
  /** The task's artifacts as stored; the context updates this array as chunks are stored. */
  artifacts: Artifact[];
  /** How big the stored snapshot and its pending chunks are (the lease's read); undefined: an empty snapshot. */
  artifactBytes?: { snapshot: number; pending: number };
  requestedSkill: string | undefined;
  signal: AbortSignal;
  turnRecord: TurnRecord;
  /** Named in contract errors ("The demo adapter broke the adapter contract …"). */
  adapterName: string;
  /** Reads the messages of the context's earlier tasks (ctx.contextHistory). */
  readContextHistory?: (maxTasks: number) => Promise<Message[]>;
  /**
   * "<turn>.<resumption>": the run this context belongs to, for recognizing a re-run's repeated
   * events (a lost worker's replacement has the same scope; a run woken after parking, a new one).
   */
  emitScope: string;
  /**
   * Whether an earlier run of this emitScope may have stored events: a later attempt, or a run
   * after a hand-back (which gives its attempt back, so attempt 1 can start twice). A first run
   * skips the read that recognizes repeats before an event is built (appendEvents checks anyway).
   * Default: it may.
   */
  mayRepeatEarlierRun?: boolean;
  /** The gateway's log; the context binds it to the task for the adapter (ctx.logger). */
  logger?: Logger;
  caller: CallerIdentity;
  /** The extensions the request of the turn's latest input activated (ctx.extensions). */
  extensions?: readonly string[];
  /** What the turn may store (the agent's limits); undefined: the settings' defaults. */
  outputLimits?: OutputLimits;
  /** Paces the turn's output against the owner's output rate (limits.outputBytesPerSecond); undefined: output is not paced. */
  outputPacer?: OutputPacer | undefined;
  /** Charges the model tokens of the turn to its consumer's plan (src/consumers); undefined: the owner is no consumer's. */
  meter?: TurnMeter;
}

const DEFAULT_CONTEXT_TASKS = 20;
const MAX_CONTEXT_TASKS = 100;

export class TurnContext implements AdapterContext {
  readonly taskId: string;
  readonly contextId: string;
  readonly turn: number;
  readonly attempt: number;
  readonly input: readonly Message[];
  readonly history: readonly Message[];
  readonly requestedSkill: string | undefined;
  readonly signal: AbortSignal;
  readonly turnRecord: TurnRecord;
  readonly caller: CallerIdentity;
  readonly extensions: readonly string[];
  readonly logger: Logger;
  private readonly store: TaskStore;
  private readonly lease: TurnLease;
  private readonly adapterName: string;
  private readonly readContextHistory: ((maxTasks: number) => Promise<Message[]>) | undefined;
  private readonly queue = new TurnWriteQueue();
  private readonly output: TurnOutput;
  private readonly meter: TurnMeter | undefined;
  /** Step names used by this run: a second step of the same name would silently replay the first. */
  private readonly stepNames = new Set<string>();
  /**
   * The first contract violation of this run. Kept apart from the error the adapter saw, so the
   * turn fails with it even when the adapter caught that error and carried on.
   */
  contractViolation: AdapterContractError | undefined;

  constructor(init: TurnContextInit) {
    this.store = init.store;
    this.lease = init.lease;
    this.taskId = init.lease.taskId;
    this.contextId = init.lease.contextId;
    this.turn = init.turn;
    this.attempt = init.attempt;
    this.input = init.input;
    this.history = init.history;
    this.requestedSkill = init.requestedSkill;
    this.signal = init.signal;
    this.turnRecord = init.turnRecord;
    this.adapterName = init.adapterName;
    this.readContextHistory = init.readContextHistory;
    this.meter = init.meter;
    this.caller = Object.freeze({ ...init.caller, scopes: Object.freeze([...init.caller.scopes]) });
    this.extensions = Object.freeze([...(init.extensions ?? [])]);
    this.logger = boundLogger(init.logger, { taskId: this.taskId, contextId: this.contextId, turn: this.turn, attempt: this.attempt, agent: init.caller.agent });
    this.output = new TurnOutput({
      store: init.store,
      queue: this.queue,
      taskId: this.taskId,
      contextId: this.contextId,
      ownerKey: init.lease.ownerKey,
      generation: init.lease.generation,
      turn: this.turn,
      attempt: this.attempt,
      emitScope: init.emitScope,
      mayRepeatEarlierRun: init.mayRepeatEarlierRun ?? true,
      artifacts: init.artifacts,
      artifactBytes: init.artifactBytes,
      outputLimits: init.outputLimits,
      outputPacer: init.outputPacer,
      signal: init.signal,
      logger: this.logger,
    });
  }

  /** Checks what the adapter handed over; a violation is remembered and rethrown. */
  private contract<T>(check: () => T): T {
    try {
      return check();
    } catch (error) {
      if (error instanceof AdapterContractError) this.contractViolation ??= error;
      throw error;
    }
  }

  get artifacts(): readonly Artifact[] {
    return this.output.artifacts;
  }

  /** True when this run continues a turn that was parked for its assignments. */
  resumed = false;
  /** Set once ctx.delegate parked the turn, even if the adapter caught that and returned. */
  parkedAs: TurnParked | undefined;
  private delegateTo: ((name: string, assignments: readonly Assignment[], options: DelegationOptions | undefined) => Promise<DelegationResult>) | undefined;
  private readOnly = false;

  /**
   * Connects ctx.delegate to the coordinator's delegator. A read-only task (a reviewer) gets
   * no delegator and may not journal side effects either.
   */
  useDelegation(
    delegate: ((name: string, assignments: readonly Assignment[], options: DelegationOptions | undefined) => Promise<DelegationResult>) | undefined,
    options: { resumed: boolean; readOnly: boolean },
  ): void {
    this.delegateTo = delegate;
    this.resumed = options.resumed;
    this.readOnly = options.readOnly;
  }

  async delegate(name: string, assignments: readonly Assignment[], options?: DelegationOptions): Promise<DelegationResult> {
    if (this.readOnly || this.delegateTo === undefined) throw new Error('This task is a read-only reviewer: it may not delegate.');
    // What the adapter emitted before delegating is stored before the turn can park.
    await this.settle();
    let result: DelegationResult;
    try {
      result = await this.delegateTo(name, assignments, options);
    } catch (error) {
      if (error instanceof TurnParked) this.parkedAs = error;
      throw error;
    }
    if (result.review !== undefined) {
      // The reviewer's verdict is recorded on the coordinator, where its caller looks.
      await this.emitArtifact({
        artifactId: `review-${name}`,
        name: `review of ${name}`,
        parts: [{ text: result.review.verdict }],
        metadata: { reviewerTaskId: result.review.taskId, role: result.review.role, state: result.review.state },
        lastChunk: true,
      });
    }
    return result;
  }

  /** The context of the span the adapter runs in (set by the runner, useTrace). */
  private traceContext: TraceContext = undefined;

  /** Sets the span the adapter runs in (its invoke_agent span): ctx.traceHeaders() names it. */
  useTrace(traceContext: TraceContext): void {
    this.traceContext = traceContext;
  }

  traceHeaders(): Record<string, string> {
    return traceHeaders(this.traceContext);
  }

  /** ctx.budget: no limit and nothing spent until the runner calls useBudget(). */
  budget: PersistedTurnBudget = this.budgetOf(undefined, 0);

  /** Sets the turn's budget limit (undefined = none) and what its earlier attempts spent. */
  useBudget(limit: number | undefined, spentBefore: number): PersistedTurnBudget {
    this.budget = this.budgetOf(limit, spentBefore);
    return this.budget;
  }

  private budgetOf(limit: number | undefined, spentBefore: number): PersistedTurnBudget {
    // Charges join the write queue: settle() waits for them, and one rejected as stale stops
    // the turn's later writes like any other fenced write.
    return new PersistedTurnBudget(
      limit,
      spentBefore,
      (units) => this.enqueueValue(() => this.store.turns.chargeBudget(this.taskId, this.lease.generation, units)),
      (total) => {
        this.turnRecord.budgetSpent = total;
      },
    );
  }

  emitStatus(text: string, metadata?: JsonObject): Promise<void> {
    let checked: ReturnType<typeof checkStatus>;
    try {
      checked = this.contract(() => checkStatus(text, metadata, this.adapterName));
    } catch (error) {
      return Promise.reject(error as Error);
    }
    const status: TaskStatus = {
      state: 'TASK_STATE_WORKING',
      message: agentMessage(this.lease, checked.text, checked.metadata),
      timestamp: new Date().toISOString(),
    };
    return this.output.emitStatus(status, checked.text, checked.metadata);
  }

  emitArtifact(input: ArtifactChunk): Promise<void> {
    let chunk: ArtifactChunk;
    try {
      chunk = this.contract(() => checkArtifactChunk(input, this.adapterName));
    } catch (error) {
      return Promise.reject(error as Error);
    }
    const meter = this.meter;
    if (meter !== undefined) {
      // Charged ahead of the chunk in the write queue: a charge past the consumer's budget stops
      // this chunk and every later write (the failure is the chunk's own answer).
      const chars = chunk.parts.reduce((n, part) => n + (typeof part.text === 'string' ? part.text.length : 0), 0);
      void this.queue.enqueue(() => meter.chargeOutput(chars)).catch(() => undefined);
    }
    return this.output.emitArtifact(chunk);
  }

  recordStep(name: string, detail?: JsonObject): Promise<void> {
    return this.enqueue(async () => {
      const step: NonNullable<TurnRecord['steps']>[number] = { name, atMs: Date.now(), attempt: this.attempt };
      if (detail !== undefined) step.detail = detail;
      (this.turnRecord.steps ??= []).push(step);
      await this.store.turns.writeTurnRecord(this.taskId, this.lease.generation, this.turnRecord);
    });
  }

  async recordUsage(input: TurnUsage): Promise<void> {
    const usage = this.contract(() => checkUsage(input, this.adapterName));
    const total = (this.turnRecord.usage ??= { inputTokens: 0, outputTokens: 0 });
    total.inputTokens += usage.inputTokens;
    total.outputTokens += usage.outputTokens;
    if (usage.model !== undefined) total.model = usage.model;
    await this.enqueue(() => this.store.turns.writeTurnRecord(this.taskId, this.lease.generation, this.turnRecord));
    const meter = this.meter;
    // The backend's count replaces the estimate charged while the reply streamed.
    if (meter !== undefined) await this.enqueue(() => meter.reconcile(usage));
  }

  readonly adapterState: AdapterState = {
    get: async <T extends JsonValue = JsonValue>(key: string): Promise<T | undefined> => {
      this.contract(() => checkStateKey(key, this.adapterName));
      // After this run's own writes, so a value set a moment ago reads back.
      await this.queue.drained();
      return (await this.store.turns.readAdapterState(this.taskId, key)) as T | undefined;
    },
    set: (key: string, value: JsonValue): Promise<void> => {
      try {
        this.contract(() => checkStateValue(key, value, this.adapterName));
      } catch (error) {
        return Promise.reject(error as Error);
      }
      return this.enqueue(() => this.store.turns.writeAdapterState(this.taskId, this.lease.generation, key, value));
    },
  };

  async contextHistory(options: { maxTasks?: number } = {}): Promise<readonly Message[]> {
    const maxTasks = Math.min(MAX_CONTEXT_TASKS, Math.max(0, Math.floor(options.maxTasks ?? DEFAULT_CONTEXT_TASKS)));
    if (this.readContextHistory === undefined || maxTasks === 0) return [];
    return this.readContextHistory(maxTasks);
  }

  async step<T extends JsonValue>(name: string, run: (handle: StepHandle) => Promise<T>): Promise<StepOutcome<T>> {
    this.contract(() => {
      if (typeof name !== 'string' || name === '') throw new AdapterContractError(this.adapterName, 'ctx.step()', ['a step needs a non-empty name, unique within the turn']);
      if (this.stepNames.has(name)) {
        throw new AdapterContractError(this.adapterName, 'ctx.step()', [
          `the step name "${name}" was already used in this turn; a second step of the same name would return the first one's result without running. Give each step its own name (e.g. "${name}-2", or an index in a loop)`,
        ]);
      }
    });
    this.stepNames.add(name);
    if (this.readOnly) throw new Error('This task is a read-only reviewer: it may not run side-effecting steps.');
    const journal = { store: this.store, queue: this.queue, taskId: this.taskId, generation: this.lease.generation, turn: this.turn, attempt: this.attempt, signal: this.signal };
    return runJournalledStep(journal, name, run);
  }

  /** Stage 2 of a cancellation (or of an interrupt of `interruptedTurn`), ordered after everything the adapter emitted so far. */
  acknowledgeCancel(interruptedTurn?: number): Promise<void> {
    return this.enqueue(() =>
      this.store.turns.acknowledgeCancel({
        taskId: this.taskId,
        contextId: this.contextId,
        generation: this.lease.generation,
        status: { state: 'TASK_STATE_WORKING', timestamp: new Date().toISOString() },
        ...(interruptedTurn === undefined ? {} : { interruptedTurn }),
        now: new Date(),
      }),
    );
  }

  /** The writes still pending, when all of them append the adapter's events (see TurnWriteQueue.pendingAppends). */
  pendingAppends(): PendingAppends | undefined {
    return this.queue.pendingAppends();
  }

  /** Waits for every write the adapter started; rethrows the first failure (e.g. a stale lease). */
  settle(): Promise<void> {
    return this.queue.settle();
  }

  private enqueueValue<T>(read: () => Promise<T>): Promise<T> {
    return this.queue.enqueueValue(read);
  }

  private enqueue(write: () => Promise<void>): Promise<void> {
    return this.queue.enqueue(write);
  }
}
