// Storage: pragmas and their checks (RELIABILITY.md D1), single-writer transactions (D2),
// migrations and refusing newer or damaged databases (D7).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import Database from 'better-sqlite3';
import { appendFileSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { spawn, spawnSync } from 'node:child_process';
import { ConfigError } from '../src/config.ts';
import { createLogger } from '../src/log.ts';
import { paths } from '../src/paths.ts';
import { DB_FILE, openRuntime } from '../src/runtime.ts';
import { openDb, StartupError, verifySettings } from '../src/storage/db.ts';
import { loadMigrations, migrate, schemaVersion } from '../src/storage/migrate.ts';
import { prepareDataDir } from '../src/storage/storage.ts';
import { childrenAtOnce, tempDir, testConfig, withSmallDisk } from './helpers.ts';

const quiet = { log: createLogger('silent') };
const S = suite('storage');

S('a fresh database and a reopened one both run WAL, synchronous=FULL, foreign keys, SQLite ≥ 3.51.3 (D1)', () => {
  const file = join(tempDir(), 'x.db');
  for (const round of ['fresh', 'reopened']) {
    const db = openDb(file);
    assert.is(db.raw.pragma('journal_mode', { simple: true }), 'wal', round);
    assert.is(db.raw.pragma('synchronous', { simple: true }), 2, round);
    assert.is(db.raw.pragma('foreign_keys', { simple: true }), 1, round);
    assert.is(db.raw.pragma('busy_timeout', { simple: true }), 5000, round);
    const v = String(db.raw.prepare('SELECT sqlite_version()').pluck().get()).split('.').map(Number);
    assert.ok(v[0]! > 3 || (v[0] === 3 && (v[1]! > 51 || (v[1] === 51 && v[2]! >= 3))), v.join('.'));
    db.raw.exec('CREATE TABLE IF NOT EXISTS t (x)');
    db.close();
  }
  assert.is(statSync(file).mode & 0o777, 0o600, 'the database file is private to its owner');
});

S('the self-check refuses a connection whose settings did not take (D1): a journal that cannot be WAL, synchronous, foreign keys, secure delete', () => {
  assert.throws(() => openDb(':memory:'), (e: Error) => e instanceof StartupError && /journal_mode is memory, expected wal/.test(e.message));
  const raw = new Database(join(tempDir(), 'y.db'));
  try {
    raw.pragma('journal_mode = WAL');
    raw.pragma('foreign_keys = ON');
    raw.pragma('synchronous = NORMAL');
    assert.throws(() => verifySettings(raw, 'y.db', false), (e: Error) => e instanceof StartupError && /synchronous is 1, expected 2/.test(e.message));
    raw.pragma('synchronous = FULL');
    raw.pragma('foreign_keys = OFF');
    assert.throws(() => verifySettings(raw, 'y.db', false), (e: Error) => e instanceof StartupError && /foreign_keys is 0, expected 1/.test(e.message));
    raw.pragma('foreign_keys = ON');
    assert.throws(() => verifySettings(raw, 'y.db', false), (e: Error) => e instanceof StartupError && /secure_delete is 0, expected 1/.test(e.message));
    raw.pragma('secure_delete = ON');
    raw.pragma('journal_mode = DELETE');
    assert.throws(() => verifySettings(raw, 'y.db', false), (e: Error) => e instanceof StartupError && /journal_mode is delete, expected wal/.test(e.message));
    raw.pragma('journal_mode = WAL');
    verifySettings(raw, 'y.db', false); // all as openDb sets them: no error
  } finally {
    raw.close();
  }
});

S('closing on a full disk keeps the -wal for the next open instead of throwing (a shutdown on a full disk exited 1)', async () => {
  const dir = join(tempDir(), 'small');
  mkdirSync(dir);
  await withSmallDisk(dir, '2m', () => {
    const file = join(dir, 'x.db');
    const db = openDb(file);
    db.raw.exec('CREATE TABLE t (b BLOB)');
    const insert = db.raw.prepare('INSERT INTO t VALUES (randomblob(4000))');
    for (let i = 0; i < 150; i++) db.tx(() => insert.run());
    // the rest of the disk taken: the checkpoint cannot grow the database file
    const filler = join(dir, 'filler');
    try {
      for (;;) appendFileSync(filler, Buffer.alloc(64 * 1024));
    } catch (err) {
      assert.is((err as NodeJS.ErrnoException).code, 'ENOSPC');
    }
    assert.is(db.close(), false, 'it says the -wal was kept (the shutdown warns: it said only "stopped")');
    assert.ok(statSync(`${file}-wal`).size > 500_000, 'the -wal stays');
    rmSync(filler);
    const again = openDb(file);
    assert.is(again.raw.prepare('SELECT count(*) FROM t').pluck().get(), 150, 'every committed row is read back');
    again.close();
  });
});

S('a first start on a disk too small for the database leaves no contact-ledger.db in place, whole or not (a reviewer\'s case: a damaged one, its -wal removed by the next start)', async () => {
  for (const size of ['300k', '500k', '600k', '700k', '900k']) {
    const dir = join(tempDir(), 'small');
    mkdirSync(dir);
    await withSmallDisk(dir, size, async () => {
      const data = join(dir, 'data');
      let started = false;
      try {
        await (await openRuntime(testConfig(data), quiet)).close();
        started = true;
      } catch (err) {
        assert.match((err as Error).message, /disk is full|no room on the disk|not usable|disk I\/O/, `${size}: ${(err as Error).message}`);
      }
      const file = join(data, DB_FILE);
      if (!started) assert.not.ok(existsSync(file), `${size}: no database in place after a failed first start`);
      else {
        const db = new Database(file, { readonly: true });
        assert.is(db.pragma('integrity_check', { simple: true }), 'ok', size);
        db.close();
      }
    });
  }
});

S('db.tx: commits, rolls back on throw, refuses async callbacks', () => {
  const db = openDb(join(tempDir(), 'x.db'));
  db.raw.exec('CREATE TABLE t (x INTEGER)');
  db.tx(() => db.raw.prepare('INSERT INTO t VALUES (1)').run());
  assert.throws(() => db.tx(() => {
    db.raw.prepare('INSERT INTO t VALUES (2)').run();
    throw new Error('stop');
  }));
  assert.throws(() => db.tx((async () => db.raw.prepare('INSERT INTO t VALUES (3)').run()) as never), /synchronous/);
  assert.equal(db.raw.prepare('SELECT x FROM t').pluck().all(), [1]);
  db.close();
});

S('two connections: deferred read-then-write hits SQLITE_BUSY, IMMEDIATE does not (D2a)', () => {
  const file = join(tempDir(), 'x.db');
  const a = openDb(file);
  a.raw.exec('CREATE TABLE t (x INTEGER)');
  const b = new Database(file);
  b.pragma('busy_timeout = 0');
  a.raw.exec('BEGIN DEFERRED');
  a.raw.prepare('SELECT count(*) FROM t').get();
  b.exec('BEGIN DEFERRED');
  b.prepare('SELECT count(*) FROM t').get();
  a.raw.prepare('INSERT INTO t VALUES (1)').run();
  let code = '';
  try {
    b.prepare('INSERT INTO t VALUES (2)').run();
  } catch (err) {
    code = (err as { code: string }).code;
  }
  assert.match(code, /^SQLITE_BUSY/);
  b.exec('ROLLBACK');
  a.raw.exec('COMMIT');
  // with BEGIN IMMEDIATE (what db.tx uses) the second writer waits for the first instead
  b.pragma('busy_timeout = 2000');
  a.tx(() => a.raw.prepare('INSERT INTO t VALUES (3)').run());
  b.transaction(() => b.prepare('INSERT INTO t VALUES (4)').run()).immediate();
  assert.is(a.raw.prepare('SELECT count(*) FROM t').pluck().get(), 3);
  b.close();
  a.close();
});

S('migrations: all files apply to a fresh database once, recorded in schema_migrations and user_version', () => {
  const db = openDb(join(tempDir(), 'x.db'));
  const all = loadMigrations(paths.migrations);
  assert.ok(all.length >= 1);
  assert.equal(migrate(db, all), all.map((m) => m.name));
  assert.is(schemaVersion(db), all.at(-1)!.version);
  assert.equal(db.raw.prepare('SELECT name FROM schema_migrations ORDER BY version').pluck().all(), all.map((m) => m.name));
  assert.equal(migrate(db, all), [], 'nothing to do the second time');
  assert.equal(db.raw.pragma('foreign_key_check'), []);
  assert.is(db.raw.pragma('integrity_check', { simple: true }), 'ok');
  db.close();
});

S('a migration that fails halfway rolls back everything and leaves user_version unchanged (D7)', () => {
  const dir = tempDir();
  mkdirSync(join(dir, 'm'));
  writeFileSync(join(dir, 'm', '0001_ok.sql'), 'CREATE TABLE a (x INTEGER);');
  writeFileSync(join(dir, 'm', '0002_broken.sql'), 'CREATE TABLE b (x INTEGER); INSERT INTO nope VALUES (1);');
  const db = openDb(join(dir, 'x.db'));
  assert.throws(() => migrate(db, loadMigrations(join(dir, 'm'))), /nope/);
  assert.is(schemaVersion(db), 0);
  assert.equal(db.raw.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('a', 'b')").all(), []);
  db.close();
  writeFileSync(join(dir, 'm', '0004_gap.sql'), 'SELECT 1;');
  assert.throws(() => loadMigrations(join(dir, 'm')), /without gaps/);
});

/**
 * A new database migrated up to just before migration `prefix` (e.g. '0011_'), with an organization
 * and two ledgers (l_1, l_2); `apply()` then runs that migration.
 */
function justBefore(prefix: string) {
  const db = openDb(join(tempDir(), 'x.db'));
  const all = loadMigrations(paths.migrations);
  const at = all.findIndex((m) => m.name.startsWith(prefix));
  assert.ok(at > 0, prefix);
  migrate(db, all.slice(0, at));
  db.raw.exec("INSERT INTO orgs (id, name, created_at, updated_at) VALUES ('o_1', 'O', 1, 1)");
  db.raw.exec("INSERT INTO ledgers (id, org_id, name, created_at, updated_at) VALUES ('l_1', 'o_1', 'L', 1, 1), ('l_2', 'o_1', 'M', 1, 1)");
  return { db, raw: db.raw, apply: () => migrate(db, all.slice(0, at + 1)) };
}

/**
 * Contacts and people as a migration of the matching keys finds them (their keys as the old rule
 * stored them), a contact matched to a person by name + company, and how it is matched afterwards.
 */
function keyRows(raw: Database.Database) {
  const contact = raw.prepare("INSERT INTO contacts (id, ledger_id, name, company, import_company, name_key, company_key, created_at, updated_at) VALUES (?, 'l_1', ?, ?, ?, ?, ?, 1, 1)");
  const person = raw.prepare('INSERT INTO people (name, name_key, company, company_key, observed_at, updated_at) VALUES (?, ?, ?, ?, 1, 1)');
  return {
    contact: (id: string, name: string, company: string, nameKey: string, companyKey: string) => void contact.run(id, name, company, company, nameKey, companyKey),
    person: (name: string, nameKey: string, company: string, companyKey: string): number => Number(person.run(name, nameKey, company, companyKey).lastInsertRowid),
    matchByName: (contactId: string, personSeq: number) => void raw.prepare("UPDATE contacts SET person_id = ?, matched_by = 'name', is_verified = 1 WHERE id = ?").run(String(personSeq), contactId),
    matchOf: (contactId: string) => raw.prepare('SELECT person_id, matched_by, is_verified FROM contacts WHERE id = ?').get(contactId),
  };
}
const UNMATCHED_AMBIGUOUS = { person_id: null, matched_by: 'ambiguous', is_verified: 0 };

S('migration 0011 rebuilds changes with every row, seq and index, and from then on a deleted seq is never given again', () => {
  const { db, raw, apply } = justBefore('0011_');
  const ins = raw.prepare("INSERT INTO changes (seq, id, ledger_id, contact_id, type, field, from_value, to_value, detected_at, observed_at) VALUES (?, ?, ?, ?, ?, ?, '{}', '{}', ?, ?)");
  for (const seq of [1, 2, 5, 9, 10, 40]) ins.run(seq, `chg_${seq}`, seq % 2 ? 'l_1' : 'l_2', `c_${seq % 3}`, seq % 4 ? 'job' : 'info', seq % 4 ? null : 'title', 1000 + seq, seq === 5 ? null : 7);
  const rows = () => raw.prepare('SELECT * FROM changes ORDER BY seq').all();
  const indexes = () => raw.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'changes' ORDER BY name").all();
  const before = { rows: rows(), indexes: indexes() };
  // what 0010 does: a deleted newest number is given again
  raw.exec('DELETE FROM changes WHERE seq = 40');
  assert.is(ins.run(null, 'chg_again', 'l_1', 'c_0', 'job', null, 1, 1).lastInsertRowid, 11, 'plain INTEGER PRIMARY KEY: max(seq) + 1, below the 40 a cursor may hold');
  raw.exec("DELETE FROM changes WHERE id = 'chg_again'");
  ins.run(40, 'chg_40', 'l_2', 'c_1', 'info', 'title', 1040, 7); // as it was

  apply();
  assert.equal(rows(), before.rows, 'every row and seq kept');
  for (const index of before.indexes) assert.ok(indexes().some((i: any) => i.name === (index as any).name && i.sql === (index as any).sql), `index ${(index as any).name} kept`);
  assert.match(String(raw.prepare("SELECT sql FROM sqlite_master WHERE name = 'changes'").pluck().get()), /seq\s+INTEGER PRIMARY KEY AUTOINCREMENT/);
  assert.is(raw.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'changes'").pluck().get(), 40);
  assert.equal(raw.pragma('foreign_key_check'), []);
  assert.is(raw.pragma('integrity_check', { simple: true }), 'ok');
  // the newest changes deleted (a contact, bulk_delete, a ledger purge): new ones still come after them
  raw.exec('DELETE FROM changes WHERE seq >= 10');
  assert.is(ins.run(null, 'chg_new', 'l_1', 'c_0', 'job', null, 2000, 7).lastInsertRowid, 41);
  raw.exec("DELETE FROM ledgers WHERE id = 'l_1'"); // cascades to its changes, the newest among them
  assert.is(ins.run(null, 'chg_newer', 'l_2', 'c_0', 'job', null, 2001, 7).lastInsertRowid, 42);
  db.close();
});

S('migration 0013 gives every change the running maximum of detected_at of its ledger in seq order, also across a clock step back', () => {
  const { db, raw, apply } = justBefore('0013_');
  const ins = raw.prepare("INSERT INTO changes (id, ledger_id, contact_id, type, field, from_value, to_value, detected_at, observed_at) VALUES (?, ?, 'c_1', 'info', 'title', '{}', '{}', ?, NULL)");
  // l_1: 100, 300, then the clock steps back to 200, 250, then 400; l_2 interleaved, its own maximum
  const rows: [string, number][] = [['l_1', 100], ['l_2', 5000], ['l_1', 300], ['l_1', 200], ['l_2', 10], ['l_1', 250], ['l_1', 400], ['l_2', 20]];
  rows.forEach(([l, at], i) => ins.run(`chg_${i}`, l, at));
  apply();
  assert.equal(raw.prepare('SELECT ledger_id, detected_at, detected_max FROM changes ORDER BY seq').raw().all(), [
    ['l_1', 100, 100], ['l_2', 5000, 5000], ['l_1', 300, 300], ['l_1', 200, 300], ['l_2', 10, 5000], ['l_1', 250, 300], ['l_1', 400, 400], ['l_2', 20, 5000],
  ]);
  assert.ok(raw.prepare("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'changes_by_ledger_detected_max'").get());
  assert.is(raw.pragma('integrity_check', { simple: true }), 'ok');
  db.close();
});

S('migration 0017 indexes the name sort by name_key and gives a contact without one lower(name)', () => {
  const { db, raw, apply } = justBefore('0017_');
  const ins = raw.prepare("INSERT INTO contacts (id, ledger_id, name, company, import_company, name_key, created_at, updated_at) VALUES (?, 'l_1', ?, 'C', 'C', ?, 1, 1)");
  ins.run('c_1', 'Émile Zola', 'emile zola');
  ins.run('c_2', 'Zoe', 'zoe');
  ins.run('c_3', 'Ann OLD', null); // written before migration 0003 gave every contact its keys
  apply();
  assert.equal(raw.prepare('SELECT id, name_key FROM contacts ORDER BY seq').raw().all(), [['c_1', 'emile zola'], ['c_2', 'zoe'], ['c_3', 'ann old']]);
  assert.match(String(raw.prepare("SELECT sql FROM sqlite_master WHERE name = 'contacts_by_name'").pluck().get()), /ON contacts \(ledger_id, name_key\)/);
  const walk = raw.prepare("SELECT id FROM contacts INDEXED BY contacts_by_name WHERE ledger_id = 'l_1' ORDER BY name_key, seq").pluck().all();
  assert.equal(walk, ['c_3', 'c_1', 'c_2']);
  assert.is(raw.pragma('integrity_check', { simple: true }), 'ok');
  db.close();
});

S("migration 0019 recomputes company keys stored under the old rule with the server's own companyKey, and leaves the others alone", () => {
  const { db, raw, apply } = justBefore('0019_');
  const contact = raw.prepare("INSERT INTO contacts (id, ledger_id, name, company, import_company, name_key, company_key, created_at, updated_at) VALUES (?, 'l_1', 'N', ?, ?, 'n', ?, 1, 1)");
  contact.run('c_1', 'Acme Pvt Ltd', 'Acme Pvt Ltd', 'acme pvt');
  contact.run('c_2', 'Globex A/S', 'Globex A/S', 'globex a');
  contact.run('c_3', 'Initech', 'Initech', 'initech');
  contact.run('c_4', 'Umbrella Kft.', 'Umbrella Kft.', null); // written before migration 0003 gave contacts their keys
  raw.prepare("INSERT INTO people (name, name_key, company, company_key, observed_at, updated_at) VALUES ('P', 'p', 'Acme Private Limited', 'acme private', 1, 1)").run();
  const updatedAt = raw.prepare("SELECT updated_at FROM contacts WHERE id = 'c_3'").pluck();
  apply();
  assert.equal(raw.prepare('SELECT id, company_key FROM contacts ORDER BY id').raw().all(), [['c_1', 'acme'], ['c_2', 'globex'], ['c_3', 'initech'], ['c_4', 'umbrella']]);
  assert.equal(raw.prepare('SELECT company_key FROM people').pluck().all(), ['acme']);
  assert.is(updatedAt.get(), 1, 'the migration changes keys only');
  assert.is(raw.pragma('integrity_check', { simple: true }), 'ok');
  db.close();
});

S('migration 0020 recomputes the name and company keys of names holding letters NFKD leaves whole (ø, ß, ł, æ), and no other row', () => {
  const { db, raw, apply } = justBefore('0020_');
  const contact = raw.prepare("INSERT INTO contacts (id, ledger_id, name, company, import_company, name_key, company_key, created_at, updated_at) VALUES (?, 'l_1', ?, ?, ?, ?, ?, 1, 1)");
  contact.run('c_1', 'Øyvind Ås', 'Łódź Tools', 'Łódź Tools', 'øyvind as', 'łódź tools');
  contact.run('c_2', 'Jürgen Straße', 'Æther AS', 'Æther AS', 'jurgen straße', 'æther');
  contact.run('c_3', 'Ann Lee', 'Acme', 'Acme', 'ann lee', 'acme');
  contact.run('c_4', 'Bo Chen', 'Globex', 'Globex', 'kept as it was', 'kept too'); // no such letter: not even read again
  raw.prepare("INSERT INTO people (name, name_key, company, company_key, observed_at, updated_at) VALUES ('Søren Kierkegaard', 'søren kierkegaard', 'Københavns Ø', 'københavns ø', 1, 1)").run();
  apply();
  assert.equal(raw.prepare('SELECT id, name_key, company_key FROM contacts ORDER BY id').raw().all(), [
    ['c_1', 'oyvind as', 'lodztools'],
    ['c_2', 'jurgen strasse', 'aether'],
    ['c_3', 'ann lee', 'acme'],
    ['c_4', 'kept as it was', 'kept too'],
  ]);
  assert.equal(raw.prepare('SELECT name_key, company_key FROM people').raw().all(), [['soren kierkegaard', 'kobenhavnso']]);
  assert.is(raw.pragma('integrity_check', { simple: true }), 'ok');
  db.close();
});

S('migration 0024 stores the e-mail key (Unicode case, composed form, IDNA domain) of the addresses whose key is not lower() of them, and the e-mail indexes hold the key of each', () => {
  const { db, raw, apply } = justBefore('0024_');
  const contact = raw.prepare("INSERT INTO contacts (id, ledger_id, name, company, import_company, name_key, email, created_at, updated_at) VALUES (?, 'l_1', 'N', 'C', 'C', 'n', ?, 1, 1)");
  contact.run('c_1', 'JOSÉ@Example.com');
  contact.run('c_2', 'jose\u0301@example.COM'); // decomposed é
  contact.run('c_3', 'ann@MÜNCHEN.de');
  contact.run('c_4', null);
  contact.run('c_5', 'Bob.Roe@Globex.TEST'); // ASCII: its key is lower() of it, nothing stored
  raw.prepare("INSERT INTO people (name, name_key, company, company_key, email, observed_at, updated_at) VALUES ('P', 'p', 'C', 'c', 'Ann@xn--mnchen-3ya.DE', 1, 1)").run();
  apply();
  assert.equal(raw.prepare('SELECT id, email_key, coalesce(email_key, lower(email)) FROM contacts ORDER BY id').raw().all(), [
    ['c_1', 'josé@example.com', 'josé@example.com'],
    ['c_2', 'josé@example.com', 'josé@example.com'],
    ['c_3', 'ann@xn--mnchen-3ya.de', 'ann@xn--mnchen-3ya.de'],
    ['c_4', null, null],
    ['c_5', null, 'bob.roe@globex.test'],
  ]);
  assert.equal(raw.prepare('SELECT email_key, coalesce(email_key, lower(email)) FROM people').raw().all(), [[null, 'ann@xn--mnchen-3ya.de']]);
  assert.match(raw.prepare("SELECT sql FROM sqlite_schema WHERE name = 'contacts_by_email'").pluck().get() as string, /\(coalesce\(email_key, lower\(email\)\)\)/);
  assert.match(raw.prepare("SELECT sql FROM sqlite_schema WHERE name = 'people_by_email'").pluck().get() as string, /\(coalesce\(email_key, lower\(email\)\)\)/);
  assert.is(raw.pragma('integrity_check', { simple: true }), 'ok');
  db.close();
});

S('migration 0021 recomputes company keys under the new rule (initials, more legal forms, apostrophes) and the name keys of names with an apostrophe', () => {
  const { db, raw, apply } = justBefore('0021_');
  const k = keyRows(raw);
  k.contact('c_1', "Seán O'Brien", 'Acme L.L.C', 'sean o brien', 'acme ll c');
  k.contact('c_2', 'Ann Lee', "McDonald's Aktiengesellschaft", 'ann lee', 'mcdonald s aktiengesellschaft');
  k.contact('c_3', 'Bo Chen', 'Globex', 'kept as it was', 'globex'); // no apostrophe: its name key is not read again
  k.person('Mo D’Arcy', 'mo d arcy', 'Acme Limited Liability Company', 'acme limited liability');
  // two people whose keys coincide once recomputed, and a contact matched to one of them by name + company alone
  const obrien = k.person("Ann O'Brien", 'ann o brien', 'Initech', 'initech');
  k.person('Ann OBrien', 'ann obrien', 'Initech', 'initech');
  k.contact('c_4', "Ann O'Brien", 'Initech', 'ann o brien', 'initech');
  k.matchByName('c_4', obrien);
  const updatedAt = raw.prepare("SELECT updated_at FROM contacts WHERE id = 'c_1'").pluck();
  apply();
  assert.equal(raw.prepare('SELECT id, name_key, company_key FROM contacts ORDER BY id').raw().all(), [
    ['c_1', 'sean obrien', 'acme'],
    ['c_2', 'ann lee', 'mcdonalds'],
    ['c_3', 'kept as it was', 'globex'],
    ['c_4', 'ann obrien', 'initech'],
  ]);
  assert.equal(raw.prepare('SELECT name_key, company_key FROM people ORDER BY seq').raw().all(), [['mo darcy', 'acme'], ['ann obrien', 'initech'], ['ann obrien', 'initech']]);
  assert.equal(k.matchOf('c_4'), UNMATCHED_AMBIGUOUS, 'now one of two namesakes: unmatched');
  assert.is(updatedAt.get(), 1, 'the migration changes keys only');
  assert.is(raw.pragma('integrity_check', { simple: true }), 'ok');
  db.close();
});

S('migration 0025 recomputes company keys under the new rule (Aktiebolag, a bank\'s N.A., ".com", marks) and unmatches contacts of people made namesakes by it', () => {
  const { db, raw, apply } = justBefore('0025_');
  const k = keyRows(raw);
  k.contact('c_1', 'Ann Lee', 'Amazon.com, Inc.', 'ann lee', 'amazon com');
  k.contact('c_2', 'Bo Chen', 'Wells Fargo Bank, N.A.', 'bo chen', 'wells fargo bank na');
  k.contact('c_3', 'Cy Poe', 'Globex', 'cy poe', 'globex');
  const first = k.person('Di Moe', 'di moe', 'Ericsson Aktiebolag', 'ericsson aktiebolag');
  k.person('Di Moe', 'di moe', 'Ericsson AB', 'ericsson');
  k.contact('c_4', 'Di Moe', 'Ericsson Aktiebolag', 'di moe', 'ericsson aktiebolag');
  k.matchByName('c_4', first);
  apply();
  assert.equal(raw.prepare('SELECT id, company_key FROM contacts ORDER BY id').raw().all(), [['c_1', 'amazon'], ['c_2', 'wellsfargobank'], ['c_3', 'globex'], ['c_4', 'ericsson']]);
  assert.equal(raw.prepare('SELECT company_key FROM people ORDER BY seq').pluck().all(), ['ericsson', 'ericsson']);
  assert.equal(k.matchOf('c_4'), UNMATCHED_AMBIGUOUS, 'now one of two namesakes: unmatched');
  assert.is(raw.pragma('integrity_check', { simple: true }), 'ok');
  db.close();
});

S('migration 0027 recomputes company and name keys under the new rule (more legal forms, invisible characters) and unmatches contacts of people made namesakes by it', () => {
  const { db, raw, apply } = justBefore('0027_');
  const k = keyRows(raw);
  k.contact('c_1', 'Ann Lee', 'Anthropic, PBC', 'ann lee', 'anthropic pbc');
  k.contact('c_2', 'Bo\u00adb Chen', 'PT Telkom Indonesia', 'bo b chen', 'pt telkom indonesia');
  k.contact('c_3', 'Cy Poe', 'Globex', 'cy poe', 'globex');
  const first = k.person('Di Moe', 'di moe', 'Acme UG (haftungsbeschränkt)', 'acme ug haftungsbeschrankt');
  k.person('Di Moe', 'di moe', 'Acme', 'acme');
  k.person('E\u200bve Roe', 'e ve roe', 'Bank of America, N.A.', 'bank of america n a');
  // vowel signs the old rule dropped: Kamla's contact matched to Kamal by one key, which are two now
  const kamal = k.person('कमल वर्मा', 'कमल वरम', 'Infosys', 'infosys');
  k.contact('c_5', 'कमला वर्मा', 'Infosys', 'कमल वरम', 'infosys');
  k.matchByName('c_5', kamal);
  // a contact whose person's name changed after the match (keys already differed): left matched
  const renamed = k.person('Fay Wed', 'fay wed', 'Globex', 'globex');
  k.contact('c_6', 'Fay Single', 'Globex', 'fay single', 'globex');
  k.matchByName('c_6', renamed);
  k.contact('c_4', 'Di Moe', 'Acme UG (haftungsbeschränkt)', 'di moe', 'acme ug haftungsbeschrankt');
  k.matchByName('c_4', first);
  apply();
  assert.equal(raw.prepare('SELECT id, name_key, company_key FROM contacts ORDER BY id').raw().all(), [
    ['c_1', 'ann lee', 'anthropic'], ['c_2', 'bob chen', 'telkomindonesia'], ['c_3', 'cy poe', 'globex'], ['c_4', 'di moe', 'acme'],
    ['c_5', 'कमला वर्मा', 'infosys'], ['c_6', 'fay single', 'globex'],
  ]);
  assert.equal(raw.prepare('SELECT name_key, company_key FROM people ORDER BY seq').raw().all(), [
    ['di moe', 'acme'], ['di moe', 'acme'], ['eve roe', 'bankofamerica'], ['कमल वर्मा', 'infosys'], ['fay wed', 'globex'],
  ]);
  assert.equal(k.matchOf('c_5'), UNMATCHED_AMBIGUOUS, 'its keys are no longer its person\'s: unmatched');
  assert.equal(k.matchOf('c_6'), { person_id: String(renamed), matched_by: 'name', is_verified: 1 }, 'keys that differed before are not the rule\'s doing');
  assert.equal(k.matchOf('c_4'), UNMATCHED_AMBIGUOUS, 'now one of two namesakes: unmatched');
  assert.is(raw.pragma('integrity_check', { simple: true }), 'ok');
  db.close();
});

/**
 * A title-rules migration over contacts stored with what the old rules said (title, level,
 * domain): each gets what the current rules say, nothing else is touched, no change row is written.
 */
function titleMigration(migration: string, stored: [string | null, string | null, string | null][], expected: [string | null, string | null][]): void {
  const { db, raw, apply } = justBefore(migration);
  const contact = raw.prepare("INSERT INTO contacts (id, ledger_id, name, company, import_company, title, title_level, title_domain, created_at, updated_at) VALUES (?, 'l_1', 'N', 'C', 'C', ?, ?, ?, 1, 1)");
  stored.forEach(([title, level, domain], i) => contact.run(`c_${i + 1}`, title, level, domain));
  apply();
  assert.equal(raw.prepare('SELECT id, title_level, title_domain, updated_at FROM contacts ORDER BY id').raw().all(), expected.map(([level, domain], i) => [`c_${i + 1}`, level, domain, 1]));
  assert.is(raw.prepare('SELECT count(*) FROM changes').pluck().get(), 0, 'no change rows');
  db.close();
}

S('migration 0028 recomputes stored title levels and domains under the current rules, touching nothing else', () => {
  titleMigration(
    '0028_',
    [
      ['CEO Assistant', 'c_suite', 'other'], // the old rules' answer
      ['Head of Analytics', 'director', 'other'],
      ['VP Sales', 'vp', 'sales'], // already right
      [null, null, null],
      ['---', null, null], // no letter or digit: null, as at import
    ],
    [['staff', 'operations'], ['director', 'engineering'], ['vp', 'sales'], [null, null], [null, null]],
  );
});

S('migration 0030 takes past roles out of stored title levels and domains ("Former CEO" is not c_suite)', () => {
  titleMigration(
    '0030_',
    [
      ['Former CEO', 'c_suite', 'other'], // the old rules' answer
      ['Ex-CTO, Software Architect', 'c_suite', 'engineering'],
      ['CEO', 'c_suite', 'other'], // already right
    ],
    [['staff', 'other'], ['staff', 'engineering'], ['c_suite', 'other']],
  );
});

S('migration 0034 reads a marker after the role as a past role ("CEO (Retired)" is not c_suite)', () => {
  titleMigration(
    '0034_',
    [
      ['CEO (Retired)', 'c_suite', 'other'], // the old rules' answer
      ['CFO (ret.)', 'c_suite', 'finance'],
      ['CTO – Retired', 'c_suite', 'engineering'],
      ['CEO (formerly CTO)', 'c_suite', 'other'], // already right
      ['CEO', 'c_suite', 'other'],
    ],
    [['staff', 'other'], ['staff', 'other'], ['staff', 'other'], ['c_suite', 'other'], ['c_suite', 'other']],
  );
});

S('migration 0035 stores referenceIds in composed form (NFC), leaving one where its ledger already holds the composed twin', () => {
  const { db, raw, apply } = justBefore('0035_');
  const [composed, decomposed] = ['CRM-M\u00fcller-42', 'CRM-Mu\u0308ller-42'];
  const contact = raw.prepare("INSERT INTO contacts (id, ledger_id, name, company, import_company, reference_id, created_at, updated_at) VALUES (?, ?, 'N', 'C', 'C', ?, 1, 1)");
  contact.run('c_1', 'l_1', decomposed); // alone in its ledger: composed
  contact.run('c_2', 'l_2', composed); // the twin already there: stays
  contact.run('c_3', 'l_2', decomposed);
  contact.run('c_4', 'l_1', 'plain-ascii');
  contact.run('c_5', 'l_1', null);
  apply();
  assert.equal(raw.prepare('SELECT id, reference_id, updated_at FROM contacts ORDER BY id').raw().all(), [
    ['c_1', composed, 1],
    ['c_2', composed, 1],
    ['c_3', decomposed, 1],
    ['c_4', 'plain-ascii', 1],
    ['c_5', null, 1],
  ]);
  db.close();
});

S('migration 0036 recomputes company keys under the new rule (a one-letter word before a dotted legal form, spelt-out forms) and unmatches contacts whose match the rule undoes', () => {
  const { db, raw, apply } = justBefore('0036_');
  const k = keyRows(raw);
  const updatedAt = raw.prepare('SELECT max(updated_at) FROM contacts').pluck();
  k.contact('c_1', 'Ann Lee', 'Studio X A.G.', 'ann lee', 'studio xag');
  k.contact('c_2', 'Bo Chen', 'Blackstone Real Estate Limited Partnership', 'bo chen', 'blackstone real estate limited partnership');
  k.contact('c_3', 'Cy Poe', 'A. B. C. Corp', 'cy poe', 'abc');
  // keys made equal by the rule: Rakuten G.K. and Rakuten Godo Kaisha are one company, Di Moe at it two namesakes
  const first = k.person('Di Moe', 'di moe', 'Rakuten Godo Kaisha', 'rakuten godo kaisha');
  k.person('Di Moe', 'di moe', 'Rakuten G.K.', 'rakuten');
  k.contact('c_4', 'Di Moe', 'Rakuten Godo Kaisha', 'di moe', 'rakuten godo kaisha');
  k.matchByName('c_4', first);
  // keys made different by the rule: "Plan B N.V." and "Plan BNV" were one key, now two
  const bnv = k.person('Eve Roe', 'eve roe', 'Plan BNV', 'plan bnv');
  k.contact('c_5', 'Eve Roe', 'Plan B N.V.', 'eve roe', 'plan bnv');
  k.matchByName('c_5', bnv);
  // a contact whose person's company changed after the match (keys already differed): left matched
  const moved = k.person('Fay Wed', 'fay wed', 'Initech', 'initech');
  k.contact('c_6', 'Fay Wed', 'Globex', 'fay wed', 'globex');
  k.matchByName('c_6', moved);
  apply();
  assert.equal(raw.prepare('SELECT id, company_key FROM contacts ORDER BY id').raw().all(), [
    ['c_1', 'studiox'], ['c_2', 'blackstonerealestate'], ['c_3', 'abc'], ['c_4', 'rakuten'], ['c_5', 'planb'], ['c_6', 'globex'],
  ]);
  assert.equal(raw.prepare('SELECT company_key FROM people ORDER BY seq').pluck().all(), ['rakuten', 'rakuten', 'planbnv', 'initech']);
  assert.equal(k.matchOf('c_4'), UNMATCHED_AMBIGUOUS, 'now one of two namesakes: unmatched');
  assert.equal(k.matchOf('c_5'), UNMATCHED_AMBIGUOUS, 'its keys are no longer its person\'s: unmatched');
  assert.equal(k.matchOf('c_6'), { person_id: String(moved), matched_by: 'name', is_verified: 1 }, 'keys that differed before are not the rule\'s doing');
  assert.is(updatedAt.get(), 1, 'the migration changes keys only');
  assert.is(raw.pragma('integrity_check', { simple: true }), 'ok');
  db.close();
});

S('migration 0036 recomputes stored title levels of titles with "chair" ("Chair" is the board\'s, a department\'s chair a director)', () => {
  titleMigration(
    '0036_',
    [
      ['Chair', 'staff', 'other'], // the old rules' answer
      ['Co-Chair', 'staff', 'other'],
      ['Chair, Board of Directors', 'director', 'other'],
      ['Department Chair', 'staff', 'other'],
      ['Vice Chair of the Program Committee', 'c_suite', 'operations'],
      ['Chairman', 'c_suite', 'other'], // already right
      ['Program Committee Chair', 'staff', 'operations'],
      ['CEO', 'c_suite', 'other'],
    ],
    [['c_suite', 'other'], ['c_suite', 'other'], ['c_suite', 'other'], ['director', 'other'], ['staff', 'operations'], ['c_suite', 'other'], ['staff', 'operations'], ['c_suite', 'other']],
  );
});

S('migration 0038 recomputes the title levels of titles beyond ASCII, which the LIKE of 0034 and 0036 missed ("ＣＨＡＩＲ")', () => {
  titleMigration(
    '0038_',
    [
      ['\uff23\uff28\uff21\uff29\uff32', 'staff', 'other'], // ＣＨＡＩＲ: the rules before 0036
      ['\uff23\uff25\uff2f \uff08\uff32\uff45\uff54\uff49\uff52\uff45\uff44\uff09', 'c_suite', 'other'], // ＣＥＯ （Ｒｅｔｉｒｅｄ）: before 0034
      ['Directeur Général', 'c_suite', 'other'], // already right
      ['Chair', 'staff', 'other'], // ASCII: 0036's, left alone here
    ],
    [['c_suite', 'other'], ['staff', 'other'], ['c_suite', 'other'], ['staff', 'other']],
  );
});

/** Users stored with the e-mails `stored` (u_1, u_2, … in order) just before `migration`; after it, `expected` in the same order. */
function userEmailMigration(migration: string, stored: string[], expected: string[]): void {
  const { raw, apply } = justBefore(migration);
  const user = raw.prepare("INSERT INTO users (id, email, name, password_hash, created_at, updated_at) VALUES (?, ?, '', 'x', 1, 1)");
  stored.forEach((email, i) => user.run(`u_${i + 1}`, email));
  apply();
  assert.equal(raw.prepare('SELECT id, email FROM users ORDER BY id').all(), expected.map((email, i) => ({ id: `u_${i + 1}`, email })));
}

S('migration 0040 brings user e-mails to the composed form (NFC), and leaves the second account of an address both forms had', () => {
  userEmailMigration(
    '0040_',
    // decomposed only: composed; ASCII: untouched; decomposed and composed: both kept as they are
    ['jo\u0308rg@example.test', 'ann@example.test', 'ma\u0308x@example.test', 'm\u00e4x@example.test'],
    ['j\u00f6rg@example.test', 'ann@example.test', 'ma\u0308x@example.test', 'm\u00e4x@example.test'],
  );
});

S('migration 0046 brings user e-mails to full-width letters as usual ones and Punycode domains in Unicode, and leaves the second account of an address both forms had', () => {
  userEmailMigration(
    '0046_',
    // ａｄｍｉｎ: admin; exämple in Punycode; ASCII: untouched; bob and ｂｏｂ: the second kept as it is
    ['\uff41\uff44\uff4d\uff49\uff4e@example.test', 'j\u00f6rg@xn--exmple-cua.test', 'ann@example.test', 'bob@example.test', '\uff42\uff4f\uff42@example.test'],
    ['admin@example.test', 'j\u00f6rg@ex\u00e4mple.test', 'ann@example.test', 'bob@example.test', '\uff42\uff4f\uff42@example.test'],
  );
});

/**
 * Users (id, superuser) and audit rows as migration 0047 reads them, just before it; after it, each
 * user's password_from_org.
 */
function passwordOriginMigration(users: [string, 0 | 1][], events: { orgId?: string | null; actor?: [string, string]; action: string; target: [string, string]; data: object; at?: number }[]): [string, string | null][] {
  const { db, raw, apply } = justBefore('0047_');
  const user = raw.prepare("INSERT INTO users (id, email, name, password_hash, superuser, created_at, updated_at) VALUES (?, ?, '', 'x', ?, 1, 1)");
  for (const [id, superuser] of users) user.run(id, `${id}@x.test`, superuser);
  const audit = raw.prepare('INSERT INTO audit_log (id, org_id, actor_type, actor_id, action, target_type, target_id, data, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)');
  events.forEach((e, i) => audit.run(`evt_${i + 1}`, e.orgId === undefined ? 'o_1' : e.orgId, ...(e.actor ?? ['user', 'u_root']), e.action, ...e.target, JSON.stringify(e.data), e.at ?? 1));
  apply();
  const after = raw.prepare('SELECT id, password_from_org FROM users ORDER BY id').raw().all() as [string, string | null][];
  db.close();
  return after;
}

S('migration 0047 marks the accounts an admin who is no superuser made with a password, as the audit log tells, unless a superuser set their password since', () => {
  const added = (actor: [string, string], target: string, userCreated: boolean) => ({ actor, action: 'member.added', target: ['user', target] as [string, string], data: { email: `${target}@x.test`, role: 'viewer', userCreated } });
  const after = passwordOriginMigration(
    [['u_admin', 0], ['u_root', 1], ['u_made', 0], ['u_rootmade', 0], ['u_reset', 0], ['u_added', 0], ['u_samade', 0]],
    [
      { orgId: null, action: 'user.created', target: ['user', 'u_admin'], data: {} },
      { orgId: null, action: 'user.created', target: ['user', 'u_added'], data: {} },
      added(['user', 'u_admin'], 'u_made', true),
      added(["user", "u_admin"], "u_made", true), // two rows of it: marked once
      added(['user', 'u_root'], 'u_rootmade', true),
      added(['user', 'u_admin'], 'u_reset', true),
      { action: 'user.updated', target: ['user', 'u_reset'], data: { passwordReset: true } },
      added(['user', 'u_admin'], 'u_added', false),
      added(['service_account', 'sa_1'], 'u_samade', true),
    ],
  );
  assert.equal(after, [
    ['u_added', null], // an account that existed, added
    ['u_admin', null],
    ['u_made', 'o_1'], // made by an admin with a password
    ['u_reset', null], // a superuser set its password since
    ['u_root', null],
    ['u_rootmade', null], // made by a superuser
    ['u_samade', 'o_1'], // made by an admin service account
  ]);
});

S('migration 0047 marks as made by an unknown organization the accounts with no trace of how they were made: an organization deleted since took its audit rows (a reviewer\'s case)', () => {
  const after = passwordOriginMigration(
    [['u_root', 1], ['u_gone', 0], ['u_created', 0], ['u_orgadmin', 0], ['u_named', 0], ['u_member', 0], ['u_reset', 0], ['u_sup', 1]],
    [
      { orgId: null, action: 'user.created', target: ['user', 'u_created'], data: { email: 'u_created@x.test', superuser: false } },
      { action: 'org.created', target: ['org', 'o_1'], data: { name: 'O', adminUserId: 'u_orgadmin' } },
      { action: 'org.created', target: ['org', 'o_1'], data: { name: 'O', adminUserId: null } }, // no admin: a NULL among the traced
      // an account that existed, named a new organization's admin a day later: no trace of how it was made (a reviewer's case)
      { action: 'org.created', target: ['org', 'o_1'], data: { name: 'O', adminUserId: 'u_named' }, at: 86_400_001 },
      { action: 'member.added', target: ['user', 'u_member'], data: { email: 'u_member@x.test', role: 'viewer', userCreated: true } }, // by a superuser: not marked
      { orgId: null, action: 'user.updated', target: ['user', 'u_reset'], data: { passwordReset: true } },
    ],
  );
  assert.equal(after, [
    ['u_created', null],
    ['u_gone', 'unknown'], // no trace: made as a member of an organization since deleted
    ['u_member', null],
    ['u_named', 'unknown'],
    ['u_orgadmin', null],
    ['u_reset', null],
    ['u_root', null],
    ['u_sup', null],
  ]);
});

S("migration 0048 takes webhook URLs' queries out of the audit entries written before it, as new entries write them", () => {
  const { db, raw, apply } = justBefore('0048_');
  const audit = raw.prepare("INSERT INTO audit_log (id, org_id, actor_type, actor_id, action, target_type, target_id, data, at) VALUES (?, 'o_1', 'user', 'u_1', ?, 'webhook', 'wh_1', ?, 1)");
  const rows: [string, object][] = [
    ['webhook.created', { url: 'https://hooks.example.test/in?key=sekrit', events: ['import.completed'], ledgerIds: null, enabled: true, hasToken: false }],
    ['webhook.created', { url: 'https://hooks.example.test/plain', events: ['import.completed'], ledgerIds: null, enabled: true, hasToken: false }],
    ['webhook.updated', { url: { from: 'https://hooks.example.test/in?key=sekrit', to: 'https://hooks.example.test/in?key=other' }, token: 'replaced' }],
    ['webhook.updated', { url: { from: 'https://hooks.example.test/in?key=other', to: 'https://elsewhere.example.test/in' } }],
    ['webhook.updated', { enabled: { from: true, to: false } }],
    ['webhook.deleted', { url: 'https://elsewhere.example.test/in?sig=zzz&x=1', events: [], ledgerIds: null, enabled: false, hasToken: true }],
    ['member.added', { email: 'a?b@x.test', role: 'viewer', userCreated: false }],
  ];
  rows.forEach(([action, data], i) => audit.run(`evt_${i + 1}`, action, JSON.stringify(data)));
  apply();
  const after = (raw.prepare('SELECT data FROM audit_log ORDER BY seq').pluck().all() as string[]).map((d) => JSON.parse(d));
  db.close();
  assert.not.ok(JSON.stringify(after).includes('sekrit') || JSON.stringify(after).includes('sig=zzz'));
  assert.equal(after, [
    { ...rows[0]![1], url: 'https://hooks.example.test/in?…' },
    rows[1]![1],
    { url: { from: 'https://hooks.example.test/in?…', to: 'https://hooks.example.test/in?…', queryChanged: true }, token: 'replaced' },
    { url: { from: 'https://hooks.example.test/in?…', to: 'https://elsewhere.example.test/in' } },
    rows[4]![1],
    { ...rows[5]![1], url: 'https://elsewhere.example.test/in?…' },
    rows[6]![1], // another action's "?" stays
  ]);
});

S('migration 0041 recomputes company keys under the new rule (", The" at the end, SCA, mbH) and unmatches contacts whose match the rule undoes', () => {
  const { db, raw, apply } = justBefore('0041_');
  const k = keyRows(raw);
  const updatedAt = raw.prepare('SELECT max(updated_at) FROM contacts').pluck();
  k.contact('c_1', 'Tom Depot', 'Home Depot, The', 'tom depot', 'home depot the');
  k.contact('c_2', 'Ana Ruiz', 'Acme SCA', 'ana ruiz', 'acme sca');
  k.contact('c_3', 'Bo Lind', 'Acme Verwaltungsgesellschaft mbH', 'bo lind', 'acme verwaltungsgesellschaft mbh');
  // keys made equal by the rule: "Walt Disney Company, The" and "The Walt Disney Company" are one company, Di Moe at it two namesakes
  const first = k.person('Di Moe', 'di moe', 'The Walt Disney Company', 'walt disney');
  k.person('Di Moe', 'di moe', 'Walt Disney Company, The', 'walt disney company the');
  k.contact('c_4', 'Di Moe', 'The Walt Disney Company', 'di moe', 'walt disney');
  k.matchByName('c_4', first);
  // keys the rule changes alike on both sides: the match stays
  const sca = k.person('Eve Roe', 'eve roe', 'Acme sca', 'acme sca');
  k.contact('c_5', 'Eve Roe', 'Acme SCA', 'eve roe', 'acme sca');
  k.matchByName('c_5', sca);
  // a match the rule leaves as it was
  const same = k.person('Fay Wed', 'fay wed', 'Initech', 'initech');
  k.contact('c_6', 'Fay Wed', 'Initech', 'fay wed', 'initech');
  k.matchByName('c_6', same);
  apply();
  assert.equal(raw.prepare('SELECT id, company_key FROM contacts ORDER BY id').raw().all(), [
    ['c_1', 'homedepot'], ['c_2', 'acme'], ['c_3', 'acmeverwaltungsgesellschaft'], ['c_4', 'waltdisney'], ['c_5', 'acme'], ['c_6', 'initech'],
  ]);
  assert.equal(raw.prepare('SELECT company_key FROM people ORDER BY seq').pluck().all(), ['waltdisney', 'waltdisney', 'acme', 'initech']);
  assert.equal(k.matchOf('c_4'), UNMATCHED_AMBIGUOUS, 'now one of two namesakes: unmatched');
  assert.equal(k.matchOf('c_5'), { person_id: String(sca), matched_by: 'name', is_verified: 1 }, 'both keys changed alike: still one person');
  assert.equal(k.matchOf('c_6'), { person_id: String(same), matched_by: 'name', is_verified: 1 }, 'a match the rule does not touch stays');
  assert.is(updatedAt.get(), 1, 'the migration changes keys only');
  assert.is(raw.pragma('integrity_check', { simple: true }), 'ok');
  db.close();
});

S('migration 0042 recomputes company keys without spaces (Wal-Mart = Walmart) and without Ltée, and unmatches contacts whose match the rule undoes', () => {
  const { db, raw, apply } = justBefore('0042_');
  const k = keyRows(raw);
  const updatedAt = raw.prepare('SELECT max(updated_at) FROM contacts').pluck();
  k.contact('c_1', 'Tom Walt', 'Wal-Mart Stores', 'tom walt', 'wal mart stores');
  k.contact('c_2', 'Ana Ruiz', 'Acme Ltée', 'ana ruiz', 'acme ltee');
  // keys made equal by the rule: "Wal-Mart" and "Walmart" are one company, Di Moe at it two namesakes
  const first = k.person('Di Moe', 'di moe', 'Wal-Mart', 'wal mart');
  k.person('Di Moe', 'di moe', 'Walmart', 'walmart');
  k.contact('c_3', 'Di Moe', 'Wal-Mart', 'di moe', 'wal mart');
  k.matchByName('c_3', first);
  // keys the rule changes alike on both sides: the match stays
  const coke = k.person('Eve Roe', 'eve roe', 'Coca Cola', 'coca cola');
  k.contact('c_4', 'Eve Roe', 'Coca-Cola', 'eve roe', 'coca cola');
  k.matchByName('c_4', coke);
  // a match the rule leaves as it was
  const same = k.person('Fay Wed', 'fay wed', 'Initech', 'initech');
  k.contact('c_5', 'Fay Wed', 'Initech', 'fay wed', 'initech');
  k.matchByName('c_5', same);
  apply();
  assert.equal(raw.prepare('SELECT id, company_key FROM contacts ORDER BY id').raw().all(), [
    ['c_1', 'walmartstores'], ['c_2', 'acme'], ['c_3', 'walmart'], ['c_4', 'cocacola'], ['c_5', 'initech'],
  ]);
  assert.equal(raw.prepare('SELECT company_key FROM people ORDER BY seq').pluck().all(), ['walmart', 'walmart', 'cocacola', 'initech']);
  assert.equal(k.matchOf('c_3'), UNMATCHED_AMBIGUOUS, 'now one of two namesakes: unmatched');
  assert.equal(k.matchOf('c_4'), { person_id: String(coke), matched_by: 'name', is_verified: 1 }, 'both keys changed alike: still one person');
  assert.equal(k.matchOf('c_5'), { person_id: String(same), matched_by: 'name', is_verified: 1 }, 'a match the rule does not touch stays');
  assert.is(updatedAt.get(), 1, 'the migration changes keys only');
  assert.is(raw.pragma('integrity_check', { simple: true }), 'ok');
  db.close();
});

S('migration 0049 recomputes company keys with the article dropped before the suffixes ("The Company" is no longer "the") and without "& Cie", and unmatches contacts whose match the rule undoes', () => {
  const { db, raw, apply } = justBefore('0049_');
  const k = keyRows(raw);
  const updatedAt = raw.prepare('SELECT max(updated_at) FROM contacts').pluck();
  k.contact('c_1', 'Tom Walt', 'The Limited', 'tom walt', 'the');
  k.contact('c_2', 'Ana Ruiz', 'Acme & Cie', 'ana ruiz', 'acmeandcie');
  // keys made equal by the rule: "Company, The" and "The Company" are one company, Di Moe at it two namesakes
  const first = k.person('Di Moe', 'di moe', 'Company, The', 'company');
  k.person('Di Moe', 'di moe', 'The Company', 'the');
  k.contact('c_3', 'Di Moe', 'Company, The', 'di moe', 'company');
  k.matchByName('c_3', first);
  // keys the rule makes different: "The Corporation" is no longer the contact's "The Co"
  const corp = k.person('Eve Roe', 'eve roe', 'The Corporation', 'the');
  k.contact('c_4', 'Eve Roe', 'The Co', 'eve roe', 'the');
  k.matchByName('c_4', corp);
  // a match the rule leaves as it was
  const same = k.person('Fay Wed', 'fay wed', 'Initech', 'initech');
  k.contact('c_5', 'Fay Wed', 'Initech', 'fay wed', 'initech');
  k.matchByName('c_5', same);
  // a controller that is no finance title, and one that is
  raw.exec("UPDATE contacts SET title = 'Air Traffic Controller', title_level = 'staff', title_domain = 'finance' WHERE id = 'c_1'");
  raw.exec("UPDATE contacts SET title = 'Financial Controller', title_level = 'staff', title_domain = 'finance' WHERE id = 'c_2'");
  apply();
  assert.equal(raw.prepare('SELECT id, company_key FROM contacts ORDER BY id').raw().all(), [
    ['c_1', 'limited'], ['c_2', 'acme'], ['c_3', 'company'], ['c_4', 'co'], ['c_5', 'initech'],
  ]);
  assert.equal(raw.prepare("SELECT id, title_domain FROM contacts WHERE id IN ('c_1', 'c_2') ORDER BY id").raw().all(), [['c_1', 'other'], ['c_2', 'finance']]);
  assert.equal(raw.prepare('SELECT company_key FROM people ORDER BY seq').pluck().all(), ['company', 'company', 'corporation', 'initech']);
  assert.equal(k.matchOf('c_3'), UNMATCHED_AMBIGUOUS, 'now one of two namesakes: unmatched');
  assert.equal(k.matchOf('c_4'), UNMATCHED_AMBIGUOUS, 'its keys are no longer its person\'s: unmatched');
  assert.equal(k.matchOf('c_5'), { person_id: String(same), matched_by: 'name', is_verified: 1 }, 'a match the rule does not touch stays');
  assert.is(updatedAt.get(), 1, 'the migration changes keys only');
  assert.is(raw.pragma('integrity_check', { simple: true }), 'ok');
  db.close();
});

S('processes preparing one new data folder at the same moment all succeed (one made a folder the other then failed to make: exit 2, "not usable (EEXIST)")', async () => {
  const module = pathToFileURL(join(import.meta.dirname, '..', 'src', 'storage', 'storage.ts')).href;
  for (let round = 0; round < 5; round++) {
    const data = join(tempDir(), 'a', 'b', 'c', 'data');
    const script = `const { prepareDataDir } = await import(${JSON.stringify(module)});
      process.stdin.once('data', () => prepareDataDir(${JSON.stringify(data)}));
      console.error('ready');`;
    const runs = await childrenAtOnce(script, 6);
    assert.equal(runs.map((r) => r.code), Array(6).fill(0), `round ${round}: ${runs.map((r) => r.stderr).join(' | ')}`);
    assert.ok(statSync(data).isDirectory());
  }
});

S('a database written by a newer version is refused with a clear message', async () => {
  const dir = tempDir();
  await (await openRuntime(testConfig(dir), quiet)).close();
  const raw = new Database(join(dir, DB_FILE));
  raw.pragma('user_version = 999');
  raw.close();
  try {
    await openRuntime(testConfig(dir), quiet);
    assert.unreachable();
  } catch (err) {
    assert.instance(err, ConfigError, 'exit 2: a restart cannot help');
    assert.match((err as Error).message, /schema version 999, written by a newer contact-ledger/);
  }
});

S('a start removes what a killed restore or backup left in the data folder, and keeps the database', async () => {
  const dir = tempDir();
  await (await openRuntime(testConfig(dir), quiet)).close();
  mkdirSync(join(dir, 'backups'), { recursive: true });
  const dead = spawnSync('true').pid!; // a process that ended
  const live = spawn('sleep', ['60'], { stdio: 'ignore' }); // a `backup` command writing into backups/ meanwhile
  const backups = join(dir, 'backups');
  const leftovers = [
    join(dir, `.${DB_FILE}.restoring`),
    join(backups, '.scheduled-20261124T100000000Z.db.partial'), // the name before pids
    join(backups, `.scheduled-20261124T100000000Z.db.${dead}-0123abcd.partial`),
    join(backups, `.scheduled-20261124T100000000Z.db.${dead}-0123abcd.partial-journal`),
    // this process's pid, no backup under way in it: a killed server's, whose pid the restarted one got again (pid 1 in a container)
    join(backups, `.scheduled-20261124T110000000Z.db.${process.pid}-4567abcd.partial`),
  ];
  const kept = [join(backups, `.mine.db.${live.pid}-89abcdef.partial`), join(backups, `.mine.db.${live.pid}-89abcdef.partial-journal`)];
  for (const f of [...leftovers, ...kept]) writeFileSync(f, 'half a copy');
  try {
    const rt = await openRuntime(testConfig(dir), quiet);
    try {
      for (const f of leftovers) assert.not.ok(existsSync(f), f);
      for (const f of kept) assert.ok(existsSync(f), `a live process's partial file is kept: ${f}`);
      assert.ok(existsSync(join(dir, DB_FILE)));
    } finally {
      await rt.close();
    }
  } finally {
    live.kill();
  }
});

S('a restore killed after it moved the old database aside: the start refuses, keeping its copy, instead of creating an empty database', async () => {
  const dir = tempDir();
  await (await openRuntime(testConfig(dir), quiet)).close();
  const copy = join(dir, `.${DB_FILE}.restoring`);
  copyFileSync(join(dir, DB_FILE), copy);
  rmSync(join(dir, DB_FILE)); // moved to backups/pre-restore-… by the restore
  try {
    await openRuntime(testConfig(dir), quiet);
    assert.unreachable();
  } catch (err) {
    assert.instance(err, StartupError);
    assert.match((err as Error).message, /a restore was interrupted: .* has no database, .*contact-ledger restore/);
  }
  assert.ok(existsSync(copy), 'the copy is kept');
  assert.not.ok(existsSync(join(dir, DB_FILE)), 'no empty database was made');
});

S('a damaged or foreign file is refused at start instead of served (D7)', async () => {
  const dir = tempDir();
  const rt = await openRuntime(testConfig(dir), quiet);
  rt.db.raw.exec('CREATE TABLE filler (x TEXT)');
  const ins = rt.db.raw.prepare('INSERT INTO filler VALUES (?)');
  rt.db.tx(() => {
    for (let i = 0; i < 3000; i++) ins.run('y'.repeat(200));
  });
  await rt.close();
  const file = join(dir, DB_FILE);
  const damaged = join(dir, 'damaged.db');
  copyFileSync(file, damaged);
  truncateSync(damaged, Math.floor(statSync(damaged).size / 2));
  assert.throws(() => openDb(damaged), (e: Error) => e instanceof StartupError && /damaged|malformed|restore/.test(e.message));
  const foreign = join(dir, 'foreign.db');
  writeFileSync(foreign, 'this is a text file, not a database'.repeat(200));
  assert.throws(() => openDb(foreign), (e: Error) => e instanceof StartupError && /not a contact-ledger database|damaged/.test(e.message));
  assert.ok(readFileSync(foreign, 'utf8').startsWith('this is a text file'), 'the foreign file is not modified');
});

S('a database whose pages only quick_check finds damaged is refused with its -wal left as it was (D7: a connection that may write would fold it in and drop it)', () => {
  const dir = tempDir();
  const file = join(dir, 'live.db');
  const live = new Database(file);
  live.pragma('journal_mode = WAL');
  live.pragma('wal_autocheckpoint = 0');
  live.exec('CREATE TABLE filler (x TEXT)');
  const ins = live.prepare('INSERT INTO filler VALUES (?)');
  live.transaction(() => {
    for (let i = 0; i < 3000; i++) ins.run('y'.repeat(200));
  })();
  live.pragma('wal_checkpoint(TRUNCATE)');
  live.exec('CREATE TABLE only_in_the_wal (x)');
  live.prepare('INSERT INTO only_in_the_wal VALUES (1)').run();
  // what a crash leaves: the file and its -wal as they are, the connection never closed
  const copy = join(dir, 'crashed.db');
  copyFileSync(file, copy);
  copyFileSync(`${file}-wal`, `${copy}-wal`);
  live.close();
  const page = 4096;
  const bytes = readFileSync(copy);
  bytes.fill(0xa5, 40 * page, 41 * page); // a data page: the header and the schema read fine
  writeFileSync(copy, bytes);
  const wal = readFileSync(`${copy}-wal`);
  assert.throws(() => openDb(copy), (e: Error) => e instanceof StartupError && /damaged/.test(e.message) && /restore a backup/.test(e.message) && !e.message.includes('\n'), 'one line, however many pages are damaged');
  assert.ok(existsSync(`${copy}-wal`), 'the -wal is still there');
  assert.ok(readFileSync(`${copy}-wal`).equals(wal), 'as it was');
  assert.ok(readFileSync(copy).equals(bytes), 'and the database too');
});

S('an unwritable data folder stops the start with a message naming the folder', async () => {
  const dir = join(tempDir(), 'ro');
  mkdirSync(dir, { mode: 0o500 });
  if (process.getuid?.() === 0) {
    // root can write anywhere: use a path below a regular file instead
    writeFileSync(join(dir, 'file'), '');
    try {
      await openRuntime(testConfig(join(dir, 'file', 'data')), quiet);
      assert.unreachable();
    } catch (err) {
      assert.match((err as Error).message, /data folder .*file\/data is not usable/);
    }
    return;
  }
  try {
    await openRuntime(testConfig(join(dir, 'data')), quiet);
    assert.unreachable();
  } catch (err) {
    assert.match((err as Error).message, /is not usable/);
  }
  assert.equal(readdirSync(dir), []);
});

S('a data folder that cannot be made under a folder that exists (/proc/x) stops the start with that message, not a spin', () => {
  for (const dir of ['/proc/contact-ledger-test/data', '/proc/contact-ledger-test']) {
    assert.throws(() => prepareDataDir(dir), (err: Error) => /data folder \/proc\/contact-ledger-test.* is not usable \(ENOENT\)/.test(err.message), dir);
  }
  const nested = join(tempDir(), 'a', 'b', 'c');
  prepareDataDir(nested);
  assert.is(statSync(nested).mode & 0o777, 0o700, 'made a level at a time, each 0700');
  assert.is(statSync(join(nested, '..')).mode & 0o777, 0o700);
});

S.run();
