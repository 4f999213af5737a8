// Server-Sent Events written straight to Node's response. Hono's streamSSE goes through a web
// ReadableStream per connection; an idle subscriber must cost a few kilobytes, so the
// framing here is the one piece of SSE we write ourselves (and test in sse-writer.test.ts).
import type { ServerResponse } from 'node:http';

export interface SseWriter {
  /** Writes one event; `id` becomes the client's Last-Event-ID. */
  send(data: string, options?: { id?: string; event?: string }): void;
  /** Ends the response; safe to call twice. */
  end(): void;
  /** True once the client went away or end() was called. */
  readonly closed: boolean;
}

/** Frames one SSE event. `data` must be one line (JSON.stringify output is). */
export function frameSseEvent(data: string, options: { id?: string; event?: string } = {}): string {
  let frame = '';
  if (options.event !== undefined) {
    if (/[\r\n]/.test(options.event)) throw new Error('SSE event names cannot contain line breaks');
    frame += `event: ${options.event}\n`;
  }
  if (options.id !== undefined && options.id !== '') {
    if (/[\r\n]/.test(options.id)) throw new Error('SSE ids cannot contain line breaks');
    frame += `id: ${options.id}\n`;
  }
  for (const line of data.split(/\r\n|\r|\n/)) frame += `data: ${line}\n`;
  return `${frame}\n`;
}

/** One timer for all open streams of the process: every idle stream gets a comment line. */
class HeartbeatRegistry {
  private readonly streams = new Set<NodeSseWriter>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly intervalMs: number) {}

  add(stream: NodeSseWriter): void {
    this.streams.add(stream);
    if (this.timer === undefined) {
      this.timer = setInterval(() => {
        const now = Date.now();
        for (const s of this.streams) s.heartbeatIfIdle(now, this.intervalMs);
      }, this.intervalMs);
      this.timer.unref();
    }
  }

  delete(stream: NodeSseWriter): void {
    this.streams.delete(stream);
    if (this.streams.size === 0 && this.timer !== undefined) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}

const registries = new Map<number, HeartbeatRegistry>();

class NodeSseWriter implements SseWriter {
  closed = false;
  private finished = false;
  private lastWriteMs = Date.now();
  private readonly registry: HeartbeatRegistry;

  constructor(
    private readonly response: ServerResponse,
    heartbeatMs: number,
    private readonly onClose: () => void,
  ) {
    let registry = registries.get(heartbeatMs);
    if (registry === undefined) {
      registry = new HeartbeatRegistry(heartbeatMs);
      registries.set(heartbeatMs, registry);
    }
    this.registry = registry;
    registry.add(this);
    response.once('close', () => this.finish());
  }

  send(data: string, options?: { id?: string; event?: string }): void {
    if (this.closed) return;
    this.lastWriteMs = Date.now();
    this.response.write(frameSseEvent(data, options));
  }

  heartbeatIfIdle(now: number, intervalMs: number): void {
    if (this.closed || now - this.lastWriteMs < intervalMs - 5) return;
    this.lastWriteMs = now;
    this.response.write(': keep-alive\n\n');
  }

  end(): void {
    if (this.finished) return;
    this.response.end();
    this.finish();
  }

  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.closed = true;
    this.registry.delete(this);
    this.onClose();
  }
}

/** Sends the SSE response head and returns a writer; `onClose` runs once when the stream ends. */
export function openSse(response: ServerResponse, options: { heartbeatMs: number; onClose: () => void }): SseWriter {
  response.writeHead(200, {
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-cache, no-transform',
    Connection: 'keep-alive',
    'X-Accel-Buffering': 'no',
  });
  response.flushHeaders();
  return new NodeSseWriter(response, options.heartbeatMs, options.onClose);
}
