// The MCP face's routes on the gateway's root app: POST /mcp (Streamable HTTP, stateless) behind
// the admission steps every A2A call takes (header count, declared size, content type,
// credentials with the per-address failure limit, byte rate, the body within its size and JSON
// bounds), and the protected resource metadata beside it. A refusal is answered as a JSON-RPC
// error by the gateway's error handler; a 401 names the resource metadata (RFC 9728).
import { randomUUID } from 'node:crypto';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { Hono } from 'hono';
import type { AgentEndpoint } from '../agents/agent-endpoint.ts';
import { shaped } from '../bindings/errors.ts';
import type { RequestEdge } from '../bindings/http/pipeline.ts';
import { noteRequest, notesOf } from '../bindings/http/request-notes.ts';
import { anonymousPrincipal } from '../auth/principal.ts';
import type { McpConfig } from '../config/schema.ts';
import { admit, ADMISSION_STEPS } from '../gateway/admission.ts';
import type { GatewayEnv } from '../gateway/gateway-env.ts';
import { runSteps, type Step } from '../gateway/steps.ts';
import type { Logger } from '../logging/logger.ts';
import type { OperationDeps } from '../operations/dispatch.ts';
import { A2AError } from '../protocol/errors.ts';
import type { McpCallStore } from '../store/mcp/mcp-call-store.ts';
import { observeRequest } from '../telemetry/request-observer.ts';
import { callerOf, SESSION_ID_PATTERN, type CallTracking } from './call-cancellation.ts';
import type { McpCallContext } from './mcp-calls.ts';
import { methodLabelOf } from './mcp-methods.ts';
import { carryOutCancellations, createMcpServer } from './mcp-server.ts';
import { MCP_PATH, protectedResourceOf, RESOURCE_METADATA_PATH, resourceMetadataOf, withResourceMetadata, type ProtectedResource } from './protected-resource.ts';

/** What the gateway's configuration says of the MCP face (built by the gateway role). */
export interface McpFaceSettings {
  settings: McpConfig;
  /** The issuers whose tokens the gateway accepts now, the metadata's authorization servers (issuers written through the admin API included). */
  authorizationServers: () => readonly string[];
  /** How long a task stays readable (retentionSeconds): an MCP task's ttl. */
  taskTtlMs: number;
  /** SSE keep-alive of a waiting tools/call (heartbeatMs). */
  heartbeatMs: number;
  /** Where calls in progress are found for notifications/cancelled; undefined: such notifications have no effect. */
  calls?: McpCallStore;
}

export interface McpRouteOptions extends McpFaceSettings {
  endpoints: ReadonlyMap<string, AgentEndpoint>;
  /** One agent's operation dependencies, as its JSON-RPC binding has them. */
  depsOf: (endpoint: AgentEndpoint) => OperationDeps;
  /** Header count, credentials and the default body limit, as the bindings judge them. */
  edge: RequestEdge;
  publicUrl: string;
  /** Browser origins allowed ('*' = any): a request from another Origin is refused (DNS rebinding). */
  corsOrigins: readonly string[];
  logger: Logger;
}

const JSONRPC_SHAPE = { binding: 'jsonrpc', requestId: null } as const;
const SESSION_HEADER = 'mcp-session-id';
/** How long a call's record outlives mcp.maxWaitMs: the time to admit the request and open its task. */
const TRACKING_GRACE_MS = 60_000;

export function registerMcpRoutes(app: Hono<GatewayEnv>, options: McpRouteOptions): void {
  // Read at each request: agents and issuers written through the admin API change both while the gateway runs.
  const resourceNow = (): ProtectedResource =>
    protectedResourceOf(options.publicUrl, options.authorizationServers(), [...options.endpoints.values()].flatMap((endpoint) => endpoint.agent.settings.scopes));
  const serveMetadata = (): Response => new Response(JSON.stringify(resourceMetadataOf(resourceNow())), { status: 200, headers: { 'Content-Type': 'application/json', 'Cache-Control': 'public, max-age=300', 'Access-Control-Allow-Origin': '*' } });
  app.get(RESOURCE_METADATA_PATH, serveMetadata);
  app.get(`${RESOURCE_METADATA_PATH}${MCP_PATH}`, serveMetadata);

  const anyOrigin = options.corsOrigins.includes('*');
  const start: Step = (c) => {
    const exchange = c.get('exchange');
    observeRequest(c.env.incoming, exchange.response, 'mcp', undefined, MCP_PATH);
    noteRequest(exchange.response, { operation: 'mcp' });
    if (exchange.method !== 'POST') {
      exchange.response.setHeader('Allow', 'POST');
      throw new A2AError('INVALID_REQUEST', 'This MCP server is stateless: it answers POST only (no session stream to GET, no session to DELETE).', { httpStatus: 405 });
    }
    const origin = exchange.header('origin');
    if (origin !== undefined && !anyOrigin && !options.corsOrigins.includes(origin)) {
      throw new A2AError('PERMISSION_DENIED', `Requests from the origin ${origin.slice(0, 200)} are not accepted (corsOrigins).`, { metadata: { reason: 'ORIGIN_NOT_ALLOWED' } });
    }
    const session = exchange.header(SESSION_HEADER);
    if (session !== undefined && !SESSION_ID_PATTERN.test(session)) {
      throw new A2AError('INVALID_REQUEST', `The ${SESSION_HEADER} header is not a session id of this server (visible ASCII, at most 128 characters); send the one initialize answered with, or none.`, { httpStatus: 400 });
    }
    admit(c, { edge: options.edge, content: 'json-required', readsBody: true, checkVersion: false });
    return undefined;
  };
  /** Each step's refusal as a JSON-RPC error; a 401 pointing at the resource metadata. */
  const answered =
    (step: Step): Step =>
    (c) => {
      const refuse = (error: unknown): never => {
        throw shaped(withResourceMetadata(error, resourceNow()), JSONRPC_SHAPE);
      };
      try {
        const result = step(c);
        return result instanceof Promise ? result.catch(refuse) : result;
      } catch (error) {
        return refuse(error);
      }
    };
  const guard = runSteps(...[start, ...ADMISSION_STEPS].map(answered));

  app.all(MCP_PATH, guard, async (c) => {
    const admitted = c.get('admitted');
    let body: unknown;
    try {
      body = JSON.parse(admitted.body);
    } catch {
      throw shaped(new A2AError('PARSE_ERROR', 'The body is not valid JSON.'), JSONRPC_SHAPE);
    }
    const response = c.env.outgoing;
    // The access log and the metrics name the MCP method (and the log, below, the A2A task): the audit trail of the face.
    const method = (body as { method?: unknown } | null)?.method;
    noteRequest(response, { operation: methodLabelOf(method) });
    const principal = admitted.principal ?? anonymousPrincipal(undefined);
    const session = c.get('exchange').header(SESSION_HEADER);
    const tracking: CallTracking | undefined =
      options.calls === undefined || session === undefined ? undefined : { store: options.calls, caller: callerOf(principal), session, ttlMs: options.settings.maxWaitMs + TRACKING_GRACE_MS };
    const trace = notesOf(response).trace;
    const context: McpCallContext = {
      principal: admitted.principal,
      requestBytes: Buffer.byteLength(admitted.body),
      paidBeforeBody: admitted.paidBeforeBody,
      endpoints: options.endpoints,
      depsOf: options.depsOf,
      settings: options.settings,
      timing: { ttlMs: options.taskTtlMs, pollIntervalMs: options.settings.pollIntervalMs },
      noteTask: (taskId) => noteRequest(response, { taskId: taskId.slice(0, 256) }),
      tracking,
      ...(trace === undefined ? {} : { trace }),
    };
    await carryOutCancellations(context, body, options.logger);
    const server = createMcpServer(context, options.logger);
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, keepAliveMs: options.heartbeatMs });
    // The client gone, the request's handlers stop (their follow of the task ends; the task goes on).
    response.once('close', () => void server.close());
    await server.connect(transport);
    const answer = await transport.handleRequest(c.req.raw, { parsedBody: body });
    // A session id names this client's requests for cancellation (call-cancellation.ts); nothing is kept for it.
    if (method === 'initialize' && answer.ok) answer.headers.set(SESSION_HEADER, randomUUID());
    return answer;
  });
}
