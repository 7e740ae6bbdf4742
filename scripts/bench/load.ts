// npm run bench:load — the load scenarios of RELIABILITY.md §5, each with its pass/fail thresholds,
// against the real server (a child process on core 0; the load generator, autocannon, on core 1).
// Exits 1 when a check fails. See docs/benchmarks.md.
//
//   knee  closed model at 10/25/50/100 connections: the read mix's highest throughput
//   L1.1  read mix (70% list pages, 25% get, 5% search) at 80% of the knee (open model):
//         p99 < 100 ms, no non-2xx, no errors, event-loop delay p99 < 20 ms; then at 50% (numbers only)
//   L1.2  write mix (the read mix, and 20% POST contacts) at 80% of its own knee: the same, and no SQLITE_BUSY
//   L1.3  import during load: npm run bench:import
//   L1.4  login storm, 20 wrong-password sign-ins a second, during L1.1: reads p99 < 2× L1.1's,
//         sign-ins answered 401 or 429, never 5xx
//   L1.5  a CSV download read at 100 KB/s during L1.2: writes keep succeeding (and commit) while it is open
//   L1.6  an online backup (contact-ledger backup) during L1.2: it completes, the L1.2 thresholds hold
//   L1.7  soak at 50% of the write mix's knee: RSS growth < 50 MB (per hour, for soaks over an hour),
//         the -wal bounded (under the bulk writers' 256 MiB limit while they write — docs/benchmarks.md —
//         and back under journal_size_limit once the load ends), open file descriptors flat
//   L2    the largest JSON body (a full batch padded to MAX_JSON_BYTES) at 5 a second during L1.1:
//         reads p99 < 100 ms; 500 idle sockets during L1.1: no failures, and the server closes them
//
// Environment: BENCH_LOAD_ORGS (default 10), BENCH_LOAD_CONTACTS (per org, default 50000),
// BENCH_EXPORT_ROWS (the L1.5 ledger, default 200000), BENCH_LOAD_SECONDS (per scenario, default
// 30; RELIABILITY.md says 60), BENCH_KNEE_SECONDS (per step, default 10), BENCH_SOAK_SECONDS
// (default 120; 3600 for the hour the checklist asks for), BENCH_LOAD_ONLY (e.g. "1,4,L2": these
// scenarios only; the knee is always found), BENCH_NODE_ARGS (the server's, e.g. "--cpu-prof
// --cpu-prof-dir=…").
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.ts';
import { BULK_WAL_LIMIT_BYTES } from '../../src/storage/checkpointer.ts';
import { JOURNAL_SIZE_LIMIT_BYTES } from '../../src/storage/db.ts';
import type { LoadPlan, LoadResult, MixEntry } from './load-generator.ts';
import { ADMIN, Api, CACHE, MAIN, ROOT, ensureCsv, importCsv, ledgerPath, machineFacts, nCpu, pinned, rssKiB, sleep, startServer, watchEventLoop, type Server } from './common.ts';

const ORGS = Number(process.env.BENCH_LOAD_ORGS ?? 10);
const CONTACTS = Number(process.env.BENCH_LOAD_CONTACTS ?? 50_000);
const EXPORT_ROWS = Number(process.env.BENCH_EXPORT_ROWS ?? 200_000);
const SECONDS = Number(process.env.BENCH_LOAD_SECONDS ?? 30);
const KNEE_SECONDS = Number(process.env.BENCH_KNEE_SECONDS ?? 10);
const SOAK_SECONDS = Number(process.env.BENCH_SOAK_SECONDS ?? 120);
const NODE_ARGS = process.env.BENCH_NODE_ARGS ? process.env.BENCH_NODE_ARGS.split(' ') : [];
const ONLY = process.env.BENCH_LOAD_ONLY ? new Set(process.env.BENCH_LOAD_ONLY.split(',').map((s) => s.trim())) : undefined;
const SERVER_CPU = '0';
const LOAD_CPU = nCpu > 1 ? '1' : '0';
/** Connections of the open-model runs: enough that a slow answer never holds back the rate. */
const OPEN_CONNECTIONS = 50;
// the server's defaults (the bench server runs with them)
const { maxJsonBytes: MAX_JSON_BYTES, maxApiContacts: MAX_API_CONTACTS } = loadConfig({});
const SERVER_ENV = { TOKEN_TTL_SECONDS: '86400' }; // one token for the whole run

const wanted = (scenario: string) => !ONLY || ONLY.has(scenario);

// ── checks ──────────────────────────────────────────────────────────────────

const checks: { scenario: string; what: string; ok: boolean }[] = [];
function check(scenario: string, what: string, ok: boolean): void {
  checks.push({ scenario, what, ok });
  console.log(`  ${ok ? 'PASS' : 'FAIL'}  ${what}`);
}
const ms = (n: number) => `${n.toFixed(1)} ms`;
const describe = (r: LoadResult) =>
  `${r.requestsPerSecond.toFixed(0)} req/s, ${r.total} requests, p50 ${ms(r.p50)}, p99 ${ms(r.p99)}, max ${ms(r.max)}; non-2xx ${r.non2xx}, errors ${r.errors}, timeouts ${r.timeouts} (${JSON.stringify(r.statuses)})`;

// ── the data ────────────────────────────────────────────────────────────────

interface Seeded {
  /** ledger API paths, one per org */
  ledgers: string[];
  /** the L1.5 download's ledger */
  exportLedger: string;
  /** a ledger of its own for the L2 large bodies */
  bodyLedger: string;
}

/**
 * The seeded data folder, cached under .cache/bench/ (imported through the API once): ORGS orgs
 * with a ledger of CONTACTS contacts each, and a ledger of EXPORT_ROWS contacts to download. Each
 * run works on a copy, so the writes of one run never reach the next.
 */
async function seededCopy(work: string): Promise<{ dataDir: string; seeded: Seeded }> {
  const cache = join(CACHE, `load-${ORGS}x${CONTACTS}-${EXPORT_ROWS}`);
  if (!existsSync(join(cache, 'seeded.json'))) {
    rmSync(cache, { recursive: true, force: true });
    const [orgCsv, exportCsv] = [await ensureCsv(CONTACTS), await ensureCsv(EXPORT_ROWS)];
    const server = await startServer(join(cache, 'data'), { env: SERVER_ENV });
    try {
      const api = new Api(server.base);
      await api.signIn();
      const t0 = performance.now();
      const ledgers: string[] = [];
      let exportLedger = '';
      let bodyLedger = '';
      for (let i = 0; i < ORGS; i++) {
        const org = await api.call<{ id: string }>('POST', '/api/identity/v1/orgs', { name: `Load ${i}` });
        const ledger = await api.call<{ id: string }>('POST', `/api/ledger/v1/orgs/${org.id}/ledgers`, { name: 'contacts' });
        const base = ledgerPath(org.id, ledger.id);
        const r = await importCsv(api, base, orgCsv);
        if (r.status.status !== 'completed' || r.status.imported !== CONTACTS) throw new Error(`seeding: ${JSON.stringify(r.status)}`);
        ledgers.push(base);
        if (i === 0) {
          const big = await api.call<{ id: string }>('POST', `/api/ledger/v1/orgs/${org.id}/ledgers`, { name: 'export' });
          exportLedger = ledgerPath(org.id, big.id);
          const e = await importCsv(api, exportLedger, exportCsv);
          if (e.status.status !== 'completed' || e.status.imported !== EXPORT_ROWS) throw new Error(`seeding: ${JSON.stringify(e.status)}`);
          const bodies = await api.call<{ id: string }>('POST', `/api/ledger/v1/orgs/${org.id}/ledgers`, { name: 'large bodies' });
          bodyLedger = ledgerPath(org.id, bodies.id);
        }
      }
      console.log(`seeded ${ORGS} orgs × ${CONTACTS} contacts and a ${EXPORT_ROWS}-contact ledger through the API in ${((performance.now() - t0) / 1000).toFixed(0)} s (cached in ${cache})`);
      writeFileSync(join(cache, 'seeded.json'), JSON.stringify({ ledgers, exportLedger, bodyLedger } satisfies Seeded));
    } finally {
      await server.stop();
    }
  }
  const dataDir = join(work, 'data');
  cpSync(join(cache, 'data'), dataDir, { recursive: true });
  rmSync(join(dataDir, 'server.log'), { force: true });
  return { dataDir, seeded: JSON.parse(readFileSync(join(cache, 'seeded.json'), 'utf8')) as Seeded };
}

/** The read mix over every org's ledger: first and later pages (real cursors), single contacts, name searches. */
async function readMix(api: Api, seeded: Seeded): Promise<MixEntry[]> {
  const pages: string[] = [];
  const gets: string[] = [];
  const searches: string[] = [];
  for (const base of seeded.ledgers) {
    let cursor: string | null = null;
    for (let page = 0; page < 5; page++) {
      const path: string = `${base}/contacts?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      pages.push(path);
      const r: { contacts: { id: string }[]; nextCursor: string | null } = await api.call('GET', path);
      for (const c of r.contacts.slice(0, 10)) gets.push(`${base}/contacts/${c.id}`);
      cursor = r.nextCursor;
      if (!cursor) break;
    }
    for (const name of ['mary', 'garcia', 'chen', 'søren']) searches.push(`${base}/contacts?name=${encodeURIComponent(name)}&limit=100`);
    searches.push(`${base}/contacts?company=acme&limit=100`);
  }
  return [
    { name: 'list', weight: 70, method: 'GET', paths: pages },
    { name: 'get', weight: 25, method: 'GET', paths: gets },
    { name: 'search', weight: 5, method: 'GET', paths: searches },
  ];
}

/** The read mix scaled to 80%, and 20% single-contact POSTs (each an import job); referenceIds unique per run and scenario. */
function writeMix(reads: MixEntry[], seeded: Seeded, tag: string): MixEntry[] {
  const bodies = ['Systems', 'Labs', 'Health'].map((kind) =>
    JSON.stringify({ name: 'Load Writer {n}', company: `Acme ${kind}`, title: 'Senior Engineer', email: `writer-${tag}-{n}@acme.example`, referenceId: `load-${tag}-{n}` }),
  );
  return [
    ...reads.map((e) => ({ ...e, weight: e.weight * 0.8 })),
    { name: 'write', weight: 20, method: 'POST', paths: seeded.ledgers.map((b) => `${b}/contacts`), bodies },
  ];
}

// ── running load ────────────────────────────────────────────────────────────

/** Runs the load generator (pinned to LOAD_CPU) and returns its result. */
async function load(server: Server, token: string, mix: MixEntry[], opts: { connections: number; seconds: number; rate?: number }): Promise<LoadResult> {
  const plan: LoadPlan = { base: server.base, token, mix, ...opts };
  const [cmd, args] = pinned(LOAD_CPU, process.execPath, [join(import.meta.dirname, 'load-generator.ts'), JSON.stringify(plan)]);
  const child = spawn(cmd, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const [code] = (await once(child, 'exit')) as [number];
  if (code !== 0) throw new Error(`the load generator exited with ${code}`);
  return JSON.parse(out) as LoadResult;
}

/** A metric's value from /metrics: the sum of its series (or their largest value). */
async function metric(api: Api, name: string, of: 'sum' | 'max' = 'sum'): Promise<number> {
  const res = await fetch(`${api.base}/metrics`, { headers: { Authorization: `Bearer ${api.token}` } });
  const text = await res.text();
  const values = [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))].map((m) => Number(m[1]));
  return of === 'max' ? Math.max(0, ...values) : values.reduce((a, b) => a + b, 0);
}
const busyCount = (api: Api) => metric(api, 'contact_ledger_sqlite_busy_total');

/**
 * Waits (up to 10 minutes) until no job is pending or running, so that a scenario does not pay for
 * the imports the one before left (each POST of the write mix, each large body is an import job),
 * and says how long they took: the backlog a scenario leaves is a result of its own.
 */
async function quiet(api: Api): Promise<void> {
  const t0 = performance.now();
  while ((await metric(api, 'contact_ledger_jobs')) > 0 && performance.now() - t0 < 600_000) await sleep(250);
  const s = (performance.now() - t0) / 1000;
  if (s >= 1) console.log(`  (the jobs it left took ${s.toFixed(1)} s more to finish)`);
}

/** Load plus event-loop watching and the SQLITE_BUSY count over the run. */
async function measured(server: Server, api: Api, mix: MixEntry[], opts: { connections: number; seconds: number; rate?: number }) {
  const busyBefore = await busyCount(api);
  const loop = watchEventLoop(api);
  const result = await load(server, api.token, mix, opts);
  const eventLoop = await loop.stop();
  return { result, eventLoop, busy: (await busyCount(api)) - busyBefore };
}

/** The closed model: throughput at each concurrency; the knee is the highest. */
async function knee(server: Server, api: Api, mix: MixEntry[], steps: number[]): Promise<number> {
  let best = 0;
  for (const connections of steps) {
    const r = await load(server, api.token, mix, { connections, seconds: KNEE_SECONDS });
    console.log(`  -c ${connections}: ${describe(r)}`);
    if (r.non2xx || r.errors) throw new Error(`the closed-model run at ${connections} connections had failures: ${describe(r)}`);
    best = Math.max(best, r.requestsPerSecond);
  }
  return best;
}

/** The L1 thresholds of an open-model run (scenarios 1 and 2). */
function sloChecks(scenario: string, m: Awaited<ReturnType<typeof measured>>, opts: { busy?: boolean } = {}): void {
  const r = m.result;
  console.log(`  ${describe(r)}`);
  console.log(`  event-loop delay: worst one-second p99 ${ms(m.eventLoop.p99Ms)}, max ${ms(m.eventLoop.maxMs)}; SQLITE_BUSY ${m.busy}`);
  check(scenario, `p99 ${ms(r.p99)} < 100 ms`, r.p99 < 100);
  check(scenario, `no non-2xx answers, errors or timeouts (${r.non2xx}, ${r.errors}, ${r.timeouts})`, r.non2xx === 0 && r.errors === 0 && r.timeouts === 0);
  check(scenario, `event-loop delay p99 ${ms(m.eventLoop.p99Ms)} < 20 ms (the worst one-second p99)`, m.eventLoop.p99Ms < 20);
  if (opts.busy) check(scenario, `no SQLITE_BUSY (${m.busy})`, m.busy === 0);
}

/** Calls `fn` `perSecond` times a second until `stop()`; resolves the statuses it got. */
type Outcome = number | 'shed';
function paced(perSecond: number, fn: () => Promise<Outcome>): { stop(): Promise<Outcome[]> } {
  const statuses: Promise<Outcome>[] = [];
  const timer = setInterval(() => statuses.push(fn().catch(() => 0)), 1000 / perSecond);
  return {
    async stop() {
      clearInterval(timer);
      return Promise.all(statuses);
    },
  };
}
const countBy = (xs: Outcome[]) => Object.fromEntries([...new Set(xs)].sort().map((s) => [s === 0 ? 'error' : String(s), xs.filter((x) => x === s).length]));

/**
 * Downloads a ledger's CSV at `bytesPerSecond` (the client reads that fast and no faster, so the
 * server's stream waits on TCP backpressure); `stop()` ends it and tells how many bytes arrived.
 */
function slowDownload(api: Api, path: string, bytesPerSecond: number): { stop(): Promise<{ bytes: number; status: number; error?: string }> } {
  let bytes = 0;
  let status = 0;
  let error: string | undefined;
  const t0 = performance.now();
  const req = http.get(`${api.base}${path}`, { headers: { Authorization: `Bearer ${api.token}` } }, (res) => {
    status = res.statusCode ?? 0;
    res.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      const due = (bytes / bytesPerSecond) * 1000 - (performance.now() - t0);
      if (due > 0) {
        res.pause();
        setTimeout(() => res.resume(), due);
      }
    });
    res.on('error', () => {});
  });
  req.on('error', (err) => (error ??= err.message));
  return {
    async stop() {
      req.destroy();
      return { bytes, status, ...(error && error !== 'socket hang up' ? { error } : {}) };
    },
  };
}

/** Polls an import job until it ends, at most `seconds`. */
async function jobEnds(api: Api, location: string, seconds: number): Promise<string> {
  const until = performance.now() + seconds * 1000;
  for (;;) {
    const s = await api.call<{ status: string }>('GET', location);
    if (s.status === 'completed' || s.status === 'failed' || performance.now() > until) return s.status;
    await sleep(50);
  }
}

/** POSTs one contact and waits for its job: a write that commits, not only a 202. */
async function committedWrite(api: Api, ledger: string, seconds: number): Promise<string> {
  const job = await api.call<{ id: string }>('POST', `${ledger}/contacts`, { name: 'Probe Writer', company: 'Probe Labs' });
  return jobEnds(api, `${ledger}/imports/${job.id}`, seconds);
}

/** Open file descriptors of a process (Linux). */
const fdCount = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;

/** The largest JSON body the server reads: a full batch of contacts at their longest, padded with whitespace to MAX_JSON_BYTES − 1 KiB. */
function largestBody(batch: number): string {
  const long = (n: number, ch: string) => ch.repeat(n);
  const contacts = Array.from({ length: batch }, (_, i) => ({
    name: `${long(180, 'N')} ${i}`,
    company: long(190, 'C'),
    title: long(190, 'T'),
    location: long(190, 'L'),
    email: `${long(60, 'e')}.${i}@example.com`,
    linkedin: `https://www.linkedin.com/in/${long(80, 'p')}-${i}`,
  }));
  const json = JSON.stringify({ contacts });
  return json + ' '.repeat(Math.max(0, MAX_JSON_BYTES - 1024 - Buffer.byteLength(json)));
}

/** Opens `n` sockets that send half a request head and then nothing (slowloris); tells how many the server has closed. */
function idleSockets(base: string, n: number): { closed(): number; destroy(): void } {
  const url = new URL(base);
  const sockets: Socket[] = [];
  let closed = 0;
  for (let i = 0; i < n; i++) {
    const s = connect(Number(url.port), url.hostname, () => s.write('GET /healthz HTTP/1.1\r\nHost: x\r\n'));
    s.on('close', () => closed++);
    s.on('error', () => {});
    s.on('data', () => {}); // the 408 the server may send before closing
    sockets.push(s);
  }
  return { closed: () => closed, destroy: () => sockets.forEach((s) => s.destroy()) };
}

// ── the run ───────────────────────────────────────────────────────────────────

async function main() {
  console.log(machineFacts());
  console.log(`data: ${ORGS} orgs × ${CONTACTS} contacts, a ${EXPORT_ROWS}-contact ledger to download; ${SECONDS} s a scenario, soak ${SOAK_SECONDS} s; server on core ${SERVER_CPU}, load generator on core ${LOAD_CPU}\n`);
  mkdirSync(CACHE, { recursive: true });
  const work = mkdtempSync(join(CACHE, 'load-'));
  let server: Server | undefined;
  try {
    const { dataDir, seeded } = await seededCopy(work);
    server = await startServer(dataDir, { cpus: SERVER_CPU, env: SERVER_ENV, nodeArgs: NODE_ARGS });
    const api = new Api(server.base);
    await api.signIn();
    const reads = await readMix(api, seeded);

    console.log('knee of the read mix (closed model):');
    const readKnee = await knee(server, api, reads, [10, 25, 50, 100]);
    console.log(`  knee ${readKnee.toFixed(0)} req/s; the open-model runs send 80% of it: ${(readKnee * 0.8).toFixed(0)} req/s\n`);
    const readRate = Math.round(readKnee * 0.8);
    const readRun = () => measured(server!, api, reads, { connections: OPEN_CONNECTIONS, seconds: SECONDS, rate: readRate });

    let baselineP99 = NaN;
    if (wanted('1') || wanted('4')) {
      console.log(`L1.1 read mix at ${readRate} req/s:`);
      const m = await readRun();
      baselineP99 = m.result.p99;
      sloChecks('L1.1', m);
      // the checklist's other open-model rate, for calibrating the thresholds (no check): the
      // event-loop delay under steady load is mostly the length of a loop turn, which grows with
      // the requests that arrived during the turn before
      const half = Math.round(readKnee * 0.5);
      const h = await measured(server, api, reads, { connections: OPEN_CONNECTIONS, seconds: SECONDS, rate: half });
      console.log(`  at 50% of the knee (${half} req/s; information, not a check): ${describe(h.result)}; event-loop delay worst one-second p99 ${ms(h.eventLoop.p99Ms)}, max ${ms(h.eventLoop.maxMs)}`);
    }

    let writeRate = 0;
    const writeMixOf = (tag: string) => writeMix(reads, seeded, tag);
    if (['2', '5', '6', '7'].some(wanted)) {
      console.log('\nknee of the write mix (closed model):');
      const writeKnee = await knee(server, api, writeMixOf('knee'), [25]);
      writeRate = Math.round(writeKnee * 0.8);
    }
    const writeRun = (tag: string, seconds = SECONDS, rate = writeRate) => measured(server!, api, writeMixOf(tag), { connections: OPEN_CONNECTIONS, seconds, rate });

    if (wanted('2')) {
      console.log(`\nL1.2 write mix at ${writeRate} req/s (80% of its knee):`);
      sloChecks('L1.2', await writeRun('s2'), { busy: true });
    }

    await quiet(api);
    if (wanted('4')) {
      console.log(`\nL1.4 login storm: 20 wrong-password sign-ins a second during the read mix at ${readRate} req/s:`);
      let n = 0;
      const storm = paced(20, async () => {
        // the admin's account and unknown ones, as a password-spraying client would
        const email = n++ % 2 ? ADMIN.email : `nobody-${n}@contact-ledger.test`;
        const res = await fetch(`${api.base}/api/identity/v1/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ grantType: 'password', email, password: 'not the password 123' }) });
        await res.arrayBuffer();
        // a 503 is load shedding (src/http/load-shedding.ts) only with its Retry-After
        return res.status === 503 && res.headers.get('retry-after') ? 'shed' : res.status;
      });
      const m = await readRun();
      const logins = await storm.stop();
      console.log(`  reads: ${describe(m.result)}`);
      console.log(`  sign-ins: ${JSON.stringify(countBy(logins))}; L1.1's read p99 ${ms(baselineP99)}`);
      check('L1.4', `reads p99 ${ms(m.result.p99)} < 2× L1.1's (${ms(2 * baselineP99)})`, m.result.p99 < 2 * baselineP99);
      check('L1.4', 'reads: no non-2xx answers, errors or timeouts', m.result.non2xx === 0 && m.result.errors === 0 && m.result.timeouts === 0);
      check('L1.4', 'every sign-in answered 401 or 429', logins.every((s) => s === 401 || s === 429));
    }

    await quiet(api);
    if (wanted('5')) {
      console.log(`\nL1.5 a ${EXPORT_ROWS}-contact CSV download read at 100 KB/s during the write mix at ${writeRate} req/s:`);
      const download = slowDownload(api, `${seeded.exportLedger}/contacts/download`, 100_000);
      const m = await writeRun('s5');
      const probe = await committedWrite(api, seeded.ledgers[0]!, 10); // while the download is still open
      const d = await download.stop();
      sloChecks('L1.5', m, { busy: true });
      console.log(`  download: HTTP ${d.status}, ${(d.bytes / 1e6).toFixed(1)} MB read in the scenario, still open at its end${d.error ? `; error ${d.error}` : ''}`);
      check('L1.5', `the download was open and reading all along (${(d.bytes / 1e6).toFixed(1)} MB ≈ 100 KB/s × ${SECONDS} s)`, d.status === 200 && !d.error && d.bytes > 0.5 * 100_000 * SECONDS);
      check('L1.5', `a write made while it is open commits (its job: ${probe})`, probe === 'completed');
    }

    await quiet(api);
    if (wanted('6')) {
      console.log(`\nL1.6 an online backup during the write mix at ${writeRate} req/s:`);
      const file = join(work, 'backup.db');
      const t0 = performance.now();
      const [cmd, args] = pinned(SERVER_CPU, process.execPath, [MAIN, 'backup', file]);
      const backup = spawn(cmd, args, { cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', CONTACT_LEDGER_DATA: dataDir }, stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      backup.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const ended = once(backup, 'exit').then(([code]) => ({ code: code as number, seconds: (performance.now() - t0) / 1000 }));
      const m = await writeRun('s6');
      const b = await ended;
      sloChecks('L1.6', m, { busy: true });
      console.log(`  backup: exit ${b.code} after ${b.seconds.toFixed(1)} s${b.code ? `: ${stderr.trim().slice(-300)}` : ''}`);
      check('L1.6', 'the backup completed', b.code === 0 && existsSync(file));
      check('L1.6', `the backup ended while the load ran (${b.seconds.toFixed(1)} s ≤ ${SECONDS} s)`, b.seconds <= SECONDS);
    }

    await quiet(api);
    if (wanted('L2')) {
      console.log(`\nL2 the largest JSON body (${(MAX_JSON_BYTES / 1024 ** 2).toFixed(0)} MiB, ${MAX_API_CONTACTS} contacts) 5 times a second during the read mix at ${readRate} req/s:`);
      const body = largestBody(MAX_API_CONTACTS);
      const posts = paced(5, async () => {
        const res = await fetch(`${api.base}${seeded.bodyLedger}/contacts`, { method: 'POST', headers: { Authorization: `Bearer ${api.token}`, 'content-type': 'application/json' }, body });
        await res.arrayBuffer();
        // a 503 is load shedding (src/http/load-shedding.ts) only with its Retry-After
        return res.status === 503 && res.headers.get('retry-after') ? 'shed' : res.status;
      });
      const m = await readRun();
      const statuses = await posts.stop();
      console.log(`  reads: ${describe(m.result)}; event-loop delay worst one-second p99 ${ms(m.eventLoop.p99Ms)}`);
      console.log(`  large bodies: ${JSON.stringify(countBy(statuses))}`);
      check('L2', `reads p99 ${ms(m.result.p99)} < 100 ms`, m.result.p99 < 100);
      check('L2', 'reads: no non-2xx answers, errors or timeouts', m.result.non2xx === 0 && m.result.errors === 0 && m.result.timeouts === 0);
      // the checklist asks for the reads' budget; a body may be refused while the server is overloaded
      check('L2', 'every large body accepted (202) or refused with Retry-After while overloaded (503)', statuses.every((s) => s === 202 || s === 'shed'));

      await quiet(api);
      console.log(`\nL2 500 idle sockets (half a request head each) during the read mix at ${readRate} req/s:`);
      const idle = idleSockets(server.base, 500);
      const fdsWith = fdCount(server.pid);
      const i = await readRun();
      // the server closes them at HEADERS_TIMEOUT_MS (20 s by default), checked every second
      const until = performance.now() + 30_000;
      while (idle.closed() < 500 && performance.now() < until) await sleep(100);
      const closed = idle.closed();
      idle.destroy();
      console.log(`  reads: ${describe(i.result)}; the server held ${fdsWith} file descriptors with the sockets open, and closed ${closed} of 500`);
      check('L2', `reads p99 ${ms(i.result.p99)} < 100 ms`, i.result.p99 < 100);
      check('L2', 'reads: no non-2xx answers, errors or timeouts', i.result.non2xx === 0 && i.result.errors === 0 && i.result.timeouts === 0);
      check('L2', 'the server closed every idle socket', closed === 500);
    }

    await quiet(api);
    if (wanted('7')) {
      const soakRate = Math.round(writeRate / 0.8 / 2);
      console.log(`\nL1.7 soak: the write mix at ${soakRate} req/s (50% of its knee) for ${SOAK_SECONDS} s:`);
      const settled = async (above: number) => {
        // keep-alive connections close 5 s after their last request
        const until = performance.now() + 15_000;
        while (fdCount(server!.pid) > above && performance.now() < until) await sleep(200);
        return fdCount(server!.pid);
      };
      const fdStart = fdCount(server.pid);
      let rssStart = NaN;
      let walMax = 0;
      let rssMax = 0;
      let jobsMax = 0;
      const warm = SOAK_SECONDS * 0.2 * 1000;
      const t0 = performance.now();
      const sampler = setInterval(() => {
        const rss = rssKiB(server!.pid) * 1024;
        if (Number.isNaN(rssStart) && performance.now() - t0 >= warm) rssStart = rss;
        rssMax = Math.max(rssMax, rss);
        void metric(api, 'contact_ledger_database_bytes\\{file="wal"\\}').then((w) => (walMax = Math.max(walMax, w)));
        void metric(api, 'contact_ledger_jobs').then((n) => (jobsMax = Math.max(jobsMax, n)));
      }, 1000);
      const m = await writeRun('s7', SOAK_SECONDS, soakRate);
      clearInterval(sampler);
      // the POSTs' import jobs keep up: none waits long (SPEC: a small batch completes within a second)
      const oldestJob = await metric(api, 'contact_ledger_job_oldest_age_seconds', 'max');
      const rssEnd = rssKiB(server.pid) * 1024;
      const fdEnd = await settled(fdStart + 2);
      // the checkpointer thread cuts the -wal back once the writers are quiet
      let walAfter = await metric(api, 'contact_ledger_database_bytes\\{file="wal"\\}');
      for (const until = performance.now() + 15_000; walAfter > JOURNAL_SIZE_LIMIT_BYTES && performance.now() < until; ) {
        await sleep(200);
        walAfter = await metric(api, 'contact_ledger_database_bytes\\{file="wal"\\}');
      }
      const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;
      const growth = rssEnd - rssStart;
      const hours = (SOAK_SECONDS * 0.8) / 3600;
      const budget = 50e6 * Math.max(1, hours);
      // a chunk may commit past the limit before its writer waits for the checkpoint
      const walBound = BULK_WAL_LIMIT_BYTES * 1.25;
      console.log(`  ${describe(m.result)}`);
      console.log(`  import jobs waiting or running: at most ${jobsMax}; the oldest ${oldestJob.toFixed(1)} s old when the load ended`);
      console.log(`  RSS ${mb(rssStart)} after the warm-up → ${mb(rssEnd)} at the end (max ${mb(rssMax)}); -wal max ${mb(walMax)}, ${mb(walAfter)} after the load; file descriptors ${fdStart} → ${fdEnd}`);
      check('L1.7', `RSS grew ${mb(growth)} < ${mb(budget)}${hours < 1 ? ' (50 MB/h, counted as a whole hour for a shorter soak)' : ''}`, growth < budget);
      check('L1.7', `the -wal stayed bounded while the load ran (${mb(walMax)} < ${mb(walBound)})`, walMax < walBound);
      check('L1.7', `the -wal is back under journal_size_limit after it (${mb(walAfter)} ≤ ${mb(JOURNAL_SIZE_LIMIT_BYTES)})`, walAfter <= JOURNAL_SIZE_LIMIT_BYTES);
      check('L1.7', `the import jobs kept up (the oldest ${oldestJob.toFixed(1)} s old at the end < 10 s)`, oldestJob < 10);
      check('L1.7', `open file descriptors flat (${fdStart} → ${fdEnd})`, fdEnd <= fdStart + 2);
      check('L1.7', 'no non-2xx answers, errors or timeouts', m.result.non2xx === 0 && m.result.errors === 0 && m.result.timeouts === 0);
    }
  } finally {
    await server?.stop();
    rmSync(work, { recursive: true, force: true });
  }
  const failed = checks.filter((c) => !c.ok);
  console.log(`\n${checks.length - failed.length} passed, ${failed.length} failed${failed.length ? `: ${failed.map((c) => `${c.scenario} ${c.what}`).join('; ')}` : ''}`);
  if (failed.length) process.exitCode = 1;
}

await main();
