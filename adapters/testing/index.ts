// An in-memory adapter context, for an adapter's own unit tests: run a turn without Redis, a
// gateway or a worker, and see what the adapter emitted, journalled, spent and returned. It keeps
// the runtime's contract: what the adapter hands over is checked the same way (a typo in an
// outcome fails here as it would fail the turn), step names are unique within a run, a step
// journal shared by two runs replays finished steps and hands an unfinished one over as
// `unknown`, and the budget rejects the charge that passes its limit.
//
//   import { runTestTurn } from 'a2a-gateway/adapter/testing';
//   const { outcome, context } = await runTestTurn(createAdapter({}), { input: 'hello' });
//
// The gateway's own suites run adapters against real Redis; this harness is for adapter authors.
import type { Adapter, AdapterContext, AdapterState, ArtifactChunk, CallerIdentity, StepHandle, StepOutcome, TurnOutcome, TurnUsage } from '../types.ts';
import type { Assignment, DelegationOptions, DelegationResult } from '../delegation.ts';
import type { Logger, LogFields } from '../../src/logging/logger.ts';
import type { Artifact, JsonObject, JsonValue, Message } from '../../src/protocol/types.ts';
import { AdapterContractError, checkArtifactChunk, checkOutcome, checkStateKey, checkStateValue, checkStatus, checkUsage } from '../../src/runtime/adapter-contract.ts';
import { PersistedTurnBudget } from '../../src/runtime/turn-budget.ts';
import { applyArtifactChunk } from '../../src/runtime/turn-context.ts';

/** One step as the journal keeps it across runs of a turn. */
export interface TestStepRecord {
  state: 'started' | 'done' | 'failed' | 'unknown';
  idempotencyKey: string;
  reference?: string;
  value?: JsonValue;
  error?: string;
}

/**
 * The step journal of one turn, kept across runs: pass the same journal to a second run to see
 * what a worker that takes the turn over sees. `interrupt(name)` plays a worker lost inside a
 * step (started, no result).
 */
export class TestStepJournal {
  readonly records = new Map<string, TestStepRecord>();

  interrupt(name: string, idempotencyKey: string, reference?: string): void {
    this.records.set(name, { state: 'started', idempotencyKey, ...(reference === undefined ? {} : { reference }) });
  }
}

export interface TestTurnOptions {
  /** The turn's input: text, one message or several (follow-ups queued together). */
  input: string | Message | Message[];
  history?: Message[];
  /** Artifacts the task holds before this turn. */
  artifacts?: Artifact[];
  taskId?: string;
  contextId?: string;
  turn?: number;
  /** > 1 plays a run after a lost worker. */
  attempt?: number;
  /** True plays a coordinator's run after its assignments settled. */
  resumed?: boolean;
  requestedSkill?: string;
  caller?: Partial<CallerIdentity>;
  /** What ctx.extensions holds: the extensions the request activated. */
  extensions?: readonly string[];
  /** The turn's budget (ctx.budget.limit); undefined = none. */
  budget?: number;
  /** Units earlier runs of the turn spent. */
  budgetSpent?: number;
  /** Share one journal between runs to test recovery. */
  journal?: TestStepJournal;
  /** Share one map between turns: ctx.adapterState. */
  adapterState?: Map<string, JsonValue>;
  /** What ctx.contextHistory() returns. */
  contextHistory?: Message[];
  /** An outside cancel (besides context.cancel()): when it fires, so does ctx.signal. */
  signal?: AbortSignal;
  /** The adapter's name in contract errors (runTestTurn sets it). */
  adapterName?: string;
  /** What ctx.delegate does; without it delegating throws. */
  delegate?: (name: string, assignments: readonly Assignment[], options: DelegationOptions | undefined) => Promise<DelegationResult>;
}

const messagesOf = (input: TestTurnOptions['input'], taskId: string, contextId: string): Message[] => {
  if (typeof input === 'string') return [{ messageId: 'test-input-1', role: 'ROLE_USER', parts: [{ text: input }], taskId, contextId }];
  return Array.isArray(input) ? input : [input];
};

/** An AdapterContext in memory that records everything the adapter does. */
export class TestTurnContext implements AdapterContext {
  readonly taskId: string;
  readonly contextId: string;
  readonly turn: number;
  readonly attempt: number;
  readonly input: readonly Message[];
  readonly history: readonly Message[];
  readonly artifacts: Artifact[];
  readonly requestedSkill: string | undefined;
  readonly resumed: boolean;
  readonly caller: CallerIdentity;
  readonly extensions: readonly string[];
  readonly budget: PersistedTurnBudget;
  readonly journal: TestStepJournal;
  /** Every chunk the adapter emitted, in order (ctx.artifacts holds them merged). */
  readonly chunks: ArtifactChunk[] = [];
  readonly statuses: { text: string; metadata: JsonObject | undefined }[] = [];
  /** Names passed to ctx.recordStep. */
  readonly recordedSteps: string[] = [];
  readonly usage: TurnUsage[] = [];
  readonly logs: { level: keyof Logger; message: string; fields: LogFields | undefined }[] = [];
  readonly state: Map<string, JsonValue>;
  /** The first contract violation, even if the adapter caught it (the turn would fail with it). */
  contractViolation: AdapterContractError | undefined;
  private readonly controller = new AbortController();
  private readonly stepNames = new Set<string>();
  private readonly options: TestTurnOptions;
  private readonly adapterName: string;
  readonly logger: Logger;

  constructor(options: TestTurnOptions) {
    this.options = options;
    this.adapterName = options.adapterName ?? 'test';
    this.taskId = options.taskId ?? 'test-task';
    this.contextId = options.contextId ?? 'test-context';
    this.turn = options.turn ?? 1;
    this.attempt = options.attempt ?? 1;
    this.input = messagesOf(options.input, this.taskId, this.contextId);
    this.history = options.history ?? [];
    this.artifacts = structuredClone(options.artifacts ?? []);
    this.requestedSkill = options.requestedSkill;
    this.resumed = options.resumed ?? false;
    this.caller = { agent: 'default', tenant: '', principal: 'user:test:tester', scopes: ['a2a:read', 'a2a:write'], ...options.caller };
    this.extensions = Object.freeze([...(options.extensions ?? [])]);
    this.journal = options.journal ?? new TestStepJournal();
    this.state = options.adapterState ?? new Map();
    let spent = options.budgetSpent ?? 0;
    this.budget = new PersistedTurnBudget(options.budget, spent, async (units) => (spent += units));
    const log = (level: keyof Logger) => (message: string, fields?: LogFields) => {
      this.logs.push({ level, message, fields });
    };
    this.logger = { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') };
    const outside = options.signal;
    if (outside?.aborted === true) this.cancel(outside.reason);
    else outside?.addEventListener('abort', () => this.cancel(outside.reason), { once: true });
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** No trace in memory: a downstream call sends no trace headers. */
  traceHeaders(): Record<string, string> {
    return {};
  }

  /** Plays CancelTask (or the deadline): the adapter's signal fires. */
  cancel(reason: unknown = new DOMException('Task canceled', 'AbortError')): void {
    this.controller.abort(reason);
  }

  private contract<T>(check: () => T): T {
    try {
      return check();
    } catch (error) {
      if (error instanceof AdapterContractError) this.contractViolation ??= error;
      throw error;
    }
  }

  async emitStatus(text: string, metadata?: JsonObject): Promise<void> {
    const checked = this.contract(() => checkStatus(text, metadata, this.adapterName));
    this.statuses.push({ text: checked.text, metadata: checked.metadata });
  }

  async emitArtifact(input: ArtifactChunk): Promise<void> {
    const chunk = this.contract(() => checkArtifactChunk(input, this.adapterName));
    this.chunks.push(structuredClone(chunk));
    applyArtifactChunk(this.artifacts, chunk);
  }

  async recordStep(name: string): Promise<void> {
    this.recordedSteps.push(name);
  }

  async recordUsage(input: TurnUsage): Promise<void> {
    this.usage.push(this.contract(() => checkUsage(input, this.adapterName)));
  }

  async contextHistory(): Promise<readonly Message[]> {
    return this.options.contextHistory ?? [];
  }

  readonly adapterState: AdapterState = {
    get: async <T extends JsonValue = JsonValue>(key: string): Promise<T | undefined> => {
      this.contract(() => checkStateKey(key, this.adapterName));
      return this.state.get(key) as T | undefined;
    },
    set: async (key: string, value: JsonValue): Promise<void> => {
      this.contract(() => checkStateValue(key, value, this.adapterName));
      this.state.set(key, structuredClone(value));
    },
  };

  async step<T extends JsonValue>(name: string, run: (handle: StepHandle) => Promise<T>): Promise<StepOutcome<T>> {
    this.contract(() => {
      if (typeof name !== 'string' || name === '') throw new AdapterContractError(this.adapterName, 'ctx.step()', ['a step needs a non-empty name, unique within the turn']);
      if (this.stepNames.has(name)) throw new AdapterContractError(this.adapterName, 'ctx.step()', [`the step name "${name}" was already used in this turn`]);
    });
    this.stepNames.add(name);
    const known = this.journal.records.get(name);
    if (known?.state === 'done') return { status: 'done', value: known.value as T, replayed: true };
    if (known !== undefined && (known.state === 'started' || known.state === 'unknown')) {
      known.state = 'unknown';
      return { status: 'unknown', idempotencyKey: known.idempotencyKey, reference: known.reference, startedAt: new Date(0).toISOString() };
    }
    const record: TestStepRecord = { state: 'started', idempotencyKey: `${this.taskId}:${this.turn}:${name}` };
    this.journal.records.set(name, record);
    try {
      const value = await run({
        idempotencyKey: record.idempotencyKey,
        recordReference: async (reference) => {
          record.reference = reference;
        },
      });
      record.state = 'done';
      record.value = value;
      return { status: 'done', value, replayed: false };
    } catch (error) {
      // As the runtime: a step cut off by the turn's abort stays started (its effect is unknown).
      if (this.signal.aborted) throw error;
      record.state = 'failed';
      record.error = (error as Error).message;
      throw error;
    }
  }

  async delegate(name: string, assignments: readonly Assignment[], options?: DelegationOptions): Promise<DelegationResult> {
    if (this.options.delegate === undefined) throw new Error('This test context has no delegate: pass options.delegate to play the sub-agents.');
    return this.options.delegate(name, assignments, options);
  }
}

/**
 * Runs one turn of `adapter` in memory. The outcome is checked like the runtime checks it; a
 * contract violation the adapter swallowed is rethrown, as the runtime would fail the turn.
 */
export async function runTestTurn(adapter: Adapter, options: TestTurnOptions): Promise<{ outcome: TurnOutcome; context: TestTurnContext }> {
  const context = new TestTurnContext({ adapterName: adapter.name, ...options });
  const result = await adapter.run(context);
  if (context.contractViolation !== undefined) throw context.contractViolation;
  return { outcome: checkOutcome(result, adapter.name, { directMessages: adapter.directMessages === true }), context };
}
