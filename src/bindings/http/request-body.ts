// Reads one request body with its bounds enforced as the bytes arrive: size (maxBodyBytes)
// and, for JSON, structure (json-complexity.ts). A body past a bound stops being buffered at
// once; the binding answers and the exchange discards the rest (exchange.ts).
import type { IncomingMessage } from 'node:http';
import type { JsonLimits } from '../../config/schema.ts';
import type { A2AError } from '../../protocol/errors.ts';
import { LimitExceededError } from '../../limits/limit-refusal.ts';
import { describeJsonBound, JsonComplexityScanner, jsonBoundReason } from './json-complexity.ts';

/** The client closed the connection before its request arrived: nobody is left to answer. */
export class ClientGoneError extends Error {
  constructor() {
    super('the client closed the connection before sending its whole request');
    this.name = 'ClientGoneError';
  }
}

function tooLarge(maxBytes: number): A2AError {
  return new LimitExceededError('maxBodyBytes', 'INVALID_REQUEST', `the request body exceeds ${maxBytes} bytes (maxBodyBytes)`, {
    httpStatus: 413,
    metadata: { reason: 'BODY_TOO_LARGE', maxBytes: String(maxBytes) },
  });
}

/** A 413 when Content-Length already says the body is too large: judged before any byte is read. */
export function checkDeclaredLength(request: IncomingMessage, maxBytes: number): void {
  const declared = Number(request.headers['content-length'] ?? Number.NaN);
  if (declared > maxBytes) throw tooLarge(maxBytes);
}

export function readRequestBody(request: IncomingMessage, limits: { maxBytes: number; json?: JsonLimits }): Promise<string> {
  const { maxBytes } = limits;
  checkDeclaredLength(request, maxBytes);
  const scanner = limits.json === undefined ? undefined : new JsonComplexityScanner(limits.json);
  return new Promise((resolve, reject) => {
    let chunks: Buffer[] = [];
    let size = 0;
    // The request object lives as long as its connection (an SSE stream: hours); the
    // listeners and the body they hold must not.
    const detach = (): void => {
      request.off('data', onData);
      request.off('end', onEnd);
      request.off('error', onGone);
      request.off('close', onGone);
      chunks = [];
    };
    const fail = (error: Error): void => {
      detach();
      reject(error);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > maxBytes) {
        fail(tooLarge(maxBytes));
        return;
      }
      const exceeded = scanner?.push(chunk);
      if (exceeded !== undefined) {
        fail(
          new LimitExceededError('jsonLimits', 'INVALID_REQUEST', `the request body ${describeJsonBound(exceeded)}`, {
            metadata: { reason: jsonBoundReason(exceeded), limit: String(exceeded.limit) },
          }),
        );
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      const text = chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks).toString('utf8');
      detach();
      resolve(text);
    };
    const onGone = (): void => {
      if (request.complete && request.readableEnded) return;
      fail(new ClientGoneError());
    };
    request.on('data', onData);
    request.on('end', onEnd);
    request.on('error', onGone);
    request.on('close', onGone);
  });
}
