// Which surface of the gateway a request is for, decided once from its canonical path
// (request-path.ts): an agent's card or one of its two A2A bindings (at /agents/<name>/…, and
// the default agent's at the root), the agent list, or one of the root routes Hono serves
// (health, keys, admin, console). Every later step of the pipeline (app.ts) reads this decision;
// none parses the path again.
import type { AgentEndpoint } from '../agents/agent-endpoint.ts';
import { JSONRPC_PATH, REST_BASE_PATH } from '../protocol/endpoints.ts';

export const AGENTS_PATH = '/agents';
export const CARD_PATH = '/.well-known/agent-card.json';

export type Surface =
  | { kind: 'jsonrpc' | 'http+json' | 'card'; endpoint: AgentEndpoint }
  /** A path below a known agent that none of its surfaces serves. */
  | { kind: 'agent-path'; endpoint: AgentEndpoint }
  | { kind: 'unknown-agent'; name: string }
  | { kind: 'agent-list' }
  /** A root path Hono's routes serve (or answer 404 for): the default agent's URL space. */
  | { kind: 'root'; endpoint: AgentEndpoint };

export interface AgentDirectory {
  /** The default agent at the root URLs. */
  root: AgentEndpoint;
  /** Every agent at /agents/<name>/…, by name. */
  endpoints: ReadonlyMap<string, AgentEndpoint>;
}

/** The surface a canonical path belongs to. */
export function surfaceOf(path: string, agents: AgentDirectory): Surface {
  if (path === AGENTS_PATH || path === `${AGENTS_PATH}/`) return { kind: 'agent-list' };
  let endpoint = agents.root;
  let rest = path;
  if (path.startsWith(`${AGENTS_PATH}/`)) {
    const end = path.indexOf('/', AGENTS_PATH.length + 1);
    const segment = path.slice(AGENTS_PATH.length + 1, end < 0 ? undefined : end);
    let name: string;
    try {
      name = decodeURIComponent(segment);
    } catch {
      return { kind: 'unknown-agent', name: segment };
    }
    const named = agents.endpoints.get(name);
    if (named === undefined) return { kind: 'unknown-agent', name };
    endpoint = named;
    rest = end < 0 ? '' : path.slice(end);
  }
  if (rest === JSONRPC_PATH || rest === `${JSONRPC_PATH}/`) return { kind: 'jsonrpc', endpoint };
  if (rest === REST_BASE_PATH || rest.startsWith(`${REST_BASE_PATH}/`)) return { kind: 'http+json', endpoint };
  if (rest === CARD_PATH) return { kind: 'card', endpoint };
  return endpoint === agents.root ? { kind: 'root', endpoint } : { kind: 'agent-path', endpoint };
}

/** The agent the access log names: the agent whose URL space the path is in (/agents itself is the root's). */
export function agentOf(surface: Surface, path: string, agents: AgentDirectory): string | undefined {
  if (surface.kind === 'agent-list') return path === AGENTS_PATH ? agents.root.agent.name : undefined;
  return 'endpoint' in surface ? surface.endpoint.agent.name : undefined;
}
