// An MCP task is an A2A task: its id is the agent's name and the A2A task id, so any gateway
// finds it again (in the caller's own tasks of that agent) after the client reconnected.
// Agent names hold no ':' (AGENT_NAME_PATTERN), so the first one splits the two. Cursors of
// the paginated lists are opaque to clients: base64url JSON, checked when they come back.
import { McpError, ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const SEPARATOR = ':';

export function mcpTaskIdOf(agent: string, taskId: string): string {
  return `${agent}${SEPARATOR}${taskId}`;
}

export function parseMcpTaskId(mcpTaskId: string): { agent: string; taskId: string } {
  const at = mcpTaskId.indexOf(SEPARATOR);
  if (at <= 0 || at === mcpTaskId.length - 1 || mcpTaskId.length > 512) {
    throw new McpError(ErrorCode.InvalidParams, `"${mcpTaskId.slice(0, 100)}" is not a task id of this server: they read <agent>${SEPARATOR}<A2A task id>, as tools/call answered.`);
  }
  return { agent: mcpTaskId.slice(0, at), taskId: mcpTaskId.slice(at + 1) };
}

/** A paginated list's position: an agent's name (tools/list, tasks/list) and that agent's own page token. */
const cursorSchema = z.strictObject({ agent: z.string().max(64), page: z.string().max(1024).optional() });
export type ListCursor = z.infer<typeof cursorSchema>;

export function encodeCursor(cursor: ListCursor): string {
  return Buffer.from(JSON.stringify(cursor)).toString('base64url');
}

export function decodeCursor(cursor: string | undefined): ListCursor | undefined {
  if (cursor === undefined) return undefined;
  try {
    if (cursor.length > 2048) throw new Error('too long');
    return cursorSchema.parse(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')));
  } catch {
    throw new McpError(ErrorCode.InvalidParams, 'The cursor is not one this server gave: send the nextCursor of the previous page unchanged, or none to start over.');
  }
}
