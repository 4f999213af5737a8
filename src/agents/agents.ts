// The agents one process serves, loaded: each agent's settings, its adapter and the role
// adapters its sub-agents run on. Gateways use them for cards, limits and input policies;
// workers to run turns. The configured ones are loaded at start, so a bad adapter fails the
// start; agents written through the admin API are added, replaced and removed while the process
// runs (src/control/live-agents.ts). A removed agent is kept retired for the turns still queued
// for it: a worker fails each with the reason instead of dropping it (retiredAgentOf).
import { loadAdapter } from '../../adapters/module-loader.ts';
import type { Adapter } from '../../adapters/types.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { environmentOf, RoleAdapters } from './role-adapters.ts';
import { callerTokensFor } from '../auth/caller-identity.ts';
import { loadCallerTokenSigner } from '../auth/caller-identity-key.ts';
import type { TaskVersions } from '../store/task-store.ts';
import type { ExtensionDeclaration } from '../extensions/definition.ts';
import { extensionsOf } from '../extensions/agent-extensions.ts';
import { deliveryGuaranteesDeclaration } from '../extensions/delivery-guarantees.ts';
import { GATEWAY_VERSION } from '../version.ts';
import { resolveAgent, resolveAgents, type AgentSettings } from './agent-settings.ts';
import type { AgentConfig } from '../config/schema.ts';
import type { CallerTokenSigner } from '../auth/caller-identity.ts';
import type { SharedRoles } from './role-adapters.ts';

export interface Agent {
  readonly name: string;
  readonly settings: AgentSettings;
  readonly adapter: Adapter;
  readonly roles: RoleAdapters;
  /** The extensions the agent's card declares: the gateway's and its adapter's (spec 4.6). */
  readonly extensions: readonly ExtensionDeclaration[];
  /** What a task of this agent records it started under (invariant 9), for a given role. */
  versionsFor(role?: string): TaskVersions;
}

/** What loading one more agent needs: kept from the start. */
interface AgentLoading {
  config: GatewayConfig;
  baseDir: string;
  signer: CallerTokenSigner | undefined;
  shared: SharedRoles;
}

export class Agents {
  private readonly byName: Map<string, Agent>;
  /** Agents removed while running: their queued turns still find them, to be failed with the reason. */
  private readonly retired = new Map<string, Agent>();

  private constructor(
    agents: Agent[],
    readonly defaultName: string,
    private readonly loading?: AgentLoading,
  ) {
    this.byName = new Map(agents.map((agent) => [agent.name, agent]));
  }

  /** Loads every configured agent's adapter; the error names the agent whose adapter failed. */
  static async load(config: GatewayConfig, baseDir: string): Promise<Agents> {
    const resolved = resolveAgents(config);
    // Workers sign with it; the gateway only needs it to exist (it publishes the public half).
    const signer = await loadCallerTokenSigner(config, baseDir);
    const shared = await RoleAdapters.loadShared(config, baseDir, signer);
    const agents: Agent[] = [];
    for (const settings of resolved.agents) {
      let adapter: Adapter;
      try {
        adapter = await loadAdapter(settings.adapter, settings.adapterOptions, baseDir, environmentOf(settings.backendLimits, callerTokensFor(settings.callerIdentity, signer)));
      } catch (error) {
        const which = resolved.agents.length === 1 && config.agents === undefined ? '' : ` of agent "${settings.name}"`;
        throw new Error(`could not load adapter "${settings.adapter}"${which}: ${(error as Error).message}`, { cause: error });
      }
      agents.push(Agents.agentOf(settings, adapter, RoleAdapters.forAgent(adapter, shared), config));
    }
    return new Agents(agents, resolved.defaultAgent, { config, baseDir, signer, shared });
  }

  /** Loads an agent defined outside the configuration file (not yet added: see put()). */
  async loadDefined(name: string, definition: AgentConfig): Promise<Agent> {
    const loading = this.loading;
    if (loading === undefined) throw new Error('these agents were not loaded from a configuration, so none can be added');
    const { config, baseDir, signer, shared } = loading;
    // Resolved like a named agent of a configuration with agents (never the default one).
    const settings = resolveAgent({ ...config, agents: config.agents ?? {} }, name, definition, false);
    const adapter = await loadAdapter(settings.adapter, settings.adapterOptions, baseDir, environmentOf(settings.backendLimits, callerTokensFor(settings.callerIdentity, signer)));
    return Agents.agentOf(settings, adapter, RoleAdapters.forAgent(adapter, shared), config);
  }

  /** Adds or replaces an agent: requests and turns from now on use it. */
  put(agent: Agent): void {
    this.retired.delete(agent.name);
    this.byName.set(agent.name, agent);
  }

  /** Removes an agent; the default one stays. Its queued turns fail naming `reason`. */
  remove(name: string, reason: string): void {
    const agent = this.byName.get(name);
    if (agent === undefined || name === this.defaultName) return;
    this.byName.delete(name);
    this.retired.set(name, retiredAgentOf(agent, reason));
  }

  /** The agent a turn runs on: the live one, else the retired one that fails it with the reason. */
  forTurn(name: string): Agent | undefined {
    return this.byName.get(name) ?? this.retired.get(name);
  }

  /** One agent around an adapter already loaded (tests and tools). */
  static single(config: GatewayConfig, adapter: Adapter): Agents {
    const settings = resolveAgents({ ...config, agents: undefined, defaultAgent: undefined }).agents[0] as AgentSettings;
    return new Agents([Agents.agentOf(settings, adapter, RoleAdapters.single(adapter), config)], settings.name);
  }

  static agentOf(settings: AgentSettings, adapter: Adapter, roles: RoleAdapters, config: GatewayConfig): Agent {
    return {
      name: settings.name,
      settings,
      adapter,
      roles,
      extensions: extensionsOf(adapter, [deliveryGuaranteesDeclaration(config)]),
      versionsFor: (role) => ({ gateway: GATEWAY_VERSION, adapter: roles.versionOf(role), card: settings.card.version }),
    };
  }

  get(name: string): Agent | undefined {
    return this.byName.get(name);
  }

  get default(): Agent {
    return this.byName.get(this.defaultName) as Agent;
  }

  list(): Agent[] {
    return [...this.byName.values()];
  }
}

/**
 * A removed agent as its still-queued turns see it: each fails with the reason of the removal
 * instead of being dropped. A turn already running holds the agent it started with and finishes.
 */
function retiredAgentOf(agent: Agent, reason: string): Agent {
  const adapter: Adapter = { name: agent.adapter.name, version: agent.adapter.version, skills: [], run: () => Promise.resolve({ state: 'failed', message: reason }) };
  return { ...agent, adapter, roles: RoleAdapters.single(adapter) };
}
