// A request with more header fields than maxHeaderCount gets 431 (RFC 6585), in the binding's
// error shape. Node is told to keep every field (server.maxHeadersCount 0, see gateway/server.ts):
// with a count of its own, Node 20 drops the fields past it silently (a credential or a
// Content-Digest could vanish unnoticed) and Node 24+ answers a bare 431 before the gateway sees
// the request.
import type { IncomingMessage } from 'node:http';
import { LimitExceededError } from '../../limits/limit-refusal.ts';

export function headerFieldCount(request: IncomingMessage): number {
  return request.rawHeaders.length / 2;
}

export function checkHeaderCount(request: IncomingMessage, maxHeaderCount: number): void {
  if (headerFieldCount(request) <= maxHeaderCount) return;
  throw new LimitExceededError('maxHeaderCount', 'INVALID_REQUEST', `The request has more than ${maxHeaderCount} header fields (maxHeaderCount); send fewer.`, {
    httpStatus: 431,
    metadata: { reason: 'TOO_MANY_HEADERS', maxHeaderCount: String(maxHeaderCount) },
  });
}
