// The fetch every call to the downstream agent goes through (card, SDK transports): it adds the
// outbound credentials, renews them once on a 401, bounds how long a call may take, and turns
// what went wrong into the two error kinds a turn acts on (errors.ts). The SDK sees a plain fetch.
import { isLoopbackHttp, type OutboundCredentials } from './credentials/index.ts';
import { DownstreamAuthError, DownstreamUnavailableError, RETRYABLE_STATUSES } from './errors.ts';
import { A2A, inClientSpan, markError } from '../../src/telemetry/spans.ts';
import { tracingEnabled } from '../../src/telemetry/tracing.ts';

/** At most this much of a refusal's body goes into an error message. */
const MAX_DETAIL = 200;

async function refusalDetail(response: Response): Promise<string> {
  const challenge = /error_description="([^"]*)"/.exec(response.headers.get('www-authenticate') ?? '')?.[1];
  let text = '';
  try {
    text = await response.text();
  } catch {
    // A body we cannot read adds nothing.
  }
  let message: string | undefined;
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    message = typeof body.error === 'string' ? body.error : typeof body.error?.message === 'string' ? body.error.message : typeof body.message === 'string' ? body.message : undefined;
  } catch {
    // Not JSON: the status says enough.
  }
  const detail = message ?? challenge;
  return detail === undefined ? '' : `: ${detail.slice(0, MAX_DETAIL)}`;
}

function causeOf(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (typeof cause?.code === 'string') return cause.code;
  if (typeof cause?.message === 'string') return cause.message;
  return (error as Error).message ?? String(error);
}

export interface DownstreamFetchOptions {
  credentials: OutboundCredentials | undefined;
  /** A call's answer (a stream: its headers) must arrive within this. */
  requestTimeoutMs: number;
  /** The fetch underneath (default: the global one). */
  fetch?: typeof fetch;
}

/** The A2A method a downstream call makes: a JSON-RPC body's method, or the HTTP+JSON route's last segment. */
function downstreamMethodOf(target: URL, body: string | undefined): string | undefined {
  const rpc = body === undefined ? undefined : /^\s*\{[^]{0,200}?"method"\s*:\s*"([A-Za-z/]{1,64})"/.exec(body)?.[1];
  return rpc ?? /:([a-z]+)$/i.exec(target.pathname)?.[1];
}

/**
 * Each downstream call is a CLIENT span (HTTP conventions, and the A2A method it makes) that
 * sends the trace context on, so the remote agent's own spans join the turn's trace. The turn's
 * trace arrives as the call's own traceparent header (the turn passes ctx.traceHeaders() to the
 * SDK as service parameters); a call without one (the card fetch) gets no span.
 */
export function createDownstreamFetch(options: DownstreamFetchOptions): typeof fetch {
  const untraced = createUntracedDownstreamFetch(options);
  return (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    if (!tracingEnabled()) return untraced(input, init);
    const url = new URL(input instanceof Request ? input.url : input instanceof URL ? input.href : input);
    const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
    const a2aMethod = downstreamMethodOf(url, typeof init?.body === 'string' ? init.body : undefined);
    const attributes = { 'http.request.method': method, 'url.full': `${url.origin}${url.pathname}`, 'server.address': url.hostname, ...(a2aMethod === undefined ? {} : { [A2A.method]: a2aMethod }) };
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    return inClientSpan(a2aMethod ?? method, attributes, headers, async (span) => {
      if (span === undefined) return untraced(input, init);
      const response = await untraced(input, { ...init, headers });
      span.setAttribute('http.response.status_code', response.status);
      if (response.status >= 400) markError(span, new Error(`HTTP ${response.status}`), String(response.status));
      return response;
    });
  };
}

function createUntracedDownstreamFetch(options: DownstreamFetchOptions): typeof fetch {
  const base = options.fetch ?? fetch;
  const { credentials, requestTimeoutMs } = options;
  return async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = input instanceof Request ? input.url : input instanceof URL ? input.href : input;
    const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
    const body = init?.body ?? undefined;
    if (body !== undefined && body !== null && typeof body !== 'string') throw new TypeError('The downstream fetch signs and sends text bodies only.');
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    const target = new URL(url);
    if (credentials !== undefined && target.protocol !== 'https:' && !isLoopbackHttp(target)) {
      throw new DownstreamAuthError(`refusing to send credentials to ${target.origin} over plain http; use https (plain http is allowed to loopback addresses only)`);
    }
    const streaming = headers.get('accept')?.includes('text/event-stream') === true;
    for (let attempt = 0; ; attempt++) {
      const sent = new Headers(headers);
      await credentials?.apply({ method, url, headers: sent, body: body ?? '' });
      // A plain call must finish in time; a stream only has to start in time (then it may run for the whole turn).
      const timeout = new AbortController();
      const timer = setTimeout(() => timeout.abort(new DOMException(`no answer within ${requestTimeoutMs} ms`, 'TimeoutError')), requestTimeoutMs);
      const signals = [timeout.signal, ...(init?.signal ? [init.signal] : [])];
      let response: Response;
      try {
        response = await base(url, { ...init, method, headers: sent, signal: AbortSignal.any(signals) });
        // A plain answer is read here, inside the time limit, and handed on whole.
        if (!streaming) {
          const content = await response.arrayBuffer();
          const nullBody = response.status === 204 || response.status === 205 || response.status === 304;
          response = new Response(nullBody ? null : content, { status: response.status, statusText: response.statusText, headers: response.headers });
        }
      } catch (error) {
        if (init?.signal?.aborted === true) throw error;
        if (timeout.signal.aborted) throw new DownstreamUnavailableError(`the downstream agent did not answer within ${requestTimeoutMs} ms`, undefined, { cause: error });
        throw new DownstreamUnavailableError(`the downstream agent is unreachable (${causeOf(error)})`, undefined, { cause: error });
      } finally {
        clearTimeout(timer);
      }
      if (response.status === 401 && credentials !== undefined && attempt === 0 && (await credentials.renew())) {
        await response.body?.cancel().catch(() => undefined);
        continue;
      }
      if (response.status === 401 || response.status === 403) {
        throw new DownstreamAuthError(`the downstream agent refused our credentials (HTTP ${response.status}${await refusalDetail(response)})`);
      }
      if (RETRYABLE_STATUSES.has(response.status)) {
        await response.body?.cancel().catch(() => undefined);
        throw new DownstreamUnavailableError(`the downstream agent answered HTTP ${response.status}`, response.status);
      }
      return response;
    }
  };
}
