// Node keeps at most `server.maxHeadersCount` header fields and silently drops the rest, so a
// credential or a Content-Digest past the limit would vanish unnoticed. The server keeps one
// field more than the limit (see gateway/server.ts); a request that shows that extra field had
// too many and gets 431 (RFC 6585).
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
