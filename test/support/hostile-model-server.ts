// An OpenAI-compatible chat-completions server that streams what no model should: deltas as
// large as asked, as many as asked (or without end), as fast as the client reads them. It
// counts requests and clients that went away before the stream ended.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HostileModelServer {
  baseURL: string;
  requests: number;
  /** Deltas written per request before the client went away. */
  written: number[];
  closedEarly: number;
  close(): Promise<void>;
}

/** Sends each delta's event in pieces of `bytes`, one every `everyMs`: a huge delta that arrives slowly, never silent. */
export interface Trickle {
  bytes: number;
  everyMs: number;
}

/** Streams deltas of `deltaBytes` characters, `deltas` of them (a finish_reason after the last; Infinity: endless). */
export async function startHostileModelServer(deltaBytes: number, deltas: number, trickle?: Trickle): Promise<HostileModelServer> {
  const state = { requests: 0, written: [] as number[], closedEarly: 0 };
  const server: Server = createServer((request: IncomingMessage, response: ServerResponse) => {
    request.resume();
    request.on('end', () => {
      const index = state.requests++;
      state.written[index] = 0;
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      let gone = false;
      response.on('close', () => {
        if (!response.writableFinished) {
          gone = true;
          state.closedEarly += 1;
        }
      });
      const delta = 'x'.repeat(deltaBytes);
      const chunk = (content: string | undefined, finish: string | null): string =>
        `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'hostile', choices: [{ index: 0, delta: content === undefined ? {} : { content }, finish_reason: finish }] })}\n\n`;
      let sent = 0;
      const next = (): void => {
        if (gone) return;
        if (sent === deltas) {
          response.end(`${chunk(undefined, 'stop')}data: [DONE]\n\n`);
          return;
        }
        sent += 1;
        state.written[index] = sent;
        if (trickle !== undefined) {
          const event = chunk(delta, null);
          const piece = (from: number): void => {
            if (gone) return;
            if (from >= event.length) return next();
            response.write(event.slice(from, from + trickle.bytes));
            setTimeout(() => piece(from + trickle.bytes), trickle.everyMs);
          };
          piece(0);
          return;
        }
        if (response.write(chunk(delta, null))) setImmediate(next);
        else response.once('drain', next);
      };
      next();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    get requests() {
      return state.requests;
    },
    written: state.written,
    get closedEarly() {
      return state.closedEarly;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
