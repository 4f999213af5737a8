// What an operation is, apart from what it does: its name, the scope a caller needs, its request
// schema, whether it streams, where the HTTP+JSON binding routes it, and its 0.3 and gRPC names.
// The specs import nothing from the runtime; handlers (src/operations) import them, and the
// bindings, the scope check, the card's scope text and the openapi.yaml agreement test read them.
import type { z } from 'zod';
import type { Scope } from '../scopes.ts';

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

interface SpecBase<Request> {
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

/** An operation that answers with one JSON value. */
export interface UnarySpec<Request = unknown> extends SpecBase<Request> {
  streaming: false;
}

/** An operation that answers with an SSE stream of StreamResponse events. */
export interface StreamSpec<Request = unknown> extends SpecBase<Request> {
  streaming: true;
}

export type OperationSpec = UnarySpec<unknown> | StreamSpec<unknown>;

export function unarySpec<Request>(spec: Omit<UnarySpec<Request>, 'streaming'>): UnarySpec<Request> {
  return { ...spec, streaming: false };
}

export function streamSpec<Request>(spec: Omit<StreamSpec<Request>, 'streaming'>): StreamSpec<Request> {
  return { ...spec, streaming: true };
}
