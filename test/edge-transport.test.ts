// The gateway's HTTP transport against hostile and careless clients, over real sockets:
// oversized uploads get their 413 delivered (no resets), stalled bodies and idle connections
// are timed out while SSE streams are not, connections are capped, clients that give up are
// not logged as gateway errors, and failed authentications are limited per client address.
import { request as httpRequest, Agent } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agents } from '../src/agents/agents.ts';
import { configSchema } from '../src/config/schema.ts';
import { startGatewayRole, type GatewayHandle } from '../src/gateway/server.ts';
import type { LogFields, Logger } from '../src/logging/logger.ts';
import { Redis } from 'ioredis';
import { deletePrefix, REDIS_URL, ROOT, rpc, startTestGateway, textMessage, uniquePrefix, waitFor, type TestGateway } from './support/harness.ts';
import { createTestIssuer, type TestIssuer } from './support/identity.ts';
import { openSse } from './support/sse.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('oversized uploads get their 413, not a reset', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    // A gateway that drains a refused body of up to 8 MiB (refusedBodyDrainBytes; the default, 64
    // KiB, closes the connection instead, and a client still writing its upload sees the reset:
    // test/refusal-close.test.ts).
    gw = await startTestGateway({ name: 'edge-413', inProcessWorker: false, config: { refusedBodyDrainBytes: 8_388_608 } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  // Four times maxBodyBytes: before the fix, about half of such uploads ended in EPIPE/ECONNRESET.
  const payload = Buffer.alloc(4 * 1_048_576, 0x61);
  const headers = { 'Content-Type': 'application/json', 'A2A-Version': '1.0' };

  it('100 uploads of four times maxBodyBytes in a row with fetch: 100 answers of 413, 0 resets', async () => {
    let refused = 0;
    const failures: string[] = [];
    for (let i = 0; i < 100; i++) {
      const url = i % 2 === 0 ? gw.jsonRpcUrl : `${gw.restUrl}/message:send`;
      // Half with Content-Length, half streamed (chunked), which is judged only as it arrives.
      const body = i % 4 < 2 ? payload : new Blob([payload]).stream();
      try {
        const response = await fetch(url, { method: 'POST', headers, body, duplex: 'half' } as RequestInit);
        const text = await response.text();
        if (response.status === 413 && text.includes('BODY_TOO_LARGE')) refused += 1;
        else failures.push(`${response.status} ${text.slice(0, 100)}`);
      } catch (error) {
        failures.push(String((error as { cause?: { code?: string } }).cause?.code ?? error));
      }
    }
    expect(failures).toEqual([]);
    expect(refused).toBe(100);
  });

  it('100 uploads with http.request on a keep-alive agent: 100 answers of 413, 0 resets', async () => {
    const agent = new Agent({ keepAlive: true });
    let refused = 0;
    const failures: string[] = [];
    for (let i = 0; i < 100; i++) {
      await new Promise<void>((resolve) => {
        const chunked = i % 2 === 1;
        const req = httpRequest(
          gw.jsonRpcUrl,
          { method: 'POST', agent, headers: { ...headers, ...(chunked ? { 'Transfer-Encoding': 'chunked' } : { 'Content-Length': String(payload.length) }) } },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (chunk: Buffer) => chunks.push(chunk));
            res.on('end', () => {
              if (res.statusCode === 413 && Buffer.concat(chunks).toString().includes('BODY_TOO_LARGE')) refused += 1;
              else failures.push(String(res.statusCode));
              resolve();
            });
          },
        );
        req.on('error', (error: NodeJS.ErrnoException) => {
          failures.push(error.code ?? error.message);
          resolve();
        });
        req.end(payload);
      });
    }
    agent.destroy();
    expect(failures).toEqual([]);
    expect(refused).toBe(100);
  });
});

/** Opens a raw TCP connection and sends `text`; resolves with everything the server sent until it closed. */
function rawConnection(port: number, text: string, localAddress = '127.0.0.1'): { socket: Socket; closed: Promise<string> } {
  const socket = connect({ port, host: '127.0.0.1', localAddress });
  let received = '';
  socket.on('data', (chunk: Buffer) => {
    received += chunk.toString();
  });
  socket.on('error', () => undefined);
  socket.write(text);
  return { socket, closed: new Promise((resolve) => socket.once('close', () => resolve(received))) };
}

// Each test waits out a timeout on a connection of its own: they wait side by side.
describe.concurrent('timeouts: bodies and idle connections, never responses', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ name: 'edge-timeouts', config: { requestTimeoutMs: 1_500, headersTimeoutMs: 1_000, keepAliveTimeoutMs: 1_000 } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('a half-sent body that stalls is answered 408 and closed after requestTimeoutMs', async () => {
    const started = Date.now();
    const { closed } = rawConnection(
      gw.gateway.port,
      `POST /a2a/jsonrpc HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: 1000\r\n\r\n{"jsonrpc":"2.0",`,
    );
    const received = await closed;
    expect(received).toMatch(/^HTTP\/1\.1 408/);
    // Closed by the timeout, well before the 20 s a test would wait for a server without one.
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('headers that never finish are cut too', async () => {
    const { closed } = rawConnection(gw.gateway.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    expect(await closed).toMatch(/^HTTP\/1\.1 408|^$/);
  });

  it('an idle keep-alive connection is closed after keepAliveTimeoutMs', async () => {
    const { closed } = rawConnection(gw.gateway.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(await closed).toMatch(/^HTTP\/1\.1 200/);
  });

  it('an SSE stream outlives requestTimeoutMs and keepAliveTimeoutMs', async () => {
    const sent = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('long 300'), configuration: { returnImmediately: true } });
    const taskId = (sent.body.result as Json).task.id as string;
    const { reader } = await openSse(`${gw.restUrl}/tasks/${taskId}:subscribe`, { method: 'POST', headers: { 'A2A-Version': '1.0' } });
    await pause(4_000);
    const seen = reader.events.length;
    await reader.waitForEvents(seen + 3);
    // Still the same stream: no error frame, the task still running.
    expect(reader.events.every((event) => event.event === undefined)).toBe(true);
    reader.abort();
    await rpc(gw.jsonRpcUrl, 'CancelTask', { id: taskId });
  });
});

describe('connection caps', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ name: 'edge-caps', inProcessWorker: false, config: { maxConnections: 6, maxConnectionsPerAddress: 3 } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  const healthz = (localAddress: string): Promise<number> =>
    new Promise((resolve) => {
      const req = httpRequest(`${gw.url}/healthz`, { agent: false, localAddress }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', () => resolve(0));
      req.end();
    });

  it('one address past maxConnectionsPerAddress is refused while others are served', async () => {
    const held = [1, 2, 3].map(() => rawConnection(gw.gateway.port, '', '127.0.0.2'));
    await pause(200);
    expect(await healthz('127.0.0.2'), 'the fourth connection from 127.0.0.2').toBe(0);
    expect(await healthz('127.0.0.1'), 'another address').toBe(200);
    for (const { socket } of held) socket.destroy();
    await pause(200);
    expect(await healthz('127.0.0.2')).toBe(200);
  });

  it('past maxConnections new connections are closed, the open ones keep working', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const viaKeptConnection = (): Promise<number> =>
      new Promise((resolve) => {
        const req = httpRequest(`${gw.url}/healthz`, { agent }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', () => resolve(0));
        req.end();
      });
    expect(await viaKeptConnection()).toBe(200);
    const held = ['127.0.0.3', '127.0.0.4', '127.0.0.5', '127.0.0.6', '127.0.0.7'].map((address) => rawConnection(gw.gateway.port, '', address));
    await pause(200);
    expect(await healthz('127.0.0.8'), 'the seventh connection').toBe(0);
    expect(await viaKeptConnection(), 'a connection opened before the cap was reached').toBe(200);
    for (const { socket } of held) socket.destroy();
    agent.destroy();
  });
});

describe('a client that gives up is not a gateway error', () => {
  const records: { level: string; message: string; fields: LogFields | undefined }[] = [];
  const recording: Logger = {
    debug: (message, fields) => records.push({ level: 'debug', message, fields }),
    info: (message, fields) => records.push({ level: 'info', message, fields }),
    warn: (message, fields) => records.push({ level: 'warn', message, fields }),
    error: (message, fields) => records.push({ level: 'error', message, fields }),
  };
  const prefix = uniquePrefix('edge-abort');
  let gateway: GatewayHandle;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = join(tmpdir(), `a2a-gateway-test-${prefix}`);
    const config = configSchema.parse({ auth: { enabled: false }, cardSigning: false, redisUrl: REDIS_URL, keyPrefix: prefix, port: 0, dataDir, logLevel: 'debug' });
    gateway = await startGatewayRole(config, await Agents.load(config, ROOT), recording, { baseDir: ROOT });
  });
  afterAll(async () => {
    await gateway?.close();
    const redis = new Redis(REDIS_URL);
    await deletePrefix(redis, prefix);
    await redis.quit();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('a body cut off mid-upload is logged at debug level, without a stack, and nothing at error level', async () => {
    for (const path of ['/a2a/jsonrpc', '/a2a/rest/message:send']) {
      const { socket, closed } = rawConnection(
        gateway.port,
        `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: 5000\r\n\r\n{"jsonrpc":"2.0","id":1,`,
      );
      await pause(150);
      socket.destroy();
      await closed;
    }
    await waitFor(() => records.filter((r) => r.message.includes('went away')).length >= 2 || undefined, 5_000, 'two debug records');
    expect(records.filter((r) => r.level === 'error')).toEqual([]);
    const gone = records.filter((r) => r.message.includes('went away'));
    expect(gone.map((r) => r.level)).toEqual(['debug', 'debug']);
    expect(JSON.stringify(gone)).not.toContain('    at ');
  });
});

describe('failed authentications are limited per client address', () => {
  let gw: TestGateway;
  let issuer: TestIssuer;
  beforeAll(async () => {
    issuer = await createTestIssuer();
    gw = await startTestGateway({
      name: 'edge-unauth-limit',
      inProcessWorker: false,
      config: {
        auth: { enabled: true, issuers: [issuer.config] },
        limits: { requestsPerSecond: 0, maxActiveTasks: 0, unauthenticatedPerSecond: 0.2, unauthenticatedBurst: 3 },
      },
    });
  });
  afterAll(async () => {
    await gw?.close();
  });

  const listTasks = (authorization?: string) =>
    fetch(`${gw.restUrl}/tasks`, { headers: { 'A2A-Version': '1.0', ...(authorization === undefined ? {} : { Authorization: authorization }) } });

  it('past the burst, failures get 429 + Retry-After; valid credentials from the same address still pass', async () => {
    for (let i = 0; i < 3; i++) expect((await listTasks('Bearer not-a-token')).status).toBe(401);
    const limited = await listTasks();
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const body = (await limited.json()) as Json;
    expect(JSON.stringify(body.error.details)).toContain('UNAUTHENTICATED_RATE_LIMITED');
    // The bucket is in Redis, shared by every gateway on the prefix.
    const bucket = await gw.redis.hgetall(`${gw.prefix}:rate:address:127.0.0.1`);
    expect(Number(bucket.tokens)).toBeLessThan(1);
    expect((await listTasks(`Bearer ${await issuer.token()}`)).status).toBe(200);
    // JSON-RPC answers the limit in its own shape.
    const rpcLimited = await rpc(gw.jsonRpcUrl, 'ListTasks', {});
    expect(rpcLimited.status).toBe(429);
    expect(rpcLimited.body).toMatchObject({ error: { code: -31429 } });
  });
});
