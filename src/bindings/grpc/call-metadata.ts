// A gRPC call's metadata read as the HTTP bindings read headers (spec 10.2: service parameters
// travel as metadata, keys in lower case): `authorization`, `a2a-version`, `a2a-extensions`,
// and this gateway's own: `last-event-id` to resume a stream, `a2a-agent` to pick an agent.
import type { Metadata } from '@grpc/grpc-js';

export interface CallHeaders {
  /** One key's values joined with ', ' (like repeated HTTP header fields). */
  header(name: string): string | undefined;
  /** Every value of a key, in order. */
  headerValues(name: string): string[];
}

export function callHeaders(metadata: Metadata): CallHeaders {
  const valuesOf = (name: string): string[] => {
    const key = name.toLowerCase();
    // Binary (-bin) keys carry bytes; no service parameter is one.
    if (key.endsWith('-bin')) return [];
    return metadata.get(key).map((value) => (typeof value === 'string' ? value : value.toString('utf8')));
  };
  return {
    header(name) {
      const values = valuesOf(name);
      return values.length === 0 ? undefined : values.join(', ');
    },
    headerValues: valuesOf,
  };
}

/** The metadata key that names the agent a call is for (the gateway's choice; see docs/grpc.md). */
export const AGENT_METADATA_KEY = 'a2a-agent';

/** The tenant form that names an agent: what each agent's card declares on its GRPC interface. */
const AGENT_TENANT = /^agents\/([^/]+)$/;

/** The tenant value a card's GRPC interface carries for the agent (SDK clients send it on every request). */
export const agentTenantOf = (agentName: string): string => `agents/${agentName}`;

/** The agent a tenant value names, when it has the `agents/<name>` form. */
export function agentOfTenant(tenant: unknown): string | undefined {
  if (typeof tenant !== 'string') return undefined;
  return AGENT_TENANT.exec(tenant)?.[1];
}

/** Peer "ipv4:1.2.3.4:5", "1.2.3.4:5" or "[::1]:5" as an address (what the unauthenticated limiter counts). */
export function peerAddressOf(peer: string): string {
  const withoutScheme = peer.replace(/^(ipv4|ipv6):/, '');
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(withoutScheme);
  if (bracketed !== null) return bracketed[1] as string;
  // host:port with one colon; more colons without brackets is a bare IPv6 address.
  const hostAndPort = /^([^:]+):\d+$/.exec(withoutScheme);
  return hostAndPort === null ? withoutScheme : (hostAndPort[1] as string);
}
