// The adapter's context for one turn. It keeps the task's artifacts in memory for this
// worker and writes every change through the store fenced by the lease generation, in the
// order the adapter made them, even when the adapter does not await each call.
import { traceHeaders, type TraceContext } from '../telemetry/spans.ts';
import { createHash } from 'node:crypto';
import { newId } from '../ids.ts';
import type { AdapterContext, AdapterState, ArtifactChunk, CallerIdentity, Assignment, DelegationOptions, DelegationResult, StepHandle, StepOutcome, TurnUsage } from '../../adapters/types.ts';
import { AdapterContractError, checkArtifactChunk, checkStateKey, checkStateValue, checkStatus, checkUsage, partsOf } from './adapter-contract.ts';
import { TurnParked } from '../coordination/delegator.ts';
import type { Artifact, JsonObject, JsonValue, Message, Part, StreamResponse, TaskStatus } from '../protocol/types.ts';
import type { StepRecord, TaskStore, TurnRecord } from '../store/task-store.ts';
import { PersistedTurnBudget } from './turn-budget.ts';
import type { LogFields, Logger } from '../logging/logger.ts';
import { addEventsTime, timeNow } from '../telemetry/stage-marks.ts';
import type { OutputLimits } from '../limits/output-limits.ts';
import { applyArtifactChunk, type PendingArtifactChunk } from '../store/stored-artifacts.ts';
import { ArtifactCompaction } from './artifact-compaction.ts';
import { setTimeout as sleep } from 'node:timers/promises';

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

const SILENT: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

/** A logger that puts `bound` on every line (the line's own fields win). */
function boundLogger(logger: Logger | undefined, bound: LogFields): Logger {
  if (logger === undefined) return SILENT;
  return {
    debug: (message, fields) => logger.debug(message, { ...bound, ...fields }),
    info: (message, fields) => logger.info(message, { ...bound, ...fields }),
    warn: (message, fields) => logger.warn(message, { ...bound, ...fields }),
    error: (message, fields) => logger.error(message, { ...bound, ...fields }),
  };
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
  /** The gateway's log; the context binds it to the task for the adapter (ctx.logger). */
  logger?: Logger;
  caller: CallerIdentity;
  /** The extensions the request of the turn's latest input activated (ctx.extensions). */
  extensions?: readonly string[];
  /** What the turn may store (the agent's limits); undefined: the settings' defaults. */
  outputLimits?: OutputLimits;
  /**
   * Takes an output's bytes from the owner's output rate (limits.outputBytesPerSecond): 0 when
   * taken, else the ms to wait before asking again; undefined: output is not paced.
   */
  takeOutput?: (bytes: number) => Promise<number>;
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
  private readonly artifactState: Artifact[];
  /** When a chunk goes with the whole snapshot instead of beside it. */
  private readonly compaction: ArtifactCompaction;
  private readonly adapterName: string;
  private readonly readContextHistory: ((maxTasks: number) => Promise<Message[]>) | undefined;
  private writes: Promise<void> = Promise.resolve();
  private writeError: Error | undefined;
  private readonly emitScope: string;
  private readonly outputLimits: OutputLimits | undefined;
  private readonly takeOutput: ((bytes: number) => Promise<number>) | undefined;
  /** Events of this run an earlier run had stored already (not stored again). */
  private repeatedEvents = 0;
  /** Parts this run put in each artifact it started with a replacing chunk (a re-run's own view). */
  private readonly ownArtifactParts = new Map<string, Part[]>();
  /** Events this run has emitted so far (each one's place in the run). */
  private emitSequence = 0;
  /** This run appended an event: it is past the part that repeats an earlier run. */
  private pastPrefix = false;
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
    this.artifactState = init.artifacts;
    this.compaction = new ArtifactCompaction(init.artifactBytes?.snapshot ?? 2, init.artifactBytes?.pending ?? 0);
    this.requestedSkill = init.requestedSkill;
    this.signal = init.signal;
    this.turnRecord = init.turnRecord;
    this.adapterName = init.adapterName;
    this.readContextHistory = init.readContextHistory;
    this.emitScope = init.emitScope;
    this.outputLimits = init.outputLimits;
    this.takeOutput = init.takeOutput;
    this.caller = Object.freeze({ ...init.caller, scopes: Object.freeze([...init.caller.scopes]) });
    this.extensions = Object.freeze([...(init.extensions ?? [])]);
    this.logger = boundLogger(init.logger, { taskId: this.taskId, contextId: this.contextId, turn: this.turn, attempt: this.attempt, agent: init.caller.agent });
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
    return this.artifactState;
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
      (units) => this.enqueueValue(() => this.store.chargeBudget(this.taskId, this.lease.generation, units)),
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
    const event: StreamResponse = { statusUpdate: { taskId: this.taskId, contextId: this.contextId, status } };
    const place = this.nextPlace({ status: checked.text, metadata: checked.metadata ?? null });
    return this.enqueue(async () => {
      await this.paceOutput(JSON.stringify(event).length);
      await this.append(undefined, status, event, place);
    });
  }

  emitArtifact(input: ArtifactChunk): Promise<void> {
    let chunk: ArtifactChunk;
    try {
      chunk = this.contract(() => checkArtifactChunk(input, this.adapterName));
    } catch (error) {
      return Promise.reject(error as Error);
    }
    const place = this.nextPlace({ artifact: chunk as unknown as JsonObject });
    return this.enqueue(async () => {
      // What this run itself has put in the artifact, when it started it with a replacing chunk.
      const own = chunk.append === true ? this.ownArtifactParts.get(chunk.artifactId) : [];
      const ownParts = own === undefined ? undefined : [...own, ...chunk.parts];
      if (ownParts === undefined) this.ownArtifactParts.delete(chunk.artifactId);
      else this.ownArtifactParts.set(chunk.artifactId, ownParts);
      // A re-run still repeating its earlier run may diverge at this chunk. Appended as it is, it
      // would extend what the earlier run stored after the shared part (a spliced reply); sent
      // whole instead, it replaces the artifact with exactly what this run built. Repeats are
      // still recognized: the digest is of the chunk the adapter emitted.
      const sent: ArtifactChunk =
        !this.pastPrefix && this.repeatedEvents > 0 && chunk.append === true && ownParts !== undefined ? { ...chunk, append: false, parts: ownParts } : chunk;
      const index = this.artifactState.findIndex((a) => a.artifactId === sent.artifactId);
      const before = index >= 0 ? this.artifactState[index] : undefined;
      const merged = applyArtifactChunk(this.artifactState, sent);
      const artifact: Artifact = { ...merged, parts: sent.parts };
      const event: StreamResponse = {
        artifactUpdate: {
          taskId: this.taskId,
          contextId: this.contextId,
          artifact,
          append: sent.append === true,
          lastChunk: sent.lastChunk === true,
        },
      };
      // Stored beside the task's artifacts snapshot; now and then the whole snapshot instead (see ArtifactCompaction).
      const pending: PendingArtifactChunk = { append: sent.append === true, artifact };
      const pendingBytes = JSON.stringify(pending).length;
      const compact = this.compaction.compactsWith(pendingBytes);
      let stored: boolean;
      try {
        await this.paceOutput(pendingBytes);
        stored = await this.append(compact ? this.artifactState : undefined, undefined, event, place, { artifactId: sent.artifactId, append: sent.append === true }, compact ? undefined : pending);
      } catch (error) {
        // Not stored (an output bound, a stale lease): the artifacts the turn ends with must not hold it.
        this.undoArtifact(index, before, chunk.artifactId);
        throw error;
      }
      if (!stored) {
        // An earlier run of this turn stored this chunk already: the stored artifacts (which
        // this run started from) include it, so it must not be applied a second time.
        this.undoArtifact(index, before, chunk.artifactId);
      } else {
        this.compaction.stored(pendingBytes, compact);
      }
    });
  }

  private undoArtifact(index: number, before: Artifact | undefined, artifactId: string): void {
    if (before !== undefined) this.artifactState[index] = before;
    else this.artifactState.splice(this.artifactState.findIndex((a) => a.artifactId === artifactId), 1);
  }

  recordStep(name: string, detail?: JsonObject): Promise<void> {
    return this.enqueue(async () => {
      const step: NonNullable<TurnRecord['steps']>[number] = { name, atMs: Date.now(), attempt: this.attempt };
      if (detail !== undefined) step.detail = detail;
      (this.turnRecord.steps ??= []).push(step);
      await this.store.writeTurnRecord(this.taskId, this.lease.generation, this.turnRecord);
    });
  }

  async recordUsage(input: TurnUsage): Promise<void> {
    const usage = this.contract(() => checkUsage(input, this.adapterName));
    const total = (this.turnRecord.usage ??= { inputTokens: 0, outputTokens: 0 });
    total.inputTokens += usage.inputTokens;
    total.outputTokens += usage.outputTokens;
    if (usage.model !== undefined) total.model = usage.model;
    await this.enqueue(() => this.store.writeTurnRecord(this.taskId, this.lease.generation, this.turnRecord));
  }

  readonly adapterState: AdapterState = {
    get: async <T extends JsonValue = JsonValue>(key: string): Promise<T | undefined> => {
      this.contract(() => checkStateKey(key, this.adapterName));
      // After this run's own writes, so a value set a moment ago reads back.
      await this.writes;
      return (await this.store.readAdapterState(this.taskId, key)) as T | undefined;
    },
    set: (key: string, value: JsonValue): Promise<void> => {
      try {
        this.contract(() => checkStateValue(key, value, this.adapterName));
      } catch (error) {
        return Promise.reject(error as Error);
      }
      return this.enqueue(() => this.store.writeAdapterState(this.taskId, this.lease.generation, key, value));
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
    const field = `${this.turn}:${name}`;
    const record: StepRecord = {
      name,
      turn: this.turn,
      idempotencyKey: `${this.taskId}:${this.turn}:${name}`,
      state: 'started',
      attempt: this.attempt,
      startedAtMs: Date.now(),
    };
    const journalled = await this.enqueueValue(() => this.store.startStep(this.taskId, this.lease.generation, field, record));
    if (journalled !== undefined && journalled.state === 'done') return { status: 'done', value: journalled.value as T, replayed: true };
    if (journalled !== undefined && (journalled.state === 'started' || journalled.state === 'unknown')) {
      if (journalled.state === 'started') {
        // Journal that the unknown was handed over, so operators see it was not forgotten.
        const surfaced: StepRecord = { ...journalled, state: 'unknown', surfacedToAttempt: this.attempt };
        await this.enqueue(() => this.store.writeStep(this.taskId, this.lease.generation, field, surfaced));
      }
      return {
        status: 'unknown',
        idempotencyKey: journalled.idempotencyKey,
        reference: journalled.reference,
        startedAt: new Date(journalled.startedAtMs).toISOString(),
      };
    }
    if (journalled !== undefined) {
      // A failed step is known not to have succeeded: this attempt runs it again.
      await this.enqueue(() => this.store.writeStep(this.taskId, this.lease.generation, field, record));
    }
    const handle: StepHandle = {
      idempotencyKey: record.idempotencyKey,
      recordReference: (reference) => {
        record.reference = reference;
        return this.enqueue(() => this.store.writeStep(this.taskId, this.lease.generation, field, { ...record }));
      },
    };
    let value: T;
    try {
      value = await run(handle);
    } catch (error) {
      // Cut off by the turn's abort (a shutdown handing the turn back, a cancel, the deadline, an
      // interrupt), the step may well have had its effect (a request already sent): it is not
      // known to have failed. It stays started, so the attempt that takes the turn over gets it
      // as unknown to reconcile, exactly as after a crash, instead of running it again.
      if (this.signal.aborted) throw error;
      const failed: StepRecord = { ...record, state: 'failed', finishedAtMs: Date.now(), error: (error as Error).message ?? String(error) };
      await this.enqueue(() => this.store.writeStep(this.taskId, this.lease.generation, field, failed));
      throw error;
    }
    const done: StepRecord = { ...record, state: 'done', finishedAtMs: Date.now(), value };
    await this.enqueue(() => this.store.writeStep(this.taskId, this.lease.generation, field, done));
    return { status: 'done', value, replayed: false };
  }

  /** Stage 2 of a cancellation (or of an interrupt of `interruptedTurn`), ordered after everything the adapter emitted so far. */
  acknowledgeCancel(interruptedTurn?: number): Promise<void> {
    return this.enqueue(() =>
      this.store.acknowledgeCancel({
        taskId: this.taskId,
        contextId: this.contextId,
        generation: this.lease.generation,
        status: { state: 'TASK_STATE_WORKING', timestamp: new Date().toISOString() },
        ...(interruptedTurn === undefined ? {} : { interruptedTurn }),
        now: new Date(),
      }),
    );
  }

  /** Waits for every write the adapter started; rethrows the first failure (e.g. a stale lease). */
  async settle(): Promise<void> {
    await this.writes;
    if (this.writeError !== undefined) throw this.writeError;
  }

  private enqueueValue<T>(read: () => Promise<T>): Promise<T> {
    let result: T | undefined;
    return this.enqueue(async () => {
      result = await read();
    }).then(() => result as T);
  }

  private enqueue(write: () => Promise<void>): Promise<void> {
    const next = this.writes.then(async () => {
      if (this.writeError !== undefined) throw this.writeError;
      try {
        await write();
      } catch (error) {
        this.writeError ??= error as Error;
        throw error;
      }
    });
    // Keep the chain alive for later writes; the caller still sees this write's failure.
    this.writes = next.catch(() => undefined);
    return next;
  }

  /**
   * The place of the adapter's next event in this run, taken when the adapter makes the call
   * (so it follows call order even when the adapter does not await), with a digest of what the
   * event says: a re-run that says the same at the same place appends nothing.
   */
  private nextPlace(content: JsonObject): { sequence: number; digest: string } {
    this.emitSequence += 1;
    const digest = createHash('sha256').update(JSON.stringify(content)).digest('base64url').slice(0, 22);
    return { sequence: this.emitSequence, digest };
  }

  /**
   * Waits until the owner's output rate has room for `bytes` (limits.outputBytesPerSecond). It
   * runs in the write queue, so the adapter's later writes wait behind it; the turn's abort (a
   * cancel, the deadline, a shutdown) ends the wait at once.
   */
  private async paceOutput(bytes: number): Promise<void> {
    if (this.takeOutput === undefined) return;
    for (;;) {
      this.signal.throwIfAborted();
      const waitMs = await this.takeOutput(bytes);
      if (waitMs <= 0) return;
      await sleep(waitMs, undefined, { signal: this.signal });
    }
  }

  /** Appends one event; false when an earlier run of this turn had already appended it. */
  private async append(
    artifacts: Artifact[] | undefined,
    status: TaskStatus | undefined,
    event: StreamResponse,
    place: { sequence: number; digest: string },
    artifactChunk?: { artifactId: string; append: boolean },
    pendingArtifact?: PendingArtifactChunk,
  ): Promise<boolean> {
    const startedAt = timeNow();
    const result = await this.store.appendEvents({
      taskId: this.taskId,
      ownerKey: this.lease.ownerKey,
      contextId: this.contextId,
      generation: this.lease.generation,
      artifacts,
      status,
      events: [event],
      emit: { scope: this.emitScope, sequence: place.sequence, digest: place.digest, pastPrefix: this.pastPrefix },
      ...(this.outputLimits === undefined ? {} : { outputLimits: this.outputLimits }),
      ...(artifactChunk === undefined ? {} : { artifactChunk }),
      ...(pendingArtifact === undefined ? {} : { pendingArtifact }),
      now: new Date(),
    });
    if (startedAt !== 0) addEventsTime(this.taskId, timeNow() - startedAt);
    if (result.kind === 'repeated') {
      this.repeatedEvents += 1;
      if (this.repeatedEvents === 1) {
        this.logger.info('this run repeats events an earlier run of the turn stored; they are not stored again', {
          taskId: this.taskId,
          turn: this.turn,
          attempt: this.attempt,
          emitScope: this.emitScope,
          firstRepeated: place.sequence,
        });
      }
      return false;
    }
    this.pastPrefix = true;
    return true;
  }
}
