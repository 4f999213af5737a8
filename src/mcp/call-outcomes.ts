// How each tools/call ended, for a2a_mcp_tool_calls_total: a bounded set of outcomes (the A2A
// state the call answered with, or what happened instead), never a tool name or task id.
import type { CallToolResult, CreateTaskResult } from '@modelcontextprotocol/sdk/types.js';
import { TASK_STATES, type TaskState } from '../protocol/types.ts';
import { mcpToolCalls } from '../telemetry/metrics.ts';

const STATE_OUTCOMES: ReadonlyMap<string, string> = new Map(TASK_STATES.map((state: TaskState) => [state, state.replace(/^TASK_STATE_/, '').toLowerCase()]));

/**
 * `completed`, `input_required`, `failed`, `canceled`, … (the task's state when the call
 * answered; `working` or `submitted` past mcp.maxWaitMs), `task` (answered at once with an MCP
 * task), `message` (the agent's direct reply), `refused` (an error), `abandoned` (the client went away).
 */
export function toolCallOutcome(result: CallToolResult | CreateTaskResult | undefined, abandoned: boolean): string {
  if (result === undefined) return abandoned ? 'abandoned' : 'refused';
  if ('task' in result) return 'task';
  const state = (result.structuredContent as { state?: unknown } | undefined)?.state;
  if (state === undefined) return 'message';
  return (typeof state === 'string' ? STATE_OUTCOMES.get(state) : undefined) ?? 'other';
}

export function countToolCall(result: CallToolResult | CreateTaskResult | undefined, abandoned: boolean): void {
  mcpToolCalls.inc({ outcome: toolCallOutcome(result, abandoned) });
}
