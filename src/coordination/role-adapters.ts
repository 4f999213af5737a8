// Which adapter runs a task: the configured one for top-level tasks, the role's for a
// sub-agent's assignment. Every worker loads the same set, so any worker can run any task.
import { loadAdapter } from '../../adapters/module-loader.ts';
import type { Adapter } from '../../adapters/types.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { JsonObject } from '../protocol/types.ts';

export class RoleAdapters {
  private constructor(
    readonly main: Adapter,
    private readonly roles: Map<string, Adapter>,
    /** Runs roles that are not configured. */
    private readonly fallback: Adapter,
  ) {}

  /** Loads every configured role's adapter at start, so a bad module fails the start, not a turn. */
  static async load(config: GatewayConfig, main: Adapter, baseDir: string): Promise<RoleAdapters> {
    const roles = new Map<string, Adapter>();
    for (const [role, settings] of Object.entries(config.delegation.roles)) {
      roles.set(role, await loadAdapter(settings.adapter, settings.adapterOptions as JsonObject, baseDir));
    }
    // An unlisted role runs on the demo adapter; with the demo as the main adapter it shares its options.
    const fallback = config.adapter === 'demo' ? main : await loadAdapter('demo', {}, baseDir);
    return new RoleAdapters(main, roles, fallback);
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
