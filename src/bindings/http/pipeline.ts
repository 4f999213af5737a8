// The steps every A2A request takes before its operation runs, in this order, for both
// bindings, the agent list and the admin routes; gateway/admission.ts runs them as Hono
// middleware. Everything up to the credentials is judged from the headers alone, so a request
// that is too large, of the wrong type or version, or without valid credentials is refused
// before a byte of its body is buffered or parsed (DESIGN.md, "inputs are bounded before they
// cost anything"); the body is then read within its size and JSON bounds.
//
//   header count (431) → declared size (413) → content type (415)
//   → credentials (401 / 400, 429 past the per-address failure limit) → protocol version
//   → the owner's request and byte rates, from the declared size (429) → body: size (413) and JSON
//   structure (400) as it arrives → a signed body's digest
//
// Routing (404, 405) comes first (gateway/app.ts); what follows (parsing, the JSON-RPC
// envelope, params, scope, and the rate limit of a request not paid before its body) is the
// binding's and the operation's. JSON-RPC checks the version after reading the envelope
// instead, so that its error can name the request id.
import type { Principal } from '../../auth/principal.ts';
import type { JsonLimits } from '../../config/schema.ts';
import { negotiateVersion, type ProtocolVersion } from '../../protocol/version.ts';
import type { AuthenticationStep } from './authenticate.ts';
import { checkContentType, type BodyContentRule } from './content-type.ts';
import type { Exchange } from './exchange.ts';
import { noteRequest } from './request-notes.ts';
import { checkDeclaredLength } from './request-body.ts';

export interface RequestEdge extends AuthenticationStep {
  maxHeaderCount: number;
  maxBodyBytes: number;
  jsonLimits: JsonLimits;
}

/** What a route asks of the admission steps (gateway/admission.ts), set once its route is known. */
export interface Admission {
  edge: RequestEdge;
  content: BodyContentRule;
  /** False for routes that take no body (GET, DELETE): one sent anyway is discarded unread. */
  readsBody: boolean;
  /** Check A2A-Version here (HTTP+JSON); JSON-RPC checks it once the request id is known. */
  checkVersion: boolean;
  /**
   * Charges a declared body to its sender's byte rate, and the request's token of its request
   * rate, before a byte of the body is read (the caller known from the headers;
   * limits.ingressBytesPerSecond, limits.requestsPerSecond). True when it charged; a refusal throws.
   */
  chargeDeclaredBody?: ((principal: Principal, declaredBytes: number) => Promise<boolean>) | undefined;
}

/** What the admission steps found out about a request, for its handler. */
export interface AdmittedRequest {
  /** Undefined when authentication is off. */
  principal: Principal | undefined;
  /** The protocol version the request is served in (when the step ran; JSON-RPC negotiates later). */
  version: ProtocolVersion | undefined;
  /** The body text ('' when none was read). */
  body: string;
  /** True when the request (its token and its body's bytes) was paid before the body was read (chargeDeclaredBody). */
  paidBeforeBody: boolean;
}

/** The steps judged from the headers before credentials: declared size (413), then content type (415), when the route reads a body. */
export function checkBodyHead(exchange: Exchange, admission: Admission): void {
  if (!admission.readsBody) return;
  checkDeclaredLength(exchange.request, admission.edge.maxBodyBytes);
  checkContentType(exchange, admission.content);
}

/** Notes who called, for the access log and the request's span. */
export function noteCaller(exchange: Exchange, principal: Principal | undefined): void {
  if (principal !== undefined) noteRequest(exchange.response, { principal: principal.subject, tenant: principal.tenant });
}

/** The body's size as its Content-Length declares it (0 when none is declared: a chunked body is charged once read). */
export function declaredLength(exchange: Pick<Exchange, 'header'>): number {
  const length = Number(exchange.header('content-length') ?? '');
  return Number.isSafeInteger(length) && length > 0 ? length : 0;
}

/** The version step: the version a request is served in, or VersionNotSupportedError. */
export function versionOf(exchange: Pick<Exchange, 'header' | 'query'>): ProtocolVersion {
  return negotiateVersion(exchange.header('a2a-version'), exchange.query.get('A2A-Version') ?? undefined);
}
