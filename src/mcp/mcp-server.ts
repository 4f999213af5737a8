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
  CancelTaskRequestSchema,
  GetTaskPayloadRequestSchema,
  GetTaskRequestSchema,
  ListTasksRequestSchema,
  ListToolsRequestSchema,
  McpError,
  RELATED_TASK_META_KEY,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { anonymousPrincipal } from '../auth/principal.ts';
import { toA2AError } from '../bindings/errors.ts';
import type { Logger } from '../logging/logger.ts';
import type { StreamResponse } from '../protocol/types.ts';
import { GATEWAY_VERSION } from '../version.ts';
import { listAgentTools, parseToolArguments } from './agent-tools.ts';
import { callTool, callToolAsTask, cancelMcpTask, getMcpTask, getMcpTaskResult, listMcpTasks, type McpCallContext, type ProgressReport } from './mcp-calls.ts';
import { mcpTaskIdOf, parseMcpTaskId } from './task-ids.ts';
import { textOf } from './task-results.ts';

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** A refusal or failure as the MCP client reads it: the A2A error's JSON-RPC code, message and details. */
function toMcpError(error: unknown, logger: Logger): McpError {
  if (error instanceof McpError) return error;
  const a2a = toA2AError(error);
  if (a2a.kind === 'INTERNAL') logger.error('MCP request failed', { error: String((error as Error).stack ?? error) });
  return new McpError(a2a.mapping.jsonRpcCode, a2a.message, a2a.details());
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
    <Request, Result>(handle: (request: Request, extra: Extra) => Promise<Result>) =>
    async (request: Request, extra: Extra): Promise<Result> => {
      try {
        return await handle(request, extra);
      } catch (error) {
        throw toMcpError(error, logger);
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
      const args = parseToolArguments(request.params.arguments);
      if (request.params.task !== undefined) return callToolAsTask(context, request.params.name, args);
      return callTool(context, request.params.name, args, extra.signal, progressOf(extra, request.params.name));
    }),
  );
  server.setRequestHandler(GetTaskRequestSchema, guarded((request) => getMcpTask(context, request.params.taskId)));
  server.setRequestHandler(
    GetTaskPayloadRequestSchema,
    guarded(async (request, extra) => {
      const result = await getMcpTaskResult(context, request.params.taskId, extra.signal, progressOf(extra, parseMcpTaskId(request.params.taskId).agent));
      return { ...result, _meta: { ...result._meta, [RELATED_TASK_META_KEY]: { taskId: request.params.taskId } } };
    }),
  );
  server.setRequestHandler(ListTasksRequestSchema, guarded((request) => listMcpTasks(context, request.params?.cursor)));
  server.setRequestHandler(CancelTaskRequestSchema, guarded((request) => cancelMcpTask(context, request.params.taskId)));
  return server;
}
