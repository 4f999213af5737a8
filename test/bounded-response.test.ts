// What a backend may make a worker read (adapters/bounded-response.ts): a real HTTP server
// sends bodies and streams past each bound, and the reader gets a BackendLimitError naming the
// setting after reading no more than the bound, while the server sees its connection closed.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BackendLimitError, boundedFetch } from '../adapters/bounded-response.ts';
import type { BackendLimits } from '../adapters/types.ts';

const KIB = 1024;
const LIMITS: BackendLimits = { maxResponseBytes: 64 * KIB, maxEventBytes: 8 * KIB, maxStreamBytes: 256 * KIB, bodyTimeoutMs: 400, streamIdleTimeoutMs: 300 };

/** What each route sends; `closed` records the routes whose connection the client closed before the server ended it. */
const routes: Record<string, (request: IncomingMessage, response: ServerResponse) => void> = {};
const closedEarly = new Set<string>();
let server: Server;
let base: string;

function sse(response: ServerResponse): void {
  response.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8' });
}

/** Writes `chunk` over and over (respecting backpressure) until the client goes. */
function endless(response: ServerResponse, chunk: string): void {
  const write = (): void => {
    while (!response.destroyed && response.write(chunk));
    if (!response.destroyed) response.once('drain', write);
  };
  write();
}

beforeAll(async () => {
  server = createServer((request, response) => {
    const path = request.url ?? '/';
    response.on('close', () => {
      if (!response.writableFinished) closedEarly.add(path);
    });
    routes[path]?.(request, response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const read = (path: string): Promise<string> => boundedFetch(LIMITS)(`${base}${path}`).then((response) => response.text());

async function limitOf(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(BackendLimitError);
  return (error as BackendLimitError).limit;
}

describe('an answer that is not a stream', () => {
  it('within the bounds arrives whole, with its status, headers and URL', async () => {
    routes['/small'] = (_request, response) => response.writeHead(201, { 'Content-Type': 'application/json', 'X-Kept': 'yes' }).end(JSON.stringify({ ok: 'x'.repeat(60 * KIB) }));
    const response = await boundedFetch(LIMITS)(`${base}/small`);
    expect(response.status).toBe(201);
    expect(response.headers.get('x-kept')).toBe('yes');
    expect(response.url).toBe(`${base}/small`);
    expect((await response.json()) as unknown).toEqual({ ok: 'x'.repeat(60 * KIB) });
  });

  it('declaring a Content-Length over maxResponseBytes is refused before its body is read', async () => {
    routes['/declared'] = (_request, response) => {
      response.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': String(10 * 1024 * KIB) });
      endless(response, 'y'.repeat(16 * KIB));
    };
    const error = await boundedFetch(LIMITS)(`${base}/declared`).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(BackendLimitError);
    expect((error as BackendLimitError).limit).toBe('backendLimits.maxResponseBytes');
    expect((error as Error).message).toMatch(/backendLimits\.maxResponseBytes \(65536 bytes\): it declared 10485760 bytes/);
    await expect.poll(() => closedEarly.has('/declared')).toBe(true);
  });

  it('growing past maxResponseBytes without declaring it is cut once it passes the bound', async () => {
    routes['/chunked'] = (_request, response) => {
      response.writeHead(200, { 'Content-Type': 'application/json' });
      endless(response, 'z'.repeat(16 * KIB));
    };
    expect(await limitOf(read('/chunked'))).toBe('backendLimits.maxResponseBytes');
    await expect.poll(() => closedEarly.has('/chunked')).toBe(true);
  });

  it('that stops mid-body is cut at bodyTimeoutMs', async () => {
    routes['/hang'] = (_request, response) => {
      response.writeHead(200, { 'Content-Type': 'application/json' });
      response.write('{"partial":');
    };
    const started = Date.now();
    expect(await limitOf(read('/hang'))).toBe('backendLimits.bodyTimeoutMs');
    expect(Date.now() - started).toBeGreaterThanOrEqual(LIMITS.bodyTimeoutMs - 50);
    await expect.poll(() => closedEarly.has('/hang')).toBe(true);
  });
});

describe('an SSE stream', () => {
  it('of many events within the bounds arrives whole, whatever its line endings', async () => {
    const events = ['data: one\n\n', 'data: two\r\n\r\n', 'data: three\r\r', `data: ${'e'.repeat(7 * KIB)}\n\n`];
    routes['/events'] = (_request, response) => {
      sse(response);
      // Split mid-line-ending too: a CRLF across two chunks is one line end.
      const all = events.join('').repeat(20);
      for (let offset = 0; offset < all.length; offset += 1_001) response.write(all.slice(offset, offset + 1_001));
      response.end();
    };
    expect(await read('/events')).toBe(events.join('').repeat(20));
  });

  it('with one event over maxEventBytes is cut, even when the event arrives in small pieces', async () => {
    routes['/big-event'] = (_request, response) => {
      sse(response);
      response.write('data: fine\n\n');
      endless(response, 'data: more of the same event\n');
    };
    expect(await limitOf(read('/big-event'))).toBe('backendLimits.maxEventBytes');
    await expect.poll(() => closedEarly.has('/big-event')).toBe(true);
  });

  it('hands events on whole: every chunk the reader gets ends at an event boundary', async () => {
    const events = ['data: one\n\n', 'data: two\r\n\r\n', 'data: three\r\r', `data: ${'e'.repeat(7 * KIB)}\n\n`];
    routes['/pieces'] = (_request, response) => {
      sse(response);
      const all = events.join('').repeat(5);
      // Pieces of 97 bytes, each written on its own turn of the event loop so they arrive apart.
      let offset = 0;
      const next = (): void => {
        if (offset >= all.length) {
          response.end();
          return;
        }
        response.write(all.slice(offset, offset + 97));
        offset += 97;
        setImmediate(next);
      };
      next();
    };
    const response = await boundedFetch(LIMITS)(`${base}/pieces`);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const chunks: string[] = [];
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(Buffer.from(value).toString('utf8'));
    }
    expect(chunks.join('')).toBe(events.join('').repeat(5));
    for (const chunk of chunks) expect(chunk).toMatch(/(\n\n|\r\n\r\n|\r\r)$/);
  });

  it('takes an event of exactly maxEventBytes, whatever blank lines follow it', async () => {
    const exact = `data: ${'x'.repeat(8 * KIB - 6)}\r\r\r\n\ndata: next\n\n`;
    routes['/exact'] = (_request, response) => {
      sse(response);
      response.end(exact);
    };
    expect(await read('/exact')).toBe(exact);
  });

  it('with one event over maxEventBytes refuses it before the reader has seen any of it', async () => {
    routes['/huge-event'] = (_request, response) => {
      sse(response);
      response.write('data: fine\n\n');
      endless(response, 'h'.repeat(KIB));
    };
    const response = await boundedFetch(LIMITS)(`${base}/huge-event`);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    let seen = '';
    const error = await (async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return undefined;
        seen += Buffer.from(value).toString('utf8');
      }
    })().catch((caught: unknown) => caught);
    expect((error as BackendLimitError).limit).toBe('backendLimits.maxEventBytes');
    expect(seen).toBe('data: fine\n\n');
    await expect.poll(() => closedEarly.has('/huge-event')).toBe(true);
  });

  it('of endless small events is cut at maxStreamBytes', async () => {
    routes['/endless'] = (_request, response) => {
      sse(response);
      endless(response, `data: ${'s'.repeat(1_000)}\n\n`);
    };
    expect(await limitOf(read('/endless'))).toBe('backendLimits.maxStreamBytes');
    await expect.poll(() => closedEarly.has('/endless')).toBe(true);
  });

  it('silent for streamIdleTimeoutMs is cut, and a slow but steady one is not', async () => {
    routes['/silent'] = (_request, response) => {
      sse(response);
      response.write('data: hello\n\n');
    };
    expect(await limitOf(read('/silent'))).toBe('backendLimits.streamIdleTimeoutMs');
    routes['/steady'] = (_request, response) => {
      sse(response);
      let sent = 0;
      const timer = setInterval(() => {
        sent += 1;
        response.write(`data: ${sent}\n\n`);
        if (sent === 6) {
          clearInterval(timer);
          response.end();
        }
      }, 100);
    };
    // Six events 100 ms apart: 600 ms in all, twice the idle bound, none of it silence.
    expect(await read('/steady')).toBe([1, 2, 3, 4, 5, 6].map((n) => `data: ${n}\n\n`).join(''));
  });
});
