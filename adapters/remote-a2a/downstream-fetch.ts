// The fetch every call to the downstream agent goes through (card, SDK transports): it adds the
// outbound credentials, renews them once on a 401, bounds how long a call may take, and turns
// what went wrong into the two error kinds a turn acts on (errors.ts). The SDK sees a plain fetch.
// A call goes only to an origin the agent's credentials are pinned to (origin-pin.ts), and a
// redirect is followed here, by hand, only on the origin of the call it answers: the platform's
// fetch would follow it anywhere, and which headers it strips on the way is not ours to decide.
import { isBackendLimitError } from '../bounded-response.ts';
import { isLoopbackHttp, type OutboundCredentials } from './credentials/index.ts';
import { DownstreamAuthError, DownstreamOriginError, DownstreamUnavailableError, RETRYABLE_STATUSES } from './errors.ts';
import { MAX_REDIRECTS, refuseCrossOriginRedirect, type OriginPin } from './origin-pin.ts';
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
  /** The fetch underneath (default: the global one); the adapter's is bounded (bounded-response.ts). */
  fetch?: typeof fetch;
  /** Where calls may go (default: anywhere; redirects stay on their call's origin either way). */
  pin?: OriginPin;
  /** The caller token's header: sent only to the pinned origin (the token's audience), dropped on a hop anywhere else. */
  callerHeader?: string;
}

const REDIRECT_STATUSES: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);

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
  const { credentials, requestTimeoutMs, pin, callerHeader } = options;

  /**
   * One call and the redirects that answer it, each hop with credentials applied afresh for its
   * own URL (a signature covers the URL). A hop to another origin is refused before anything is
   * sent there.
   */
  async function call(url: string, init: RequestInit | undefined, method: string, headers: Headers, body: string | undefined, signal: AbortSignal): Promise<Response> {
    let target = new URL(url);
    let hopMethod = method;
    let hopBody = body;
    for (let hop = 0; ; hop++) {
      pin?.check(target, hop === 0 ? 'a call to the downstream agent' : 'a redirect of the downstream agent');
      if (credentials !== undefined && target.protocol !== 'https:' && !isLoopbackHttp(target)) {
        throw new DownstreamAuthError(`refusing to send credentials to ${target.origin} over plain http; use https (plain http is allowed to loopback addresses only)`);
      }
      const sent = new Headers(headers);
      if (hopBody === undefined) sent.delete('content-type');
      // The caller token's audience is the configured origin: another origin the operator allows
      // (a card's interface there) is a different backend, which must not be handed it.
      if (callerHeader !== undefined && target.origin !== (pin?.pinned ?? new URL(url).origin)) sent.delete(callerHeader);
      await credentials?.apply({ method: hopMethod, url: target.href, headers: sent, body: hopBody ?? '' });
      const response = await base(target.href, { ...init, method: hopMethod, headers: sent, body: hopBody, signal, redirect: 'manual' });
      const location = response.headers.get('location');
      if (!REDIRECT_STATUSES.has(response.status) || location === null) return response;
      await response.body?.cancel().catch(() => undefined);
      if (hop >= MAX_REDIRECTS) throw new DownstreamOriginError(`the downstream agent redirected a call more than ${MAX_REDIRECTS} times; the call was given up`);
      const next = new URL(location, target);
      refuseCrossOriginRedirect(target, next);
      // As fetch does: a 303 (and a 301/302 of a POST) is followed with a GET, without the body.
      if (response.status === 303 || ((response.status === 301 || response.status === 302) && hopMethod === 'POST')) {
        hopMethod = 'GET';
        hopBody = undefined;
      }
      target = next;
    }
  }

  return async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = input instanceof Request ? input.url : input instanceof URL ? input.href : input;
    const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
    const body = init?.body ?? undefined;
    if (body !== undefined && body !== null && typeof body !== 'string') throw new TypeError('The downstream fetch signs and sends text bodies only.');
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    const streaming = headers.get('accept')?.includes('text/event-stream') === true;
    for (let attempt = 0; ; attempt++) {
      // A plain call must finish in time; a stream only has to start in time (then it may run for the whole turn).
      const timeout = new AbortController();
      const timer = setTimeout(() => timeout.abort(new DOMException(`no answer within ${requestTimeoutMs} ms`, 'TimeoutError')), requestTimeoutMs);
      const signals = [timeout.signal, ...(init?.signal ? [init.signal] : [])];
      let response: Response;
      try {
        response = await call(url, init, method, headers, body ?? undefined, AbortSignal.any(signals));
        // A plain answer is read here, inside the time limit, and handed on whole.
        if (!streaming) {
          const content = await response.arrayBuffer();
          const nullBody = response.status === 204 || response.status === 205 || response.status === 304;
          response = new Response(nullBody ? null : content, { status: response.status, statusText: response.statusText, headers: response.headers });
        }
      } catch (error) {
        if (init?.signal?.aborted === true) throw error;
        // Already sorted: a bound the downstream broke or an origin it may not take us to (retrying
        // would meet them again), or what the credentials' own token endpoint said.
        if (isBackendLimitError(error) || error instanceof DownstreamOriginError || error instanceof DownstreamAuthError || error instanceof DownstreamUnavailableError) throw error;
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

