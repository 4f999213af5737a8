// Every byte a backend sends a worker goes through here: a response's body is re-wrapped so
// that it can never grow past the agent's backendLimits while it is read. An answer that is not
// a stream is bounded in bytes (a declared Content-Length over the bound is refused before any
// byte is read) and in time; an SSE stream is bounded per event, in all, and by its longest
// silence. Past a bound the connection is cut and the reader gets a BackendLimitError naming
// the setting, so a hostile or broken backend costs a worker at most the bound, never the
// process. Counted after decompression: what is bounded is what the worker holds.
import type { ReadableStreamReadResult } from 'node:stream/web';
import { DEFAULT_BACKEND_LIMITS } from '../src/config/schema.ts';
import type { AdapterEnvironment, BackendLimits } from './types.ts';

/** The environment of an adapter built outside a configured gateway (tests, tools). */
export const DEFAULT_ADAPTER_ENVIRONMENT: AdapterEnvironment = { backendLimits: DEFAULT_BACKEND_LIMITS };

/** A backend sent more, or took longer, than a bound allows. Not worth retrying: the backend would do it again. */
export class BackendLimitError extends Error {
  override readonly name = 'BackendLimitError';

  constructor(
    /** The setting that decided it, e.g. `backendLimits.maxEventBytes`. */
    readonly limit: `backendLimits.${keyof BackendLimits}`,
    message: string,
  ) {
    super(message);
  }
}

export const isBackendLimitError = (error: unknown): error is BackendLimitError => error instanceof BackendLimitError;

const MIB = 1024 * 1024;
const bytes = (count: number): string => (count >= MIB && count % MIB === 0 ? `${count / MIB} MiB` : `${count} bytes`);

function backendOf(response: Response): string {
  try {
    return new URL(response.url).origin;
  } catch {
    return 'the backend';
  }
}

/**
 * A request-init key marking a request whose answer the client reads as an event stream, and
 * under which the caller hears of every chunk of the body as it arrives (eventStreamInit).
 * - The OpenAI client parses a streamed request's answer as SSE whatever its Content-Type says:
 *   a backend answering `application/json` with a body that never ends a line made it re-scan
 *   all it held for each chunk (CPU quadratic in the body, seconds per megabyte). Such an answer
 *   is framed and bounded as a stream (maxEventBytes, maxStreamBytes, streamIdleTimeoutMs).
 * - An adapter that watches a stream for silence must count bytes, not parsed events, or one
 *   huge event read slowly looks like silence and hides the bound that should cut it
 *   (backendLimits.maxEventBytes).
 * Clients pass request-init options through to fetch untouched.
 */
const EVENT_STREAM_READ = Symbol('a2a-gateway.eventStreamRead');

/** Request-init options (e.g. the OpenAI client's per-request fetchOptions) for an answer read as an event stream, calling `listener` with each body chunk's size as it arrives. */
export function eventStreamInit(listener: (byteLength: number) => void): Omit<RequestInit, 'method' | 'headers' | 'signal' | 'body'> {
  return Object.assign({}, { [EVENT_STREAM_READ]: listener }) as Omit<RequestInit, 'method' | 'headers' | 'signal' | 'body'>;
}

function eventStreamListenerOf(init: RequestInit | undefined): Meter | undefined {
  const listener = (init as { [EVENT_STREAM_READ]?: unknown } | undefined)?.[EVENT_STREAM_READ];
  return typeof listener === 'function' ? (chunk) => (listener as (byteLength: number) => void)(chunk.byteLength) : undefined;
}

const isEventStream = (response: Response): boolean => (response.headers.get('content-type') ?? '').toLowerCase().startsWith('text/event-stream');

type Meter = (chunk: Uint8Array) => void;

/** Counts a body's bytes in all. */
function totalMeter(max: number, exceeded: () => BackendLimitError): Meter {
  let total = 0;
  return (chunk) => {
    total += chunk.byteLength;
    if (total > max) throw exceeded();
  };
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * Counts the bytes of the SSE event being received and hands a stream's bytes on in whole
 * events only: an event ends at a blank line, whichever of the three line endings the backend
 * uses (LF, CRLF, CR), and a CRLF split across two chunks is one line ending. The bytes of an
 * event still arriving are held here (at most `max`), so the client's parser sees each event
 * once, whole, and parses it in one linear pass; and an event past the bound is cut before the
 * client has seen, buffered or parsed any of it (SDK line decoders re-scan their buffer for each
 * chunk of a long line, which costs time quadratic in the line's length).
 */
class EventFramer {
  private eventBytes = 0;
  private lineBytes = 0;
  private afterCR = false;
  /** The last blank line ended with a CR: an LF right after it belongs to that line ending. */
  private blankAtCR = false;
  /** The bytes of the event still arriving (pieces of the chunks it came in). */
  private held: Uint8Array[] = [];
  private heldBytes = 0;
  /** Set once an event passed the bound: the stream fails when it is read next. */
  failure: BackendLimitError | undefined;

  constructor(
    private readonly max: number,
    private readonly exceeded: () => BackendLimitError,
  ) {}

  /** The chunk's bytes up to its last complete event (with what was held before them), or undefined: nothing complete yet. */
  take(chunk: Uint8Array): Uint8Array | undefined {
    // Line endings are found with a native search (a view, not a copy), so a long line costs a
    // scan, not a step of this loop per byte.
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const length = bytes.byteLength;
    let boundary = -1;
    let nextLF = -2;
    let nextCR = -2;
    let index = 0;
    while (index < length) {
      if (this.afterCR) {
        this.afterCR = false;
        if (bytes[index] === LF) {
          if (this.blankAtCR) boundary = index + 1;
          this.blankAtCR = false;
          index += 1;
          continue;
        }
      }
      this.blankAtCR = false;
      if (nextLF !== -1 && nextLF < index) nextLF = bytes.indexOf(LF, index);
      if (nextCR !== -1 && nextCR < index) nextCR = bytes.indexOf(CR, index);
      const end = nextLF === -1 ? (nextCR === -1 ? length : nextCR) : nextCR === -1 ? nextLF : Math.min(nextLF, nextCR);
      const run = end - index;
      this.lineBytes += run;
      this.eventBytes += run;
      // Counted as the event's content arrives: a line ending alone never takes it past the bound.
      if (run > 0 && this.eventBytes > this.max) {
        // The events completed before it in this chunk are still handed on; the stream fails at the next read.
        this.failure = this.exceeded();
        if (boundary < 0) throw this.failure;
        const complete = this.completed(chunk, boundary);
        this.held = [];
        this.heldBytes = 0;
        return complete;
      }
      if (end === length) break;
      const byte = bytes[end] as number;
      if (this.lineBytes === 0) {
        this.eventBytes = 0;
        boundary = end + 1;
        this.blankAtCR = byte === CR;
      } else {
        this.eventBytes += 1;
      }
      this.lineBytes = 0;
      this.afterCR = byte === CR;
      index = end + 1;
    }
    if (boundary < 0) {
      this.hold(chunk);
      return undefined;
    }
    const complete = this.completed(chunk, boundary);
    this.held = [];
    this.heldBytes = 0;
    if (boundary < chunk.byteLength) this.hold(chunk.subarray(boundary));
    return complete;
  }

  /** What is held when the stream ends (its last event, without the blank line that would end it). */
  flush(): Uint8Array | undefined {
    if (this.heldBytes === 0) return undefined;
    const rest = concat(this.held, this.heldBytes);
    this.held = [];
    this.heldBytes = 0;
    return rest;
  }

  private completed(chunk: Uint8Array, boundary: number): Uint8Array {
    return this.heldBytes === 0 ? chunk.subarray(0, boundary) : concat([...this.held, chunk.subarray(0, boundary)], this.heldBytes + boundary);
  }

  private hold(piece: Uint8Array): void {
    this.held.push(piece);
    this.heldBytes += piece.byteLength;
  }
}

function concat(pieces: readonly Uint8Array[], length: number): Uint8Array {
  const joined = new Uint8Array(length);
  let offset = 0;
  for (const piece of pieces) {
    joined.set(piece, offset);
    offset += piece.byteLength;
  }
  return joined;
}

interface Bounds {
  meters: Meter[];
  /** A stream's events: handed on whole (and each bounded), see EventFramer. */
  framer?: EventFramer;
  /** Longest wait for the next chunk while the reader waits for it. */
  idle?: { ms: number; error: () => BackendLimitError };
  /** The whole body must have arrived within this. */
  deadline?: { ms: number; error: () => BackendLimitError };
}

/** `source`, read through `bounds`: past one, the source is cancelled (the connection closed) and the reader gets the error. */
function boundedStream(source: ReadableStream<Uint8Array>, bounds: Bounds): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  let settled = false;
  let idleTimer: NodeJS.Timeout | undefined;
  let deadlineTimer: NodeJS.Timeout | undefined;
  let fail: (error: unknown) => void = () => undefined;
  const clearTimers = (): void => {
    clearTimeout(idleTimer);
    clearTimeout(deadlineTimer);
  };
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        fail = (error) => {
          if (settled) return;
          settled = true;
          clearTimers();
          controller.error(error);
          reader.cancel(error).catch(() => undefined);
        };
        if (bounds.deadline !== undefined) {
          const { ms, error } = bounds.deadline;
          deadlineTimer = setTimeout(() => fail(error()), ms);
          deadlineTimer.unref();
        }
      },
      async pull(controller) {
        // Reads until there is something to hand on: a pull that enqueues nothing is not called again.
        for (;;) {
          if (bounds.framer?.failure !== undefined) {
            fail(bounds.framer.failure);
            return;
          }
          if (bounds.idle !== undefined) {
            const { ms, error } = bounds.idle;
            idleTimer = setTimeout(() => fail(error()), ms);
            idleTimer.unref();
          }
          let result: ReadableStreamReadResult<Uint8Array>;
          try {
            result = await reader.read();
          } catch (error) {
            fail(error);
            return;
          } finally {
            clearTimeout(idleTimer);
          }
          if (settled) return;
          if (result.done) {
            settled = true;
            clearTimers();
            const rest = bounds.framer?.flush();
            if (rest !== undefined) controller.enqueue(rest);
            controller.close();
            return;
          }
          let forward: Uint8Array | undefined = result.value;
          try {
            for (const meter of bounds.meters) meter(result.value);
            if (bounds.framer !== undefined) forward = bounds.framer.take(result.value);
          } catch (error) {
            fail(error);
            return;
          }
          if (forward !== undefined) {
            controller.enqueue(forward);
            return;
          }
        }
      },
      cancel(reason) {
        settled = true;
        clearTimers();
        return reader.cancel(reason);
      },
    },
    // Nothing is read ahead of the reader: a chunk is pulled from the backend only when asked for.
    { highWaterMark: 0 },
  );
}

/**
 * `response` with its body bounded by `limits`: as an event stream when it says it is one or the
 * request was marked as read as one (`streamRead`, whose meter hears each chunk), else as one
 * answer. Throws at once (and closes the connection) when an answer that is not a stream
 * declares a Content-Length over maxResponseBytes.
 */
export function boundResponse(response: Response, limits: BackendLimits, streamRead?: Meter): Response {
  if (response.body === null) return response;
  const backend = backendOf(response);
  let bounds: Bounds;
  if (isEventStream(response) || streamRead !== undefined) {
    bounds = {
      framer: new EventFramer(
        limits.maxEventBytes,
        () => new BackendLimitError('backendLimits.maxEventBytes', `${backend} sent a stream event larger than backendLimits.maxEventBytes (${bytes(limits.maxEventBytes)}); the stream was cut.`),
      ),
      meters: [
        totalMeter(limits.maxStreamBytes, () => new BackendLimitError('backendLimits.maxStreamBytes', `${backend} sent a stream larger than backendLimits.maxStreamBytes (${bytes(limits.maxStreamBytes)}) in all; the stream was cut.`)),
      ],
      idle: {
        ms: limits.streamIdleTimeoutMs,
        error: () => new BackendLimitError('backendLimits.streamIdleTimeoutMs', `${backend} sent nothing on its stream for backendLimits.streamIdleTimeoutMs (${limits.streamIdleTimeoutMs} ms); the stream was cut.`),
      },
    };
  } else {
    const tooLarge = (declared?: number): BackendLimitError =>
      new BackendLimitError(
        'backendLimits.maxResponseBytes',
        `${backend} sent an answer larger than backendLimits.maxResponseBytes (${bytes(limits.maxResponseBytes)})${declared === undefined ? '' : `: it declared ${declared} bytes`}; it was not read.`,
      );
    const declared = Number(response.headers.get('content-length') ?? Number.NaN);
    if (Number.isFinite(declared) && declared > limits.maxResponseBytes) {
      response.body.cancel().catch(() => undefined);
      throw tooLarge(declared);
    }
    bounds = {
      meters: [totalMeter(limits.maxResponseBytes, () => tooLarge())],
      deadline: {
        ms: limits.bodyTimeoutMs,
        error: () => new BackendLimitError('backendLimits.bodyTimeoutMs', `${backend} did not finish sending its answer within backendLimits.bodyTimeoutMs (${limits.bodyTimeoutMs} ms); it was cut.`),
      },
    };
  }
  if (streamRead !== undefined) bounds.meters.unshift(streamRead);
  const bounded = new Response(boundedStream(response.body, bounds), { status: response.status, statusText: response.statusText, headers: response.headers });
  // A new Response has no URL; clients (and error messages) read the backend's from it.
  Object.defineProperty(bounded, 'url', { value: response.url });
  Object.defineProperty(bounded, 'redirected', { value: response.redirected });
  return bounded;
}

/** A fetch whose every response is bounded by `limits` (boundResponse). */
export function boundedFetch(limits: BackendLimits, fetchImpl: typeof fetch = fetch): typeof fetch {
  return async (input, init) => boundResponse(await fetchImpl(input, init), limits, eventStreamListenerOf(init));
}
