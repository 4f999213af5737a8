// GET /agents: the agents behind this gateway that the caller may use (its credentials grant
// one of each agent's scopes), with where their cards are. Authenticated like the bindings.
import { mayUseAgent } from '../auth/scopes.ts';
import { anonymousPrincipal, type Principal } from '../auth/principal.ts';
import type { Exchange } from '../bindings/http/exchange.ts';
import { A2AError } from '../protocol/errors.ts';
import type { GatewayAppOptions } from './app.ts';

export interface AgentListing {
  name: string;
  description: string;
  cardUrl: string;
  /** The agent also served at the root URLs. */
  default: boolean;
}

/** GET only: anything else is 405. */
export function checkAgentListMethod(exchange: Exchange): void {
  if (exchange.method === 'GET') return;
  exchange.response.setHeader('Allow', 'GET');
  throw new A2AError('METHOD_NOT_FOUND', 'GET /agents lists the agents; nothing else is served there.', { httpStatus: 405 });
}

/** Answers GET /agents for a caller the gateway's pipeline admitted (header count, credentials from the headers, no body). */
export async function handleAgentList(exchange: Exchange, caller: Principal | undefined, options: Pick<GatewayAppOptions, 'endpoints' | 'root' | 'publicUrl'>): Promise<void> {
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
