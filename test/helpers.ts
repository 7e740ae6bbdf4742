// Test harness: a real app on an ephemeral port over a real SQLite file in a fresh temp folder.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { request as httpRequest, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type Koa from 'koa';
import { buildApp } from '../src/app.ts';
import { ManualClock, type Clock } from '../src/clock.ts';
import { loadConfig, type Config } from '../src/config.ts';
import type { ApiRouter } from '../src/http/route.ts';
import { createLogger } from '../src/log.ts';
import { openRuntime, type Runtime } from '../src/runtime.ts';
import { paths } from '../src/paths.ts';
import { WORKER_FILES } from './child-server.ts';

// The apps the tests run in their own process start their worker threads compiled as well
// (scripts/test-bundle.ts): a CSV worker started from TypeScript spent ~1 s of CPU stripping types,
// once for every upload read.
Object.assign(paths, WORKER_FILES);

export const ROOT_EMAIL = 'root@example.com';
export const ROOT_PASSWORD = 'root password 1';
/** A password every test user gets unless a test says otherwise. */
export const PASSWORD = 'correct horse battery';

export interface Response {
  status: number;
  headers: Headers;
  /** Parsed JSON when the response is JSON, else the text. */
  body: any;
  text: string;
}

export interface CallOptions {
  token?: string;
  body?: unknown;
  /** Sends application/x-www-form-urlencoded instead of JSON. */
  form?: Record<string, string>;
  headers?: Record<string, string>;
  /** A raw body sent as is (with the given headers). */
  raw?: string | Buffer | FormData;
}

export interface TestApp {
  base: string;
  app: Koa;
  rt: Runtime;
  routers: ApiRouter[];
  clock: Clock;
  dataDir: string;
  logs: string[];
  call(method: string, path: string, opts?: CallOptions): Promise<Response>;
  close(): Promise<void>;
}

const tempDirs: string[] = [];
process.once('exit', () => {
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

/**
 * `promise`, or a failure naming `what` after `ms`: a deadline that bounds a hang (a server that
 * stopped answering, a connection never closed), not a timing assertion.
 */
export async function within<T>(promise: Promise<T>, ms: number, what: string | (() => string)): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`not within ${ms} ms: ${typeof what === 'string' ? what : what()}`)), ms)));
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Polls `probe` every few milliseconds until `ok` accepts its value (by default any truthy value)
 * and returns that value; throws, naming `what`, once `timeoutMs` passed.
 */
export async function until<T>(what: string, probe: () => T | Promise<T>, ok: (v: T) => boolean = Boolean, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Something that calls the API (`TestApp.call`, or `request` bound to a child server's address). */
export type Call = (method: string, path: string, opts?: CallOptions) => Promise<Response>;

/** The access token of a password sign-in. */
export async function passwordToken(call: Call, email: string, password: string): Promise<string> {
  return (await call('POST', `${ID}/session`, { body: { grantType: 'password', email, password } })).body.accessToken as string;
}

/** A new organization (the caller becomes its admin) with one ledger: their ids. */
export async function orgWithLedger(call: Call, token: string, name: string): Promise<{ orgId: string; ledgerId: string }> {
  const orgId = (await call('POST', `${ID}/orgs`, { token, body: { name } })).body.id as string;
  const ledgerId = (await call('POST', `${LEDGER}/orgs/${orgId}/ledgers`, { token, body: { name: name.toLowerCase() } })).body.id as string;
  return { orgId, ledgerId };
}

/** Makes a temp folder that is removed when the process exits. */
export function tempDir(prefix = 'cl-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}

/**
 * Runs `fn` with a small file system of its own (tmpfs of `size`, e.g. "64k") mounted on `dir`, for
 * full-disk cases; unmounted after. Only where this process may mount one (root): elsewhere the
 * case is skipped, saying so.
 */
export async function withSmallDisk(dir: string, size: string, fn: () => unknown): Promise<void> {
  if (spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir]).status !== 0) {
    console.log('  (skipped: cannot mount a tmpfs here)');
    return;
  }
  try {
    await fn();
  } finally {
    spawnSync('umount', [dir]);
  }
}

/**
 * Runs `fn` with `dir` also mounted read-only (a read-only bind mount) on a new folder, which it is
 * given: read-only media, which even root cannot write. Unmounted after. Only where this process
 * may mount (root), as withSmallDisk: elsewhere the case is skipped, saying so.
 */
export async function withReadOnlyView(dir: string, fn: (view: string) => unknown): Promise<void> {
  const view = tempDir('cl-ro-');
  if (spawnSync('mount', ['--bind', dir, view]).status !== 0) {
    console.log('  (skipped: cannot mount here)');
    return;
  }
  try {
    if (spawnSync('mount', ['-o', 'remount,bind,ro', view]).status !== 0) {
      console.log('  (skipped: cannot make a read-only mount here)');
      return;
    }
    await fn(view);
  } finally {
    if (spawnSync('umount', [view]).status !== 0) spawnSync('umount', ['-l', view]);
  }
}

/** The configuration tests run with: fast bcrypt, quiet logs, a fixed superuser. */
export function testConfig(dataDir: string, overrides: Partial<Config> = {}, env: Record<string, string> = {}): Readonly<Config> {
  const base = loadConfig({
    CONTACT_LEDGER_DATA: dataDir,
    PORT: '0',
    BASE_URL: 'http://ledger.test',
    BCRYPT_COST: '4',
    CONTACT_LEDGER_TEST_WEAK_HASHING: '1',
    LOG_LEVEL: 'info',
    CONTACT_LEDGER_ADMIN_EMAIL: ROOT_EMAIL,
    CONTACT_LEDGER_ADMIN_PASSWORD: ROOT_PASSWORD,
    WEBHOOK_ALLOW_LOCAL: 'true', // the tests' webhook receivers listen on 127.0.0.1
    // load shedding has tests of its own (test/load-shedding.test.ts); elsewhere a busy CI machine,
    // or a test's own synchronous seeding, must not turn a large upload away
    OVERLOAD_DELAY_MS: '0',
    // every JSON answer is checked against the schema the OpenAPI document gives it (src/http/route.ts checkAnswer)
    CONTACT_LEDGER_CHECK_ANSWERS: 'true',
    ...env,
  });
  return Object.freeze({ ...base, ...overrides });
}

export async function request(base: string, method: string, path: string, opts: CallOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { ...opts.headers };
  let body: string | Buffer | FormData | undefined;
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.raw !== undefined) body = opts.raw;
  else if (opts.form) {
    headers['content-type'] ??= 'application/x-www-form-urlencoded';
    body = new URLSearchParams(opts.form).toString();
  } else if (opts.body !== undefined) {
    headers['content-type'] ??= 'application/json';
    body = JSON.stringify(opts.body);
  }
  const res = await fetch(base + path, { method, headers, body, redirect: 'manual' });
  const text = await res.text();
  let parsed: unknown = text;
  if (/json/.test(res.headers.get('content-type') ?? '') && text) parsed = JSON.parse(text);
  return { status: res.status, headers: res.headers, body: parsed, text };
}

/** Starts the whole application on 127.0.0.1:0 with a fresh data folder. */
export async function startApp(
  opts: {
    config?: Partial<Config>;
    env?: Record<string, string>;
    clock?: Clock;
    dataDir?: string;
    extend?: (app: Koa) => void;
    noScheduler?: boolean;
    /** Periodic and start-up tasks the scheduler leaves out (a test that runs them itself). */
    withoutTasks?: readonly string[];
    /** The built web application to serve at / (default: none, so tests do not depend on a build). */
    webDir?: string;
    /** How long a feed chunk takes records (0: one record a chunk). */
    feedChunkDeadlineMs?: number;
  } = {},
): Promise<TestApp> {
  const dataDir = opts.dataDir ?? tempDir();
  const config = testConfig(dataDir, opts.config, opts.env);
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      logs.push(chunk.toString());
      cb();
    },
  });
  const clock = opts.clock ?? new ManualClock(Date.now());
  const rt = await openRuntime(config, { clock, log: createLogger('info', sink), feedChunkDeadlineMs: opts.feedChunkDeadlineMs });
  const { app, routers } = buildApp(rt, { webDir: opts.webDir ?? join(dataDir, 'no-web-app'), extend: opts.extend });
  if (!opts.noScheduler) rt.scheduler.start({ except: opts.withoutTasks });
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
    // The test and the server share this process's event loop. A test that holds it for seconds
    // (seeding 150,000 rows, an integrity check of a backup) outlasts the server's 5 s keep-alive:
    // its timer then closes the idle connection just as the test sends the next request on it
    // (ECONNRESET, seen on a busy machine). The client (undici) drops idle connections itself.
    s.keepAliveTimeout = 600_000;
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    app,
    rt,
    routers,
    clock,
    dataDir,
    logs,
    call: (method, path, o) => request(base, method, path, o),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rt.close();
    },
  };
}

export const ID = '/api/identity/v1';
export const LEDGER = '/api/ledger/v1';

/** Signs in with the password grant and returns the session body (throws on failure). */
export async function signIn(t: TestApp, email: string, password: string): Promise<{ accessToken: string; refreshToken: string; [k: string]: any }> {
  const res = await t.call('POST', `${ID}/session`, { body: { grantType: 'password', email, password } });
  if (res.status !== 200) throw new Error(`sign-in of ${email} failed: ${res.status} ${res.text}`);
  return res.body;
}

export const signInRoot = (t: TestApp) => signIn(t, ROOT_EMAIL, ROOT_PASSWORD);

/** Asserts a response status, showing the body when it differs. */
export function expectStatus(res: Response, status: number, what = ''): void {
  if (res.status !== status) throw new Error(`${what ? `${what}: ` : ''}expected ${status}, got ${res.status}: ${res.text.slice(0, 500)}`);
}

export interface World {
  root: string;
  orgId: string;
  otherOrgId: string;
  tokens: Record<'admin' | 'editor' | 'viewer' | 'outsider' | 'otherAdmin', string>;
  users: Record<'admin' | 'editor' | 'viewer' | 'outsider' | 'otherAdmin', string>;
  serviceAccounts: Record<'saViewer' | 'saEditor' | 'saAdmin' | 'feed', { id: string; secret: string; token: string }>;
}

/**
 * Seeds two organizations: "A" with an admin, an editor, a viewer and a service account per role,
 * "B" with its own admin; an outsider with no membership; and an installation feed account.
 */
export async function seedWorld(t: TestApp): Promise<World> {
  const root = (await signInRoot(t)).accessToken;
  const mk = async (name: string) => {
    const r = await t.call('POST', `${ID}/orgs`, { token: root, body: { name } });
    expectStatus(r, 201, `create org ${name}`);
    return r.body.id as string;
  };
  const orgId = await mk('Org A');
  const otherOrgId = await mk('Org B');
  // root created both orgs and is their first admin; the users below are added as members
  const add = async (org: string, email: string, role: string) => {
    const r = await t.call('POST', `${ID}/orgs/${org}/members`, { token: root, body: { email, role, password: PASSWORD, name: email.split('@')[0] } });
    expectStatus(r, 201, `add ${email}`);
    return r.body.userId as string;
  };
  const users = {
    admin: await add(orgId, 'admin@a.test', 'admin'),
    editor: await add(orgId, 'editor@a.test', 'editor'),
    viewer: await add(orgId, 'viewer@a.test', 'viewer'),
    otherAdmin: await add(otherOrgId, 'admin@b.test', 'admin'),
    outsider: '',
  };
  const created = await t.call('POST', `${ID}/users`, { token: root, body: { email: 'outsider@x.test', password: PASSWORD } });
  expectStatus(created, 201, 'create outsider');
  users.outsider = created.body.id;
  const tokens = {
    admin: (await signIn(t, 'admin@a.test', PASSWORD)).accessToken,
    editor: (await signIn(t, 'editor@a.test', PASSWORD)).accessToken,
    viewer: (await signIn(t, 'viewer@a.test', PASSWORD)).accessToken,
    otherAdmin: (await signIn(t, 'admin@b.test', PASSWORD)).accessToken,
    outsider: (await signIn(t, 'outsider@x.test', PASSWORD)).accessToken,
  };
  const sa = async (role: string) => {
    const r = await t.call('POST', `${ID}/orgs/${orgId}/service-accounts`, { token: tokens.admin, body: { name: `sa ${role}`, role } });
    expectStatus(r, 201, `create service account ${role}`);
    return { id: r.body.clientId as string, secret: r.body.clientSecret as string, token: await clientToken(t, r.body.clientId, r.body.clientSecret) };
  };
  const feedSa = await t.call('POST', `${ID}/service-accounts`, { token: root, body: { name: 'feed pipeline', permissions: ['feed'] } });
  expectStatus(feedSa, 201, 'create feed account');
  return {
    root,
    orgId,
    otherOrgId,
    tokens,
    users,
    serviceAccounts: {
      saViewer: await sa('viewer'),
      saEditor: await sa('editor'),
      saAdmin: await sa('admin'),
      feed: { id: feedSa.body.clientId, secret: feedSa.body.clientSecret, token: await clientToken(t, feedSa.body.clientId, feedSa.body.clientSecret) },
    },
  };
}

export async function clientToken(t: TestApp, clientId: string, clientSecret: string): Promise<string> {
  const r = await t.call('POST', `${ID}/session`, { body: { grantType: 'clientCredentials', clientId, clientSecret } });
  expectStatus(r, 200, 'client credentials');
  return r.body.accessToken;
}

// ── ledger helpers ────────────────────────────────────────────────────────

/** A CSV of `rows` contacts `P <i>` with distinct referenceIds `r<i>`, for imports whose rows do not matter. */
export const contactsCsv = (rows: number): string => `name,company,referenceId\n${Array.from({ length: rows }, (_, i) => `P ${i},Co ${i % 13},r${i}`).join('\n')}\n`;

/**
 * Holds imports and feeds between their chunks (as a backup does) until `release()`: a run in
 * flight, or started meanwhile, commits its chunk and waits. Release in `finally` too (it may be
 * called twice): the app closes only once the bulk thread is on its way again.
 */
export function holdBulkJobs(t: TestApp): { release: () => Promise<void> } {
  let end = () => {};
  const held = t.rt.bulkThread.pausedWhile(() => new Promise<void>((resolve) => (end = resolve)));
  return {
    async release() {
      end();
      await held;
    },
  };
}

export function csvForm(csv: string | Buffer, opts: { fileName?: string; mapping?: unknown; type?: string } = {}): FormData {
  const form = new FormData();
  form.append('file', new Blob([csv], { type: opts.type ?? 'text/csv' }), opts.fileName ?? 'contacts.csv');
  if (opts.mapping !== undefined) form.append('mapping', typeof opts.mapping === 'string' ? opts.mapping : JSON.stringify(opts.mapping));
  return form;
}

export const ledgerPath = (orgId: string, ledgerId?: string) => `${LEDGER}/orgs/${orgId}/ledgers${ledgerId ? `/${ledgerId}` : ''}`;

export async function createLedger(t: TestApp, token: string, orgId: string, name = 'Ledger'): Promise<string> {
  const r = await t.call('POST', ledgerPath(orgId), { token, body: { name } });
  expectStatus(r, 201, 'create ledger');
  return r.body.id;
}

/** Polls an import job until it is completed or failed (no sleeps: the job is kicked at once). `t`: a test app, or a browser test's server. */
export async function waitForImport(t: { call: Call }, token: string, orgId: string, ledgerId: string, importId: string, timeoutMs = 30_000): Promise<any> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const r = await t.call('GET', `${ledgerPath(orgId, ledgerId)}/imports/${importId}`, { token });
    expectStatus(r, 200, 'import status');
    if (r.body.status === 'completed' || r.body.status === 'failed') return r.body;
    if (Date.now() > until) throw new Error(`import ${importId} still ${r.body.status} after ${timeoutMs} ms`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * Sends the first part of a body, runs `meanwhile` once `receiving` says the server has the
 * request (its upload's temporary file exists, its sender was authenticated…), then the rest;
 * resolves with the status and body of the answer.
 */
export function sendInTwoParts(
  t: TestApp,
  path: string,
  headers: Record<string, string>,
  first: Buffer,
  rest: Buffer,
  receiving: () => boolean,
  meanwhile: () => Promise<void>,
  method = 'POST',
): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const url = new URL(path, t.base);
    const req = httpRequest({ host: url.hostname, port: url.port, path: url.pathname, method, headers: { ...headers, 'Content-Length': String(first.length + rest.length) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : undefined }));
    });
    req.on('error', reject);
    req.write(first);
    until('the server receives the body', receiving, Boolean, 10_000)
      .then(meanwhile)
      .then(() => req.end(rest), reject);
  });
}

/** POSTs a person-data feed (SPEC §5) and waits for its feed job; returns the finished job. */
export async function feedAndWait(t: { call: Call }, token: string, body: string | Buffer, type = 'application/x-ndjson', timeoutMs = 20_000): Promise<any> {
  const r = await t.call('POST', `${LEDGER}/feed`, { token, raw: body, headers: { 'content-type': type } });
  expectStatus(r, 202, 'feed');
  const until = Date.now() + timeoutMs;
  for (;;) {
    const s = await t.call('GET', `${LEDGER}/feed/${r.body.id}`, { token });
    expectStatus(s, 200, 'feed status');
    if (s.body.status === 'completed' || s.body.status === 'failed') return s.body;
    if (Date.now() > until) throw new Error(`feed ${r.body.id} still ${s.body.status} after ${timeoutMs} ms`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** POSTs contacts and waits for their import job; returns the finished job. */
export async function addContacts(t: { call: Call }, token: string, orgId: string, ledgerId: string, contacts: unknown[] | Record<string, unknown>): Promise<any> {
  const r = await t.call('POST', `${ledgerPath(orgId, ledgerId)}/contacts`, { token, body: Array.isArray(contacts) ? { contacts } : contacts });
  expectStatus(r, 202, 'add contacts');
  return waitForImport(t, token, orgId, ledgerId, r.body.id);
}

/** Uploads a CSV and waits for its import job; returns the finished job. */
export async function uploadCsv(t: { call: Call }, token: string, orgId: string, ledgerId: string, csv: string | Buffer, opts: { mapping?: unknown; fileName?: string } = {}): Promise<any> {
  const r = await t.call('POST', `${ledgerPath(orgId, ledgerId)}/imports`, { token, raw: csvForm(csv, opts) });
  expectStatus(r, 202, 'upload csv');
  return waitForImport(t, token, orgId, ledgerId, r.body.id);
}

/** Every page of a contact list (follows nextCursor). */
export async function listAll(t: TestApp, token: string, path: string, query = '', limit = 1000): Promise<any[]> {
  const out: any[] = [];
  let cursor: string | null = null;
  do {
    const sep = query ? '&' : '';
    const r: Response = await t.call('GET', `${path}?${query}${sep}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`, { token });
    expectStatus(r, 200, 'list page');
    out.push(...r.body.contacts);
    cursor = r.body.nextCursor;
  } while (cursor);
  return out;
}

/** The nice value of a thread of this process (Linux: field 19 of /proc/self/task/<tid>/stat). */
export function threadNice(tid: string | number): number {
  const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
}

/** The nice values of this process's threads. */
export const threadNices = (): number[] => readdirSync('/proc/self/task').map(threadNice);

/**
 * Starts `count` Node processes running the ES module `script`, which says `ready` on stderr once
 * loaded and waits for its stdin before it acts (`process.stdin.once('data', …)`); when all are
 * ready, releases them at the same moment by ending their stdin. Returns each one's exit code and
 * output. For races between processes. Each runs with this process's Node flags (`process.execArgv`:
 * scripts/run-tests.ts's strip-types cache), so the sources it imports are not stripped again in
 * each child (~0.4 s of CPU a child; storage's race of 30 took 12 s).
 */
export async function childrenAtOnce(script: string, count: number): Promise<{ code: number | null; stdout: string; stderr: string }[]> {
  const children = Array.from({ length: count }, () => spawn(process.execPath, [...process.execArgv, '--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'pipe'] }));
  const out = children.map(() => ({ code: null as number | null, stdout: '', stderr: '' }));
  const exits = children.map((c, i) => {
    c.stdout!.on('data', (d: Buffer) => (out[i]!.stdout += d.toString()));
    return new Promise<void>((resolve) => c.on('exit', (code) => ((out[i]!.code = code), resolve())));
  });
  await Promise.all(children.map((c, i) => new Promise<void>((resolve) => c.stderr!.on('data', (d: Buffer) => ((out[i]!.stderr += d.toString()), resolve())))));
  for (const c of children) c.stdin!.end('go');
  await Promise.all(exits);
  return out;
}
