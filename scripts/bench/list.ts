// npm run bench:list — authenticated `GET …/contacts?lastInfoChangedAt=<time>&limit=100` on a
// 1,000,000-contact ledger under autocannon, against a bare node:http + better-sqlite3 server
// (scripts/bench/bare-server.ts) running the same SQL on the same database file. Server and load
// generator run on different cores (taskset). See docs/benchmarks.md.
//
// Environment: BENCH_ROWS, BENCH_DURATION (seconds, default 10), BENCH_CONNECTIONS (default 10),
// BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=…" (profile the project server).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Api, ROOT, ROWS, ensureLedgerData, fmt, ledgerPath, machineFacts, nCpu, pinned, ratio, startServer } from './common.ts';

const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
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

/** A warm-up run (discarded), then the measured run. */
async function measure(url: string, headers: Record<string, string> = {}): Promise<Cannon> {
  await cannon(url, headers, 3);
  return cannon(url, headers, DURATION);
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

async function bareServer(dbFile: string): Promise<{ port: number; stop: () => Promise<void> }> {
  const [cmd, args] = pinned(SERVER_CPU, process.execPath, [join(ROOT, 'scripts', 'bench', 'bare-server.ts'), dbFile]);
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
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

const print = (label: string, r: Cannon) =>
  console.log(
    `${label} ${fmt(r.requests.average)} req/s (${fmt(r.requests.total)} requests), latency p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms${r.non2xx || r.errors ? `, ${r.non2xx} non-2xx, ${r.errors} errors` : ''}`,
  );

async function main() {
  const data = await ensureLedgerData();
  const dbFile = join(data.dataDir, 'contact-ledger.db');
  console.log(machineFacts());
  const { since, changed, matching } = markChanges(dbFile, data.ledgerId);
  const sinceIso = new Date(since).toISOString();
  console.log(`ledger: ${fmt(ROWS)} contacts, ${fmt(changed)} with lastInfoChangedAt; lastInfoChangedAt=${sinceIso} matches ${fmt(matching)}`);
  console.log(`autocannon: ${CONNECTIONS} connections, ${DURATION} s after a 3 s warm-up; servers on cpu ${SERVER_CPU}, autocannon on cpu ${LOAD_CPU}\n`);

  const bare = await bareServer(dbFile);
  let bareIds: string[];
  let bareBytes: number;
  let limit: Cannon;
  try {
    const url = `http://127.0.0.1:${bare.port}/contacts?ledgerId=${data.ledgerId}&since=${since}`;
    const text = await (await fetch(url)).text();
    bareBytes = Buffer.byteLength(text);
    bareIds = (JSON.parse(text) as { contacts: { id: string }[] }).contacts.map((c) => c.id);
    limit = await measure(url);
  } finally {
    await bare.stop();
  }
  print('limit    bare node:http + better-sqlite3:', limit);
  let projectBytes = 0;

  const server = await startServer(data.dataDir, { cpus: SERVER_CPU, nodeArgs });
  let project: Cannon;
  try {
    const api = new Api(server.base);
    await api.signIn();
    const path = `${ledgerPath(data.orgId, data.ledgerId)}/contacts?lastInfoChangedAt=${encodeURIComponent(sinceIso)}&limit=100`;
    const res = await fetch(server.base + path, { headers: { Authorization: `Bearer ${api.token}` } });
    const text = await res.text();
    if (!res.ok) throw new Error(`GET ${path} → ${res.status} ${text}`);
    projectBytes = Buffer.byteLength(text);
    const ids = (JSON.parse(text) as { contacts: { id: string }[] }).contacts.map((c) => c.id);
    if (ids.length !== 100 || ids.join() !== bareIds.join()) throw new Error('the project and the bare server answer different contacts: not the same query');
    project = await measure(server.base + path, { Authorization: `Bearer ${api.token}` });
  } finally {
    await server.stop();
  }
  print('project  GET …/contacts (authenticated):   ', project);
  console.log(`ratio    ${ratio(project.requests.average, limit.requests.average)}× (target ≥ 0.7×)`);
  console.log(`response bodies: project ${fmt(projectBytes)} bytes, bare ${fmt(bareBytes)} bytes (100 contacts)`);
}

await main();
