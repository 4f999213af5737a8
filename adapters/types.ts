// The adapter interface: the one surface an agent implementation sees. Adapters never touch
// Redis; everything they do goes through the context, which the turn runtime fences with the
// task's lease so a replaced worker's adapter cannot write.
import type { AgentSkill, Artifact, JsonObject, JsonValue, Message, Part } from '../src/protocol/types.ts';
import type { Assignment, DelegationOptions, DelegationResult } from './delegation.ts';
import type { Logger } from '../src/logging/logger.ts';

export interface ArtifactChunk {
  /** Stable id; chunks with the same id and `append: true` extend one artifact. */
  artifactId: string;
  name?: string;
  description?: string;
  parts: Part[];
  /** true: add these parts to the artifact with this id; false/absent: replace it. */
  append?: boolean;
  /** true on the final chunk of this artifact. */
  lastChunk?: boolean;
  metadata?: JsonObject;
}

/** What a step's function gets: the key to pass to the external system, and a way to note its id. */
export interface StepHandle {
  /** Stable across attempts of this turn: `<taskId>:<turn>:<step name>`. Send it as the idempotency key. */
  readonly idempotencyKey: string;
  /** Journal an external reference (e.g. the downstream payment or task id) as soon as it is known. */
  recordReference(reference: string): Promise<void>;
}

/**
 * How a step ended. `done` with `replayed: true` is a result journalled by an earlier attempt
 * of this turn: the function did not run again. `unknown` means an earlier attempt started the
 * step and was lost before recording a result: it may or may not have taken effect, so it is
 * not run again; reconcile it with the external system using its key or reference.
 */
export type StepOutcome<T extends JsonValue> =
  | { status: 'done'; value: T; replayed: boolean }
  | { status: 'unknown'; idempotencyKey: string; reference: string | undefined; startedAt: string };

/**
 * The turn's budget (setting `turnBudget`), in whatever units the adapter counts: tokens,
 * calls, cents. The spent total is stored with the task, so a worker that takes the turn over
 * after a crash continues from it; a new turn starts at 0.
 */
export interface TurnBudget {
  /** Units the turn may spend; undefined when no budget is set (charges are still totalled). */
  readonly limit: number | undefined;
  /** Units spent by this turn so far, across every worker that ran it. */
  spent(): number;
  /**
   * Adds `units` (>= 0) to the stored total. A charge that takes the total past the limit is
   * still recorded, then rejects (an error named TurnBudgetExceededError) and the turn fails naming the limit,
   * even if the adapter catches the error. Call it before the work it pays for.
   */
  charge(units: number, what?: string): Promise<void>;
}

/** Who the task belongs to and what its latest input's credentials granted (read-only). */
export interface CallerIdentity {
  /** The agent (its name in the gateway's configuration) the task was sent to. */
  readonly agent: string;
  /** The caller's tenant ("" = the default tenant). */
  readonly tenant: string;
  /** `user:<issuer>:<sub>`, `partner:<id>` or `anonymous`. */
  readonly principal: string;
  /** Every scope the credentials granted (a2a:… and the deployment's own). */
  readonly scopes: readonly string[];
  /**
   * On a sub-agent's task: the coordinator tasks whose turns delegated it, nearest first (its
   * coordinator, that one's coordinator, …). Absent for a task a caller sent.
   */
  readonly delegatedBy?: readonly string[];
}

export type { Logger } from '../src/logging/logger.ts';

export interface AdapterContext {
  readonly taskId: string;
  readonly contextId: string;
  /** 1 for the task's first turn; each accepted follow-up input starts the next one. */
  readonly turn: number;
  /** 1 on the first execution of this turn; higher after a worker was lost mid-turn. */
  readonly attempt: number;
  /** The message(s) this turn answers, oldest first (several when follow-ups queued up). */
  readonly input: readonly Message[];
  /** The task's whole history before this turn's input, oldest first. */
  readonly history: readonly Message[];
  /** Artifacts the task holds so far (from earlier turns, or earlier attempts of this one). */
  readonly artifacts: readonly Artifact[];
  /** The skill the caller asked for (message metadata `skill`), if any. */
  readonly requestedSkill: string | undefined;
  /** Who sent the turn's input. Never put secrets from it in artifacts; it is for decisions and logs. */
  readonly caller: CallerIdentity;
  /**
   * The extensions the request that sent this turn's (latest) input activated: URIs the client
   * asked for in A2A-Extensions that this agent declares (Adapter.extensions, or the gateway's).
   */
  readonly extensions: readonly string[];
  /** The gateway's log, with the task, context, turn, attempt, agent and owner key (and, tracing on, trace ids) on every line. */
  readonly logger: Logger;
  /**
   * Fires when the task is canceled (in whichever process runs the turn), when the turn runs
   * past its deadline, and when the worker shuts down. `abortCauseOf(signal)` (adapters/abort-reasons.ts)
   * says which: after a shutdown the turn is handed to another worker that continues it, so
   * work outside the gateway (a downstream task) must be left running, not canceled.
   */
  readonly signal: AbortSignal;
  /**
   * The W3C trace context (traceparent, tracestate) of the span this turn's adapter runs in, for
   * the adapter's downstream calls to send as headers, so the callee's spans join the turn's
   * trace. Empty while tracing is off. (The gateway passes trace context explicitly rather than
   * through AsyncLocalStorage; see docs/observability.md.)
   */
  traceHeaders(): Record<string, string>;
  /** Publish a progress status (TASK_STATE_WORKING) with an agent message. */
  emitStatus(text: string, metadata?: JsonObject): Promise<void>;
  /**
   * Publish an artifact or one chunk of it; it is stored before it is announced. The promise
   * resolves once it is stored. Emits are stored in the order they were made, and all of them
   * before the turn's final status; one the store refuses (an output bound) fails the turn. So an
   * adapter that returns right after its last emit need not await it (catch its rejection): the
   * final status then goes out behind it without waiting for its answer, one round trip less.
   */
  emitArtifact(chunk: ArtifactChunk): Promise<void>;
  /** Record a step of this turn in the task's turn record (for operators, `tasks inspect`). */
  recordStep(name: string, detail?: JsonObject): Promise<void>;
  /**
   * Record what a model call consumed. Totals are kept per turn (`tasks inspect`) and per task
   * (`metadata.a2aGateway.usage` on the task). Charging `ctx.budget` is separate.
   */
  recordUsage(usage: TurnUsage): Promise<void>;
  /**
   * The messages of this context's earlier tasks (same owner, same agent), oldest first: what a
   * conversational agent needs to continue a conversation across tasks. At most `maxTasks`
   * (default 20) tasks, the most recent ones; this task's own history is `history`.
   */
  contextHistory(options?: { maxTasks?: number }): Promise<readonly Message[]>;
  /**
   * Run a side-effecting step through the journal: it is recorded as started before `run`
   * runs and its result after, so a turn resumed after a crash never repeats it blindly.
   * Names must be unique within a turn: a second step of the same name in one run throws (a
   * loop names each step, e.g. `charge-${i}`). A step whose `run` throws is journalled as
   * failed and the error is rethrown; a later attempt runs it again.
   */
  step<T extends JsonValue>(name: string, run: (handle: StepHandle) => Promise<T>): Promise<StepOutcome<T>>;
  /** What this turn may spend and has spent (see TurnBudget). */
  readonly budget: TurnBudget;
  /**
   * Hand work to sub-agents: each assignment becomes a child task of the same owner (linked by
   * `metadata.a2aGateway.parentTaskId` and `referenceTaskIds`), run by its role's adapter, at
   * most `maxParallel` at once across all workers. While they run this turn is parked and holds
   * no worker; when they settle the turn runs again from the top (`resumed` is true) and the
   * same call (same name, within the task) returns their evidence. So put work before a
   * delegate in steps, and name each delegation once per task.
   */
  delegate(name: string, assignments: readonly Assignment[], options?: DelegationOptions): Promise<DelegationResult>;
  /** True when this run continues a turn that was parked for its assignments. */
  readonly resumed: boolean;
  /**
   * Small values the adapter keeps with the task across turns and workers (e.g. the id of the
   * downstream task a follow-up must continue). Written through the lease like every other
   * write, so a replaced worker cannot set them; they expire with the task.
   */
  readonly adapterState: AdapterState;
}

export interface AdapterState {
  /** The value last set under `key` for this task, by any turn or worker. */
  get<T extends JsonValue = JsonValue>(key: string): Promise<T | undefined>;
  /** Stores `value` (JSON, at most 64 KiB) under `key` (1 to 128 characters). */
  set(key: string, value: JsonValue): Promise<void>;
}

export type { Assignment, AssignmentEvidence, DelegationOptions, DelegationResult } from './delegation.ts';

/**
 * What an adapter checked about its result, when it could check it (the payment appears in
 * the ledger, the reviewer approved, the tests passed). A terminal state alone is not a
 * verified outcome: the task reports which it is in `metadata.a2aGateway.outcome`.
 */
export interface OutcomeVerification {
  verified: boolean;
  /** How it was checked, in a few words ("ledger entries match the charges"). */
  method: string;
  /** What was found: ids, counts, the reviewer's task, … */
  evidence?: JsonObject;
}

/** What a model call consumed (ctx.recordUsage). */
export interface TurnUsage {
  model?: string;
  inputTokens: number;
  outputTokens: number;
}

/**
 * The agent's message that ends a turn: text, or parts (e.g. a question with a data part
 * describing the form to fill in).
 */
export type OutcomeMessage = string | Part[];

/**
 * How a turn ends. The runtime turns it into the task's next status. It is checked when run()
 * resolves: anything else (a misspelt state, a missing message, a part with two kinds of
 * content) fails the turn once with a reason naming the field, and is not retried.
 *
 * `message` answers with a direct Message instead of a task (spec 3.1.1), for an adapter that
 * declares `directMessages: true`: SendMessage returns that Message, SendStreamingMessage
 * streams it as its only frame and closes. The gateway still keeps the exchange as a completed
 * task (so a re-sent messageId gets the same Message back), which the client never has to know.
 * Where the client already holds the task (a later turn, a sub-agent, a turn that emitted
 * status or artifacts first) it completes the task with the message as its final status message.
 */
export type TurnOutcome =
  | { state: 'completed'; message?: OutcomeMessage; verification?: OutcomeVerification }
  | { state: 'message'; message: OutcomeMessage }
  | { state: 'input-required'; message: OutcomeMessage }
  | { state: 'auth-required'; message: OutcomeMessage }
  | { state: 'failed'; message: OutcomeMessage }
  | { state: 'rejected'; message: OutcomeMessage };

export interface Adapter {
  /** Kind of adapter, e.g. "demo"; recorded on every task it runs. */
  readonly name: string;
  /** Version recorded on every task it runs (semver). */
  readonly version: string;
  /** Skills published on the agent card. */
  readonly skills: AgentSkill[];
  /**
   * Skills described only to authenticated callers, in the extended agent card
   * (GetExtendedAgentCard). With authentication off they are on the public card.
   */
  readonly extendedSkills?: AgentSkill[];
  readonly defaultInputModes?: string[];
  readonly defaultOutputModes?: string[];
  /**
   * True when run() may answer with `{ state: 'message' }` (a direct Message, spec 3.1.1).
   * Streams of a new task to this agent then hold the task's first frames back until the turn
   * shows whether it is a task or a message (a message-only stream has exactly one frame).
   */
  readonly directMessages?: boolean;
  /**
   * Extensions (spec 4.6) this agent supports, declared on its card. The extensions a request
   * activates (A2A-Extensions) reach the turn as `ctx.extensions`. One marked `required` must be
   * activated by every client that sends the agent a message.
   */
  readonly extensions?: readonly AdapterExtension[];
  /**
   * Optional: card fields learnt at run time, e.g. a remote agent's name, description and
   * skills read from its own card. The gateway uses them wherever the agent's configuration
   * sets none (`card.name`, `card.description`, `card.skills`), calls it when it builds the
   * agent's card and again once the card is older than the agent's `cardRefreshSeconds`; a
   * rejection keeps the previous card (or, on the first build, the adapter's own fields, tried
   * again seconds later; with `skills: "from downstream"` set, the card waits for it). The
   * adapter may cache.
   */
  describe?(): Promise<AdapterDescription>;
  /**
   * Run one turn. Resolve with the outcome; throwing fails the turn with the error's message.
   * When `ctx.signal` fires, stop promptly; the runtime records the task as canceled.
   */
  run(ctx: AdapterContext): Promise<TurnOutcome>;
}

/** An extension an adapter declares (AgentExtension on the card). */
export interface AdapterExtension {
  /** The extension's identifier; a breaking change gets a new URI. */
  uri: string;
  description?: string;
  /** Clients must activate it (A2A-Extensions) to send messages to this agent. */
  required?: boolean;
  params?: JsonObject;
}

/** What an adapter can say about itself at run time (Adapter.describe). */
export interface AdapterDescription {
  /** The agent's own name (a downstream agent's), used where the configuration sets none. */
  name?: string;
  skills: AgentSkill[];
  /** Skills only authenticated callers see (extended card). */
  extendedSkills?: AgentSkill[];
  description?: string;
  defaultInputModes?: string[];
  defaultOutputModes?: string[];
}

/**
 * What a backend may make a worker read (setting `backendLimits`, per agent or gateway-wide).
 * `boundedFetch` (adapters/bounded-response.ts) enforces them on every answer it returns.
 */
export interface BackendLimits {
  /** Bytes of one answer that is not a stream. */
  readonly maxResponseBytes: number;
  /** Bytes of one event of a stream (one SSE event). */
  readonly maxEventBytes: number;
  /** Bytes of one stream in all. */
  readonly maxStreamBytes: number;
  /** How long the body of an answer that is not a stream may take once its headers arrived. */
  readonly bodyTimeoutMs: number;
  /** Longest silence within a stream. */
  readonly streamIdleTimeoutMs: number;
}

/**
 * The gateway's signed statement of who a backend call is for (setting `callerIdentity` of the
 * agent or role): a short-lived JWT naming the caller, the gateway and the delegating
 * coordinators, for the adapter to send in `header` on its calls to the backend's configured
 * origin, and nowhere else (docs/security.md).
 */
export interface CallerTokens {
  /** The request header the token goes in (default X-A2A-Caller). */
  readonly header: string;
  /**
   * A freshly signed token for this turn's caller, its audience `origin` (the backend's
   * configured origin, e.g. "https://agent.example.com"). It lives briefly: sign one per request.
   */
  token(ctx: AdapterContext, origin: string): Promise<string>;
}

/** What the gateway tells an adapter factory about where the adapter runs. */
export interface AdapterEnvironment {
  /** The agent's bounds on what its backend may send; an adapter that calls out over HTTP reads through them. */
  readonly backendLimits: BackendLimits;
  /** Present when the agent (or role) tells its backend who is calling: attach `header` to calls to the backend's origin. */
  readonly callerIdentity?: CallerTokens;
}

/** A module named in configuration exports `createAdapter(options, environment)` (or a default of it). */
export type AdapterFactory = (options: JsonObject, environment: AdapterEnvironment) => Adapter | Promise<Adapter>;
