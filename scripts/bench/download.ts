// npm run bench:download — GET …/contacts/download of a 1,000,000-contact ledger against
// `sqlite3 -csv` selecting the same columns in the same order from the same file; rows/s, the
// ratio, and the growth of the server's RSS while it streams. See docs/benchmarks.md.
//
// Environment: BENCH_ROWS, BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=…" (profile the server),
// BENCH_SORT (-lastJobChangedAt or -lastInfoChangedAt: the download in change-time order, which
// reads the order of one moment first; the limit orders the same way).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { Api, ROWS, ensureLedgerData, fmt, ledgerPath, machineFacts, ratio, rssKiB, sleep, startServer } from './common.ts';

const nodeArgs = process.env.BENCH_NODE_ARGS ? process.env.BENCH_NODE_ARGS.split(' ') : [];
const MiB = 1024 * 1024;

const iso = (col: string) => `strftime('%Y-%m-%dT%H:%M:%fZ', ${col} / 1000.0, 'unixepoch')`;

const SORT = process.env.BENCH_SORT ?? '+createdAt';
/** The download's order in SQL: creation time, or a change time newest first, contacts without one last (newest first). */
const ORDER: Record<string, string> = {
  '+createdAt': 'created_at, seq',
  '-lastJobChangedAt': 'last_job_changed_at IS NULL, last_job_changed_at DESC, seq DESC',
  '-lastInfoChangedAt': 'last_info_changed_at IS NULL, last_info_changed_at DESC, seq DESC',
};
if (!ORDER[SORT]) throw new Error(`BENCH_SORT must be one of ${Object.keys(ORDER).join(', ')}`);

/** The download's columns (routes.ts DOWNLOAD_HEADER) in SQL, in the download's order. */
const limitSql = (ledgerId: string) =>
  `SELECT id, reference_id, name, linkedin, import_company, import_title, company, title, title_level, title_domain, email, location, is_verified, ` +
  `${iso('last_job_changed_at')}, ${iso('last_info_changed_at')}, ${iso('created_at')} FROM contacts WHERE ledger_id = '${ledgerId}' ORDER BY ${ORDER[SORT]}`;

/** Counts bytes and line breaks of a byte stream. */
async function count(stream: AsyncIterable<Uint8Array>): Promise<{ bytes: number; lines: number }> {
  let bytes = 0;
  let lines = 0;
  for await (const chunk of stream) {
    bytes += chunk.length;
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
  }
  return { bytes, lines };
}

async function shellCsv(dbFile: string, ledgerId: string): Promise<{ seconds: number; rows: number; bytes: number }> {
  const t0 = performance.now();
  const child = spawn('sqlite3', ['-readonly', '-csv', '-header', dbFile, limitSql(ledgerId)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = once(child, 'exit');
  const c = await count(child.stdout);
  const [code] = await exited;
  if (code !== 0) throw new Error(`sqlite3 exited with ${code}`);
  return { seconds: (performance.now() - t0) / 1000, rows: c.lines - 1, bytes: c.bytes };
}

async function main() {
  const data = await ensureLedgerData();
  const dbFile = join(data.dataDir, 'contact-ledger.db');
  console.log(machineFacts());
  console.log(`ledger: ${fmt(ROWS)} contacts, sortBy=${SORT}\n`);

  await shellCsv(dbFile, data.ledgerId); // warms the OS page cache for both runs
  const limit = await shellCsv(dbFile, data.ledgerId);
  if (limit.rows !== ROWS) throw new Error(`sqlite3 wrote ${limit.rows} rows, expected ${ROWS}`);
  console.log(`limit    sqlite3 -csv:    ${limit.seconds.toFixed(1)} s, ${fmt(limit.rows / limit.seconds)} rows/s (${(limit.bytes / MiB).toFixed(0)} MiB)`);

  const server = await startServer(data.dataDir, { nodeArgs });
  try {
    const api = new Api(server.base);
    await api.signIn();
    const path = `${ledgerPath(data.orgId, data.ledgerId)}/contacts/download${SORT === '+createdAt' ? '' : `?sortBy=${SORT}`}`;
    await api.call('GET', `${ledgerPath(data.orgId, data.ledgerId)}/contacts?limit=100`); // warm the server
    await sleep(500);
    // The first download starts from a just-started server: its RSS growth includes filling the
    // SQLite page cache (cache_size, 64 MiB) and the JS heap reaching its working size. The second
    // shows what a download costs on a warm server.
    for (const run of ['first (cold server)', 'second (warm server)']) {
      const before = rssKiB(server.pid);
      let peak = before;
      const sampler = setInterval(() => (peak = Math.max(peak, rssKiB(server.pid))), 50);
      const t0 = performance.now();
      const res = await fetch(server.base + path, { headers: { Authorization: `Bearer ${api.token}` } });
      if (!res.ok || !res.body) throw new Error(`download → ${res.status}`);
      const c = await count(res.body);
      const seconds = (performance.now() - t0) / 1000;
      clearInterval(sampler);
      const rows = c.lines - 1;
      if (rows !== ROWS) throw new Error(`the download has ${rows} rows, expected ${ROWS}`);
      const rate = rows / seconds;
      console.log(`project  GET …/download, ${run}: ${seconds.toFixed(1)} s, ${fmt(rate)} rows/s (${(c.bytes / MiB).toFixed(0)} MiB), ratio ${ratio(rate, limit.rows / limit.seconds)}× (target ≥ 0.3×)`);
      const growth = (peak - before) / 1024;
      console.log(`         server RSS ${(before / 1024).toFixed(0)} MiB before, ${(peak / 1024).toFixed(0)} MiB peak: growth ${growth.toFixed(1)} MiB (limit < 64 MiB)`);
      await sleep(1000);
    }
  } finally {
    await server.stop();
  }
}

await main();
