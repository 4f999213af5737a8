// The agents a configuration describes, with every default applied: the one place that knows
// how the top-level settings (adapter, agentName, limits…) fill in what an agent leaves out,
// and which agent answers at the root URLs.
import { callerIdentitySchema, type CallerIdentitySettings } from '../config/schema/caller-identity.ts';
import { agentSchema } from '../config/schema/agents.ts';
import { AGENT_NAME_PATTERN, configSchema, type AgentConfig, type GatewayConfig, type InputPolicy } from '../config/schema.ts';
import type { AgentSkill, JsonObject } from '../protocol/types.ts';
import type { BackendLimits } from '../../adapters/types.ts';

/** The name of the one agent a configuration without `agents` describes. */
export const IMPLICIT_AGENT = 'default';

export interface AgentLimits {
  maxActiveTasks: number;
  maxQueuedMessages: number;
  requestsPerSecond: number;
  burst: number;
  maxBodyBytes: number;
  turnDeadlineMs: number;
  turnBudget: number;
  workerConcurrency: number;
  /** What a turn of this agent may store (limits.maxArtifactBytes, maxTurnOutputBytes, maxTaskOutputBytes). */
  maxArtifactBytes: number;
  maxTurnOutputBytes: number;
  maxTaskOutputBytes: number;
}

export interface AgentSettings {
  name: string;
  adapter: string;
  adapterOptions: JsonObject;
  card: {
    /** Set explicitly for this agent (or agentName, for the default agent); otherwise a downstream agent's own, else defaultName. */
    name: string | undefined;
    /** The agent's name when nothing else names it: agentName's default for the default agent, its route name for the others. */
    defaultName: string;
    /** Set explicitly for this agent; otherwise a downstream agent's own, else defaultDescription. */
    description: string | undefined;
    defaultDescription: string;
    version: string;
    /** undefined: what Adapter.describe() says when the adapter describes itself, else its own skills; 'from downstream': what describe() says, refreshed. */
    skills: AgentSkill[] | 'from downstream' | undefined;
    refreshSeconds: number;
    provider: { organization: string; url: string } | undefined;
    documentationUrl: string | undefined;
    iconUrl: string | undefined;
    securityNotes: string | undefined;
  };
  inputPolicy: InputPolicy;
  /** A caller needs one of these (or an operator scope, a2a:operator or a2a:admin) to use the agent; empty = any caller. */
  scopes: string[];
  limits: AgentLimits;
  /** What this agent's backend may make a worker read (its own backendLimits over the top-level ones). */
  backendLimits: BackendLimits;
  /** Whether (and how) this agent's backend is told who is calling. */
  callerIdentity: CallerIdentitySettings;
}

export interface ResolvedAgents {
  /** In configuration order. */
  agents: AgentSettings[];
  /** The agent served at the root URLs. */
  defaultAgent: string;
}

// agentName and agentDescription have defaults; a value equal to the default counts as not set,
// so an agent in front of a downstream agent takes the downstream's name and description.
const DEFAULT_AGENT_NAME = configSchema.shape.agentName.parse(undefined);
const DEFAULT_AGENT_DESCRIPTION = configSchema.shape.agentDescription.parse(undefined);
const setExplicitly = (value: string, defaultValue: string): string | undefined => (value === defaultValue ? undefined : value);

/** The settings an agent gave, without the ones it left out (which zod's partial() keeps as undefined keys). */
function definedOnly<T extends object>(settings: T): Partial<T> {
  return Object.fromEntries(Object.entries(settings).filter(([, value]) => value !== undefined)) as Partial<T>;
}

/** The configuration file's agents as it defines them: `agents`, or the one implicit agent. */
export function configuredAgentsOf(config: GatewayConfig): Record<string, AgentConfig> {
  return config.agents ?? { [IMPLICIT_AGENT]: agentSchema.parse({ adapter: config.adapter ?? 'demo', adapterOptions: config.adapterOptions ?? {} }) };
}

/** Resolves the configured agents; throws an Error naming the setting when they do not fit together. */
export function resolveAgents(config: GatewayConfig): ResolvedAgents {
  const configured: Record<string, Partial<AgentConfig>> = config.agents ?? { [IMPLICIT_AGENT]: { adapter: config.adapter ?? 'demo', adapterOptions: config.adapterOptions ?? {} } };
  const names = Object.keys(configured);
  if (names.length === 0) throw new Error('agents: configure at least one agent, or leave the setting out for the demo agent.');
  const defaultAgent = config.defaultAgent ?? (names[0] as string);
  if (!names.includes(defaultAgent)) throw new Error(`defaultAgent (A2A_DEFAULT_AGENT): "${defaultAgent}" is not one of the configured agents (${names.join(', ')}).`);
  for (const name of config.workerAgents ?? []) {
    if (!names.includes(name)) throw new Error(`workerAgents (A2A_WORKER_AGENTS): "${name}" is not one of the configured agents (${names.join(', ')}).`);
  }
  const agents = names.map((name) => {
    if (!AGENT_NAME_PATTERN.test(name)) throw new Error(`agents: "${name}" is not a valid agent name.`);
    return resolveAgent(config, name, configured[name] ?? {}, name === defaultAgent);
  });
  return { agents, defaultAgent };
}

/**
 * One agent's settings: its own entry over the top-level settings. Agents written through the
 * admin API (src/control/live-agents.ts) are resolved here too, never as the default agent.
 */
export function resolveAgent(config: GatewayConfig, name: string, entry: Partial<AgentConfig>, isDefault: boolean): AgentSettings {
  // Top-level adapter settings (and their A2A_ADAPTER* variables) override the default agent's.
  const adapter = isDefault && config.agents !== undefined && config.adapter !== undefined ? config.adapter : (entry.adapter ?? 'demo');
  const adapterOptions = isDefault && config.agents !== undefined && config.adapterOptions !== undefined ? config.adapterOptions : (entry.adapterOptions ?? {});
  const card = entry.card;
  const limits = entry.limits ?? {};
  return {
    name,
    adapter,
    adapterOptions: adapterOptions as JsonObject,
    card: {
      name: card?.name ?? (config.agents === undefined || isDefault ? setExplicitly(config.agentName, DEFAULT_AGENT_NAME) : undefined),
      defaultName: config.agents === undefined || isDefault ? config.agentName : name,
      description: card?.description ?? (config.agents === undefined ? setExplicitly(config.agentDescription, DEFAULT_AGENT_DESCRIPTION) : undefined),
      defaultDescription: config.agentDescription,
      version: card?.version ?? config.agentVersion,
      skills: card?.skills as AgentSettings['card']['skills'],
      refreshSeconds: card?.cardRefreshSeconds ?? 300,
      provider: card?.provider ?? config.agentProvider,
      documentationUrl: card?.documentationUrl ?? config.agentDocumentationUrl,
      iconUrl: card?.iconUrl ?? config.agentIconUrl,
      securityNotes: card?.securityNotes ?? config.agentSecurityNotes,
    },
    inputPolicy: entry.inputPolicy ?? 'enqueue',
    scopes: entry.scopes ?? [],
    limits: {
      maxActiveTasks: limits.maxActiveTasks ?? config.limits.maxActiveTasks,
      maxQueuedMessages: limits.maxQueuedMessages ?? config.limits.maxQueuedMessages,
      requestsPerSecond: limits.requestsPerSecond ?? config.limits.requestsPerSecond,
      burst: limits.burst ?? config.limits.burst,
      maxBodyBytes: limits.maxBodyBytes ?? config.maxBodyBytes,
      turnDeadlineMs: limits.turnDeadlineMs ?? config.turnDeadlineMs,
      turnBudget: limits.turnBudget ?? config.turnBudget,
      workerConcurrency: limits.workerConcurrency ?? config.workerConcurrency,
      maxArtifactBytes: limits.maxArtifactBytes ?? config.limits.maxArtifactBytes,
      maxTurnOutputBytes: limits.maxTurnOutputBytes ?? config.limits.maxTurnOutputBytes,
      maxTaskOutputBytes: limits.maxTaskOutputBytes ?? config.limits.maxTaskOutputBytes,
    },
    backendLimits: { ...config.backendLimits, ...definedOnly(entry.backendLimits ?? {}) },
    callerIdentity: entry.callerIdentity ?? callerIdentitySchema.parse({}),
  } satisfies AgentSettings;
}
