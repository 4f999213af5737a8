// Raw HTTP helpers for the error-path suites: what a hostile or careless client sends.
import { request as httpRequest } from 'node:http';
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
