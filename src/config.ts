import { accessSync, constants, existsSync, readFileSync, statSync } from 'node:fs';
import { isIP } from 'node:net';
import { dirname, resolve } from 'node:path';
import cron from 'node-cron';
import { MAX_STORED_REJECTIONS } from './jobs/rejections.ts';
import { LOG_LEVELS, type LogLevel } from './log.ts';
import { invisibleProblem } from './normalize.ts';
import { allowEntryHost, isHostName, splitAllowEntry } from './webhooks/url-policy.ts';

/**
 * The whole configuration, loaded once (defaults < environment < flags), validated, frozen (P12).
 * Every setting has an environment name and a flag; secrets also have a `…_FILE` form.
 */
export interface Config {
  dataDir: string;
  port: number;
  host: string;
  baseUrl: string;
  /** AUTH_URL as given and checked: a path (`/auth`) or a full URL (`https://login.example.com/sso`). */
  authUrl: string;
  /** Path prefix of the `{auth_url}/v1/session` alias, e.g. `/auth` (AUTH_URL's path). */
  authPath: string;
  /** Where clients reach the alias (the OpenAPI document's server for it): AUTH_URL's origin when it is a full URL, else BASE_URL. */
  authServerUrl: string;
  adminEmail: string | undefined;
  adminPassword: string | undefined;
  tokenTtlSeconds: number;
  refreshIdleSeconds: number;
  refreshMaxSeconds: number;
  bcryptCost: number;
  maxApiContacts: number;
  maxUploadBytes: number;
  maxJsonBytes: number;
  /** Rejected rows or records a job keeps for its errors CSV (src/jobs/rejections.ts). */
  maxStoredRejections: number;
  /** Days an ended job's rejected rows or records are kept (the nightly retention, jobs/rejections-retention.ts); 0: until deleted. */
  rejectionsKeepDays: number;
  /** Days a feed file stays in inbox/done/ after its feed ended (the nightly retention, tracking/feed-files.ts); 0: until deleted. */
  inboxDoneKeepDays: number;
  /** Days of daily change sets kept (tracking/daily-sets.ts prune); 0: until their ledger goes. */
  changeSetsKeepDays: number;
  backupCron: string | undefined;
  backupKeep: number;
  logLevel: LogLevel;
  corsOrigins: string[];
  tlsCert: string | undefined;
  tlsKey: string | undefined;
  trustProxy: boolean;
  /** Proxies in front of the server that append to X-Forwarded-For: the client address is the entry the outermost one added. */
  trustProxyHops: number;
  jwtIssuer: string;
  jwtAudience: string;
  loginMaxFailuresPerAccount: number;
  loginMaxFailuresPerAddress: number;
  loginWindowSeconds: number;
  webhookAllowHosts: string[];
  webhookAllowLocal: boolean;
  webhookTimeoutMs: number;
  /** A client must send its request head within this (RELIABILITY.md I2). */
  headersTimeoutMs: number;
  /** Connections open at once from one client address; more are closed as they come (0: no limit). */
  maxConnectionsPerAddress: number;
  /** Connections open at once in all (0: no limit). */
  maxConnections: number;
  /** A client must send its whole request, body included, within this (an upload too). */
  requestTimeoutMs: number;
  /** Bearer token that may read /metrics (besides superusers); undefined: superusers only. */
  metricsToken: string | undefined;
  /** Event-loop delay that, held for half a second (or a loop 90 % busy), makes large bulk bodies get 503 (src/http/load-shedding.ts); 0: never. */
  overloadDelayMs: number;
  /**
   * Checks every JSON answer against the schema its route declares (src/http/route.ts checkAnswer;
   * a mismatch is a 500 with the zod issues in the log). On under the test suite, off in production.
   */
  checkAnswers: boolean;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Parse<T> = (raw: string, name: string) => T;

interface Setting<K extends keyof Config> {
  key: K;
  env: string;
  flag: string;
  secret?: boolean;
  /**
   * `NAME_FILE` names the file that NAME would name (a setting that is a file's path, as TLS_KEY:
   * systemd credentials and Docker secrets hand over a path), instead of a file holding the value.
   */
  fileIsValue?: boolean;
  help: string;
  parse: Parse<Config[K]>;
}

const int = (min: number, max: number): Parse<number> => (raw, name) => {
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return n;
};
const str: Parse<string> = (raw) => raw;
const optStr: Parse<string | undefined> = (raw) => (raw === '' ? undefined : raw);
const bool: Parse<boolean> = (raw, name) => {
  const v = raw.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off', ''].includes(v)) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
};
const list: Parse<string[]> = (raw) => raw.split(',').map((s) => s.trim()).filter(Boolean);
/**
 * Host names (`hooks.example.com`, `bücher.example`), `*.` before one, or IP addresses (`10.0.0.5`,
 * `::1`, `[::1]`), each with a port that it allows alone if one is written (`127.0.0.1:8443`,
 * `[::1]:8443`; src/webhooks/url-policy.ts splitAllowEntry): an entry with a scheme or a path would
 * never match a URL's host, and allow nothing without a word (hostAllowed).
 */
const hostList: Parse<string[]> = (raw, name) => {
  const entries = list(raw, name);
  // set to separators alone (a template's value came out ", "): allowing any host would undo what it was set for
  if (raw.trim() !== '' && entries.length === 0) throw new ConfigError(`${name} "${raw}" names no host; list the hosts webhooks may call, or leave it empty to allow any`);
  return entries.map((entry) => {
    const { host: h, port } = splitAllowEntry(entry);
    const bare = h.replace(/^\[(.*)\]$/, '$1');
    if (!isIP(bare) && !/^(?:\*\.)?(?:[\p{L}\p{N}](?:[\p{L}\p{N}_-]*[\p{L}\p{N}])?\.)*[\p{L}\p{N}](?:[\p{L}\p{N}_-]*[\p{L}\p{N}])?\.?$/u.test(h)) {
      throw new ConfigError(`${name}: "${redactUserinfo(entry)}" is not a host name or IP address (write hooks.example.com, *.example.com or 10.0.0.5, with :port to allow that port alone: no scheme or path)`);
    }
    if (port !== undefined && (port < 1 || port > 65535)) throw new ConfigError(`${name}: "${entry}" has no port a URL can name (1 to 65535)`);
    const { host, rewrittenIpv4, noUrlHost } = allowEntryHost(h);
    if (noUrlHost) throw new ConfigError(`${name}: "${entry}" is no host a URL can name (an IPv4 address has four numbers up to 255), so it would never match`);
    if (rewrittenIpv4) throw new ConfigError(`${name}: "${entry}" is read in a URL as the address ${rewrittenIpv4} (a part with a leading 0 is octal, 0x hexadecimal, and missing parts are filled in); write it as four decimal numbers (10.0.0.5)`);
    // as URLs give hosts (IPv6 compressed, names in lower-case ASCII), so that both compare
    return port === undefined ? host : `${isIP(host) === 6 ? `[${host}]` : host}:${port}`;
  });
};
/** A host name or IP address to listen on (`[::1]` as ::1); empty, as unit templates leave it, is the default. */
const listenHost: Parse<string> = (raw, name) => {
  const trimmed = raw.trim();
  // brackets hold an IPv6 address only ([::1]); [127.0.0.1] is no address
  const h = /^\[.*\]$/.test(trimmed) && isIP(trimmed.slice(1, -1)) === 6 ? trimmed.slice(1, -1) : trimmed;
  if (h === '') return DEFAULTS.host;
  if (isIP(h) || isHostName(h)) return h;
  throw new ConfigError(`${name} must be an IP address or a host name of this machine (0.0.0.0 for all; no scheme, port or path), got "${redactUserinfo(raw)}"`);
};
/**
 * A URL setting's value as an error message may show it: the userinfo (`user:password@`) replaced
 * by `***@`, since a message reaches the journal and the terminal, and the password in
 * `http://u:p@x.example/` is one (a tester's BASE_URL was printed whole). The part after the
 * authority is kept: it is what the message is about.
 */
export function redactUserinfo(raw: string): string {
  // Everything up to the value's last @ (after the scheme, if any): a password holding an
  // unencoded / ? or # — the very value a URL parser refuses — would end the authority early and
  // show the rest of the password (a reviewer's case: "https://admin:s3cr#t@crm…"). A refused
  // value may lose a path's @ too; it is shown only to say what was refused.
  const at = raw.lastIndexOf('@');
  if (at < 0) return raw;
  const scheme = /^\s*[a-z][a-z0-9+.-]*:\/\//i.exec(raw)?.[0] ?? '';
  return `${scheme}***${raw.slice(at)}`;
}

/** Browser origins (`https://crm.example.org`, with a port if not the scheme's), or `*` for any; a trailing / is dropped. */
const originList: Parse<string[]> = (raw, name) =>
  list(raw, name).map((o) => {
    if (o === '*') return o;
    let u: URL | undefined;
    try {
      u = new URL(o);
    } catch {
      // reported below
    }
    if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:') || u.pathname !== '/' || u.search || u.hash || u.username || u.password) {
      throw new ConfigError(`${name}: "${redactUserinfo(o)}" is not an origin (write https://crm.example.org, with :port when not the default; no path), or * for any`);
    }
    return u.origin;
  });
/**
 * A base URL that links are written under (`Location`, the OpenAPI servers, links in mails and
 * webhooks): scheme, host, port and path only — a query, a fragment or credentials would end up in
 * the middle of every link (a tester's `…/sub?q=1#frag/api/ledger/v1/…`).
 */
const url: Parse<string> = (raw, name) => {
  let u: URL | undefined;
  try {
    u = new URL(raw);
  } catch {
    // reported below
  }
  if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:')) throw new ConfigError(`${name} must be an http:// or https:// URL, got "${redactUserinfo(raw)}"`);
  if (u.search || u.hash || u.username || u.password || raw.trim().endsWith('?') || raw.trim().endsWith('#')) {
    throw new ConfigError(`${name} must be a URL without a query, fragment or credentials (scheme, host, port and path only), got "${redactUserinfo(raw)}"`);
  }
  return `${u.origin}${u.pathname.replace(/\/+$/, '')}`;
};
/** JWT_ISSUER, the `iss` claim: a name or URL without spaces or control characters; empty is the default. */
const issuer: Parse<string> = (raw, name) => {
  if (raw === '') return DEFAULTS.jwtIssuer;
  if (/[\s\p{C}]/u.test(raw)) throw new ConfigError(`${name} must be a name or URL without spaces or control characters, got ${JSON.stringify(raw)}`);
  return raw;
};
/**
 * AUTH_URL: a path, or a full URL whose path is where the alias is served and whose origin is
 * where clients reach it (a proxy's host); kept as `origin` + path, or the path alone. A query or
 * credentials in it, which BASE_URL refuses, are let be and dropped.
 */
const authUrl: Parse<string> = (raw, name) => {
  const full = /^https?:\/\//i.test(raw) && URL.canParse(raw) ? new URL(raw) : undefined;
  const path = `/${(full ? full.pathname : raw).replace(/^\/+|\/+$/g, '')}`;
  if (path === '/' || !/^(\/[A-Za-z0-9._~-]+)+$/.test(path) || path.startsWith('/api/')) {
    throw new ConfigError(`${name} must be a URL or path such as /auth (not / and not under /api/), got "${redactUserinfo(raw)}"`);
  }
  return full ? `${full.origin}${path}` : path;
};
const logLevel: Parse<LogLevel> = (raw, name) => {
  // quoted as JSON: a carriage return left by an environment file saved on Windows is shown (\r), not "info" (an operator tester's case)
  // WARN, Info: the level whatever its case, as booleans are read (an operator tester's case)
  const level = raw.trim().toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(level)) throw new ConfigError(`${name} must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(raw)}`);
  return level as LogLevel;
};
const cronExpr: Parse<string | undefined> = (given, name) => {
  // blanks around it (a carriage return from an environment file saved with Windows line ends) say nothing (an operator tester's case)
  const raw = given.trim();
  if (raw === '') return undefined;
  if (!cron.validate(raw)) throw new ConfigError(`${name} must be a cron expression such as "0 3 * * *", got ${JSON.stringify(given)}`);
  return raw;
};

/**
 * The data folder as given: blanks or a carriage return at either end are refused unless a folder
 * of exactly that name exists — a value quoted with a space inside (Docker's --env-file keeps it)
 * or from a file with Windows line ends made a new, empty installation beside the real one and
 * printed its new superuser's password (an operator tester's case).
 */
const dataFolder: Parse<string> = (raw, name) => {
  if (raw.trim() === '') return DEFAULTS.dataDir; // empty, as unit templates leave it, is the default (./data), never the working directory itself
  if (raw !== raw.trim() && !existsSync(resolve(raw))) {
    throw new ConfigError(`${name} ${JSON.stringify(raw)} begins or ends with a blank or a carriage return, which would be part of the folder's name, and no such folder exists; remove it (${JSON.stringify(raw.trim())}${existsSync(resolve(raw.trim())) ? ' exists' : ''})`);
  }
  return resolve(raw);
};
const secretToken: Parse<string | undefined> = (given, name) => {
  // a token holds no white space: what surrounds it in its file (a blank line after it, spaces) is
  // the file's, as Prometheus's own token files are read (an operator tester's refused METRICS_TOKEN_FILE)
  const raw = given.trim();
  if (raw === '') return undefined;
  // a bearer token is sent as RFC 6750's token68: letters, digits and - . _ ~ + / (then any '=')
  if (raw.length < 16 || !/^[A-Za-z0-9._~+/-]+=*$/.test(raw)) {
    throw new ConfigError(`${name} must be at least 16 characters of A–Z, a–z, 0–9 and - . _ ~ + / (a bearer token; e.g. openssl rand -hex 24)`);
  }
  return raw;
};
const email: Parse<string | undefined> = (raw, name) => {
  if (raw === '') return undefined;
  if (!/^[^\s@]+@[^\s@]+$/.test(raw.trim())) throw new ConfigError(`${name} must be an e-mail address, got "${raw}"`);
  const invisible = invisibleProblem(raw.trim(), name);
  if (invisible) throw new ConfigError(invisible);
  return raw.trim();
};

export const MIN_BCRYPT_COST = 10;
/** Set to 1 by the test suite only: lets BCRYPT_COST go below MIN_BCRYPT_COST. */
export const WEAK_HASHING_FOR_TESTS = 'CONTACT_LEDGER_TEST_WEAK_HASHING';
/** 4–15 are read (the test suite asks for 4 by name, see loadConfig); the message names what operators may use. */
const bcryptCost: Parse<number> = (raw, name) => {
  try {
    return int(4, 15)(raw, name);
  } catch {
    throw new ConfigError(`${name} must be an integer from ${MIN_BCRYPT_COST} to 15, got "${raw}"`);
  }
};

const SETTINGS: { [K in keyof Config]?: Setting<K> }[keyof Config][] = [
  { key: 'dataDir', env: 'CONTACT_LEDGER_DATA', flag: 'data', help: 'data folder (database, keys, uploads)', parse: dataFolder },
  { key: 'port', env: 'PORT', flag: 'port', help: 'TCP port to listen on', parse: int(0, 65535) },
  { key: 'host', env: 'HOST', flag: 'host', help: 'address to listen on', parse: listenHost },
  { key: 'baseUrl', env: 'BASE_URL', flag: 'base-url', help: 'public URL of this service', parse: url },
  { key: 'authUrl', env: 'AUTH_URL', flag: 'auth-url', help: 'URL or path of the {auth_url}/v1/session alias', parse: authUrl },
  { key: 'adminEmail', env: 'CONTACT_LEDGER_ADMIN_EMAIL', flag: 'admin-email', secret: true, help: 'first superuser e-mail (first start)', parse: email },
  { key: 'adminPassword', env: 'CONTACT_LEDGER_ADMIN_PASSWORD', flag: 'admin-password', secret: true, help: 'first superuser password (first start)', parse: optStr },
  { key: 'tokenTtlSeconds', env: 'TOKEN_TTL_SECONDS', flag: 'token-ttl-seconds', help: 'access-token lifetime', parse: int(60, 86_400) },
  { key: 'refreshIdleSeconds', env: 'REFRESH_TTL_SECONDS', flag: 'refresh-ttl-seconds', help: 'refresh-token lifetime without use', parse: int(300, 365 * 86_400) },
  { key: 'refreshMaxSeconds', env: 'REFRESH_MAX_AGE_SECONDS', flag: 'refresh-max-age-seconds', help: 'absolute lifetime of a sign-in', parse: int(300, 3 * 365 * 86_400) },
  { key: 'bcryptCost', env: 'BCRYPT_COST', flag: 'bcrypt-cost', help: 'bcrypt work factor for new password hashes', parse: bcryptCost },
  { key: 'maxApiContacts', env: 'MAX_API_CONTACTS', flag: 'max-api-contacts', help: 'most contacts in one API call', parse: int(1, 100_000) },
  { key: 'maxUploadBytes', env: 'MAX_UPLOAD_BYTES', flag: 'max-upload-bytes', help: 'largest CSV upload', parse: int(1024, 64 * 1024 ** 3) },
  { key: 'maxJsonBytes', env: 'MAX_JSON_BYTES', flag: 'max-json-bytes', help: 'largest JSON request body', parse: int(1024, 256 * 1024 ** 2) },
  { key: 'maxStoredRejections', env: 'MAX_STORED_REJECTIONS', flag: 'max-stored-rejections', help: 'rejected rows or records a job keeps for its errors CSV', parse: int(1, 1_000_000_000) },
  { key: 'rejectionsKeepDays', env: 'REJECTIONS_KEEP_DAYS', flag: 'rejections-keep-days', help: "days an ended import's rejected rows and an ended feed's rejected records are kept (0: until deleted through the API)", parse: int(0, 36_500) },
  { key: 'inboxDoneKeepDays', env: 'INBOX_DONE_KEEP_DAYS', flag: 'inbox-done-keep-days', help: 'days a feed file stays in inbox/done/ after its feed ended (0: until you delete it)', parse: int(0, 36_500) },
  { key: 'changeSetsKeepDays', env: 'CHANGE_SETS_KEEP_DAYS', flag: 'change-sets-keep-days', help: 'days of daily change sets kept (0: until their ledger is deleted)', parse: int(0, 36_500) },
  { key: 'backupCron', env: 'BACKUP_CRON', flag: 'backup-cron', help: 'schedule of automatic backups (cron)', parse: cronExpr },
  { key: 'backupKeep', env: 'BACKUP_KEEP', flag: 'backup-keep', help: 'automatic backups to keep', parse: int(1, 10_000) },
  { key: 'logLevel', env: 'LOG_LEVEL', flag: 'log-level', help: 'log level', parse: logLevel },
  { key: 'corsOrigins', env: 'CORS_ORIGINS', flag: 'cors-origins', help: 'comma-separated origins allowed to call the API from a browser', parse: originList },
  { key: 'tlsCert', env: 'TLS_CERT', flag: 'tls-cert', help: 'PEM certificate file (serve HTTPS)', parse: optStr },
  { key: 'tlsKey', env: 'TLS_KEY', flag: 'tls-key', fileIsValue: true, help: 'PEM private key file (serve HTTPS)', parse: optStr },
  { key: 'trustProxy', env: 'TRUST_PROXY', flag: 'trust-proxy', help: 'trust X-Forwarded-* headers from a reverse proxy', parse: bool },
  { key: 'trustProxyHops', env: 'TRUST_PROXY_HOPS', flag: 'trust-proxy-hops', help: 'reverse proxies in a row in front of the server (the client address is the X-Forwarded-For entry the outermost one added)', parse: int(1, 10) },
  { key: 'jwtIssuer', env: 'JWT_ISSUER', flag: 'jwt-issuer', help: 'iss claim of access tokens', parse: issuer },
  { key: 'loginMaxFailuresPerAccount', env: 'LOGIN_MAX_FAILURES_PER_ACCOUNT', flag: 'login-max-failures-per-account', help: 'failed sign-ins per account per window before 429', parse: int(1, 100_000) },
  { key: 'loginMaxFailuresPerAddress', env: 'LOGIN_MAX_FAILURES_PER_ADDRESS', flag: 'login-max-failures-per-address', help: 'failed sign-ins per client address per window before 429', parse: int(1, 1_000_000) },
  { key: 'loginWindowSeconds', env: 'LOGIN_WINDOW_SECONDS', flag: 'login-window-seconds', help: 'throttling window', parse: int(1, 86_400) },
  { key: 'metricsToken', env: 'METRICS_TOKEN', flag: 'metrics-token', secret: true, help: 'bearer token that may read /metrics (superusers always may)', parse: secretToken },
  { key: 'webhookAllowHosts', env: 'WEBHOOK_ALLOW_HOSTS', flag: 'webhook-allow-hosts', help: 'comma-separated host names webhooks may call, host:port for one port alone (empty: any)', parse: hostList },
  { key: 'webhookAllowLocal', env: 'WEBHOOK_ALLOW_LOCAL', flag: 'webhook-allow-local', help: 'let webhooks call this machine (loopback and its own interface addresses) and link-local addresses and cloud metadata services; off by default', parse: bool },
  { key: 'webhookTimeoutMs', env: 'WEBHOOK_TIMEOUT_MS', flag: 'webhook-timeout-ms', help: 'deadline of one webhook delivery attempt (ms)', parse: int(100, 300_000) },
  { key: 'headersTimeoutMs', env: 'HEADERS_TIMEOUT_MS', flag: 'headers-timeout-ms', help: 'a client must send its request headers within this (ms), else 408', parse: int(100, 600_000) },
  { key: 'maxConnectionsPerAddress', env: 'MAX_CONNECTIONS_PER_ADDRESS', flag: 'max-connections-per-address', help: 'connections open at once from one client (an IPv4 address, an IPv6 /64); more are closed as they come; 0: no limit; with TRUST_PROXY 0 unless set', parse: int(0, 1_000_000) },
  { key: 'maxConnections', env: 'MAX_CONNECTIONS', flag: 'max-connections', help: 'connections open at once in all; more are closed as they come; 0: no limit', parse: int(0, 1_000_000) },
  { key: 'overloadDelayMs', env: 'OVERLOAD_DELAY_MS', flag: 'overload-delay-ms', help: 'event-loop delay (ms) that, held for 0.5 s (or the loop 90 % busy for 0.5 s), makes large batches, uploads and feeds get 503 + Retry-After until it passes; 0: never', parse: int(0, 60_000) },
  { key: 'checkAnswers', env: 'CONTACT_LEDGER_CHECK_ANSWERS', flag: 'check-answers', help: 'for tests: check every JSON answer against the schema of its OpenAPI document (a mismatch is a 500, logged); costs time, keep it off in production', parse: bool },
  { key: 'requestTimeoutMs', env: 'REQUEST_TIMEOUT_MS', flag: 'request-timeout-ms', help: 'a client must send its whole request, upload included, within this (ms), else 408', parse: int(100, 86_400_000) },
];

const DEFAULTS: Omit<Config, 'baseUrl'> & { baseUrl?: string } = {
  dataDir: resolve('data'),
  port: 8080,
  host: '127.0.0.1',
  authUrl: '/auth',
  authPath: '/auth',
  authServerUrl: '',
  adminEmail: undefined,
  adminPassword: undefined,
  tokenTtlSeconds: 3600,
  refreshIdleSeconds: 30 * 86_400,
  refreshMaxSeconds: 90 * 86_400,
  bcryptCost: 12,
  maxApiContacts: 1000,
  maxUploadBytes: 512 * 1024 ** 2,
  maxJsonBytes: 4 * 1024 ** 2,
  maxStoredRejections: MAX_STORED_REJECTIONS,
  rejectionsKeepDays: 30,
  inboxDoneKeepDays: 30,
  changeSetsKeepDays: 30,
  backupCron: undefined,
  backupKeep: 7,
  logLevel: 'info',
  corsOrigins: [],
  tlsCert: undefined,
  tlsKey: undefined,
  trustProxy: false,
  trustProxyHops: 1,
  jwtIssuer: 'contact-ledger',
  jwtAudience: 'contact-ledger-api',
  loginMaxFailuresPerAccount: 10,
  loginMaxFailuresPerAddress: 50,
  loginWindowSeconds: 900,
  webhookAllowHosts: [],
  webhookAllowLocal: false,
  webhookTimeoutMs: 10_000,
  headersTimeoutMs: 20_000,
  requestTimeoutMs: 600_000,
  maxConnectionsPerAddress: 1024,
  maxConnections: 16_384,
  metricsToken: undefined,
  overloadDelayMs: 50,
  checkAnswers: false,
};

/** Flag names (without `--`) that configuration understands, for the CLI parser. */
export const CONFIG_FLAGS: readonly string[] = SETTINGS.map((s) => s!.flag);

/** Help lines for `--help`. */
/** The settings' help lines: those whose flags are given, or all. */
export function configHelp(only?: readonly string[]): string {
  return SETTINGS.filter((s) => !only || only.includes(s!.flag)).map((s) => `  --${s!.flag.padEnd(34)} ${s!.env.padEnd(32)} ${s!.help}`).join('\n');
}

/** The prefix of the program's own environment variables: one that names no setting is a mistake. */
const OWN_PREFIX = 'CONTACT_LEDGER_';

/** Every environment variable the configuration reads: each setting's name, and `NAME_FILE` of those that take one. */
function knownVariables(): Set<string> {
  const names = new Set<string>([WEAK_HASHING_FOR_TESTS]);
  for (const s of SETTINGS) {
    names.add(s!.env);
    if (s!.secret || s!.fileIsValue) names.add(`${s!.env}_FILE`);
  }
  return names;
}

/**
 * Optimal string alignment distance: insertions, deletions, substitutions, and two neighbours
 * swapped count one each (PROT is one from PORT, as a typist sees it, not two).
 */
export function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/** The known name closest to `name` within `max` edits (the first of equals), if any. */
function closest(name: string, known: Iterable<string>, max: number): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const k of known) {
    const distance = editDistance(name, k);
    if (distance <= max && (!best || distance < best.distance)) best = { name: k, distance };
  }
  return best?.name;
}

/**
 * Refuses a `CONTACT_LEDGER_…` variable that the configuration does not read: a misspelt
 * CONTACT_LEDGER_DATA or …_ADMIN_PASSWORD was ignored, and the server started a new, empty
 * installation in ./data with a generated password (a tester's case). The prefix is ours, so no
 * other program's variable is caught. Names the setting meant when one is within two edits, or
 * one is the start of it (CONTACT_LEDGER_DATA_DIR).
 */
function refuseUnknownOwnVariables(env: NodeJS.ProcessEnv): void {
  const known = knownVariables();
  const own = [...known].filter((k) => k.startsWith(OWN_PREFIX) && k !== WEAK_HASHING_FOR_TESTS);
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith(OWN_PREFIX) || known.has(name)) continue;
    if (name.endsWith('_FILE') && known.has(name.slice(0, -'_FILE'.length))) continue; // refused below, saying which settings take a file
    // CONTACT_LEDGER_METRICS_TOKEN: a setting of ours read without the prefix (an operator tester's case: no hint)
    const unprefixed = name.slice(OWN_PREFIX.length);
    const meant = (known.has(unprefixed) ? unprefixed : undefined) ?? closest(name, own, 2) ?? own.filter((k) => name.startsWith(`${k}_`)).sort((a, b) => b.length - a.length)[0];
    throw new ConfigError(`${name} is not a setting${meant ? ` (did you mean ${meant}?)` : ''}; contact-ledger reads no such variable — remove or rename it (contact-ledger serve --help lists the settings)`);
  }
}

/**
 * Environment variables that look like a misspelt setting of ours without our prefix (LOG_LEVL,
 * PROT): a warning each, never an error, since the environment holds every other program's
 * variables too. Within two edits of a setting's name, one for names of four letters or fewer:
 * HOME is two from HOST, and every environment has it.
 */
export function environmentWarnings(env: NodeJS.ProcessEnv): { variable: string; meant: string }[] {
  const known = knownVariables();
  const unprefixed = [...known].filter((k) => !k.startsWith(OWN_PREFIX));
  const out: { variable: string; meant: string }[] = [];
  for (const name of Object.keys(env).sort()) {
    if (name.startsWith(OWN_PREFIX) || known.has(name)) continue;
    const meant = unprefixed.find((k) => {
      const distance = editDistance(name, k);
      return distance >= 1 && distance <= (k.length <= 4 ? 1 : 2);
    });
    if (meant) out.push({ variable: name, meant });
  }
  return out;
}

/**
 * Builds the configuration from defaults, the environment and flags (flags win). A `…_FILE`
 * variable supplies the value of `…` from a file (Docker/systemd credentials). Throws ConfigError
 * naming the setting on any bad value.
 */
export function loadConfig(env: NodeJS.ProcessEnv, flags: Record<string, string | undefined> = {}, opts: { serving?: boolean } = {}): Readonly<Config> {
  refuseUnknownOwnVariables(env);
  const cfg: Record<string, unknown> = { ...DEFAULTS };
  for (const s of SETTINGS) {
    const setting = s!;
    let raw: string | undefined;
    let source = setting.env;
    const fileVar = `${setting.env}_FILE`;
    const file = setting.secret || setting.fileIsValue ? env[fileVar] : undefined;
    if (!setting.secret && !setting.fileIsValue && env[fileVar]) {
      throw new ConfigError(`${fileVar} is not read: only secrets are read from a file (CONTACT_LEDGER_ADMIN_EMAIL, CONTACT_LEDGER_ADMIN_PASSWORD, METRICS_TOKEN, and TLS_KEY's path); set ${setting.env}`);
    }
    if (flags[setting.flag] !== undefined) {
      raw = flags[setting.flag];
      source = `--${setting.flag}`;
    } else if (file && setting.fileIsValue) {
      if (env[setting.env]) throw new ConfigError(`${setting.env} and ${fileVar} are both set; set one of them`);
      raw = file;
      source = fileVar;
    } else if (file) {
      // an empty NAME= beside NAME_FILE (as compose files and unit templates leave it) does not hide the file
      if (env[setting.env]) throw new ConfigError(`${setting.env} and ${fileVar} are both set; set one of them`);
      source = fileVar;
      try {
        raw = readFileSync(file, 'utf8').replace(/\r?\n$/, '');
      } catch (err) {
        throw unreadableFile(fileVar, file, err);
      }
    } else if (env[setting.env] !== undefined) {
      raw = env[setting.env];
    }
    if (raw === undefined) continue;
    cfg[setting.key] = setting.parse(raw, source);
  }
  const c = cfg as unknown as Config;
  // Behind a reverse proxy every connection comes from the proxy, one per request in flight for a
  // proxy that streams bodies: a per-address limit there limits everyone together (a reviewer's
  // case), so it applies only when set outright; the proxy limits its clients.
  if (c.trustProxy && env.MAX_CONNECTIONS_PER_ADDRESS === undefined && flags['max-connections-per-address'] === undefined) c.maxConnectionsPerAddress = 0;
  if (!cfg.baseUrl) {
    const host = c.host === '0.0.0.0' || c.host === '::' ? 'localhost' : c.host.includes(':') ? `[${c.host}]` : c.host;
    c.baseUrl = `${c.tlsCert ? 'https' : 'http'}://${host}:${c.port}`;
    // a HOST no URL can hold (an IPv6 address with a zone, fe80::1%eth0) needs BASE_URL said outright
    if (!URL.canParse(c.baseUrl)) throw new ConfigError(`HOST ${c.host} cannot be written in a URL; set BASE_URL to the service's public URL`);
  }
  const auth = c.authUrl.startsWith('/') ? undefined : new URL(c.authUrl);
  c.authPath = auth ? auth.pathname : c.authUrl;
  c.authServerUrl = auth ? auth.origin : c.baseUrl;
  if (Boolean(c.tlsCert) !== Boolean(c.tlsKey)) throw new ConfigError('TLS_CERT and TLS_KEY must be set together');
  // read by the server alone: a command (a backup run by an operator who may not read the key, or
  // from the service's environment file while the certificate was moved) is not stopped by them
  // (an operator's case)
  for (const [name, file] of [['TLS_CERT', c.tlsCert], ['TLS_KEY', c.tlsKey]] as const) {
    if (!file || opts.serving === false) continue;
    try {
      accessSync(file, constants.R_OK);
    } catch (err) {
      throw unreadableFile(name, file, err);
    }
  }
  // OWASP / ASVS 2.4.4: a work factor of at least 10. The test suite alone hashes at 4, which it
  // has to ask for by name (an operator's typo never weakens every new password).
  if (c.bcryptCost < MIN_BCRYPT_COST && env[WEAK_HASHING_FOR_TESTS] !== '1') {
    throw new ConfigError(`BCRYPT_COST must be at least ${MIN_BCRYPT_COST} (OWASP, ASVS 2.4.4); ${c.bcryptCost} is for the test suite only`);
  }
  if (c.refreshMaxSeconds < c.refreshIdleSeconds) throw new ConfigError('REFRESH_MAX_AGE_SECONDS must be at least REFRESH_TTL_SECONDS');
  if (c.requestTimeoutMs < c.headersTimeoutMs) throw new ConfigError('REQUEST_TIMEOUT_MS must be at least HEADERS_TIMEOUT_MS');
  if (c.adminPassword !== undefined && c.adminEmail === undefined) {
    throw new ConfigError('CONTACT_LEDGER_ADMIN_PASSWORD needs CONTACT_LEDGER_ADMIN_EMAIL');
  }
  return Object.freeze(c);
}

/** The configuration as it may be logged: secrets masked. */
export function describeConfig(c: Config): Record<string, unknown> {
  const out: Record<string, unknown> = { ...c };
  for (const s of SETTINGS) if (s!.secret && out[s!.key] !== undefined) out[s!.key] = '***';
  return out;
}

/**
 * Why the file a setting names cannot be read, for a message that may reach a journal: the path,
 * when the value looks like one — written as a path (`/…`, `./…`, `../…`) in a folder that exists —
 * and else nothing of the value, which may be the secret itself, put where its file's path belongs
 * (a tester's case: a private key and a password printed whole). Only the error's code, never
 * Node's message, which repeats the value.
 */
export function unreadableFile(name: string, value: string, err: unknown): ConfigError {
  const code = (err as NodeJS.ErrnoException).code ?? 'unreadable';
  if (/^\.{0,2}\//.test(value) && !/\s/.test(value) && folderExists(dirname(value))) return new ConfigError(`${name}: cannot read ${value}: ${code}`);
  return new ConfigError(
    `${name}: cannot read the file it names (${code}); its value (${value.length} characters) is not shown, since it is no path in a folder that exists and may be a secret itself — ${name} takes the path of a file`,
  );
}

function folderExists(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
