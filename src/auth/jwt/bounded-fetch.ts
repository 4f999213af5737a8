// What the gateway fetches from a token issuer (its discovery document, its JWKS) is read within
// a byte and a time bound: an issuer endpoint that is slow, huge or hostile costs a gateway at
// most the bound, never a request's worth of waiting per token or an unbounded buffer. No
// redirect is followed (an issuer's metadata names its final URLs), and anything but 200 is a
// failure naming the status.

export interface FetchBounds {
  /** The whole exchange, body included. */
  timeoutMs: number;
  /** The most body bytes read; past it the connection is cut. */
  maxBytes: number;
}

/** The fetch function the gateway uses (tests may hand in their own). */
export type FetchFunction = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** A fetch of an issuer endpoint failed: unreachable, refused, too large, too slow, or not JSON. */
export class IssuerFetchError extends Error {
  override readonly name = 'IssuerFetchError';
}

/**
 * GETs `url` and reads its body within `bounds`; `signal` (e.g. jose's own timeout) also aborts it.
 * Returns the bytes read, with the status and headers, only for a 200 answer.
 */
export async function fetchBounded(url: string, bounds: FetchBounds, options: { signal?: AbortSignal; headers?: RequestInit['headers']; fetch?: FetchFunction } = {}): Promise<{ body: Uint8Array; headers: Headers }> {
  const timeout = AbortSignal.timeout(bounds.timeoutMs);
  const signal = options.signal === undefined ? timeout : AbortSignal.any([timeout, options.signal]);
  const fetchImpl = options.fetch ?? fetch;
  const describe = (error: unknown): IssuerFetchError => {
    if (timeout.aborted) return new IssuerFetchError(`${url} did not answer in full within ${bounds.timeoutMs} ms (auth.issuerFetchTimeoutMs)`, { cause: error });
    if (error instanceof IssuerFetchError) return error;
    if (options.signal?.aborted === true) return new IssuerFetchError(`${url} was not answered in time (${(options.signal.reason as Error | undefined)?.message ?? 'aborted'})`, { cause: error });
    return new IssuerFetchError(`${url} could not be fetched: ${(error as Error).message}`, { cause: error });
  };
  let response: Response;
  try {
    response = await fetchImpl(url, { method: 'GET', redirect: 'manual', signal, headers: options.headers ?? { accept: 'application/json' } });
  } catch (error) {
    throw describe(error);
  }
  try {
    if (response.status !== 200) {
      const where = response.status >= 300 && response.status < 400 ? ` (a redirect to ${response.headers.get('location') ?? 'nowhere'}; redirects are not followed)` : '';
      throw new IssuerFetchError(`${url} answered HTTP ${response.status}${where}, not 200`);
    }
    const declared = Number(response.headers.get('content-length') ?? Number.NaN);
    if (declared > bounds.maxBytes) throw new IssuerFetchError(`${url} declares ${declared} bytes, more than ${bounds.maxBytes} bytes (auth.issuerFetchMaxBytes)`);
    return { body: await readWithin(response, bounds.maxBytes, url), headers: response.headers };
  } catch (error) {
    // The rest of the body is not wanted: cut the connection rather than read it.
    await response.body?.cancel().catch(() => undefined);
    throw describe(error);
  }
}

async function readWithin(response: Response, maxBytes: number, url: string): Promise<Uint8Array> {
  if (response.body === null) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of response.body) {
    total += chunk.byteLength;
    if (total > maxBytes) throw new IssuerFetchError(`${url} sent more than ${maxBytes} bytes (auth.issuerFetchMaxBytes)`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** GETs `url` within `bounds` and parses it as a JSON object. */
export async function fetchJsonObject(url: string, bounds: FetchBounds, fetchImpl?: FetchFunction): Promise<Record<string, unknown>> {
  const { body } = await fetchBounded(url, bounds, fetchImpl === undefined ? {} : { fetch: fetchImpl });
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(body));
  } catch (error) {
    throw new IssuerFetchError(`${url} did not answer JSON: ${(error as Error).message}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new IssuerFetchError(`${url} did not answer a JSON object`);
  return parsed as Record<string, unknown>;
}

/**
 * A fetch for jose's remote JWKS (its customFetch option) that reads the answer within `bounds`
 * and hands jose a Response over the bytes read, so jose's own parsing never sees more.
 */
export function boundedFetchFor(bounds: FetchBounds, fetchImpl?: FetchFunction): FetchFunction {
  return async (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const { body, headers } = await fetchBounded(url, bounds, {
      ...(init?.signal === undefined || init.signal === null ? {} : { signal: init.signal }),
      ...(init?.headers === undefined ? {} : { headers: init.headers }),
      ...(fetchImpl === undefined ? {} : { fetch: fetchImpl }),
    });
    return new Response(body, { status: 200, headers: { 'content-type': headers.get('content-type') ?? 'application/json' } });
  };
}
