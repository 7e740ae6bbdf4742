// Shared helpers of the benchmarks (npm run bench:import | bench:list | bench:download): the
// generated CSV, the real server as a child process, API calls, machine facts, statistics.
import { spawn, spawnSync, execFileSync, type ChildProcess } from 'node:child_process';
import { closeSync, createWriteStream, existsSync, mkdirSync, mkdtempSync, openAsBlob, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { basename, join } from 'node:path';
import { once } from 'node:events';
import { prng } from '../prng.ts';

export const ROOT = join(import.meta.dirname, '..', '..');
export const CACHE = join(ROOT, '.cache', 'bench');
export const MAIN = join(ROOT, 'src', 'main.ts');
export const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
export const CSV_COLUMNS = ['name', 'company', 'title', 'linkedin', 'referenceId', 'email'] as const;
export const ADMIN = { email: 'bench@contact-ledger.test', password: 'a long benchmark passphrase 42' };

mkdirSync(CACHE, { recursive: true });

// ── the CSV ────────────────────────────────────────────────────────────────


const FIRST = 'James Mary Robert Patricia John Jennifer Michael Linda David Elizabeth William Barbara Richard Susan Joseph Jessica Thomas Sarah Charles Karen Christopher Lisa Daniel Nancy Matthew Betty Anthony Margaret Mark Sandra Donald Ashley Steven Kimberly Paul Emily Andrew Donna Joshua Michelle Kenneth Carol Kevin Amanda Brian Dorothy George Melissa Timothy Deborah Ronald Stephanie Edward Rebecca Jason Sharon Jeffrey Laura Ryan Cynthia Jacob Kathleen Gary Amy Nicholas Angela Eric Shirley Jonathan Anna Stephen Brenda Larry Pamela Justin Emma Scott Nicole Brandon Helen Benjamin Samantha Samuel Katherine Gregory Christine Alexander Debra Frank Rachel Patrick Carolyn Raymond Janet Jack Catherine Dennis Maria Jerry Heather Tyler Diane Aaron Ruth Jose Julie Adam Olivia Nathan Joyce Henry Virginia Zachary Victoria Douglas Kelly Peter Lauren Kyle Christina Noah Joan Ethan Evelyn Jeremy Judith Walter Megan Christian Andrea Keith Cheryl Roger Hannah Terry Jacqueline Austin Martha Sean Gloria Gerald Teresa Carl Ann Harold Sara Dylan Madison Arthur Frances Lawrence Kathryn Jordan Janice Jesse Jean Bryan Abigail Billy Alice Bruce Judy Gabriel Sophia Joe Grace Logan Denise Albert Amber Willie Doris Alan Marilyn Eugene Danielle Russell Beverly Vincent Isabella Philip Theresa Bobby Diana Johnny Natalie Bradley Brittany Søren Zoë José Chloé Łukasz Renée'.split(' ');
const LAST = 'Smith Johnson Williams Brown Jones Garcia Miller Davis Rodriguez Martinez Hernandez Lopez Gonzalez Wilson Anderson Thomas Taylor Moore Jackson Martin Lee Perez Thompson White Harris Sanchez Clark Ramirez Lewis Robinson Walker Young Allen King Wright Scott Torres Nguyen Hill Flores Green Adams Nelson Baker Hall Rivera Campbell Mitchell Carter Roberts Gomez Phillips Evans Turner Diaz Parker Cruz Edwards Collins Reyes Stewart Morris Morales Murphy Cook Rogers Gutierrez Ortiz Morgan Cooper Peterson Bailey Reed Kelly Howard Ramos Kim Cox Ward Richardson Watson Brooks Chavez Wood James Bennett Gray Mendoza Ruiz Hughes Price Alvarez Castillo Sanders Patel Myers Long Ross Foster Jimenez Powell Jenkins Perry Russell Sullivan Bell Coleman Butler Henderson Barnes Gonzales Fisher Vasquez Simmons Romero Jordan Patterson Alexander Hamilton Graham Reynolds Griffin Wallace Moreno West Cole Hayes Bryant Herrera Gibson Ellis Tran Medina Aguilar Stevens Murray Ford Castro Marshall Owens Harrison Fernandez McDonald Woods Washington Kennedy Wells Vargas Henry Chen Freeman Webb Tucker Guzman Burns Crawford Olson Simpson Porter Hunter Gordon Mendez Silva Shaw Snyder Mason Dixon Muñoz Hunt Hicks Holmes Palmer Wagner Black Robertson Boyd Rose Stone Salazar Fox Warren Mills Meyer Rice Schmidt Garza Daniels Ferguson Nichols Stephens Soto Weaver Ryan Gardner Payne Grant Dunn Müller Østergaard O\'Brien'.split(' ');
const WORD = 'Acme Globex Initech Umbrella Stark Wayne Wonka Hooli Vandelay Soylent Cyberdyne Tyrell Aperture Massive Dynamic Blue Sun Oscorp Nakatomi Gringotts Monarch Sirius Vertex Nimbus Quantum Apex Summit Harbor Pioneer Beacon Cascade Granite Evergreen Northwind Contoso Fabrikam Tailspin Litware Proseware Adventure Lucerne Wingtip Fourth Coffee Alpine Trey Margie Datum Humongous Wide World Southridge'.split(' ');
const KIND = 'Systems Labs Software Analytics Logistics Health Capital Partners Robotics Energy Foods Media Security Cloud Networks Biotech Consulting Group Holdings Industries'.split(' ');
const SUFFIX = ['', '', '', ' Inc.', ', Inc.', ' LLC', ' GmbH', ' Ltd', ' S.A.', ' AG', ' Corp.'];
const LEVEL = ['', '', '', 'Senior ', 'Lead ', 'Principal ', 'Junior ', 'Staff '];
const ROLE = [
  'Software Engineer', 'Account Executive', 'Product Manager', 'Data Scientist', 'Marketing Manager', 'Sales Director', 'VP of Sales', 'VP Engineering',
  'Chief Financial Officer', 'CEO', 'CTO', 'Head of People', 'Recruiter', 'Financial Analyst', 'Operations Manager', 'Customer Success Manager',
  'Legal Counsel', 'Designer', 'Engineering Manager', 'Director of Marketing', 'Solutions Architect', 'Business Development Representative', 'Intern',
];

const pick = <T>(r: () => number, a: readonly T[]): T => a[Math.floor(r() * a.length)]!;
const slug = (s: string) => s.normalize('NFD').replace(/[^\x00-\x7f]/g, '').toLowerCase().replace(/[^a-z0-9]+/g, '');
const cell = (s: string) => (/[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);

/** The benchmark CSV (cached under .cache/bench/): unique referenceId, linkedin and email per row. */
export async function ensureCsv(rows = ROWS): Promise<string> {
  const file = join(CACHE, `contacts-${rows}.csv`);
  if (existsSync(file)) return file;
  const t0 = performance.now();
  const r = prng(20261122);
  const companies = Array.from({ length: 5000 }, () => {
    const name = `${pick(r, WORD)} ${pick(r, KIND)}${pick(r, SUFFIX)}`;
    return { name, domain: `${slug(name.replace(/,? (Inc\.|LLC|GmbH|Ltd|S\.A\.|AG|Corp\.)$/, ''))}.example` };
  });
  const tmp = `${file}.tmp`;
  const out = createWriteStream(tmp);
  out.write(`${CSV_COLUMNS.join(',')}\n`);
  let buf = '';
  for (let i = 0; i < rows; i++) {
    const first = pick(r, FIRST);
    const last = pick(r, LAST);
    const co = pick(r, companies);
    const title = r() < 0.05 ? '' : `${pick(r, LEVEL)}${pick(r, ROLE)}`;
    const tag = i.toString(36);
    // a few URL shapes people paste; all canonicalize to https://www.linkedin.com/in/<slug>
    const v = r();
    const profile = `${slug(first)}-${slug(last)}-${tag}`;
    const linkedin = v < 0.03 ? '' : v < 0.85 ? `https://www.linkedin.com/in/${profile}` : v < 0.95 ? `linkedin.com/in/${profile}/` : `https://linkedin.com/in/${profile}?trk=public`;
    // a permutation of 0..rows-1: unique, but not in file order (CRM exports are not sorted by id)
    const ref = `CRM-${((i * 611953) % 1_000_000 + Math.floor(i / 1_000_000) * 1_000_000).toString().padStart(7, '0')}`;
    const email = r() < 0.1 ? '' : `${slug(first)}.${slug(last)}.${tag}@${co.domain}`;
    buf += `${cell(`${first} ${last}`)},${cell(co.name)},${cell(title)},${linkedin},${ref},${email}\n`;
    if (buf.length > 1 << 20) {
      if (!out.write(buf)) await once(out, 'drain');
      buf = '';
    }
  }
  out.write(buf);
  out.end();
  await once(out, 'finish');
  renameSync(tmp, file);
  console.log(`generated ${file} (${rows} rows) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return file;
}

// ── the machine ───────────────────────────────────────────────────────────

export function sh(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return '';
  }
}

export function machineFacts(): string {
  const cpu = cpus()[0]?.model ?? 'unknown';
  return [
    `cpu: ${cpu}, ${sh('nproc', [])} cores`,
    `memory: ${(totalmem() / 1024 ** 3).toFixed(1)} GiB`,
    `node: ${process.version}; SQLite (better-sqlite3): ${sqliteVersionOfNode()}; sqlite3 shell: ${sh('sqlite3', ['--version']).split(' ')[0]}`,
  ].join('\n');
}

function sqliteVersionOfNode(): string {
  const r = spawnSync(process.execPath, ['-e', "const D=require('better-sqlite3');console.log(new D(':memory:').prepare('select sqlite_version()').pluck().get())"], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  return r.stdout.trim();
}

export const hasTaskset = sh('sh', ['-c', 'command -v taskset']) !== '';
export const nCpu = Number(sh('nproc', [])) || cpus().length;

/** `taskset -c <cpus>` in front of a command when taskset exists and the machine has >1 core. */
export function pinned(cpuList: string | undefined, cmd: string, args: string[]): [string, string[]] {
  if (!cpuList || !hasTaskset || nCpu < 2) return [cmd, args];
  return ['taskset', ['-c', cpuList, cmd, ...args]];
}

// ── the server ────────────────────────────────────────────────────────────

export interface Server {
  child: ChildProcess;
  pid: number;
  base: string;
  stop: () => Promise<void>;
}

/**
 * Starts `contact-ledger serve` on a free port with its data in `dataDir`; resolves once it
 * listens. stdout (the JSON log) goes to `<dataDir>/server.log`.
 */
export function startServer(dataDir: string, opts: { cpus?: string; nodeArgs?: string[]; env?: Record<string, string> } = {}): Promise<Server> {
  mkdirSync(dataDir, { recursive: true });
  const logFd = openSync(join(dataDir, 'server.log'), 'a');
  const [cmd, args] = pinned(opts.cpus, process.execPath, [...(opts.nodeArgs ?? []), MAIN, 'serve']);
  const child = spawn(cmd, args, {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      CONTACT_LEDGER_DATA: dataDir,
      PORT: '0',
      HOST: '127.0.0.1',
      CONTACT_LEDGER_ADMIN_EMAIL: ADMIN.email,
      CONTACT_LEDGER_ADMIN_PASSWORD: ADMIN.password,
      ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('DEBUG_'))),
      ...opts.env,
    },
    stdio: ['ignore', logFd, 'pipe'],
  });
  closeSync(logFd);
  let err = '';
  let listening = false;
  const exited = once(child, 'exit');
  return new Promise((resolve, reject) => {
    child.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(err);
      if (m) {
        listening = true;
        child.stderr!.removeAllListeners('data');
        if (process.env.BENCH_VERBOSE) child.stderr!.pipe(process.stderr);
        else child.stderr!.resume();
        resolve({
          child,
          pid: child.pid!,
          base: `http://127.0.0.1:${m[1]}`,
          async stop() {
            if (child.exitCode === null) {
              child.kill('SIGTERM');
              await exited;
            }
          },
        });
      }
    });
    // only before it listened: after an hour's soak the log is past the longest string a read may make
    void exited.then(([code]) => listening || reject(new Error(`the server exited with ${code} before listening:\n${err}\n${readFileSync(join(dataDir, 'server.log'), 'utf8').slice(-2000)}`)));
  });
}

/** The pid of the node process itself when the server was started through taskset (exec keeps the pid). */
export const serverPid = (s: Server) => s.pid;

export class Api {
  token = '';
  readonly base: string;
  constructor(base: string) {
    this.base = base;
  }

  async call<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await fetch(this.base + path, {
      method,
      headers: { ...(this.token ? { Authorization: `Bearer ${this.token}` } : {}), ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path} → ${res.status} ${text}`);
    return (text ? JSON.parse(text) : undefined) as T;
  }

  async signIn(): Promise<void> {
    const s = await this.call<{ accessToken: string }>('POST', '/api/identity/v1/session', { grantType: 'password', ...ADMIN });
    this.token = s.accessToken;
  }
}

/**
 * The server's event-loop delay while something runs (RELIABILITY.md L1 scenario 3: max < 50 ms
 * during an import): /metrics is read every second; prom-client resets its delay histogram at
 * each read, so every sample covers the second before it. `stop()` gives the largest max and p99,
 * and how many seconds reached 50 ms and 100 ms.
 */
export function watchEventLoop(api: Api): { stop(): Promise<{ samples: number; maxMs: number; p99Ms: number; over50: number; over100: number }> } {
  const maxes: number[] = [];
  const p99s: number[] = [];
  const read = async () => {
    try {
      const res = await fetch(`${api.base}/metrics`, { headers: { Authorization: `Bearer ${api.token}` } });
      const text = await res.text();
      const value = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? NaN) * 1000;
      const max = value('nodejs_eventloop_lag_max_seconds');
      const p99 = value('nodejs_eventloop_lag_p99_seconds');
      if (Number.isFinite(max) && Number.isFinite(p99)) {
        maxes.push(max);
        p99s.push(p99);
      }
    } catch {
      // the server is restarting or gone; the samples taken so far stand
    }
  };
  void read(); // resets the histogram: the first sample covers the first second
  const timer = setInterval(() => void read(), 1000);
  return {
    async stop() {
      clearInterval(timer);
      await read();
      maxes.shift(); // the reset read covered the time before the watch
      p99s.shift();
      return { samples: maxes.length, maxMs: Math.max(0, ...maxes), p99Ms: Math.max(0, ...p99s), over50: maxes.filter((m) => m >= 50).length, over100: maxes.filter((m) => m >= 100).length };
    },
  };
}

export const eventLoopLine = (what: string, e: Awaited<ReturnType<ReturnType<typeof watchEventLoop>['stop']>>) =>
  `event-loop delay during ${what}: max ${e.maxMs.toFixed(1)} ms, worst one-second p99 ${e.p99Ms.toFixed(1)} ms; ${e.over50} of ${e.samples} seconds had a delay ≥ 50 ms, ${e.over100} ≥ 100 ms (RELIABILITY.md L1: max < 50 ms; sampled every 10 ms, so a value is the longest turn of the loop plus up to 10 ms)`;

export const ledgerPath = (orgId: string, ledgerId: string) => `/api/ledger/v1/orgs/${orgId}/ledgers/${ledgerId}`;

// ── numbers ───────────────────────────────────────────────────────────────

export function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
export const ratio = (project: number, limit: number) => (project / limit).toFixed(2);

/** VmRSS of a process in KiB (Linux), or NaN. */
export function rssKiB(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : NaN;
  } catch {
    return NaN;
  }
}

/** CPU time (user + system) a process has used so far, in ms (Linux), or NaN. */
export function cpuMs(pid: number): number {
  try {
    // fields after the command name "(…)": state is field 3, utime 14, stime 15 (clock ticks)
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}
const CLOCK_TICKS = Number(sh('getconf', ['CLK_TCK'])) || 100;

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ── imports through the API, and the cached million-contact data folder ──────

export interface ImportStatus {
  id: string;
  status: string;
  submitted: number;
  imported: number;
  duplicates: number;
  invalid: number;
  processed: number;
  message: string | null;
}

/** A new org and ledger on a running server, signed in as the bench superuser. */
export async function newLedger(server: Server): Promise<{ api: Api; orgId: string; ledgerId: string; base: string }> {
  const api = new Api(server.base);
  await api.signIn();
  const org = await api.call<{ id: string }>('POST', '/api/identity/v1/orgs', { name: 'Bench' });
  const ledger = await api.call<{ id: string }>('POST', `/api/ledger/v1/orgs/${org.id}/ledgers`, { name: `bench ${ROWS}` });
  return { api, orgId: org.id, ledgerId: ledger.id, base: ledgerPath(org.id, ledger.id) };
}

/** Uploads `csv` as multipart field `file`; returns the 202's import job. */
export async function uploadCsv(api: Api, base: string, csv: string): Promise<ImportStatus> {
  const form = new FormData();
  form.append('file', await openAsBlob(csv, { type: 'text/csv' }), basename(csv));
  const res = await fetch(`${api.base}${base}/imports`, { method: 'POST', headers: { Authorization: `Bearer ${api.token}` }, body: form });
  const accepted = (await res.json()) as ImportStatus;
  if (res.status !== 202) throw new Error(`upload → ${res.status} ${JSON.stringify(accepted)}`);
  return accepted;
}

/**
 * Uploads `csv` as multipart field `file` and polls the job until it ends. `seconds` runs from the
 * start of the upload to the completion seen by the poll (100 ms granularity).
 */
export async function importCsv(api: Api, base: string, csv: string): Promise<{ status: ImportStatus; seconds: number; uploadSeconds: number }> {
  const t0 = performance.now();
  const accepted = await uploadCsv(api, base, csv);
  const uploadSeconds = (performance.now() - t0) / 1000;
  let status = accepted;
  while (status.status !== 'completed' && status.status !== 'failed') {
    await sleep(100);
    status = await api.call<ImportStatus>('GET', `${base}/imports/${accepted.id}`);
  }
  return { status, seconds: (performance.now() - t0) / 1000, uploadSeconds };
}

export interface LedgerData {
  /** The server's data folder. */
  dataDir: string;
  orgId: string;
  ledgerId: string;
}

const ledgerCache = () => join(CACHE, `ledger-${ROWS}`);

/** Keeps a data folder holding a ledger of ROWS imported contacts for bench:list and bench:download. */
export function saveLedgerData(dataDir: string, orgId: string, ledgerId: string): LedgerData {
  const dir = ledgerCache();
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  renameSync(dataDir, join(dir, 'data'));
  const saved = { dataDir: join(dir, 'data'), orgId, ledgerId };
  writeFileSync(join(dir, 'ledger.json'), JSON.stringify({ orgId, ledgerId }));
  return saved;
}

/** The cached data folder with a ROWS-contact ledger; imports the CSV through the API first if there is none. */
export async function ensureLedgerData(): Promise<LedgerData> {
  const dir = ledgerCache();
  if (existsSync(join(dir, 'ledger.json'))) {
    const { orgId, ledgerId } = JSON.parse(readFileSync(join(dir, 'ledger.json'), 'utf8')) as { orgId: string; ledgerId: string };
    return { dataDir: join(dir, 'data'), orgId, ledgerId };
  }
  const csv = await ensureCsv();
  console.log(`no cached ${ROWS}-contact ledger: importing ${csv} through the API once (npm run bench:import does the same and measures it)…`);
  const work = mkdtempSync(join(CACHE, 'import-'));
  try {
    const dataDir = join(work, 'data');
    const server = await startServer(dataDir);
    let ids: { orgId: string; ledgerId: string };
    try {
      const l = await newLedger(server);
      const r = await importCsv(l.api, l.base, csv);
      if (r.status.status !== 'completed' || r.status.imported !== ROWS) throw new Error(`the import ended ${JSON.stringify(r.status)}`);
      console.log(`imported in ${r.seconds.toFixed(0)} s`);
      ids = { orgId: l.orgId, ledgerId: l.ledgerId };
    } finally {
      await server.stop();
    }
    return saveLedgerData(dataDir, ids.orgId, ids.ledgerId);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
