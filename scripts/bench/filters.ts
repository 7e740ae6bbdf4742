// npm run bench:filters — list requests whose filter few contacts meet, on the cached
// 1,000,000-contact ledger: each against the one SQLite statement that answers it whole (what the
// server ran before the twenty-third session), and, while it runs, how long a cheap request sent
// beside it waits and how long the server's event loop is held (RELIABILITY.md L1: max < 50 ms).
// Also a filtered download against the same download without the filter (a `createdAfter` made
// each page read the ledger again from that time). See docs/benchmarks.md ("Filters few contacts
// meet") and docs/decisions.md ("Long walks go in steps").
//
// Environment: BENCH_ROWS, BENCH_REPEAT (requests a case, default 3).
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { Api, ROWS, ensureLedgerData, fmt, ledgerPath, machineFacts, percentile, startServer, watchEventLoop, type Server } from './common.ts';

const REPEAT = Number(process.env.BENCH_REPEAT ?? 3);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

interface Case {
  label: string;
  query: string;
  /** The one statement that answers it whole, and its parameters after the ledger id. */
  sql: string;
  params?: unknown[];
}

const RARE = 'zz no such company';
const CASES = (since: number, importId: string): Case[] => [
  { label: 'company nobody has, creation order', query: `company=${encodeURIComponent(RARE)}`, sql: `SELECT * FROM contacts INDEXED BY contacts_by_created WHERE ledger_id = ? AND company LIKE ? ORDER BY created_at, seq LIMIT 101`, params: [`%${RARE}%`] },
  { label: 'company nobody has, by name', query: `company=${encodeURIComponent(RARE)}&sortBy=%2Bname`, sql: `SELECT * FROM contacts INDEXED BY contacts_by_name WHERE ledger_id = ? AND company LIKE ? ORDER BY name_key, seq LIMIT 101`, params: [`%${RARE}%`] },
  { label: 'title beyond ASCII nobody has', query: `title=${encodeURIComponent('Directrice Générale')}&sortBy=-createdAt`, sql: `SELECT * FROM contacts INDEXED BY contacts_by_created WHERE ledger_id = ? AND cl_contains_ci(title, ?) ORDER BY created_at DESC, seq DESC LIMIT 101`, params: ['directrice générale'] },
  { label: 'count, isVerified=true', query: 'view=count&isVerified=true', sql: `SELECT count(*) FROM contacts INDEXED BY contacts_by_created WHERE ledger_id = ? AND is_verified = 1` },
  { label: 'count, company=foods', query: 'view=count&company=foods', sql: `SELECT count(*) FROM contacts INDEXED BY contacts_by_created WHERE ledger_id = ? AND company LIKE ?`, params: ['%foods%'] },
  {
    label: 'changed since, by change time',
    query: `lastJobChangedAt=${encodeURIComponent(new Date(since).toISOString())}&sortBy=-lastJobChangedAt`,
    // before: the contacts with a change, then every one without (none of which can match)
    sql: `SELECT count(*) FROM (SELECT seq FROM contacts INDEXED BY contacts_by_job_change WHERE ledger_id = ? AND last_job_changed_at >= ? AND last_job_changed_at IS NULL ORDER BY seq DESC LIMIT 101)`,
    params: [since],
  },
  {
    label: "an import's contacts, by change time",
    query: `importId=${importId}&sortBy=-lastJobChangedAt`,
    // before (to the twenty-fourth session): the import's contacts from its own index, sorted whole
    sql: `SELECT * FROM contacts INDEXED BY contacts_by_import WHERE ledger_id = ? AND import_id = ? AND last_job_changed_at IS NULL ORDER BY seq DESC LIMIT 101`,
    params: [importId],
  },
];

/** Sends cheap requests back to back while `work` runs; their latencies. */
async function beside<T>(server: Server, api: Api, path: string, work: () => Promise<T>): Promise<{ result: T; waits: number[] }> {
  const waits: number[] = [];
  let running = true;
  const probe = (async () => {
    while (running) {
      const t0 = performance.now();
      const res = await fetch(server.base + path, { headers: { Authorization: `Bearer ${api.token}` } });
      await res.arrayBuffer();
      waits.push(performance.now() - t0);
    }
  })();
  probe.catch(() => {}); // a failed probe fails the bench below, after `work`, not as an unhandled rejection
  let result: T;
  try {
    result = await work();
  } finally {
    running = false;
  }
  await probe;
  return { result, waits };
}

async function main() {
  const data = await ensureLedgerData();
  const dbFile = join(data.dataDir, 'contact-ledger.db');
  console.log(machineFacts());
  const since = Date.parse('2026-01-01T00:00:00Z');
  // the statements alone first, before the server starts: while one runs, this process serves no
  // socket, and a kept-alive connection the server closes meanwhile would fail the next request
  const db = new Database(dbFile, { readonly: true });
  const importId = db.prepare('SELECT import_id FROM contacts WHERE ledger_id = ? AND import_id IS NOT NULL LIMIT 1').pluck().get(data.ledgerId) as string;
  const cases = CASES(since, importId);
  db.function('cl_contains_ci', { deterministic: true }, (h: unknown, n: unknown) => (typeof h === 'string' && typeof n === 'string' && h.toLocaleLowerCase('und').normalize('NFC').includes(n) ? 1 : 0));
  const sqlMs = cases.map((c) => {
    const statement = db.prepare(c.sql);
    const ms: number[] = [];
    for (let i = 0; i < REPEAT; i++) {
      const t0 = performance.now();
      statement.all(data.ledgerId, ...(c.params ?? []));
      ms.push(performance.now() - t0);
    }
    return median(ms);
  });
  db.close();
  const server = await startServer(data.dataDir);
  try {
    const api = new Api(server.base);
    await api.signIn();
    const base = `${ledgerPath(data.orgId, data.ledgerId)}/contacts`;
    console.log(`ledger: ${fmt(ROWS)} contacts; ${REPEAT} requests a case, one at a time, while a second client sends GET …/contacts?limit=1 back to back\n`);
    let worstLoop = 0;
    for (const [i, c] of cases.entries()) {
      const loop = watchEventLoop(api);
      const { result: requestMs, waits } = await beside(server, api, `${base}?limit=1`, async () => {
        const ms: number[] = [];
        for (let i = 0; i < REPEAT; i++) {
          const t0 = performance.now();
          await api.call('GET', `${base}?${c.query}`);
          ms.push(performance.now() - t0);
        }
        return ms;
      });
      const e = await loop.stop();
      worstLoop = Math.max(worstLoop, e.maxMs);
      waits.sort((a, b) => a - b);
      console.log(
        `${c.label.padEnd(38)} one statement ${sqlMs[i]!.toFixed(1).padStart(7)} ms (the event loop held that long) | ` +
          `request ${median(requestMs).toFixed(1).padStart(7)} ms; beside it ${waits.length} requests, p99 ${percentile(waits, 99).toFixed(1)} ms, max ${Math.max(...waits).toFixed(1)} ms; event-loop max ${e.maxMs.toFixed(1)} ms`,
      );
    }
    // a download filtered by creation time: each page bounded by the cursor, not the filter's start
    const download = async (query: string) => {
      const t0 = performance.now();
      const res = await fetch(`${server.base}${base}/download?${query}`, { headers: { Authorization: `Bearer ${api.token}` } });
      let bytes = 0;
      for await (const chunk of res.body!) bytes += (chunk as Uint8Array).length;
      return { seconds: (performance.now() - t0) / 1000, bytes };
    };
    const plain = await download('');
    const filtered = await download('createdAfter=2000-01-01');
    if (filtered.bytes !== plain.bytes) throw new Error(`the filtered download has ${filtered.bytes} bytes, the whole one ${plain.bytes}: createdAfter=2000 should keep every contact`);
    console.log(`\ndownload of the whole ledger: ${plain.seconds.toFixed(1)} s without a filter, ${filtered.seconds.toFixed(1)} s with createdAfter=2000-01-01 (${(filtered.seconds / plain.seconds).toFixed(2)}×)`);
    console.log(`event loop: longest turn ${worstLoop.toFixed(1)} ms during the requests (RELIABILITY.md L1: < 50 ms) — ${worstLoop < 50 ? 'pass' : 'FAIL'}`);
    if (worstLoop >= 50) process.exitCode = 1;
  } finally {
    await server.stop();
  }
}

await main();
