// The MCP server of one HTTP request (stateless Streamable HTTP: no session, so any gateway
// answers any request, and nothing is kept between requests but the A2A tasks themselves).
// Its handlers are the MCP face's requests (mcp-calls.ts); the protocol's experimental tasks
// utility is served by hand, with the A2A task store behind it, because the SDK's own TaskStore
// creates its ids before the work exists and keeps results beside the task; here the A2A task
// is the MCP task.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CallToolRequestSchema,
  CancelledNotificationSchema,
  CancelTaskRequestSchema,
  ErrorCode,
  GetTaskPayloadRequestSchema,
  GetTaskRequestSchema,
  ListTasksRequestSchema,
  ListToolsRequestSchema,
  McpError,
  RELATED_TASK_META_KEY,
  type CallToolResult,
  type CreateTaskResult,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { anonymousPrincipal } from '../auth/principal.ts';
import { toA2AError } from '../bindings/errors.ts';
import type { Logger } from '../logging/logger.ts';
import type { StreamResponse } from '../protocol/types.ts';
import { GATEWAY_VERSION } from '../version.ts';
import { listAgentTools, parseToolArguments } from './agent-tools.ts';
import { countToolCall } from './call-outcomes.ts';
import { callTool, callToolAsTask, cancelCall, cancelMcpTask, getMcpTask, getMcpTaskResult, listMcpTasks, type McpCallContext, type ProgressReport } from './mcp-calls.ts';
import { mcpTaskIdOf, parseMcpTaskId } from './task-ids.ts';
import { textOf } from './task-results.ts';

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/**
 * The A2A refusals the tasks utility names otherwise: a task id that is not the caller's, and a
 * cancel of a task already ended, are invalid params there (-32602), as the MCP tasks spec asks.
 */
const TASK_PARAM_ERRORS: ReadonlySet<string> = new Set(['TASK_NOT_FOUND', 'TASK_NOT_CANCELABLE']);

/** A refusal or failure as the MCP client reads it: the A2A error's JSON-RPC code, message and details. */
function toMcpError(error: unknown, logger: Logger, tasksUtility: boolean): McpError {
  if (error instanceof McpError) return error;
  const a2a = toA2AError(error);
  if (a2a.kind === 'INTERNAL') logger.error('MCP request failed', { error: String((error as Error).stack ?? error) });
  const code = tasksUtility && TASK_PARAM_ERRORS.has(a2a.kind) ? ErrorCode.InvalidParams : a2a.mapping.jsonRpcCode;
  return new McpError(code, a2a.message, a2a.details());
}

/**
 * One line of progress per event: what the agent says, or which artifact grew by what. The
 * task's first event names its MCP task, so a client whose call is cut off (a gateway shutting
 * down) can still fetch the result with tasks/result.
 */
function progressLine(event: StreamResponse, agent: string): string | undefined {
  if ('statusUpdate' in event) {
    const said = textOf(event.statusUpdate.status.message);
    return said === '' ? event.statusUpdate.status.state : `${event.statusUpdate.status.state}: ${said}`;
  }
  if ('artifactUpdate' in event) {
    const { artifact } = event.artifactUpdate;
    return `artifact ${artifact.name ?? artifact.artifactId}: ${textOf({ messageId: '', role: 'ROLE_AGENT', parts: artifact.parts })}`;
  }
  if ('task' in event) return `${event.task.status.state} (MCP task ${mcpTaskIdOf(agent, event.task.id)})`;
  return undefined;
}

/** Progress notifications for a request that carried a progressToken; none otherwise. */
function progressOf(extra: Extra, agent: string): ProgressReport | undefined {
  const progressToken = extra._meta?.progressToken;
  if (progressToken === undefined) return undefined;
  let progress = 0;
  return (event) => {
    const line = progressLine(event, agent);
    if (line === undefined) return;
    progress += 1;
    extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress, message: line.slice(0, 2000) } }).catch(() => {
      // The client went away: the task goes on, and its result stays fetchable.
    });
  };
}

export function createMcpServer(context: McpCallContext, logger: Logger): Server {
  const server = new Server(
    { name: 'a2a-gateway', version: GATEWAY_VERSION },
    {
      capabilities: {
        tools: { listChanged: false },
        tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
      },
      instructions: 'Each tool is an A2A agent behind this gateway. A call is a durable task: call a tool as an MCP task (params.task) to disconnect and fetch its result later with tasks/result.',
    },
  );
  const guarded =
    <Request, Result>(handle: (request: Request, extra: Extra) => Promise<Result>, tasksUtility = false) =>
    async (request: Request, extra: Extra): Promise<Result> => {
      try {
        return await handle(request, extra);
      } catch (error) {
        throw toMcpError(error, logger, tasksUtility);
      }
    };
  const principal = context.principal ?? anonymousPrincipal(undefined);

  server.setRequestHandler(
    ListToolsRequestSchema,
    guarded((request) => listAgentTools(context.endpoints, principal, request.params?.cursor, context.settings.maxToolsPerPage)),
  );
  server.setRequestHandler(
    CallToolRequestSchema,
    guarded(async (request, extra) => {
      let result: CallToolResult | CreateTaskResult | undefined;
      try {
        const args = parseToolArguments(request.params.arguments);
        if (request.params.task !== undefined) result = await callToolAsTask(context, extra.requestId, request.params.name, args);
        else result = await callTool(context, extra.requestId, request.params.name, args, extra.signal, progressOf(extra, request.params.name));
        return result;
      } finally {
        countToolCall(result, extra.signal.aborted);
      }
    }),
  );
  server.setRequestHandler(GetTaskRequestSchema, guarded((request) => getMcpTask(context, request.params.taskId), true));
  server.setRequestHandler(
    GetTaskPayloadRequestSchema,
    guarded(async (request, extra) => {
      const result = await getMcpTaskResult(context, request.params.taskId, extra.signal, progressOf(extra, parseMcpTaskId(request.params.taskId).agent));
      return { ...result, _meta: { ...result._meta, [RELATED_TASK_META_KEY]: { taskId: request.params.taskId } } };
    }, true),
  );
  server.setRequestHandler(ListTasksRequestSchema, guarded((request) => listMcpTasks(context, request.params?.cursor)));
  server.setRequestHandler(CancelTaskRequestSchema, guarded((request) => cancelMcpTask(context, request.params.taskId), true));
  return server;
}

/**
 * The notifications/cancelled among a request's messages, carried out before the transport
 * answers 202: the A2A task of each named tools/call is cancelled (docs/mcp.md, "Cancelling").
 * A failure is logged, never answered: a notification has no response.
 */
export async function carryOutCancellations(context: McpCallContext, body: unknown, logger: Logger): Promise<void> {
  const messages = Array.isArray(body) ? body.slice(0, 16) : [body];
  for (const message of messages) {
    const parsed = CancelledNotificationSchema.safeParse(message);
    if (!parsed.success || parsed.data.params.requestId === undefined) continue;
    try {
      await cancelCall(context, parsed.data.params.requestId);
    } catch (error) {
      const a2a = toA2AError(error);
      logger.warn('MCP cancellation not carried out', { requestId: String(parsed.data.params.requestId).slice(0, 64), error: a2a.message });
    }
  }
}
