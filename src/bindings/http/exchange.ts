// One HTTP request/response as the A2A bindings see it, directly over Node's http objects.
// The bindings are the gateway's hot path (every call, every open stream): going through a
// web Request/Response per call cost ~13% of a busy gateway's CPU and most of an idle SSE
// subscriber's memory, so they skip that layer: they run as Hono middleware (gateway/app.ts)
// but read and write Node's objects and hand Hono a response that says it was already sent.
//
// The body is read only when a binding asks for it, after the request's headers were judged
// (see pipeline.ts). A refusal sent while the body is still arriving lingers: the answer is
// written, the rest of the body is read and discarded (up to a bound), and only then is the
// connection closed, so the client reads the answer instead of a reset.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { JsonLimits } from '../../config/schema.ts';
import { answerBytes, serializeAnswer } from '../../protocol/json-fragment.ts';
import { ClientGoneError, readRequestBody } from './request-body.ts';

export interface Exchange {
  readonly method: string;
  /** The request target, path and query, in the canonical form the gateway's listener gave it (gateway/request-path.ts). */
  readonly target: string;
  /** Path without the query string, canonical: escapes that must stay escaped are kept. */
  readonly path: string;
  readonly query: URLSearchParams;
  readonly request: IncomingMessage;
  readonly response: ServerResponse;
  /** One header's value; repeated fields joined with ', ' (RFC 9110 §5.3). */
  header(name: string): string | undefined;
  /** Every occurrence of a header field, in order (Node keeps only the first Authorization). */
  headerValues(name: string): string[];
  /** True when the request announces a body (a Content-Length above 0, or Transfer-Encoding). */
  readonly hasBody: boolean;
  /**
   * The whole body as text. Throws a 413 A2AError past maxBytes and a 400 one past a JSON
   * bound (both before buffering more), and ClientGoneError when the client went away.
   */
  readBody(limits: { maxBytes: number; json?: JsonLimits }): Promise<string>;
  /**
   * Sends a JSON response (lingering first when the body is still arriving). `flood`: a refusal
   * of a flood's (an address past its unauthenticated limit), whose linger drains less (endAfterBody).
   */
  sendJson(status: number, body: unknown, headers?: Record<string, string>, options?: { flood?: boolean }): void;
}

export interface ExchangeOptions {
  /** Body bytes read and discarded after a refusal before the connection is closed. */
  drainBytes: number;
}

export function createExchange(request: IncomingMessage, response: ServerResponse, options: ExchangeOptions): Exchange {
  const raw = request.url ?? '/';
  const queryStart = raw.indexOf('?');
  const path = queryStart < 0 ? raw : raw.slice(0, queryStart);
  let query: URLSearchParams | undefined;
  const hasBody = announcesBody(request);
  let bodyRead = false;
  return {
    method: request.method ?? 'GET',
    target: raw,
    path,
    get query() {
      query ??= new URLSearchParams(queryStart < 0 ? '' : raw.slice(queryStart + 1));
      return query;
    },
    request,
    response,
    hasBody,
    header(name) {
      const value = request.headers[name.toLowerCase()];
      return Array.isArray(value) ? value.join(', ') : value;
    },
    headerValues(name) {
      return request.headersDistinct[name.toLowerCase()] ?? [];
    },
    async readBody(limits) {
      if (!hasBody) return '';
      if (request.headers.expect?.toLowerCase() === '100-continue') response.writeContinue();
      bodyRead = true;
      return readRequestBody(request, limits);
    },
    sendJson(status, body, headers = {}, sendOptions = {}) {
      const answer = serializeAnswer(body);
      const stillArriving = hasBody && !request.complete && !request.destroyed;
      // A client that asked to be told before sending its body (Expect: 100-continue) and was
      // not has nothing in flight: answer and close.
      const bodyWithheld = stillArriving && !bodyRead && request.headers.expect?.toLowerCase() === '100-continue';
      response.writeHead(status, {
        'Content-Type': 'application/json',
        'Content-Length': answerBytes(answer),
        // The rest of the body is not read as a request: the connection cannot be reused.
        ...(stillArriving ? { Connection: 'close' } : {}),
        ...headers,
      });
      if (typeof answer === 'string') {
        if (!stillArriving || bodyWithheld) {
          response.end(answer);
          return;
        }
        response.write(answer);
      } else {
        // Pieces of a spliced answer (json-fragment.ts), written as they are: no copy into one.
        response.cork();
        for (const piece of answer) response.write(piece);
        response.uncork();
        if (!stillArriving || bodyWithheld) {
          response.end();
          return;
        }
      }
      endAfterBody(request, response, sendOptions.flood === true ? floodDrainBytes(options.drainBytes) : options.drainBytes);
    },
  };
}

function announcesBody(request: IncomingMessage): boolean {
  if (request.headers['transfer-encoding'] !== undefined) return true;
  const length = request.headers['content-length'];
  return length !== undefined && length !== '0';
}

/**
 * How long a refused request's body may take to arrive before its connection is closed
 * anyway: a client uploading at any usable speed is done by then, and one trickling bytes to
 * hold a connection open (no credentials needed) lets go of it well before requestTimeoutMs.
 */
const REFUSED_BODY_LINGER_MS = 5_000;
/**
 * Up to this much is added to each linger at random: connections refused together (a flood
 * opened in one burst) then close, and reconnect, spread out instead of all at once.
 */
const LINGER_JITTER_MS = 2_500;

/**
 * What a flood's refusal drains: between half and all of `drainBytes`, at random. A flood's
 * connections trickle their bodies in step (the attacker writes to all of them at once), so an
 * exact bound cut them all at the same moment, and they all reconnected at once: a second of the
 * event loop's work arriving within a quarter of one, every few seconds (abuse row 1: 1,000
 * connections; the victim's p99 over 5× its quiet p99 in five of fourteen runs, at most 3.7× in
 * four with the cut spread). A client that is not part of a flood keeps the whole bound: its
 * refused body is drained and answered cleanly.
 */
function floodDrainBytes(drainBytes: number): number {
  return Math.floor(drainBytes * (0.5 + Math.random() / 2));
}

/**
 * Ends the response once the request body has arrived: read and discarded, up to `drainBytes`
 * and REFUSED_BODY_LINGER_MS (plus jitter). A client that sends more, or takes longer, is disconnected.
 */
function endAfterBody(request: IncomingMessage, response: ServerResponse, drainBytes: number): void {
  let drained = 0;
  const disconnect = (): void => {
    detach();
    request.socket?.destroy();
  };
  const timer = setTimeout(disconnect, REFUSED_BODY_LINGER_MS + Math.random() * LINGER_JITTER_MS);
  timer.unref();
  const detach = (): void => {
    clearTimeout(timer);
    request.off('data', onData);
    request.off('end', onEnd);
    request.off('close', detach);
  };
  const onData = (chunk: Buffer): void => {
    drained += chunk.length;
    if (drained > drainBytes) disconnect();
  };
  const onEnd = (): void => {
    detach();
    response.end();
  };
  request.on('data', onData);
  request.once('end', onEnd);
  request.once('close', detach);
  request.resume();
}

export { ClientGoneError };
