// The admin API as the CLI calls it (`a2a-gateway admin …`): one JSON request at a time to
// /admin/v1 of a running gateway, with a bearer token or an API key, each bounded in time.
// Refusals come back as the gateway's error message, which says what to fix.

export interface AdminTarget {
  /** The gateway's base URL, e.g. http://127.0.0.1:8080 (its publicUrl). */
  baseUrl: string;
  /** A bearer token with a2a:admin, or an API key (X-API-Key) with it. */
  credentials: { token: string } | { apiKey: string } | undefined;
  /** Longest one request may take. */
  timeoutMs: number;
}

export interface AdminAnswer {
  status: number;
  etag: string | undefined;
  body: unknown;
}

export class AdminRequestError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'AdminRequestError';
  }
}

/** One call of the admin API; throws AdminRequestError with the gateway's message for a 4xx/5xx. */
export async function adminRequest(target: AdminTarget, method: string, path: string, options: { body?: unknown; headers?: Record<string, string> } = {}): Promise<AdminAnswer> {
  const credentials = target.credentials;
  const headers: Record<string, string> = {
    Accept: 'application/json',
    ...(credentials === undefined ? {} : 'token' in credentials ? { Authorization: `Bearer ${credentials.token}` } : { 'X-API-Key': credentials.apiKey }),
    ...(options.body === undefined ? {} : { 'Content-Type': 'application/json' }),
    ...(options.headers ?? {}),
  };
  let response: Response;
  try {
    response = await fetch(`${target.baseUrl.replace(/\/+$/, '')}/admin/v1${path}`, {
      method,
      headers,
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
      signal: AbortSignal.timeout(target.timeoutMs),
    });
  } catch (error) {
    throw new AdminRequestError(0, `cannot reach the gateway at ${target.baseUrl} (${(error as Error).message}); check --url or A2A_ADMIN_URL.`);
  }
  const text = await response.text();
  let body: unknown = undefined;
  if (text !== '') {
    try {
      body = JSON.parse(text) as unknown;
    } catch {
      body = text;
    }
  }
  if (response.status >= 400) {
    const message = (body as { error?: { message?: string } } | undefined)?.error?.message ?? text.slice(0, 500);
    throw new AdminRequestError(response.status, `${method} ${path}: ${response.status} ${message}`);
  }
  return { status: response.status, etag: response.headers.get('etag') ?? undefined, body };
}

/** Every item of a paged list (items, nextPageToken). */
export async function listAll(target: AdminTarget, path: string): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let pageToken: string | undefined;
  // Bounded: 1000 pages of 1000 is far beyond the control plane's own bound on resources.
  for (let page = 0; page < 1000; page++) {
    const query = `?pageSize=1000${pageToken === undefined ? '' : `&pageToken=${encodeURIComponent(pageToken)}`}`;
    const answer = (await adminRequest(target, 'GET', `${path}${query}`)).body as { items: Record<string, unknown>[]; nextPageToken?: string };
    items.push(...answer.items);
    pageToken = answer.nextPageToken;
    if (pageToken === undefined) break;
  }
  return items;
}
