// Sends one webhook request and says what the answer means for delivery. The connection goes
// through undici with a connect hook (its `lookup`): the receiver's host is resolved and checked
// by the ReceiverPolicy when the socket is opened, and the socket connects to exactly the
// address that was checked, so DNS rebinding between registration and delivery cannot reach a
// blocked address. Redirects are never followed (undici.request does not follow them): a 3xx is
// a failure.
import type { LookupAddress, LookupOneOptions } from 'node:dns';
import { isIP } from 'node:net';
import { Agent, request } from 'undici';
import { BlockedReceiverError, type ReceiverPolicy } from './receiver-policy.ts';

export type SendOutcome =
  | { kind: 'delivered'; status: number }
  /** Worth trying again: a network error, a timeout, 5xx, 408 or 429 (with the receiver's Retry-After). */
  | { kind: 'retry'; status?: number; error: string; retryAfterMs?: number }
  /** 410 Gone: the receiver wants no more notifications for this config. */
  | { kind: 'gone'; status: number; error: string }
  /** Will not work by trying again: another 4xx, a redirect, a blocked address. */
  | { kind: 'failed'; status?: number; error: string; blocked?: boolean };

export interface WebhookRequest {
  url: URL;
  headers: Record<string, string>;
  body: string;
}

type LookupCallback = (error: Error | null, address: string | LookupAddress[], family?: number) => void;

/** Retry-After in seconds or as an HTTP date (RFC 9110 10.2.3), in ms from now. */
export function retryAfterMs(value: string | string[] | undefined, now: number = Date.now()): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined || text.trim() === '') return undefined;
  if (/^\d+$/.test(text.trim())) return Number(text.trim()) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** The first BlockedReceiverError in an error's cause chain (undici wraps connect errors). */
function blockedCause(error: unknown): BlockedReceiverError | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth += 1) {
    if (current instanceof BlockedReceiverError) return current;
    current = (current as Error & { cause?: unknown }).cause;
  }
  return undefined;
}

export class WebhookSender {
  private readonly agent: Agent;

  constructor(
    private readonly policy: ReceiverPolicy,
    private readonly timeoutMs: number,
  ) {
    const lookup = (hostname: string, options: Omit<LookupOneOptions, 'all'> & { all?: boolean }, callback: LookupCallback): void => {
      policy.resolveAllowed(hostname).then(
        (resolved) => (options.all === true ? callback(null, [resolved]) : callback(null, resolved.address, resolved.family)),
        (error: Error) => callback(error, ''),
      );
    };
    this.agent = new Agent({
      connect: { lookup: lookup as never, timeout: timeoutMs },
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      // A few idle connections per receiver keep a busy chain from reconnecting per event.
      keepAliveTimeout: 10_000,
    });
  }

  async send(delivery: WebhookRequest): Promise<SendOutcome> {
    try {
      // An IP literal is connected to without any lookup: judge it here. A host name is judged
      // only in the connect hook, on the address the socket then connects to.
      const host = delivery.url.hostname.replace(/^\[(.*)\]$/, '$1');
      if (isIP(host) !== 0) await this.policy.resolveAllowed(host);
      const response = await request(delivery.url, {
        method: 'POST',
        headers: delivery.headers,
        body: delivery.body,
        dispatcher: this.agent,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      await response.body.dump();
      const status = response.statusCode;
      if (status >= 200 && status < 300) return { kind: 'delivered', status };
      if (status === 410) return { kind: 'gone', status, error: 'the receiver answered 410 Gone' };
      if (status === 408 || status === 429 || status >= 500) {
        const wait = retryAfterMs(response.headers['retry-after']);
        return { kind: 'retry', status, error: `the receiver answered ${status}`, ...(wait === undefined ? {} : { retryAfterMs: wait }) };
      }
      if (status >= 300 && status < 400) {
        return { kind: 'failed', status, error: `the receiver answered ${status} (a redirect, to ${String(response.headers.location ?? '?')}); redirects are not followed: register the final URL` };
      }
      return { kind: 'failed', status, error: `the receiver answered ${status}` };
    } catch (error) {
      const blocked = blockedCause(error);
      if (blocked !== undefined) return { kind: 'failed', error: blocked.message, blocked: true };
      const name = (error as Error).name;
      const timedOut = name === 'TimeoutError' || name === 'AbortError' || /timeout/i.test(name);
      const code = (error as NodeJS.ErrnoException).code;
      return { kind: 'retry', error: timedOut ? `no answer within ${this.timeoutMs} ms` : `${(error as Error).message}${code ? ` (${code})` : ''}` };
    }
  }

  async close(): Promise<void> {
    await this.agent.close().catch(() => undefined);
  }
}
