import { BlockList, isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { domainToUnicode } from 'node:url';
import { INVISIBLE } from '../normalize.ts';

/**
 * Which URLs a webhook may call (SPEC §6): absolute http or https URLs without credentials or a
 * fragment, and, when WEBHOOK_ALLOW_HOSTS is set, only on the hosts it lists. Checked when a
 * webhook is created or changed, and again before every attempt (the list may have changed since).
 * Unless WEBHOOK_ALLOW_LOCAL is set, never this machine (loopback, and every address of its own
 * network interfaces), link-local addresses or cloud metadata services: here for names and
 * literal addresses, and in the sender for every address a name resolves to, at connect time.
 */

export type UrlVerdict = { ok: true; url: string; host: string } | { ok: false; reason: string; code: 'invalid_url' | 'host_not_allowed' };

const MAX_URL = 2048;

/**
 * Adds an IPv4 subnet, and the IPv6 addresses that carry it inside them: IPv4-compatible
 * (`::127.0.0.1`, `[::7f00:1]`), IPv4-translated (`::ffff:0:0/96`, SIIT), NAT64 (`64:ff9b::/96`,
 * RFC 6052, and the local-use `64:ff9b:1::/48` of RFC 8215 as a /96) and 6to4 (`2002::/16`, RFC 3056).
 * A host or gateway that translates them reaches the IPv4 address (a security tester's case: they
 * passed the check; IPv4-mapped `::ffff:…` BlockList already reads as IPv4).
 */
function addIpv4(list: BlockList, ipv4: string, prefix: number): void {
  list.addSubnet(ipv4, prefix, 'ipv4');
  const [a, b, c, d] = ipv4.split('.').map(Number) as [number, number, number, number];
  const hi = ((a << 8) | b).toString(16);
  const lo = ((c << 8) | d).toString(16);
  list.addSubnet(`::${hi}:${lo}`, 96 + prefix, 'ipv6');
  list.addSubnet(`::ffff:0:${hi}:${lo}`, 96 + prefix, 'ipv6');
  list.addSubnet(`64:ff9b::${hi}:${lo}`, 96 + prefix, 'ipv6');
  list.addSubnet(`64:ff9b:1::${hi}:${lo}`, 96 + prefix, 'ipv6');
  list.addSubnet(`2002:${hi}:${lo}::`, 16 + prefix, 'ipv6');
}

const LOCAL = new BlockList();
addIpv4(LOCAL, '127.0.0.0', 8);
addIpv4(LOCAL, '0.0.0.0', 8);
addIpv4(LOCAL, '169.254.0.0', 16);
LOCAL.addAddress('::1', 'ipv6');
LOCAL.addAddress('::', 'ipv6');
LOCAL.addSubnet('fe80::', 10, 'ipv6');
// Cloud metadata services outside the link-local ranges: AWS's IPv6 endpoint, Alibaba Cloud's,
// and Azure's WireServer (the others answer on 169.254.169.254, covered above).
LOCAL.addAddress('fd00:ec2::254', 'ipv6');
addIpv4(LOCAL, '100.100.100.200', 32);
addIpv4(LOCAL, '168.63.129.16', 32);

/** How long the list of this machine's own addresses is reused before the interfaces are read again. */
const OWN_ADDRESSES_TTL_MS = 1000;
let own: { list: BlockList; until: number } | undefined;

/** The addresses of this machine's network interfaces (they may change: DHCP, VPNs), re-read at most every second. */
function ownAddresses(): BlockList {
  const now = performance.now();
  if (own && now < own.until) return own.list;
  const list = new BlockList();
  for (const addrs of Object.values(networkInterfaces())) {
    for (const a of addrs ?? []) {
      if (a.family === 'IPv4') addIpv4(list, a.address, 32);
      else list.addAddress(a.address, 'ipv6');
    }
  }
  own = { list, until: now + OWN_ADDRESSES_TTL_MS };
  return list;
}

/**
 * True for a loopback, unspecified or link-local IP address, a cloud metadata service's, or one
 * of this machine's own interface addresses (also IPv4-mapped, `::ffff:127.0.0.1`).
 */
export function isLocalAddress(ip: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  const family = mapped ? 4 : isIP(ip);
  if (family === 0) return false;
  const addr = mapped ? mapped[1]! : ip;
  const type = family === 4 ? 'ipv4' : 'ipv6';
  return LOCAL.check(addr, type) || ownAddresses().check(addr, type);
}

/** `localhost` and names below it (RFC 6761), or a local literal address. */
const isLocalHost = (host: string) => host === 'localhost' || host.endsWith('.localhost') || isLocalAddress(host);

/** `[::1]` and `::1` are one host; names compare case-insensitively. */
export const bare = (host: string) => host.toLowerCase().replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '');

/**
 * An allow-list entry as the URL parser gives hosts, so that it compares with them: a name in
 * Unicode (`bücher.example`, `*.bücher.example`) in its ASCII form (`xn--bcher-kva.example`),
 * lower case; an IPv6 address compressed (`2001:db8:0:0:0:0:0:10` is `2001:db8::10`, and
 * `::ffff:10.0.0.7` is `::ffff:a00:7`); an IPv4 address as the parser reads it. `rewrittenIpv4` says
 * when the parser reads an entry as an IPv4 address other than it shows (`10.0.0.010` is 10.0.0.8:
 * a leading 0 is octal; `1` is 0.0.0.1): the configuration refuses those (config.ts), as an
 * operator cannot have meant them. An entry that is no host at all stays as written (and matches
 * nothing).
 */
export function allowEntryHost(entry: string): { host: string; rewrittenIpv4?: string; noUrlHost?: true } {
  const e = entry.trim();
  const wildcard = e.startsWith('*.');
  const body = bare(wildcard ? e.slice(2) : e);
  let host: string;
  try {
    host = bare(new URL(`http://${isIP(body) === 6 ? `[${body}]` : body}/`).hostname);
  } catch {
    return { host: e, noUrlHost: true }; // 256.1.1.1: no URL can name it
  }
  const rewrittenIpv4 = isIP(host) === 4 && host !== body ? host : undefined;
  return { host: wildcard ? `*.${host}` : host, ...(rewrittenIpv4 ? { rewrittenIpv4 } : {}) };
}

/**
 * An allow-list entry's host and port: `host:port`, `[ipv6]:port` or `*.example.com:port` allow that
 * port alone (a webhooks tester's case: with `127.0.0.1` listed for a receiver on this machine,
 * every org admin could aim at every local port); an entry without one, any port. An IPv6 address
 * with a port is written in brackets (`::1:8443` is an address).
 */
export function splitAllowEntry(entry: string): { host: string; port?: number } {
  const e = entry.trim();
  const m = /^\[([^\]]*)\]:(\d{1,5})$/.exec(e) ?? /^([^:[\]]+):(\d{1,5})$/.exec(e);
  return m ? { host: m[1]!, port: Number(m[2]) } : { host: e };
}

/**
 * True when `host` (on `port`) is on the list: an entry is a host name or IP address (exact match),
 * or `*.example.com`, which allows every name below example.com (not example.com itself), with a
 * port that it allows alone (splitAllowEntry).
 */
export function hostAllowed(host: string, allowHosts: readonly string[], port?: number): boolean {
  const h = bare(host);
  return allowHosts.some((entry) => {
    const { host: entryHost, port: only } = splitAllowEntry(entry);
    if (only !== undefined && only !== port) return false;
    const e = allowEntryHost(entryHost).host;
    if (e.startsWith('*.')) return h.endsWith(e.slice(1)) && h.length > e.length - 1;
    return h === e;
  });
}

/**
 * A host name as DNS can look it up, in ASCII (as the URL parser writes hosts): labels of 1–63
 * letters, digits, `-` and `_` (Docker Compose names services so), none starting or ending with
 * `-`, 253 characters at most, an optional final dot, and punycode (`xn--`) that decodes. The URL
 * parser takes `a..b`, `-a.test`, `*.example.com` and `.` as hosts: such a webhook could only ever
 * fail with "not found" (a tester's case), so it is refused when written. HOST (config.ts) is
 * checked by it too.
 */
export function isHostName(host: string): boolean {
  const name = host.endsWith('.') ? host.slice(0, -1) : host;
  if (name === '' || name.length > 253) return false;
  return name.split('.').every((label) => /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/i.test(label) && (!/^xn--/i.test(label) || domainToUnicode(label) !== ''));
}

/** A webhook URL as the audit log keeps it: its query (often the receiver's credential) as `?…`. */
export function withoutQuery(url: string): string {
  const q = url.indexOf('?');
  return q < 0 ? url : `${url.slice(0, q)}?…`;
}

/** Validates a webhook URL; returns it normalized (WHATWG URL serialization) or the reason. */
export function checkWebhookUrl(raw: string, allowHosts: readonly string[], allowLocal = false): UrlVerdict {
  if (raw.length > MAX_URL) return { ok: false, code: 'invalid_url', reason: `must be at most ${MAX_URL} characters` };
  // The URL parser forgives what a browser's address bar gets typed: it drops tabs and line breaks
  // anywhere and spaces at the ends, and reads `http:///path` as the host `path`. A webhook URL
  // is configuration, so it is taken as written or refused.
  if (/[\u0000-\u0020\u007f]/.test(raw)) return { ok: false, code: 'invalid_url', reason: 'must not contain spaces, tabs, line breaks or control characters (percent-encode them)' };
  // and drops characters that show nothing (a soft hyphen, zero-width spaces, variation selectors:
  // IDNA's "ignored" ones), and C1 controls: `http://h\u00adost/` would be stored as http://host/
  if (INVISIBLE.test(raw)) return { ok: false, code: 'invalid_url', reason: 'must not contain invisible or formatting characters (a soft hyphen, a zero-width space, C1 controls…): a URL parser drops them' };
  // and it reads a backslash as a slash: `http://host\x` would be stored as http://host/x
  if (raw.includes('\\')) return { ok: false, code: 'invalid_url', reason: 'must not contain a backslash (write / between path segments, or %5C for a backslash)' };
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    // the port of `scheme://[user@]host:port`, when one was written after the host
    const port = /^https?:\/\/(?:[^/?#@]*@)?(?:\[[^\]]*\]|[^/?#:[]*):([^/?#]*)/i.exec(raw)?.[1];
    return { ok: false, code: 'invalid_url', reason: port !== undefined && !/^\d{1,5}$/.test(port) ? `port ${port} is not a port: it must be a number between 1 and 65535` : port !== undefined && Number(port) > 65535 ? `port ${port} is not a port: it must be between 1 and 65535` : 'must be an absolute http:// or https:// URL' };
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return { ok: false, code: 'invalid_url', reason: `must use http or https, not ${u.protocol.replace(/:$/, '')}` };
  if (!/^https?:\/\/[^/\\?#]/i.test(raw)) return { ok: false, code: 'invalid_url', reason: 'must be written scheme://host…, with the host right after the two slashes' };
  if (!u.hostname) return { ok: false, code: 'invalid_url', reason: 'must name a host' };
  if (!isIP(bare(u.hostname)) && !isHostName(u.hostname)) return { ok: false, code: 'invalid_url', reason: `host ${u.hostname} is not a host name that can be looked up (labels of letters, digits, - and _, not starting or ending with -, none empty)` };
  if (u.port === '0') return { ok: false, code: 'invalid_url', reason: 'port 0 is not a port: it must be between 1 and 65535' };
  if (u.username || u.password) return { ok: false, code: 'invalid_url', reason: 'must not contain a user name or password: give the receiver the webhook\'s token instead, sent with every delivery as X-Ledger-Token' };
  if (u.hash || raw.includes('#')) return { ok: false, code: 'invalid_url', reason: 'must not contain a fragment (#…)' };
  const port = u.port === '' ? (u.protocol === 'https:' ? 443 : 80) : Number(u.port);
  if (allowHosts.length && !hostAllowed(u.hostname, allowHosts, port)) {
    const named = hostAllowed(u.hostname, allowHosts.map((e) => splitAllowEntry(e).host));
    return { ok: false, code: 'host_not_allowed', reason: named ? `host ${bare(u.hostname)} is in WEBHOOK_ALLOW_HOSTS (${allowHosts.join(', ')}) with other ports than ${port}` : `host ${bare(u.hostname)} is not in WEBHOOK_ALLOW_HOSTS (${allowHosts.join(', ')})` };
  }
  if (!allowLocal && isLocalHost(bare(u.hostname))) {
    return { ok: false, code: 'host_not_allowed', reason: `host ${bare(u.hostname)} is this machine, a link-local address or a cloud metadata service; set WEBHOOK_ALLOW_LOCAL=true to allow it` };
  }
  // the stored form, which is what is sent and shown, keeps to the limit too: percent-encoding
  // (`{`, `ü`) and punycode make it longer than what was typed (a tester's case: accepted, then
  // every attempt failed as too long, and the URL GET showed could not be sent back)
  if (u.href.length > MAX_URL) return { ok: false, code: 'invalid_url', reason: `must be at most ${MAX_URL} characters once normalized (percent-encoded and punycode), and is ${u.href.length}` };
  return { ok: true, url: u.href, host: u.host };
}
