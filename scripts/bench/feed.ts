// npm run bench:feed — person-feed ingestion with matching and change detection (issue 4, point 7).
// Ledgers holding 1,000,000 contacts in total (4 × 250,000, each with a LinkedIn URL); a feed of
// 1,000,000 records about those people, 10% of them at a new company and 20% with a new title.
// The limit: the plain insert rate of the same records (parsed from the same NDJSON file) into a
// SQLite table with the same WAL/FULL durability, in transactions of 5,000. The project: the file
// POSTed to /api/ledger/v1/feed until its job completes; meanwhile list requests measure p99.
//
// Also measured in the same run, for context: the floor of the data model — the writes SPEC §5
// needs for each record (store the person, match and update the contacts, one change row per
// change) as plain prepared statements, in transactions of 5,000 like the limit; and the same
// writes paced in ~30 ms transactions through the server's storage (the paced floor: the ceiling
// of any feed that keeps its write transactions short, as RELIABILITY.md D2 requires).
//
// Environment: BENCH_ROWS (default 1000000), BENCH_KEEP=1 (keep the data), BENCH_SKIP_PACED=1,
// BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=…" (profile the server). See docs/benchmarks.md.
import { copyFileSync, createReadStream, createWriteStream, openAsBlob, rmSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import Database from 'better-sqlite3';
import { companyKey, nameKey } from '../../src/normalize.ts';
import { newId } from '../../src/ids.ts';
import { ChunkSizer } from '../../src/jobs/chunk-pacing.ts';
import { startCheckpointer } from '../../src/storage/checkpointer.ts';
import { openDb, type Db } from '../../src/storage/db.ts';
import { Api, CACHE, fmt, ledgerPath, machineFacts, newLedger, percentile, ratio, ROWS, sleep, startServer, watchEventLoop, eventLoopLine } from './common.ts';

const LEDGERS = 4;
const nodeArgs = process.env.BENCH_NODE_ARGS ? process.env.BENCH_NODE_ARGS.split(' ') : [];
const dir = join(CACHE, `feed-${process.pid}`);
const dataDir = join(dir, 'data');
const feedFile = join(dir, 'feed.jsonl');
const companyOf = (i: number) => `Company ${i % 5000} Inc.`;
const titleOf = (i: number) => ['Software Engineer', 'Account Executive', 'Product Manager', 'Sales Director', 'CTO'][i % 5]!;
/** Yesterday, as a daily feed's records say (a fixed date would drift ever further into the past). */
const observedAt = `${new Date(Date.now() - 86_400_000).toISOString().slice(0, 10)}T00:00:00Z`;

async function seed(): Promise<{ orgId: string; ledgerIds: string[] }> {
  const server = await startServer(dataDir);
  const first = await newLedger(server);
  const ledgerIds = [first.ledgerId];
  for (let l = 1; l < LEDGERS; l++) ledgerIds.push((await first.api.call<{ id: string }>('POST', `/api/ledger/v1/orgs/${first.orgId}/ledgers`, { name: `feed ${l}` })).id);
  await server.stop();
  // The contacts go straight into the database file (the import path has its own benchmark).
  const db = new Database(join(dataDir, 'contact-ledger.db'));
  db.pragma('journal_mode = WAL');
  const ins = db.prepare(
    `INSERT INTO contacts (id, ledger_id, reference_id, name, company, import_company, title, import_title, linkedin, created_at, updated_at, name_key, company_key)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const now = Date.now();
  const per = Math.ceil(ROWS / LEDGERS);
  for (let start = 0; start < ROWS; start += 50_000) {
    db.transaction(() => {
      for (let i = start; i < Math.min(ROWS, start + 50_000); i++) {
        const name = `Person ${i}`;
        ins.run(`c_bench${String(i).padStart(20, '0')}`, ledgerIds[Math.floor(i / per)]!, `ref-${i}`, name, companyOf(i), companyOf(i), titleOf(i), titleOf(i), `https://www.linkedin.com/in/feed-${i}`, now, now, nameKey(name), companyKey(companyOf(i)));
      }
    })();
  }
  for (const id of ledgerIds) db.prepare('UPDATE ledgers SET contact_count = (SELECT count(*) FROM contacts WHERE ledger_id = ?) WHERE id = ?').run(id, id);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return { orgId: first.orgId, ledgerIds };
}

async function writeFeed(): Promise<void> {
  const out = createWriteStream(feedFile);
  let buf = '';
  for (let i = 0; i < ROWS; i++) {
    const company = i % 10 === 0 ? `New Employer ${i % 777}` : companyOf(i); // 10% change company
    const title = i % 10 === 1 || i % 10 === 2 ? `Senior ${titleOf(i)}` : titleOf(i); // 20% change title
    buf += `${JSON.stringify({ linkedin: `https://www.linkedin.com/in/feed-${i}`, name: `Person ${i}`, company, title, observedAt })}\n`;
    if (buf.length > 1 << 20) {
      if (!out.write(buf)) await once(out, 'drain');
      buf = '';
    }
  }
  out.end(buf);
  await once(out, 'finish');
}

/** The limit: parse the same lines and insert them into an indexed SQLite table, durably. */
async function plainInsert(): Promise<number> {
  const file = join(dir, 'plain.db');
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec('CREATE TABLE people (linkedin TEXT UNIQUE, name TEXT, company TEXT, title TEXT, observed_at TEXT)');
  const ins = db.prepare('INSERT INTO people VALUES (?, ?, ?, ?, ?)');
  const batch = db.transaction((rows: Record<string, string>[]) => {
    for (const r of rows) ins.run(r.linkedin, r.name, r.company, r.title, r.observedAt);
  });
  const s = await timeBatches(batch);
  db.close();
  return ROWS / s;
}

/**
 * Parses the feed file's lines and hands them to `apply` in batches of `size()` records (5,000
 * unless told), awaiting `between()` after each full batch; returns the seconds it all took.
 */
async function timeBatches(apply: (records: Record<string, string>[]) => void, size: () => number = () => 5000, between?: () => Promise<void>): Promise<number> {
  const t0 = performance.now();
  let records: Record<string, string>[] = [];
  for await (const line of createInterface({ input: createReadStream(feedFile), crlfDelay: Infinity })) {
    records.push(JSON.parse(line) as Record<string, string>);
    if (records.length >= size()) {
      apply(records);
      records = [];
      await between?.();
    }
  }
  if (records.length) apply(records);
  return (performance.now() - t0) / 1000;
}

/**
 * The floor of the data model: on a copy of the seeded database (the real schema and indexes),
 * each record is applied with the fewest writes SPEC §5 allows — look the person up by LinkedIn
 * slug and store it, find the unmatched contacts with that LinkedIn URL, update each once (matched,
 * new company or title) and insert one change row per change — as plain prepared statements with
 * plain string comparisons instead of the rules (no normalization, no rollback protection, no
 * replay table, no title rules, no webhooks, no progress, no HTTP). What any implementation of
 * this data model pays at least, measured in the same run, two ways:
 * - `batched`: in transactions of 5,000 records like the limit's, raw better-sqlite3;
 * - `paced`: through the server's own storage (openDb: WAL, synchronous=FULL, its page cache; WAL
 *   checkpoints on their own thread, the -wal's size limit between chunks) in transactions sized by
 *   the server's ChunkSizer to ~30 ms each — the short transactions RELIABILITY.md D2 requires of
 *   every writer (the import benchmark's paced line, for feeds). The ceiling of any feed that keeps
 *   the API responsive.
 */
async function floorApply(mode: 'batched' | 'paced'): Promise<{ rate: number; jobChanges: number; infoChanges: number; chunkRecords: number }> {
  const file = join(dir, `floor-${mode}.db`);
  copyFileSync(join(dataDir, 'contact-ledger.db'), file); // seed() checkpointed and closed it: no -wal
  let db: Database.Database;
  let storage: Db | undefined;
  let checkpointer: { close(): Promise<void> } | undefined;
  if (mode === 'paced') {
    storage = openDb(file, { check: false });
    checkpointer = startCheckpointer(storage);
    db = storage.raw;
  } else {
    db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.pragma('cache_size = -65536');
  }
  const findPerson = db.prepare<[string], number>('SELECT seq FROM people WHERE linkedin_slug = ?').pluck();
  const insertPerson = db.prepare(
    'INSERT INTO people (linkedin_slug, name, name_key, company, company_key, title, observed_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const unmatched = db.prepare<[string], { seq: number; id: string; ledger_id: string; company: string; title: string | null; last_job_changed_at: number | null; last_info_changed_at: number | null }>(
    'SELECT seq, id, ledger_id, company, title, last_job_changed_at, last_info_changed_at FROM contacts WHERE linkedin = ? AND person_id IS NULL',
  );
  const updateContact = db.prepare(
    'UPDATE contacts SET person_id = ?, is_verified = 1, company = ?, title = ?, last_job_changed_at = ?, last_info_changed_at = ?, updated_at = ? WHERE seq = ?',
  );
  const insertChange = db.prepare(
    'INSERT INTO changes (id, ledger_id, contact_id, type, field, from_value, to_value, detected_at, observed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  let jobChanges = 0;
  let infoChanges = 0;
  const applyRecords = (records: Record<string, string>[]) => {
    const now = Date.now();
    for (const r of records) {
      const slug = r.linkedin!.slice('https://www.linkedin.com/in/'.length);
      const seq = findPerson.get(slug) ?? Number(insertPerson.run(slug, r.name, r.name, r.company, r.company, r.title, now, now).lastInsertRowid);
      for (const c of unmatched.all(r.linkedin!)) {
        const job = c.company !== r.company;
        const info = !job && c.title !== r.title;
        if (job) {
          jobChanges++;
          insertChange.run(newId('chg'), c.ledger_id, c.id, 'job', null, JSON.stringify({ company: c.company, title: c.title }), JSON.stringify({ company: r.company, title: r.title }), now, now);
        } else if (info) {
          infoChanges++;
          insertChange.run(newId('chg'), c.ledger_id, c.id, 'info', 'title', JSON.stringify({ title: c.title }), JSON.stringify({ title: r.title }), now, now);
        }
        updateContact.run(String(seq), r.company, r.title, job ? now : c.last_job_changed_at, job || info ? now : c.last_info_changed_at, now, c.seq);
      }
    }
  };
  let s: number;
  let chunks = 0;
  try {
    if (storage) {
      const paced = storage;
      const sizer = new ChunkSizer();
      s = await timeBatches(
        (records) => {
          sizer.timed(records.length, () => paced.bulkTx(() => applyRecords(records)));
          chunks++;
        },
        () => sizer.next(),
        () => paced.relieve(),
      );
    } else {
      const apply = db.transaction(applyRecords);
      s = await timeBatches((records) => {
        apply(records);
        chunks++;
      });
    }
  } finally {
    await checkpointer?.close();
    db.close();
    for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true });
  }
  return { rate: ROWS / s, jobChanges, infoChanges, chunkRecords: Math.round(ROWS / chunks) };
}

async function main() {
  console.log(machineFacts());
  console.log(`feed benchmark: ${fmt(ROWS)} records against ${LEDGERS} ledgers with ${fmt(ROWS)} contacts in total`);
  const { orgId, ledgerIds } = await seed();
  await writeFeed();
  const limit = await plainInsert();
  console.log(`limit (plain insert of the parsed records into SQLite): ${fmt(limit)} records/s`);
  const floor = await floorApply('batched');
  console.log(
    `floor (the writes the data model needs, as plain statements in transactions of 5,000; no rules, no HTTP): ${fmt(floor.rate)} records/s, ` +
      `${fmt(floor.jobChanges)} job and ${fmt(floor.infoChanges)} info changes, ${ratio(floor.rate, limit)}× the limit`,
  );
  const paced = process.env.BENCH_SKIP_PACED ? undefined : await floorApply('paced');
  if (paced) {
    console.log(
      `paced floor (the same writes in ~30 ms transactions through the server's storage, as D2 requires): ${fmt(paced.rate)} records/s ` +
        `(${fmt(paced.chunkRecords)} records a transaction), ${fmt(paced.jobChanges)} job and ${fmt(paced.infoChanges)} info changes, ${ratio(paced.rate, limit)}× the limit`,
    );
  }

  const server = await startServer(dataDir, { cpus: '0', nodeArgs });
  const api = new Api(server.base);
  await api.signIn();
  const since = new Date(Date.now() - 1000).toISOString();
  const latencies: number[] = [];
  let stop = false;
  const lister = (async () => {
    while (!stop) {
      const t0 = performance.now();
      await api.call('GET', `${ledgerPath(orgId, ledgerIds[0]!)}/contacts?lastJobChangedAt=${since}&limit=100`);
      latencies.push(performance.now() - t0);
      await sleep(20);
    }
  })();
  const loop = watchEventLoop(api);
  const t0 = performance.now();
  const res = await fetch(`${server.base}/api/ledger/v1/feed`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${api.token}`, 'Content-Type': 'application/x-ndjson' },
    body: await openAsBlob(feedFile),
  });
  const job = (await res.json()) as { id: string };
  let s: { status: string; received: number; jobChanges: number; infoChanges: number; contactsMatched: number; message: string | null };
  for (;;) {
    s = await api.call('GET', `/api/ledger/v1/feed/${job.id}`);
    if (s.status === 'completed' || s.status === 'failed') break;
    await sleep(200);
  }
  const seconds = (performance.now() - t0) / 1000;
  const eventLoop = await loop.stop();
  stop = true;
  await lister;
  await server.stop();
  const project = ROWS / seconds;
  latencies.sort((a, b) => a - b);
  console.log(`project (POST /feed until the job completed): ${fmt(project)} records/s in ${seconds.toFixed(1)} s — ${s.status}: ${fmt(s.received)} records, ${fmt(s.contactsMatched)} contacts matched, ${fmt(s.jobChanges)} job changes, ${fmt(s.infoChanges)} info changes ${s.message ?? ''}`);
  console.log(`ratio project/limit: ${ratio(project, limit)} (target ≥ 0.5)`);
  console.log(`project/floor: ${ratio(project, floor.rate)}${paced ? `; project/paced floor: ${ratio(project, paced.rate)}` : ''}`);
  console.log(`list during the feed: ${latencies.length} requests, p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms (target p99 < 100 ms)`);
  console.log(eventLoopLine('the feed', eventLoop));
  if (!process.env.BENCH_KEEP) rmSync(dir, { recursive: true, force: true });
}

await main();
