// npm run bench:import — a 1,000,000-row CSV through the API until its job completes, against the
// sqlite3 shell's `.import` of the same file into the same table with the same indexes; the p99
// of list requests made while the import runs. See docs/benchmarks.md.
//
// Also measured in the same run, for context: the same rows inserted straight into the same table
// with the server's storage settings, in transactions paced like the server's (~30 ms, RELIABILITY
// D2) — what any import that keeps the API responsive can reach on this machine.
//
// Then, at the same size (issue 3, crash safety): the file imported once more into a fresh data
// folder while the server is killed with SIGKILL at 30 % and at 70 % and restarted each time; the
// job must complete with every row imported exactly once.
//
// Environment: BENCH_ROWS (default 1000000), BENCH_SKIP_LIMIT=1 (project only),
// BENCH_SKIP_PACED=1 (no paced-insert line), BENCH_SKIP_CRASH=1 (no crash phase),
// BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=…" (profile the server), BENCH_LISTERS (default 2).
import { execFileSync, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createReadStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse';
import { ChunkSizer } from '../../src/jobs/chunk-pacing.ts';
import { newId } from '../../src/ids.ts';
import { createContactsRepo } from '../../src/ledger/contacts-repo.ts';
import { startCheckpointer } from '../../src/storage/checkpointer.ts';
import { openDb } from '../../src/storage/db.ts';
import { Api, CACHE, ROWS, ensureCsv, fmt, importCsv, machineFacts, newLedger, percentile, ratio, rssKiB, saveLedgerData, sleep, startServer, uploadCsv, watchEventLoop, eventLoopLine, type ImportStatus, type Server } from './common.ts';

const skipLimit = process.env.BENCH_SKIP_LIMIT === '1';
const skipPaced = process.env.BENCH_SKIP_PACED === '1' || skipLimit;
const skipCrash = process.env.BENCH_SKIP_CRASH === '1';
const nodeArgs = process.env.BENCH_NODE_ARGS ? process.env.BENCH_NODE_ARGS.split(' ') : [];
/** Concurrent list clients during the import. */
const LISTERS = Number(process.env.BENCH_LISTERS ?? 2);
/** How long the list requests run once more after the import, as the baseline of their latency. */
const BASELINE_MS = 5000;

/**
 * The contacts table and all its indexes exactly as the server creates them (every migration
 * applied): a throwaway server starts on an empty folder, then its schema is read back.
 */
async function contactsDdl(work: string): Promise<string> {
  const dataDir = join(work, 'schema');
  const server = await startServer(dataDir);
  await server.stop();
  const out = execFileSync('sqlite3', [join(dataDir, 'contact-ledger.db'), "SELECT sql || ';' FROM sqlite_schema WHERE tbl_name = 'contacts' AND sql IS NOT NULL ORDER BY type DESC"], { encoding: 'utf8' });
  rmSync(dataDir, { recursive: true, force: true });
  return out;
}

/**
 * The limit: the sqlite3 shell imports the file into the real contacts table (same columns, same
 * unique and lookup indexes, same synchronous=FULL and page cache as the server) through a view
 * whose INSTEAD OF trigger fills in what the file does not have (random id, ledger, import, times,
 * and the name and company keys as lower(): keys spread like the server's folded ones, so the
 * indexes on them — the name sort's since migration 0017 — cost the shell what they cost the server;
 * left NULL they were appended to at the end, for free).
 * The shell's .import is one transaction; it runs in the shell's default rollback-journal mode,
 * which is faster for one big transaction than WAL (see docs/benchmarks.md).
 */
function shellImport(csv: string, work: string, ddl: string): { seconds: number; rows: number } {
  const db = join(work, 'limit.db');
  const script = `
PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA cache_size = -65536; PRAGMA temp_store = MEMORY;
CREATE TABLE ledgers (id TEXT PRIMARY KEY) STRICT;
INSERT INTO ledgers VALUES ('l_bench');
${ddl}
CREATE VIEW csv_in (name, company, title, linkedin, referenceId, email) AS SELECT NULL, NULL, NULL, NULL, NULL, NULL;
CREATE TRIGGER csv_in_insert INSTEAD OF INSERT ON csv_in BEGIN
  INSERT INTO contacts (id, ledger_id, import_id, reference_id, name, company, import_company, import_title, title, email, linkedin, created_at, updated_at, name_key, company_key)
  VALUES ('c_' || lower(hex(randomblob(16))), 'l_bench', 'imp_bench', nullif(NEW.referenceId, ''), NEW.name, NEW.company, NEW.company,
          nullif(NEW.title, ''), nullif(NEW.title, ''), nullif(NEW.email, ''), nullif(NEW.linkedin, ''), 1763800000000, 1763800000000,
          lower(NEW.name), lower(NEW.company));
END;
.import --csv --skip 1 '${csv}' csv_in
SELECT count(*) FROM contacts;
`;
  const t0 = performance.now();
  const r = spawnSync('sqlite3', [db], { input: script, encoding: 'utf8' });
  const seconds = (performance.now() - t0) / 1000;
  if (r.status !== 0) throw new Error(`sqlite3 failed: ${r.stderr}`);
  const rows = Number(r.stdout.trim().split('\n').pop());
  if (rows !== ROWS) throw new Error(`sqlite3 imported ${rows} rows, expected ${ROWS}: ${r.stderr}`);
  rmSync(db, { force: true });
  return { seconds, rows };
}

/**
 * The paced insert: the file's rows inserted straight into the same contacts table and indexes,
 * through the server's own storage (openDb: WAL, synchronous=FULL, 64 MiB page cache; WAL
 * checkpoints on their own thread) and the server's own insert (ContactsRepo.insertContact), in
 * transactions sized by the server's ChunkSizer to ~30 ms each — the short transactions that
 * RELIABILITY.md D2 requires of every writer. No HTTP, no validation, no matching, no list
 * requests, no pauses between chunks: what an import that keeps the API responsive can reach on
 * this machine, measured in the same run as the one-transaction limit.
 */
async function pacedInsert(csv: string, work: string, ddl: string): Promise<{ seconds: number; rows: number; chunkRows: number }> {
  const file = join(work, 'paced.db');
  const db = openDb(file, { check: false });
  db.raw.exec(`CREATE TABLE ledgers (id TEXT PRIMARY KEY) STRICT; INSERT INTO ledgers VALUES ('l_bench'); ${ddl}`);
  const checkpointer = startCheckpointer(db);
  const contacts = createContactsRepo(db);
  const sizer = new ChunkSizer();
  const nul = (v: string | undefined) => (v ? v : null);
  let rows = 0;
  let chunks = 0;
  const t0 = performance.now();
  try {
    let pending: Record<string, string>[] = [];
    const store = (part: Record<string, string>[]) => {
      sizer.timed(part.length, () =>
        db.bulkTx(() => {
          const now = Date.now();
          for (const r of part) {
            const c = contacts.insertContact({
              id: newId('c'), ledgerId: 'l_bench', importId: 'imp_bench', referenceId: nul(r.referenceId), name: r.name!, company: r.company!,
              title: nul(r.title), titleLevel: null, titleDomain: null, location: null, email: nul(r.email), linkedin: nul(r.linkedin), now,
            });
            if (c) rows++;
          }
        }),
      );
      chunks++;
    };
    for await (const record of createReadStream(csv).pipe(parse({ columns: true }))) {
      pending.push(record as Record<string, string>);
      if (pending.length >= sizer.next()) {
        store(pending);
        pending = [];
        await db.relieve(); // the -wal's size limit, as between the server's chunks
      }
    }
    if (pending.length) store(pending);
  } finally {
    await checkpointer.close();
    db.close();
    for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true });
  }
  return { seconds: (performance.now() - t0) / 1000, rows, chunkRows: Math.round(rows / chunks) };
}

/**
 * Flushes what the previous phase left dirty in the kernel's page cache (gigabytes after an
 * import), so that its writeback does not slow down the fsyncs of the next phase.
 */
function settleDisk(): void {
  execFileSync('sync');
}

/** Lists the first page in a loop until `done()`; returns the latencies in ms (failures count as errors). */
async function listLoop(api: Api, path: string, done: () => boolean, errors: string[]): Promise<number[]> {
  const out: number[] = [];
  while (!done()) {
    const t0 = performance.now();
    try {
      const res = await fetch(api.base + path, { headers: { Authorization: `Bearer ${api.token}` } });
      await res.arrayBuffer();
      if (!res.ok) errors.push(`HTTP ${res.status}`);
    } catch (err) {
      errors.push(String((err as Error).cause ?? err));
    }
    out.push(performance.now() - t0);
    await sleep(20);
  }
  return out;
}

interface ProjectResult {
  seconds: number;
  uploadSeconds: number;
  status: ImportStatus;
  latencies: number[];
  errors: string[];
  peakRss: number;
  eventLoop: Awaited<ReturnType<ReturnType<typeof watchEventLoop>['stop']>>;
  /** The same list requests on the same ledger right after the import (RELIABILITY.md L1 scenario 3's baseline). */
  baseline: number[];
  orgId: string;
  ledgerId: string;
}

async function projectImport(csv: string, dataDir: string): Promise<ProjectResult> {
  const server = await startServer(dataDir, { nodeArgs });
  try {
    const { api, orgId, ledgerId, base } = await newLedger(server);
    let finished = false;
    let peakRss = 0;
    const rssTimer = setInterval(() => (peakRss = Math.max(peakRss, rssKiB(server.pid))), 100);
    // Readers start before the upload: the API must stay responsive through upload, scan and import.
    const errors: string[] = [];
    const listers = Array.from({ length: LISTERS }, () => listLoop(api, `${base}/contacts?limit=100`, () => finished, errors));
    const loop = watchEventLoop(api);
    await sleep(200);
    const r = await importCsv(api, base, csv).finally(() => {
      finished = true;
      clearInterval(rssTimer);
    });
    const eventLoop = await loop.stop();
    const latencies = (await Promise.all(listers)).flat().sort((a, b) => a - b);
    // The baseline: the same clients and requests on the imported ledger with nothing else running.
    const until = performance.now() + BASELINE_MS;
    const idle = Array.from({ length: LISTERS }, () => listLoop(api, `${base}/contacts?limit=100`, () => performance.now() >= until, errors));
    const baseline = (await Promise.all(idle)).flat().sort((a, b) => a - b);
    return { ...r, latencies, baseline, errors, peakRss, eventLoop, orgId, ledgerId };
  } finally {
    await server.stop();
  }
}

interface CrashResult {
  status: ImportStatus;
  seconds: number;
  kills: { processed: number; restartSeconds: number }[];
  stored: { rows: number; distinctReferences: number; distinctIds: number };
}

/**
 * Crash safety at full size: the file is imported into a fresh data folder; when the job has
 * processed 30 % and again 70 % of the rows, the server is killed with SIGKILL and started again.
 * The job must complete with exact counts, and the ledger must hold every row once: as many
 * contacts as rows, as many distinct referenceIds (every row of the file has its own).
 */
async function crashImport(csv: string, dataDir: string): Promise<CrashResult> {
  let server: Server = await startServer(dataDir);
  const { ledgerId, base } = await newLedger(server);
  let api = new Api(server.base);
  await api.signIn();
  const t0 = performance.now();
  const kills: CrashResult['kills'] = [];
  try {
    const job = await uploadCsv(api, base, csv);
    const status = () => api.call<ImportStatus>('GET', `${base}/imports/${job.id}`);
    for (const fraction of [0.3, 0.7]) {
      let s = await status();
      while (s.status !== 'completed' && s.status !== 'failed' && s.processed < ROWS * fraction) {
        await sleep(100);
        s = await status();
      }
      if (s.status === 'completed' || s.status === 'failed') throw new Error(`the import ended before the kill at ${fraction * 100} %: ${JSON.stringify(s)}`);
      const exited = once(server.child, 'exit');
      server.child.kill('SIGKILL');
      await exited;
      const r0 = performance.now();
      server = await startServer(dataDir);
      api = new Api(server.base);
      await api.signIn();
      kills.push({ processed: s.processed, restartSeconds: (performance.now() - r0) / 1000 });
    }
    let s = await status();
    while (s.status !== 'completed' && s.status !== 'failed') {
      await sleep(100);
      s = await status();
    }
    const seconds = (performance.now() - t0) / 1000;
    await server.stop();
    const out = execFileSync(
      'sqlite3',
      [join(dataDir, 'contact-ledger.db'), `SELECT count(*), count(DISTINCT reference_id), count(DISTINCT id) FROM contacts WHERE ledger_id = '${ledgerId.replace(/'/g, '')}'`],
      { encoding: 'utf8' },
    ).trim();
    const [rows, distinctReferences, distinctIds] = out.split('|').map(Number) as [number, number, number];
    return { status: s, seconds, kills, stored: { rows, distinctReferences, distinctIds } };
  } finally {
    await server.stop();
  }
}

async function main() {
  const csv = await ensureCsv();
  const mib = statSync(csv).size / 1024 ** 2;
  console.log(machineFacts());
  console.log(`file: ${csv} (${fmt(ROWS)} rows, ${mib.toFixed(0)} MiB)\n`);
  const work = mkdtempSync(join(CACHE, 'import-'));
  try {
    let limit: number | undefined;
    if (!skipLimit) {
      const ddl = await contactsDdl(work);
      settleDisk();
      const l = shellImport(csv, work, ddl);
      limit = l.rows / l.seconds;
      console.log(`limit    sqlite3 .import:  ${l.seconds.toFixed(1)} s, ${fmt(limit)} rows/s`);
      if (!skipPaced) {
        settleDisk();
        const p = await pacedInsert(csv, work, ddl);
        if (p.rows !== ROWS) throw new Error(`the paced insert stored ${p.rows} rows, expected ${ROWS}`);
        const rate = p.rows / p.seconds;
        console.log(`paced    same rows and indexes in ~30 ms transactions (server storage, no HTTP): ${p.seconds.toFixed(1)} s, ${fmt(rate)} rows/s (${fmt(p.chunkRows)} rows a transaction), ${ratio(rate, limit)}× the limit`);
      }
    }
    const dataDir = join(work, 'data');
    settleDisk();
    const p = await projectImport(csv, dataDir);
    const s = p.status;
    if (s.status !== 'completed' || s.imported !== ROWS) throw new Error(`the import ended ${s.status}: ${JSON.stringify(s)}`);
    const rate = ROWS / p.seconds;
    console.log(`project  API import:       ${p.seconds.toFixed(1)} s (upload + scan ${p.uploadSeconds.toFixed(1)} s), ${fmt(rate)} rows/s; imported ${fmt(s.imported)}, duplicates ${s.duplicates}, invalid ${s.invalid}`);
    if (limit) console.log(`ratio    ${ratio(rate, limit)}× (target ≥ 0.8×)`);
    const l = p.latencies;
    console.log(
      `list during the import: ${l.length} requests from ${LISTERS} clients, p50 ${percentile(l, 50).toFixed(1)} ms, p99 ${percentile(l, 99).toFixed(1)} ms, max ${percentile(l, 100).toFixed(1)} ms (target p99 < 100 ms)`,
    );
    const b = p.baseline;
    console.log(
      `list after the import (baseline, ${BASELINE_MS / 1000} s): ${b.length} requests, p50 ${percentile(b, 50).toFixed(1)} ms, p99 ${percentile(b, 99).toFixed(1)} ms; p99 during the import ${ratio(percentile(l, 99), percentile(b, 99))}× the baseline (RELIABILITY.md L1 scenario 3: < 2×)`,
    );
    if (p.errors.length) console.log(`list errors during the import: ${p.errors.length} (${[...new Set(p.errors)].join('; ')})`);
    console.log(eventLoopLine('the import', p.eventLoop));
    console.log(`server peak RSS during the import: ${(p.peakRss / 1024).toFixed(0)} MiB`);
    const saved = saveLedgerData(dataDir, p.orgId, p.ledgerId);
    console.log(`the imported ledger is kept for bench:list and bench:download in ${saved.dataDir}`);
    if (!skipCrash) {
      settleDisk();
      const c = await crashImport(csv, join(work, 'crash'));
      const kills = c.kills.map((k) => `at ${fmt(k.processed)} rows (restart ${k.restartSeconds.toFixed(1)} s)`).join(', ');
      const s = c.status;
      console.log(`crash    kill -9 ${kills}: ${s.status} in ${c.seconds.toFixed(1)} s; imported ${fmt(s.imported)}, duplicates ${s.duplicates}, invalid ${s.invalid}`);
      console.log(`         stored ${fmt(c.stored.rows)} contacts, ${fmt(c.stored.distinctReferences)} distinct referenceIds, ${fmt(c.stored.distinctIds)} distinct ids`);
      const exact = s.status === 'completed' && s.imported === ROWS && s.duplicates === 0 && s.invalid === 0 && c.stored.rows === ROWS && c.stored.distinctReferences === ROWS && c.stored.distinctIds === ROWS;
      if (!exact) throw new Error('crash phase: the rows were not imported exactly once');
      console.log('crash    every row imported exactly once');
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
