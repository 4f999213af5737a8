// Raw HTTP helpers for the error-path suites: what a hostile or careless client sends.
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { expect } from 'vitest';
import { rpc, textMessage, waitFor, type TestGateway } from './harness.ts';

// Error bodies are read field by field in assertions; their shape is what is under test.
export type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export interface RawResponse {
  status: number;
  contentType: string | null;
  body: Json;
}

/**
 * POSTs a body with Transfer-Encoding: chunked (no Content-Length), on a connection of its own.
 * The gateway may answer before it has read everything and close the connection, which fetch
 * reports as a socket error; node:http still hands over the response.
 */
export function postChunked(url: string, payload: Uint8Array, headers: Record<string, string>): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', agent: false, headers: { ...headers, 'Transfer-Encoding': 'chunked' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode ?? 0, contentType: res.headers['content-type'] ?? null, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json });
        } catch (error) {
          reject(error as Error);
        }
      });
    });
    req.on('error', () => undefined); // EPIPE/ECONNRESET after an early answer; the response decides
    const write = (offset: number): void => {
      if (offset >= payload.length) {
        req.end();
        return;
      }
      if (req.destroyed) return;
      req.write(payload.subarray(offset, offset + 64 * 1024), () => write(offset + 64 * 1024));
    };
    write(0);
    setTimeout(() => reject(new Error('no response to the chunked upload')), 20_000).unref();
  });
}

export interface TaskRef {
  id: string;
  contextId: string;
}

/**
 * State for the error suites to protect: a completed task, one waiting for input and one of
 * tenant "acme". Then the worker stops and its stalled-check marker expires, so nothing in
 * Redis changes on its own and "changes nothing" can be proven key by key.
 */
export async function seedQuietFixtures(gw: TestGateway): Promise<{ completed: TaskRef; waitingForInput: TaskRef; acme: TaskRef }> {
  const send = async (params: Json, state: string): Promise<TaskRef> => {
    const task = ((await rpc(gw.jsonRpcUrl, 'SendMessage', params)).body.result as Json).task as Json;
    expect(task.status.state).toBe(state);
    return { id: task.id, contextId: task.contextId };
  };
  const completed = await send({ message: textMessage('hello') }, 'TASK_STATE_COMPLETED');
  const waitingForInput = await send({ message: textMessage('dialogue') }, 'TASK_STATE_INPUT_REQUIRED');
  const acme = await send({ tenant: 'acme', message: textMessage('hello from acme') }, 'TASK_STATE_COMPLETED');
  await gw.worker?.close();
  await waitFor(async () => ![...(await gw.snapshotKeys()).keys()].some((k) => k.endsWith(':stalled-check')), 10_000, 'stalled-check to expire');
  return { completed, waitingForInput, acme };
}

export interface RawExchange {
  status: number;
  headers: Record<string, string>;
  /** The body as text (a chunked one decoded). */
  text: string;
}

/** Decodes a chunked body; what cannot be decoded is returned as it came. */
function dechunk(raw: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  while (at < raw.length) {
    const lineEnd = raw.indexOf('\r\n', at);
    if (lineEnd < 0) return raw;
    const size = Number.parseInt(raw.subarray(at, lineEnd).toString('latin1'), 16);
    if (!Number.isFinite(size)) return raw;
    if (size === 0) break;
    parts.push(raw.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(parts);
}

/**
 * Sends one request exactly as written, request target included, over a socket of its own
 * (fetch and undici normalize the path, so they cannot send the spellings under test), and
 * reads the answer until the server closes the connection (Connection: close; the socket is not half-closed,
 * which Node's server may take for a client that went away).
 */
export function rawHttp(
  baseUrl: string,
  request: { method: string; target: string; headers?: Record<string, string>; body?: string },
): Promise<RawExchange> {
  const { hostname, port } = new URL(baseUrl);
  const body = request.body ?? '';
  const headers: Record<string, string> = {
    Host: `${hostname}:${port}`,
    Connection: 'close',
    ...(body === '' ? {} : { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(body)) }),
    ...request.headers,
  };
  const head = `${request.method} ${request.target} HTTP/1.1\r\n${Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')}\r\n`;
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no complete answer to ${request.method} ${request.target}`));
    }, 15_000);
    socket.on('connect', () => socket.write(Buffer.concat([Buffer.from(head, 'latin1'), Buffer.from(body)])));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => undefined); // a reset after the answer; what arrived decides
    socket.on('close', () => {
      clearTimeout(timer);
      const raw = Buffer.concat(chunks);
      const headEnd = raw.indexOf('\r\n\r\n');
      if (headEnd < 0) {
        reject(new Error(`no HTTP answer to ${request.method} ${request.target}: ${JSON.stringify(raw.toString('latin1').slice(0, 200))}`));
        return;
      }
      const [statusLine = '', ...fieldLines] = raw.subarray(0, headEnd).toString('latin1').split('\r\n');
      const fields: Record<string, string> = {};
      for (const line of fieldLines) {
        const colon = line.indexOf(':');
        if (colon > 0) fields[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const rest = raw.subarray(headEnd + 4);
      const decoded = fields['transfer-encoding']?.toLowerCase() === 'chunked' ? dechunk(rest) : rest;
      resolve({ status: Number(statusLine.split(' ')[1]), headers: fields, text: decoded.toString('utf8') });
    });
  });
}
