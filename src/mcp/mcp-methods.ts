// The MCP methods as the access log and the metrics name them (operation `mcp <method>`): the
// methods of the protocol a client sends, so a label never takes a value a client made up.
const CLIENT_METHODS: ReadonlySet<string> = new Set([
  'initialize',
  'ping',
  'tools/list',
  'tools/call',
  'tasks/get',
  'tasks/result',
  'tasks/list',
  'tasks/cancel',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'resources/subscribe',
  'resources/unsubscribe',
  'prompts/list',
  'prompts/get',
  'completion/complete',
  'logging/setLevel',
  'notifications/initialized',
  'notifications/cancelled',
  'notifications/progress',
  'notifications/roots/list_changed',
  'notifications/tasks/status',
]);

/** `mcp <method>` for a method of the protocol, `mcp other` for anything else, `mcp` when the body names none (a batch, a response). */
export function methodLabelOf(method: unknown): string {
  if (typeof method !== 'string') return 'mcp';
  return CLIENT_METHODS.has(method) ? `mcp ${method}` : 'mcp other';
}
