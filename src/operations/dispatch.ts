// Runs a declared operation for every binding (and both protocol versions): parse the request
// with the operation's schema (proto field names accepted beside JSON names), admit the caller (scope, tenant, access to the agent, then one
// token from its rate bucket), activate the extensions it names (refusing it when it does not
// name one the agent requires), then call the handler. A refusal at any step changes nothing.
import type { AgentEndpoint } from '../agents/agent-endpoint.ts';
import type { TraceContext } from '../telemetry/spans.ts';
import { anonymousPrincipal, ownerOf, type Principal } from '../auth/principal.ts';
import { requireAgentAccess, requireScope, requireTenant } from '../auth/scopes.ts';
import { activateExtensions } from '../extensions/activation.ts';
import type { RateLimiter } from '../limits/rate-limiter.ts';
import type { ByteRates } from '../limits/byte-rates.ts';
import { OPERATIONS } from './registry.ts';
import { withJsonNames } from '../protocol/protojson.ts';
import { parseParams } from '../protocol/schemas.ts';
import { checkRequestFields, type RequestFieldPolicy } from '../protocol/unknown-fields.ts';
import type { GatewayHandler } from '../tasks/gateway-handler.ts';
import type { Operation, OperationCall, StreamOperation, UnaryOperation } from './definition.ts';
import type { StreamPlan } from './stream-plan.ts';
import type { StreamSlots } from '../limits/stream-slots.ts';
import { ownerKeyOf } from '../store/task-store.ts';

/** What the gateway gives every operation of one agent's URL space. */
export interface OperationDeps {
  service: GatewayHandler;
  /** The agent whose URLs the request came to: its tasks, cards, limits and input policy. */
  endpoint: AgentEndpoint;
  rateLimiter: RateLimiter;
  /** Per-owner byte rates (request bodies here; stored messages in the task service); undefined = none. */
  byteRates?: ByteRates;
  /** Open streams per owner and in all on this process; undefined = no caps. */
  streamSlots?: StreamSlots;
  /** What unknown request fields get (JSON bindings; a gRPC message has no field its proto does not define). */
  requestFields?: RequestFieldPolicy;
}

/** What the binding learnt about the request before the operation runs. */
export interface RequestContext {
  /** Undefined when authentication is off. */
  principal: Principal | undefined;
  lastEventId?: string | undefined;
  /** Bytes of the request body (a large one costs more of the caller's rate, limits.requestBytesPerToken). */
  requestBytes?: number;
  /**
   * True when the request was paid before its body was read (the binding's pipeline): its token
   * of the owner's request rate and its body's bytes, in one call.
   */
  paidBeforeBody?: boolean;
  /** The extension URIs the request names (A2A-Extensions). */
  requestedExtensions?: readonly string[];
  /** Told which extensions the request activated, before the operation runs (the binding echoes them). */
  announceExtensions?: (uris: readonly string[]) => void;
  /** The trace context of the request's span (tracing on): the turns it opens continue it. */
  trace?: TraceContext;
  /** The request's headers (gRPC: its metadata), for extensions whose parameters travel there. */
  header?: (name: string) => string | undefined;
  /** The binding writes the answer through serializeAnswer as it is (Caller.answersSpliced). */
  answersSpliced?: boolean;
}

const tenantOf = (request: unknown): string | undefined => {
  const tenant = (request as { tenant?: unknown } | undefined)?.tenant;
  return typeof tenant === 'string' ? tenant : undefined;
};

/** Parses the params and admits the caller; the handler runs with what this returns. */
async function admit<Request>(operation: Operation, params: unknown, context: RequestContext, deps: OperationDeps): Promise<{ request: Request; call: OperationCall }> {
  const named = withJsonNames(params);
  const request = parseParams(operation.request, named) as Request;
  if (deps.requestFields !== undefined) checkRequestFields(operation.name, operation.request, named, deps.requestFields, { agent: deps.endpoint.agent.name });
  const tenant = tenantOf(request);
  const caller = context.principal ?? anonymousPrincipal(tenant);
  const { agent } = deps.endpoint;
  requireScope(caller, operation.name, operation.scope);
  requireTenant(caller, tenant);
  requireAgentAccess(caller, agent.name, agent.settings.scopes);
  const extensions = activateExtensions({
    requested: context.requestedExtensions ?? [],
    declared: agent.extensions,
    ofMethod: OPERATIONS.extensionUriOf(operation),
    startsWork: operation.startsWork === true,
  });
  const owner = ownerOf(caller, agent.name);
  const requestBytes = context.requestBytes ?? 0;
  const byteRates = deps.byteRates;
  // A body's bytes are paid once: to the ingress byte rate while it is on, else in request tokens;
  // the token and the bytes in one call, unless the pipeline took both before reading the body.
  if (context.paidBeforeBody !== true) await deps.rateLimiter.take(owner, agent.settings.limits, byteRates?.chargesIngress === true ? 0 : requestBytes, byteRates?.ingressTake(owner, requestBytes));
  // Then the caller's consumer plan, shared by all its callers (src/consumers/consumer-gate.ts).
  const reserveTask = await deps.rateLimiter.consumers?.admit(caller.tenant, caller.subject);
  const call: OperationCall = {
    principal: context.principal,
    owner,
    grants: [...caller.grants],
    service: deps.service,
    endpoint: deps.endpoint,
    lastEventId: context.lastEventId,
    extensions,
    header: context.header ?? (() => undefined),
    trace: context.trace,
    answersSpliced: context.answersSpliced === true,
    chargeAnswerBytes: (bytes) => deps.rateLimiter.chargeAnswer(owner, agent.settings.limits, bytes),
    largeAnswers: {
      payAfterBytes: deps.rateLimiter.answerPayAfterBytes(agent.settings.limits),
      pay: (bytes) => deps.rateLimiter.payAnswer(owner, agent.settings.limits, bytes),
    },
    ...(reserveTask === undefined ? {} : { reserveTask }),
  };
  context.announceExtensions?.(extensions);
  return { request, call };
}

/** Runs an operation that answers with one JSON value. */
export async function runUnary(operation: UnaryOperation, params: unknown, context: RequestContext, deps: OperationDeps): Promise<unknown> {
  const { request, call } = await admit(operation, params, context, deps);
  return operation.handle(request, call);
}

/**
 * Validates and starts a streaming operation. Errors thrown here happen before any SSE byte
 * is written, so the binding can still answer with an ordinary error response.
 */
export async function openStream(operation: StreamOperation, params: unknown, context: RequestContext, deps: OperationDeps): Promise<StreamPlan> {
  const { request, call } = await admit(operation, params, context, deps);
  // Taken before the operation runs: a refused SendStreamingMessage stores nothing.
  const slot = await deps.streamSlots?.take(ownerKeyOf(call.owner));
  try {
    const plan = await operation.open(request, call);
    return slot === undefined ? plan : { ...plan, onStreamEnd: () => slot.release() };
  } catch (error) {
    slot?.release();
    throw error;
  }
}

/**
 * The pipeline's charge of a declared body (AdmitOptions.chargeDeclaredBody): the caller's bytes
 * to this agent and the request's token of its rate, in one call, refused before the body is
 * read when over limits.ingressBytesPerSecond or limits.requestsPerSecond.
 */
export function declaredBodyCharge(deps: OperationDeps): ((principal: Principal, declaredBytes: number) => Promise<boolean>) | undefined {
  const byteRates = deps.byteRates;
  if (byteRates === undefined || !byteRates.chargesIngress) return undefined;
  return async (principal, declaredBytes) => {
    const { agent } = deps.endpoint;
    const owner = ownerOf(principal, agent.name);
    await deps.rateLimiter.take(owner, agent.settings.limits, 0, byteRates.ingressTake(owner, declaredBytes));
    return true;
  };
}
