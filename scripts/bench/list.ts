// npm run bench:list — authenticated `GET …/contacts?lastInfoChangedAt=<time>&limit=100` on a
// 1,000,000-contact ledger under autocannon, against a bare node:http + better-sqlite3 server
// (scripts/bench/bare-server.ts) running the same SQL on the same database file. Server and load
// generator run on different cores (taskset). See docs/benchmarks.md.
//
// Also measured in the same run, for context: the bare server's handler behind Koa and
// @koa/router and nothing else (scripts/bench/koa-server.ts) — what the framework costs, apart
// from the project's own per-request work.
//
// The ratio is the median over rounds of project/limit within each round: the servers take turns
// in every round, so a slow phase of the shared machine weighs on both sides of a round alike.
//
// Environment: BENCH_ROWS, BENCH_DURATION (seconds per round, default 5), BENCH_ROUNDS (default 6),
// BENCH_WARM_UP (seconds of load on each server before the rounds, default 20),
// BENCH_CONNECTIONS (default 10),
// BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=…" (profile both servers; summarize a profile with
// scripts/bench/profile-summary.ts).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Api, ROOT, ROWS, cpuMs, ensureLedgerData, fmt, ledgerPath, machineFacts, nCpu, pinned, startServer } from './common.ts';

const DURATION = Number(process.env.BENCH_DURATION ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
/**
 * Seconds of load on each server before the rounds. Measured in 3 s steps, the reference servers
 * reach their steady CPU cost per request after ~6 s of load, the project only after ~20 s (4.2 ms
 * a request in the first step, ~2.4 ms from the seventh on); the rounds measure the steady state
 * of a server that runs for days.
 */
const WARM_UP = Number(process.env.BENCH_WARM_UP ?? 20);
const nodeArgs = process.env.BENCH_NODE_ARGS ? process.env.BENCH_NODE_ARGS.split(' ') : [];
const DAY = 86_400_000;
// Servers on the first core, autocannon on the second (one core: both share it).
const SERVER_CPU = '0';
const LOAD_CPU = nCpu > 1 ? '1' : '0';

interface Cannon {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number; average: number };
  non2xx: number;
  errors: number;
}

/** Runs autocannon (pinned to LOAD_CPU) and returns its JSON result. */
async function cannon(url: string, headers: Record<string, string>, seconds: number): Promise<Cannon> {
  const args = [join(ROOT, 'node_modules', 'autocannon', 'autocannon.js'), '-j', '-c', String(CONNECTIONS), '-d', String(seconds)];
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}=${v}`);
  args.push(url);
  const [cmd, cmdArgs] = pinned(LOAD_CPU, process.execPath, args);
  const child = spawn(cmd, cmdArgs, { stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  await once(child, 'exit');
  return JSON.parse(out) as Cannon;
}

/**
 * Simulates tracked changes: 1% of the ledger's contacts get a last_info_changed_at spread over
 * the 30 days after the import (deterministic, so re-running changes nothing). Returns the
 * "changed since" time of a daily poll: the last day, ~1/30 of those contacts.
 */
function markChanges(dbFile: string, ledgerId: string): { since: number; changed: number; matching: number } {
  const db = new Database(dbFile);
  try {
    const t0 = db.prepare('SELECT max(created_at) FROM contacts WHERE ledger_id = ?').pluck().get(ledgerId) as number;
    db.prepare('UPDATE contacts SET last_info_changed_at = ? + (seq * 7919) % ? WHERE ledger_id = ? AND seq % 100 = 0').run(t0, 30 * DAY, ledgerId);
    const since = t0 + 29 * DAY;
    const changed = db.prepare('SELECT count(*) FROM contacts WHERE ledger_id = ? AND last_info_changed_at IS NOT NULL').pluck().get(ledgerId) as number;
    const matching = db.prepare('SELECT count(*) FROM contacts WHERE ledger_id = ? AND last_info_changed_at >= ?').pluck().get(ledgerId, since) as number;
    return { since, changed, matching };
  } finally {
    db.close();
  }
}

/** One of the reference servers (bare-server.ts, koa-server.ts) on `dbFile`, pinned to SERVER_CPU. */
async function referenceServer(script: string, dbFile: string): Promise<{ port: number; pid: number; stop: () => Promise<void> }> {
  const [cmd, args] = pinned(SERVER_CPU, process.execPath, [...nodeArgs, join(ROOT, 'scripts', 'bench', script), dbFile]);
  const child = spawn(cmd, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = once(child, 'exit');
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    void exited.then(() => reject(new Error(`${script} exited: ${out}`)));
  });
  return {
    port,
    pid: child.pid!,
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The median (of an even count, the mean of the two middle values). */
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

interface Side {
  label: string;
  pid: number;
  url: string;
  headers: Record<string, string>;
  runs: { rps: number; total: number; p50: number; p99: number; cpuMsPerRequest: number; failures: number }[];
}

/** One measured run against one server, with the server's CPU time per request. */
async function round(side: Side): Promise<void> {
  const cpu0 = cpuMs(side.pid);
  const r = await cannon(side.url, side.headers, DURATION);
  const cpu = cpuMs(side.pid) - cpu0;
  side.runs.push({ rps: r.requests.average, total: r.requests.total, p50: r.latency.p50, p99: r.latency.p99, cpuMsPerRequest: cpu / r.requests.total, failures: r.non2xx + r.errors });
}

const summary = (s: Side) => {
  const rps = median(s.runs.map((r) => r.rps));
  const runs = s.runs.map((r) => fmt(r.rps)).join(', ');
  const failures = s.runs.reduce((n, r) => n + r.failures, 0);
  return (
    `${s.label} ${fmt(rps)} req/s (median of ${runs}), latency p50 ${median(s.runs.map((r) => r.p50))} ms, p99 ${median(s.runs.map((r) => r.p99))} ms, ` +
    `server CPU ${median(s.runs.map((r) => r.cpuMsPerRequest)).toFixed(2)} ms/request (${s.runs.map((r) => r.cpuMsPerRequest.toFixed(2)).join(', ')})${failures ? `, ${failures} non-2xx or errors` : ''}`
  );
};

async function main() {
  const data = await ensureLedgerData();
  const dbFile = join(data.dataDir, 'contact-ledger.db');
  console.log(machineFacts());
  const { since, changed, matching } = markChanges(dbFile, data.ledgerId);
  const sinceIso = new Date(since).toISOString();
  console.log(`ledger: ${fmt(ROWS)} contacts, ${fmt(changed)} with lastInfoChangedAt; lastInfoChangedAt=${sinceIso} matches ${fmt(matching)}`);
  console.log(
    `autocannon: ${CONNECTIONS} connections; ${ROUNDS} rounds of ${DURATION} s per server, the servers taking turns in each round after a ${WARM_UP} s warm-up of each; ` +
      `servers on cpu ${SERVER_CPU}, autocannon on cpu ${LOAD_CPU}\n`,
  );

  // All servers run during the whole benchmark (only one is loaded at a time), so that slow
  // phases of a shared machine hit every side alike. The project starts first: it migrates a
  // cached database made by an older version to the schema whose indexes the reference SQL names.
  const server = await startServer(data.dataDir, { cpus: SERVER_CPU, nodeArgs });
  const started: { stop: () => Promise<void> }[] = [server];
  try {
    const bare = await referenceServer('bare-server.ts', dbFile);
    started.push(bare);
    const koa = await referenceServer('koa-server.ts', dbFile);
    started.push(koa);
    const query = `/contacts?ledgerId=${data.ledgerId}&since=${since}`;
    const bareUrl = `http://127.0.0.1:${bare.port}${query}`;
    const koaUrl = `http://127.0.0.1:${koa.port}${query}`;
    const bareText = await (await fetch(bareUrl)).text();
    const bareIds = (JSON.parse(bareText) as { contacts: { id: string }[] }).contacts.map((c) => c.id);
    if ((await (await fetch(koaUrl)).text()) !== bareText) throw new Error('the Koa server and the bare server answer differently');

    const api = new Api(server.base);
    await api.signIn();
    const path = `${ledgerPath(data.orgId, data.ledgerId)}/contacts?lastInfoChangedAt=${encodeURIComponent(sinceIso)}&limit=100`;
    const headers = { Authorization: `Bearer ${api.token}` };
    const res = await fetch(server.base + path, { headers });
    const text = await res.text();
    if (!res.ok) throw new Error(`GET ${path} → ${res.status} ${text}`);
    const ids = (JSON.parse(text) as { contacts: { id: string }[] }).contacts.map((c) => c.id);
    if (ids.length !== 100 || ids.join() !== bareIds.join()) throw new Error('the project and the bare server answer different contacts: not the same query');

    const limit: Side = { label: 'limit     bare node:http + better-sqlite3:', pid: bare.pid, url: bareUrl, headers: {}, runs: [] };
    const framework: Side = { label: 'framework the same behind Koa + @koa/router:', pid: koa.pid, url: koaUrl, headers: {}, runs: [] };
    const project: Side = { label: 'project   GET …/contacts (authenticated):   ', pid: server.pid, url: server.base + path, headers, runs: [] };
    const sides = [limit, framework, project];
    const warm = [];
    for (const side of sides) warm.push(await cannon(side.url, side.headers, WARM_UP));
    for (let i = 0; i < ROUNDS; i++) for (const side of sides) await round(side);
    for (const side of sides) console.log(summary(side));
    const perRound = (s: Side) => s.runs.map((x, i) => x.rps / limit.runs[i]!.rps);
    const line = (s: Side) => `${median(perRound(s)).toFixed(2)}× (per round: ${perRound(s).map((x) => x.toFixed(2)).join(', ')})`;
    console.log(`ratio     project/limit ${line(project)} (target ≥ 0.7×)`);
    console.log(`          framework/limit ${line(framework)}`);
    console.log(`response bodies: project ${fmt(Buffer.byteLength(text))} bytes, bare ${fmt(Buffer.byteLength(bareText))} bytes (100 contacts)`);
    // for dividing a CPU profile (BENCH_NODE_ARGS) by the requests each server answered
    const served = (s: Side, w: Cannon) => fmt(s.runs.reduce((n, r) => n + r.total, 0) + w.requests.total);
    console.log(
      `requests served in all (warm-up included): limit ${served(limit, warm[0]!)} (pid ${bare.pid}), framework ${served(framework, warm[1]!)} (pid ${koa.pid}), ` +
        `project ${served(project, warm[2]!)} (pid ${server.pid}; plus the sign-in and one check request on each server)`,
    );
  } finally {
    for (const s of started) await s.stop();
  }
}

await main();
