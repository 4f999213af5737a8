// One agent's cards (public and extended), built from its settings and its adapter, signed,
// and kept. An agent whose adapter describes itself at run time (Adapter.describe: the a2a
// adapter's downstream agent) takes the downstream's name, description and skills wherever its
// configuration does not set them, and asks its adapter again once the cards are older than the
// agent's cardRefreshSeconds; until the new cards are built (or when the downstream cannot be
// reached) the previous ones are served, so a card request never waits on a remote agent except
// for the very first build.
import type { AdapterDescription } from '../../adapters/types.ts';
import { buildAgentCard, serveAgentCard, type CardInput, type ServedCard } from '../../agent-card/card.ts';
import { legacyCardOf } from '../compat/v0_3/card.ts';
import type { Logger } from '../logging/logger.ts';
import type { AgentCard } from '../protocol/types.ts';
import type { Agent } from './agents.ts';

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

/** A card built without the downstream's description (it could not be read) is built again this soon. */
const DESCRIBE_RETRY_MS = 5_000;

/** Whether the agent's cards hold what its adapter learns at run time, and so are rebuilt when stale. */
export function learnsFromAdapter(agent: Agent): boolean {
  return agent.settings.card.skills === 'from downstream' || agent.adapter.describe !== undefined;
}

export class AgentCards {
  private current: AgentCardPair | undefined;
  private staleAtMs = 0;
  private building: Promise<AgentCardPair> | undefined;
  /** The fields of the last build, so a change of security alone never asks the adapter again. */
  private lastFields: { fields: AdapterDescription; described: boolean } | undefined;
  /** One more each time what the gateway enforces changed; the cards are current at builtRevision. */
  private securityRevision = 0;
  private builtRevision = 0;

  constructor(private readonly options: AgentCardOptions) {}

  /**
   * What the gateway enforces changed while it runs (an issuer added or removed through the
   * admin API): the cards are built again from the fields already learnt, at once, and no
   * request after this call is answered with the previous ones.
   */
  securityChanged(): void {
    this.securityRevision += 1;
    if (this.current === undefined) return;
    this.cards().catch((error: Error) => this.options.logger.warn('could not rebuild an agent card after a security change; retried on the next request', { agent: this.options.agent.settings.name, error: error.message }));
  }

  /** The agent's cards, rebuilt in the background once stale (only for fields learnt at run time). */
  async cards(): Promise<AgentCardPair> {
    const { settings } = this.options.agent;
    if (this.current === undefined) return this.rebuild();
    // A build that started before the last security change may still be running: wait for one after it.
    while (this.builtRevision !== this.securityRevision) await this.rebuild();
    if (learnsFromAdapter(this.options.agent) && Date.now() > this.staleAtMs) {
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
    const revision = this.securityRevision;
    // Only the security changed since the last build: the same fields, no new question to the adapter.
    const restamp = this.current !== undefined && this.lastFields !== undefined && this.builtRevision !== revision;
    const learnt = restamp && this.lastFields !== undefined ? this.lastFields : await this.fields();
    const { fields, described } = learnt;
    // What the configuration sets wins; what it leaves out comes from the downstream agent.
    const description = card.description ?? fields.description ?? card.defaultDescription;
    const input: CardInput = {
      baseUrl,
      name: card.name ?? fields.name ?? card.defaultName,
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
    this.lastFields = learnt;
    this.builtRevision = revision;
    if (!restamp) this.staleAtMs = Date.now() + (described ? agent.settings.card.refreshSeconds * 1000 : DESCRIBE_RETRY_MS);
    return pair;
  }

  /**
   * The card's fields: the adapter's own, or what describe() learnt, under the skills the
   * configuration lists. `described` is false when describe() failed and the adapter's own
   * fields stand in (retried soon); with skills "from downstream" asked for explicitly the
   * failure is the build's.
   */
  private async fields(): Promise<{ fields: AdapterDescription; described: boolean }> {
    const { adapter, settings } = this.options.agent;
    const own: AdapterDescription = {
      skills: adapter.skills,
      ...(adapter.extendedSkills === undefined ? {} : { extendedSkills: adapter.extendedSkills }),
      ...(adapter.defaultInputModes === undefined ? {} : { defaultInputModes: adapter.defaultInputModes }),
      ...(adapter.defaultOutputModes === undefined ? {} : { defaultOutputModes: adapter.defaultOutputModes }),
    };
    const skills = settings.card.skills;
    if (adapter.describe === undefined) {
      if (skills === 'from downstream') {
        throw new Error(`agent "${settings.name}" takes its skills "from downstream", but its adapter ${adapter.name} cannot describe a downstream agent`);
      }
      return { fields: skills === undefined ? own : { ...own, skills, extendedSkills: [] }, described: true };
    }
    let learnt: AdapterDescription;
    try {
      learnt = await adapter.describe();
    } catch (error) {
      if (skills === 'from downstream') throw error;
      this.options.logger.warn('could not read the downstream agent\'s card; its card uses the adapter\'s own fields until it can', {
        agent: settings.name,
        error: (error as Error).message,
      });
      return { fields: Array.isArray(skills) ? { ...own, skills, extendedSkills: [] } : own, described: false };
    }
    return { fields: Array.isArray(skills) ? { ...learnt, skills, extendedSkills: [] } : learnt, described: true };
  }
}

function inputModesOf(served: ServedCard): string[] {
  const modes = new Set(served.card.defaultInputModes);
  for (const skill of served.card.skills) for (const mode of skill.inputModes ?? []) modes.add(mode);
  return [...modes];
}
