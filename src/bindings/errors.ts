import { A2AError } from '../protocol/errors.ts';
import { isRedisConnectionError } from '../redis/connection.ts';

/** Any thrown value as an A2AError: unknown failures become InternalError without leaking internals. */
export function toA2AError(error: unknown): A2AError {
  if (error instanceof A2AError) return error;
  // A lost Redis connection (past the outage grace period, see redis/connection.ts): tell
  // the client it is temporary. 503 + Retry-After on HTTP, -32603 with RetryInfo on JSON-RPC.
  if (isRedisConnectionError(error)) {
    return new A2AError(
      'UNAVAILABLE',
      'The task store (Redis) is unreachable right now; retry after the Retry-After delay. Re-sending a message with the same messageId never starts a second task.',
      { retryAfterSeconds: 1, cause: error },
    );
  }
  return new A2AError('INTERNAL', 'Internal error; the gateway logged the details.', { cause: error });
}

/** application/json, application/a2a+json and other +json types (spec 9.1, 11.1). */
export function isJsonContentType(header: string | undefined): boolean {
  if (header === undefined) return false;
  const type = header.split(';')[0]?.trim().toLowerCase() ?? '';
  return type === 'application/json' || /^application\/[a-z0-9.+-]*\+json$/.test(type);
}

/**
 * The shape a refusal is written in: a binding's (a JSON-RPC error object with the request's
 * id; a google.rpc.Status, or the 0.3 error body), or a plain error without details.
 */
export type ErrorShape = { binding: 'jsonrpc'; requestId: string | number | null } | { binding: 'http+json'; legacy: boolean } | { binding: 'plain' };

/**
 * A failure handed to the gateway's one error handler (gateway/error-response.ts) with what
 * it needs to answer in the right shape, when the step that failed knows more than the
 * request's surface does (the JSON-RPC id, the 0.3 route a request took). Only a thrown value
 * that is not an Error is wrapped in one (shaped() says which).
 */
export class ShapedError extends Error {
  constructor(
    readonly failure: unknown,
    readonly shape: ErrorShape,
  ) {
    super(String(failure));
    this.name = 'ShapedError';
  }
}

/** Shapes noted on the failures themselves: wrapping each would capture a second stack trace per refused request. */
const shapes = new WeakMap<Error, ErrorShape>();

/** `failure`, to be thrown, with the shape it is answered in. */
export function shaped(failure: unknown, shape: ErrorShape): Error {
  if (!(failure instanceof Error)) return new ShapedError(failure, shape);
  shapes.set(failure, shape);
  return failure;
}

/** The failure a thrown value stands for, and the shape noted for it (shaped()), if any. */
export function unshaped(thrown: unknown): { failure: unknown; shape: ErrorShape | undefined } {
  if (thrown instanceof ShapedError) return { failure: thrown.failure, shape: thrown.shape };
  return { failure: thrown, shape: thrown instanceof Error ? shapes.get(thrown) : undefined };
}
