// The MCP requests as A2A operations, run through the same dispatcher as every binding's
// (operations/dispatch.ts): each parses its params with the operation's schema, admits the caller
// (scope, tenant, access to the agent, one token of its rate), and calls the one A2AHandler. So
// an MCP tool call is an A2A task like any other: owned by the caller, limited, logged, pushed.
import { randomUUID } from 'node:crypto';
import type { CallToolResult, CreateTaskResult, ListTasksResult, Task as McpTask } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { AgentEndpoint } from '../agents/agent-endpoint.ts';
import { mayUseAgent } from '../auth/scopes.ts';
import { anonymousPrincipal, type Principal } from '../auth/principal.ts';
import type { McpConfig } from '../config/schema.ts';
import type { StreamOperation, UnaryOperation } from '../operations/definition.ts';
import { openStream, runUnary, type OperationDeps, type RequestContext } from '../operations/dispatch.ts';
import { OPERATIONS } from '../operations/registry.ts';
import type { StreamPlan } from '../operations/stream-plan.ts';
import type { ListTasksResponse, Message, SendMessageResponse, StreamResponse, Task, TaskState } from '../protocol/types.ts';
import { A2AError } from '../protocol/errors.ts';
import type { ToolArguments } from './agent-tools.ts';
import { cancelTrackedCall, trackCall, type CallTracking, type CancelTaskRef } from './call-cancellation.ts';
import { followUntilSettled } from './follow-task.ts';
import { decodeCursor, encodeCursor, mcpTaskIdOf, parseMcpTaskId } from './task-ids.ts';
import { hasSettled, mcpTaskOf, toolResultOfMessage, toolResultOfTask, toolResultStillRunning, type McpTaskTiming } from './task-results.ts';

function unary(name: string): UnaryOperation {
  const operation = OPERATIONS.byName(name);
  if (operation === undefined || operation.streaming) throw new Error(`mcp: ${name} is not a unary operation`);
  return operation;
}
function streaming(name: string): StreamOperation {
  const operation = OPERATIONS.byName(name);
  if (operation === undefined || !operation.streaming) throw new Error(`mcp: ${name} is not a streaming operation`);
  return operation;
}
const SEND_MESSAGE = unary('SendMessage');
const SEND_STREAMING_MESSAGE = streaming('SendStreamingMessage');
const GET_TASK = unary('GetTask');
const LIST_TASKS = unary('ListTasks');
const CANCEL_TASK = unary('CancelTask');
const SUBSCRIBE_TO_TASK = streaming('SubscribeToTask');

/** What every MCP request of one HTTP request shares: the admitted caller and the gateway's agents. */
export interface McpCallContext {
  /** Undefined when authentication is off. */
  principal: Principal | undefined;
  /** Bytes of the HTTP request's body, charged to the caller's rate once (by its tools/call). */
  requestBytes: number;
  /** True when the request (its token and those bytes) was paid before the body was read (the pipeline's rates). */
  paidBeforeBody: boolean;
  endpoints: ReadonlyMap<string, AgentEndpoint>;
  /** The operations' dependencies for one agent (the same as its JSON-RPC binding's). */
  depsOf: (endpoint: AgentEndpoint) => OperationDeps;
  settings: McpConfig;
  timing: McpTaskTiming;
  /** Tells the access log which A2A task the request was about. */
  noteTask: (taskId: string) => void;
  /** Where calls in progress are found by their request id (notifications/cancelled); undefined without an MCP session. */
  tracking: CallTracking | undefined;
  /** The trace context of the request's span (tracing on): the turns a call opens continue it. */
  trace?: RequestContext['trace'];
}

/** Progress as the tool call's events arrive, for a client that gave a progressToken. */
export type ProgressReport = (event: StreamResponse) => void;

function endpointOf(context: McpCallContext, agent: string): AgentEndpoint {
  const endpoint = context.endpoints.get(agent);
  if (endpoint === undefined) throw new McpError(ErrorCode.InvalidParams, `There is no tool (agent) "${agent.slice(0, 64)}" here; tools/list names the ones you may call.`);
  return endpoint;
}

const readContext = (context: McpCallContext): RequestContext => ({ principal: context.principal, ...(context.trace === undefined ? {} : { trace: context.trace }) });

/**
 * The operations' dependencies for a step that finishes an MCP request already charged (the read
 * of a call's settled task, the follow of a task tasks/result read): the request's token paid for
 * it, as one SendStreamingMessage pays for its whole stream. Answer bytes are charged as ever.
 */
function paidDeps(deps: OperationDeps): OperationDeps {
  const limiter = deps.rateLimiter;
  const rateLimiter = new Proxy(limiter, {
    get(target, property) {
      if (property === 'take') return async () => undefined;
      // The consumer's plan (src/consumers) was charged by the request too.
      if (property === 'consumers') return undefined;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { ...deps, rateLimiter };
}

async function readTask(context: McpCallContext, endpoint: AgentEndpoint, taskId: string, paid = false): Promise<Task> {
  context.noteTask(taskId);
  const deps = context.depsOf(endpoint);
  return (await runUnary(GET_TASK, { id: taskId, historyLength: 0 }, readContext(context), paid ? paidDeps(deps) : deps)) as Task;
}

function messageOf(args: ToolArguments): Message {
  return {
    messageId: randomUUID(),
    role: 'ROLE_USER',
    parts: [{ text: args.message }],
    ...(args.contextId === undefined ? {} : { contextId: args.contextId }),
    ...(args.taskId === undefined ? {} : { taskId: args.taskId }),
  };
}

/** The request's body pays for the call that carries it, with the call's one token. */
function sendContext(context: McpCallContext): RequestContext {
  return { ...readContext(context), requestBytes: context.requestBytes, paidBeforeBody: context.paidBeforeBody };
}

/**
 * CancelTask on the caller's behalf, for a call the client cancelled: the same owner-scoped,
 * two-stage cancel as the bindings'. A task that settled in the meantime stays as it ended.
 */
function cancelOnBehalf(context: McpCallContext): CancelTaskRef {
  return async (taskRef) => {
    const { agent, taskId } = parseMcpTaskId(taskRef);
    const endpoint = context.endpoints.get(agent);
    if (endpoint === undefined) return;
    try {
      await runUnary(CANCEL_TASK, { id: taskId }, readContext(context), context.depsOf(endpoint));
    } catch (error) {
      if (error instanceof A2AError && error.kind === 'TASK_NOT_CANCELABLE') return;
      throw error;
    }
  };
}

/** Waits for the task a stream plan follows, then answers with its result (or where it stands, past mcp.maxWaitMs). */
async function settle(context: McpCallContext, endpoint: AgentEndpoint, plan: StreamPlan, signal: AbortSignal, progress: ProgressReport | undefined): Promise<CallToolResult> {
  const deps = context.depsOf(endpoint);
  const outcome = await followUntilSettled(deps.service, plan, { waitMs: context.settings.maxWaitMs, signal, ...(progress === undefined ? {} : { onEvent: progress }) });
  if (outcome.message !== undefined) return toolResultOfMessage(outcome.message);
  const agent = endpoint.agent.settings.name;
  if (signal.aborted) throw new McpError(ErrorCode.ConnectionClosed, 'The request was cancelled; the task goes on.');
  const task = await readTask(context, endpoint, plan.taskId, true);
  if (hasSettled(task.status.state)) return toolResultOfTask(agent, task);
  return toolResultStillRunning(agent, task, task.status.state, context.settings.maxWaitMs);
}

/** tools/call: a new message to the agent, its task followed to the end (within mcp.maxWaitMs) with progress. */
export async function callTool(context: McpCallContext, requestId: string | number, agent: string, args: ToolArguments, signal: AbortSignal, progress: ProgressReport | undefined): Promise<CallToolResult> {
  const endpoint = endpointOf(context, agent);
  const plan = await openStream(SEND_STREAMING_MESSAGE, { message: messageOf(args) }, sendContext(context), context.depsOf(endpoint));
  context.noteTask(plan.taskId);
  let untrack: (() => Promise<void>) | undefined;
  try {
    untrack = await trackCall(context.tracking, requestId, mcpTaskIdOf(agent, plan.taskId), cancelOnBehalf(context));
  } catch (error) {
    plan.onStreamEnd?.();
    throw error;
  }
  try {
    return await settle(context, endpoint, plan, signal, progress);
  } finally {
    await untrack().catch(() => undefined);
  }
}

/** notifications/cancelled: the A2A task of the caller's tools/call with that request id is cancelled (now, or as soon as the call has one). */
export async function cancelCall(context: McpCallContext, requestId: string | number): Promise<'cancelled' | 'pending' | 'untracked'> {
  return cancelTrackedCall(context.tracking, requestId, cancelOnBehalf(context));
}

/** tools/call as an MCP task: the message is stored and its task handed back at once; the client fetches the result later. */
export async function callToolAsTask(context: McpCallContext, requestId: string | number, agent: string, args: ToolArguments): Promise<CreateTaskResult> {
  const endpoint = endpointOf(context, agent);
  const answer = (await runUnary(SEND_MESSAGE, { message: messageOf(args), configuration: { returnImmediately: true } }, sendContext(context), context.depsOf(endpoint))) as SendMessageResponse;
  if (!('task' in answer)) {
    throw new McpError(ErrorCode.InvalidRequest, `Agent "${agent}" answered with a message and no task, so there is no MCP task to follow; call the tool without params.task.`);
  }
  context.noteTask(answer.task.id);
  // A cancel that overtook the call cancels its task; one that comes after the answer is late (tasks/cancel is the way then).
  const untrack = await trackCall(context.tracking, requestId, mcpTaskIdOf(agent, answer.task.id), cancelOnBehalf(context));
  await untrack();
  return { task: mcpTaskOf(agent, answer.task, context.timing) };
}

/** tasks/get: the A2A task of the caller's, as an MCP task. */
export async function getMcpTask(context: McpCallContext, mcpTaskId: string): Promise<McpTask> {
  const { agent, taskId } = parseMcpTaskId(mcpTaskId);
  return mcpTaskOf(agent, await readTask(context, endpointOf(context, agent), taskId), context.timing);
}

/** tasks/result: the tool call's result, waiting (within mcp.maxWaitMs) while the task has not settled. */
export async function getMcpTaskResult(context: McpCallContext, mcpTaskId: string, signal: AbortSignal, progress: ProgressReport | undefined): Promise<CallToolResult> {
  const { agent, taskId } = parseMcpTaskId(mcpTaskId);
  const endpoint = endpointOf(context, agent);
  const task = await readTask(context, endpoint, taskId);
  if (hasSettled(task.status.state)) return toolResultOfTask(agent, task);
  const plan = await openStream(SUBSCRIBE_TO_TASK, { id: taskId }, readContext(context), paidDeps(context.depsOf(endpoint)));
  const result = await settle(context, endpoint, plan, signal, progress);
  const state = (result.structuredContent as { state?: TaskState } | undefined)?.state;
  // A task's result is what it settled with: one still running is not, so the wait is refused instead.
  if (state !== undefined && !hasSettled(state)) {
    throw new McpError(ErrorCode.RequestTimeout, `Task ${mcpTaskId} is still ${state} after ${context.settings.maxWaitMs} ms (mcp.maxWaitMs); it goes on. Call tasks/result again, or poll tasks/get until it is completed.`);
  }
  return result;
}

/** tasks/cancel: CancelTask on the A2A task. */
export async function cancelMcpTask(context: McpCallContext, mcpTaskId: string): Promise<McpTask> {
  const { agent, taskId } = parseMcpTaskId(mcpTaskId);
  const endpoint = endpointOf(context, agent);
  context.noteTask(taskId);
  const task = (await runUnary(CANCEL_TASK, { id: taskId }, readContext(context), context.depsOf(endpoint))) as Task;
  return mcpTaskOf(agent, task, context.timing);
}

/**
 * tasks/list: the caller's tasks of every agent it may use, agent after agent (ListTasks of each,
 * newest first), one page of at most mcp.maxTasksPerPage at a time.
 */
export async function listMcpTasks(context: McpCallContext, cursor: string | undefined): Promise<ListTasksResult> {
  const position = decodeCursor(cursor);
  const principal = context.principal ?? anonymousPrincipal(undefined);
  const usable = [...context.endpoints.values()].filter((endpoint) => mayUseAgent(principal, endpoint.agent.settings.scopes));
  let index = position === undefined ? 0 : usable.findIndex((endpoint) => endpoint.agent.settings.name === position.agent);
  if (index < 0) return { tasks: [] };
  const tasks: McpTask[] = [];
  let page = position?.page;
  // Each ListTasks call moves on by a page or an agent; the cap only guards against a store that would not.
  for (let calls = 0; index < usable.length && tasks.length < context.settings.maxTasksPerPage && calls < usable.length + context.settings.maxTasksPerPage; calls++) {
    const endpoint = usable[index] as AgentEndpoint;
    const agent = endpoint.agent.settings.name;
    const request = { pageSize: context.settings.maxTasksPerPage - tasks.length, historyLength: 0, ...(page === undefined ? {} : { pageToken: page }) };
    const listed = (await runUnary(LIST_TASKS, request, readContext(context), context.depsOf(endpoint))) as ListTasksResponse;
    tasks.push(...listed.tasks.map((task) => mcpTaskOf(agent, task, context.timing)));
    if (listed.nextPageToken !== '') {
      page = listed.nextPageToken;
      if (tasks.length >= context.settings.maxTasksPerPage) return { tasks, nextCursor: encodeCursor({ agent, page }) };
      continue;
    }
    index += 1;
    page = undefined;
  }
  const next = usable[index];
  return next === undefined ? { tasks } : { tasks, nextCursor: encodeCursor({ agent: next.agent.settings.name }) };
}
