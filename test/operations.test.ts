// Operations inside the process: /metrics (who may read it, what it holds), scheduled backups with
// retention, and the automatic backup before migrations.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { copyFileSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { ManualClock, systemClock } from '../src/clock.ts';
import { createLogger } from '../src/log.ts';
import { paths } from '../src/paths.ts';
import { DB_FILE, openRuntime } from '../src/runtime.ts';
import { BackupRefused, backupTo, copyProgress } from '../src/storage/backup.ts';
import { openDb } from '../src/storage/db.ts';
import { loadMigrations, migrate } from '../src/storage/migrate.ts';
import { planSchemaRepair } from '../src/storage/schema-reconcile.ts';
import { addContacts, createLedger, csvForm, feedAndWait, ID, ledgerPath, signIn, waitForImport, signInRoot, startApp, tempDir, testConfig, type TestApp } from './helpers.ts';

const quiet = { log: createLogger('silent') };
const METRICS_TOKEN = 'metrics-token-0123456789abcdef';

/** A metric's value from the exposition text (sum over the series that match all `labels`). */
function metric(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  let found: number | undefined;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const l = m[2] ?? '';
    if (Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`))) found = (found ?? 0) + Number(m[3]);
  }
  return found;
}

const M = suite<{ t: TestApp; root: string }>('metrics');
M.before(async (ctx) => {
  ctx.t = await startApp({ config: { metricsToken: METRICS_TOKEN } });
  ctx.root = (await signInRoot(ctx.t)).accessToken;
});
M.after(async (ctx) => ctx.t.close());

M('only METRICS_TOKEN or a superuser may read /metrics', async ({ t, root }) => {
  assert.is((await t.call('GET', '/metrics')).status, 401);
  assert.is((await t.call('GET', '/metrics', { token: 'wrong-token-0123456789abcdef' })).status, 401);
  assert.is((await t.call('GET', '/metrics', { headers: { authorization: `Basic ${METRICS_TOKEN}` } })).status, 401);
  const orgId = (await t.call('POST', `${ID}/orgs`, { token: root, body: { name: 'M' } })).body.id;
  await t.call('POST', `${ID}/orgs/${orgId}/members`, { token: root, body: { email: 'admin@m.test', role: 'admin', password: 'admin password 1' } });
  const admin = (await signIn(t, 'admin@m.test', 'admin password 1')).accessToken;
  assert.is((await t.call('GET', '/metrics', { token: admin })).status, 403, 'an organization admin is not enough');
  const byToken = await t.call('GET', '/metrics', { token: METRICS_TOKEN });
  assert.is(byToken.status, 200);
  assert.match(byToken.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  assert.is((await t.call('GET', '/metrics', { token: root })).status, 200);
});

M('requests by route and status, latency, queue depth, import rows, event-loop delay', async ({ t, root }) => {
  const orgId = (await t.call('POST', `${ID}/orgs`, { token: root, body: { name: 'N' } })).body.id;
  const ledgerId = await createLedger(t, root, orgId);
  const job = await addContacts(t, root, orgId, ledgerId, [
    { name: 'Ann', company: 'Acme', referenceId: 'r1' },
    { name: 'Bob', company: 'Beta', referenceId: 'r1' },
    { name: 'No company' },
  ]);
  assert.is(job.status, 'completed');
  await t.call('GET', '/no/such/path/4711');
  const text = (await t.call('GET', '/metrics', { token: METRICS_TOKEN })).text;
  assert.ok((metric(text, 'contact_ledger_http_requests_total', { method: 'POST', route: '/api/ledger/v1/orgs/:orgId/ledgers/:ledgerId/contacts', status: '202' }) ?? 0) >= 1, 'a declared route, not the raw path');
  assert.ok((metric(text, 'contact_ledger_http_requests_total', { route: 'unmatched', status: '404' }) ?? 0) >= 1);
  // (the path, not its number alone: a byte count or a timing may contain the digits 4711)
  assert.not.match(text, /\/no\/such\/path/, 'raw paths never become labels');
  assert.ok((metric(text, 'contact_ledger_http_request_duration_seconds_count', { route: '/api/identity/v1/orgs' }) ?? 0) >= 1);
  assert.is(metric(text, 'contact_ledger_import_rows_total', { outcome: 'imported' }), 1);
  assert.is(metric(text, 'contact_ledger_import_rows_total', { outcome: 'duplicate' }), 1);
  assert.is(metric(text, 'contact_ledger_import_rows_total', { outcome: 'invalid' }), 1);
  assert.match(text, /# TYPE contact_ledger_jobs gauge/);
  assert.match(text, /# TYPE contact_ledger_job_oldest_age_seconds gauge/);
  // the kinds this server runs are shown with no job too: a series at 0, not none (an operator tester's case)
  for (const kind of ['import', 'feed']) {
    for (const status of ['pending', 'processing']) {
      assert.is(metric(text, 'contact_ledger_jobs', { kind, status }), 0, `${kind} ${status}`);
      assert.is(metric(text, 'contact_ledger_job_oldest_age_seconds', { kind, status }), 0, `${kind} ${status} age`);
    }
  }
  assert.ok(metric(text, 'nodejs_eventloop_lag_p99_seconds') !== undefined, 'event-loop delay');
  assert.ok(metric(text, 'process_resident_memory_bytes') !== undefined);
  // the database and its -wal (RELIABILITY.md L0), and lock waits that ran out (none here)
  // (sizes as read at the scrape: the checkpointer may change them right after)
  assert.ok((metric(text, 'contact_ledger_database_bytes', { file: 'database' }) ?? 0) >= 4096, 'the database file');
  assert.ok(metric(text, 'contact_ledger_database_bytes', { file: 'wal' }) !== undefined, 'its -wal');
  assert.is(metric(text, 'contact_ledger_sqlite_busy_total', { where: 'job' }), 0);
  // every outcome of a counter is a series from the first scrape, at 0 before its first event
  // (rate() misses the event a series is born with; an operator tester's case)
  for (const [name, label, values] of [
    ['contact_ledger_feed_records_total', 'outcome', ['applied', 'unchanged', 'stale', 'repeated', 'invalid']],
    ['contact_ledger_changes_total', 'type', ['job', 'info']],
    ['contact_ledger_webhook_deliveries_total', 'outcome', ['delivered', 'retry', 'failed', 'dropped']],
    ['contact_ledger_backups_total', 'outcome', ['ok', 'failed']],
  ] as const) {
    for (const value of values) assert.is(metric(text, name, { [label]: value }), 0, `${name}{${label}="${value}"}`);
  }
});

M('queue depth and the oldest job\'s age come from the jobs table', async ({ t }) => {
  // A job that is not due yet stays pending: enqueue directly, as a module would.
  t.rt.db.tx(() => t.rt.queue.enqueue('imp_metricsprobe', 'no-such-kind', { delayMs: 3_600_000 }));
  (t.clock as ManualClock).advance(5000);
  const text = (await t.call('GET', '/metrics', { token: METRICS_TOKEN })).text;
  assert.is(metric(text, 'contact_ledger_jobs', { kind: 'no-such-kind', status: 'pending' }), 1);
  assert.ok((metric(text, 'contact_ledger_job_oldest_age_seconds', { kind: 'no-such-kind', status: 'pending' }) ?? 0) >= 5);
});

M('the probes ignore their query string: a monitor\'s cache-buster does not fail them; other routes still refuse an unknown parameter', async ({ t }) => {
  for (const path of ['/healthz?x=1', '/readyz?_=1732500000000&probe', '/healthz?a=1&a=2']) {
    const r = await t.call('GET', path);
    assert.is(r.status, 200, path);
  }
  const other = await t.call('GET', '/api/ledger/v1/openapi.json?x=1');
  assert.is(other.status, 400);
  assert.is(other.body.code, 'invalid_parameter');
});

M('/readyz answers 503 once shutdown began (the first step of D6), /healthz still 200', async ({ t }) => {
  assert.is((await t.call('GET', '/readyz')).status, 200);
  t.rt.state.shuttingDown = true;
  try {
    const r = await t.call('GET', '/readyz');
    assert.is(r.status, 503);
    assert.is(r.body.code, 'not_ready');
    assert.is(r.body.checks.acceptingRequests, false);
    assert.is((await t.call('GET', '/healthz')).status, 200);
    // readiness's own answer, polled while the server starts or stops: an info line with the reason,
    // no warning per poll (an upgrade tester's log filled with them), no error, no stack
    const logged = t.logs.filter((l) => l.includes(r.headers.get('x-request-id')!)).map((l) => JSON.parse(l));
    assert.equal(logged.filter((l) => l.msg !== 'request').map((l) => [l.level, l.code, l.msg, l.err]), [['info', 'not_ready', 'readiness: Not ready: acceptingRequests.', undefined]]);
  } finally {
    t.rt.state.shuttingDown = false;
  }
});

M.run();

const B = suite('backups');

B('a backup is readable by its owner only from its first byte, not only once complete (RELIABILITY.md A8)', async () => {
  const dir = tempDir();
  const source = new Database(join(dir, 'source.db'));
  source.pragma('journal_mode = WAL');
  source.exec('CREATE TABLE t (x TEXT)');
  const ins = source.prepare('INSERT INTO t VALUES (?)');
  source.transaction(() => {
    for (let i = 0; i < 20_000; i++) ins.run('y'.repeat(400)); // a few thousand pages: the copy takes several steps
  })();
  const dest = join(dir, 'copy.db');
  const before = process.umask(0o022);
  try {
    let done = false;
    const copying = backupTo(source, dest).finally(() => (done = true));
    const modes = new Set<number>();
    while (!done) {
      // .copy.db.<pid>-<hex>.partial and its -journal
      for (const f of readdirSync(dir).filter((n) => n.startsWith('.copy.db.') && n.includes('.partial'))) {
        const st = statSync(join(dir, f), { throwIfNoEntry: false }); // (gone meanwhile: linked into place)
        if (st) modes.add(st.mode & 0o777);
      }
      await new Promise((r) => setImmediate(r));
    }
    await copying;
    assert.ok(modes.size > 0, 'the partial file was seen while the copy was written');
    assert.equal([...modes], [0o600]);
    assert.is(statSync(dest).mode & 0o777, 0o600);
  } finally {
    process.umask(before);
    source.close();
  }
});

B('backups to one file at once: one is written, the others refused (BackupRefused), and no partial file is left', async () => {
  // An operator tester's case: backups to one name shared one partial file, `.<name>.partial`;
  // each removed or wrote into the others', and all failed ("disk I/O error").
  const dir = tempDir();
  const file = join(dir, 'source.db');
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE t (x TEXT)');
  const ins = db.prepare('INSERT INTO t VALUES (?)');
  db.transaction(() => {
    for (let i = 0; i < 20_000; i++) ins.run('y'.repeat(400)); // several steps each: the copies overlap
  })();
  const sources = [1, 2, 3].map(() => new Database(file, { readonly: true }));
  const dest = join(dir, 'copy.db');
  try {
    const results = await Promise.allSettled(sources.map((s) => backupTo(s, dest)));
    assert.is(results.filter((r) => r.status === 'fulfilled').length, 1, JSON.stringify(results.map((r) => (r.status === 'rejected' ? String(r.reason) : 'ok'))));
    for (const r of results) if (r.status === 'rejected') assert.instance(r.reason, BackupRefused, String(r.reason));
    assert.equal(readdirSync(dir).filter((n) => n.startsWith('.copy.db')), [], 'no partial file left');
    const copy = new Database(dest, { readonly: true });
    assert.is(copy.prepare('SELECT count(*) FROM t').pluck().get(), 20_000);
    copy.close();
  } finally {
    for (const s of sources) s.close();
    db.close();
  }
});

B('a backup counts the times it started over, not the steps that found the source busy and copied nothing', () => {
  const count = (steps: [total: number, remaining: number][]) => {
    const p = copyProgress();
    for (const [total, remaining] of steps) p.step(total, remaining);
    return p.restarts;
  };
  assert.is(count([[5000, 5000], [5000, 4000], [5000, 3000], [5000, 2000], [5000, 1000]]), 0);
  assert.is(count([[5000, 5000], [5000, 4000], [5000, 4000], [5000, 4000], [5000, 3000]]), 0, 'busy steps copy nothing');
  assert.is(count([[5000, 5000], [5000, 4000], [5000, 3000], [5001, 4001], [5001, 3001]]), 1, 'another connection wrote: from the start again');
  assert.is(count([[5000, 4000], [5100, 4000], [5100, 3000]]), 0, 'the source grew by pages this step copied too');
});

B('BACKUP_CRON writes online backups into <data>/backups and BACKUP_KEEP keeps the newest', async () => {
  const t = await startApp({ clock: systemClock, config: { backupCron: '* * * * * *', backupKeep: 2 } });
  try {
    const root = (await signInRoot(t)).accessToken;
    const orgId = (await t.call('POST', `${ID}/orgs`, { token: root, body: { name: 'B' } })).body.id;
    const ledgerId = await createLedger(t, root, orgId);
    await addContacts(t, root, orgId, ledgerId, [{ name: 'Ann', company: 'Acme' }]);
    const dir = join(t.dataDir, 'backups');
    // Wait for three more scheduled backups (one a second) than there were once the contact was in,
    // polling the metric: the newest two (BACKUP_KEEP) then both began after it (a CI run on a busy
    // machine waited for four in all, and one of the two kept had begun before the contact).
    const backupsDone = async () => metric((await t.call('GET', '/metrics', { token: root })).text, 'contact_ledger_backups_total', { outcome: 'ok' }) ?? 0;
    const before = await backupsDone();
    while ((await backupsDone()) < Math.max(before + 3, 4)) await new Promise((r) => setTimeout(r, 200));
    const files = readdirSync(dir).filter((f) => f.startsWith('scheduled-'));
    assert.is(files.length, 2, files.join(', '));
    for (const f of files) {
      // Each backup alone (no -wal beside it) is complete and consistent.
      const alone = join(tempDir(), 'alone.db');
      copyFileSync(join(dir, f), alone);
      const db = new Database(alone, { readonly: true });
      assert.is(db.pragma('journal_mode', { simple: true }), 'delete');
      assert.is(statSync(join(dir, f)).mode & 0o777, 0o600, 'readable by the owner only');
      assert.is(db.prepare('PRAGMA integrity_check').pluck().get(), 'ok');
      assert.is(db.prepare('SELECT count(*) FROM contacts WHERE ledger_id = ?').pluck().get(ledgerId), 1);
      db.close();
    }
    assert.ok(t.logs.some((l) => l.includes('"msg":"scheduled backup written"')));
    // after a restart the age of the last backup is still known (it read 0: an alert on its age fired until the next one)
    await t.close();
    const newest = Math.max(...readdirSync(dir).filter((f) => f.startsWith('scheduled-')).map((f) => statSync(join(dir, f)).mtimeMs)) / 1000;
    const again = await startApp({ clock: systemClock, dataDir: t.dataDir, config: { backupCron: '0 0 3 1 1 *', backupKeep: 2 } });
    try {
      const text = (await again.call('GET', '/metrics', { token: (await signInRoot(again)).accessToken })).text;
      assert.is(metric(text, 'contact_ledger_backup_last_success_timestamp_seconds'), newest);
    } finally {
      await again.close();
    }
  } finally {
    await t.close();
  }
});

B("a scheduled backup named ahead of the clock (written while it ran ahead) is pruned first, not each new backup; its time does not count as the last success (an operator tester's case)", async () => {
  const dataDir = tempDir();
  const dir = join(dataDir, 'backups');
  mkdirSync(dir, { recursive: true });
  const ahead = join(dir, 'scheduled-20991202T030000000Z.db');
  copyFileSync(join(import.meta.dirname, '..', 'package.json'), ahead); // its content is not read
  const future = new Date('2099-12-02T03:00:00Z');
  utimesSync(ahead, future, future);
  const t = await startApp({ clock: systemClock, dataDir, config: { backupCron: '0 0 3 1 1 *', backupKeep: 1 } });
  try {
    const root = (await signInRoot(t)).accessToken;
    const lastSuccess = async () => metric((await t.call('GET', '/metrics', { token: root })).text, 'contact_ledger_backup_last_success_timestamp_seconds');
    assert.ok(((await lastSuccess()) ?? 0) < Date.now() / 1000, 'the file dated 2099 is no success');
    assert.ok(await t.rt.scheduler.runNow('backup'));
    const kept = readdirSync(dir).filter((f) => f.startsWith('scheduled-'));
    assert.is(kept.length, 1, kept.join(', '));
    assert.match(kept[0]!, /^scheduled-20\d\d/);
    assert.is.not(kept[0], 'scheduled-20991202T030000000Z.db', 'the new backup is kept, the one named ahead pruned');
    assert.ok(!existsSync(ahead));
  } finally {
    await t.close();
  }
});

B('a database behind this version is backed up before it is migrated; nothing else is backed up', async () => {
  const dir = tempDir();
  const migrations = loadMigrations(paths.migrations);
  mkdirSync(dir, { recursive: true });
  const old = openDb(join(dir, DB_FILE));
  migrate(old, migrations.slice(0, 2));
  old.raw.prepare("INSERT INTO orgs (id, name, created_at, updated_at) VALUES ('o_old', 'Old', 1, 1)").run();
  old.close();
  const rt = await openRuntime(testConfig(dir), quiet);
  await rt.close();
  const backups = readdirSync(join(dir, 'backups')).filter((n) => !n.startsWith('.'));
  assert.is(backups.length, 1);
  assert.match(backups[0]!, /^pre-migrate-v2-\d{8}T\d{9}Z\.db$/);
  assert.ok(existsSync(join(dir, 'backups', `.${backups[0]}.source`)), 'beside it, hidden, what it is a copy of');
  const b = new Database(join(dir, 'backups', backups[0]!), { readonly: true });
  assert.is(b.pragma('user_version', { simple: true }), 2, 'the backup is the database as it was');
  assert.is(b.prepare("SELECT name FROM orgs WHERE id = 'o_old'").pluck().get(), 'Old');
  b.close();
  const now = new Database(join(dir, DB_FILE), { readonly: true });
  assert.is(now.pragma('user_version', { simple: true }), migrations.length);
  now.close();
  // Up to date: a second start takes no backup.
  await (await openRuntime(testConfig(dir), quiet)).close();
  assert.is(readdirSync(join(dir, 'backups')).filter((n) => !n.startsWith('.')).length, 1);
});

B('a migration that fails is backed up once however often the start is tried (systemd restarts it every few seconds); a write meanwhile takes a new copy', async () => {
  const dir = tempDir();
  mkdirSync(dir, { recursive: true });
  const old = openDb(join(dir, DB_FILE));
  migrate(old, loadMigrations(paths.migrations).slice(0, 2));
  old.raw.exec('CREATE TABLE people (x TEXT)'); // what 0003 creates: it fails with "table people already exists"
  old.close();
  const tryStart = () =>
    openRuntime(testConfig(dir), quiet).then(
      () => assert.unreachable('the migration should have failed'),
      (err: Error) => assert.match(err.message, /people already exists/),
    );
  const copies = () => readdirSync(join(dir, 'backups')).filter((n) => /^pre-migrate-v2-\d{8}T\d{9}Z\.db$/.test(n));
  for (let attempt = 0; attempt < 3; attempt++) await tryStart();
  assert.is(copies().length, 1, 'one copy for three tries');
  const b = new Database(join(dir, 'backups', copies()[0]!), { readonly: true });
  assert.is(b.pragma('user_version', { simple: true }), 2, 'the copy is the database as it was');
  b.close();
  // the version upgraded from ran meanwhile and wrote: that copy no longer holds everything, the next try takes another
  const older = new Database(join(dir, DB_FILE));
  older.exec("INSERT INTO people (x) VALUES ('written meanwhile')");
  older.close();
  await tryStart();
  assert.is(copies().length, 2, 'a new copy after a write');
  // another database put in place with the same size and times (cp -p, rsync -a): another inode, another copy
  const file = join(dir, DB_FILE);
  const st = statSync(file);
  copyFileSync(file, `${file}.other`);
  rmSync(file);
  renameSync(`${file}.other`, file);
  utimesSync(file, st.atime, st.mtime);
  await tryStart();
  assert.is(copies().length, 3, 'a new copy of the database put in place');
  await tryStart();
  assert.is(copies().length, 3, 'and that one reused');
  // a copy deleted by the operator takes its hidden record along at the next start
  rmSync(join(dir, 'backups', copies()[0]!));
  await tryStart();
  assert.equal(readdirSync(join(dir, 'backups')).filter((n) => n.endsWith('.source')).length, 2);
});

B('a database migrated by a build whose migrations said something else is repaired to this version\'s schema at start, its rows kept, after a backup', async () => {
  const dir = tempDir();
  const migrations = loadMigrations(paths.migrations);
  await (await openRuntime(testConfig(dir), quiet)).close();
  // the states an upgrade tester found among the project's own commits (migrations edited after they were committed)
  const raw = new Database(join(dir, DB_FILE));
  raw.pragma('foreign_keys = OFF');
  raw.exec(`
    INSERT INTO people (seq, name, name_key, company, company_key, observed_at, observed_ns_before, updated_at) VALUES (7, 'Ann Lee', 'ann lee', 'Acme', 'acme', 1000, 250, 1000);
    INSERT INTO feed_records_applied (observed_day, key, applied_day, feed, person, outcome) VALUES (20000, x'0102', 20001, 5, 7, 0);
    INSERT INTO jobs (id, kind, status, run_after, created_at, updated_at) VALUES ('job_gone', 'test.kind', 'completed', 0, 0, 0), ('job_old', 'test.kind', 'completed', 0, 0, 0);
    DELETE FROM jobs WHERE id = 'job_gone';
    -- change 1000 was given and deleted: no change may get its number again; change 1's ledger is gone (an orphan the repair did not make)
    INSERT INTO changes (seq, id, ledger_id, contact_id, type, from_value, to_value, detected_at) VALUES (1, 'chg_1', 'l_gone', 'c_1', 'job', '{}', '{}', 1), (1000, 'chg_1000', 'l_gone', 'c_1', 'job', '{}', '{}', 1);
    DELETE FROM changes WHERE seq = 1000;
    ALTER TABLE changes ADD COLUMN legacy TEXT;                 -- a column this version does not have
    DROP TABLE feed_rejections;                                 -- a table missing (it refers to feed_jobs, rebuilt too)
    ALTER TABLE feed_records_applied DROP COLUMN applied_day;  -- 0043's first text
    ALTER TABLE jobs DROP COLUMN idle_givebacks;                -- 0037's first text
    ALTER TABLE feed_jobs ADD COLUMN taken_mtime_ms REAL;       -- 0032's first text
    DROP INDEX changes_by_ledger_type;                          -- 0011's first text
    CREATE INDEX changes_by_ledger_day ON changes (ledger_id, detected_at / 86400000, contact_id);
    DROP INDEX webhook_deliveries_due;                          -- 0004's first text
    CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_at) WHERE status = 'pending';
    DROP INDEX webhook_deliveries_pings;
  `);
  const jobRowid = raw.prepare("SELECT rowid FROM jobs WHERE id = 'job_old'").pluck().get();
  // 0039's first text (observed_ns_before NOT NULL DEFAULT 0) and 0003's (a people.id column every insert had to fill)
  const people = raw.prepare("SELECT sql FROM sqlite_master WHERE name = 'people'").pluck().get() as string;
  raw.exec(people.replace(/^CREATE TABLE "?people"?/, 'CREATE TABLE people_v').replace(/observed_ns_before INTEGER/, 'observed_ns_before INTEGER NOT NULL DEFAULT 0, id TEXT NOT NULL'));
  raw.exec("INSERT INTO people_v SELECT *, 'p' || seq FROM people; DROP TABLE people; ALTER TABLE people_v RENAME TO people;");
  // a membership that outlived its user (a foreign key without its ON DELETE CASCADE): the same columns, another table
  const members = raw.prepare("SELECT sql FROM sqlite_master WHERE name = 'members'").pluck().get() as string;
  raw.exec(members.replace(/^CREATE TABLE "?members"?/, 'CREATE TABLE members_v').replace(/(user_id\s+TEXT NOT NULL REFERENCES users \(id\)) ON DELETE CASCADE/, '$1'));
  raw.exec('INSERT INTO members_v SELECT * FROM members; DROP TABLE members; ALTER TABLE members_v RENAME TO members;');
  assert.is(raw.prepare("SELECT on_delete FROM pragma_foreign_key_list('members') WHERE \"from\" = 'user_id'").pluck().get(), 'NO ACTION', 'the drift is made');
  raw.close();

  const rt = await openRuntime(testConfig(dir), quiet);
  try {
    assert.equal(planSchemaRepair(rt.db, migrations).steps, [], 'the schema is this version\'s');
    const db = rt.db.raw;
    assert.equal(db.prepare('SELECT seq, name, observed_ns_before FROM people').all(), [{ seq: 7, name: 'Ann Lee', observed_ns_before: 250 }]);
    assert.equal(db.prepare('SELECT observed_day, applied_day, feed, person FROM feed_records_applied').all(), [{ observed_day: 20000, applied_day: 20000, feed: 5, person: 7 }], 'the day applied: the observation day');
    assert.equal(db.prepare("SELECT id, idle_givebacks FROM jobs WHERE id = 'job_old'").all(), [{ id: 'job_old', idle_givebacks: 0 }]);
    assert.is(db.prepare("SELECT rowid FROM jobs WHERE id = 'job_old'").pluck().get(), jobRowid, 'rowids kept (the queue breaks ties by them)');
    assert.is(db.prepare("SELECT count(*) FROM feed_rejections").pluck().get(), 0, 'the missing table is there');
    assert.equal(db.prepare('SELECT seq, id FROM changes').all(), [{ seq: 1, id: 'chg_1' }]);
    assert.is(db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'changes'").pluck().get(), 1000, 'the change numbers given stay given');
    assert.is(db.prepare("SELECT on_delete FROM pragma_foreign_key_list('members') WHERE \"from\" = 'user_id'").pluck().get(), 'CASCADE');
  } finally {
    await rt.close();
  }
  const backups = readdirSync(join(dir, 'backups'));
  assert.equal(backups.filter((n) => /^pre-repair-v\d+-[0-9a-f]{12}-\d{8}T\d{9}Z\.db$/.test(n)).length, 1, backups.join(', '));
  await (await openRuntime(testConfig(dir), quiet)).close();
  assert.is(readdirSync(join(dir, 'backups')).length, backups.length, 'repaired once: no second backup');

  // the server works on it: a feed stores a person and remembers its record (both failed before)
  const t = await startApp({ dataDir: dir });
  try {
    const root = (await signInRoot(t)).accessToken;
    const done = await feedAndWait(t, root, '{"linkedin":"https://www.linkedin.com/in/bo-lin","name":"Bo Lin","company":"Initech","observedAt":"2026-11-01"}\n');
    assert.equal([done.status, done.personsUpdated], ['completed', 1]);
  } finally {
    await t.close();
  }
});

B('a schema repair that cannot be made stops the start with a message, changes nothing, and is backed up once however often it is tried', async () => {
  const dir = tempDir();
  await (await openRuntime(testConfig(dir), quiet)).close();
  // a build whose people.name_key could be NULL, with such a row: this version's NOT NULL cannot take it
  const raw = new Database(join(dir, DB_FILE));
  const people = raw.prepare("SELECT sql FROM sqlite_master WHERE name = 'people'").pluck().get() as string;
  raw.exec(people.replace(/^CREATE TABLE "?people"?/, 'CREATE TABLE people_v').replace(/name_key(\s+)TEXT NOT NULL/, 'name_key$1TEXT'));
  raw.exec("DROP TABLE people; ALTER TABLE people_v RENAME TO people; INSERT INTO people (seq, name, company, company_key, observed_at, updated_at) VALUES (3, 'No Key', 'Acme', 'acme', 1, 1);");
  raw.close();
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await openRuntime(testConfig(dir), quiet);
      assert.unreachable('the start should have been refused');
    } catch (err) {
      assert.match((err as Error).message, /the database's schema could not be repaired to this version's \(table people was rebuilt.*NOT NULL constraint failed.*Nothing was changed; restore a backup taken before the upgrade/);
    }
  }
  assert.is(readdirSync(join(dir, 'backups')).filter((n) => n.startsWith('pre-repair-')).length, 1, 'one backup for two tries');
  // the version upgraded from ran meanwhile and wrote: that copy is stale, the next try takes another
  const older = new Database(join(dir, DB_FILE));
  older.exec("INSERT INTO settings (key, value) VALUES ('written.meanwhile', '1')");
  older.close();
  await openRuntime(testConfig(dir), quiet).then(
    () => assert.unreachable('refused again'),
    (err: Error) => assert.match(err.message, /could not be repaired/),
  );
  assert.is(readdirSync(join(dir, 'backups')).filter((n) => n.startsWith('pre-repair-')).length, 2, 'a new backup after a write');
  const after = new Database(join(dir, DB_FILE), { readonly: true });
  assert.equal(after.prepare('SELECT seq, name_key FROM people').all(), [{ seq: 3, name_key: null }], 'nothing changed');
  after.close();
});

B('an import job whose upload is gone (a database restored without uploads/) fails with a message instead of retrying', async () => {
  const t = await startApp({ noScheduler: true });
  try {
    const root = (await signInRoot(t)).accessToken;
    const orgId = (await t.call('POST', `${ID}/orgs`, { token: root, body: { name: 'R' } })).body.id;
    const ledgerId = await createLedger(t, root, orgId);
    const up = await t.call('POST', `${ledgerPath(orgId, ledgerId)}/imports`, { token: root, raw: csvForm('name,company\nAnn,Acme\n') });
    assert.is(up.status, 202, up.text);
    rmSync(join(t.dataDir, 'uploads', `${up.body.id}.csv`));
    t.rt.scheduler.start();
    const job = await waitForImport(t, root, orgId, ledgerId, up.body.id);
    assert.is(job.status, 'failed');
    assert.is(job.message, `the uploaded file is no longer there (uploads/${up.body.id}.csv in the data folder)`, 'named within the data folder: the server\'s layout is not the org\'s business');
  } finally {
    await t.close();
  }
});

B.run();
