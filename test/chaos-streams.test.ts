// The chaos run's stream watcher (chaos/streams.ts) is evidence for "replay is exact": a stream
// it stops following reads as events the gateway failed to send. An anchor stream stays open
// for a whole hour of faults and is dropped by every kill of the gateway serving it, so the
// watcher must follow it through any number of such drops, and still give up on a stream the
// gateway ends at once, over and over (an error loop).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { seededRandom } from '../chaos/random.ts';
import { StreamWatcher } from '../chaos/streams.ts';

type Handler = (connection: number, req: IncomingMessage, res: ServerResponse) => void;

let server: Server | undefined;

async function gatewayStub(handler: Handler): Promise<string> {
  let connections = 0;
  server = createServer((req, res) => {
    connections += 1;
    handler(connections, req, res);
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  server = undefined;
});

const sse = (res: ServerResponse): void => {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.flushHeaders();
};
const frame = (id: string, body: unknown): string => `id: ${id}\ndata: ${JSON.stringify(body)}\n\n`;

describe('the chaos stream watcher', () => {
  it('follows a stream its gateway drops more than fifty times to the terminal event', async () => {
    const drops = 80;
    const resumedFrom: (string | undefined)[] = [];
    const url = await gatewayStub((n, req, res) => {
      sse(res);
      if (n === 1) res.write(frame('1-0', { task: { id: 't', status: { state: 'TASK_STATE_INPUT_REQUIRED' } } }));
      else resumedFrom.push(req.headers['last-event-id'] as string | undefined);
      if (n <= drops) {
        // The gateway is killed while the stream is idle: the connection just dies.
        setTimeout(() => res.socket?.destroy(), 40);
        return;
      }
      res.end(frame('1-1', { statusUpdate: { taskId: 't', status: { state: 'TASK_STATE_COMPLETED' } } }));
    });
    const watcher = new StreamWatcher({ gateways: () => [url], random: seededRandom(1), productiveMs: 20, resumePauseMs: [0, 5] });
    const record = watcher.watch('t', 'anchor');
    await watcher.finish(30_000);

    expect(record.outcome).toBe('terminal');
    expect(record.connections).toBe(drops + 1);
    expect(record.resumes).toBe(drops);
    expect(new Set(resumedFrom)).toEqual(new Set(['1-0']));
    expect(record.events.map((e) => e.id)).toEqual(['1-1']);
  });

  it('gives up on a stream the gateway ends at once, connection after connection', async () => {
    const url = await gatewayStub((_n, _req, res) => {
      sse(res);
      res.end(`data: ${JSON.stringify({ error: { code: -32603, message: 'stream ended' } })}\n\n`);
    });
    const watcher = new StreamWatcher({ gateways: () => [url], random: seededRandom(2), maxIdleDrops: 5, productiveMs: 1_000, resumePauseMs: [0, 5] });
    const record = watcher.watch('t', 'anchor');
    await watcher.finish(30_000);

    expect(record.outcome).toBe('gave-up');
    expect(record.connections).toBe(5);
    expect(record.errorFrames).toHaveLength(5);
    expect(record.note).toMatch(/5 connections in a row were refused or ended within 1000 ms without an event/);
  });

  it('counts refused connections toward giving up, and a connection that brought an event resets the count', async () => {
    const url = await gatewayStub((n, _req, res) => {
      if (n === 4) {
        sse(res);
        res.end(frame('1-0', { task: { id: 't', status: { state: 'TASK_STATE_WORKING' } } }));
        return;
      }
      res.writeHead(503, { 'retry-after': '0' }).end('{"error":"unavailable"}');
    });
    const watcher = new StreamWatcher({ gateways: () => [url], random: seededRandom(3), maxIdleDrops: 5, productiveMs: 1_000, resumePauseMs: [0, 5] });
    const record = watcher.watch('t', 'anchor');
    await watcher.finish(60_000);

    // Three refusals, the snapshot (the count starts again), then five refusals in a row.
    expect(record.outcome).toBe('gave-up');
    expect(record.connections).toBe(9);
    expect(record.snapshotId).toBe('1-0');
  });
});
