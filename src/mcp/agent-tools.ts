// Each agent a caller may use, as an MCP tool: named after the agent (its URL segment, already
// a valid tool name), described by its card and skills, with one input schema for all.
//
// Why one schema: an A2A agent takes a message, whatever the skill; its card declares skills as
// prose with examples and media types, never as argument schemas. A tool schema per skill would
// invent structure the agent does not have. The skills go into the description instead, where
// a model choosing and phrasing a call reads them. contextId and taskId carry a conversation on,
// as they do in A2A.
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { McpError, ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { AgentEndpoint } from '../agents/agent-endpoint.ts';
import { mayUseAgent } from '../auth/scopes.ts';
import type { Principal } from '../auth/principal.ts';
import type { AgentCard } from '../protocol/types.ts';
import { decodeCursor, encodeCursor } from './task-ids.ts';

/** Longest description a tool gets: a card with hundreds of skills must not make tools/list unbounded. */
const MAX_DESCRIPTION_CHARS = 4000;
const MAX_ID_CHARS = 256;

export const TOOL_INPUT_SCHEMA: Tool['inputSchema'] = {
  type: 'object',
  properties: {
    message: { type: 'string', minLength: 1, description: 'What to ask of the agent, in words (the text of the A2A message).' },
    contextId: { type: 'string', maxLength: MAX_ID_CHARS, description: 'Continue the conversation of an earlier result (its structuredContent.contextId).' },
    taskId: { type: 'string', maxLength: MAX_ID_CHARS, description: 'Answer a task that asked for more input (its structuredContent.taskId).' },
  },
  required: ['message'],
  additionalProperties: false,
};

const toolArgumentsSchema = z.strictObject({
  message: z.string().min(1, 'message must not be empty'),
  contextId: z.string().min(1).max(MAX_ID_CHARS).optional(),
  taskId: z.string().min(1).max(MAX_ID_CHARS).optional(),
});
export type ToolArguments = z.infer<typeof toolArgumentsSchema>;

/** The arguments of a tools/call, or InvalidParams naming what is wrong. */
export function parseToolArguments(args: unknown): ToolArguments {
  const parsed = toolArgumentsSchema.safeParse(args ?? {});
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => `${issue.path.join('.') || 'arguments'}: ${issue.message}`).join('; ');
  throw new McpError(ErrorCode.InvalidParams, `Invalid arguments: ${problems}. The tool takes { message: string, contextId?: string, taskId?: string }.`);
}

function descriptionOf(card: AgentCard | undefined, fallback: string): string {
  const lines = [card?.description ?? fallback];
  const skills = card?.skills ?? [];
  if (skills.length > 0) {
    lines.push('', 'Skills (say which in the message, as the examples do):');
    for (const skill of skills) {
      const example = skill.examples?.[0];
      lines.push(`- ${skill.name} (${skill.id}): ${skill.description}${example === undefined ? '' : ` Example: "${example}"`}`);
    }
  }
  const text = lines.join('\n');
  return text.length <= MAX_DESCRIPTION_CHARS ? text : `${text.slice(0, MAX_DESCRIPTION_CHARS - 1)}…`;
}

async function toolOf(endpoint: AgentEndpoint): Promise<Tool> {
  const { settings, adapter } = endpoint.agent;
  const served = await endpoint.cards.cards().catch(() => undefined);
  const card = served?.card.card;
  return {
    name: settings.name,
    title: card?.name ?? settings.name,
    description: descriptionOf(card, settings.card.description ?? settings.card.defaultDescription),
    inputSchema: TOOL_INPUT_SCHEMA,
    // An agent that may answer with a bare message has no task to hand out.
    execution: { taskSupport: adapter.directMessages === true ? 'forbidden' : 'optional' },
    annotations: { title: card?.name ?? settings.name, readOnlyHint: false, destructiveHint: false, openWorldHint: true },
  };
}

/** One page of the tools a caller may use, in the order the agents are configured; the cursor names the next page's first agent. */
export async function listAgentTools(
  endpoints: ReadonlyMap<string, AgentEndpoint>,
  principal: Principal,
  cursor: string | undefined,
  pageSize: number,
): Promise<{ tools: Tool[]; nextCursor?: string }> {
  const from = decodeCursor(cursor)?.agent;
  const usable = [...endpoints.values()].filter((endpoint) => mayUseAgent(principal, endpoint.agent.settings.scopes));
  const start = from === undefined ? 0 : usable.findIndex((endpoint) => endpoint.agent.settings.name === from);
  // An agent the caller no longer may use (or one gone since): the listing ends there rather than starting over.
  if (start < 0) return { tools: [] };
  const page = usable.slice(start, start + pageSize);
  const next = usable[start + pageSize];
  const tools = await Promise.all(page.map(toolOf));
  return next === undefined ? { tools } : { tools, nextCursor: encodeCursor({ agent: next.agent.settings.name }) };
}
