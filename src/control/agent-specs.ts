// An agent written through the admin API: the configuration file's own schema for one agent
// (agents.<name>), plus what only the API needs to refuse. The adapter must be one the operator
// allows (storedAgentAdapters): a module path would let an admin choose code for every worker to
// run, so it is refused unless the configuration lists that very path. Options that make the
// process read a file or an environment variable (the built-in adapters' *File and *Env
// options, the demo's ledgerFile) are refused too: through the API they would let an admin send
// the gateway's own secrets to a backend of its choosing. An agent of the configuration file
// keeps its name: it is read-only here.
import { agentSchema, type AgentConfig } from '../config/schema/agents.ts';
import { conflict, invalidBody, invalidField } from './admin-errors.ts';

export interface AgentSpecContext {
  /** The agents of the configuration file (read-only through the API). */
  configuredNames: readonly string[];
  /** storedAgentAdapters: the adapters an agent from the API may use. */
  allowedAdapters: readonly string[];
}

/** Option keys that name a file or an environment variable to read, at any depth. */
const SOURCE_OPTION = /(File|Env|Files)$/;

function sourceOptionPath(value: unknown, path: string[]): string[] | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  for (const [key, inner] of Object.entries(value)) {
    if (SOURCE_OPTION.test(key)) return [...path, key];
    const found = sourceOptionPath(inner, [...path, key]);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * An agent is the platform's: GET shows it with `tenant: ""`, so a body read back (admin export,
 * then apply) may say so; any other tenant is refused, naming the field.
 */
function withoutPlatformTenant(body: unknown): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body) || !('tenant' in body)) return body;
  const { tenant, ...rest } = body as Record<string, unknown>;
  if (tenant !== '') throw invalidField('tenant', 'must be left out (or ""): an agent is the whole platform\'s, not a tenant\'s');
  return rest;
}

export function agentSpec(name: string, body: unknown, context: AgentSpecContext): AgentConfig {
  const parsed = agentSchema.safeParse(withoutPlatformTenant(body));
  if (!parsed.success) throw invalidBody(`Agent "${name}"`, parsed.error);
  const agent = parsed.data;
  if (!context.allowedAdapters.includes(agent.adapter)) {
    const allowed = context.allowedAdapters.length === 0 ? 'none (storedAgentAdapters is empty)' : context.allowedAdapters.map((a) => `"${a}"`).join(', ');
    throw invalidField('adapter', `"${agent.adapter}" is not an adapter agents written through the admin API may use; allowed: ${allowed} (storedAgentAdapters in the configuration)`);
  }
  const source = sourceOptionPath(agent.adapterOptions, ['adapterOptions']);
  if (source !== undefined) {
    throw invalidField(source.join('.'), 'makes the gateway read a file or an environment variable, which an agent written through the admin API may not; define this agent in the configuration file instead');
  }
  if (context.configuredNames.includes(name)) {
    throw conflict(`Agent "${name}" is defined in the configuration file, which is read-only through the API: change it there.`);
  }
  return agent;
}
