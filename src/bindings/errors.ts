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
