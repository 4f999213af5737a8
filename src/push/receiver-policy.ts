// Which webhook receivers the gateway may reach (SSRF, spec 13.2). A URL is checked when a
// config is registered, and its host is resolved and checked again at connect time by the
// sender's connect hook (webhook-sender.ts), which then connects to exactly the address it
// checked: a name that resolved to a public address at registration and to 127.0.0.1 later
// (DNS rebinding) is refused when it matters. Address classes come from ipaddr.js; anything that
// is not a plain public unicast address is refused unless the allow-list names it.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

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
  loopback: 'loopback',
  private: 'private (RFC 1918)',
  linkLocal: 'link-local (incl. cloud metadata 169.254.169.254)',
  carrierGradeNat: 'carrier-grade NAT (100.64/10)',
  multicast: 'multicast',
  uniqueLocal: 'unique-local (fc00::/7)',
  unspecified: 'unspecified',
  broadcast: 'broadcast',
  reserved: 'reserved',
  ipv4Mapped: 'IPv4-mapped IPv6',
  rfc6052: 'IPv4-embedded IPv6 (NAT64)',
  rfc6145: 'IPv4-translated IPv6',
  '6to4': '6to4',
  teredo: 'Teredo',
  benchmarking: 'benchmarking',
  amt: 'AMT',
  as112: 'AS112',
  deprecated: 'deprecated',
  orchid2: 'ORCHIDv2',
  discard: 'discard-only',
};

type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];

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
        const address = normalized(ipaddr.parse(trimmed));
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

  /** The blocked class of an address, or undefined when it may be reached. */
  blockedClassOf(address: string): string | undefined {
    if (!ipaddr.isValid(address)) return 'not an IP address';
    const parsed = ipaddr.parse(address);
    const judged = normalized(parsed);
    for (const [block, bits] of this.allowedBlocks) {
      if (block.kind() === judged.kind() && judged.match(block as never, bits)) return undefined;
    }
    if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) {
      return `${RANGE_NAMES.ipv4Mapped} of a ${RANGE_NAMES[judged.range()] ?? judged.range()} address`;
    }
    const range = parsed.range();
    return range === 'unicast' ? undefined : (RANGE_NAMES[range] ?? range);
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
      if (blocked !== undefined) throw new BlockedReceiverError(`${bare} is a ${blocked} address, which webhooks may not reach unless push.allowedHosts lists it.`, 'ADDRESS_BLOCKED', bare);
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
