// Every agent's endpoint and cards, built once the ports are bound: the cards name the bound
// port when port 0 asked for any free one, and the gRPC port when it is on.
import { AgentCards } from '../agents/agent-cards.ts';
import { serveAgentCard, type CardSecurity, type ServedCard } from '../../agent-card/card.ts';
import { signAgentCard } from '../../agent-card/sign.ts';
import type { AgentEndpoint } from '../agents/agent-endpoint.ts';
import type { Agent, Agents } from '../agents/agents.ts';
import type { JwtVerifier } from '../auth/jwt/jwt-verifier.ts';
import type { GatewayKeys } from '../auth/keys/gateway-keys.ts';
import { agentTenantOf } from '../bindings/grpc/call-metadata.ts';
import type { Logger } from '../logging/logger.ts';
import { SCHEDULES_EXTENSION_URI } from '../extensions/schedules.ts';
import { SUBSCRIPTIONS_EXTENSION_URI } from '../extensions/subscriptions.ts';

export interface GatewayEndpoints {
  /** The default agent at the root URL. */
  root: AgentEndpoint;
  /** Every agent, by name (its cards at /agents/<name>/…). */
  endpoints: Map<string, AgentEndpoint>;
  /** The root card (undefined while a downstream agent it describes is unreachable). */
  rootCard: ServedCard | undefined;
  /** A new endpoint at /agents/<name> for an agent added or replaced while running (admin API). */
  endpointOf(agent: Agent): AgentEndpoint;
}

export interface CardSetup {
  agents: Agents;
  publicUrl: string;
  /** host:port the cards declare for gRPC, when it is on. */
  grpcAddress: string | undefined;
  /** What the cards declare of authentication (undefined: none); read again each time a card is built. */
  security: CardSecurity | undefined;
  keys: GatewayKeys;
  pushNotifications: boolean;
  schedules: boolean;
  logger: Logger;
}

/**
 * What the cards declare of authentication: bearer tokens, partner signatures when partners are
 * registered, and an OpenID Connect scheme for each issuer configured by its URL alone. The
 * issuers are read when a card is built, so a card built after they changed declares the new set.
 */
export function cardSecurityOf(signedRequests: boolean, jwt: JwtVerifier | undefined, apiKeys = false): CardSecurity {
  return {
    signedRequests,
    apiKeys,
    get openIdConnect() {
      return jwt?.openIdConnectIssuers() ?? [];
    },
  };
}

export async function buildEndpoints(setup: CardSetup): Promise<GatewayEndpoints> {
  const { agents, publicUrl, grpcAddress, security, keys, logger } = setup;
  const finish = async (built: ServedCard['card']): Promise<ServedCard> => {
    built.capabilities.pushNotifications = setup.pushNotifications;
    // The schedules extension is declared on every card by the registry; without schedules it goes.
    if (!setup.schedules && built.capabilities.extensions !== undefined) {
      built.capabilities.extensions = built.capabilities.extensions.filter((extension) => extension.uri !== SCHEDULES_EXTENSION_URI);
    }
    // Subscriptions are push deliveries: without push notifications the extension goes too.
    if (!setup.pushNotifications && built.capabilities.extensions !== undefined) {
      built.capabilities.extensions = built.capabilities.extensions.filter((extension) => extension.uri !== SUBSCRIPTIONS_EXTENSION_URI);
    }
    if (keys.cardSigningKey !== undefined) {
      built.signatures = [await signAgentCard(built, { privateJwk: keys.cardSigningKey }, { jku: `${publicUrl}/.well-known/jwks.json` })];
    }
    return serveAgentCard(built);
  };
  const endpointAt = (agent: Agent, basePath: string): AgentEndpoint => {
    const { name } = agent;
    // On gRPC (one port for all agents) an agent other than the root one is named by the tenant its interface declares.
    const grpc = grpcAddress === undefined ? undefined : { address: grpcAddress, ...(basePath === '' ? {} : { tenant: agentTenantOf(name) }) };
    return { agent, basePath, cards: new AgentCards({ agent, baseUrl: `${publicUrl}${basePath}`, security, finish, logger, grpc }) };
  };
  const endpointOf = (agent: Agent): AgentEndpoint => endpointAt(agent, `/agents/${encodeURIComponent(agent.name)}`);
  const endpoints = new Map(agents.list().map((agent) => [agent.name, endpointOf(agent)]));
  const root = endpointAt(agents.default, '');
  let rootCard: ServedCard | undefined;
  // Every agent's card is built once now, so a broken configuration shows at start; one whose
  // skills come from a downstream agent that cannot be reached yet is retried on first request.
  for (const endpoint of [root, ...endpoints.values()]) {
    const built = await endpoint.cards.cards().catch((error: Error) => {
      if (endpoint.agent.settings.card.skills !== 'from downstream') throw error;
      logger.warn('the card of an agent could not be built yet; retried on the first request for it', { agent: endpoint.agent.name, error: error.message });
      return undefined;
    });
    if (endpoint === root) rootCard = built?.card;
  }
  return { root, endpoints, rootCard, endpointOf };
}
