import type { AgentCards } from './agent-cards.ts';
import type { Agent } from './agents.ts';

/** One agent as a URL space serves it: its settings and adapter, its cards, where its URLs start. */
export interface AgentEndpoint {
  agent: Agent;
  /** '' for the default agent's root URLs, `/agents/<name>` for each agent's own. */
  basePath: string;
  cards: AgentCards;
}
