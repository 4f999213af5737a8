// SendMessage throughput/latency via autocannon (blocking, or with returnImmediately).
// autocannon keeps `connections` requests in flight over keep-alive sockets; setupRequest builds
// a fresh body per request because every messageId must be unique.

import autocannon, { type AutocannonResult } from 'autocannon';
import { RPC_HEADERS, createIdSource, rpcBody, sendMessageParams } from './rpc.ts';

export interface SendMessageLoadOptions {
  url: string;
  connections: number;
  seconds: number;
  returnImmediately: boolean;
  text?: string;
}

export interface SendMessageLoadResult {
  requestsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  /** Responses that were HTTP 2xx and carried the expected JSON-RPC result. */
  ok: number;
  /** 2xx responses whose body was a JSON-RPC error or an unexpected result. */
  badBodies: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  durationSec: number;
}

export async function runSendMessageLoad(opts: SendMessageLoadOptions): Promise<SendMessageLoadResult> {
  const nextId = createIdSource();
  const text = opts.text ?? 'echo hello';
  let rpcId = 0;
  // Blocking calls must come back finished; returnImmediately ones only need to carry a task.
  // Substring checks keep the verification cost on the (shared) CPU negligible.
  const verifyBody = opts.returnImmediately
    ? (body: string): boolean => body.includes('"result"') && body.includes('"id"') && !body.includes('"error"')
    : (body: string): boolean => body.includes('"result"') && body.includes('TASK_STATE_COMPLETED');

  const result = await new Promise<AutocannonResult>((resolve, reject) => {
    autocannon(
      {
        url: opts.url,
        connections: opts.connections,
        duration: opts.seconds,
        timeout: 30,
        method: 'POST',
        headers: { ...RPC_HEADERS },
        verifyBody,
        requests: [
          {
            method: 'POST',
            setupRequest: (req) => ({
              ...req,
              body: rpcBody(++rpcId, 'SendMessage', sendMessageParams(nextId(), { text, returnImmediately: opts.returnImmediately })),
            }),
          },
        ],
      },
      (err, res) => (err ? reject(err) : resolve(res)),
    );
  });

  const ok = Math.max(0, result['2xx'] - result.mismatches);
  return {
    requestsPerSec: result.duration > 0 ? ok / result.duration : Number.NaN,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    ok,
    badBodies: result.mismatches,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    durationSec: result.duration,
  };
}
