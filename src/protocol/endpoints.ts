// Where the bindings listen, below an agent's base URL; the agent card advertises
// `<baseUrl><path>` for each, so the card and the router read the same constants.

/** The JSON-RPC endpoint. */
export const JSONRPC_PATH = '/a2a/jsonrpc';
/** Where the HTTP+JSON binding is mounted; its routes are below it. */
export const REST_BASE_PATH = '/a2a/rest';
