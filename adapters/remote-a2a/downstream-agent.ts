// The downstream agent as this gateway knows it: its card, fetched from the configured URL and
// cached (fetched again once older than cardRefreshSeconds; a failed refresh keeps the card we
// have), and an official-SDK client built from it. The client speaks whichever of JSON-RPC and
// HTTP+JSON the card lists first, and 0.3 agents through the SDK's 0.3 compatibility transports
// (`legacyCompat`: a 0.3-shaped card is translated, and an interface whose protocolVersion is 0.x
// gets the compat client's LegacyJsonRpcTransport / LegacyRestTransport). Only the card's
// interfaces on an origin the pin allows are used (origin-pin.ts); when that leaves none the
// gateway speaks, the error names both origins.
import { AgentCard, type AgentCard as SdkAgentCard } from '@a2a-js/sdk';
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory, type CallInterceptor, type Client } from '@a2a-js/sdk/client';
import type { AgentCard as WireAgentCard } from '../../src/protocol/types.ts';
import { OriginPin } from './origin-pin.ts';

export interface DownstreamConnection {
  /** The card in ProtoJSON, as the wire has it. */
  card: WireAgentCard;
  client: Client;
  /** Builds another client from the same card (e.g. to read the extended card without touching `client`). */
  newClient(): Promise<Client>;
  /** Whether the card offers streaming (SendStreamingMessage, SubscribeToTask). */
  streaming: boolean;
  fetchedAtMs: number;
}

export interface DownstreamAgentSettings {
  /** Base URL or card URL (a path ending in .json). */
  url: string;
  /** The fetch every call goes through (credentials, timeouts). */
  fetch: typeof fetch;
  refreshMs: number;
  /** Where the card's interfaces may be (default: the url's origin only). */
  pin?: OriginPin;
  /** Run on every SDK call (the caller token's, caller-token.ts). */
  interceptors?: CallInterceptor[];
}

/** Splits the configured URL into what the SDK's card resolver takes. */
function cardLocation(url: string): { base: string; path: string | undefined } {
  const parsed = new URL(url);
  // A card URL is used as is ('' resolves to the URL itself); a base URL gets the well-known path.
  return parsed.pathname.endsWith('.json') ? { base: parsed.href, path: '' } : { base: parsed.href, path: undefined };
}

export class DownstreamAgent {
  private cached: DownstreamConnection | undefined;
  private pending: Promise<DownstreamConnection> | undefined;
  private readonly factory: ClientFactory;
  private readonly resolver: DefaultAgentCardResolver;
  private readonly pin: OriginPin;

  constructor(private readonly settings: DownstreamAgentSettings) {
    this.pin = settings.pin ?? new OriginPin(settings.url);
    const legacyCompat = { enabled: true };
    this.resolver = new DefaultAgentCardResolver({ fetchImpl: settings.fetch, legacyCompat });
    this.factory = new ClientFactory({
      // Order does not matter here: the card's interface order decides (createFromAgentCard).
      transports: [new JsonRpcTransportFactory({ fetchImpl: settings.fetch, legacyCompat }), new RestTransportFactory({ fetchImpl: settings.fetch, legacyCompat })],
      cardResolver: this.resolver,
      ...(settings.interceptors === undefined ? {} : { clientConfig: { interceptors: settings.interceptors } }),
    });
  }

  /** The card and client; the card is fetched when there is none or it is stale. */
  async connection(): Promise<DownstreamConnection> {
    const cached = this.cached;
    if (cached !== undefined && Date.now() - cached.fetchedAtMs < this.settings.refreshMs) return cached;
    try {
      return await this.refresh();
    } catch (error) {
      // A stale card is better than none while the downstream is briefly away.
      if (cached !== undefined) return cached;
      throw error;
    }
  }

  /** Fetches the card now (one fetch shared by concurrent callers). */
  refresh(): Promise<DownstreamConnection> {
    this.pending ??= this.load().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  private async load(): Promise<DownstreamConnection> {
    const { base, path } = cardLocation(this.settings.url);
    const sdkCard: SdkAgentCard = await this.resolver.resolve(base, path);
    // Only the interfaces on an allowed origin are used: the card is the downstream's word, the pin the operator's.
    const allowed = (url: string): boolean => {
      try {
        return this.pin.allows(url);
      } catch {
        return false;
      }
    };
    const foreign = sdkCard.supportedInterfaces.filter((i) => !allowed(i.url));
    const pinnedCard: SdkAgentCard = { ...sdkCard, supportedInterfaces: sdkCard.supportedInterfaces.filter((i) => allowed(i.url)) };
    let client: Client;
    try {
      client = await this.factory.createFromAgentCard(pinnedCard);
    } catch (error) {
      // Every interface we could speak is elsewhere: say so, naming both origins.
      const elsewhere = foreign[0];
      if (elsewhere !== undefined) this.pin.check(elsewhere.url, `the downstream card at ${new URL(this.settings.url).href} (${elsewhere.protocolBinding} interface)`);
      const offered = sdkCard.supportedInterfaces.map((i) => `${i.protocolBinding} ${i.protocolVersion}`).join(', ') || 'none';
      throw new Error(`the downstream card offers no interface this gateway speaks (JSON-RPC or HTTP+JSON, 1.0 or 0.3); it offers: ${offered}`, { cause: error });
    }
    const card = AgentCard.toJSON(sdkCard) as WireAgentCard;
    const connection: DownstreamConnection = {
      card,
      client,
      newClient: () => this.factory.createFromAgentCard(pinnedCard),
      streaming: card.capabilities?.streaming === true,
      fetchedAtMs: Date.now(),
    };
    this.cached = connection;
    return connection;
  }
}
