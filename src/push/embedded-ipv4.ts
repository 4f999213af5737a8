// IPv6 addresses that carry an IPv4 address. A packet to one of them may end up at that IPv4
// address (dual-stack sockets for the mapped form, a NAT64 or SIIT translator, a 6to4 relay),
// so the receiver policy judges such an address by the IPv4 address it carries, exactly as it
// judges that IPv4 address written plainly. Forms whose IPv4 address cannot be read off the
// address (Teredo obfuscates the client's; a local-use NAT64 prefix puts it where its network
// chose) are opaque: the policy refuses them unless the allow-list names them.
import ipaddr from 'ipaddr.js';

export type Ipv4Embedding =
  /** The IPv4 address the IPv6 address carries, and the form it uses ("a NAT64 address (64:ff9b::/96)"). */
  | { kind: 'carries'; form: string; ipv4: ipaddr.IPv4 }
  /** An IPv4-carrying form whose IPv4 address cannot be known from the address alone. */
  | { kind: 'opaque'; form: string; why: string };

const ipv4Of = (high: number, low: number): ipaddr.IPv4 => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);

const zero = (parts: readonly number[], from: number, to: number): boolean => parts.slice(from, to).every((part) => part === 0);

/**
 * The IPv4 address an IPv6 address carries, or undefined when it carries none. `::` and `::1`
 * are the IPv6 unspecified and loopback addresses, not IPv4-compatible ones.
 */
export function ipv4EmbeddingOf(address: ipaddr.IPv6): Ipv4Embedding | undefined {
  const p = address.parts;
  const last = (): ipaddr.IPv4 => ipv4Of(p[6] as number, p[7] as number);
  if (zero(p, 0, 5) && p[5] === 0xffff) return { kind: 'carries', form: 'an IPv4-mapped IPv6 address (::ffff:0:0/96)', ipv4: last() };
  if (zero(p, 0, 4) && p[4] === 0xffff && p[5] === 0) return { kind: 'carries', form: 'an IPv4-translated IPv6 address (::ffff:0:0:0/96)', ipv4: last() };
  if (zero(p, 0, 6)) {
    if (p[6] === 0 && (p[7] === 0 || p[7] === 1)) return undefined;
    return { kind: 'carries', form: 'an IPv4-compatible IPv6 address (::/96)', ipv4: last() };
  }
  if (p[0] === 0x64 && p[1] === 0xff9b) {
    if (zero(p, 2, 6)) return { kind: 'carries', form: 'a NAT64 address (64:ff9b::/96)', ipv4: last() };
    if (p[2] === 0x1) {
      return { kind: 'opaque', form: 'a local-use NAT64 address (64:ff9b:1::/48)', why: 'where its IPv4 address sits depends on the prefix length its network chose' };
    }
  }
  if (p[0] === 0x2002) return { kind: 'carries', form: 'a 6to4 address (2002::/16)', ipv4: ipv4Of(p[1] as number, p[2] as number) };
  if (p[0] === 0x2001 && p[1] === 0) return { kind: 'opaque', form: 'a Teredo address (2001::/32)', why: "its client's IPv4 address is obfuscated" };
  return undefined;
}
