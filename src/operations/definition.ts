// What an operation is, declared once: its name, request schema, required scope, whether it
// streams, where the HTTP+JSON binding routes it, its 0.3 and gRPC names, and its handler.
// Every binding, the scope check, the card's scope text and the openapi.yaml agreement test
// read these declarations (./registry.ts); none keeps a list of its own.
import type { z } from 'zod';
import type { TraceContext } from '../telemetry/spans.ts';
import type { AgentEndpoint } from '../agents/agent-endpoint.ts';
import type { Principal } from '../auth/principal.ts';
import type { Scope } from '../config/schema.ts';
import type { Owner } from '../store/task-store.ts';
import type { GatewayHandler } from '../tasks/gateway-handler.ts';
import type { StreamPlan } from './stream-plan.ts';

export type HttpMethod = 'GET' | 'POST' | 'DELETE';

/** One HTTP+JSON route: a method and a path below the binding's base URL, with `{name}` placeholders filling request fields. */
export interface RestRoute {
  method: HttpMethod;
  path: string;
}

/** Whether the HTTP+JSON binding reads a body for the operation, and whether it must have one. */
export type RestBody = 'required' | 'optional' | 'none';

/**
 * How the gRPC binding serves the operation (spec 10): the A2AService method and its message
 * types from a2a.proto. Streaming operations answer with `stream <responseType>`.
 */
export interface GrpcMapping {
  method: string;
  requestType: string;
  responseType: string;
}

/** The operation's name in A2A 0.3 (the compat layer serves it under these). */
export interface LegacyMapping {
  /** The 0.3 JSON-RPC method, e.g. `message/send`. */
  jsonRpcMethod: string;
  /** The 0.3 HTTP+JSON routes (below the binding's base URL, e.g. `/v1/message:send`). */
  rest: readonly RestRoute[];
}

/** Everything an operation's handler may use; built by the dispatcher after the caller was admitted. */
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
  /** Charges a large answer's bytes to the caller's rate (limits.requestBytesPerToken): its next requests wait. */
  chargeAnswerBytes: (bytes: number) => Promise<void>;
}

interface OperationBase<Request> {
  /** The A2A name (PascalCase): the 1.0 JSON-RPC method and the gRPC method. */
  name: string;
  /** The scope a caller's credentials must grant (a2a:admin implies every one). */
  scope: Scope;
  /** The request in ProtoJSON (camelCase; proto field names are accepted too, see protojson.ts). */
  request: z.ZodType<Request>;
  /** HTTP+JSON routes, each also served below `/{tenant}`. */
  rest: readonly RestRoute[];
  restBody: RestBody;
  /** Absent for operations A2A 0.3 did not have (ListTasks) and for this gateway's extensions. */
  legacy?: LegacyMapping;
  /** Absent for methods of this gateway's extensions, which the gRPC service does not carry. */
  grpc?: GrpcMapping;
  /**
   * True for the operations that start agent work (SendMessage, SendStreamingMessage): an agent
   * extension marked required must be activated by the client for these (spec 4.6.3).
   */
  startsWork?: boolean;
}

export interface UnaryOperation<Request = unknown, Result = unknown> extends OperationBase<Request> {
  streaming: false;
  handle(request: Request, call: OperationCall): Promise<Result>;
}

export interface StreamOperation<Request = unknown> extends OperationBase<Request> {
  streaming: true;
  /** Validates and starts the stream; a refusal thrown here is answered as an ordinary error (no SSE byte was written). */
  open(request: Request, call: OperationCall): Promise<StreamPlan>;
}

/**
 * Any declared operation. Handlers are methods, so declarations of different request types
 * share one list; each is checked against its own schema's type where it is written.
 */
export type Operation = UnaryOperation<unknown, unknown> | StreamOperation<unknown>;

/** Declares an operation that answers with one JSON value; its handler's request type is the schema's. */
export function defineUnary<Request, Result>(declaration: Omit<UnaryOperation<Request, Result>, 'streaming'>): UnaryOperation<Request, Result> {
  return { ...declaration, streaming: false };
}

/** Declares an operation that answers with an SSE stream of StreamResponse events. */
export function defineStream<Request>(declaration: Omit<StreamOperation<Request>, 'streaming'>): StreamOperation<Request> {
  return { ...declaration, streaming: true };
}
