// The operator's commands as child processes on real files: init, user, migrate, backup while the
// server writes (RELIABILITY.md D5), restore (opened and served again), import with progress,
// HTTPS, and every kind of bad input ending with a clear message, the right exit code and no
// damage to existing data.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { runCli } from '../src/cli/index.ts';
import { csvForm, ID, LEDGER, request, tempDir } from './helpers.ts';
import { baseEnv, MAIN, serve, type Running } from './child-server.ts';

const EMAIL = 'ops@example.com';
const PASSWORD = 'operator passphrase 1';
const COMMANDS = ['serve', 'init', 'user', 'migrate', 'backup', 'restore', 'import', 'feed', 'keys', 'version', 'licenses'];

/** The command in this process (runCli is what main.ts runs): for checks where no signal or crash matters. */
async function cli(args: string[], env: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const status = await runCli(args, { out: (l) => out.push(l), err: (l) => err.push(l), write: (t) => err.push(t), env: { ...baseEnv, ...env }, isTTY: false });
  return { status, stdout: out.map((l) => `${l}\n`).join(''), stderr: err.map((l) => `${l}\n`).join('') };
}

/** The command as a child process, as operators run it. */
function run(args: string[], env: Record<string, string> = {}, input?: string) {
  return spawnSync(process.execPath, [MAIN, ...args], { env: { ...baseEnv, ...env }, encoding: 'utf8', timeout: 60_000, ...(input !== undefined ? { input } : {}) });
}

/** The same without blocking this process, for while a server child is talked to (keep-alive sockets stay serviced). */
function runAsync(args: string[], env: Record<string, string> = {}): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const c = spawn(process.execPath, [MAIN, ...args], { env: { ...baseEnv, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    c.stdout!.on('data', (d: Buffer) => (stdout += d));
    c.stderr!.on('data', (d: Buffer) => (stderr += d));
    c.on('exit', (status) => resolve({ status, stdout, stderr }));
  });
}

/**
 * Runs `sql` on the database `live` in WAL mode (as the server opens it) with checkpoints off, and
 * copies the file and its -wal to a new folder before closing it — what a server killed before a
 * checkpoint leaves: committed writes only in the -wal. Returns the copy's path (its -wal beside it).
 */
function copyWithWritesInWal(live: string, sql: string): string {
  const db = new Database(live);
  db.pragma('journal_mode = WAL');
  db.pragma('wal_autocheckpoint = 0');
  db.exec(sql);
  const copy = join(tempDir(), 'copy.db');
  copyFileSync(live, copy);
  copyFileSync(`${live}-wal`, `${copy}-wal`);
  db.close();
  return copy;
}

const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

function csv(rows: number): string {
  const lines = ['name,company,referenceId'];
  for (let i = 1; i <= rows; i++) lines.push(`Person ${i},Company ${i % 50},ref-${i}`);
  return `${lines.join('\n')}\n`;
}

/** Signs in to a running child server and returns a caller bound to it. */
async function client(s: Running, email = EMAIL, password = PASSWORD) {
  const base = `http://127.0.0.1:${s.port}`;
  const r = await request(base, 'POST', `${ID}/session`, { body: { grantType: 'password', email, password } });
  assert.is(r.status, 200, r.text);
  const token = r.body.accessToken as string;
  return (method: string, path: string, opts: Parameters<typeof request>[3] = {}) => request(base, method, path, { token, ...opts });
}

const C = suite('operator commands');
const running = new Set<Running>();
C.after.each(() => {
  for (const s of running) s.child.kill('SIGKILL');
  running.clear();
});
async function start(env: Record<string, string>, args: string[] = []): Promise<Running> {
  const s = await serve(env, args);
  running.add(s);
  return s;
}
async function stop(s: Running): Promise<void> {
  s.child.kill('SIGTERM');
  assert.is(await s.exit, 0, s.stderr().slice(-2000));
  running.delete(s);
}

/** Polls an import job (every 50 ms: a tight loop would slow the import it waits for) until it ends. */
async function jobEnd(call: Awaited<ReturnType<typeof client>>, path: string): Promise<any> {
  for (;;) {
    const job = (await call('GET', path)).body;
    if (job.status === 'completed' || job.status === 'failed') return job;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A fresh data folder served by a child, with an organization and a ledger in it. */
async function serverWithLedger() {
  const data = tempDir();
  const env = { CONTACT_LEDGER_DATA: data, CONTACT_LEDGER_ADMIN_EMAIL: EMAIL, CONTACT_LEDGER_ADMIN_PASSWORD: PASSWORD };
  const s = await start(env);
  const call = await client(s);
  const orgId = (await call('POST', `${ID}/orgs`, { body: { name: 'Ops' } })).body.id as string;
  const ledgerId = (await call('POST', `${LEDGER}/orgs/${orgId}/ledgers`, { body: { name: 'ops' } })).body.id as string;
  return { data, env, s, call, orgId, ledgerId, base: `${LEDGER}/orgs/${orgId}/ledgers/${ledgerId}` };
}

C('--help works for every command; missing arguments, extra arguments and unknown flags are usage errors (2)', async () => {
  for (const c of COMMANDS) {
    const r = await cli([c, '--help']);
    assert.is(r.status, 0, `${c} --help: ${r.stderr}`);
    assert.match(r.stdout, new RegExp(`^Usage: contact-ledger ${c}`), c);
  }
  const data = tempDir();
  const usage: string[][] = [
    ['backup'],
    ['backup', 'a.db', 'b.db'],
    ['restore'],
    ['import', 'o_x', 'l_x'],
    ['user'],
    ['user', 'add', '--email', 'a@b.test'],
    ['user', 'rename', '--email', 'a@b.test', '--password', 'long enough pw'],
    ['init'],
    ['init', '--email'],
    ['migrate', 'now'],
    ['backup', '--frobnicate', 'x.db'],
    ['version', 'extra', '--nope'],
  ];
  for (const args of usage) {
    const r = await cli(args, { CONTACT_LEDGER_DATA: data });
    assert.is(r.status, 2, `${args.join(' ')} → ${r.status}: ${r.stderr}`);
    assert.is(r.stderr.trim().split('\n').length, 1, `one line: ${r.stderr}`);
    assert.match(r.stderr, /^contact-ledger/);
  }
  // The same through the executable's entry point, as a child process.
  const child = run(['restore'], { CONTACT_LEDGER_DATA: data });
  assert.is(child.status, 2);
  assert.match(child.stderr, /^contact-ledger restore: usage: contact-ledger restore <file> \(see contact-ledger restore --help\)\n$/);
  assert.equal(readdirSync(data), [], 'usage errors touch nothing');
});

C('init creates the superuser and an organization; user add and passwd; migrate reports the schema', async () => {
  const data = tempDir();
  const env = { CONTACT_LEDGER_DATA: data };
  const init = run(['init', '--email', EMAIL, '--password', '-', '--org', 'Acme'], env, `${PASSWORD}\n`);
  assert.is(init.status, 0, init.stderr);
  assert.match(init.stdout, /created the superuser ops@example\.com \(u_[0-9a-z]+\)/);
  assert.match(init.stdout, /created the organization "Acme" \(o_[0-9a-z]+\) with ops@example\.com as its admin/);
  const again = await cli(['init', '--email', 'other@example.com', '--password', PASSWORD], env);
  assert.is(again.status, 1);
  assert.match(again.stderr, /already set up/);
  assert.is((await cli(['user', 'add', '--email', 'ed@example.com', '--password', 'editor passphrase', '--name', 'Ed'], env)).status, 0);
  const weak = await cli(['user', 'add', '--email', 'weak@example.com', '--password', 'short'], env);
  assert.is(weak.status, 1);
  assert.match(weak.stderr, /at least 8 characters/);
  const notEmail = await cli(['user', 'add', '--email', 'not an email', '--password', 'editor passphrase'], env);
  assert.is(notEmail.status, 2, notEmail.stderr);
  assert.match(notEmail.stderr, /--email must be an e-mail address/);
  const dup = await cli(['user', 'add', '--email', 'ED@example.com', '--password', 'editor passphrase'], env);
  assert.is(dup.status, 1);
  assert.match(dup.stderr, /already exists/);
  const missing = await cli(['user', 'passwd', '--email', 'nobody@example.com', '--password', 'whatever long'], env);
  assert.is(missing.status, 1);
  assert.match(missing.stderr, /no user has the e-mail nobody@example\.com/);
  assert.match((await cli(['migrate'], env)).stdout, /up to date \(schema version \d+\)/);

  const s = await start(env);
  const call = await client(s);
  const orgs = (await call('GET', `${ID}/orgs`)).body.orgs;
  assert.equal(orgs.map((o: { name: string; role: string }) => [o.name, o.role]), [['Acme', 'admin']]);
  await client(s, 'ed@example.com', 'editor passphrase');
  // user needs the folder: refused while the server runs, nothing changed
  const busy = await cli(['user', 'passwd', '--email', 'ed@example.com', '--password', 'new editor passphrase'], env);
  assert.is(busy.status, 1);
  assert.match(busy.stderr, /a contact-ledger server or command \(pid \d+\) is using the data folder .*stop it first, or use the API/);
  await stop(s);

  assert.is((await cli(['user', 'passwd', '--email', 'ed@example.com', '--password', 'new editor passphrase'], env)).status, 0);
  const s2 = await start(env);
  const base = `http://127.0.0.1:${s2.port}`;
  assert.is((await request(base, 'POST', `${ID}/session`, { body: { email: 'ed@example.com', password: 'editor passphrase' } })).status, 401);
  await client(s2, 'ed@example.com', 'new editor passphrase');
  await stop(s2);
});

C('backup while an import writes is consistent and complete (D5); restore refuses while serving, then restores into a fresh folder and the old one', async () => {
  const { data, env, s, call, orgId, ledgerId, base } = await serverWithLedger();
  const ROWS = 60_000;
  const importId = (await call('POST', `${base}/imports`, { raw: csvForm(csv(ROWS)) })).body.id;
  let job = (await call('GET', `${base}/imports/${importId}`)).body;
  while (job.status !== 'completed' && job.imported < 3_000) job = (await call('GET', `${base}/imports/${importId}`)).body;
  assert.is(job.status, 'processing', 'the backup starts while the import writes');
  const before = job.imported;
  // the upload as it is while its job runs (the job deletes it when it ends, which on a busy
  // machine may come before this test stops the server)
  const savedUpload = join(tempDir(), 'upload.csv');
  copyFileSync(join(data, 'uploads', `${importId}.csv`), savedUpload);

  const file = join(tempDir(), 'online.db');
  const b = await runAsync(['backup', file], env);
  assert.is(b.status, 0, b.stderr);
  assert.match(b.stdout, /backed up .* to .*online\.db \(\d+\.\d MiB, integrity ok\)/);
  const after = (await call('GET', `${base}/imports/${importId}`)).body;
  assert.ok(after.imported > before, 'the import kept writing');
  assert.is((await cli(['backup', file], env)).status, 1, 'an existing file is never overwritten');

  // The backup alone, without any -wal beside it: consistent, and it has every row committed before it started.
  const alone = join(tempDir(), 'alone.db');
  copyFileSync(file, alone);
  const db = new Database(alone, { readonly: true });
  assert.is(db.prepare('PRAGMA integrity_check').pluck().get(), 'ok');
  const contacts = db.prepare('SELECT count(*) FROM contacts WHERE ledger_id = ?').pluck().get(ledgerId) as number;
  const imported = db.prepare('SELECT imported FROM import_jobs WHERE id = ?').pluck().get(importId) as number;
  assert.is(db.prepare('SELECT file_path FROM import_jobs WHERE id = ?').pluck().get(importId), `uploads/${importId}.csv`, 'stored relative to the data folder');
  db.close();
  assert.ok(contacts >= before, `${contacts} ≥ ${before}`);
  assert.is(contacts, imported, 'rows and counts of one snapshot');

  // Restore while the server runs: refused, nothing touched.
  const refused = await cli(['restore', file], env);
  assert.is(refused.status, 1);
  assert.match(refused.stderr, /a contact-ledger server or command \(pid \d+\) is using the data folder .*stop it before restoring/);
  assert.not.ok(existsSync(join(data, 'backups')) && readdirSync(join(data, 'backups')).some((f) => f.startsWith('pre-restore')));
  for (const args of [['migrate'], ['import', orgId, ledgerId, alone]]) {
    const r = await cli(args, env);
    assert.is(r.status, 1, args[0]);
    assert.match(r.stderr, /a contact-ledger server or command \(pid \d+\) is using the data folder/);
  }
  const runningAtStop = (await call('GET', `${base}/imports/${importId}`)).body.status === 'processing';
  await stop(s);

  // Into a fresh folder, served by a second instance: the same contacts.
  const fresh = tempDir();
  const r = run(['restore', file], { CONTACT_LEDGER_DATA: fresh });
  assert.is(r.status, 0, r.stderr);
  const s2 = await start({ CONTACT_LEDGER_DATA: fresh });
  const call2 = await client(s2);
  assert.ok((await call2('GET', `${base}/contacts?view=count`)).body.count >= contacts, 'every contact of the backup');
  // Its upload was not copied along: the restored import job fails at once and says why, and
  // the original folder's upload is neither read nor deleted.
  const failedHere = await jobEnd(call2, `${base}/imports/${importId}`);
  assert.is(failedHere.status, 'failed');
  assert.match(failedHere.message, /no longer there/);
  if (runningAtStop) assert.ok(readdirSync(join(data, 'uploads')).some((f) => f === `${importId}.csv`), 'the original upload is untouched');
  await stop(s2);

  // Restored with the folder's uploads/ copied along, the job resumes from the backup's state and
  // ends with every row exactly once.
  const withUploads = tempDir();
  assert.is(run(['restore', file], { CONTACT_LEDGER_DATA: withUploads }).status, 0);
  mkdirSync(join(withUploads, 'uploads'), { recursive: true, mode: 0o700 });
  copyFileSync(savedUpload, join(withUploads, 'uploads', `${importId}.csv`));
  const s2b = await start({ CONTACT_LEDGER_DATA: withUploads });
  const call2b = await client(s2b);
  const resumed = await jobEnd(call2b, `${base}/imports/${importId}`);
  assert.is(resumed.status, 'completed', resumed.message ?? '');
  assert.is((await call2b('GET', `${base}/contacts?view=count`)).body.count, ROWS);
  await stop(s2b);

  // Over the original folder: the replaced database is kept and still opens with all its rows.
  const over = await cli(['restore', file], env);
  assert.is(over.status, 0, over.stderr);
  const kept = /kept as (\S+)/.exec(over.stdout)?.[1];
  assert.ok(kept && existsSync(kept), over.stdout);
  const old = new Database(kept!, { readonly: true });
  // (the server stopped mid-import: the job was handed back with its progress)
  assert.ok((old.prepare('SELECT count(*) FROM contacts WHERE ledger_id = ?').pluck().get(ledgerId) as number) >= after.imported);
  old.close();
  // (The import job of this copy finds its upload in this folder and resumes. If the import had
  // ended before the server stopped, it deleted its upload then: put back, as with uploads/ above.)
  if (!runningAtStop) copyFileSync(savedUpload, join(data, 'uploads', `${importId}.csv`));
  const s3 = await start(env);
  const call3 = await client(s3);
  const again = await jobEnd(call3, `${base}/imports/${importId}`);
  assert.is(again.status, 'completed', again.message ?? '');
  assert.is((await call3('GET', `${base}/contacts?view=count`)).body.count, ROWS);
  await stop(s3);
});

C('a restore killed between moving the old database and its -wal aside: the -wal is never read into the restored database', async () => {
  const data = tempDir();
  const env = { CONTACT_LEDGER_DATA: data };
  assert.is((await cli(['init', '--email', EMAIL, '--password', PASSWORD], env)).status, 0);
  const backup = join(tempDir(), 'backup.db');
  assert.is((await cli(['backup', backup], env)).status, 0);
  // the old database with writes still in its -wal (a server killed before a checkpoint)
  const live = join(data, 'contact-ledger.db');
  const wal = `${copyWithWritesInWal(live, "CREATE TABLE only_in_the_old_wal (x TEXT); INSERT INTO only_in_the_old_wal VALUES ('old')")}-wal`;
  // a restore of an earlier version got as far as moving the database aside, not its -wal
  rmSync(live);
  copyFileSync(wal, `${live}-wal`);
  const refused = await cli(['migrate'], env);
  assert.is(refused.status, 1, 'no start on a -wal without its database');
  assert.match(refused.stderr, /has contact-ledger\.db-wal but no contact-ledger\.db/);
  const r = await cli(['restore', backup], env);
  assert.is(r.status, 0, r.stderr);
  const restored = new Database(live);
  try {
    assert.is(restored.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'only_in_the_old_wal'").pluck().get(), 0, 'the restored database is the backup alone');
  } finally {
    restored.close();
  }
  assert.ok(readdirSync(join(data, 'backups')).some((f) => /^orphan-.*\.db-wal$/.test(f)), 'the -wal is kept aside');
  // and a restore over a database whose writes are still in its -wal writes them into it before moving it aside
  const dbCopy = copyWithWritesInWal(live, "CREATE TABLE written_before_the_move (x TEXT); INSERT INTO written_before_the_move VALUES ('kept')");
  copyFileSync(dbCopy, live);
  copyFileSync(`${dbCopy}-wal`, `${live}-wal`);
  const second = await cli(['restore', backup], env);
  assert.is(second.status, 0, second.stderr);
  const kept = readdirSync(join(data, 'backups')).filter((f) => /^pre-restore-.*\.db$/.test(f));
  assert.is(kept.length, 1);
  const keptDb = new Database(join(data, 'backups', kept[0]!), { readonly: true });
  try {
    assert.is(keptDb.prepare('SELECT x FROM written_before_the_move').pluck().get(), 'kept');
  } finally {
    keptDb.close();
  }
});

C('restore of a database with a -wal beside it restores the transactions in the -wal too (a copy of a killed server\'s folder)', async () => {
  const origin = tempDir();
  assert.is((await cli(['init', '--email', EMAIL, '--password', PASSWORD], { CONTACT_LEDGER_DATA: origin })).status, 0);
  // the database as a server killed before a checkpoint leaves it: committed writes only in its -wal
  const live = join(origin, 'contact-ledger.db');
  const copied = copyWithWritesInWal(live, "CREATE TABLE only_in_the_wal (x TEXT); INSERT INTO only_in_the_wal VALUES ('committed')");
  const walBytes = statSync(`${copied}-wal`).size;
  assert.ok(walBytes > 0);
  const sourceSha = sha(copied);

  const data = tempDir();
  const env = { CONTACT_LEDGER_DATA: data };
  assert.is((await cli(['init', '--email', 'other@example.com', '--password', PASSWORD], env)).status, 0);
  const r = await cli(['restore', copied], env);
  assert.is(r.status, 0, r.stderr);
  const restored = new Database(join(data, 'contact-ledger.db'), { readonly: true });
  try {
    assert.is(restored.prepare('SELECT x FROM only_in_the_wal').pluck().get(), 'committed');
    assert.is(restored.prepare('SELECT email FROM users').pluck().all().join(), EMAIL);
  } finally {
    restored.close();
  }
  assert.not.ok(existsSync(join(data, 'contact-ledger.db-wal')) && statSync(join(data, 'contact-ledger.db-wal')).size > 0, 'the restored database needs no -wal');
  assert.is(sha(copied), sourceSha, 'the file restored from is not changed');
  assert.is(statSync(`${copied}-wal`).size, walBytes, 'nor its -wal');
  assert.is((statSync(join(data, 'contact-ledger.db')).mode & 0o777).toString(8), '600');
});

C('restore refuses a file that is not a usable contact-ledger backup and changes nothing', async () => {
  const data = tempDir();
  const env = { CONTACT_LEDGER_DATA: data };
  assert.is((await cli(['init', '--email', EMAIL, '--password', PASSWORD], env)).status, 0);
  const live = join(data, 'contact-ledger.db');
  const hash = sha(live);
  const dir = tempDir();
  const good = join(dir, 'good.db');
  assert.is((await cli(['backup', good], env)).status, 0);

  const garbage = join(dir, 'notes.db');
  writeFileSync(garbage, 'just some text, no database\n'.repeat(100));
  const foreign = join(dir, 'foreign.db');
  const f = new Database(foreign);
  f.exec('CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL); INSERT INTO invoices (total) VALUES (1.5)');
  f.close();
  const truncated = join(dir, 'truncated.db');
  copyFileSync(good, truncated);
  truncateSync(truncated, Math.floor(statSync(truncated).size / 2));
  const newer = join(dir, 'newer.db');
  copyFileSync(good, newer);
  const n = new Database(newer);
  n.pragma('user_version = 999');
  n.close();
  const cases: [string, RegExp][] = [
    [garbage, /is not a contact-ledger database/],
    [foreign, /not a contact-ledger one \(no schema_migrations, users, orgs table\)/],
    [truncated, /damaged|not a contact-ledger database/],
    [newer, /schema version 999, written by a newer contact-ledger/],
    [dir, /cannot read .*not a file/],
  ];
  for (const [file, msg] of cases) {
    const r = await cli(['restore', file], env);
    assert.is(r.status, 1, `${file}: ${r.stderr}`);
    assert.match(r.stderr, msg);
    assert.match(r.stderr, /Nothing was changed\.$/m);
  }
  assert.is((await cli(['restore', join(dir, 'missing.db')], env)).status, 2);
  assert.is(sha(live), hash, 'the live database is untouched');
  assert.not.ok(existsSync(join(data, 'backups')), 'nothing was moved aside');
  assert.ok(readFileSync(garbage, 'utf8').startsWith('just some text'), 'the offered file is untouched');
});

C('serve refuses a damaged database and an unusable data folder with exit 1 and leaves them as they were (D7)', async () => {
  const data = tempDir();
  const env = { CONTACT_LEDGER_DATA: data };
  assert.is((await cli(['init', '--email', EMAIL, '--password', PASSWORD], env)).status, 0);
  const dir = tempDir();
  const live = join(data, 'contact-ledger.db');
  // Grow it, then cut it in half.
  const db = new Database(live);
  db.exec('CREATE TABLE filler (x TEXT)');
  const ins = db.prepare('INSERT INTO filler VALUES (?)');
  db.transaction(() => {
    for (let i = 0; i < 3000; i++) ins.run('y'.repeat(200));
  })();
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  truncateSync(live, Math.floor(statSync(live).size / 2));
  const hash = sha(live);
  const r = run(['serve'], { ...env, PORT: '0' });
  assert.is(r.status, 1);
  assert.match(r.stderr, /damaged|not a contact-ledger database/);
  assert.match(r.stderr, /restore a backup/);
  assert.is(sha(live), hash);

  const file = join(dir, 'a-file');
  writeFileSync(file, 'x');
  const unusable = run(['serve'], { CONTACT_LEDGER_DATA: join(file, 'data'), PORT: '0' });
  assert.is(unusable.status, 2, 'a configuration error: a restart cannot fix it');
  assert.match(unusable.stderr, /data folder .*a-file\/data is not usable .* set CONTACT_LEDGER_DATA to a writable folder/);
  const nodb = await cli(['backup', join(dir, 'x.db')], { CONTACT_LEDGER_DATA: tempDir() });
  assert.is(nodb.status, 1);
  assert.match(nodb.stderr, /there is no database in/);
});

C('import from the command line: the same job as the API, plain progress lines off a terminal, a bar on one', async () => {
  const data = tempDir();
  const env = { CONTACT_LEDGER_DATA: data, CONTACT_LEDGER_ADMIN_EMAIL: EMAIL, CONTACT_LEDGER_ADMIN_PASSWORD: PASSWORD };
  const s = await start(env);
  const call = await client(s);
  const orgId = (await call('POST', `${ID}/orgs`, { body: { name: 'Imp' } })).body.id;
  const ledgerId = (await call('POST', `${LEDGER}/orgs/${orgId}/ledgers`, { body: { name: 'cli' } })).body.id;
  const otherLedger = (await call('POST', `${LEDGER}/orgs/${orgId}/ledgers`, { body: { name: 'tty' } })).body.id;
  await stop(s);
  const dir = tempDir();
  const file = join(dir, 'people.csv');
  writeFileSync(file, `${csv(5_000)}Nobody,,ref-x\nPerson 1,Dup,ref-1\n`);
  const hash = sha(file);

  const r = run(['import', orgId, ledgerId, file], env);
  assert.is(r.status, 0, r.stderr);
  assert.match(r.stdout, /^imp_[0-9a-z]+ completed: 5002 rows, 5000 imported, 1 duplicates, 1 invalid \(rejected rows: GET \/api\/ledger\/v1\/orgs\/.*\/errors\)\n$/);
  assert.match(r.stderr, /^imp_[0-9a-z]+: \d+\/5002 \(\d+%\) \d+ imported/m, 'plain progress lines');
  assert.not.match(r.stderr, /\x1b\[/, 'no terminal control codes off a terminal');
  assert.is(sha(file), hash, 'the operator\'s file is left as it was');

  const bad = join(dir, 'bad.csv');
  writeFileSync(bad, 'colour,size\nred,9\n');
  const rejected = await cli(['import', orgId, ledgerId, bad], env);
  assert.is(rejected.status, 1);
  assert.match(rejected.stderr, /^contact-ledger import: .*name/m);
  const unreadable = join(dir, 'unreadable.csv');
  writeFileSync(unreadable, 'name,company\nA,"never closed\n');
  const failed = await cli(['import', orgId, ledgerId, unreadable], env);
  assert.is(failed.status, 1);
  assert.match(failed.stderr, /^imp_[0-9a-z]+ failed: 0 rows, 0 imported.*\. the file cannot be read: a quoted field opened on line 2 is never closed \(nothing was imported\)$/m);
  assert.not.match(failed.stderr, /importing 0 rows/);
  assert.is((await cli(['import', orgId, 'l_nosuchledger', file], env)).status, 1);

  // On a terminal (script(1) gives the command a pseudo-terminal): a bar redrawn in place.
  const tty = spawnSync('script', ['-qec', `${JSON.stringify(process.execPath)} ${JSON.stringify(MAIN)} import ${orgId} ${otherLedger} ${JSON.stringify(file)}`, '/dev/null'], {
    env: { ...baseEnv, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.is(tty.status, 0, tty.stdout);
  assert.match(tty.stdout, /\r\x1b\[2Kimp_[0-9a-z]+ \[[#.]{30}\] \d+\/5002/);
  assert.match(tty.stdout, /completed: 5002 rows, 5000 imported/);

  const s2 = await start(env);
  const call2 = await client(s2);
  assert.is((await call2('GET', `${LEDGER}/orgs/${orgId}/ledgers/${ledgerId}/contacts?view=count`)).body.count, 5_000);
  const imports = (await call2('GET', `${LEDGER}/orgs/${orgId}/ledgers/${ledgerId}/imports`)).body.imports;
  assert.is(imports[0].createdBy, 'cli');
  await stop(s2);
});

C('import and feed from the command line leave webhook deliveries to the server, which makes them with its own configuration', async () => {
  const received: string[] = [];
  const receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d));
    req.on('end', () => {
      received.push(JSON.parse(body).type);
      res.end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  try {
    const { env, s, call, orgId, ledgerId } = await serverWithLedger();
    const url = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
    const hook = await call('POST', `${LEDGER}/orgs/${orgId}/webhooks`, { body: { url, events: ['import.completed', 'contact.job_changed'] } });
    assert.is(hook.status, 201, hook.text);
    await stop(s);
    const dir = tempDir();
    writeFileSync(join(dir, 'one.csv'), 'name,company,linkedin\nAnn Lee,Acme,https://www.linkedin.com/in/ann-lee\n');
    writeFileSync(join(dir, 'moves.jsonl'), '{"linkedin":"https://www.linkedin.com/in/ann-lee","name":"Ann Lee","company":"Globex"}\n');
    // not spawnSync: the receiver in this process must be able to answer, were the commands to call it
    const imported = await runAsync(['import', orgId, ledgerId, join(dir, 'one.csv')], env);
    assert.is(imported.status, 0, imported.stderr);
    const fed = await runAsync(['feed', join(dir, 'moves.jsonl')], env);
    assert.is(fed.status, 0, fed.stderr);
    assert.match(fed.stdout, / 1 job changes/);
    assert.equal(received, [], 'the commands delivered nothing');
    const s2 = await start(env);
    for (const deadline = Date.now() + 20_000; received.length < 2 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 50));
    assert.equal(received.sort(), ['contact.job_changed', 'import.completed'], 'the server delivered both events');
    const deliveries = (await (await client(s2))('GET', `${LEDGER}/orgs/${orgId}/webhooks/${hook.body.id}/deliveries`)).body.deliveries;
    assert.equal(deliveries.map((d: { attempts: number }) => d.attempts), [1, 1], 'each delivered at its first attempt');
    await stop(s2);
  } finally {
    receiver.close();
  }
});

C('SIGTERM with a download in flight: new connections refused, the download completes, exit 0 (D6)', async () => {
  const { data, env, s, call, orgId, ledgerId, base } = await serverWithLedger();
  const importId = (await call('POST', `${base}/imports`, { raw: csvForm(csv(30_000)) })).body.id;
  await jobEnd(call, `${base}/imports/${importId}`);
  const token = (await request(`http://127.0.0.1:${s.port}`, 'POST', `${ID}/session`, { body: { grantType: 'password', email: EMAIL, password: PASSWORD } })).body.accessToken;

  // A download of ~3 MB that we do not read yet: it stays in flight (socket buffers are smaller).
  const download = await new Promise<import('node:http').IncomingMessage>((resolve, reject) =>
    http.get({ host: '127.0.0.1', port: s.port, path: `${base}/contacts/download`, headers: { authorization: `Bearer ${token}` } }, resolve).on('error', reject),
  );
  assert.is(download.statusCode, 200);
  download.pause();
  s.child.kill('SIGTERM');
  // New connections are refused once the listener closed.
  let refused = false;
  for (let i = 0; i < 100 && !refused; i++) {
    refused = await fetch(`http://127.0.0.1:${s.port}/healthz`).then(() => false, () => true);
    if (!refused) await new Promise((r) => setTimeout(r, 20));
  }
  assert.ok(refused, 'new connections are refused during the drain');
  let body = '';
  download.setEncoding('utf8');
  download.on('data', (d: string) => (body += d));
  download.resume();
  await new Promise((r) => download.on('end', r));
  assert.is(body.trim().split('\n').length, 30_001, 'the in-flight download completed');
  assert.is(await s.exit, 0, s.stderr().slice(-2000));
  running.delete(s);
  assert.match(s.stdout(), /"msg":"shutting down".*"msg":"stopped"/s);
  assert.is(statSync(join(data, 'contact-ledger.db-wal'), { throwIfNoEntry: false })?.size ?? 0, 0, 'WAL checkpointed');
  assert.not.ok(existsSync(join(data, 'contact-ledger.lock')), 'lock released');
});

C('HTTPS with TLS_CERT and TLS_KEY', async () => {
  const dir = tempDir();
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=127.0.0.1'], { stdio: 'ignore' });
  const s = await start({ CONTACT_LEDGER_DATA: join(dir, 'data'), CONTACT_LEDGER_ADMIN_EMAIL: EMAIL, CONTACT_LEDGER_ADMIN_PASSWORD: PASSWORD, TLS_CERT: cert, TLS_KEY: key });
  const res = await new Promise<{ status: number; hsts: string | undefined; body: string }>((resolve, reject) => {
    https
      .get({ host: '127.0.0.1', port: s.port, path: '/readyz', ca: readFileSync(cert), checkServerIdentity: () => undefined }, (r) => {
        let body = '';
        r.on('data', (d: Buffer) => (body += d));
        r.on('end', () => resolve({ status: r.statusCode!, hsts: r.headers['strict-transport-security'] as string | undefined, body }));
      })
      .on('error', reject);
  });
  assert.is(res.status, 200, res.body);
  assert.is(res.hsts, 'max-age=31536000');
  assert.match(s.stdout(), /"https":true/);
  // Plain HTTP on the HTTPS port gets no API answer.
  const plain = await fetch(`http://127.0.0.1:${s.port}/readyz`).then((r) => r.status, () => 'refused');
  assert.ok(plain !== 200);
  await stop(s);
  const missing = run(['serve'], { CONTACT_LEDGER_DATA: join(dir, 'data'), PORT: '0', TLS_CERT: join(dir, 'nope.pem'), TLS_KEY: key });
  assert.is(missing.status, 2);
  assert.match(missing.stderr, /TLS_CERT: cannot read .*nope\.pem/);
  writeFileSync(join(dir, 'garbage.pem'), 'not a certificate');
  const garbage = run(['serve'], { CONTACT_LEDGER_DATA: join(dir, 'data'), PORT: '0', TLS_CERT: join(dir, 'garbage.pem'), TLS_KEY: key });
  assert.is(garbage.status, 1);
  assert.match(garbage.stderr, /TLS_CERT \/ TLS_KEY cannot be used/);
});

C.run();
