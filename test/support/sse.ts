// Reads an SSE response with eventsource-parser, the way an independent client would.
import { createParser, type EventSourceMessage } from 'eventsource-parser';

export interface SseEvent {
  id: string | undefined;
  event: string | undefined;
  data: string;
}

export interface SseReader {
  events: SseEvent[];
  comments: string[];
  /** Resolves when the server ended the stream. */
  done: Promise<void>;
  /** Resolves once at least n events arrived. */
  waitForEvents(n: number, timeoutMs?: number): Promise<SseEvent[]>;
  /** Drops the connection from the client side. */
  abort(): void;
}

export async function openSse(url: string, init: RequestInit & { headers?: Record<string, string> }): Promise<{ response: Response; reader: SseReader }> {
  const controller = new AbortController();
  const response = await fetch(url, { ...init, signal: controller.signal });
  const events: SseEvent[] = [];
  const comments: string[] = [];
  const waiters: { n: number; resolve: (e: SseEvent[]) => void }[] = [];
  const parser = createParser({
    onEvent(message: EventSourceMessage) {
      events.push({ id: message.id, event: message.event, data: message.data });
      for (const waiter of [...waiters]) {
        if (events.length >= waiter.n) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(events.slice());
        }
      }
    },
    onComment(comment: string) {
      comments.push(comment);
    },
  });
  const done = (async () => {
    if (response.body === null) return;
    const decoder = new TextDecoder();
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(chunk, { stream: true }));
    } catch (error) {
      if ((error as Error).name !== 'AbortError') throw error;
    }
  })();
  return {
    response,
    reader: {
      events,
      comments,
      done,
      waitForEvents(n, timeoutMs = 20_000) {
        if (events.length >= n) return Promise.resolve(events.slice());
        return new Promise((resolve, reject) => {
          const waiter = { n, resolve };
          waiters.push(waiter);
          setTimeout(() => reject(new Error(`only ${events.length} of ${n} SSE events after ${timeoutMs} ms`)), timeoutMs).unref();
        });
      },
      abort: () => controller.abort(),
    },
  };
}

/** A JSON-RPC SendStreamingMessage request for openSse (A2A 1.0, no credentials). */
export function sendStreamingRequest(message: unknown): RequestInit & { headers: Record<string, string> } {
  return {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Accept: 'text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendStreamingMessage', params: { message } }),
  };
}
