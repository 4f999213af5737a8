// Which adapter runs a task: the agent's own for its top-level tasks, the role's for a
// sub-agent's assignment. Every worker loads the same set, so any worker can run any task.
import { loadAdapter } from '../../adapters/module-loader.ts';
import type { Adapter, AdapterEnvironment, BackendLimits, CallerTokens } from '../../adapters/types.ts';
import { callerTokensFor, type CallerTokenSigner } from '../auth/caller-identity.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { JsonObject } from '../protocol/types.ts';

/** The role adapters every agent shares (loaded once per process). */
export interface SharedRoles {
  roles: ReadonlyMap<string, Adapter>;
  /** Runs roles that are not configured. */
  demo: Adapter;
}

/** An adapter's environment: its backend's bounds, and its caller tokens when its backend gets them. */
export function environmentOf(backendLimits: BackendLimits, callerIdentity: CallerTokens | undefined): AdapterEnvironment {
  return callerIdentity === undefined ? { backendLimits } : { backendLimits, callerIdentity };
}

export class RoleAdapters {
  private constructor(
    readonly main: Adapter,
    private readonly roles: ReadonlyMap<string, Adapter>,
    private readonly fallback: Adapter,
  ) {}

  /** Loads every configured role's adapter at start, so a bad module fails the start, not a turn. */
  static async loadShared(config: GatewayConfig, baseDir: string, signer?: CallerTokenSigner): Promise<SharedRoles> {
    // Roles serve every agent, so their backends are held to the gateway-wide bounds.
    const environment: AdapterEnvironment = { backendLimits: config.backendLimits };
    const roles = new Map<string, Adapter>();
    for (const [role, settings] of Object.entries(config.delegation.roles)) {
      const own = environmentOf(config.backendLimits, callerTokensFor(settings.callerIdentity, signer));
      roles.set(role, await loadAdapter(settings.adapter, settings.adapterOptions as JsonObject, baseDir, own));
    }
    return { roles, demo: await loadAdapter('demo', {}, baseDir, environment) };
  }

  /** An agent's adapters: its own, and the shared roles. An unlisted role runs on the demo adapter (the agent's own, options and all, when it is the demo). */
  static forAgent(main: Adapter, shared: SharedRoles): RoleAdapters {
    return new RoleAdapters(main, shared.roles, main.name === 'demo' ? main : shared.demo);
  }

  /** Only the main adapter (tests and tools that run no sub-agents). */
  static single(main: Adapter): RoleAdapters {
    return new RoleAdapters(main, new Map(), main);
  }

  adapterFor(role: string | undefined): Adapter {
    if (role === undefined || role === '') return this.main;
    return this.roles.get(role) ?? this.fallback;
  }

  /** "<name>@<version>" recorded on tasks the role runs. */
  versionOf(role: string | undefined): string {
    const adapter = this.adapterFor(role);
    return `${adapter.name}@${adapter.version}`;
  }
}
