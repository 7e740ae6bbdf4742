// npm run bench:changes — the change history on a busy day (migration 0011, docs/tracking.md):
// one ledger with BENCH_ROWS changes (default 100,000) on one UTC day, two per contact, at random
// times, the contacts' ids in random order; one change in 500 is a job change, the rest info
// changes; plus 400 changes on the days around it. Measured in one process on the same data, the
// statements used before 0011 against the current ones, each query timed alone (it is one
// synchronous step of the event loop):
//   1. the change feed `type=job` page by page (limit 100): the walk of (ledger_id, seq) the feed
//      used before 0011 against (ledger_id, type, seq);
//   2. the contact ids of the daily change set: before, pages of 500 that were each a DISTINCT
//      over the day's time range (sorted again for every page); now the day's changes collected
//      1,000 per step into a temporary table keyed by contact id, then read 500 ids at a time;
//   3. the whole daily set written by dailySets.generate(), with the event loop's delay meanwhile;
//   4. what the type index costs a writer: change rows inserted through the repo in transactions
//      of 1,000 (random contacts, as a feed writes them), with the index set of 0010 and of 0011
//      (5 rounds, in turn);
//   5. migration 0011 itself (the rebuild of `changes`) on a database holding these rows.
// Not part of the test suite; nothing is kept.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { loadConfig } from '../../src/config.ts';
import { newId } from '../../src/ids.ts';
import { createLogger } from '../../src/log.ts';
import { openRuntime } from '../../src/runtime.ts';
import { openDb } from '../../src/storage/db.ts';
import { loadMigrations, migrate } from '../../src/storage/migrate.ts';
import { paths } from '../../src/paths.ts';
import { createDailySetsRepo } from '../../src/tracking/daily-sets-repo.ts';
import type { Db } from '../../src/storage/db.ts';

const CHANGES = Number(process.env.BENCH_ROWS ?? 100_000);
const DAY = 86_400_000;
const day = '20261110';
const from = Date.UTC(2026, 10, 10);
const fmt = (n: number) => Math.round(n).toLocaleString('en');

/** Times each page of a keyset walk; `page` returns the page's keys (empty at the end). */
function walk<K>(name: string, first: K, page: (after: K) => K[]): number {
  const times: number[] = [];
  let after = first;
  let n = 0;
  for (;;) {
    const s = performance.now();
    const got = page(after);
    times.push(performance.now() - s);
    if (!got.length) break;
    n += got.length;
    after = got[got.length - 1]!;
  }
  const total = times.reduce((a, b) => a + b, 0);
  const sorted = [...times].sort((a, b) => a - b);
  console.log(`  ${name}: ${fmt(n)} in ${times.length} pages, ${total.toFixed(0)} ms in all; a page: median ${sorted[sorted.length >> 1]!.toFixed(2)} ms, max ${sorted.at(-1)!.toFixed(2)} ms`);
  return n;
}

/** A ledger with the busy day's changes (and its contacts) written straight into `db`. */
function seed(db: Db['raw'], ledgerId: string): { contacts: number; jobs: number } {
  db.prepare("INSERT OR IGNORE INTO orgs (id, name, created_at, updated_at) VALUES ('o_bench', 'Bench', 1, 1)").run();
  db.prepare("INSERT INTO ledgers (id, org_id, name, created_at, updated_at) VALUES (?, 'o_bench', 'busy day', 1, 1)").run(ledgerId);
  const contacts = Math.floor(CHANGES / 2);
  const insContact = db.prepare(
    `INSERT INTO contacts (id, ledger_id, name, company, import_company, title, location, email, linkedin, is_verified, last_job_changed_at, last_info_changed_at, created_at, updated_at)
     VALUES (?, ?, ?, 'New Co', 'Old Co', 'Engineer', 'Oslo', ?, ?, 1, ?, ?, 1, ?)`,
  );
  // Inserted in detection order, so each change's detected_max (the ledger's running maximum,
  // migration 0013) is its detected_at; a database at an older version (part 5) has no such column.
  const withMax = (db.prepare("SELECT count(*) FROM pragma_table_info('changes') WHERE name = 'detected_max'").pluck().get() as number) > 0;
  const insChange = db.prepare(
    `INSERT INTO changes (id, ledger_id, contact_id, type, field, from_value, to_value, detected_at${withMax ? ', detected_max' : ''}, observed_at)
     SELECT ?, ?, ?, ?, ?, ?, ?, d${withMax ? ', d' : ''}, NULL FROM (SELECT ? AS d)`,
  );
  const ids: string[] = [];
  db.transaction(() => {
    for (let i = 0; i < contacts; i++) {
      const id = newId('c');
      ids.push(id);
      insContact.run(id, ledgerId, `Person ${i}`, `p${i}@example.test`, `https://www.linkedin.com/in/p-${i}`, from, from, from);
    }
  })();
  // in detection order (= seq order); each contact twice, in random order
  const times = Array.from({ length: CHANGES }, () => from + Math.floor(Math.random() * DAY)).sort((a, b) => a - b);
  const order = Array.from({ length: CHANGES }, (_, i) => ids[i % contacts]!).sort(() => Math.random() - 0.5);
  const job = [JSON.stringify({ company: 'Old Co', title: 'Engineer' }), JSON.stringify({ company: 'New Co', title: 'Engineer' })];
  let jobs = 0;
  db.transaction(() => {
    for (let k = 0; k < 200; k++) insChange.run(newId('chg'), ledgerId, ids[k]!, 'info', 'location', '{"location":"Rome"}', '{"location":"Oslo"}', from - DAY + k);
    for (let k = 0; k < CHANGES; k++) {
      if (k % 500 === 250) {
        jobs++;
        insChange.run(newId('chg'), ledgerId, order[k]!, 'job', null, job[0], job[1], times[k]!);
      } else insChange.run(newId('chg'), ledgerId, order[k]!, 'info', 'location', '{"location":"Rome"}', '{"location":"Oslo"}', times[k]!);
    }
    for (let k = 0; k < 200; k++) insChange.run(newId('chg'), ledgerId, ids[k]!, 'info', 'title', '{"title":"A"}', '{"title":"B"}', from + DAY + k);
  })();
  return { contacts, jobs };
}

const dir = mkdtempSync(join(tmpdir(), 'cl-bench-changes-'));
const config = loadConfig({ CONTACT_LEDGER_DATA: dir, PORT: '0', BCRYPT_COST: '4', CONTACT_LEDGER_TEST_WEAK_HASHING: '1', LOG_LEVEL: 'error', CONTACT_LEDGER_ADMIN_EMAIL: 'bench@contact-ledger.test', CONTACT_LEDGER_ADMIN_PASSWORD: 'a long benchmark passphrase 42' });
const rt = await openRuntime(config, { log: createLogger('error') });
const db = rt.db.raw;
try {
  const t0 = performance.now();
  const ledgerId = newId('l');
  const { contacts, jobs } = seed(db, ledgerId);
  console.log(`changes benchmark: ${fmt(contacts)} contacts, ${fmt(CHANGES)} changes on ${day} (${fmt(jobs)} job changes, the rest info) + 400 on the days around it; seeded in ${fmt(performance.now() - t0)} ms`);

  console.log('1. change feed type=job, limit 100, page by page');
  const oldFeed = db.prepare<[string, string, number, number], { seq: number }>('SELECT * FROM changes INDEXED BY changes_by_ledger WHERE ledger_id = ? AND type = ? AND seq > ? ORDER BY seq LIMIT ?');
  const a = walk('before 0011 (ledger_id, seq)     ', 0, (after) => oldFeed.all(ledgerId, 'job', after, 100).map((r) => r.seq));
  const changes = rt.tracking.repos.changes;
  const b = walk('now (ledger_id, type, seq)       ', 0, (after) => changes.listOfLedger(ledgerId, { type: 'job', afterSeq: after, limit: 100 }).map((c) => c.seq));
  if (a !== jobs || b !== jobs) throw new Error(`expected ${jobs} job changes, got ${a} and ${b}`);
  const since = from + DAY / 2;
  const oldStart = db.prepare<[string, number], number>('SELECT min(seq) FROM changes WHERE ledger_id = ? AND detected_at >= ?').pluck();
  const timed = <T>(fn: () => T): [T, number] => {
    const s = performance.now();
    return [fn(), performance.now() - s];
  };
  const [startBefore, msBefore] = timed(() => oldStart.get(ledgerId, since));
  const [startNow, msNow] = timed(() => changes.firstSeqSince(ledgerId, since));
  if (startBefore !== startNow) throw new Error(`since noon: the feed starts at seq ${startNow}, expected ${startBefore}`);
  console.log(`  since noon, where the feed starts: before 0013 (min over detected_at) ${msBefore.toFixed(2)} ms, now (one seek in detected_max) ${msNow.toFixed(2)} ms`);

  console.log('2. daily change set: the contact ids of the day');
  const oldIds = db.prepare<[string, number, number, string, number], string>(
    'SELECT DISTINCT contact_id FROM changes INDEXED BY changes_by_ledger_time WHERE ledger_id = ? AND detected_at >= ? AND detected_at < ? AND contact_id > ? ORDER BY contact_id LIMIT ?',
  ).pluck();
  const repo = createDailySetsRepo(rt.db);
  const c = walk('before 0011, DISTINCT over the day, a page of 500', '', (after) => oldIds.all(ledgerId, from, from + DAY, after, 500));
  const changed = repo.openChangedContacts(ledgerId, from, from + DAY);
  const steps: number[] = [];
  let read = 0;
  for (let got = -1; got !== 0; ) {
    const s = performance.now();
    read += got = changed.collect(1000); // as src/tracking/daily-sets.ts does, an event-loop turn between steps
    steps.push(performance.now() - s);
  }
  const sortedSteps = [...steps].sort((p, q) => p - q);
  console.log(`  now, collecting: ${fmt(read)} changes in ${steps.length} steps of 1,000, ${steps.reduce((p, q) => p + q, 0).toFixed(0)} ms in all; a step: median ${sortedSteps[steps.length >> 1]!.toFixed(2)} ms, max ${sortedSteps.at(-1)!.toFixed(2)} ms`);
  const d = walk('now, listing the ids kept, a page of 500', '', (after) => changed.page(after, 500));
  changed.close();
  if (c !== contacts || d !== contacts || read !== CHANGES) throw new Error(`expected ${contacts} ids from ${CHANGES} changes, got ${c} and ${d} from ${read}`);

  console.log('3. the whole daily set');
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  const s = performance.now();
  const sets = await rt.tracking.dailySets.generate(day);
  const ms = performance.now() - s;
  h.disable();
  const written = sets.find((x) => x.ledgerId === ledgerId)?.files.reduce((n, f) => n + f.contacts, 0);
  if (written !== contacts) throw new Error(`the set holds ${written} contacts, expected ${contacts}`);
  console.log(`  generate(${day}): ${fmt(written)} contacts in ${(ms / 1000).toFixed(2)} s; event-loop delay p50 ${(h.percentile(50) / 1e6).toFixed(1)} ms, p99 ${(h.percentile(99) / 1e6).toFixed(1)} ms, max ${(h.max / 1e6).toFixed(1)} ms`);

  console.log('4. writing changes: µs per change row, transactions of 1,000 (repo insert)');
  const TYPE_INDEX = 'CREATE INDEX changes_by_ledger_type ON changes (ledger_id, type, seq)';
  const contactIds = db.prepare('SELECT id FROM contacts WHERE ledger_id = ?').pluck().all(ledgerId) as string[];
  let at = from + DAY + 1000;
  const round = () => {
    const n = 20_000;
    const s = performance.now();
    for (let k = 0; k < n; k += 1000) {
      rt.db.tx(() => {
        for (let j = 0; j < 1000; j++) {
          changes.insertChange({ id: newId('chg'), ledgerId, contactId: contactIds[Math.floor(Math.random() * contactIds.length)]!, type: j % 3 ? 'info' : 'job', field: j % 3 ? 'title' : null, from: { title: 'A' }, to: { title: 'B' }, detectedAt: at++, observedAt: null });
        }
      });
    }
    return ((performance.now() - s) * 1000) / n;
  };
  // both index sets once per round, in turn, so the host's drift spreads over both
  const results = { '0010 indexes': [] as number[], '0011 indexes (+ type)': [] as number[] };
  for (let r = 0; r < 5; r++) {
    db.exec('DROP INDEX changes_by_ledger_type');
    results['0010 indexes'].push(round());
    db.exec(TYPE_INDEX);
    results['0011 indexes (+ type)'].push(round());
  }
  const med = (x: number[]) => [...x].sort((p, q) => p - q)[x.length >> 1]!;
  for (const [name, x] of Object.entries(results)) console.log(`  ${name.padEnd(22)} median ${med(x).toFixed(1)} µs (${x.map((v) => v.toFixed(1)).join(' / ')})`);
} finally {
  await rt.close();
  rmSync(dir, { recursive: true, force: true });
}

console.log('5. migration 0011 on a database at version 10 holding these changes');
const mdir = mkdtempSync(join(tmpdir(), 'cl-bench-migrate-'));
try {
  const all = loadMigrations(paths.migrations);
  const v11 = all.findIndex((m) => m.name.startsWith('0011_'));
  const old = openDb(join(mdir, 'x.db'));
  migrate(old, all.slice(0, v11));
  seed(old.raw, newId('l'));
  const rows = old.raw.prepare('SELECT count(*) FROM changes').pluck().get() as number;
  const s = performance.now();
  migrate(old, all.slice(0, v11 + 1));
  console.log(`  ${fmt(rows)} changes: ${fmt(performance.now() - s)} ms`);
  old.close();
} finally {
  rmSync(mdir, { recursive: true, force: true });
}
