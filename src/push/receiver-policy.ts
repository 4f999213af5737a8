// Which webhook receivers the gateway may reach (SSRF, spec 13.2). A URL is checked when a
// config is registered, and its host is resolved and checked again at connect time by the
// sender's connect hook (webhook-sender.ts), which then connects to exactly the address it
// checked: a name that resolved to a public address at registration and to 127.0.0.1 later
// (DNS rebinding) is refused when it matters. Address classes come from ipaddr.js; anything that
// is not a public unicast address is refused unless the allow-list names it, and an IPv6 address
// carrying an IPv4 address is judged by the IPv4 address it carries.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { ipv4EmbeddingOf } from './embedded-ipv4.ts';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address it has (injectable: tests switch answers to prove rebinding is caught). */
export type PushResolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: PushResolver = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((entry) => ({ address: entry.address, family: entry.family === 6 ? 6 : 4 }));

/** Why a receiver may not be reached; `reason` is a stable word for metadata and dead letters. */
export class BlockedReceiverError extends Error {
  constructor(
    message: string,
    readonly reason: 'SCHEME' | 'URL' | 'ADDRESS_BLOCKED' | 'UNRESOLVABLE',
    readonly address?: string,
  ) {
    super(message);
    this.name = 'BlockedReceiverError';
  }
}

/** ipaddr.js range names, as people call them. */
const RANGE_NAMES: Record<string, string> = {
  loopback: 'a loopback address',
  private: 'a private address (RFC 1918)',
  linkLocal: 'a link-local address (cloud metadata 169.254.169.254 included)',
  carrierGradeNat: 'a carrier-grade NAT address (100.64/10)',
  multicast: 'a multicast address',
  uniqueLocal: 'a unique-local address (fc00::/7)',
  unspecified: 'an unspecified address',
  broadcast: 'the broadcast address',
  reserved: 'a reserved address',
  benchmarking: 'a benchmarking address',
  amt: 'an AMT address',
  as112: 'an AS112 address',
  as112v6: 'an AS112 address',
  deprecatedSiteLocal: 'a site-local address (deprecated)',
  deprecatedOrchid: 'an ORCHID address (deprecated)',
  orchid2: 'an ORCHIDv2 address',
  discard: 'a discard-only address',
  segmentRouting: 'a segment-routing address',
  droneRemoteIdProtocolEntityTags: 'a drone remote ID address',
};

const describeRange = (range: string): string => RANGE_NAMES[range] ?? `an address of the ${range} range`;

/** Every routable IPv6 unicast address is in 2000::/3; the rest of the space is special or unassigned. */
const GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3') as [ipaddr.IPv6, number];

type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];

/**
 * An address as the operating system reads it, or undefined when it is not one. ipaddr.js reads
 * `::127.0.0.1` as IPv4-mapped; a socket reads it as IPv4-compatible (`::7f00:1`), so IPv6 text
 * goes through the WHATWG URL parser, which reads it as a socket does, before ipaddr.js sees it.
 */
function parseAddress(text: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  const family = isIP(text);
  if (family === 4) return ipaddr.IPv4.parse(text);
  if (family !== 6) return undefined;
  const [withoutZone = ''] = text.split('%');
  return ipaddr.IPv6.parse(new URL(`http://[${withoutZone}]/`).hostname.slice(1, -1));
}

/** An IPv4-mapped IPv6 address is judged as the IPv4 address it carries (for the allow-list). */
function normalized(address: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | ipaddr.IPv6 {
  return address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress() ? (address as ipaddr.IPv6).toIPv4Address() : address;
}

export interface ReceiverPolicyOptions {
  /** Host names (matched exactly, case-insensitively), IP addresses and CIDR blocks that may be reached whatever their class. */
  allowedHosts: readonly string[];
  maxUrlLength: number;
  resolve?: PushResolver;
}

export class ReceiverPolicy {
  private readonly allowedNames = new Set<string>();
  private readonly allowedBlocks: Cidr[] = [];
  private readonly resolver: PushResolver;

  constructor(private readonly options: ReceiverPolicyOptions) {
    this.resolver = options.resolve ?? systemResolver;
    for (const entry of options.allowedHosts) {
      const trimmed = entry.trim();
      if (trimmed === '') continue;
      if (trimmed.includes('/')) this.allowedBlocks.push(ipaddr.parseCIDR(trimmed));
      else if (ipaddr.isValid(trimmed)) {
        const address = normalized(parseAddress(trimmed) ?? ipaddr.parse(trimmed));
        this.allowedBlocks.push([address, address.kind() === 'ipv4' ? 32 : 128]);
      } else this.allowedNames.add(trimmed.toLowerCase());
    }
  }

  /** Throws unless every allow-list entry parses (a typo must stop the start, not open a hole). */
  static validateAllowList(entries: readonly string[]): string | undefined {
    for (const entry of entries) {
      const trimmed = entry.trim();
      if (trimmed === '') continue;
      if (trimmed.includes('/')) {
        try {
          ipaddr.parseCIDR(trimmed);
        } catch {
          return `"${trimmed}" is not a CIDR block like 10.0.0.0/8 or fd00::/8`;
        }
      } else if (!ipaddr.isValid(trimmed) && !/^[A-Za-z0-9.-]{1,253}$/.test(trimmed)) {
        return `"${trimmed}" is neither a host name, an IP address nor a CIDR block`;
      }
    }
    return undefined;
  }

  private listed(address: ipaddr.IPv4 | ipaddr.IPv6): boolean {
    return this.allowedBlocks.some(([block, bits]) => block.kind() === address.kind() && address.match(block as never, bits));
  }

  /**
   * What makes an address unreachable for webhooks, as a phrase ("a loopback address"), or
   * undefined when it may be reached: a public unicast address, or one the allow-list names. An
   * IPv6 address that carries an IPv4 address is judged by that IPv4 address; one whose IPv4
   * address cannot be known (Teredo, local-use NAT64) is refused.
   */
  blockedClassOf(address: string): string | undefined {
    const parsed = parseAddress(address);
    if (parsed === undefined) return 'not an IP address';
    if (this.listed(parsed)) return undefined;
    if (parsed.kind() === 'ipv4') return this.ipv4Class(parsed as ipaddr.IPv4);
    const v6 = parsed as ipaddr.IPv6;
    const embedding = ipv4EmbeddingOf(v6);
    if (embedding?.kind === 'opaque') return `${embedding.form}, refused because ${embedding.why}`;
    if (embedding?.kind === 'carries') {
      const inner = this.ipv4Class(embedding.ipv4);
      return inner === undefined ? undefined : `${embedding.form} carrying ${embedding.ipv4.toString()}, ${inner}`;
    }
    const range = v6.range();
    if (range !== 'unicast') return describeRange(range);
    if (!v6.match(GLOBAL_UNICAST)) return 'an address outside global unicast (2000::/3)';
    return undefined;
  }

  private ipv4Class(address: ipaddr.IPv4): string | undefined {
    if (this.listed(address)) return undefined;
    const range = address.range();
    return range === 'unicast' ? undefined : describeRange(range);
  }

  /** Checks a webhook URL's form: http(s), no credentials in it, not too long. */
  checkUrl(raw: string): URL {
    if (raw.length > this.options.maxUrlLength) {
      throw new BlockedReceiverError(`The URL is ${raw.length} characters long; at most ${this.options.maxUrlLength} are accepted (push.maxUrlLength).`, 'URL');
    }
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new BlockedReceiverError('The URL is not an absolute URL.', 'URL');
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      throw new BlockedReceiverError(`Webhooks are sent over http or https only, not ${url.protocol.slice(0, -1)}.`, 'SCHEME');
    }
    if (url.username !== '' || url.password !== '') {
      throw new BlockedReceiverError('The URL carries credentials (user:password@); put them in authentication instead.', 'URL');
    }
    return url;
  }

  private hostAllowed(hostname: string): boolean {
    return this.allowedNames.has(hostname.toLowerCase());
  }

  /**
   * The address to connect to for a host: resolved now, every answer checked, the first
   * acceptable one returned. Throws BlockedReceiverError when none may be reached.
   */
  async resolveAllowed(hostname: string): Promise<ResolvedAddress> {
    const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
    const literal = isIP(bare);
    const allowedByName = this.hostAllowed(bare);
    if (literal !== 0) {
      const blocked = allowedByName ? undefined : this.blockedClassOf(bare);
      if (blocked !== undefined) throw new BlockedReceiverError(`${bare} is ${blocked}, which webhooks may not reach unless push.allowedHosts lists it.`, 'ADDRESS_BLOCKED', bare);
      return { address: bare, family: literal === 6 ? 6 : 4 };
    }
    let answers: ResolvedAddress[];
    try {
      answers = await this.resolver(bare);
    } catch (error) {
      throw new BlockedReceiverError(`${bare} could not be resolved (${(error as Error).message}).`, 'UNRESOLVABLE');
    }
    if (answers.length === 0) throw new BlockedReceiverError(`${bare} has no addresses.`, 'UNRESOLVABLE');
    if (allowedByName) return answers[0] as ResolvedAddress;
    const refused: string[] = [];
    for (const answer of answers) {
      const blocked = this.blockedClassOf(answer.address);
      if (blocked === undefined) return answer;
      refused.push(`${answer.address} (${blocked})`);
    }
    throw new BlockedReceiverError(
      `${bare} resolves to ${refused.join(', ')}, which webhooks may not reach unless push.allowedHosts lists it.`,
      'ADDRESS_BLOCKED',
      answers[0]?.address,
    );
  }

  /** Registration: the URL's form, and its host as it resolves now. */
  async checkReceiver(raw: string): Promise<URL> {
    const url = this.checkUrl(raw);
    await this.resolveAllowed(url.hostname);
    return url;
  }
}
