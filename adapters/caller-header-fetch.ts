// Keeps the caller token (AdapterEnvironment.callerIdentity) on its audience's origin for an
// adapter whose HTTP client follows redirects itself (the openai client). The platform's fetch
// drops Authorization on a redirect to another origin but sends any other header on, so a call
// that carries the token follows its redirects here, by hand: a hop to another origin goes
// without the token (and without Authorization, as the platform would), and it stays off for
// the rest of the chain.

/** Redirects followed for one call at most. */
const MAX_REDIRECTS = 5;
const REDIRECT_STATUSES: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);

function urlOf(input: string | URL | Request): URL {
  return new URL(input instanceof Request ? input.url : input instanceof URL ? input.href : input);
}

/** `base`, except that `header` only ever reaches `origin` (the token's audience). */
export function pinCallerHeader(base: typeof fetch, header: string, origin: string): typeof fetch {
  const audience = new URL(origin).origin;
  return async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    if (!headers.has(header)) return base(input, init);
    let target = urlOf(input);
    let method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
    let body = init?.body;
    for (let hop = 0; ; hop++) {
      if (target.origin !== audience) headers.delete(header);
      const response = await base(target.href, { ...init, method, headers: new Headers(headers), body, redirect: 'manual' });
      const location = response.headers.get('location');
      if (!REDIRECT_STATUSES.has(response.status) || location === null || hop >= MAX_REDIRECTS) return response;
      const next = new URL(location, target);
      const keepsBody = response.status === 307 || response.status === 308;
      // A body that cannot be sent twice (a stream) cannot follow a 307/308: the caller gets the redirect.
      if (keepsBody && body !== undefined && body !== null && typeof body !== 'string') return response;
      await response.body?.cancel().catch(() => undefined);
      if (next.origin !== target.origin) {
        headers.delete(header);
        headers.delete('authorization');
      }
      // As fetch does: a 303 (and a 301/302 of a POST) is followed with a GET, without the body.
      if (response.status === 303 || (!keepsBody && method === 'POST')) {
        method = 'GET';
        body = undefined;
        headers.delete('content-type');
      }
      target = next;
    }
  };
}

/** Where a token may go: https, or plain http to a loopback address (a backend on the same host). */
export function isLoopbackOrHttps(url: URL): boolean {
  if (url.protocol === 'https:') return true;
  if (url.protocol !== 'http:') return false;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}
