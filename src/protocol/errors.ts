// The small set of errors every operation can end in. Bindings map them once each:
// JSON-RPC in bindings/jsonrpc, HTTP+JSON in bindings/rest, gRPC in bindings/grpc (spec 5.4, 9.5, 10.6, 11.6).

export interface FieldViolation {
  field: string;
  description: string;
}

export type A2AErrorKind =
  | 'TASK_NOT_FOUND'
  | 'TASK_NOT_CANCELABLE'
  | 'PUSH_NOTIFICATION_NOT_SUPPORTED'
  | 'UNSUPPORTED_OPERATION'
  | 'CONTENT_TYPE_NOT_SUPPORTED'
  | 'INVALID_AGENT_RESPONSE'
  | 'EXTENDED_AGENT_CARD_NOT_CONFIGURED'
  | 'EXTENSION_SUPPORT_REQUIRED'
  | 'VERSION_NOT_SUPPORTED'
  | 'PARSE_ERROR'
  | 'INVALID_REQUEST'
  | 'METHOD_NOT_FOUND'
  | 'INVALID_PARAMS'
  | 'INTERNAL'
  | 'UNAVAILABLE'
  | 'UNAUTHENTICATED'
  | 'PERMISSION_DENIED'
  | 'RESOURCE_EXHAUSTED'
  | 'ALREADY_EXISTS'
  | 'ABORTED';

interface ErrorMapping {
  jsonRpcCode: number;
  httpStatus: number;
  grpcStatus: string;
  /** true for errors that are A2A-specific and carry a google.rpc.ErrorInfo */
  a2a: boolean;
  /**
   * Refusals of the HTTP request itself (credentials, limits, availability) keep their HTTP
   * status on JSON-RPC too, so HTTP-level clients and proxies (and the SDK's auth retry hook)
   * see them; the body is still a JSON-RPC error.
   */
  transport?: true;
}

export const ERROR_MAPPINGS: Record<A2AErrorKind, ErrorMapping> = {
  TASK_NOT_FOUND: { jsonRpcCode: -32001, httpStatus: 404, grpcStatus: 'NOT_FOUND', a2a: true },
  TASK_NOT_CANCELABLE: { jsonRpcCode: -32002, httpStatus: 400, grpcStatus: 'FAILED_PRECONDITION', a2a: true },
  PUSH_NOTIFICATION_NOT_SUPPORTED: { jsonRpcCode: -32003, httpStatus: 400, grpcStatus: 'FAILED_PRECONDITION', a2a: true },
  UNSUPPORTED_OPERATION: { jsonRpcCode: -32004, httpStatus: 400, grpcStatus: 'FAILED_PRECONDITION', a2a: true },
  CONTENT_TYPE_NOT_SUPPORTED: { jsonRpcCode: -32005, httpStatus: 400, grpcStatus: 'INVALID_ARGUMENT', a2a: true },
  INVALID_AGENT_RESPONSE: { jsonRpcCode: -32006, httpStatus: 500, grpcStatus: 'INTERNAL', a2a: true },
  EXTENDED_AGENT_CARD_NOT_CONFIGURED: { jsonRpcCode: -32007, httpStatus: 400, grpcStatus: 'FAILED_PRECONDITION', a2a: true },
  EXTENSION_SUPPORT_REQUIRED: { jsonRpcCode: -32008, httpStatus: 400, grpcStatus: 'FAILED_PRECONDITION', a2a: true },
  VERSION_NOT_SUPPORTED: { jsonRpcCode: -32009, httpStatus: 400, grpcStatus: 'FAILED_PRECONDITION', a2a: true },
  PARSE_ERROR: { jsonRpcCode: -32700, httpStatus: 400, grpcStatus: 'INVALID_ARGUMENT', a2a: false },
  INVALID_REQUEST: { jsonRpcCode: -32600, httpStatus: 400, grpcStatus: 'INVALID_ARGUMENT', a2a: false },
  METHOD_NOT_FOUND: { jsonRpcCode: -32601, httpStatus: 404, grpcStatus: 'UNIMPLEMENTED', a2a: false },
  INVALID_PARAMS: { jsonRpcCode: -32602, httpStatus: 400, grpcStatus: 'INVALID_ARGUMENT', a2a: false },
  INTERNAL: { jsonRpcCode: -32603, httpStatus: 500, grpcStatus: 'INTERNAL', a2a: false },
  UNAVAILABLE: { jsonRpcCode: -32603, httpStatus: 503, grpcStatus: 'UNAVAILABLE', a2a: false, transport: true },
  // The spec leaves these JSON-RPC codes to implementations (3.3.2); these mirror the HTTP status.
  UNAUTHENTICATED: { jsonRpcCode: -31401, httpStatus: 401, grpcStatus: 'UNAUTHENTICATED', a2a: false, transport: true },
  PERMISSION_DENIED: { jsonRpcCode: -31403, httpStatus: 403, grpcStatus: 'PERMISSION_DENIED', a2a: false, transport: true },
  RESOURCE_EXHAUSTED: { jsonRpcCode: -31429, httpStatus: 429, grpcStatus: 'RESOURCE_EXHAUSTED', a2a: false, transport: true },
  // What the request would create exists already with other content (a messageId re-sent with
  // another message): invalid params on JSON-RPC, 409 Conflict on HTTP+JSON.
  ALREADY_EXISTS: { jsonRpcCode: -32602, httpStatus: 409, grpcStatus: 'ALREADY_EXISTS', a2a: false },
  // A test-and-set the caller asked for failed (the task-generations extension: the task moved on):
  // read again and retry. The code mirrors the HTTP status, as for this gateway's other own codes.
  ABORTED: { jsonRpcCode: -31409, httpStatus: 409, grpcStatus: 'ABORTED', a2a: false },
};

export class A2AError extends Error {
  readonly kind: A2AErrorKind;
  readonly metadata: Record<string, string>;
  readonly violations: FieldViolation[];
  /** HTTP status override, for transport-level refusals such as 413 and 415. */
  readonly httpStatus: number | undefined;
  /** Seconds a client should wait before retrying, when the refusal is temporary. */
  readonly retryAfterSeconds: number | undefined;
  /** Further HTTP headers the refusal needs (WWW-Authenticate). */
  readonly extraHeaders: Record<string, string>;

  constructor(
    kind: A2AErrorKind,
    message: string,
    options: {
      metadata?: Record<string, string>;
      violations?: FieldViolation[];
      httpStatus?: number;
      retryAfterSeconds?: number;
      headers?: Record<string, string>;
      cause?: unknown;
    } = {},
  ) {
    // A refusal is an answer to its caller, not a fault to trace: nothing reads its stack, and
    // capturing one through the request's middleware cost about 15 µs per error, twice per
    // refused connection in a flood of them (abuse row 1). An internal error keeps its stack (logged).
    const stackTraceLimit = Error.stackTraceLimit;
    if (kind !== 'INTERNAL') Error.stackTraceLimit = 0;
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    Error.stackTraceLimit = stackTraceLimit;
    this.name = 'A2AError';
    this.kind = kind;
    this.metadata = options.metadata ?? {};
    this.violations = options.violations ?? [];
    this.httpStatus = options.httpStatus;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.extraHeaders = options.headers ?? {};
  }

  get mapping(): ErrorMapping {
    return ERROR_MAPPINGS[this.kind];
  }

  /** HTTP headers every binding sends with this error (a retry hint when it is temporary). */
  httpHeaders(): Record<string, string> {
    return this.retryAfterSeconds === undefined ? this.extraHeaders : { ...this.extraHeaders, 'Retry-After': String(this.retryAfterSeconds) };
  }

  /** ProtoJSON `Any` detail objects shared by every binding (gRPC encodes them in binary). */
  details(): Record<string, unknown>[] {
    const details: Record<string, unknown>[] = [];
    if (this.mapping.a2a || Object.keys(this.metadata).length > 0) {
      details.push({
        '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
        reason: this.kind,
        domain: 'a2a-protocol.org',
        metadata: { ...this.metadata, timestamp: new Date().toISOString() },
      });
    }
    if (this.violations.length > 0) {
      details.push({
        '@type': 'type.googleapis.com/google.rpc.BadRequest',
        fieldViolations: this.violations,
      });
    }
    if (this.retryAfterSeconds !== undefined) {
      details.push({
        '@type': 'type.googleapis.com/google.rpc.RetryInfo',
        retryDelay: `${this.retryAfterSeconds}s`,
      });
    }
    return details;
  }
}

export const taskNotFound = (taskId: string): A2AError =>
  new A2AError('TASK_NOT_FOUND', `Task ${taskId} was not found: it does not exist, has expired, or is not yours.`, {
    metadata: { taskId },
  });

export const invalidParams = (violations: FieldViolation[], message = 'Invalid parameters'): A2AError =>
  new A2AError('INVALID_PARAMS', message, { violations });
