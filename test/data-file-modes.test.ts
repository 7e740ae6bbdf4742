// The owner-only rule of the data folder (docs/operations.md, the data folder): every file the
// program writes there holds its users' data and is readable by the service user alone (0600),
// whatever the umask — uploads, feed files, the inbox's result and reason files, daily change sets,
// the copies the `import` and `feed` commands carry in — as the database, backups and keys are.
// Each case runs with umask 000, where a file made without a mode of its own is 0666.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync, existsSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { ManualClock } from '../src/clock.ts';
import { INBOX_TASK } from '../src/tracking/feed-files.ts';
import { cli, runAsync } from './operator-helpers.ts';
import {
  addContacts,
  contactsCsv,
  createLedger,
  csvForm,
  expectStatus,
  feedAndWait,
  holdBulkJobs,
  LEDGER,
  ledgerPath,
  seedWorld,
  signInRoot,
  startApp,
  tempDir,
  until,
  waitForImport,
  type TestApp,
} from './helpers.ts';

const M = suite('owner-only files in the data folder');

const mode = (file: string) => (statSync(file).mode & 0o777).toString(8);

/** Every file under `dir`, recursively (paths). */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name));
}

/** Runs `fn` with umask 000 (this process and the children it starts meanwhile). */
async function withUmask0<T>(fn: () => Promise<T>): Promise<T> {
  const before = process.umask(0);
  try {
    return await fn();
  } finally {
    process.umask(before);
  }
}

/**
 * The modes of the files seen under `dirs` while `work` runs (looked at on every turn of the event
 * loop: files a command copies in live only while its job runs), by path relative to `root`.
 */
async function modesWhile(root: string, dirs: string[], work: Promise<unknown>): Promise<Map<string, Set<string>>> {
  const seen = new Map<string, Set<string>>();
  let done = false;
  const finished = work.finally(() => (done = true));
  const look = () => {
    for (const file of dirs.flatMap(filesUnder)) {
      try {
        const m = mode(file);
        const key = relative(root, file);
        if (!seen.has(key)) seen.set(key, new Set());
        seen.get(key)!.add(m);
      } catch {
        // gone meanwhile
      }
    }
  };
  while (!done) {
    look();
    await new Promise((r) => setImmediate(r));
  }
  await finished;
  return seen;
}

M('the server: a CSV upload, an API feed, the inbox outcome files, daily change sets, and everything else it writes are 0600 whatever the umask', async () => {
  await withUmask0(async () => {
    const t = await startApp({ withoutTasks: [INBOX_TASK] });
    try {
      const w = await seedWorld(t);
      const ledgerId = await createLedger(t, w.tokens.editor, w.orgId, 'modes');
      const people = Array.from({ length: 3 }, (_, i) => ({ name: `Mode ${i}`, company: 'Old Co', linkedin: `linkedin.com/in/mode-${i}`, referenceId: `m${i}` }));
      await addContacts(t, w.tokens.editor, w.orgId, ledgerId, people);

      // held between chunks, the jobs keep their files in uploads/ and feeds/ to be looked at
      const hold = holdBulkJobs(t);
      let importId: string;
      let feedId: string;
      try {
        const up = await t.call('POST', `${ledgerPath(w.orgId, ledgerId)}/imports`, { token: w.tokens.editor, raw: csvForm(contactsCsv(5)) });
        expectStatus(up, 202, 'upload');
        importId = up.body.id;
        const fed = await t.call('POST', `${LEDGER}/feed`, { token: w.root, raw: '{"name":"Feed One","company":"Acme"}\n', headers: { 'content-type': 'application/x-ndjson' } });
        expectStatus(fed, 202, 'feed');
        feedId = fed.body.id;
        const upload = join(t.dataDir, 'uploads', `${importId}.csv`);
        assert.ok(existsSync(upload), 'the upload waits for its job in uploads/');
        assert.is(mode(upload), '600', 'uploads/imp_*.csv (streamed to disk by formidable)');
        const feedFiles = filesUnder(join(t.dataDir, 'feeds')).filter((f) => f.includes(feedId));
        assert.is(feedFiles.length, 1, 'the feed waits for its job in feeds/');
        assert.is(mode(feedFiles[0]!), '600', 'feeds/feed_*');
      } finally {
        await hold.release();
      }
      assert.is((await waitForImport(t, w.tokens.editor, w.orgId, ledgerId, importId)).status, 'completed');

      // the inbox: a feed file and a file that is not one, as an operator drops them
      const inbox = join(t.dataDir, 'inbox');
      const old = new Date(Date.now() - 10_000);
      for (const [name, body] of [['good.jsonl', '{"name":"Kim Ode","company":"Vandelay"}\n'], ['notes.txt', 'hello']] as const) {
        writeFileSync(join(inbox, name), body, { mode: 0o600 });
        utimesSync(join(inbox, name), old, old);
      }
      await t.rt.tracking.feeds.scanInbox(); // the first look
      await t.rt.tracking.feeds.scanInbox(); // unchanged since: taken
      await until('the inbox file is done', () => existsSync(join(inbox, 'done', 'good.jsonl')));
      assert.is(mode(join(inbox, 'done', 'good.jsonl.result.txt')), '600', 'inbox/done/*.result.txt');
      assert.is(mode(join(inbox, 'failed', 'notes.txt.reason.txt')), '600', 'inbox/failed/*.reason.txt');

      // a daily change set: a job change of a tracked contact, and the day's files under exports/
      await feedAndWait(t, (await signInRoot(t)).accessToken, '{"linkedin":"linkedin.com/in/mode-0","name":"Mode 0","company":"New Co"}\n');
      const day = new Date((t.clock as ManualClock).now()).toISOString().slice(0, 10).replace(/-/g, '');
      const sets = await t.rt.tracking.dailySets.generate(day);
      assert.ok(sets.some((s) => s.ledgerId === ledgerId), 'a change set was written');
      const exported = filesUnder(join(t.dataDir, 'exports'));
      assert.ok(exported.length > 0, 'files under exports/');
      for (const f of exported) assert.is(mode(f), '600', relative(t.dataDir, f));

      // and every other file of the folder: the database and its -wal and -shm, the lock, the keys…
      // (the native library is code, owner-only as well: 0700; the files dropped into the inbox
      // were the test's own, 0600)
      const all = filesUnder(t.dataDir);
      for (const name of ['contact-ledger.db', 'contact-ledger.db-wal', 'contact-ledger.db-shm', 'contact-ledger.lock']) assert.ok(all.includes(join(t.dataDir, name)), name);
      const wrong = all.filter((f) => !relative(t.dataDir, f).startsWith('native/') && mode(f) !== '600').map((f) => `${relative(t.dataDir, f)} ${mode(f)}`);
      assert.equal(wrong, [], 'every file in the data folder is 0600');
      for (const d of readdirSync(t.dataDir, { withFileTypes: true, recursive: true }).filter((e) => e.isDirectory())) {
        assert.is(mode(join(d.parentPath, d.name)), '700', relative(t.dataDir, join(d.parentPath, d.name)));
      }
    } finally {
      await t.close();
    }
  });
});

/** A data folder with an organization and a ledger, no process holding it. */
async function dataFolderWithLedger(): Promise<{ dataDir: string; orgId: string; ledgerId: string }> {
  const t = await startApp({ noScheduler: true });
  try {
    const root = (await signInRoot(t)).accessToken;
    const org = await t.call('POST', '/api/identity/v1/orgs', { token: root, body: { name: 'Modes' } });
    expectStatus(org, 201, 'org');
    return { dataDir: t.dataDir, orgId: org.body.id, ledgerId: await createLedger(t, root, org.body.id) };
  } finally {
    await t.close();
  }
}

/** The operator's files, outside the data folder, with the mode a tester's had (0644). */
function operatorFile(name: string, body: string): string {
  const file = join(tempDir(), name);
  writeFileSync(file, body);
  chmodSync(file, 0o644);
  return file;
}

M('the import and feed commands (server stopped) carry the operator\'s file in as 0600, not with its mode', async () => {
  const { dataDir, orgId, ledgerId } = await dataFolderWithLedger();
  const env = { CONTACT_LEDGER_DATA: dataDir };
  const csvFile = operatorFile('contacts.csv', contactsCsv(2_000));
  const people = Array.from({ length: 2_000 }, (_, i) => JSON.stringify({ name: `Person ${i}`, company: `Co ${i % 97}` })).join('\n');
  const feedFile = operatorFile('people.jsonl', `${people}\n`);
  await withUmask0(async () => {
    let result: Awaited<ReturnType<typeof cli>> | undefined;
    const imported = await modesWhile(dataDir, [join(dataDir, 'uploads')], cli(['import', orgId, ledgerId, csvFile], env).then((r) => (result = r)));
    assert.is(result!.status, 0, result!.stderr);
    assert.ok([...imported.keys()].some((f) => /^uploads\/imp_\w+\.csv$/.test(f)), `the copy was seen in uploads/ while the import ran: ${[...imported.keys()].join(', ')}`);
    for (const [file, modes] of imported) assert.equal([...modes], ['600'], file);

    const fed = await modesWhile(dataDir, [join(dataDir, 'feeds')], cli(['feed', feedFile], env).then((r) => (result = r)));
    assert.is(result!.status, 0, result!.stderr);
    assert.ok([...fed.keys()].some((f) => /^feeds\/feed_\w+\.ndjson$/.test(f)), `the copy was seen in feeds/ while the feed ran: ${[...fed.keys()].join(', ')}`);
    for (const [file, modes] of fed) assert.equal([...modes], ['600'], file);
  });
});

M('the feed command hands a running server its copy as 0600, and the inbox files it with a 0600 result', async () => {
  const feedFile = operatorFile('handed.jsonl', '{"name":"Handed Over","company":"Acme"}\n');
  await withUmask0(async () => {
    const t: TestApp = await startApp(); // holds the data folder, its inbox polled every 2 s
    try {
      const r = await runAsync(['feed', feedFile], { CONTACT_LEDGER_DATA: t.dataDir }); // a child, with this umask
      assert.is(r.status, 0, r.stderr);
      const name = /handed handed\.jsonl to its inbox as (\S+)/.exec(r.stderr)?.[1];
      assert.ok(name, r.stderr);
      const done = join(t.dataDir, 'inbox', 'done', name!);
      assert.is(mode(done), '600', 'the copy the command put into the inbox');
      assert.is(mode(`${done}.result.txt`), '600', 'its counts beside it');
    } finally {
      await t.close();
    }
  });
});

M.run();
