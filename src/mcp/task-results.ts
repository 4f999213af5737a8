// What an MCP client is shown of an A2A task: an MCP task's status for tasks/get, and the
// tool call's result once the task has settled. An A2A task that asks for input (or for
// authorization) has answered the tool call: its question is the result, and the caller goes
// on by calling the tool again with the task's id. MCP's own input_required means the server
// waits for the client's side channel (elicitation), which an A2A agent never uses.
import type { CallToolResult, ContentBlock, Task as McpTask } from '@modelcontextprotocol/sdk/types.js';
import { decodeTime } from 'ulid';
import { isInterrupted, type Message, type Part, type Task, type TaskState } from '../protocol/types.ts';
import { mcpTaskIdOf } from './task-ids.ts';

/** How long an MCP task stays fetchable (the gateway's retentionSeconds) and how often to poll it. */
export interface McpTaskTiming {
  ttlMs: number;
  pollIntervalMs: number;
}

/** The MCP status of an A2A state: whether the tool call's answer is there yet, and how it ended. */
export function mcpStatusOf(state: TaskState): McpTask['status'] {
  switch (state) {
    case 'TASK_STATE_COMPLETED':
    case 'TASK_STATE_INPUT_REQUIRED':
    case 'TASK_STATE_AUTH_REQUIRED':
      return 'completed';
    case 'TASK_STATE_FAILED':
    case 'TASK_STATE_REJECTED':
      return 'failed';
    case 'TASK_STATE_CANCELED':
      return 'cancelled';
    default:
      return 'working';
  }
}

/** Whether the tool call's answer is there: the task ended or asks for something. */
export function hasSettled(state: TaskState): boolean {
  return mcpStatusOf(state) !== 'working';
}

/** The text of a message's text parts, for status messages and progress. */
export function textOf(message: Message | undefined): string {
  if (message === undefined) return '';
  return message.parts
    .map((part) => part.text ?? '')
    .filter((text) => text !== '')
    .join('\n');
}

/** ULIDs carry their creation time; a task id of another shape falls back to its status time. */
function createdAtOf(task: Task, fallback: string): string {
  try {
    return new Date(decodeTime(task.id)).toISOString();
  } catch {
    return fallback;
  }
}

export function mcpTaskOf(agent: string, task: Task, timing: McpTaskTiming): McpTask {
  const updated = task.status.timestamp ?? new Date().toISOString();
  const said = textOf(task.status.message);
  return {
    taskId: mcpTaskIdOf(agent, task.id),
    status: mcpStatusOf(task.status.state),
    ttl: timing.ttlMs,
    createdAt: createdAtOf(task, updated),
    lastUpdatedAt: updated,
    pollInterval: timing.pollIntervalMs,
    statusMessage: said === '' ? task.status.state : `${task.status.state}: ${said.slice(0, 1000)}`,
  };
}

/** One A2A part as MCP content: text as text, data as its JSON, a URL as a link, bytes as an image, audio or blob. */
function contentOf(part: Part, index: number): ContentBlock | undefined {
  if (part.text !== undefined) return { type: 'text', text: part.text };
  if (part.data !== undefined) return { type: 'text', text: JSON.stringify(part.data) };
  const mimeType = part.mediaType ?? 'application/octet-stream';
  if (part.url !== undefined) return { type: 'resource_link', uri: part.url, name: part.filename ?? part.url, mimeType };
  if (part.raw !== undefined) {
    if (mimeType.startsWith('image/')) return { type: 'image', data: part.raw, mimeType };
    if (mimeType.startsWith('audio/')) return { type: 'audio', data: part.raw, mimeType };
    return { type: 'resource', resource: { uri: `a2a:part/${index}/${encodeURIComponent(part.filename ?? 'file')}`, blob: part.raw, mimeType } };
  }
  return undefined;
}

function contentOfParts(parts: readonly Part[]): ContentBlock[] {
  return parts.map(contentOf).filter((block): block is ContentBlock => block !== undefined);
}

/** The tool call's result from its settled task: its artifacts, and what the agent said when it did not simply complete. */
export function toolResultOfTask(agent: string, task: Task): CallToolResult {
  const { state } = task.status;
  const content = contentOfParts((task.artifacts ?? []).flatMap((artifact) => artifact.parts));
  const said = textOf(task.status.message);
  const taskId = mcpTaskIdOf(agent, task.id);
  if (isInterrupted(state)) {
    const asks = state === 'TASK_STATE_AUTH_REQUIRED' ? 'needs authorization' : 'needs more input';
    content.push({ type: 'text', text: `${said === '' ? `The agent ${asks}.` : said}\n\n(The agent ${asks}: call this tool again with taskId "${task.id}" and your answer.)` });
  } else if (state !== 'TASK_STATE_COMPLETED') {
    content.push({ type: 'text', text: `The task ${task.id} ended ${state}${said === '' ? '.' : `: ${said}`}` });
  } else if (content.length === 0) {
    content.push({ type: 'text', text: said === '' ? `The task ${task.id} completed without output.` : said });
  }
  return {
    content,
    structuredContent: { taskId: task.id, contextId: task.contextId, state, mcpTaskId: taskId },
    isError: mcpStatusOf(state) === 'failed' || state === 'TASK_STATE_CANCELED',
  };
}

/** The tool call's result when the agent answered with a message and no task. */
export function toolResultOfMessage(message: Message): CallToolResult {
  const content = contentOfParts(message.parts);
  return { content: content.length === 0 ? [{ type: 'text', text: '' }] : content, structuredContent: { contextId: message.contextId ?? null } };
}

/** The result of a call that stopped waiting before its task settled: where it stands, and how to get the rest. */
export function toolResultStillRunning(agent: string, task: Pick<Task, 'id' | 'contextId'>, state: TaskState, waitedMs: number): CallToolResult {
  const mcpTaskId = mcpTaskIdOf(agent, task.id);
  return {
    content: [
      {
        type: 'text',
        text: `The task ${task.id} is still ${state} after ${waitedMs} ms (mcp.maxWaitMs) and goes on. Fetch its result with tasks/result for task "${mcpTaskId}", or call the tool as an MCP task to wait without holding a request.`,
      },
    ],
    structuredContent: { taskId: task.id, contextId: task.contextId, state, mcpTaskId },
  };
}
