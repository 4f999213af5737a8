// GET /agents: the agents behind this gateway that the caller may use (its credentials grant
// one of each agent's scopes), with where their cards are. Authenticated like the bindings.
import type { AgentEndpoint } from '../agents/agent-endpoint.ts';
import { mayUseAgent } from '../auth/scopes.ts';
import { anonymousPrincipal } from '../auth/principal.ts';
import { restErrorBody } from '../bindings/rest/index.ts';
import { toA2AError } from '../bindings/errors.ts';
import { ClientGoneError, type Exchange } from '../bindings/http/exchange.ts';
import { admitRequest, type RequestEdge } from '../bindings/http/pipeline.ts';
import type { Logger } from '../logging/logger.ts';
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
  edge: RequestEdge;
  endpoints: ReadonlyMap<string, AgentEndpoint>;
  /** The default agent, also served at the root URLs. */
  root: AgentEndpoint;
  /** Where clients reach this gateway: the card URLs start with it. */
  publicUrl: string;
  logger: Logger;
}

export async function handleAgentList(exchange: Exchange, options: AgentListOptions): Promise<void> {
  try {
    if (exchange.method !== 'GET') {
      exchange.response.setHeader('Allow', 'GET');
      throw new A2AError('METHOD_NOT_FOUND', 'GET /agents lists the agents; nothing else is served there.', { httpStatus: 405 });
    }
    // The same steps as the bindings: header count, credentials from the headers (no body).
    const admitted = await admitRequest(exchange, options.edge, { content: 'json-if-body', readsBody: false, checkVersion: false });
    const principal = admitted.principal ?? anonymousPrincipal(undefined);
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
  } catch (error) {
    if (error instanceof ClientGoneError) return;
    const a2a = toA2AError(error);
    if (a2a.kind === 'INTERNAL') options.logger.error('GET /agents failed', { error: String((error as Error).stack ?? error) });
    exchange.sendJson(a2a.httpStatus ?? a2a.mapping.httpStatus, restErrorBody(a2a), a2a.httpHeaders());
  }
}
