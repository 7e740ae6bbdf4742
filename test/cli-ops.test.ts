// The operator's commands as child processes on real files: init, user, migrate, import with
// progress, feed, shutdown with a download in flight, HTTPS, and every kind of bad input ending
// with a clear message, the right exit code and no damage to existing data. Backup and restore:
// test/cli-backup.test.ts.
import * as assert from 'uvu/assert';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import http from 'node:http';
import https from 'node:https';
import { join } from 'node:path';
import { csvForm, ID, LEDGER, request, tempDir, withSmallDisk } from './helpers.ts';
import { openDb } from '../src/storage/db.ts';
import { loadMigrations, migrate } from '../src/storage/migrate.ts';
import { paths } from '../src/paths.ts';
import { baseEnv, MAIN } from './child-server.ts';
import { EMAIL, PASSWORD, COMMANDS, cli, run, runAsync, sha, csv, client, ended, operatorSuite, start, stop, jobEnd, serverWithLedger } from './operator-helpers.ts';

const C = operatorSuite('operator commands');

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
    ['compact', 'now'],
    ['backup', '--frobnicate', 'x.db'],
    ['version', 'extra', '--nope'],
    // names are one line, as through the API (a review's case: the CLI stored ESC and line breaks)
    ['user', 'add', '--email', 'a@b.test', '--password', 'long enough pw', '--name', 'Ed\u001b[31m'],
    ['init', '--email', 'a@b.test', '--password', 'long enough pw', '--org', 'Two\nLines'],
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
  assert.is(again.status, 2, 'run again it fails again (it was 1)');
  assert.match(again.stderr, /already set up/);
  assert.is((await cli(['user', 'add', '--email', 'ed@example.com', '--password', 'editor passphrase', '--name', 'Ed'], env)).status, 0);
  // a password the policy refuses is a bad argument, named as such (init named it CONTACT_LEDGER_ADMIN_PASSWORD: a tester's case)
  const weak = await cli(['user', 'add', '--email', 'weak@example.com', '--password', 'short'], env);
  assert.is(weak.status, 2);
  assert.match(weak.stderr, /--password must be at least 8 characters/);
  const weakInit = await cli(['init', '--email', 'first@example.com', '--password', 'password1'], { CONTACT_LEDGER_DATA: tempDir() });
  assert.is(weakInit.status, 2);
  assert.match(weakInit.stderr, /--password is one of the most common passwords/);
  assert.not.match(weakInit.stderr, /CONTACT_LEDGER_ADMIN_PASSWORD/);
  // the same for --email (it was named CONTACT_LEDGER_ADMIN_EMAIL: an operator tester's case), by a new account's rules
  for (const bad of ['notanemail', 'ann@1.2.3.4']) {
    const wrongInit = await cli(['init', '--email', bad, '--password', PASSWORD], { CONTACT_LEDGER_DATA: tempDir() });
    assert.is(wrongInit.status, 2, wrongInit.stderr);
    assert.match(wrongInit.stderr, new RegExp(`--email must be an e-mail address, got "${bad.replace(/\./g, '\\.')}"`));
    assert.not.match(wrongInit.stderr, /CONTACT_LEDGER_ADMIN_EMAIL/);
  }
  // the account's own identifiers are no password, a bad argument too: its name as given, and its stored name for passwd
  const named = await cli(['user', 'add', '--email', 'mina@example.com', '--name', 'Mina Murray Harker', '--password', 'mina murray harker'], env);
  assert.is(named.status, 2, named.stderr);
  assert.match(named.stderr, /--password is the account's e-mail address or name/);
  assert.is((await cli(['user', 'add', '--email', 'lucy@example.com', '--name', 'Lucy Westenra', '--password', 'a long passphrase'], env)).status, 0);
  const ownName = await cli(['user', 'passwd', '--email', 'lucy@example.com', '--password', 'Lucy Westenra'], env);
  assert.is(ownName.status, 2, ownName.stderr);
  assert.match(ownName.stderr, /--password is the account's e-mail address or name/);
  const notEmail = await cli(['user', 'add', '--email', 'not an email', '--password', 'editor passphrase'], env);
  assert.is(notEmail.status, 2, notEmail.stderr);
  assert.match(notEmail.stderr, /--email must be an e-mail address/);
  const dup = await cli(['user', 'add', '--email', 'ED@example.com', '--password', 'editor passphrase'], env);
  assert.is(dup.status, 2, 'the same command cannot succeed');
  assert.match(dup.stderr, /a user with the e-mail ed@example\.com already exists; to set their password: contact-ledger user passwd --email ed@example\.com/);
  const missing = await cli(['user', 'passwd', '--email', 'nobody@example.com', '--password', 'whatever long'], env);
  assert.is(missing.status, 2);
  assert.match(missing.stderr, /no user has the e-mail nobody@example\.com; to add one: contact-ledger user add/);
  assert.match((await cli(['migrate'], env)).stdout, /up to date \(schema version \d+\)/);
  // a folder without a database is a wrong path, not a new installation (a tester's case: one was made)
  const nowhere = join(tempDir(), 'typo');
  const wrongPath = await cli(['migrate'], { ...env, CONTACT_LEDGER_DATA: nowhere });
  assert.is(wrongPath.status, 2, `a wrong folder is exit 2, as for every command: ${wrongPath.stderr}`);
  assert.match(wrongPath.stderr, /there is no database in .*typo \(set CONTACT_LEDGER_DATA or --data\); a new installation is made by serve or init/);
  assert.not.ok(existsSync(join(nowhere, 'contact-ledger.db')), 'no database made');
  // a restore killed between moving the database aside and renaming its copy in: told to restore again
  const halfRestored = tempDir();
  writeFileSync(join(halfRestored, '.contact-ledger.db.restoring'), readFileSync(join(data, 'contact-ledger.db')));
  const interrupted = await cli(['migrate'], { ...env, CONTACT_LEDGER_DATA: halfRestored });
  assert.is(interrupted.status, 1, interrupted.stderr);
  assert.match(interrupted.stderr, /a restore was interrupted: .*Run `contact-ledger restore <backup file>` again/);

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

C('compact rewrites the database without its free pages: no value deleted before secure_delete stays in the file; refused while a server runs', async () => {
  const data = tempDir();
  const env = { CONTACT_LEDGER_DATA: data };
  assert.is(run(['init', '--email', EMAIL, '--password', '-'], env, `${PASSWORD}\n`).status, 0);
  const file = join(data, 'contact-ledger.db');
  // as a version before secure_delete left a deletion: the values in the file's free space and pages
  const marker = `erased-${Date.now()}-`;
  const old = new Database(file);
  old.pragma('secure_delete = OFF');
  const put = old.prepare('INSERT INTO settings (key, value) VALUES (?, ?)');
  old.transaction(() => {
    for (let i = 0; i < 200; i++) put.run(`${marker}${i}`, marker.repeat(200));
  })();
  old.prepare('DELETE FROM settings WHERE key LIKE ?').run(`${marker}%`);
  old.pragma('wal_checkpoint(TRUNCATE)');
  old.close();
  assert.ok(readFileSync(file).includes(marker), 'the deleted values are still in the file (the case compact is for)');
  const before = statSync(file).size;

  const s = await start(env);
  const busy = await cli(['compact'], env);
  assert.is(busy.status, 1);
  assert.match(busy.stderr, /a contact-ledger server or command \(pid \d+\) is using the data folder .*stop it before compacting/);
  await stop(s);

  // a disk without room for the rewrite: said where and how much, nothing changed
  const small = tempDir();
  await withSmallDisk(small, '6m', async () => {
    const tight = { CONTACT_LEDGER_DATA: join(small, 'data') };
    assert.is(run(['init', '--email', EMAIL, '--password', '-'], tight, `${PASSWORD}\n`).status, 0);
    const db = new Database(join(small, 'data', 'contact-ledger.db'));
    db.prepare("INSERT INTO settings (key, value) VALUES ('filler', ?)").run('x'.repeat(1_500_000));
    db.close();
    // leave less room than the database takes
    const room = Number(spawnSync('df', ['--output=avail', '-B1', small], { encoding: 'utf8' }).stdout.trim().split('\n')[1]);
    writeFileSync(join(small, 'filler'), Buffer.alloc(Math.max(0, room - 200_000)));
    const full = run(['compact'], tight);
    assert.is(full.status, 1, full.stdout + full.stderr);
    assert.match(full.stderr, /contact-ledger compact: not enough disk space; nothing was changed\. It needs about \d+\.\d MiB free in the temporary folder \(.*; SQLITE_TMPDIR chooses another\) and as much beside the database \(.*data: 0\.\d MiB free\)/);
    const after = new Database(join(small, 'data', 'contact-ledger.db'), { readonly: true });
    assert.is((after.prepare("SELECT length(value) FROM settings WHERE key = 'filler'").pluck().get() as number), 1_500_000, 'the database as it was');
    const live = ((after.pragma('page_count', { simple: true }) as number) - (after.pragma('freelist_count', { simple: true }) as number)) * 4096;
    after.close();
    // room for the database's pages, not for the -wal's frame headers beside them: the rewrite fails
    // on its way back; the message gives the room there was before it (it gave what the grown -wal
    // left), and the -wal is given back (an operator tester's case)
    rmSync(join(small, 'filler'));
    const free = () => Number(spawnSync('df', ['--output=avail', '-B1', small], { encoding: 'utf8' }).stdout.trim().split('\n')[1]);
    writeFileSync(join(small, 'filler'), Buffer.alloc(Math.max(0, free() - live - 8192)));
    const roomBefore = free();
    const late = run(['compact'], tight);
    assert.is(late.status, 1, late.stdout + late.stderr);
    const said = /beside the database \(.*data: (\d+\.\d) MiB free\)/.exec(late.stderr);
    assert.ok(said, late.stderr);
    assert.is(said![1], (roomBefore / 1024 ** 2).toFixed(1), `the room before the attempt: ${late.stderr}`);
    assert.is(statSync(join(small, 'data', 'contact-ledger.db-wal'), { throwIfNoEntry: false })?.size ?? 0, 0, 'the -wal given back');
    assert.ok(free() >= roomBefore - 64 * 1024, 'the disk has its room back');
  });

  const done = await cli(['compact'], env);
  assert.is(done.status, 0, done.stderr);
  const said = /^compacted .*contact-ledger\.db: (\d+\.\d) MiB → (\d+\.\d) MiB, rewritten whole \(\d+ free pages dropped, (\d+\.\d) MiB; pages in use packed, (\d+\.\d) MiB; no deleted value is left in unused space\)\n$/.exec(done.stdout);
  assert.ok(said, done.stdout);
  // the shrink is the two parts said (an operator tester read a count of free pages against the shrink as wrong)
  const [from, to, free, packed] = said!.slice(1).map(Number) as [number, number, number, number];
  assert.ok(Math.abs(from - to - free - packed) <= 0.2, done.stdout);
  assert.not.ok(readFileSync(file).includes(marker), 'no deleted value is left in the file');
  assert.ok(statSync(file).size < before, 'the file shrank');
  assert.is((await cli(['migrate'], env)).status, 0, 'the database opens and checks as before');
  const again = await start(env);
  await client(again); // the superuser signs in
  await stop(again);
  const nowhere = await cli(['compact'], { CONTACT_LEDGER_DATA: join(tempDir(), 'typo') });
  assert.is(nowhere.status, 2);
  assert.match(nowhere.stderr, /there is no database in .*typo/);
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
  const noLedger = await cli(['import', orgId, 'l_nosuchledger', file], env);
  assert.is(noLedger.status, 2, 'the same command cannot succeed');
  assert.match(noLedger.stderr, /contact-ledger import: .*l_nosuchledger/);
  const noOrg = await cli(['import', 'o_nosuchorg', 'l_nosuchledger', file], env);
  assert.is(noOrg.status, 2);
  assert.match(noOrg.stderr, /contact-ledger import: No organization with id o_nosuchorg\./, 'the organization is the one missing');
  // a --mapping that cannot be used is a bad argument (2), not a failure (a tester's case: exit 1)
  for (const mapping of ['{bad', '{"referenceId":"No Such Column"}']) {
    const wrong = await cli(['import', orgId, ledgerId, file, '--mapping', mapping], env);
    assert.is(wrong.status, 2, `${mapping}: ${wrong.stderr}`);
    assert.match(wrong.stderr, /--mapping: /);
  }

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

C('SIGTERM with a download in flight: new connections refused, the download completes, exit 0 (D6); no periodic task starts meanwhile', async () => {
  // a backup every second: none may start once the stop is asked (one did while the last requests drained, and the stop waited for it: an operator tester's case)
  const { data, env, s, call, orgId, ledgerId, base } = await serverWithLedger({ BACKUP_CRON: '* * * * * *', BACKUP_KEEP: '2' });
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
  await new Promise((r) => setTimeout(r, 2500)); // the download held past two backup times
  let body = '';
  download.setEncoding('utf8');
  download.on('data', (d: string) => (body += d));
  download.resume();
  await new Promise((r) => download.on('end', r));
  assert.is(body.trim().split('\n').length, 30_001, 'the in-flight download completed');
  assert.is(await s.exit, 0, s.stderr().slice(-2000));
  ended(s);
  assert.match(s.stdout(), /"msg":"shutting down".*"msg":"stopped"/s);
  const afterStop = s.stdout().slice(s.stdout().indexOf('"msg":"shutting down"'));
  assert.ok(/"msg":"scheduled backup written"/.test(s.stdout().slice(0, s.stdout().indexOf('"msg":"shutting down"'))), 'backups ran before');
  const late = afterStop.match(/"msg":"scheduled backup written"/g)?.length ?? 0;
  assert.ok(late <= 1, `none started after the stop was asked (one already running then may end): ${late}`);
  // six fields: said, the first being seconds (an operator tester's hourly backups at minute 3)
  assert.match(s.stdout(), /"level":"warn".*BACKUP_CRON has six fields: the first is read as seconds/);
  // the admin settings on a start of an installation with users: said unused (an operator tester's case: nothing said), on IPv6 loopback with its hint
  const again = await start({ ...env, BACKUP_CRON: '0 3 * * *', HOST: '::1' });
  assert.match(again.stdout(), /"level":"info".*CONTACT_LEDGER_ADMIN_EMAIL \/ CONTACT_LEDGER_ADMIN_PASSWORD are read on the first start only: this installation has users, so they were not used/);
  assert.not.match(again.stdout(), /six fields/);
  // the next scheduled backup is said at start, in UTC (an operator tester's case: nothing said until the first one)
  const next = new Date();
  next.setUTCHours(3, 0, 0, 0);
  if (next.getTime() <= Date.now()) next.setUTCDate(next.getUTCDate() + 1);
  assert.match(again.stdout(), new RegExp(`"level":"info".*"next":"${next.toISOString().replace(/\./g, '\\.')}".*scheduled backups: the next at ${next.toISOString().replace(/\./g, '\\.')} \\(UTC\\)`));
  assert.match(again.stderr(), /listening on http:\/\/\[::1\]:\d+ \(only this machine/);
  await stop(again);
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
  assert.not.match(s.stdout(), /may be read by every user/, 'a 0600 key is not warned about');
  await stop(s);
  // a key every user of the machine may read starts (Docker secrets are 0444) with a warning naming it (an operator tester's case: silence)
  chmodSync(key, 0o644);
  const open = await start({ CONTACT_LEDGER_DATA: join(dir, 'data'), TLS_CERT: cert, TLS_KEY: key });
  assert.match(open.stdout(), /"level":"warn".*"mode":"644".*TLS_KEY \S+key\.pem may be read by every user of this machine \(mode 644\): chmod 600 it/);
  await stop(open);
  chmodSync(key, 0o640);
  const group = await start({ CONTACT_LEDGER_DATA: join(dir, 'data'), TLS_CERT: cert, TLS_KEY: key });
  assert.not.match(group.stdout(), /may be read by every user/, 'a group may read it (ssl-cert)');
  await stop(group);
  const missing = run(['serve'], { CONTACT_LEDGER_DATA: join(dir, 'data'), PORT: '0', TLS_CERT: join(dir, 'nope.pem'), TLS_KEY: key });
  assert.is(missing.status, 2);
  assert.match(missing.stderr, /TLS_CERT: cannot read .*nope\.pem/);
  // the server reads them, a command does not: a backup from the same environment is taken (an operator's case: exit 2)
  const backup = run(['backup', join(dir, 'with-tls-env.db')], { CONTACT_LEDGER_DATA: join(dir, 'data'), TLS_CERT: join(dir, 'nope.pem'), TLS_KEY: join(dir, 'nope.key') });
  assert.is(backup.status, 0, backup.stderr);
  // what no restart mends is a configuration error (2), which a service manager does not restart on
  writeFileSync(join(dir, 'garbage.pem'), 'not a certificate');
  const garbage = run(['serve'], { CONTACT_LEDGER_DATA: join(dir, 'data'), PORT: '0', TLS_CERT: join(dir, 'garbage.pem'), TLS_KEY: key });
  assert.is(garbage.status, 2, garbage.stderr);
  assert.match(garbage.stderr, /TLS_CERT \/ TLS_KEY cannot be used/);
  const otherKey = join(dir, 'other-key.pem');
  execFileSync('openssl', ['genpkey', '-algorithm', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', otherKey], { stdio: 'ignore' });
  const mismatched = run(['serve'], { CONTACT_LEDGER_DATA: join(dir, 'data'), PORT: '0', TLS_CERT: cert, TLS_KEY: otherKey });
  assert.is(mismatched.status, 2, mismatched.stderr);
  assert.match(mismatched.stderr, /TLS_CERT \/ TLS_KEY cannot be used: TLS_KEY \S+other-key\.pem is not the private key of the certificate in TLS_CERT \S+cert\.pem \(OpenSSL: .*key values mismatch\)/);
  // files given in the wrong places are named in words, not by OpenSSL's decoder alone (an operator tester's case)
  const tlsRefusal = (env: Record<string, string>) => {
    const r = run(['serve'], { CONTACT_LEDGER_DATA: join(dir, 'data'), PORT: '0', ...env });
    assert.is(r.status, 2, r.stderr);
    return r.stderr;
  };
  assert.match(tlsRefusal({ TLS_CERT: cert, TLS_KEY: cert }), /TLS_KEY \S+cert\.pem holds a certificate where its private key belongs \(OpenSSL: /);
  assert.match(tlsRefusal({ TLS_CERT: key, TLS_KEY: cert }), /TLS_CERT holds a private key and TLS_KEY a certificate: swap them/);
  assert.match(tlsRefusal({ TLS_CERT: key, TLS_KEY: key }), /TLS_CERT \S+key\.pem holds a private key where the certificate belongs/);
  const der = join(dir, 'cert.der');
  execFileSync('openssl', ['x509', '-in', cert, '-outform', 'der', '-out', der], { stdio: 'ignore' });
  assert.match(tlsRefusal({ TLS_CERT: der, TLS_KEY: key }), /TLS_CERT \S+cert\.der is no PEM text \(a certificate in DER form converts with: openssl x509 -inform der -in \S+cert\.der -out cert\.pem\)/);
  const locked = join(dir, 'locked-key.pem');
  execFileSync('openssl', ['pkey', '-in', key, '-out', locked, '-aes256', '-passout', 'pass:secret'], { stdio: 'ignore' });
  assert.match(tlsRefusal({ TLS_CERT: cert, TLS_KEY: locked }), /TLS_KEY \S+locked-key\.pem is protected by a passphrase, which the server cannot ask for/);
  const folder = run(['serve'], { CONTACT_LEDGER_DATA: join(dir, 'data'), PORT: '0', TLS_CERT: dir, TLS_KEY: key });
  assert.is(folder.status, 2, folder.stderr);
  assert.match(folder.stderr, /TLS_CERT: cannot read .*: EISDIR/);
  // TLS_KEY_FILE (systemd credentials, Docker secrets) names the key file itself; a key it cannot
  // use is refused without a word of what the file holds (a tester's key went to the journal whole)
  const byFile = await start({ CONTACT_LEDGER_DATA: join(dir, 'data'), TLS_CERT: cert, TLS_KEY_FILE: key });
  assert.match(byFile.stdout(), /"https":true/);
  await stop(byFile);
  const unreadable = run(['serve'], { CONTACT_LEDGER_DATA: join(dir, 'data'), PORT: '0', TLS_CERT: cert, TLS_KEY_FILE: join(dir, 'nope-key.pem') });
  assert.is(unreadable.status, 2);
  assert.match(unreadable.stderr, /TLS_KEY: cannot read .*nope-key\.pem/);
  const wrong = run(['serve'], { CONTACT_LEDGER_DATA: join(dir, 'data'), PORT: '0', TLS_CERT: cert, TLS_KEY_FILE: join(dir, 'garbage.pem') });
  assert.is(wrong.status, 2, wrong.stderr);
  assert.not.match(wrong.stderr + wrong.stdout, /PRIVATE KEY|not a certificate/);
  assert.not.ok((wrong.stderr + wrong.stdout).includes(readFileSync(key, 'utf8').split('\n')[1]!), 'no line of the key');
});

C('the database files at start: an empty file in a used folder and a foreign database are refused untouched, files others may read are made 0600, files this user may not write are exit 2 (an operator tester\'s cases)', async () => {
  const data = tempDir();
  const env = { CONTACT_LEDGER_DATA: data };
  assert.is((await cli(['init', '--email', EMAIL, '--password', PASSWORD], env)).status, 0);
  const file = join(data, 'contact-ledger.db');
  // copied in by hand, open to others: narrowed, with the -wal and -shm SQLite makes in its mode
  chmodSync(file, 0o644);
  const s = await start(env);
  try {
    for (const f of [file, `${file}-wal`, `${file}-shm`]) assert.is(statSync(f).mode & 0o777, 0o600, f);
  } finally {
    await stop(s);
  }
  // cut to 0 bytes: not made a new installation with a new superuser, in a used folder or a new one
  truncateSync(file, 0);
  for (const f of [`${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
  const fresh = tempDir();
  writeFileSync(join(fresh, 'contact-ledger.db'), '', { mode: 0o644 });
  for (const [dir, r] of [[data, await cli(['migrate'], env)], [fresh, await cli(['init', '--email', EMAIL, '--password', PASSWORD], { CONTACT_LEDGER_DATA: fresh })]] as const) {
    assert.is(r.status, 1, r.stderr);
    assert.match(r.stderr, /contact-ledger\.db is empty \(0 bytes\): a database cut short, .*Restore a backup .*delete the empty file/);
    assert.is(statSync(join(dir, 'contact-ledger.db')).size, 0, 'left as it was');
  }
  assert.is(statSync(join(fresh, 'contact-ledger.db')).mode & 0o777, 0o644, 'its mode too');
  // a first start makes its database under another name, whole, and renames it in: it never leaves an empty one
  rmSync(join(fresh, 'contact-ledger.db'));
  writeFileSync(join(fresh, '.contact-ledger.db.new'), 'what a first start stopped halfway left');
  assert.is((await cli(['init', '--email', EMAIL, '--password', PASSWORD], { CONTACT_LEDGER_DATA: fresh })).status, 0);
  assert.not.ok(existsSync(join(fresh, '.contact-ledger.db.new')), 'removed');
  // an SQLite database of something else (0644, in WAL mode: a read-only look makes a -wal and -shm): not migrated in place, left as it was
  const foreignDir = tempDir();
  const foreign = join(foreignDir, 'contact-ledger.db');
  const other = new Database(foreign);
  other.pragma('journal_mode = WAL');
  other.exec('CREATE TABLE foo (x); INSERT INTO foo VALUES (1)');
  other.close();
  chmodSync(foreign, 0o644);
  const before = readFileSync(foreign);
  const adopted = await cli(['migrate'], { CONTACT_LEDGER_DATA: foreignDir });
  assert.is(adopted.status, 1, adopted.stderr);
  assert.match(adopted.stderr, /contact-ledger\.db is an SQLite database but not a contact-ledger one \(no schema version; it has the table foo\); nothing was changed/);
  assert.ok(readFileSync(foreign).equals(before), 'the file as it was');
  assert.is(statSync(foreign).mode & 0o777, 0o644, 'its mode too');
  assert.equal(readdirSync(foreignDir), ['contact-ledger.db', 'contact-ledger.lock.db'], 'no -wal or -shm left (the kernel\'s lock file stays: docs/operations.md)');
  // a database this user may not write (put there by root, or read-only): exit 2, which systemd does not restart, naming the file
  const asRoot = process.getuid?.() === 0;
  const closed = tempDir();
  assert.is((await cli(['init', '--email', EMAIL, '--password', PASSWORD], { CONTACT_LEDGER_DATA: closed })).status, 0);
  if (asRoot) chownSync(closed, 65534, 65534); // the folder the service user's, the database root's
  else chmodSync(join(closed, 'contact-ledger.db'), 0o400);
  const denied = spawnSync(process.execPath, [MAIN, 'migrate'], { env: { ...baseEnv, CONTACT_LEDGER_DATA: closed, HOME: closed }, encoding: 'utf8', timeout: 60_000, ...(asRoot ? { uid: 65534, gid: 65534 } : {}) });
  assert.is(denied.status, 2, denied.stderr);
  assert.match(denied.stderr, /cannot read and write .*contact-ledger\.db \(EACCES; it belongs to uid \d+, mode [46]00\): run contact-ledger as the user that owns the data folder/);
  if (!asRoot) return;
  // the database the service user's, the signing keys' folder root's: the same, for the keys' lock
  chownSync(join(closed, 'contact-ledger.db'), 65534, 65534);
  const keys = spawnSync(process.execPath, [MAIN, 'keys', 'rotate'], { env: { ...baseEnv, CONTACT_LEDGER_DATA: closed, HOME: closed }, encoding: 'utf8', timeout: 60_000, uid: 65534, gid: 65534 });
  assert.is(keys.status, 2, keys.stderr);
  assert.match(keys.stderr, /cannot create .*secrets\/jwt-keys\.json\.lock \(EACCES\): run contact-ledger as the user that owns the data folder/);
  // the key file itself root's (its folder the service user's): the same, not "is not valid JSON"
  chownSync(join(closed, 'secrets'), 65534, 65534);
  const keyFile = spawnSync(process.execPath, [MAIN, 'keys', 'rotate'], { env: { ...baseEnv, CONTACT_LEDGER_DATA: closed, HOME: closed }, encoding: 'utf8', timeout: 60_000, uid: 65534, gid: 65534 });
  assert.is(keyFile.status, 2, keyFile.stderr);
  assert.match(keyFile.stderr, /cannot read .*secrets\/jwt-keys\.json \(EACCES\): run contact-ledger as the user that owns the data folder/);
});

C('an account left in its old form beside one of its usual form (migrations 0040, 0046) cannot sign in: the start names it (and says when no superuser can), `user passwd` by its form refuses and by the usual form names it (a reviewer\'s and an upgrade tester\'s cases)', async () => {
  const data = tempDir();
  const env = { CONTACT_LEDGER_DATA: data };
  assert.is((await cli(['init', '--email', EMAIL, '--password', PASSWORD], env)).status, 0);
  assert.is((await cli(['user', 'add', '--email', 'bob@x.test', '--password', 'bob passphrase 1'], env)).status, 0);
  const raw = new Database(join(data, 'contact-ledger.db'));
  raw.prepare("INSERT INTO users (id, email, name, password_hash, superuser, created_at, updated_at) VALUES ('u_leftover', ?, '', 'x', 1, 1, 1)").run('\uff42\uff4f\uff42@x.test'); // ｂｏｂ, as 0046 leaves it, a superuser
  raw.close();
  const refused = run(['user', 'passwd', '--email', '\uff42\uff4f\uff42@x.test', '--password', 'new passphrase 1'], env);
  assert.is(refused.status, 1, refused.stderr);
  assert.match(refused.stderr, /u_leftover \(ｂｏｂ@x\.test, a superuser\) is stored in an older form of bob@x\.test and cannot sign in: sign-in finds u_\w+ \(bob@x\.test\)\. To set that account's password, give --email bob@x\.test; a superuser is needed: make one with contact-ledger user add --superuser/);
  assert.match(refused.stderr, /"users":\["u_leftover"\],"superusers":\["u_leftover"\].*cannot sign in/, 'the start names it');
  assert.not.match(refused.stderr, /no superuser can sign in/, 'the one made by init can');
  const usual = run(['user', 'passwd', '--email', 'BOB@x.test', '--password', 'new passphrase 1'], env);
  assert.is(usual.status, 0, usual.stderr);
  assert.match(usual.stdout, /set the password of bob@x\.test; their sessions have ended/);
  assert.match(usual.stderr, /note: u_leftover \(ｂｏｂ@x\.test, a superuser\) is stored in an older form of this address and cannot sign in/);
  const byId = await cli(['user', 'passwd', '--id', 'u_leftover', '--password', 'leftover passphrase 1'], env);
  assert.is(byId.status, 0, byId.stderr);
  // it cannot sign in, whatever its password: sign-in under the address is the usual account's alone (a look-alike an admin made would otherwise get in)
  const s = await start(env);
  try {
    const base = `http://127.0.0.1:${s.port}`;
    const signIn = async (email: string, password: string) => request(base, 'POST', `${ID}/session`, { body: { grantType: 'password', email, password } });
    for (const email of ['bob@x.test', '\uff42\uff4f\uff42@x.test']) {
      assert.is((await signIn(email, 'leftover passphrase 1')).status, 401, email);
      assert.is((await signIn(email, 'new passphrase 1')).status, 200, email);
    }
  } finally {
    await stop(s);
  }
  // as 0040 leaves one: stored decomposed (not NFC) beside the composed account
  assert.is((await cli(['user', 'add', '--email', 'j\u00f6rg@x.test', '--password', 'joerg passphrase 1'], env)).status, 0);
  const again = new Database(join(data, 'contact-ledger.db'));
  again.prepare("INSERT INTO users (id, email, name, password_hash, created_at, updated_at) VALUES ('u_decomposed', ?, '', 'x', 1, 1)").run('jo\u0308rg@x.test');
  again.close();
  const decomposed = await cli(['user', 'passwd', '--email', 'jo\u0308rg@x.test', '--password', 'new passphrase 1'], env);
  assert.is(decomposed.status, 1, decomposed.stderr);
  assert.match(decomposed.stderr, /u_decomposed \(.*\) is stored in an older form of jörg@x\.test and cannot sign in/);
  // the only superusers in older forms: said as an error at start
  const alone = tempDir();
  assert.is((await cli(['init', '--email', 'root@example.com', '--password', PASSWORD], { CONTACT_LEDGER_DATA: alone })).status, 0);
  const db = new Database(join(alone, 'contact-ledger.db'));
  db.prepare("UPDATE users SET superuser = 0").run();
  db.prepare("INSERT INTO users (id, email, name, password_hash, superuser, created_at, updated_at) VALUES ('u_oldroot', ?, '', 'x', 1, 1, 1)").run('\uff52\uff4f\uff4f\uff54@example.com');
  db.close();
  const locked = run(['user', 'passwd', '--email', 'root@example.com', '--password', 'new passphrase 1'], { CONTACT_LEDGER_DATA: alone });
  assert.is(locked.status, 0, locked.stderr);
  assert.match(locked.stderr, /no superuser can sign in: every one is stored in an older form .*user add --email <e-mail> --password - --superuser/);
});

C('a command that opens an older database migrates it and says so, with the copy to go back to, also when it then refuses (an upgrade tester\'s case: unsaid)', async () => {
  const data = tempDir();
  const old = openDb(join(data, 'contact-ledger.db'));
  const migrations = loadMigrations(paths.migrations);
  migrate(old, migrations.slice(0, -1));
  old.close();
  const refused = await cli(['user', 'passwd', '--email', 'nobody@example.com', '--password', 'some passphrase 1'], { CONTACT_LEDGER_DATA: data });
  assert.is(refused.status, 2, refused.stderr); // no such user: the same command cannot succeed
  assert.match(refused.stderr, new RegExp(`contact-ledger: applied 1 migration \\(${migrations.at(-1)!.name}\\); schema version ${migrations.at(-1)!.version}\n`));
  assert.match(refused.stderr, /contact-ledger: the database as it was is in .*backups\/pre-migrate-v\d+-\d{8}T\d{9}Z\.db\n/);
  assert.match(refused.stderr, /no user has the e-mail nobody@example\.com/);
  const again = await cli(['compact'], { CONTACT_LEDGER_DATA: data });
  assert.is(again.status, 0, again.stderr);
  assert.not.match(again.stderr, /applied/, 'said once, when it happened');
  // said as soon as it is done: also when the start fails after (a reviewer's case: a damaged key file, the database migrated unsaid)
  const broken = tempDir();
  const older = openDb(join(broken, 'contact-ledger.db'));
  migrate(older, migrations.slice(0, -1));
  older.close();
  mkdirSync(join(broken, 'secrets'), { mode: 0o700 });
  writeFileSync(join(broken, 'secrets', 'jwt-keys.json'), '{', { mode: 0o600 });
  const failed = await cli(['user', 'passwd', '--email', 'nobody@example.com', '--password', 'some passphrase 1'], { CONTACT_LEDGER_DATA: broken });
  assert.is(failed.status, 1, failed.stderr);
  assert.match(failed.stderr, /is not valid JSON/);
  assert.match(failed.stderr, /contact-ledger: applied 1 migration .*\n.*the database as it was is in .*pre-migrate-/);
});

C.run();
