// The agents one process serves, loaded: each agent's settings, its adapter and the role
// adapters its sub-agents run on. Gateways use them for cards, limits and input policies;
// workers to run turns. Loaded once at start, so a bad adapter fails the start.
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
import { resolveAgents, type AgentSettings } from './agent-settings.ts';

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

export class Agents {
  private readonly byName: ReadonlyMap<string, Agent>;

  private constructor(
    agents: Agent[],
    readonly defaultName: string,
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
    return new Agents(agents, resolved.defaultAgent);
  }

  /** One agent around an adapter already loaded (tests and tools). */
  static single(config: GatewayConfig, adapter: Adapter): Agents {
    const settings = resolveAgents({ ...config, agents: undefined, defaultAgent: undefined }).agents[0] as AgentSettings;
    return new Agents([Agents.agentOf(settings, adapter, RoleAdapters.single(adapter), config)], settings.name);
  }

  private static agentOf(settings: AgentSettings, adapter: Adapter, roles: RoleAdapters, config: GatewayConfig): Agent {
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
