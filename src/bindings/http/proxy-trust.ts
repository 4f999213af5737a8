// What a reverse proxy in front of the gateway may tell it: the client's address and the URL the
// client addressed (scheme, host, path prefix). Believed only from trusted proxies (the
// trustProxy setting; off by default), since any client can send these headers itself.
//
// - `Forwarded` (RFC 7239, parsed by forwarded-parse) wins over `X-Forwarded-For/-Proto/-Host`
//   when both are present; `X-Forwarded-Prefix` (no RFC 7239 counterpart) names the path the
//   proxy mounts the gateway under.
// - The client address is found the way Express and proxy-addr do: walk the hops from the
//   nearest one back and stop at the first address that is not a trusted proxy.
// - Scheme, host and prefix are the first (client-facing) values, as Express reads them.
import type { IncomingMessage } from 'node:http';
import parseForwarded from 'forwarded-parse';
import proxyAddr from 'proxy-addr';
import type { TrustProxySetting } from '../../config/schema.ts';

export interface ProxyTrust {
  /** True when a connection from this address is a trusted proxy's. */
  trustsAddress(address: string): boolean;
  /** True when the request's immediate peer is a proxy whose forwarded headers are believed. */
  trustsPeer(request: IncomingMessage): boolean;
  /** The client's address: the socket peer, or the first untrusted hop behind trusted proxies. */
  clientAddress(request: IncomingMessage): string;
  /**
   * The base URL (scheme://host[:port][/prefix], no trailing slash) the client addressed:
   * `configured` (publicUrl), with what a trusted proxy forwarded in its place.
   */
  publicBase(request: IncomingMessage, configured: URL): string;
}

type TrustFunction = (address: string, hop: number) => boolean;

export function createProxyTrust(setting: TrustProxySetting): ProxyTrust {
  const trust: TrustFunction = setting === true ? () => true : setting === false ? () => false : proxyAddr.compile(setting);
  const peerOf = (request: IncomingMessage): string => normalizeAddress(request.socket.remoteAddress ?? '');
  const trustsAddress = (address: string): boolean => setting !== false && trust(normalizeAddress(address), 0);
  const trustsPeer = (request: IncomingMessage): boolean => trustsAddress(peerOf(request));
  return {
    trustsAddress,
    trustsPeer,
    clientAddress(request) {
      const peer = peerOf(request);
      if (!trustsPeer(request)) return peer;
      // Nearest hop first: the peer, then the forwarded addresses from right to left.
      const hops = [peer, ...forwardedFor(request).reverse()];
      for (let hop = 0; hop < hops.length - 1; hop++) {
        if (!trust(hops[hop] as string, hop)) return hops[hop] as string;
      }
      return hops[hops.length - 1] as string;
    },
    publicBase(request, configured) {
      const configuredPrefix = configured.pathname.replace(/\/+$/, '');
      const fallback = `${configured.protocol}//${configured.host}${configuredPrefix}`;
      if (!trustsPeer(request)) return fallback;
      const forwarded = firstForwarded(request);
      const proto = (forwarded?.proto ?? firstValue(request, 'x-forwarded-proto'))?.toLowerCase();
      const host = forwarded?.host ?? firstValue(request, 'x-forwarded-host');
      const prefix = firstValue(request, 'x-forwarded-prefix');
      const scheme = proto === 'http' || proto === 'https' ? `${proto}:` : configured.protocol;
      const authority = host !== undefined && VALID_HOST.test(host) ? host.toLowerCase() : configured.host;
      const path = prefix !== undefined && VALID_PREFIX.test(prefix) ? prefix.replace(/\/+$/, '') : configuredPrefix;
      return `${scheme}//${authority}${path}`;
    },
  };
}

/** host[:port], a bracketed IPv6 literal allowed. */
const VALID_HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;
/** "/gw", "/a/b/" — path segments of unreserved and sub-delim characters, percent-encoding kept. */
const VALID_PREFIX = /^(?:\/[A-Za-z0-9._~!$&'()*+,;=:@%-]*)+$/;

/** "::ffff:10.0.0.1" is 10.0.0.1: one client, one bucket, one match against the trust list. */
function normalizeAddress(address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice('::ffff:'.length) : address;
}

function firstValue(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name];
  const text = Array.isArray(value) ? value[0] : value;
  const first = text?.split(',')[0]?.trim();
  return first === undefined || first === '' ? undefined : first;
}

function parsedForwarded(request: IncomingMessage): Record<string, string>[] | undefined {
  const header = request.headers.forwarded;
  if (header === undefined || header === '') return undefined;
  try {
    return parseForwarded(header);
  } catch {
    // A malformed Forwarded is ignored as a whole; X-Forwarded-* may still apply.
    return undefined;
  }
}

function firstForwarded(request: IncomingMessage): Record<string, string> | undefined {
  return parsedForwarded(request)?.[0];
}

/** The hops' addresses, client first: Forwarded `for=` when present, else X-Forwarded-For. */
function forwardedFor(request: IncomingMessage): string[] {
  const forwarded = parsedForwarded(request);
  const raw =
    forwarded !== undefined
      ? forwarded.map((element) => element.for ?? 'unknown')
      : (request.headersDistinct['x-forwarded-for'] ?? [])
          .join(',')
          .split(',')
          .map((entry) => entry.trim())
          .filter((entry) => entry !== '');
  return raw.map((entry) => normalizeAddress(stripPort(entry)));
}

/** RFC 7239 node names: `192.0.2.43:47011`, `"[2001:db8::1]:4711"`, `unknown`, `_hidden`. */
function stripPort(node: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(node);
  if (bracketed !== null) return bracketed[1] as string;
  const ipv4WithPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(node);
  return ipv4WithPort !== null ? (ipv4WithPort[1] as string) : node;
}
