// An operation as the dispatcher runs it: its spec (src/protocol/operations: name, scope, request
// schema, streaming, routes) with its handler. Every binding and the scope check read these
// through the registry (./registry.ts); none keeps a list of its own.
import type { TraceContext } from '../telemetry/spans.ts';
import type { AgentEndpoint } from '../agents/agent-endpoint.ts';
import type { Principal } from '../auth/principal.ts';
import type { StreamSpec, UnarySpec } from '../protocol/operations/spec.ts';
import type { Owner } from '../store/task-store.ts';
import type { GatewayHandler } from '../tasks/gateway-handler.ts';
import type { StreamPlan } from './stream-plan.ts';

/** Everything an operation's handler may use; built by the dispatcher after the caller was admitted. */
import type { TaskReserver } from '../consumers/consumer-gate.ts';

export interface OperationCall {
  /** Undefined when authentication is off. */
  principal: Principal | undefined;
  /** Whose the request is: the caller with the agent whose URLs it came to (scope, tenant and agent access checked, one rate token taken). */
  owner: Owner;
  /** Every scope the caller's credentials granted (what the adapter sees as ctx.caller.scopes). */
  grants: readonly string[];
  service: GatewayHandler;
  endpoint: AgentEndpoint;
  /** The SSE Last-Event-ID a stream resumes after, when the client sent one. */
  lastEventId: string | undefined;
  /** The extensions this request activated (A2A-Extensions ∩ what the agent declares). */
  extensions: readonly string[];
  /** The trace context of the request's span (tracing on). */
  trace: TraceContext;
  /** The request's headers (gRPC: its metadata), for extensions whose parameters travel there. */
  header: (name: string) => string | undefined;
  /** The binding writes the answer with serializeAnswer, untranslated (Caller.answersSpliced). */
  answersSpliced: boolean;
  /** Charges a large answer's bytes to the caller's rate (limits.requestBytesPerToken): its next requests wait. */
  chargeAnswerBytes: (bytes: number) => Promise<void>;
  /**
   * Answers weighing more than `payAfterBytes` are paid before they are built (`pay` throws 429
   * when the caller's rate cannot pay now). Absent, or 0, when the caller's rate is off.
   */
  largeAnswers?: { payAfterBytes: number; pay: (bytes: number) => Promise<void> };
  /** Reserves a new task under the caller's consumer plan (src/consumers); absent: the caller is no consumer's. */
  reserveTask?: TaskReserver;
}

export interface UnaryOperation<Request = unknown, Result = unknown> extends UnarySpec<Request> {
  handle(request: Request, call: OperationCall): Promise<Result>;
}

export interface StreamOperation<Request = unknown> extends StreamSpec<Request> {
  /** Validates and starts the stream; a refusal thrown here is answered as an ordinary error (no SSE byte was written). */
  open(request: Request, call: OperationCall): Promise<StreamPlan>;
}

/**
 * Any operation with its handler. Handlers are methods, so operations of different request
 * types share one list; each is checked against its own schema's type where it is written.
 */
export type Operation = UnaryOperation<unknown, unknown> | StreamOperation<unknown>;

/** The handler of an operation that answers with one JSON value; its request type is the spec's schema's. */
export function defineUnary<Request, Result>(spec: UnarySpec<Request>, handle: (request: Request, call: OperationCall) => Promise<Result>): UnaryOperation<Request, Result> {
  return { ...spec, handle };
}

/** The handler of an operation that answers with an SSE stream of StreamResponse events: it opens the stream. */
export function defineStream<Request>(spec: StreamSpec<Request>, open: (request: Request, call: OperationCall) => Promise<StreamPlan>): StreamOperation<Request> {
  return { ...spec, open };
}
