// Server-Sent Events written straight to Node's response. Hono's streamSSE goes through a web
// ReadableStream per connection; an idle subscriber must cost a few kilobytes, so the
// framing here is the one piece of SSE we write ourselves (and test in sse-writer.test.ts).
import type { ServerResponse } from 'node:http';

export interface SseWriter {
  /** Writes one event; `id` becomes the client's Last-Event-ID. */
  send(data: string, options?: { id?: string; event?: string }): void;
  /**
   * Writes one event whose data is the pieces in order, one line of JSON (a spliced answer,
   * src/protocol/json-fragment.ts: its bytes are written as they are, never joined into a string).
   */
  sendPieces(data: readonly Uint8Array[], options?: { id?: string; event?: string }): void;
  /** Ends the response; safe to call twice. */
  end(): void;
  /** True once the client went away or end() was called. */
  readonly closed: boolean;
}

/** The event and id lines of an SSE event, before its data. */
function eventHead(options: { id?: string; event?: string }): string {
  let head = '';
  if (options.event !== undefined) {
    if (/[\r\n]/.test(options.event)) throw new Error('SSE event names cannot contain line breaks');
    head += `event: ${options.event}\n`;
  }
  if (options.id !== undefined && options.id !== '') {
    if (/[\r\n]/.test(options.id)) throw new Error('SSE ids cannot contain line breaks');
    head += `id: ${options.id}\n`;
  }
  return head;
}

/** Frames one SSE event. `data` must be one line (JSON.stringify output is). */
export function frameSseEvent(data: string, options: { id?: string; event?: string } = {}): string {
  let frame = eventHead(options);
  for (const line of data.split(/\r\n|\r|\n/)) frame += `data: ${line}\n`;
  return `${frame}\n`;
}

export interface SseStreamOptions {
  /**
   * The last frame of a stream whose reader fell too far behind: it says why the stream ends
   * and how to resume (Last-Event-ID), so the client does not mistake it for the task's end.
   */
  slowReaderFrame?: () => { data: string; event?: string };
}

/** How long a stream's response head waits to go out with its first event. */
const HEAD_ALONE_AFTER_MS = 25;

/** How long a stream ended for a slow reader may take to flush its last bytes before its socket is closed. */
const SLOW_READER_FLUSH_MS = 5_000;

/**
 * The open SSE streams of one gateway: one heartbeat timer for all of them (every idle stream
 * gets a comment line), a bound on the bytes each may have waiting for its reader, and a way
 * to end them all with a reconnect hint at shutdown.
 */
export class SseStreams {
  private readonly streams = new Set<NodeSseWriter>();
  private timer: NodeJS.Timeout | undefined;

  /**
   * `maxBufferedBytes`: a stream whose unsent bytes exceed this when the next event is due
   * has a reader that does not keep up (or does not read at all); it is ended instead of
   * buffering without bound. One event is always accepted into a drained buffer, however large.
   */
  constructor(
    private readonly heartbeatMs: number,
    private readonly maxBufferedBytes = Number.POSITIVE_INFINITY,
  ) {}

  get size(): number {
    return this.streams.size;
  }

  /** Sends the SSE response head and returns a writer; `onClose` runs once when the stream ends. */
  open(response: ServerResponse, onClose: () => void, options: SseStreamOptions = {}): SseWriter {
    response.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache, no-transform',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    // The head goes out with the first event, in one write where flushing it first took two
    // (each a system call); a stream whose first event is slow to come gets its head alone.
    setTimeout(() => {
      if (!response.headersSent && !response.writableEnded) response.flushHeaders();
    }, HEAD_ALONE_AFTER_MS).unref();
    const stream = new NodeSseWriter(response, this.maxBufferedBytes, options.slowReaderFrame, (writer) => {
      this.streams.delete(writer);
      if (this.streams.size === 0 && this.timer !== undefined) {
        clearInterval(this.timer);
        this.timer = undefined;
      }
      onClose();
    });
    this.streams.add(stream);
    if (this.timer === undefined) {
      this.timer = setInterval(() => {
        const now = Date.now();
        for (const open of this.streams) open.heartbeatIfIdle(now, this.heartbeatMs);
      }, this.heartbeatMs);
      this.timer.unref();
    }
    return stream;
  }

  /**
   * Ends every stream with a reconnect hint (SSE `retry:`): at shutdown, clients reconnect to
   * another gateway with Last-Event-ID and miss nothing. Returns how many it ended.
   */
  endAll(retryMs: number): number {
    const open = [...this.streams];
    for (const stream of open) stream.endWithRetry(retryMs);
    return open.length;
  }
}

class NodeSseWriter implements SseWriter {
  closed = false;
  private finished = false;
  private lastWriteMs = Date.now();

  constructor(
    private readonly response: ServerResponse,
    private readonly maxBufferedBytes: number,
    private readonly slowReaderFrame: SseStreamOptions['slowReaderFrame'],
    private readonly onFinish: (writer: NodeSseWriter) => void,
  ) {
    response.once('close', () => this.finish());
  }

  send(data: string, options?: { id?: string; event?: string }): void {
    if (this.closed) return;
    if (this.response.writableLength > this.maxBufferedBytes) {
      this.endForSlowReader();
      return;
    }
    this.lastWriteMs = Date.now();
    this.response.write(frameSseEvent(data, options));
  }

  sendPieces(data: readonly Uint8Array[], options: { id?: string; event?: string } = {}): void {
    if (this.closed) return;
    if (this.response.writableLength > this.maxBufferedBytes) {
      this.endForSlowReader();
      return;
    }
    this.lastWriteMs = Date.now();
    // JSON text holds no raw line break (JSON.stringify escapes them): the pieces are one data line.
    const { response } = this;
    response.cork();
    response.write(`${eventHead(options)}data: `);
    for (const piece of data) response.write(piece);
    response.write('\n\n');
    response.uncork();
  }

  heartbeatIfIdle(now: number, intervalMs: number): void {
    // A stream with bytes still waiting is not idle for its reader: a comment would only pile up.
    if (this.closed || this.response.writableLength > 0 || now - this.lastWriteMs < intervalMs - 5) return;
    this.lastWriteMs = now;
    this.response.write(': keep-alive\n\n');
  }

  endWithRetry(retryMs: number): void {
    if (this.finished) return;
    this.response.write(`retry: ${Math.max(0, Math.floor(retryMs))}\n\n`);
    this.end();
  }

  end(): void {
    if (this.finished) return;
    this.response.end();
    this.finish();
  }

  /**
   * Ends a stream whose reader does not keep up: one short last frame saying how to resume, then
   * the end; if even that cannot be flushed soon, the socket is closed.
   */
  private endForSlowReader(): void {
    const last = this.slowReaderFrame?.();
    if (last !== undefined) this.response.write(frameSseEvent(last.data, last.event === undefined ? {} : { event: last.event }));
    const { response } = this;
    const socket = response.socket;
    this.end();
    if (socket !== null && !socket.destroyed && !response.writableFinished) {
      const timer = setTimeout(() => socket.destroy(), SLOW_READER_FLUSH_MS);
      timer.unref();
      // Flushed in time: the connection is the client's again (it may resume on it).
      response.once('finish', () => clearTimeout(timer));
      socket.once('close', () => clearTimeout(timer));
    }
  }

  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.closed = true;
    this.onFinish(this);
  }
}
