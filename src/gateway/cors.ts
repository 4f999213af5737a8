// Which browser origins may call the authenticated endpoints (the bindings, /agents): every
// origin with the default ['*'] (the demo's), or only those listed. Cards and the JWKS are
// public documents and stay readable from anywhere.
import type { IncomingMessage, ServerResponse } from 'node:http';

export const CORS_REQUEST_HEADERS =
  'Content-Type, Authorization, A2A-Version, A2A-Extensions, X-A2A-Extensions, A2A-Task-Generation-After, A2A-Task-Generation-Wait-Ms, A2A-Task-Generation-Match, Last-Event-ID, Accept, Signature, Signature-Input, Content-Digest, traceparent, tracestate';
const EXPOSED = 'Retry-After, Allow, WWW-Authenticate, Accept-Signature, A2A-Extensions, X-A2A-Extensions';

/** Sets the CORS response headers for an allowed origin; true when this was a preflight it answered. */
export function applyCors(request: IncomingMessage, response: ServerResponse, allowed: readonly string[], methods: string): boolean {
  const origin = request.headers.origin;
  const any = allowed.includes('*');
  if (any) response.setHeader('Access-Control-Allow-Origin', '*');
  else {
    response.setHeader('Vary', 'Origin');
    if (origin !== undefined && allowed.includes(origin)) response.setHeader('Access-Control-Allow-Origin', origin);
  }
  const permitted = any || (origin !== undefined && allowed.includes(origin));
  if (permitted) response.setHeader('Access-Control-Expose-Headers', EXPOSED);
  if (request.method !== 'OPTIONS') return false;
  response.writeHead(204, permitted ? { 'Access-Control-Allow-Methods': methods, 'Access-Control-Allow-Headers': CORS_REQUEST_HEADERS, 'Access-Control-Max-Age': '600' } : {});
  response.end();
  return true;
}
