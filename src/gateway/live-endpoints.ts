// The gateway's side of agents written through the admin API: an added or replaced agent gets a
// new endpoint at /agents/<name> (its cards built from the new definition), a removed one's
// endpoint goes, so its card and its bindings answer 404 and no new message reaches it.
import type { AgentEndpoint } from '../agents/agent-endpoint.ts';
import type { Agent } from '../agents/agents.ts';
import type { LiveAgents } from '../control/live-agents.ts';
import type { Logger } from '../logging/logger.ts';

export function keepEndpointsLive(live: LiveAgents, endpoints: Map<string, AgentEndpoint>, endpointOf: (agent: Agent) => AgentEndpoint, logger: Logger): void {
  live.subscribe({
    async added(agent) {
      const endpoint = endpointOf(agent);
      // Built before it is served, so a broken card shows in the log, not as a failing request.
      await endpoint.cards.cards().catch((error: Error) => logger.warn('the card of an agent could not be built yet; retried on the first request for it', { agent: agent.name, error: error.message }));
      endpoints.set(agent.name, endpoint);
    },
    removed(name) {
      endpoints.delete(name);
    },
  });
}
