// The gRPC binding (spec 10): the A2AService of a2a.proto, one handler per operation the
// registry maps to gRPC (./messages.ts). Each call takes the steps the HTTP bindings take, in
// the same order and with the same code: the agent it is for, the message size, credentials
// from the `authorization` metadata (bearer tokens; RFC 9421 partner signatures sign an HTTP
// request and do not apply), the protocol version (`a2a-version` 1.0), the JSON bounds, then
// the dispatcher (params, scope, tenant, agent access, extensions, rate limit) and the
// operation. Streams deliver the same events as SSE through ../task-stream.ts.
import type { sendUnaryData, ServerUnaryCall, ServerWritableStream, UntypedServiceImplementation } from '@grpc/grpc-js';
import { Metadata, status as GrpcStatus } from '@grpc/grpc-js';
import type { Principal } from '../../auth/principal.ts';
import type { JsonLimits } from '../../config/schema.ts';
import type { TaskFeed } from '../../events/task-feed.ts';
import { EXTENSIONS_HEADER, requestedExtensionsOf } from '../../extensions/activation.ts';
import type { ByteRates } from '../../limits/byte-rates.ts';
import type { RateLimiter } from '../../limits/rate-limiter.ts';
import type { StreamSlots } from '../../limits/stream-slots.ts';
import type { Logger } from '../../logging/logger.ts';
import { openStream, runUnary, type OperationDeps, type RequestContext } from '../../operations/dispatch.ts';
import type { OperationRegistry } from '../../operations/registry.ts';
import { A2AError } from '../../protocol/errors.ts';
import { LimitExceededError } from '../../limits/limit-refusal.ts';
import type { GatewayHandler } from '../../tasks/gateway-handler.ts';
import { observeGrpcCall } from '../../telemetry/grpc-call-observer.ts';
import type { TraceContext } from '../../telemetry/spans.ts';
import { toA2AError } from '../errors.ts';
import { authenticateCaller, type AuthenticationStep } from '../http/authenticate.ts';
import { describeJsonBound, JsonComplexityScanner, jsonBoundReason } from '../http/json-complexity.ts';
import { lastEventIdOf } from '../http/last-event-id.ts';
import { streamTaskEvents } from '../task-stream.ts';
import { negotiateVersion, PROTOCOL_VERSION, wrongVersionFor } from '../../protocol/version.ts';
import { endpointOf, UnknownAgentError, type GrpcAgents } from './agent-choice.ts';
import { startAccessLine, taskIdOf, type CallNotes } from './call-log.ts';
import { callHeaders, peerAddressOf, type CallHeaders } from './call-metadata.ts';
import type { GrpcStreams } from './grpc-streams.ts';
import { grpcServiceOf, type DecodedRequest, type GrpcMethod } from './messages.ts';
import { grpcStatus, grpcStatusOf } from './status.ts';

/** The agents (root and by name, ./agent-choice.ts) and what every call's steps use. */
export interface GrpcBindingOptions extends GrpcAgents {
  registry: OperationRegistry;
  service: GatewayHandler;
  rateLimiter: RateLimiter;
  /** Per-owner byte rates of request bodies, shared with the HTTP bindings. */
  byteRates?: ByteRates;
  /** Open streams per owner and in all on this process, shared with the HTTP bindings. */
  streamSlots?: StreamSlots;
  authentication: Pick<AuthenticationStep, 'authenticator' | 'unauthenticated'>;
  jsonLimits: JsonLimits;
  streams: GrpcStreams;
  logger: Logger;
  /** One info line per call when it ends, like the HTTP access log. */
  accessLog: boolean;
}

interface AdmittedCall {
  deps: OperationDeps;
  context: RequestContext;
  params: Record<string, unknown>;
}

function checkJsonBounds(params: Record<string, unknown>, limits: JsonLimits): void {
  const exceeded = new JsonComplexityScanner(limits).push(Buffer.from(JSON.stringify(params)));
  if (exceeded === undefined) return;
  throw new LimitExceededError('jsonLimits', 'INVALID_REQUEST', `the request ${describeJsonBound(exceeded)}`, { metadata: { reason: jsonBoundReason(exceeded), limit: String(exceeded.limit) } });
}

/** The steps before the operation; throws the refusal. */
async function admit(call: ServerUnaryCall<DecodedRequest, unknown> | ServerWritableStream<DecodedRequest, unknown>, method: GrpcMethod, options: GrpcBindingOptions, notes: CallNotes, trace: TraceContext): Promise<AdmittedCall> {
  const headers = callHeaders(call.metadata);
  const decoded = call.request;
  const params = 'message' in decoded ? method.requestJson(decoded.message) : {};
  notes.taskId = taskIdOf(params);
  const endpoint = endpointOf(headers, params, options);
  notes.agent = endpoint.agent.name;
  const { limits } = endpoint.agent.settings;
  if (decoded.bytes > limits.maxBodyBytes) {
    throw new LimitExceededError('maxBodyBytes', 'RESOURCE_EXHAUSTED', `The request message is ${decoded.bytes} bytes; agent "${endpoint.agent.name}" accepts at most ${limits.maxBodyBytes} (maxBodyBytes).`, {
      metadata: { reason: 'MESSAGE_TOO_LARGE', maxBytes: String(limits.maxBodyBytes) },
    });
  }
  const principal = await authenticate(call, headers, options);
  notes.principal = principal?.subject;
  notes.tenant = principal?.tenant;
  const version = negotiateVersion(headers.header('a2a-version'), undefined);
  if (version !== PROTOCOL_VERSION) throw wrongVersionFor(`The gRPC method ${method.operation.name}`, { header: headers.header('a2a-version'), query: undefined }, PROTOCOL_VERSION);
  if ('undecodable' in decoded) throw new A2AError('PARSE_ERROR', `The request is not a valid ${method.operation.grpc?.requestType ?? ''} message: ${decoded.undecodable}`);
  checkJsonBounds(params, options.jsonLimits);
  const context: RequestContext = {
    principal,
    trace,
    // The message's size on the wire: charged to the owner's ingress byte rate (limits.ingressBytesPerSecond).
    requestBytes: decoded.bytes,
    lastEventId: lastEventIdOf(headers),
    requestedExtensions: requestedExtensionsOf((name) => headers.header(name)),
    header: (name) => headers.header(name),
    announceExtensions: (uris) => {
      if (uris.length === 0) return;
      const metadata = new Metadata();
      metadata.set(EXTENSIONS_HEADER.toLowerCase(), uris.join(', '));
      call.sendMetadata(metadata);
    },
  };
  const deps: OperationDeps = { service: options.service, endpoint, rateLimiter: options.rateLimiter };
  if (options.streamSlots !== undefined) deps.streamSlots = options.streamSlots;
  if (options.byteRates !== undefined) deps.byteRates = options.byteRates;
  return { deps, context, params };
}

async function authenticate(call: { getPeer(): string }, headers: CallHeaders, options: GrpcBindingOptions): Promise<Principal | undefined> {
  if (options.authentication.authenticator.enabled && (headers.headerValues('signature').length > 0 || headers.headerValues('signature-input').length > 0)) {
    // A signature covers an HTTP request's method, target URI and body digest; a gRPC call has
    // none of them as the partner signed them, so it could not be checked honestly.
    const refused = new A2AError('UNAUTHENTICATED', 'gRPC calls do not accept HTTP message signatures (RFC 9421): send "authorization: Bearer <token>" metadata, or sign requests to the JSON-RPC or HTTP+JSON binding.', {
      metadata: { reason: 'SIGNATURES_NOT_ACCEPTED_ON_GRPC' },
    });
    // Counted like any failed authentication (limits.unauthenticatedPerSecond).
    throw await options.authentication.unauthenticated.refusalFor(peerAddressOf(call.getPeer()), refused);
  }
  const pending = await authenticateCaller({ method: 'POST', targetUri: '', ...headers }, () => peerAddressOf(call.getPeer()), options.authentication);
  return pending.complete('');
}

function refusal(error: unknown, options: GrpcBindingOptions, method: GrpcMethod): ReturnType<typeof grpcStatusOf> {
  if (error instanceof UnknownAgentError) return grpcStatus(GrpcStatus.NOT_FOUND, error.message);
  const a2a = toA2AError(error);
  if (a2a.kind === 'INTERNAL') options.logger.error('gRPC call failed', { method: method.path, error: String((error as Error).stack ?? error) });
  return grpcStatusOf(a2a);
}

/** The call's access line and (tracing on) SERVER span, both ended by the returned function with the call's status. */
function startCall(metadata: Metadata, method: GrpcMethod, notes: CallNotes, options: GrpcBindingOptions): ((code: number) => void) & { trace: TraceContext } {
  const line = startAccessLine(metadata, { path: method.path, operation: method.operation.name }, notes, options.accessLog ? options.logger : undefined);
  const headers = callHeaders(metadata);
  const observed = observeGrpcCall(method.path, method.operation.name, (name) => headers.header(name));
  return Object.assign(
    (code: number) => {
      line(code);
      observed.end(code, notes);
    },
    { trace: observed.trace },
  );
}

function unaryHandler(method: GrpcMethod, options: GrpcBindingOptions) {
  return (call: ServerUnaryCall<DecodedRequest, unknown>, callback: sendUnaryData<unknown>): void => {
    const notes: CallNotes = {};
    const log = startCall(call.metadata, method, notes, options);
    void (async () => {
      try {
        if (method.operation.streaming) throw new Error(`${method.operation.name} streams`);
        const { deps, context, params } = await admit(call, method, options, notes, log.trace);
        const result = await runUnary(method.operation, params, context, deps);
        callback(null, method.response(result));
        log(GrpcStatus.OK);
      } catch (error) {
        const status = refusal(error, options, method);
        callback(status);
        log(status.code ?? GrpcStatus.UNKNOWN);
      }
    })();
  };
}

function streamHandler(method: GrpcMethod, options: GrpcBindingOptions) {
  return (call: ServerWritableStream<DecodedRequest, unknown>): void => {
    const notes: CallNotes = {};
    const log = startCall(call.metadata, method, notes, options);
    void (async () => {
      try {
        if (!method.operation.streaming) throw new Error(`${method.operation.name} does not stream`);
        const { deps, context, params } = await admit(call, method, options, notes, log.trace);
        const plan = await openStream(method.operation, params, context, deps);
        if (call.cancelled) {
          plan.held?.close();
          plan.onStreamEnd?.();
          log(GrpcStatus.CANCELLED);
          return;
        }
        let feed: TaskFeed | undefined;
        const sink = options.streams.open(call, plan.taskId, (json) => method.response(json), (code) => {
          feed?.close();
          plan.onStreamEnd?.();
          log(code);
        });
        feed = streamTaskEvents({ service: options.service, sink, plan, frame: (json) => json, fail: (error) => sink.fail(toA2AError(error)) });
      } catch (error) {
        const status = refusal(error, options, method);
        call.emit('error', status);
        log(status.code ?? GrpcStatus.UNKNOWN);
      }
    })();
  };
}

/** The handlers of the A2AService, one per registry operation with a gRPC mapping, and the service definition they serve. */
export function createGrpcService(options: GrpcBindingOptions): { definition: ReturnType<typeof grpcServiceOf>['definition']; implementation: UntypedServiceImplementation } {
  const { definition, methods } = grpcServiceOf(options.registry);
  const implementation: UntypedServiceImplementation = {};
  for (const [handlerName, method] of methods) {
    implementation[handlerName] = method.operation.streaming ? streamHandler(method, options) : unaryHandler(method, options);
  }
  return { definition, implementation };
}
