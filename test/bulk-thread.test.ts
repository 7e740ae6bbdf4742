// The bulk thread (src/bulk-thread, RELIABILITY.md L2): imports and feeds run on a connection of
// their own off the event loop; the process's write lock lets a main-thread write in after at most one
// chunk; webhooks changed on the main thread are seen by the next chunk; a thread that dies fails
// its runs (the scheduler retries them) and leaves the lock free.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import Database from 'better-sqlite3';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { ManualClock } from '../src/clock.ts';
import { newId } from '../src/ids.ts';
import { createBulkThread } from '../src/bulk-thread/client.ts';
import { createContactsRepo } from '../src/ledger/contacts-repo.ts';
import { backupsDir } from '../src/runtime.ts';
import { createQueue, LEASE_MS } from '../src/jobs/queue.ts';
import { createLogger } from '../src/log.ts';
import { openDb, storageError } from '../src/storage/db.ts';
import { loadMigrations, migrate } from '../src/storage/migrate.ts';
import { paths } from '../src/paths.ts';
import { LockTimeoutError, WriteLock } from '../src/storage/write-lock.ts';
import { contactsCsv, createLedger, csvForm, expectStatus, holdBulkJobs, LEDGER, ledgerPath, seedWorld, startApp, tempDir, until, uploadCsv, waitForImport, type TestApp, type World } from './helpers.ts';

const L = suite('the write lock');

L('a main-thread writer waits for the thread to let go, and is woken when it does', async () => {
  const lock = new WriteLock();
  const marks = new Int32Array(new SharedArrayBuffer(8)); // [0]: the thread let go
  const holder = new Worker(
    `const { workerData, parentPort } = require('node:worker_threads');
     const [s, marks] = [workerData.lock, workerData.marks];
     Atomics.compareExchange(s, 0, 0, 2); // hold it as the thread does
     parentPort.postMessage('held');
     Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100); // a chunk's worth of work
     Atomics.store(marks, 0, 1);
     Atomics.store(s, 0, 0);
     Atomics.notify(s, 0);`,
    { eval: true, workerData: { lock: lock.shared, marks } },
  );
  await new Promise((resolve) => holder.once('message', resolve));
  lock.acquire('main', 5000);
  assert.is(Atomics.load(marks, 0), 1, 'the main thread got the lock only after the thread let go');
  lock.release('main');
  await new Promise((resolve) => holder.once('exit', resolve));
});

L('a write announced with mainComing waits for the thread without blocking the event loop, and the thread gives way meanwhile', async () => {
  const lock = new WriteLock();
  lock.acquire('thread', 1000); // the bulk thread in the middle of a chunk
  let turns = 0;
  const ticker = setInterval(() => turns++, 1);
  const coming = lock.mainComing(5000);
  let arrived = false;
  void coming.then(() => (arrived = true));
  await new Promise((resolve) => setTimeout(resolve, 60));
  assert.ok(turns > 0, `the event loop went on while the write waited (${turns} turns)`);
  assert.is(arrived, false, 'still waiting for the thread');
  lock.release('thread'); // the chunk commits
  const done = await coming;
  assert.throws(() => lock.acquire('thread', 20), (err: unknown) => err instanceof LockTimeoutError, 'the thread gives way to the announced write');
  lock.acquire('main', 100);
  lock.release('main');
  done();
  lock.acquire('thread', 100);
  lock.release('thread');
  // a thread that never lets go: the announcement ends with LockTimeoutError, and stops holding the thread back
  lock.acquire('thread', 1000);
  let timedOut = false;
  await lock.mainComing(30).catch((err) => (timedOut = err instanceof LockTimeoutError));
  assert.ok(timedOut);
  lock.release('thread');
  lock.acquire('thread', 100);
  lock.release('thread');
  clearInterval(ticker); // (it also kept the process alive: a pending Atomics.waitAsync does not)
});

L('the thread gives way to a waiting main thread; a wait that times out is SQLITE_BUSY (503); an abandoned lock is freed', () => {
  const lock = new WriteLock();
  Atomics.store(lock.shared, 1, 1); // as while the main thread waits in acquire()
  assert.throws(() => lock.acquire('thread', 20), (e: unknown) => e instanceof LockTimeoutError, 'the thread does not take a free lock the main thread waits for');
  Atomics.store(lock.shared, 1, 0);
  lock.acquire('thread', 20);
  let err: unknown;
  try {
    lock.acquire('main', 20);
  } catch (e) {
    err = e;
  }
  assert.instance(err, LockTimeoutError);
  assert.is(storageError(err)?.status, 503);
  lock.releaseAbandoned('thread');
  lock.acquire('main', 20);
  lock.release('main');
});

const T = suite('the bulk thread');

/** How many rows the main thread's connection has written since this call (the thread's writes are not counted). */
/** Uploads a CSV of `rows` generated contacts (202); returns its import's id and a reader of the job as it is now. */
async function startCsvImport(t: TestApp, w: World, ledgerId: string, rows: number): Promise<{ id: string; status: () => Promise<any> }> {
  const up = await t.call('POST', `${ledgerPath(w.orgId, ledgerId)}/imports`, { token: w.tokens.editor, raw: csvForm(contactsCsv(rows)) });
  expectStatus(up, 202);
  const id = up.body.id as string;
  return { id, status: () => t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/imports/${id}`, { token: w.tokens.editor }).then((r) => r.body) };
}

function mainConnectionWrites(t: TestApp): () => number {
  const changes = t.rt.db.raw.prepare('SELECT total_changes()').pluck();
  const before = changes.get() as number;
  return () => (changes.get() as number) - before;
}

/** Rows the main connection writes for one ledger edit of writeUntilEnded's (the edit and its audit entry). */
async function rowsOfAnEdit(t: TestApp, w: World, ledgerId: string): Promise<number> {
  const rows = mainConnectionWrites(t);
  expectStatus(await t.call('PATCH', ledgerPath(w.orgId, ledgerId), { token: w.tokens.editor, body: { description: 'measured edit' } }), 200);
  return rows();
}

/**
 * Writes on the main thread (a ledger edit) until the job `status` reads has ended: each write
 * waits for at most a chunk of the thread, none may get 503. SQLite's busy handler is off on the
 * main connection meanwhile, so a write that met the thread's transaction in SQLite rather than at
 * the process's write lock would fail at once. Returns the job as it ended, and how many writes
 * ran while it was processing.
 */
async function writeUntilEnded(t: TestApp, w: World, ledgerId: string, status: () => Promise<any>): Promise<{ job: any; during: number; edits: number }> {
  let during = 0;
  const busyTimeout = t.rt.db.raw.pragma('busy_timeout', { simple: true });
  t.rt.db.raw.pragma('busy_timeout = 0');
  try {
    for (let i = 0; ; i++) {
      const job = await status();
      if (job.status === 'completed' || job.status === 'failed') return { job, during, edits: i };
      if (job.status === 'processing') during++;
      expectStatus(await t.call('PATCH', ledgerPath(w.orgId, ledgerId), { token: w.tokens.editor, body: { description: `edit ${i}` } }), 200, 'a write while the job runs');
    }
  } finally {
    t.rt.db.raw.pragma(`busy_timeout = ${busyTimeout}`);
  }
}

T('imports write through the thread; main-thread writes meanwhile all succeed; the metric counts every row', async () => {
  const t = await startApp();
  try {
    const w = await seedWorld(t);
    const ledgerId = await createLedger(t, w.tokens.editor, w.orgId, 'threaded');
    const rows = 30_000;
    const perEdit = await rowsOfAnEdit(t, w, ledgerId);
    const mainWrites = mainConnectionWrites(t);
    const imp = await startCsvImport(t, w, ledgerId, rows);
    const { during, edits } = await writeUntilEnded(t, w, ledgerId, imp.status);
    assert.ok(during > 0, 'some writes ran while the import was processing');
    const done = await waitForImport(t, w.tokens.editor, w.orgId, ledgerId, imp.id);
    assert.equal([done.status, done.imported, done.duplicates, done.invalid], ['completed', rows, 0, 0]);
    // the rows went in through the thread's connection, not this one (which wrote the edits; the
    // slower the machine, the more of them)
    assert.ok(mainWrites() - edits * perEdit < rows / 10, 'the main connection did not insert the rows');
    assert.is(t.rt.db.raw.prepare('SELECT count(*) FROM contacts WHERE ledger_id = ?').pluck().get(ledgerId), rows);
    const metrics = (await t.call('GET', '/metrics', { token: w.root })).text;
    assert.match(metrics, new RegExp(`contact_ledger_import_rows_total\\{outcome="imported"\\} ${rows}\\b`));
  } finally {
    await t.close();
  }
});

T('feeds run on the thread too: the records go through its connection, writes meanwhile succeed, the metrics count them', async () => {
  const t = await startApp();
  try {
    const w = await seedWorld(t);
    const ledgerId = await createLedger(t, w.tokens.editor, w.orgId, 'fed');
    const known = 2_000;
    const csv = `name,company,linkedin\n${Array.from({ length: known }, (_, i) => `P ${i},Old ${i},linkedin.com/in/p-${i}`).join('\n')}\n`;
    assert.is((await uploadCsv(t, w.tokens.editor, w.orgId, ledgerId, csv)).imported, known);
    // every known person at a new company, and as many people nobody imported
    const records = Array.from({ length: 2 * known }, (_, i) => JSON.stringify({ linkedin: `linkedin.com/in/p-${i}`, name: `P ${i}`, company: `New ${i}` }));
    const perEdit = await rowsOfAnEdit(t, w, ledgerId);
    const mainWrites = mainConnectionWrites(t);
    const fed = await t.call('POST', `${LEDGER}/feed`, { token: w.root, raw: `${records.join('\n')}\n`, headers: { 'content-type': 'application/x-ndjson' } });
    expectStatus(fed, 202);
    const { job, edits } = await writeUntilEnded(t, w, ledgerId, () => t.call('GET', `${LEDGER}/feed/${fed.body.id}`, { token: w.root }).then((r) => r.body));
    assert.equal([job.status, job.received, job.invalid, job.contactsMatched, job.jobChanges], ['completed', 2 * known, 0, known, known]);
    assert.ok(mainWrites() - edits * perEdit < known / 10, `the main connection did not apply the records (${mainWrites()} rows, ${edits} edits of ${perEdit})`);
    const metrics = (await t.call('GET', '/metrics', { token: w.root })).text;
    assert.match(metrics, new RegExp(`contact_ledger_feed_records_total\\{outcome="applied"\\} ${2 * known}\\b`));
    assert.match(metrics, new RegExp(`contact_ledger_changes_total\\{type="job"\\} ${known}\\b`));
    // the same records again update nobody: unchanged, as the job counts them, not applied (a feed tester's case)
    const again = await t.call('POST', `${LEDGER}/feed`, { token: w.root, raw: `${records.join('\n')}\n`, headers: { 'content-type': 'application/x-ndjson' } });
    expectStatus(again, 202);
    const replayed = await until('the replay ended', () => t.call('GET', `${LEDGER}/feed/${again.body.id}`, { token: w.root }).then((r) => r.body), (b) => b.status === 'completed', 30_000);
    assert.equal([replayed.personsUpdated, replayed.unchanged], [0, 2 * known]);
    const after = (await t.call('GET', '/metrics', { token: w.root })).text;
    assert.match(after, new RegExp(`contact_ledger_feed_records_total\\{outcome="applied"\\} ${2 * known}\\b`));
    assert.match(after, new RegExp(`contact_ledger_feed_records_total\\{outcome="unchanged"\\} ${2 * known}\\b`));
  } finally {
    await t.close();
  }
});

T('a webhook created after the thread started gets the next feed\'s contact.job_changed and the next import.completed', async () => {
  const t = await startApp();
  try {
    const w = await seedWorld(t);
    const ledgerId = await createLedger(t, w.tokens.editor, w.orgId, 'hooked later');
    const importCsv = (name: string) => uploadCsv(t, w.tokens.editor, w.orgId, ledgerId, `name,company,linkedin\n${name},Acme,linkedin.com/in/${name.toLowerCase()}-hooked\n`);
    await importCsv('First'); // the thread runs now, with no webhook anywhere
    const hook = await t.call('POST', `/api/ledger/v1/orgs/${w.orgId}/webhooks`, { token: w.tokens.admin, body: { url: 'https://hooks.example.test/in', events: ['import.completed', 'contact.job_changed'] } });
    expectStatus(hook, 201);
    // a feed first: its chunks, not an import's, must see the new webhook
    const fed = await t.call('POST', `${LEDGER}/feed`, { token: w.root, raw: `${JSON.stringify({ linkedin: 'linkedin.com/in/first-hooked', name: 'First', company: 'Globex' })}\n`, headers: { 'content-type': 'application/x-ndjson' } });
    expectStatus(fed, 202);
    const job = await until('the feed done', () => t.call('GET', `${LEDGER}/feed/${fed.body.id}`, { token: w.root }).then((r) => r.body), (f) => f.status === 'completed' || f.status === 'failed');
    assert.equal([job.status, job.jobChanges], ['completed', 1]);
    const second = await importCsv('Second');
    const deliveries = (await t.call('GET', `/api/ledger/v1/orgs/${w.orgId}/webhooks/${hook.body.id}/deliveries`, { token: w.tokens.admin })).body.deliveries as any[];
    assert.equal(deliveries.map((d) => d.type).sort(), ['contact.job_changed', 'import.completed']);
    const payload = (type: string) => JSON.parse(t.rt.db.raw.prepare('SELECT payload FROM webhook_deliveries WHERE id = ?').pluck().get(deliveries.find((d) => d.type === type).id) as string);
    assert.is(payload('import.completed').data.import.id, second.id);
    assert.is(payload('contact.job_changed').data.contact.company, 'Globex');
  } finally {
    await t.close();
  }
});

T('a scheduled backup taken while an import writes completes without starting over, and so does the import (RELIABILITY.md D5 a)', async () => {
  const t = await startApp({ config: { backupCron: '0 0 1 1 *' } });
  try {
    const w = await seedWorld(t);
    const ledgerId = await createLedger(t, w.tokens.editor, w.orgId, 'backed up');
    // ~40 MB of contacts first: the backup takes many steps, and a write by another connection
    // between two of them would start it over
    const contacts = createContactsRepo(t.rt.db);
    const title = 'Senior Principal Engineer, Platform Reliability and Developer Experience'.padEnd(200, '.');
    for (let from = 0; from < 150_000; from += 10_000) {
      t.rt.db.bulkTx(() => {
        for (let i = from; i < from + 10_000; i++) {
          contacts.insertContact({ id: newId('c'), ledgerId, importId: 'imp_seed', referenceId: `s${i}`, name: `S ${i}`, company: 'C', title, titleLevel: null, titleDomain: null, location: null, email: null, linkedin: null, now: t.clock.now() });
        }
      });
    }
    const rows = 30_000;
    const { id: importId, status } = await startCsvImport(t, w, ledgerId, rows);
    await until('the import writing', status, (s) => s.processed > 0);
    assert.ok(await t.rt.scheduler.runNow('backup'), 'the backup ran');
    // SQLite starts the copy over whenever the thread commits between two of its steps, or the
    // checkpointer cuts the -wal; the thread waits between its chunks meanwhile, so only the chunk
    // in flight when it began can (without the pause: once per chunk, dozens of times), and the
    // checkpointer copies without cutting (checkpointer.test.ts)
    const written = t.logs.map((l) => JSON.parse(l)).find((l) => l.msg === 'scheduled backup written');
    assert.ok(written, 'the backup was logged');
    assert.ok(written.restarts <= 1, `the backup started over ${written.restarts} times`);
    assert.is((await status()).status, 'processing', 'the import was still running when the backup ended');
    const [file] = readdirSync(backupsDir(t.dataDir)).filter((f) => /^scheduled-.*\.db$/.test(f));
    assert.ok(file, 'a scheduled backup was written');
    const copy = new Database(join(backupsDir(t.dataDir), file!), { readonly: true });
    try {
      assert.is(copy.prepare('PRAGMA integrity_check').pluck().get(), 'ok');
      assert.ok((copy.prepare('SELECT count(*) FROM contacts').pluck().get() as number) >= 150_000);
    } finally {
      copy.close();
    }
    const done = await waitForImport(t, w.tokens.editor, w.orgId, ledgerId, importId);
    assert.equal([done.status, done.imported], ['completed', rows]);
  } finally {
    await t.close();
  }
});

T('an import waiting out a pause longer than its lease keeps the lease: the scheduler does not take it for abandoned and run it twice', async () => {
  const t = await startApp();
  let hold: ReturnType<typeof holdBulkJobs> | undefined;
  try {
    const clock = t.clock as ManualClock;
    const w = await seedWorld(t);
    const ledgerId = await createLedger(t, w.tokens.editor, w.orgId, 'long pause');
    const rows = 20_000;
    const { id: importId, status } = await startCsvImport(t, w, ledgerId, rows);
    await until('the import writing', status, (s) => s.processed > 0);
    const job = t.rt.db.raw.prepare<[string], { lease_token: number; lease_until: number }>('SELECT lease_token, lease_until FROM jobs WHERE id = ?');
    const token = job.get(importId)!.lease_token;
    hold = holdBulkJobs(t);
    // a backup of 44 s by the clock, in steps: each time the lease is renewed before it runs out
    for (let step = 0; step < 4; step++) {
      clock.advance(LEASE_MS / 3 + 1000);
      await until('the lease renewed', () => job.get(importId)!, (j) => j.lease_until >= clock.now() + LEASE_MS - 1000, 10_000);
      t.rt.scheduler.kick();
    }
    const during = await status();
    assert.is(during.status, 'processing', 'still the same run, not pending');
    assert.ok(during.processed < rows, 'the import was waiting');
    assert.is(job.get(importId)!.lease_token, token, 'not claimed again');
    await hold.release();
    const done = await waitForImport(t, w.tokens.editor, w.orgId, ledgerId, importId);
    assert.equal([done.status, done.imported, done.duplicates], ['completed', rows, 0]);
    assert.is(job.get(importId)!.lease_token, token, 'one run from start to end');
  } finally {
    await hold?.release();
    await t.close();
  }
});

/** A database with the schema, its job queue, and bulk threads on it running a stand-in worker file (tests of the client's side). */
function standIn() {
  const dir = tempDir();
  const db = openDb(join(dir, 'db.sqlite'));
  migrate(db, loadMigrations(paths.migrations), Date.now());
  const clock = new ManualClock();
  const queue = createQueue(db, clock);
  const threadOf = (workerFile: string) => createBulkThread({ db, clock, dataDir: dir, baseUrl: 'http://x.test', log: createLogger('silent'), onImportChunk: () => undefined, onFeedChunk: () => undefined, onDeliveries: () => undefined, workerFile });
  return { dir, db, queue, threadOf };
}

T('a thread that dies fails its runs and leaves the write lock free', async () => {
  const { dir, db, queue, threadOf } = standIn();
  db.tx(() => queue.enqueue('imp_1', 'import'));
  const lease = queue.claim()!;
  // a thread that takes the write lock, as in the middle of a chunk, and dies
  const broken = join(dir, 'broken-thread.cjs');
  writeFileSync(broken, `const { workerData } = require('node:worker_threads'); Atomics.store(workerData.lock, 0, 2); throw new Error('boom');`);
  const thread = threadOf(broken);
  try {
    let err: Error | undefined;
    await thread.run(lease, { stopping: false }).catch((e: Error) => (err = e));
    assert.match(String(err?.message), /boom/);
    assert.is(db.tx(() => 'written'), 'written', 'the lock the dead thread held is free');
  } finally {
    await thread.close();
    db.close();
  }
});

T('warm() starts the thread and resolves once it is ready for work (the server awaits it before claiming a job the thread runs); then at once; a thread that dies first does not hang it', async () => {
  const { dir, db, queue, threadOf } = standIn();
  assert.is(queue.hasUnfinished(['import', 'feed']), false);
  db.tx(() => queue.enqueue('imp_1', 'import'));
  db.tx(() => queue.enqueue('job_2', 'purge'));
  assert.is(queue.hasUnfinished(['import', 'feed']), true, 'an import waits');
  assert.is(queue.hasUnfinished(['feed']), false);
  const slow = join(dir, 'slow-thread.cjs');
  writeFileSync(slow, `const { parentPort } = require('node:worker_threads'); parentPort.on('message', (m) => m.type === 'close' && parentPort.close()); setTimeout(() => parentPort.postMessage({ type: 'ready' }), 300);`);
  const dead = join(dir, 'dead-thread.cjs');
  writeFileSync(dead, `throw new Error('boom');`);
  const thread = threadOf(slow);
  const broken = threadOf(dead);
  try {
    const started = Date.now();
    await thread.warm();
    assert.ok(Date.now() - started >= 250, `resolved after ${Date.now() - started} ms: when the thread said it is ready`);
    const again = Date.now();
    await thread.warm();
    assert.ok(Date.now() - again < 50, 'then at once');
    await broken.warm(); // resolves: the thread exited
  } finally {
    await thread.close();
    await broken.close();
    db.close();
  }
});

L.run();
T.run();
