// A model server that streams more than the agent's bounds allow: the turn fails with a message
// naming the bound and the server is not asked again (retried, it would send as much again).
// Two bounds: backendLimits.maxEventBytes, cut while the stream is read (bounded-response.ts),
// and an output bound the store refuses (an emit that rejects with OutputLimitError), which
// stops the adapter reading the stream at once.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { APIConnectionError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BackendLimitError } from '../adapters/bounded-response.ts';
import { createOpenAIAdapter } from '../adapters/openai/index.ts';
import { backendLimitOf, decideRetry } from '../adapters/openai/retry-policy.ts';
import { resolveApiKey } from '../adapters/openai/api-key.ts';
import { parseOpenAIOptions } from '../adapters/openai/options.ts';
import { TestTurnContext } from '../adapters/testing/index.ts';
import type { ArtifactChunk } from '../adapters/types.ts';
import { DEFAULT_BACKEND_LIMITS } from '../src/config/schema.ts';
import { OutputLimitError } from '../src/limits/output-limits.ts';
import { startHostileModelServer as startHostile, type HostileModelServer as Hostile } from './support/hostile-model-server.ts';

const KIB = 1024;
describe('the retry policy and backend bounds', () => {
  const keys = resolveApiKey(parseOpenAIOptions({ baseURL: 'http://127.0.0.1:1/v1', model: 'm' }));
  const limits = { maxRetries: 3, maxRetryDelayMs: 1_000, retryBaseDelayMs: 10 };
  const bound = new BackendLimitError('backendLimits.maxEventBytes', 'the model server sent a stream event larger than backendLimits.maxEventBytes (64 KiB); the stream was cut.');

  it('does not retry a BackendLimitError, thrown as it is or wrapped by the client', () => {
    const wrapped = new APIConnectionError({ message: 'Connection error.', cause: bound });
    expect(backendLimitOf(bound)).toBe(bound);
    expect(backendLimitOf(wrapped)).toBe(bound);
    for (const error of [bound, wrapped]) {
      const decision = decideRetry(error, 1, limits, keys);
      expect(decision.retry).toBe(false);
      expect(decision.retry === false && decision.message).toMatch(/backendLimits\.maxEventBytes \(64 KiB\)/);
    }
  });

  it('still retries a plain broken stream', () => {
    expect(decideRetry(new Error('socket hang up'), 1, limits, keys).retry).toBe(true);
    expect(backendLimitOf(new Error('socket hang up'))).toBeUndefined();
  });
});

describe('a model server streaming past the bounds', () => {
  let hugeDeltas: Hostile;
  let manyDeltas: Hostile;
  let slowDelta: Hostile;
  let endlessDeltas: Hostile;

  beforeAll(async () => {
    // One delta of 256 KiB, over a 64 KiB maxEventBytes.
    hugeDeltas = await startHostile(256 * KIB, 4);
    // Deltas of 8 KiB, many more than the output bound lets the turn store.
    manyDeltas = await startHostile(8 * KIB, 10_000);
    // One delta of 256 KiB arriving 8 KiB every 40 ms: never silent, slower than the adapter's
    // streamIdleTimeoutMs below for the whole event.
    slowDelta = await startHostile(256 * KIB, 1, { bytes: 8 * KIB, everyMs: 40 });
    // Deltas of 8 KiB without end, as fast as the client reads them.
    endlessDeltas = await startHostile(8 * KIB, Infinity);
  });

  afterAll(async () => {
    await hugeDeltas?.close();
    await manyDeltas?.close();
    await slowDelta?.close();
    await endlessDeltas?.close();
  });

  it('fails the turn naming backendLimits.maxEventBytes, with one request only', async () => {
    const adapter = createOpenAIAdapter(
      { baseURL: hugeDeltas.baseURL, model: 'hostile', maxRetries: 3, retryBaseDelayMs: 10 },
      { backendLimits: { ...DEFAULT_BACKEND_LIMITS, maxEventBytes: 64 * KIB } },
    );
    const ctx = new TestTurnContext({ input: 'hello', adapterName: 'openai' });
    const outcome = await adapter.run(ctx);
    expect(outcome.state).toBe('failed');
    expect(JSON.stringify(outcome.message)).toMatch(/backendLimits\.maxEventBytes \(65536 bytes\)/);
    expect(hugeDeltas.requests).toBe(1);
    // Nothing of the oversized delta reached the artifact.
    expect(ctx.chunks.every((chunk) => JSON.stringify(chunk).length < 64 * KIB)).toBe(true);
  });

  it('cuts a huge delta that arrives slowly at backendLimits.maxEventBytes, not as a silent stream', async () => {
    const adapter = createOpenAIAdapter(
      // The whole event takes about 1.3 s; no 300 ms passes without bytes.
      { baseURL: slowDelta.baseURL, model: 'hostile', maxRetries: 3, retryBaseDelayMs: 10, streamIdleTimeoutMs: 300 },
      { backendLimits: { ...DEFAULT_BACKEND_LIMITS, maxEventBytes: 64 * KIB } },
    );
    const ctx = new TestTurnContext({ input: 'hello', adapterName: 'openai' });
    const outcome = await adapter.run(ctx);
    expect(outcome.state).toBe('failed');
    expect(JSON.stringify(outcome.message)).toMatch(/backendLimits\.maxEventBytes \(65536 bytes\)/);
    expect(JSON.stringify(outcome.message)).not.toMatch(/silent/);
    expect(slowDelta.requests).toBe(1);
  });

  it('stops reading the stream when the store refuses an output bound, and does not call again', async () => {
    const adapter = createOpenAIAdapter({ baseURL: manyDeltas.baseURL, model: 'hostile', maxRetries: 3, retryBaseDelayMs: 10 });
    const refusal = new OutputLimitError('limits.maxArtifactBytes', 64 * KIB, 72 * KIB, 'test-task');
    let stored = 0;
    const ctx = new TestTurnContext({ input: 'hello', adapterName: 'openai' });
    const emit = ctx.emitArtifact.bind(ctx);
    // Plays the store: chunks are accepted until 64 KiB, then refused as appendEvents would.
    ctx.emitArtifact = async (chunk: ArtifactChunk): Promise<void> => {
      stored += JSON.stringify(chunk.parts).length;
      if (stored > 64 * KIB) throw refusal;
      await emit(chunk);
    };
    await expect(adapter.run(ctx)).rejects.toBe(refusal);
    expect(manyDeltas.requests).toBe(1);
    // The server saw the client go long before it had written its 10,000 deltas.
    await expect.poll(() => manyDeltas.closedEarly).toBe(1);
    expect(manyDeltas.written[0]).toBeLessThan(10_000);
  });

  it('reads a stream no faster than its chunks are stored: a slow store holds the backend back, not the worker’s memory', async () => {
    const adapter = createOpenAIAdapter({ baseURL: endlessDeltas.baseURL, model: 'hostile', maxRetries: 0 });
    const stop = new AbortController();
    const ctx = new TestTurnContext({ input: 'hello', adapterName: 'openai', signal: stop.signal });
    const emit = ctx.emitArtifact.bind(ctx);
    let largest = 0;
    // Plays a store paced at about 10 chunks a second (the owner's output rate, a busy Redis).
    ctx.emitArtifact = async (chunk: ArtifactChunk): Promise<void> => {
      largest = Math.max(largest, JSON.stringify(chunk.parts).length);
      await new Promise((resolve) => setTimeout(resolve, 100));
      await emit(chunk);
    };
    const run = adapter.run(ctx).catch((error: unknown) => error);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    stop.abort(new Error('enough'));
    await run;
    // Unthrottled, the server writes deltas as fast as loopback carries them (tens of MB a second)
    // and the buffer holds them all. Held back, it gets no further than the writer's backlog, one
    // delta and the sockets' buffers.
    expect(endlessDeltas.written[0] as number).toBeLessThan(1_024);
    expect(largest).toBeLessThan(64 * KIB + 9 * KIB);
  });
});

describe('a model server answering a streamed request with an endless body that is not an event stream', () => {
  // What abuse row 13d sends: `application/json`, a line that never ends. The client parses a
  // streamed request's answer as SSE whatever the Content-Type; read as one answer, it re-scanned
  // everything it held for each chunk (seconds of CPU per megabyte) until bodyTimeoutMs.
  let server: Server;
  let baseURL = '';
  let requests = 0;
  let written = 0;
  const MIB = Buffer.alloc(1024 * KIB, 'b');

  beforeAll(async () => {
    server = createServer((request, response) => {
      requests += 1;
      request.resume();
      response.writeHead(200, { 'Content-Type': 'application/json' });
      response.write('{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"');
      const pour = (): void => {
        while (!response.destroyed && written < 256 * 1024 * KIB) {
          written += MIB.length;
          if (!response.write(MIB)) {
            response.once('drain', pour);
            return;
          }
        }
      };
      response.on('close', () => response.removeAllListeners('drain'));
      pour();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });

  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });

  it('is framed as a stream: cut at backendLimits.maxEventBytes, having read little more than the bound', async () => {
    const adapter = createOpenAIAdapter(
      { baseURL, model: 'hostile', maxRetries: 3, retryBaseDelayMs: 10 },
      // A deadline far off: only the event bound can end the read before it.
      { backendLimits: { ...DEFAULT_BACKEND_LIMITS, maxEventBytes: 64 * KIB, bodyTimeoutMs: 60_000 } },
    );
    const ctx = new TestTurnContext({ input: 'hello', adapterName: 'openai' });
    const outcome = await adapter.run(ctx);
    expect(outcome.state).toBe('failed');
    expect(JSON.stringify(outcome.message)).toMatch(/backendLimits\.maxEventBytes \(65536 bytes\)/);
    expect(requests).toBe(1);
    // Cut at the first chunk past 64 KiB: what the server got into the sockets' buffers, not
    // the 256 MiB it would pour.
    expect(written).toBeLessThan(32 * 1024 * KIB);
  });
});
