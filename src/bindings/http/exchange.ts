// One HTTP request/response as the A2A bindings see it, directly over Node's http objects.
// The bindings are the gateway's hot path (every call, every open stream): going through a
// web Request/Response per call cost ~13% of a busy gateway's CPU and most of an idle SSE
// subscriber's memory, so they skip that layer; Hono serves the card, health and the rest.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { A2AError } from '../../protocol/errors.ts';

export interface Exchange {
  readonly method: string;
  /** The request target as received: path and query, percent-encoding kept. */
  readonly target: string;
  /** Path without the query string, percent-encoding kept. */
  readonly path: string;
  readonly query: URLSearchParams;
  readonly response: ServerResponse;
  header(name: string): string | undefined;
  /** The whole body as text; throws a 413 A2AError past maxBytes (and closes the connection). */
  readBody(maxBytes: number): Promise<string>;
  /** Sends a JSON response. */
  sendJson(status: number, body: unknown, headers?: Record<string, string>): void;
}

export function createExchange(request: IncomingMessage, response: ServerResponse): Exchange {
  const raw = request.url ?? '/';
  const queryStart = raw.indexOf('?');
  const path = queryStart < 0 ? raw : raw.slice(0, queryStart);
  let query: URLSearchParams | undefined;
  return {
    method: request.method ?? 'GET',
    target: raw,
    path,
    get query() {
      query ??= new URLSearchParams(queryStart < 0 ? '' : raw.slice(queryStart + 1));
      return query;
    },
    response,
    header(name) {
      const value = request.headers[name.toLowerCase()];
      return Array.isArray(value) ? value.join(', ') : value;
    },
    readBody(maxBytes) {
      return readBody(request, response, maxBytes);
    },
    sendJson(status, body, headers = {}) {
      const text = JSON.stringify(body);
      response.writeHead(status, {
        'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(text),
        ...headers,
      });
      response.end(text);
    },
  };
}

function tooLarge(maxBytes: number): A2AError {
  return new A2AError('INVALID_REQUEST', `the request body exceeds ${maxBytes} bytes`, { httpStatus: 413 });
}

function readBody(request: IncomingMessage, response: ServerResponse, maxBytes: number): Promise<string> {
  const declared = Number(request.headers['content-length'] ?? Number.NaN);
  if (declared > maxBytes) {
    // The unread body makes the connection unusable for another request.
    response.setHeader('Connection', 'close');
    request.resume();
    return Promise.reject(tooLarge(maxBytes));
  }
  return new Promise((resolve, reject) => {
    let chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    // The request object lives as long as its connection (an SSE stream: hours); the
    // listeners and the body they hold must not.
    const detach = (): void => {
      request.off('data', onData);
      request.off('end', onEnd);
      request.off('error', onError);
    };
    const onData = (chunk: Buffer): void => {
      if (failed) return;
      size += chunk.length;
      if (size > maxBytes) {
        failed = true;
        response.setHeader('Connection', 'close');
        reject(tooLarge(maxBytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      detach();
      const text = chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks).toString('utf8');
      chunks = [];
      if (!failed) resolve(text);
    };
    const onError = (error: Error): void => {
      detach();
      if (!failed) reject(error);
    };
    request.on('data', onData);
    request.on('end', onEnd);
    request.on('error', onError);
  });
}
