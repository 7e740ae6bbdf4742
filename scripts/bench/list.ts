// npm run bench:list — authenticated `GET …/contacts?lastInfoChangedAt=<time>&limit=100` on a
// 1,000,000-contact ledger under autocannon, against a bare node:http + better-sqlite3 server
// (scripts/bench/bare-server.ts) running the same SQL on the same database file. Server and load
// generator run on different cores (taskset). See docs/benchmarks.md.
//
// Environment: BENCH_ROWS, BENCH_DURATION (seconds per round, default 10), BENCH_ROUNDS (default 3),
// BENCH_CONNECTIONS (default 10),
// BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=…" (profile both servers; summarize a profile with
// scripts/bench/profile-summary.ts).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Api, ROOT, ROWS, cpuMs, ensureLedgerData, fmt, ledgerPath, machineFacts, nCpu, pinned, ratio, startServer } from './common.ts';

const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
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

async function bareServer(dbFile: string): Promise<{ port: number; pid: number; stop: () => Promise<void> }> {
  const [cmd, args] = pinned(SERVER_CPU, process.execPath, [...nodeArgs, join(ROOT, 'scripts', 'bench', 'bare-server.ts'), dbFile]);
  const child = spawn(cmd, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = once(child, 'exit');
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    void exited.then(() => reject(new Error(`the bare server exited: ${out}`)));
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

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

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
    `server CPU ${median(s.runs.map((r) => r.cpuMsPerRequest)).toFixed(2)} ms/request${failures ? `, ${failures} non-2xx or errors` : ''}`
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
    `autocannon: ${CONNECTIONS} connections; ${ROUNDS} rounds of ${DURATION} s per server, alternating limit and project after a 3 s warm-up of each; ` +
      `servers on cpu ${SERVER_CPU}, autocannon on cpu ${LOAD_CPU}\n`,
  );

  // Both servers run during the whole benchmark (only one is loaded at a time), so that slow
  // phases of a shared machine hit both sides alike; the ratio is of the medians.
  const bare = await bareServer(dbFile);
  const server = await startServer(data.dataDir, { cpus: SERVER_CPU, nodeArgs });
  try {
    const bareUrl = `http://127.0.0.1:${bare.port}/contacts?ledgerId=${data.ledgerId}&since=${since}`;
    const bareText = await (await fetch(bareUrl)).text();
    const bareIds = (JSON.parse(bareText) as { contacts: { id: string }[] }).contacts.map((c) => c.id);

    const api = new Api(server.base);
    await api.signIn();
    const path = `${ledgerPath(data.orgId, data.ledgerId)}/contacts?lastInfoChangedAt=${encodeURIComponent(sinceIso)}&limit=100`;
    const headers = { Authorization: `Bearer ${api.token}` };
    const res = await fetch(server.base + path, { headers });
    const text = await res.text();
    if (!res.ok) throw new Error(`GET ${path} → ${res.status} ${text}`);
    const ids = (JSON.parse(text) as { contacts: { id: string }[] }).contacts.map((c) => c.id);
    if (ids.length !== 100 || ids.join() !== bareIds.join()) throw new Error('the project and the bare server answer different contacts: not the same query');

    const limit: Side = { label: 'limit    bare node:http + better-sqlite3:', pid: bare.pid, url: bareUrl, headers: {}, runs: [] };
    const project: Side = { label: 'project  GET …/contacts (authenticated):   ', pid: server.pid, url: server.base + path, headers, runs: [] };
    const warm = [await cannon(limit.url, limit.headers, 3), await cannon(project.url, project.headers, 3)];
    for (let i = 0; i < ROUNDS; i++) {
      await round(limit);
      await round(project);
    }
    console.log(summary(limit));
    console.log(summary(project));
    const r = median(project.runs.map((x) => x.rps)) / median(limit.runs.map((x) => x.rps));
    console.log(`ratio    ${r.toFixed(2)}× (target ≥ 0.7×); per round: ${project.runs.map((p, i) => ratio(p.rps, limit.runs[i]!.rps)).join(', ')}`);
    console.log(`response bodies: project ${fmt(Buffer.byteLength(text))} bytes, bare ${fmt(Buffer.byteLength(bareText))} bytes (100 contacts)`);
    // for dividing a CPU profile (BENCH_NODE_ARGS) by the requests each server answered
    const served = (s: Side, w: Cannon) => fmt(s.runs.reduce((n, r) => n + r.total, 0) + w.requests.total + 1);
    console.log(`requests served in all (warm-up included): limit ${served(limit, warm[0]!)} (pid ${bare.pid}), project ${served(project, warm[1]!)} (pid ${server.pid}; + the sign-in)`);
  } finally {
    await server.stop();
    await bare.stop();
  }
}

await main();
