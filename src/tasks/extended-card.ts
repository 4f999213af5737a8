// GetExtendedAgentCard (spec 3.1.11): the agent's card for authenticated callers.
import { A2AError } from '../protocol/errors.ts';
import type { AgentCard } from '../protocol/types.ts';
import type { Caller } from './a2a-handler.ts';

export async function extendedAgentCard(caller: Caller): Promise<AgentCard> {
  const { extended } = await caller.endpoint.cards.cards();
  if (extended !== undefined && caller.principal !== undefined) return extended.card;
  throw new A2AError(
    'UNSUPPORTED_OPERATION',
    'This agent has no extended agent card (capabilities.extendedAgentCard is false); the public card at /.well-known/agent-card.json is complete.',
  );
}
