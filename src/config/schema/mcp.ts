// The MCP face (docs/mcp.md): every agent a caller may use as an MCP tool at /mcp.
import { z } from 'zod';
import { booleanish, positiveMs } from './values.ts';

export const mcpSchema = z.strictObject({
  /**
   * Serve MCP (Streamable HTTP) at /mcp and the protected resource metadata at
   * /.well-known/oauth-protected-resource. On by default: it is one more face on the same
   * authenticated, rate-limited pipeline, and reveals nothing GET /agents does not.
   */
  enabled: booleanish.default(true),
  /** Most tools one tools/list page holds; more agents are listed on further pages (nextCursor). */
  maxToolsPerPage: z.coerce.number().int().min(1).max(1000).default(100),
  /** Most tasks one tasks/list page holds. */
  maxTasksPerPage: z.coerce.number().int().min(1).max(100).default(50),
  /**
   * Longest a plain tools/call, or a tasks/result, waits for its task to settle. Past it the task
   * goes on: tools/call answers with where it stands and its MCP task id, tasks/result with a
   * request timeout (-32001) to call again.
   */
  maxWaitMs: positiveMs.default(300_000),
  /** How often a client polling an MCP task with tasks/get is asked to look (its pollInterval). */
  pollIntervalMs: positiveMs.default(1_000),
});

export type McpConfig = z.infer<typeof mcpSchema>;
