// JSON-RPC request shapes shared by every load generator, so both servers receive byte-for-byte
// the same kind of traffic (only the messageId / id differ per request).

import { randomBytes } from 'node:crypto';
import { request, type Dispatcher } from 'undici';

export const RPC_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'application/json',
  accept: 'application/json',
  'a2a-version': '1.0',
};

export const SSE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'application/json',
  accept: 'text/event-stream',
  'a2a-version': '1.0',
};

/**
 * Unique message ids. The gateway deduplicates on messageId, so reusing one would turn the
 * benchmark into a cache-hit test; a random run prefix keeps ids unique across runs too.
 */
export function createIdSource(): () => string {
  const prefix = randomBytes(6).toString('hex');
  let n = 0;
  return () => `bench-${prefix}-${(n++).toString(36)}`;
}

export interface SendOptions {
  text: string;
  returnImmediately?: boolean;
}

export function sendMessageParams(messageId: string, opts: SendOptions): Record<string, unknown> {
  const params: Record<string, unknown> = {
    message: { messageId, role: 'ROLE_USER', parts: [{ text: opts.text }] },
  };
  if (opts.returnImmediately) params.configuration = { returnImmediately: true };
  return params;
}

export function rpcBody(id: number | string, method: string, params: Record<string, unknown>): string {
  return JSON.stringify({ jsonrpc: '2.0', id, method, params });
}

export interface RpcEnvelope {
  jsonrpc?: string;
  id?: unknown;
  result?: Record<string, unknown>;
  error?: { code?: number; message?: string };
}

/** One JSON-RPC call with a hard timeout; throws on transport or JSON-RPC errors. */
export async function callRpc(
  url: string,
  method: string,
  params: Record<string, unknown>,
  opts: { timeoutMs?: number; dispatcher?: Dispatcher } = {},
): Promise<Record<string, unknown>> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const res = await request(url, {
    method: 'POST',
    headers: RPC_HEADERS,
    body: rpcBody(Date.now(), method, params),
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    ...(opts.dispatcher ? { dispatcher: opts.dispatcher } : {}),
  });
  const text = await res.body.text();
  let envelope: RpcEnvelope;
  try {
    envelope = JSON.parse(text) as RpcEnvelope;
  } catch {
    throw new Error(`${method}: HTTP ${res.statusCode}, non-JSON body: ${text.slice(0, 200)}`);
  }
  if (envelope.error || !envelope.result) {
    throw new Error(`${method}: HTTP ${res.statusCode}, error ${JSON.stringify(envelope.error ?? envelope).slice(0, 300)}`);
  }
  return envelope.result;
}

/** The task inside a SendMessage result ({ task: {...} }); tolerates a bare Task too. */
export function taskOf(result: Record<string, unknown>): { id: string; status?: { state?: string } } {
  const candidate = (result.task ?? result) as { id?: unknown; status?: { state?: string } };
  if (typeof candidate.id !== 'string') throw new Error(`result has no task id: ${JSON.stringify(result).slice(0, 300)}`);
  return { id: candidate.id, ...(candidate.status ? { status: candidate.status } : {}) };
}
