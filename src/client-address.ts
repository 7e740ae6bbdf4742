import { isIP } from 'node:net';

/**
 * Whom a client address stands for, as the connection limits (src/http/server.ts limitConnections)
 * and the sign-in throttle (src/identity/throttle.ts) count it: an IPv4 address — also one
 * carried in IPv6 by a translator (IPv4-mapped `::ffff:10.0.0.7`, IPv4-translated `::ffff:0:…`,
 * IPv4-compatible `::…`, NAT64 `64:ff9b::…`: behind NAT64 every IPv4 client was one IPv6 /64, a
 * reviewer's case) — or an IPv6 address's /64: one network's hosts, which a single client may use
 * all of (2^64 addresses, each under the limit).
 */
export function clientOf(address: string): string {
  if (isIP(address) !== 6) return address;
  const groups = ipv6Groups(address.replace(/%.*$/, ''));
  const ipv4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const zeros = (from: number, to: number) => groups.slice(from, to).every((g) => g === 0);
  const [g4, g5, g6, g7] = [groups[4]!, groups[5]!, groups[6]!, groups[7]!];
  const carried =
    (zeros(0, 5) && (g5 === 0xffff || (g5 === 0 && (g6 !== 0 || g7 > 1)))) || // ::ffff:a.b.c.d, ::a.b.c.d (not :: or ::1)
    (zeros(0, 4) && g4 === 0xffff && g5 === 0) || // ::ffff:0:a.b.c.d
    (groups[0] === 0x64 && groups[1] === 0xff9b && zeros(2, 6)); // 64:ff9b::a.b.c.d
  if (carried) return ipv4(g6, g7);
  return `${groups.slice(0, 4).map((g) => g.toString(16)).join(':')}::/64`;
}

/** The eight 16-bit groups of an IPv6 address in text (`::` expanded, a dotted IPv4 tail as two groups). */
function ipv6Groups(address: string): number[] {
  const split = (part: string) =>
    part
      ? part.split(':').flatMap((g) => {
          if (!g.includes('.')) return [parseInt(g, 16)];
          const [a, b, c, d] = g.split('.').map(Number) as [number, number, number, number];
          return [(a << 8) | b, (c << 8) | d];
        })
      : [];
  const [head = '', tail] = address.split('::');
  const left = split(head);
  if (tail === undefined) return left;
  const right = split(tail);
  return [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
}

/**
 * The client address in a reverse proxy's X-Forwarded-For entry, without the port some proxies
 * add (`203.0.113.9:51234`, `[2001:db8::1]:443`: a new port per connection would make every
 * connection a client of its own to the sign-in throttle, a reviewer's case); undefined when the
 * entry is no address at all (`unknown`, a hostname, garbage), which then names nobody.
 */
export function forwardedAddress(entry: string): string | undefined {
  const text = entry.trim();
  const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(text);
  const withPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/.exec(text);
  const address = bracketed?.[1] ?? withPort?.[1] ?? text;
  return isIP(address) ? address : undefined;
}
