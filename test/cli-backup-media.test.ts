// Backup and restore of damaged files (said on one line) and of files on read-only media: as child
// processes on real files. Apart from cli-backup.test.ts, which alone nears run-tests' time limit
// for a file on a busy machine.
import * as assert from 'uvu/assert';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { tempDir, withReadOnlyView } from './helpers.ts';
import { baseEnv, MAIN } from './child-server.ts';
import { EMAIL, PASSWORD, cli, run, copyWithWritesInWal, sha, operatorSuite } from './operator-helpers.ts';

const C = operatorSuite('backup and restore: damaged files, read-only media');

/** Grows the database `file` (stopped) and writes garbage into pages in its middle: SQLite opens it, and integrity_check finds several problems. */
function damagePages(file: string): void {
  const db = new Database(file);
  db.exec('CREATE TABLE filler (x TEXT); CREATE INDEX filler_x ON filler (x)');
  const ins = db.prepare('INSERT INTO filler VALUES (?)');
  db.transaction(() => {
    for (let i = 0; i < 3000; i++) ins.run(`${'y'.repeat(200)}${i}`);
  })();
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  const bytes = readFileSync(file);
  const pages = bytes.length / 4096;
  for (const at of [0.3, 0.45, 0.6, 0.75, 0.9]) {
    const page = Math.floor(pages * at);
    bytes.fill(0x5a, page * 4096 + 100, page * 4096 + 400);
  }
  writeFileSync(file, bytes);
}

C('a damaged database is told on one line (docs/operations.md): a backup of it and a restore of it say the first problems and how many more', async () => {
  // A tester's case: both printed integrity_check's findings over several lines.
  const data = tempDir();
  const env = { CONTACT_LEDGER_DATA: data };
  assert.is((await cli(['init', '--email', EMAIL, '--password', PASSWORD], env)).status, 0);
  const live = join(data, 'contact-ledger.db');
  damagePages(live);
  const b = run(['backup', join(tempDir(), 'of-damaged.db')], env);
  assert.is(b.status, 1, b.stderr);
  assert.is(b.stderr.trimEnd().split('\n').length, 1, b.stderr);
  assert.match(b.stderr, /^contact-ledger backup: .*the copy failed its integrity check: [^*;]+; [^*;]+; [^*;]+; and \d+ more\n$/);
  const r = run(['restore', live], { CONTACT_LEDGER_DATA: tempDir() });
  assert.is(r.status, 1, r.stderr);
  assert.is(r.stderr.trimEnd().split('\n').length, 1, r.stderr);
  assert.match(r.stderr, /^contact-ledger restore: refused: .* is a damaged database file \(integrity_check: [^*;]+; [^*;]+; [^*;]+; and \d+ more\): likely a truncated or corrupted copy; use another backup\. Nothing was changed\.\n$/);
});

C('restore reads a database in WAL mode from read-only media, with or without its -wal, and writes nothing there; backup of a data folder on read-only media says so', async () => {
  // A tester's case: a stopped (or killed) server's database on a read-only mount was refused as
  // "not a contact-ledger database (unable to open database file)", and backup said "cannot read".
  const origin = tempDir();
  assert.is((await cli(['init', '--email', EMAIL, '--password', PASSWORD], { CONTACT_LEDGER_DATA: origin })).status, 0);
  const live = join(origin, 'contact-ledger.db');
  const media = tempDir();
  copyFileSync(live, join(media, 'stopped.db')); // a stopped server's database: WAL mode, no -wal
  assert.is(readFileSync(join(media, 'stopped.db'))[18], 2, 'in WAL mode');
  const copied = copyWithWritesInWal(live, "CREATE TABLE only_in_the_wal (x TEXT); INSERT INTO only_in_the_wal VALUES ('committed')");
  copyFileSync(copied, join(media, 'killed.db'));
  copyFileSync(`${copied}-wal`, join(media, 'killed.db-wal'));
  const onMedia = () => readdirSync(media).map((f) => `${f} ${sha(join(media, f))}`);
  const before = onMedia();
  await withReadOnlyView(media, async (ro) => {
    for (const name of ['stopped.db', 'killed.db']) {
      const data = tempDir();
      const r = run(['restore', join(ro, name)], { CONTACT_LEDGER_DATA: data });
      assert.is(r.status, 0, `${name}: ${r.stderr}`);
      assert.equal(readdirSync(data).filter((f) => f.startsWith('.')), [], `${name}: no copy of it left in the data folder`);
      const db = new Database(join(data, 'contact-ledger.db'), { readonly: true });
      try {
        assert.is(db.prepare('SELECT email FROM users').pluck().all().join(), EMAIL, name);
        if (name === 'killed.db') assert.is(db.prepare('SELECT x FROM only_in_the_wal').pluck().get(), 'committed', 'with the transactions of its -wal');
      } finally {
        db.close();
      }
    }
    // a file that is not a database there is still refused as such
    const bad = run(['restore', join(ro, 'killed.db-wal')], { CONTACT_LEDGER_DATA: tempDir() });
    assert.is(bad.status, 1, bad.stderr);
    assert.match(bad.stderr, /refused: .*killed\.db-wal is not a contact-ledger database/);
  });
  assert.equal(onMedia(), before, 'nothing written on the medium');
  await withReadOnlyView(origin, async (ro) => {
    const out = tempDir();
    const b = run(['backup', join(out, 'b.db')], { CONTACT_LEDGER_DATA: ro });
    assert.is(b.status, 2, b.stderr);
    assert.match(b.stderr, /^contact-ledger backup: the data folder .* is on a read-only file system, and SQLite cannot read contact-ledger\.db without writing contact-ledger\.db-shm beside it [^\n]*\n$/);
    assert.equal(readdirSync(out), []);
  });
  // a folder copied off a killed server has its -shm: the same answer, not "permission denied on
  // …-shm: run the command as the user the server runs as" (an executable tester's case, as root)
  const killedCopy = tempDir();
  copyFileSync(live, join(killedCopy, 'contact-ledger.db'));
  writeFileSync(join(killedCopy, 'contact-ledger.db-shm'), Buffer.alloc(32768));
  await withReadOnlyView(killedCopy, async (ro) => {
    const b = run(['backup', join(tempDir(), 'b.db')], { CONTACT_LEDGER_DATA: ro });
    assert.is(b.status, 2, b.stderr);
    assert.match(b.stderr, /is on a read-only file system, and SQLite cannot read contact-ledger\.db without writing contact-ledger\.db-shm beside it/);
  });
});

C('a backup this user may not read is refused on one line, nothing changed (a review\'s case: a raw EACCES)', async () => {
  if (process.getuid?.() !== 0) return; // the command runs as another user, which only root may start
  const data = tempDir();
  const env = { CONTACT_LEDGER_DATA: data };
  assert.is((await cli(['init', '--email', EMAIL, '--password', PASSWORD], env)).status, 0);
  const closed = tempDir(); // 0700, root's
  const backup = join(closed, 'b.db');
  assert.is(run(['backup', backup], env).status, 0);
  // a folder on the way it may not enter: said so, naming that folder, a usage error (2), not "does not exist"
  const asNobody = (args: string[]) => spawnSync(process.execPath, [MAIN, ...args], { uid: 65534, gid: 65534, env: { ...baseEnv, HOME: data, ...env }, encoding: 'utf8', timeout: 60_000 });
  const entered = asNobody(['restore', backup]);
  assert.is(entered.status, 2, entered.stderr);
  assert.ok(entered.stderr.startsWith(`contact-ledger restore: ${closed}: permission denied: run the command as a user who may read it`), entered.stderr);
  // the folder open, the file (0600, root's) not
  execFileSync('chown', ['-R', '65534:65534', data]);
  const before = sha(join(data, 'contact-ledger.db'));
  chmodSync(closed, 0o755);
  const r = asNobody(['restore', backup]);
  // as a closed folder is: a usage error (2) saying permission denied, not "unable to open database file" with exit 1 (an operator tester's case)
  assert.is(r.status, 2, r.stderr);
  assert.ok(r.stderr.startsWith(`contact-ledger restore: ${backup}: permission denied: run the command as a user who may read it`), r.stderr);
  assert.is(sha(join(data, 'contact-ledger.db')), before);
  // and so for the files import and feed read (a raw EACCES, exit 1)
  for (const [args, file] of [[['import', 'o_x', 'l_x'], 'rows.csv'], [['feed'], 'people.jsonl']] as const) {
    const path = join(closed, file);
    writeFileSync(path, 'name,company\n', { mode: 0o600 });
    const refused = asNobody([...args, path]);
    assert.is(refused.status, 2, refused.stderr);
    assert.ok(refused.stderr.startsWith(`contact-ledger ${args[0]}: ${path}: permission denied: run the command as a user who may read it`), refused.stderr);
  }
});

C.run();
