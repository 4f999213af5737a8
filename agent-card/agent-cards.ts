// One agent's cards (public and extended), built from its settings and its adapter, signed,
// and kept. An agent whose skills come "from downstream" asks its adapter again once the cards
// are older than the agent's cardRefreshSeconds; until the new cards are built (or when the
// downstream cannot be reached) the previous ones are served, so a card request never waits
// on a remote agent except for the very first build.
import type { AdapterDescription } from '../adapters/types.ts';
import type { Agent } from '../src/agents/agents.ts';
import type { Logger } from '../src/logging/logger.ts';
import { legacyCardOf } from '../src/compat/v0_3/card.ts';
import type { AgentCard } from '../src/protocol/types.ts';
import { buildAgentCard, serveAgentCard, type CardInput, type ServedCard } from './card.ts';

export interface AgentCardPair {
  card: ServedCard;
  /** The public card as 0.3 clients read it (served to requests without A2A-Version 1.x). */
  legacyCard: ServedCard;
  /** For GetExtendedAgentCard; undefined when authentication is off. */
  extended: ServedCard | undefined;
  /** Media types the agent accepts in message parts: the card's input modes plus every skill's. */
  inputModes: readonly string[];
}

export interface AgentCardOptions {
  agent: Agent;
  /** `<publicUrl>` for the default agent's root URLs, `<publicUrl>/agents/<name>` otherwise. */
  baseUrl: string;
  security: CardInput['security'];
  /** Signs a built card (detached JWS), or leaves it unsigned. */
  finish: (card: ReturnType<typeof buildAgentCard>) => Promise<ServedCard>;
  logger: Logger;
  /** The gRPC binding's interface for this agent, when it is on. */
  grpc?: CardInput['grpc'];
}

export class AgentCards {
  private current: AgentCardPair | undefined;
  private builtAtMs = 0;
  private building: Promise<AgentCardPair> | undefined;

  constructor(private readonly options: AgentCardOptions) {}

  /** The agent's cards, rebuilt in the background once stale (only for skills learnt at run time). */
  async cards(): Promise<AgentCardPair> {
    const { settings } = this.options.agent;
    const dynamic = settings.card.skills === 'from downstream';
    if (this.current === undefined) return this.rebuild();
    if (dynamic && Date.now() - this.builtAtMs > settings.card.refreshSeconds * 1000) {
      this.rebuild().catch((error: Error) =>
        this.options.logger.warn('could not refresh an agent card; serving the previous one', { agent: settings.name, error: error.message }),
      );
    }
    return this.current;
  }

  private rebuild(): Promise<AgentCardPair> {
    this.building ??= this.build().finally(() => {
      this.building = undefined;
    });
    return this.building;
  }

  private async build(): Promise<AgentCardPair> {
    const { agent, baseUrl, security, finish } = this.options;
    const { card } = agent.settings;
    const fields = await this.fields();
    const description = card.description ?? fields.description ?? card.defaultDescription;
    const input: CardInput = {
      baseUrl,
      name: card.name,
      description,
      version: card.version,
      fields,
      security,
      extensions: agent.extensions,
      ...(this.options.grpc === undefined ? {} : { grpc: this.options.grpc }),
      ...(card.provider === undefined ? {} : { provider: card.provider }),
      ...(card.documentationUrl === undefined ? {} : { documentationUrl: card.documentationUrl }),
      ...(card.iconUrl === undefined ? {} : { iconUrl: card.iconUrl }),
      ...(card.securityNotes === undefined ? {} : { securityNotes: card.securityNotes }),
    };
    const built = await finish(buildAgentCard(input));
    const extended = security === undefined ? undefined : await finish(buildAgentCard({ ...input, extended: true }));
    // A 1.0 card signature does not verify over the 0.3 shape: the 0.3 card goes unsigned.
    const legacy = legacyCardOf({ ...built.card, signatures: undefined }, { form: 'json', embedSupportedInterfaces: true }) as unknown as AgentCard;
    const pair = { card: built, legacyCard: serveAgentCard(legacy), extended, inputModes: inputModesOf(extended ?? built) };
    this.current = pair;
    this.builtAtMs = Date.now();
    return pair;
  }

  private async fields(): Promise<AdapterDescription> {
    const { adapter, settings } = this.options.agent;
    const own: AdapterDescription = {
      skills: adapter.skills,
      ...(adapter.extendedSkills === undefined ? {} : { extendedSkills: adapter.extendedSkills }),
      ...(adapter.defaultInputModes === undefined ? {} : { defaultInputModes: adapter.defaultInputModes }),
      ...(adapter.defaultOutputModes === undefined ? {} : { defaultOutputModes: adapter.defaultOutputModes }),
    };
    const skills = settings.card.skills;
    if (skills === undefined) return own;
    if (skills !== 'from downstream') return { ...own, skills, extendedSkills: [] };
    if (adapter.describe === undefined) {
      throw new Error(`agent "${settings.name}" takes its skills "from downstream", but its adapter ${adapter.name} cannot describe a downstream agent`);
    }
    return adapter.describe();
  }
}

function inputModesOf(served: ServedCard): string[] {
  const modes = new Set(served.card.defaultInputModes);
  for (const skill of served.card.skills) for (const mode of skill.inputModes ?? []) modes.add(mode);
  return [...modes];
}
