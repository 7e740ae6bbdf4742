/**
 * Which URLs a webhook may call (SPEC §6): absolute http or https URLs without credentials or a
 * fragment, and, when WEBHOOK_ALLOW_HOSTS is set, only on the hosts it lists. Checked when a
 * webhook is created or changed, and again before every attempt (the list may have changed since).
 */

export type UrlVerdict = { ok: true; url: string; host: string } | { ok: false; reason: string; code: 'invalid_url' | 'host_not_allowed' };

const MAX_URL = 2048;

/** `[::1]` and `::1` are one host; names compare case-insensitively. */
const bare = (host: string) => host.toLowerCase().replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '');

/**
 * True when `host` is on the list: an entry is a host name or IP address (exact match), or
 * `*.example.com`, which allows every name below example.com (not example.com itself).
 */
export function hostAllowed(host: string, allowHosts: readonly string[]): boolean {
  const h = bare(host);
  return allowHosts.some((entry) => {
    const e = bare(entry.trim());
    if (e.startsWith('*.')) return h.endsWith(e.slice(1)) && h.length > e.length - 1;
    return h === e;
  });
}

/** Validates a webhook URL; returns it normalized (WHATWG URL serialization) or the reason. */
export function checkWebhookUrl(raw: string, allowHosts: readonly string[]): UrlVerdict {
  if (raw.length > MAX_URL) return { ok: false, code: 'invalid_url', reason: `must be at most ${MAX_URL} characters` };
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return { ok: false, code: 'invalid_url', reason: 'must be an absolute http:// or https:// URL' };
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return { ok: false, code: 'invalid_url', reason: `must use http or https, not ${u.protocol.replace(/:$/, '')}` };
  if (!u.hostname) return { ok: false, code: 'invalid_url', reason: 'must name a host' };
  if (u.username || u.password) return { ok: false, code: 'invalid_url', reason: 'must not contain a user name or password; use token to authenticate to the receiver' };
  if (u.hash || raw.includes('#')) return { ok: false, code: 'invalid_url', reason: 'must not contain a fragment (#…)' };
  if (allowHosts.length && !hostAllowed(u.hostname, allowHosts)) {
    return { ok: false, code: 'host_not_allowed', reason: `host ${bare(u.hostname)} is not in WEBHOOK_ALLOW_HOSTS (${allowHosts.join(', ')})` };
  }
  return { ok: true, url: u.href, host: u.host };
}
