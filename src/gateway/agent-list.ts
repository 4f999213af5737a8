// GET /agents: the agents behind this gateway that the caller may use (its credentials grant
// one of each agent's scopes), with where their cards are. Authenticated like the bindings.
import type { AgentEndpoint } from '../agents/agent-endpoint.ts';
import { mayUseAgent } from '../auth/scopes.ts';
import { anonymousPrincipal, type Principal } from '../auth/principal.ts';
import type { Exchange } from '../bindings/http/exchange.ts';
import { A2AError } from '../protocol/errors.ts';

export interface AgentListing {
  name: string;
  description: string;
  cardUrl: string;
  /** The agent also served at the root URLs. */
  default: boolean;
}

/** What the list reads: the gateway app's options of the same names. */
export interface AgentListOptions {
  endpoints: ReadonlyMap<string, AgentEndpoint>;
  /** The default agent, also served at the root URLs. */
  root: AgentEndpoint;
  /** Where clients reach this gateway: the card URLs start with it. */
  publicUrl: string;
}

/** GET only: anything else is 405. */
export function checkAgentListMethod(exchange: Exchange): void {
  if (exchange.method === 'GET') return;
  exchange.response.setHeader('Allow', 'GET');
  throw new A2AError('METHOD_NOT_FOUND', 'GET /agents lists the agents; nothing else is served there.', { httpStatus: 405 });
}

/** Answers GET /agents for a caller the gateway's pipeline admitted (header count, credentials from the headers, no body). */
export async function handleAgentList(exchange: Exchange, caller: Principal | undefined, options: AgentListOptions): Promise<void> {
  const principal = caller ?? anonymousPrincipal(undefined);
  const agents: AgentListing[] = [];
  for (const endpoint of options.endpoints.values()) {
    const { settings } = endpoint.agent;
    if (!mayUseAgent(principal, settings.scopes)) continue;
    const { card } = await endpoint.cards.cards().catch(() => ({ card: undefined }));
    agents.push({
      name: settings.name,
      description: card?.card.description ?? settings.card.description ?? settings.card.defaultDescription,
      cardUrl: `${options.publicUrl}${endpoint.basePath}/.well-known/agent-card.json`,
      default: settings.name === options.root.agent.name,
    });
  }
  exchange.sendJson(200, { agents });
}
