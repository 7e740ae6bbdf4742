// Ledgers and contacts through the API: CRUD, batch imports with validation and duplicates,
// every list filter and sort, keyset paging edges, view=count, deletes, and SQL-injection
// attempts on sort/filter/paging (RELIABILITY.md I5, I6).
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { parse } from 'csv-parse/sync';
import type { ManualClock } from '../src/clock.ts';
import { FIRST_DELETE_CHUNK } from '../src/jobs/chunk-pacing.ts';
import { FOLDS_TO_ASCII, foldForContains, nameKeyPattern } from '../src/ledger/contacts-list-repo.ts';
import { createContactsRepo } from '../src/ledger/contacts-repo.ts';
import { backupTo } from '../src/storage/backup.ts';
import { nameKey } from '../src/normalize.ts';
import type { Db } from '../src/storage/db.ts';
import { addContacts, createLedger, expectStatus, holdBulkJobs, ID, LEDGER, ledgerPath, listAll, seedWorld, signInRoot, startApp, uploadCsv, until, waitForImport, type TestApp, type World } from './helpers.ts';

type Ctx = { t: TestApp; w: World };

const L = suite<Ctx>('ledgers');
L.before(async (ctx) => {
  ctx.t = await startApp();
  ctx.w = await seedWorld(ctx.t);
});
L.after(async (ctx) => ctx.t.close());

L('create, list, get, rename and delete a ledger; contactCount follows imports and deletes', async ({ t, w }) => {
  const tok = w.tokens.editor;
  const created = await t.call('POST', ledgerPath(w.orgId), { token: tok, body: { name: '  Prospects ', description: 'Q4' } });
  expectStatus(created, 201);
  const id = created.body.id;
  assert.match(id, /^l_[0-9a-z]{26}$/);
  assert.is(created.body.name, 'Prospects');
  assert.is(created.body.contactCount, 0);
  assert.is(created.body.orgId, w.orgId);
  assert.match(created.headers.get('location')!, new RegExp(`${LEDGER}/orgs/${w.orgId}/ledgers/${id}$`));
  assert.match(created.body.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

  const list = await t.call('GET', ledgerPath(w.orgId), { token: w.tokens.viewer });
  expectStatus(list, 200);
  assert.ok(list.body.ledgers.some((l: any) => l.id === id));
  assert.is(list.body.nextCursor, null);

  const imp = await addContacts(t, tok, w.orgId, id, [{ name: 'A', company: 'X' }, { name: 'B', company: 'Y' }, { company: 'no name' }]);
  assert.is(imp.imported, 2);
  const got = await t.call('GET', ledgerPath(w.orgId, id), { token: w.tokens.viewer });
  assert.is(got.body.contactCount, 2);

  const patched = await t.call('PATCH', ledgerPath(w.orgId, id), { token: tok, body: { name: 'Renamed' } });
  expectStatus(patched, 200);
  assert.is(patched.body.name, 'Renamed');
  assert.is(patched.body.description, 'Q4');
  // a description of null clears it, as "" does (a tester's case: null was refused); none is
  // answered as null, as a contact's absent fields are
  const cleared = await t.call('PATCH', ledgerPath(w.orgId, id), { token: tok, body: { description: null } });
  expectStatus(cleared, 200);
  assert.equal([cleared.body.name, cleared.body.description], ['Renamed', null]);
  (t.clock as ManualClock).advance(1000);
  const unchanged = await t.call('PATCH', ledgerPath(w.orgId, id), { token: tok, body: { name: 'Renamed', description: '' } });
  expectStatus(unchanged, 200);
  assert.equal(unchanged.body, cleared.body, 'a PATCH that changes nothing leaves updatedAt as it was');
  expectStatus(await t.call('PATCH', ledgerPath(w.orgId, id), { token: tok, body: { name: null } }), 422);
  const noDescription = await t.call('POST', ledgerPath(w.orgId), { token: tok, body: { name: 'Undescribed', description: null } });
  expectStatus(noDescription, 201);
  assert.is(noDescription.body.description, null);
  expectStatus(await t.call('PATCH', ledgerPath(w.orgId, id), { token: tok, body: {} }), 422);
  expectStatus(await t.call('PATCH', ledgerPath(w.orgId, id), { token: tok, body: { name: 'x', bogus: 1 } }), 422);

  // deleting needs admin; afterwards the ledger is gone at once and purged in the background
  expectStatus(await t.call('DELETE', ledgerPath(w.orgId, id), { token: tok }), 403);
  expectStatus(await t.call('DELETE', ledgerPath(w.orgId, id), { token: w.tokens.admin }), 204);
  expectStatus(await t.call('GET', ledgerPath(w.orgId, id), { token: w.tokens.admin }), 404);
  expectStatus(await t.call('GET', `${ledgerPath(w.orgId, id)}/contacts`, { token: w.tokens.admin }), 404);
  const db = t.rt.db.raw;
  await until('the purge', () => db.prepare('SELECT count(*) FROM ledgers WHERE id = ?').pluck().get(id) === 0, Boolean, 60_000);
  assert.is(db.prepare('SELECT count(*) FROM ledgers WHERE id = ?').pluck().get(id), 0, 'ledger row purged');
  assert.is(db.prepare('SELECT count(*) FROM contacts WHERE ledger_id = ?').pluck().get(id), 0, 'contacts purged');
  assert.is(db.prepare('SELECT count(*) FROM import_jobs WHERE ledger_id = ?').pluck().get(id), 0, 'imports purged');
});

L('ledger names are validated; another organization cannot see or touch the ledger', async ({ t, w }) => {
  expectStatus(await t.call('POST', ledgerPath(w.orgId), { token: w.tokens.editor, body: { name: '' } }), 422);
  expectStatus(await t.call('POST', ledgerPath(w.orgId), { token: w.tokens.editor, body: { name: 'x'.repeat(201) } }), 422);
  expectStatus(await t.call('POST', ledgerPath(w.orgId), { token: w.tokens.editor, body: { name: 5 } }), 422);
  const id = await createLedger(t, w.tokens.editor, w.orgId, 'Private');
  // B's admin: 403 on A's path; A's ledger under B's path: 404
  expectStatus(await t.call('GET', ledgerPath(w.orgId, id), { token: w.tokens.otherAdmin }), 403);
  expectStatus(await t.call('GET', ledgerPath(w.otherOrgId, id), { token: w.tokens.otherAdmin }), 404);
  expectStatus(await t.call('POST', `${ledgerPath(w.otherOrgId, id)}/contacts`, { token: w.tokens.otherAdmin, body: { name: 'x', company: 'y' } }), 404);
  expectStatus(await t.call('DELETE', ledgerPath(w.otherOrgId, id), { token: w.tokens.otherAdmin }), 404);
  expectStatus(await t.call('GET', ledgerPath(w.orgId, id), { token: w.tokens.viewer }), 200);
});

L('deleting an organization hides it at once and purges its ledgers', async ({ t, w }) => {
  const org = await t.call('POST', `${ID}/orgs`, { token: w.root, body: { name: 'Doomed' } });
  const orgId = org.body.id;
  const id = await createLedger(t, w.root, orgId, 'x');
  await addContacts(t, w.root, orgId, id, [{ name: 'A', company: 'X' }]);
  expectStatus(await t.call('DELETE', `${ID}/orgs/${orgId}`, { token: w.root }), 204);
  expectStatus(await t.call('GET', ledgerPath(orgId, id), { token: w.root }), 404);
  const db = t.rt.db.raw;
  await until('the organization purge', () => db.prepare('SELECT count(*) FROM orgs WHERE id = ?').pluck().get(orgId) === 0, Boolean, 60_000);
  assert.is(db.prepare('SELECT count(*) FROM orgs WHERE id = ?').pluck().get(orgId), 0);
  assert.is(db.prepare('SELECT count(*) FROM contacts WHERE ledger_id = ?').pluck().get(id), 0);
});

/**
 * Runs `fn` while recording, after every bulk (chunk) transaction, what `left()` counts; returns
 * how many rows of each kind every chunk removed (a spy on Db.bulkTx that calls through).
 */
async function chunksWhile(db: Db, left: () => number[], fn: () => Promise<void>): Promise<number[][]> {
  const seen = [left()];
  const bulkTx = db.bulkTx;
  db.bulkTx = function <T>(this: Db, tx: () => T): T {
    const out = bulkTx.call(this, tx) as T;
    seen.push(left());
    return out;
  };
  try {
    await fn();
  } finally {
    db.bulkTx = bulkTx;
  }
  const removed = seen.slice(1).map((now, i) => now.map((n, k) => seen[i]![k]! - n));
  // per kind: the rows each chunk that removed some of them removed
  return left().map((_, k) => removed.map((r) => r[k]!).filter((n) => n > 0));
}

/** Polls (no fixed sleep) until `gone()` is true. */
/** Sizes chunk after chunk as ChunkSizer gives them: the first one FIRST_DELETE_CHUNK, then at most twice the one before. */
function assertSized(chunks: number[], rows: number, minChunks: number, what: string): void {
  assert.is(chunks.reduce((a, b) => a + b, 0), rows, `${what}: every row went in a chunk`);
  assert.is(chunks[0], FIRST_DELETE_CHUNK, `${what}: the first chunk is the sizer's first (${chunks})`);
  for (let i = 1; i < chunks.length; i++) assert.ok(chunks[i]! <= 2 * chunks[i - 1]!, `${what}: a chunk at most doubles (${chunks})`);
  assert.ok(chunks.length >= minChunks, `${what}: ${rows} rows in ${chunks.length} transactions (${chunks}), not one fixed chunk`);
}

L('a ledger purge removes contacts, changes, rejected rows and imports in chunks sized by their cost (SPEC §7, D2)', async ({ t, w }) => {
  const id = await createLedger(t, w.tokens.editor, w.orgId, 'big');
  const lines = ['name,company,referenceId'];
  for (let i = 0; i < 3000; i++) lines.push(`P${i},Acme,r${i}`);
  for (let i = 0; i < 1200; i++) lines.push(`,Acme,bad${i}`); // no name: a rejected row each
  const csv = await uploadCsv(t, w.tokens.editor, w.orgId, id, lines.join('\n'));
  assert.equal([csv.status, csv.imported, csv.invalid], ['completed', 3000, 1200]);
  const api = await addContacts(t, w.tokens.editor, w.orgId, id, [{ name: 'Ann', company: 'X' }, { company: 'no name' }]);
  assert.equal([api.imported, api.invalid], [1, 1]);
  const raw = t.rt.db.raw;
  // change history of the ledger (written directly: the feed that records changes is not under test)
  raw.prepare(
    `WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 1000)
     INSERT INTO changes (id, ledger_id, contact_id, type, from_value, to_value, detected_at) SELECT 'chg_purge' || n, ?, 'c_x', 'job', '{}', '{}', n FROM s`,
  ).run(id);
  const imports = [csv.id, api.id];
  const inList = imports.map(() => '?').join(',');
  const counts = {
    contacts: raw.prepare('SELECT count(*) FROM contacts WHERE ledger_id = ?').pluck(),
    changes: raw.prepare('SELECT count(*) FROM changes WHERE ledger_id = ?').pluck(),
    rejections: raw.prepare(`SELECT count(*) FROM import_rejections WHERE import_id IN (${inList})`).pluck(),
    imports: raw.prepare(`SELECT (SELECT count(*) FROM import_jobs WHERE id IN (${inList})) + (SELECT count(*) FROM jobs WHERE id IN (${inList}))`).pluck(),
    ledger: raw.prepare('SELECT count(*) FROM ledgers WHERE id = ?').pluck(),
  };
  const left = () => [counts.contacts.get(id), counts.changes.get(id), counts.rejections.get(...imports), counts.imports.get(...imports, ...imports)] as number[];
  assert.equal(left(), [3001, 1000, 1201, 4]);

  const [contacts, changes, rejections] = await chunksWhile(t.rt.db, left, async () => {
    expectStatus(await t.call('DELETE', ledgerPath(w.orgId, id), { token: w.tokens.admin }), 204);
    await until('the purge', () => counts.ledger.get(id) === 0, Boolean, 60_000);
  });
  assert.equal(left(), [0, 0, 0, 0], 'contacts, changes, rejected rows and import jobs are gone');
  assert.is(raw.prepare(`SELECT count(*) FROM import_payloads WHERE import_id IN (${inList})`).pluck().get(...imports), 0);
  // a fixed 5,000-row chunk would take each kind in one transaction
  assertSized(contacts!, 3001, 5, 'contacts'); // 100 + 200 + 400 + 800 + 1,600 < 3,001
  assertSized(changes!, 1000, 4, 'changes');
  assert.ok(rejections!.length >= 4, `1,201 rejected rows in ${rejections!.length} transactions (${rejections})`);
  const job = raw.prepare("SELECT status FROM jobs WHERE kind = 'ledger.purge' AND payload LIKE ?").pluck().get(`%${id}%`);
  assert.is(job, 'completed');
});

L('an organization purge also removes its audit log and webhook deliveries in sized chunks before its row', async ({ t, w }) => {
  const org = await t.call('POST', `${ID}/orgs`, { token: w.root, body: { name: 'Doomed too' } });
  const orgId = org.body.id;
  const id = await createLedger(t, w.root, orgId, 'x');
  await addContacts(t, w.root, orgId, id, [{ name: 'A', company: 'X' }, { name: 'B', company: 'Y' }]);
  const raw = t.rt.db.raw;
  const now = t.clock.now();
  // a long audit log and a busy webhook's delivery log (written directly: their writers are not under test)
  raw.prepare(
    `WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 700)
     INSERT INTO audit_log (id, org_id, actor_type, action, at) SELECT 'evt_purge' || n, ?, 'system', 'test.filler', ? FROM s`,
  ).run(orgId, now);
  raw.prepare("INSERT INTO webhooks (id, org_id, url, events, secret, created_at, updated_at) VALUES ('wh_purge', ?, 'https://hooks.example/x', '[]', 's', ?, ?)").run(orgId, now, now);
  raw.prepare(
    `WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 400)
     INSERT INTO webhook_deliveries (id, webhook_id, event_id, type, payload, status, max_attempts, next_at, created_at, finished_at)
     SELECT 'dlv_purge' || n, 'wh_purge', 'evt_x' || n, 'contact.job_changed', '{}', 'delivered', 7, ?, ?, ? FROM s`,
  ).run(now, now, now);
  const counts = {
    audit: raw.prepare('SELECT count(*) FROM audit_log WHERE org_id = ?').pluck(),
    deliveries: raw.prepare("SELECT count(*) FROM webhook_deliveries WHERE webhook_id = 'wh_purge'").pluck(),
    org: raw.prepare('SELECT count(*) FROM orgs WHERE id = ?').pluck(),
  };
  const left = () => [counts.audit.get(orgId), counts.deliveries.get()] as number[];
  const audit = left()[0]!;
  assert.ok(audit >= 700);

  const [auditChunks, deliveryChunks] = await chunksWhile(t.rt.db, left, async () => {
    expectStatus(await t.call('DELETE', `${ID}/orgs/${orgId}`, { token: w.root }), 204);
    await until('the organization purge', () => counts.org.get(orgId) === 0, Boolean, 60_000);
  });
  assert.equal(left(), [0, 0]);
  assert.is(raw.prepare("SELECT count(*) FROM webhooks WHERE id = 'wh_purge'").pluck().get(), 0);
  assert.is(raw.prepare('SELECT count(*) FROM contacts WHERE ledger_id = ?').pluck().get(id), 0);
  assert.is(raw.prepare('SELECT count(*) FROM ledgers WHERE id = ?').pluck().get(id), 0);
  // not by the row's cascade in one transaction: chunk by chunk, before it
  assertSized(auditChunks!, audit, 3, 'audit entries');
  assertSized(deliveryChunks!, 400, 2, 'deliveries');
});

L.run();

// ── adding contacts ────────────────────────────────────────────────────────
const A = suite<Ctx & { ledgerId: string }>('adding contacts');
A.before(async (ctx) => {
  ctx.t = await startApp();
  ctx.w = await seedWorld(ctx.t);
  ctx.ledgerId = await createLedger(ctx.t, ctx.w.tokens.editor, ctx.w.orgId, 'adds');
});
A.after(async (ctx) => ctx.t.close());

A('a job claimed whose run has not begun is pending, never processing without a startedAt (import and feed)', async () => {
  const t = await startApp({ noScheduler: true });
  try {
    const w = await seedWorld(t);
    const ledgerId = await createLedger(t, w.tokens.editor, w.orgId, 'claimed');
    const imp = await t.call('POST', `${ledgerPath(w.orgId, ledgerId)}/contacts`, { token: w.tokens.editor, body: { name: 'Ann Lee', company: 'Acme' } });
    expectStatus(imp, 202);
    const feed = await t.call('POST', `${LEDGER}/feed`, { token: w.serviceAccounts.feed.token, raw: '{"name":"Ann Lee","company":"Acme"}\n', headers: { 'content-type': 'application/x-ndjson' } });
    expectStatus(feed, 202);
    // claimed by the scheduler's queue, not yet run: the window a client polling at once can see
    const leases = [t.rt.queue.claim('express'), t.rt.queue.claim('bulk')];
    assert.equal(leases.map((l) => l?.job.id).sort(), [imp.body.id, feed.body.id].sort(), 'both claimed');
    const seen = [await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/imports/${imp.body.id}`, { token: w.tokens.editor }), await t.call('GET', `${LEDGER}/feed/${feed.body.id}`, { token: w.serviceAccounts.feed.token })];
    for (const r of seen) assert.equal([r.body.status, r.body.startedAt], ['pending', null], r.body.id);
  } finally {
    await t.close();
  }
});

A('one contact → 202 with the import job and a Location; the job completes with exact counts', async ({ t, w, ledgerId }) => {
  const r = await t.call('POST', `${ledgerPath(w.orgId, ledgerId)}/contacts`, {
    token: w.serviceAccounts.saEditor.token,
    body: { name: ' Ann  Lee ', company: ' Acme ', title: ' VP Engineering ', email: 'Ann@Acme.test', linkedin: 'HTTP://de.LinkedIn.com/in/Ann-Lee/?trk=x', referenceId: 42, location: '' },
  });
  expectStatus(r, 202);
  assert.match(r.body.id, /^imp_/);
  assert.is(r.body.source, 'api');
  assert.is(r.body.submitted, 1);
  assert.ok(['pending', 'processing', 'completed'].includes(r.body.status));
  assert.ok(r.headers.get('location')!.endsWith(`/imports/${r.body.id}`));
  const job = await waitForImport(t, w.tokens.viewer, w.orgId, ledgerId, r.body.id);
  assert.equal([job.status, job.submitted, job.imported, job.duplicates, job.invalid], ['completed', 1, 1, 0, 0]);
  assert.ok(job.startedAt && job.finishedAt);
  assert.is(job.errorsUrl, null);
  const list = await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/contacts?importId=${job.id}`, { token: w.tokens.viewer });
  const c = list.body.contacts[0];
  assert.is(c.name, ' Ann  Lee ', 'name is never modified');
  assert.is(c.company, ' Acme ');
  assert.is(c.importCompany, ' Acme ');
  assert.is(c.title, 'VP Engineering');
  assert.is(c.importTitle, 'VP Engineering');
  assert.is(c.titleLevel, 'vp');
  assert.is(c.titleDomain, 'engineering');
  assert.is(c.location, null, 'empty string is an absent value');
  assert.equal(c.contactInfo, { email: 'Ann@Acme.test', emailStatus: null });
  assert.is(c.linkedin, 'https://www.linkedin.com/in/ann-lee');
  assert.is(c.referenceId, '42');
  assert.is(c.isVerified, false);
  assert.is(c.lastJobChangedAt, null);
  assert.is(c.lastInfoChangedAt, null);
  assert.match(c.id, /^c_[0-9a-z]{26}$/);
  const one = await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/contacts/${c.id}`, { token: w.tokens.viewer });
  expectStatus(one, 200);
  assert.equal(one.body, c);
});

A('a batch keeps its good rows and rejects bad and duplicate ones with reasons', async ({ t, w, ledgerId }) => {
  await addContacts(t, w.tokens.editor, w.orgId, ledgerId, [{ name: 'Existing', company: 'X', referenceId: 'dup-1' }]);
  const job = await addContacts(t, w.tokens.editor, w.orgId, ledgerId, [
    { name: 'Good', company: 'X', referenceId: 'r1' },
    { name: 'Again', company: 'X', referenceId: 'r1' }, // repeated in the batch
    { name: 'Clash', company: 'X', referenceId: 'dup-1' }, // already in the ledger
    { company: 'X' }, // no name
    { name: 'No company' },
    { name: '   ', company: 'X' },
    { name: 'Bad li', company: 'X', linkedin: 'https://example.com/in/x' },
    { name: 'Bad mail', company: 'X', email: 'not-an-email' },
    { name: 'x'.repeat(257), company: 'X' },
    { name: 'Long ref', company: 'X', referenceId: 'r'.repeat(129) },
    { name: 'Typed', company: 'X', title: 7 },
    { name: 'Unknown', company: 'X', favouriteColour: 'red' },
    'just a string',
    null,
    { name: 'Nested', company: 'X', contactInfo: { email: 'n@x.test' } },
    { name: '𠀀'.repeat(256), company: '𝐀'.repeat(256), title: '😀'.repeat(256) }, // 256 characters each (512 UTF-16 units): letters, in a name and a company
    { name: '😀'.repeat(257), company: 'X' },
  ]);
  assert.is(job.status, 'completed');
  assert.is(job.submitted, 17);
  assert.is(job.imported, 3);
  assert.is(job.duplicates, 2);
  assert.is(job.invalid, 12);
  assert.is(job.imported + job.duplicates + job.invalid, job.submitted);
  assert.ok(job.errorsUrl.endsWith(`/imports/${job.id}/errors`));
  const errors = await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/imports/${job.id}/errors`, { token: w.tokens.viewer });
  expectStatus(errors, 200);
  assert.match(errors.headers.get('content-type')!, /^text\/csv/);
  const lines = errors.text.trim().split('\r\n');
  assert.is(lines[0], 'row,name,company,title,location,email,linkedin,referenceId,reason,raw');
  assert.is(lines.length, 1 + 14);
  const text = errors.text;
  for (const reason of ['appears earlier in this import', 'is already in the ledger', 'name is required', 'company is required', 'not a LinkedIn profile URL', 'not an e-mail address', 'name is longer than 256', 'referenceId is longer than 128', 'title must be a string', 'favouriteColour', 'must be a JSON object (just a string)', 'must be a JSON object (null)'])
    assert.ok(text.includes(reason), `errors CSV mentions "${reason}"`);
  const nested = await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/contacts?email=N@X.TEST`, { token: w.tokens.viewer });
  assert.is(nested.body.contacts.length, 1, 'email filter is case-insensitive; contactInfo.email accepted');
});

A('a page that ends at a name of 256 emoji or rare CJK characters continues: its cursor is accepted back, in both name orders', async ({ t, w, ledgerId }) => {
  const names = ['a Ann', `b ${'😀'.repeat(254)}`, `c ${'𠀀'.repeat(254)}`, 'd Dee'];
  const job = await addContacts(t, w.tokens.editor, w.orgId, ledgerId, names.map((name) => ({ name, company: 'Long Names Co' })));
  assert.is(job.imported, 4);
  for (const sort of ['%2Bname', '-name']) {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const r = await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/contacts?company=Long%20Names%20Co&sortBy=${sort}&limit=1${cursor ? `&cursor=${cursor}` : ''}`, { token: w.tokens.viewer });
      expectStatus(r, 200, `${sort} after ${seen.length}`);
      seen.push(...r.body.contacts.map((c: any) => c.name));
      cursor = r.body.nextCursor;
    } while (cursor);
    assert.equal(seen, sort === '-name' ? [...names].reverse() : names, sort);
  }
});

A('a referenceId in composed and in decomposed Unicode form is one id: the second is a duplicate, the filter finds it either way', async ({ t, w, ledgerId }) => {
  const [composed, decomposed] = ['CRM-M\u00fcller-42', 'CRM-Mu\u0308ller-42'];
  const job = await addContacts(t, w.tokens.editor, w.orgId, ledgerId, [
    { name: 'Mac Saved', company: 'X', referenceId: decomposed },
    { name: 'Windows Saved', company: 'X', referenceId: composed },
  ]);
  assert.equal([job.imported, job.duplicates], [1, 1]);
  const again = await addContacts(t, w.tokens.editor, w.orgId, ledgerId, [{ name: 'Later', company: 'X', referenceId: composed }]);
  assert.equal([again.imported, again.duplicates], [0, 1], 'against the ledger too');
  for (const ref of [composed, decomposed]) {
    const r = await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/contacts?referenceId=${encodeURIComponent(ref)}`, { token: w.tokens.viewer });
    expectStatus(r, 200);
    assert.equal(r.body.contacts.map((c: any) => [c.name, c.referenceId]), [['Mac Saved', composed]], ref === composed ? 'composed' : 'decomposed');
  }
});

A('a NUL character is refused where text comes in: contact fields are rejected rows, list and download filters a 400', async ({ t, w, ledgerId }) => {
  const job = await addContacts(t, w.tokens.editor, w.orgId, ledgerId, [
    { name: 'Nul\u0000Name', company: 'X' },
    { name: 'Nul company', company: '\u0000' },
    { name: 'Nul title', company: 'X', title: 'CEO\u0000' },
    { name: 'Nul ref', company: 'X', referenceId: 'r\u0000' },
    { name: 'No nul\there', company: 'X' }, // other control characters are text
  ]);
  assert.equal([job.imported, job.invalid], [1, 4]);
  const errors = (await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/imports/${job.id}/errors`, { token: w.tokens.viewer })).text;
  for (const field of ['name', 'company', 'title', 'referenceId']) assert.ok(errors.includes(`${field} contains a NUL character`), field);
  const path = `${ledgerPath(w.orgId, ledgerId)}/contacts`;
  for (const query of ['name=%00', 'company=a%00b', 'title=%00', 'referenceId=%00', 'email=a%00%40b.test']) {
    for (const url of [`${path}?${query}`, `${path}?${query}&view=count`, `${path}/download?${query}`]) {
      const r = await t.call('GET', url, { token: w.tokens.viewer });
      expectStatus(r, 400, url);
      assert.ok(r.body.errors.some((e: any) => /NUL/.test(e.message)), url);
    }
  }
});

/** The names of the contacts a filter finds, listed page by page; its count (view=count) must agree. */
async function foundBy(t: TestApp, token: string, path: string, query: string): Promise<string[]> {
  const names = (await listAll(t, token, path, query)).map((c) => c.name as string);
  const r = await t.call('GET', `${path}?view=count&${query}`, { token });
  expectStatus(r, 200, query);
  assert.is(r.body.count, names.length, `${query}: the count agrees with the list`);
  return names;
}

A('name, company and title searches fold case as Unicode does: a final sigma is a sigma, ß is ss (a tester\'s case)', async ({ t, w }) => {
  const ledgerId = await createLedger(t, w.tokens.editor, w.orgId, 'case folding');
  await addContacts(t, w.tokens.editor, w.orgId, ledgerId, [
    { name: 'ΣΊΣΥΦΟΣ', company: 'Straße Bau GmbH', title: 'ΔΙΕΥΘΥΝΤΉΣ' },
    { name: 'Σίσυφος', company: 'STRASSE BAU', title: 'Διευθυντής' },
    { name: 'Other Person', company: 'Strase', title: 'Engineer' },
    { name: 'Ayşe Yılmaz', company: '\u00dcNITED \u0130STANBUL', title: 'Engineer' },
    // written decomposed, i + a dot above; and İ with an acute, which is í (a reviewer's cases)
    { name: 'Deniz Kaya', company: 'Di\u0307ji\u0307tal Ltd', title: 'I\u0307\u0301nci' },
  ]);
  const path = `${ledgerPath(w.orgId, ledgerId)}/contacts`;
  for (const [query, found] of [
    // Turkish İ is i (a tester's case: "istanbul" did not find "İSTANBUL"), whichever way the needle writes it
    ['company=istanbul', 1], ['company=ISTANBUL', 1], ['company=%C4%B0stanbul', 1], ['company=i%CC%87stanbul', 1], ['company=%C3%BCnited%20i', 1],
    ['company=dijital', 1], ['company=DIJITAL', 1], ['title=%C3%ADnci', 1], ['title=inci', 0],
    ['name=σίσυφοσ', 2], ['name=ΣΊΣΥΦΟΣ', 2], ['name=σίσυφος', 2], ['name=σίσ', 2], ['name=ΣΊΣ', 2], ['name=φος', 2],
    ['company=strasse', 2], ['company=STRASSE', 2], ['company=stra%C3%9Fe', 2], ['company=STRA%E1%BA%9EE', 2], ['company=stras', 3],
    ['title=%CE%B4%CE%B9%CE%B5%CF%85%CE%B8%CF%85%CE%BD%CF%84%CE%AE%CF%83', 2],
  ] as const) {
    assert.is((await foundBy(t, w.tokens.viewer, path, query)).length, found, query);
  }
});

A('an ASCII needle finds what folding makes ASCII: the Kelvin sign, ſ and ligatures (a tester\'s cases); it reads a decomposed ë as LIKE does', async ({ t, w }) => {
  const ledgerId = await createLedger(t, w.tokens.editor, w.orgId, 'folding beyond ascii');
  await addContacts(t, w.tokens.editor, w.orgId, ledgerId, [
    { name: 'Kelvin \u212a', company: 'Straße', title: 'Engineer' },
    { name: 'Finn', company: 'Office Co', title: 'Engineer' },
    { name: 'Zo\u00eb Composed', company: 'Caf\u00e9', title: 'Engineer' },
    { name: 'Zoe\u0308 Decomposed', company: 'Cafe\u0301', title: 'Engineer' },
    { name: 'Zoe Plain', company: 'Cafe', title: 'Engineer' },
  ]);
  const path = `${ledgerPath(w.orgId, ledgerId)}/contacts`;
  for (const [query, names] of [
    ['name=kelvin%20k', ['Kelvin \u212a']],
    ['company=%C5%BFtra', ['Kelvin \u212a']], // ſtra
    ['name=%EF%AC%81nn', ['Finn']], // ﬁnn
    ['company=o%EF%AC%83ce', ['Finn']], // oﬃce
    ['name=zoe', ['Zoe Plain', 'Zoe\u0308 Decomposed']], // LIKE's reading: the e before a combining mark (docs/decisions.md)
    ['name=zo%C3%AB', ['Zo\u00eb Composed', 'Zoe\u0308 Decomposed']], // ë finds both
    ['company=cafe', ['Zoe Plain', 'Zoe\u0308 Decomposed']],
    ['company=caf%C3%A9', ['Zo\u00eb Composed', 'Zoe\u0308 Decomposed']],
  ] as const) {
    assert.equal((await foundBy(t, w.tokens.viewer, path, query)).sort(), [...names].sort(), query);
  }
});

A('every character beyond ASCII that folding makes ASCII is in FOLDS_TO_ASCII: an ASCII needle is never missed in a text LIKE cannot read', () => {
  const missing: string[] = [];
  for (let cp = 0x80; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const c = String.fromCodePoint(cp);
    if (/[\x00-\x7f]/.test(foldForContains(c)) && !FOLDS_TO_ASCII.includes(c)) missing.push(`U+${cp.toString(16)}`);
  }
  assert.equal(missing, []);
  assert.is([...FOLDS_TO_ASCII].length, 15);
});

A('e-mail addresses and reference ids with an invisible character are rejected rows; a decomposed accent is the same text; the email filter is an address', async ({ t, w }) => {
  const ledgerId = await createLedger(t, w.tokens.editor, w.orgId, 'invisible');
  const job = await addContacts(t, w.tokens.editor, w.orgId, ledgerId, [
    { name: 'Zw mail', company: 'X', email: 'z@x.test\u200b' },
    { name: 'Bom mail', company: 'X', contactInfo: { email: 'b\ufeff@x.test' } },
    { name: 'Zw ref', company: 'X', referenceId: 'r\u200b1' },
    { name: 'Zoe\u0308 Mu\u0308ller', company: 'Cafe\u0301 Ltd', linkedin: 'linkedin.com/in/jose\u0301-x', email: 'ann+crm@x.test' },
    { name: 'Mi\u200dna', company: 'X' }, // a joiner in a name is the name's own business
  ]);
  assert.equal([job.imported, job.invalid], [2, 3]);
  const errors = (await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/imports/${job.id}/errors`, { token: w.tokens.viewer })).text;
  for (const reason of ['email contains an invisible character (U+200B)', 'email contains an invisible character (U+FEFF)', 'referenceId contains an invisible character (U+200B)']) assert.ok(errors.includes(reason), reason);
  const path = `${ledgerPath(w.orgId, ledgerId)}/contacts`;
  const count = async (query: string) => {
    const r = await t.call('GET', `${path}?view=count&${query}`, { token: w.tokens.viewer });
    expectStatus(r, 200, query);
    return r.body.count as number;
  };
  // stored decomposed, found composed (and the other way round); the LinkedIn slug is stored composed
  assert.is(await count('name=zo%C3%AB'), 1);
  assert.is(await count(`company=${encodeURIComponent('CAFE\u0301')}`), 1);
  assert.is(await count('linkedin=linkedin.com/in/jos%C3%A9-x'), 1);
  const listed = await t.call('GET', `${path}?email=ann%2Bcrm@x.test`, { token: w.tokens.viewer });
  assert.is(listed.body.contacts[0].linkedin, 'https://www.linkedin.com/in/jos\u00e9-x');
  // a + sent unencoded arrives as a space, which no address holds: read as the + it was
  assert.is(await count('email=ann+crm@x.test'), 1);
  // an address stored before the twenty-fifth session in a shape no longer taken is still found
  createContactsRepo(t.rt.db).insertContact({ id: 'c_legacymail', ledgerId, importId: null, referenceId: null, name: 'Old Mail', company: 'X', title: null, titleLevel: null, titleDomain: null, location: null, email: 'a..b@x.test', linkedin: null, now: t.clock.now() });
  assert.is(await count('email=a..b@x.test'), 1);
  expectStatus(await t.call('POST', path, { token: w.tokens.editor, body: { name: 'New Mail', company: 'X', email: 'a..b@x.test' } }), 422);
  for (const bad of ['email=notanemail', 'email=z@x.test%E2%80%8B', 'email=a@b']) {
    const r = await t.call('GET', `${path}?${bad}`, { token: w.tokens.viewer });
    expectStatus(r, 400, bad);
    assert.equal(r.body.errors.map((e: any) => e.path), ['email'], bad);
  }
});

A('a contact read back may be sent again: contactInfo.emailStatus null is "not known"; a value is the feed\'s to set and is rejected with the reason', async ({ t, w, ledgerId }) => {
  const job = await addContacts(t, w.tokens.editor, w.orgId, ledgerId, [
    { name: 'Round Trip', company: 'X', contactInfo: { email: 'rt@x.test', emailStatus: null } },
    { name: 'Claims Valid', company: 'X', contactInfo: { email: 'cv@x.test', emailStatus: 'valid' } },
  ]);
  assert.equal([job.imported, job.invalid], [1, 1]);
  const r = await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/imports/${job.id}/errors`, { token: w.tokens.viewer });
  assert.match(r.text, /contactInfo\.emailStatus is set by the person-data feed/);
  const list = await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/contacts?email=rt@x.test`, { token: w.tokens.viewer });
  assert.equal(list.body.contacts.map((c: any) => c.contactInfo), [{ email: 'rt@x.test', emailStatus: null }]);
});

A('the rejected-rows CSV of an API batch gives back each rejected value as submitted (raw JSON), unknown fields included', async ({ t, w, ledgerId }) => {
  const sent: unknown[] = [
    { name: 'Fine', company: 'X' },
    { name: 'Z', company: 'Y', foo: 1 },
    { name: 'Typed', company: 'X', title: 7, contactInfo: { email: 'a@b.test' } },
    { name: 'Fine', company: 'X', referenceId: 'raw-1', notes: { deep: [1, '=2'] } },
    'just a string',
    -5,
    null,
    ['=cmd'],
  ];
  const job = await addContacts(t, w.tokens.editor, w.orgId, ledgerId, sent);
  assert.equal([job.imported, job.invalid], [1, 7]);
  const r = await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/imports/${job.id}/errors`, { token: w.tokens.viewer });
  expectStatus(r, 200);
  const rows = parse(r.text) as string[][];
  const header = rows[0]!;
  assert.equal(header, ['row', 'name', 'company', 'title', 'location', 'email', 'linkedin', 'referenceId', 'reason', 'raw']);
  const byRow = new Map(rows.slice(1).map((row) => [Number(row[0]), row]));
  assert.is(byRow.size, 7);
  for (let i = 1; i < sent.length; i++) {
    const row = byRow.get(i + 1)!;
    assert.ok(row, `row ${i + 1} is in the errors CSV`);
    assert.equal(JSON.parse(row[header.indexOf('raw')]!), sent[i], `row ${i + 1} given back as submitted`);
  }
  assert.match(byRow.get(2)![header.indexOf('reason')]!, /unknown field "foo"/);
});

A('mass assignment (RELIABILITY.md Z3e): a contact naming a field the server sets (id, org, ledger, creator, times, matching) is rejected with the field named, nothing of it stored', async ({ t, w, ledgerId }) => {
  const owned: Record<string, unknown> = {
    id: 'c_forged0000000000000000000000',
    org_id: w.otherOrgId,
    orgId: w.otherOrgId,
    ledgerId: 'l_forged0000000000000000000000',
    created_by: 'u_forged',
    createdBy: 'u_forged',
    createdAt: '2001-01-01T00:00:00Z',
    updatedAt: '2001-01-01T00:00:00Z',
    importId: 'imp_forged',
    importCompany: 'Forged Co',
    importTitle: 'Forged',
    isVerified: true,
    personId: 'p_forged',
    lastJobChangedAt: '2001-01-01T00:00:00Z',
    lastInfoChangedAt: '2001-01-01T00:00:00Z',
    titleLevel: 'C-Level',
    seq: 1,
  };
  const fields = Object.keys(owned);
  const sent = fields.map((f, i) => ({ name: `Mass ${i}`, company: 'Assign', referenceId: `mass-${i}`, [f]: owned[f] }));
  const job = await addContacts(t, w.tokens.editor, w.orgId, ledgerId, sent);
  assert.equal([job.imported, job.invalid], [0, fields.length]);
  const r = await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/imports/${job.id}/errors`, { token: w.tokens.viewer });
  const rows = parse(r.text) as string[][];
  const reason = rows[0]!.indexOf('reason');
  assert.equal(rows.slice(1).map((row) => row[reason]), fields.map((f) => `unknown field "${f}"`));
  const stored = t.rt.db.raw.prepare("SELECT count(*) FROM contacts WHERE reference_id LIKE 'mass-%' OR id = ?").pluck().get(owned.id);
  assert.is(stored, 0);
  // one contact on its own is refused at once (422 naming the field; no job)
  const jobsBefore = t.rt.db.raw.prepare('SELECT count(*) FROM import_jobs WHERE ledger_id = ?').pluck().get(ledgerId);
  const single = await t.call('POST', `${ledgerPath(w.orgId, ledgerId)}/contacts`, { token: w.tokens.editor, body: { name: 'Solo', company: 'Assign', isVerified: true } });
  expectStatus(single, 422);
  assert.match(single.body.detail, /unknown field "isVerified"/);
  assert.is(t.rt.db.raw.prepare('SELECT count(*) FROM import_jobs WHERE ledger_id = ?').pluck().get(ledgerId), jobsBefore);
});

A('a referenceId integer beyond 2^53−1 is rejected saying so, and comes back in the errors CSV with every digit', async ({ t, w, ledgerId }) => {
  const path = `${ledgerPath(w.orgId, ledgerId)}/contacts`;
  // JSON.parse would read 9007199254740993 as 9007199254740992: written by hand, not by JSON.stringify
  const raw = '{"contacts":[{"name":"Big Ref","company":"X","referenceId":9007199254740993},{"name":"Neg Ref","company":"X","referenceId":-12345678901234567890},' +
    '{"name":"Safe Ref","company":"X","referenceId":9007199254740991},{"name":"Text Ref","company":"X","referenceId":"9007199254740993"},9007199254740995,-12345678901234567890,-5]}';
  const sent = await t.call('POST', path, { token: w.tokens.editor, raw, headers: { 'content-type': 'application/json' } });
  expectStatus(sent, 202);
  const job = await until('the import job', async () => (await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/imports/${sent.body.id}`, { token: w.tokens.viewer })).body, (j) => j.status === 'completed');
  assert.equal([job.imported, job.invalid], [2, 5]);
  const refs = (await t.call('GET', `${path}?name=Ref`, { token: w.tokens.viewer })).body.contacts.map((c: any) => c.referenceId).sort();
  assert.equal(refs, ['9007199254740991', '9007199254740993']);
  const text = (await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/imports/${job.id}/errors`, { token: w.tokens.viewer })).text;
  const rows = parse(text) as string[][];
  const [header, big, neg, item, negItem, small] = rows as [string[], string[], string[], string[], string[], string[]];
  const col = (row: string[], name: string) => row[header.indexOf(name)]!;
  assert.is(rows.length, 6, text);
  // numbers, small or big, are number cells: no formula-escaping ' before the minus sign
  assert.equal([col(negItem, 'raw'), col(small, 'raw')], ['-12345678901234567890', '-5']);
  assert.is(col(big, 'reason'), 'referenceId 9007199254740993 is a whole number too large to be kept exactly as a JSON number (beyond ±(2^53−1) = ±9007199254740991); send it as a string ("9007199254740993")');
  assert.is(col(big, 'referenceId'), '9007199254740993');
  assert.is(col(big, 'raw'), '{"name":"Big Ref","company":"X","referenceId":9007199254740993}', 'given back exactly as submitted');
  assert.match(col(neg, 'reason'), /^referenceId -12345678901234567890 is a whole number too large/);
  assert.is(col(neg, 'raw'), '{"name":"Neg Ref","company":"X","referenceId":-12345678901234567890}');
  assert.is(col(item, 'raw'), '9007199254740995');
  assert.match(col(item, "reason"), /must be a JSON object \(9007199254740995\)$/, col(item, "reason"));
  // one contact alone is checked at once
  const single = await t.call('POST', path, { token: w.tokens.editor, raw: '{"name":"One","company":"X","referenceId":18446744073709551617}', headers: { 'content-type': 'application/json' } });
  expectStatus(single, 422);
  assert.match(single.body.message, /referenceId 18446744073709551617 is a whole number too large.*send it as a string/);
});

A('a number no double can hold (beyond ±1.8e308, or not zero but below 5e-324) refuses the body, naming it: read as infinity or 0 it would be stored as null or "0"', async ({ t, w, ledgerId }) => {
  const path = `${ledgerPath(w.orgId, ledgerId)}/contacts`;
  const jobsBefore = t.rt.db.raw.prepare('SELECT count(*) FROM import_jobs WHERE ledger_id = ?').pluck().get(ledgerId);
  for (const [n, readAs] of [['1e400', 'infinity'], ['-1E+999', 'infinity'], ['1e-400', '0'], ['9'.repeat(400) + '.5', 'infinity']] as const) {
    const raw = `{"contacts":[{"name":"Ann","company":"Acme","referenceId":"a"},{"name":"Bob","company":"Acme","referenceId":${n}}]}`;
    const res = await t.call('POST', path, { token: w.tokens.editor, raw, headers: { 'content-type': 'application/json' } });
    expectStatus(res, 400);
    assert.match(res.body.message, new RegExp(`holds the number ${n.slice(0, 10).replace(/[+.]/g, '\\$&')}.*read as ${readAs}.*send it as a string`), res.body.message);
  }
  const single = await t.call('POST', path, { token: w.tokens.editor, raw: '{"name":"Cy","company":"Acme","referenceId":1e400}', headers: { 'content-type': 'application/json' } });
  expectStatus(single, 400);
  assert.is(t.rt.db.raw.prepare('SELECT count(*) FROM import_jobs WHERE ledger_id = ?').pluck().get(ledgerId), jobsBefore, 'no import job');
  // zero however written, the largest and the smallest doubles, and the text "1e400" are taken
  const fine = await t.call('POST', path, { token: w.tokens.editor, raw: '{"contacts":[{"name":"Zed","company":"Acme","referenceId":0e-400},{"name":"Max","company":"Acme","title":"1e400"}]}', headers: { 'content-type': 'application/json' } });
  expectStatus(fine, 202);
});

A('request-level errors: bad JSON, wrong shape, empty and oversized batches, unknown ledger, viewer', async ({ t, w, ledgerId }) => {
  const path = `${ledgerPath(w.orgId, ledgerId)}/contacts`;
  const bad = await t.call('POST', path, { token: w.tokens.editor, raw: '{"name":', headers: { 'content-type': 'application/json' } });
  expectStatus(bad, 400);
  assert.match(bad.headers.get('content-type')!, /problem\+json/);
  expectStatus(await t.call('POST', path, { token: w.tokens.editor, raw: 'name=x', headers: { 'content-type': 'text/plain' } }), 415);
  expectStatus(await t.call('POST', path, { token: w.tokens.editor, body: [] }), 422);
  expectStatus(await t.call('POST', path, { token: w.tokens.editor, body: { contacts: [] } }), 422);
  expectStatus(await t.call('POST', path, { token: w.tokens.editor, body: { contacts: 'x' } }), 422);
  const single = await t.call('POST', path, { token: w.tokens.editor, body: { company: 'X' } });
  expectStatus(single, 422);
  assert.match(single.body.message, /name is required/, 'a single contact is validated at once');
  // every field's problem in one answer, each under its own path (a tester's case: only the first, under "body")
  const several = await t.call('POST', path, { token: w.tokens.editor, body: { company: '', email: 'bad', linkedin: 'nope', referenceId: true, contactInfo: { emailStatus: 'valid' }, isVerified: true } });
  expectStatus(several, 422);
  assert.equal(several.body.errors.map((e: any) => e.path), ['isVerified', 'name', 'company', 'contactInfo.emailStatus', 'email', 'linkedin', 'referenceId']);
  assert.match(several.body.errors.find((e: any) => e.path === 'email').message, /e-mail|email/);
  assert.match(several.body.message, /^Invalid contact: unknown field "isVerified"; name is required; company is required; .*referenceId must be a string or a whole number\.$/);
  // many unknown fields: the first five, cut short, and how many more — the answer stays small
  const keys = Object.fromEntries(Array.from({ length: 900 }, (_, i) => [`k${i}${'x'.repeat(3000)}`, 1]));
  const many = await t.call('POST', path, { token: w.tokens.editor, body: { name: 'Many', company: 'Keys', ...keys } });
  expectStatus(many, 422);
  assert.is(many.body.errors.length, 6);
  assert.equal(many.body.errors.at(-1), { path: 'body', message: 'and 895 more unknown fields' });
  assert.ok(many.text.length < 4000, `${many.text.length} bytes`);
  // a row of a batch has them all in its reason
  const batch = await t.call('POST', path, { token: w.tokens.editor, body: { contacts: [{ name: 'Ok', company: 'Fine' }, { title: 5 }] } });
  expectStatus(batch, 202);
  const job = await waitForImport(t, w.tokens.viewer, w.orgId, ledgerId, batch.body.id);
  assert.equal([job.imported, job.invalid], [1, 1]);
  const reasons = (parse((await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/imports/${job.id}/errors`, { token: w.tokens.viewer })).text, { columns: true }) as { reason: string }[]).map((r) => r.reason);
  assert.equal(reasons, ['name is required; company is required; title must be a string']);
  expectStatus(await t.call('POST', path, { token: w.tokens.editor, body: { name: 'a', company: 'b', contacts: [] } }), 422);
  const big = await t.call('POST', path, { token: w.tokens.editor, body: { contacts: Array.from({ length: 1001 }, (_, i) => ({ name: `n${i}`, company: 'c' })) } });
  expectStatus(big, 413);
  assert.match(big.body.message, /CSV/);
  assert.is(t.rt.db.raw.prepare('SELECT count(*) FROM import_jobs WHERE ledger_id = ? AND submitted = 1001').pluck().get(ledgerId), 0, 'no job for a refused batch');
  expectStatus(await t.call('POST', `${ledgerPath(w.orgId, 'l_00000000000000000000000000')}/contacts`, { token: w.tokens.editor, body: { name: 'a', company: 'b' } }), 404);
  expectStatus(await t.call('POST', path, { token: w.tokens.viewer, body: { name: 'a', company: 'b' } }), 403);
  const exactly = await t.call('POST', path, { token: w.tokens.editor, body: { contacts: Array.from({ length: 1000 }, (_, i) => ({ name: `n${i}`, company: 'c' })) } });
  expectStatus(exactly, 202);
  const done = await waitForImport(t, w.tokens.editor, w.orgId, ledgerId, exactly.body.id);
  assert.is(done.imported, 1000);
});

A('the import list is newest first with paging; unknown imports are 404', async ({ t, w, ledgerId }) => {
  const r = await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/imports?limit=2`, { token: w.tokens.viewer });
  expectStatus(r, 200);
  assert.is(r.body.imports.length, 2);
  assert.ok(r.body.nextCursor);
  assert.ok(r.body.imports[0].createdAt >= r.body.imports[1].createdAt);
  const next = await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/imports?limit=2&cursor=${r.body.nextCursor}`, { token: w.tokens.viewer });
  expectStatus(next, 200);
  assert.not.ok(next.body.imports.some((i: any) => r.body.imports.some((j: any) => j.id === i.id)));
  // a later page enters the index at its cursor (spelt with OR, each page read from the newest import on)
  const plan = t.rt.ledger.repos.imports.explainImportsAfter().join(' | ');
  assert.match(plan, /SEARCH i USING INDEX import_jobs_by_ledger \(ledger_id=\? AND \(created_at,id\)<\(\?,\?\)\)/, plan);
  assert.not.match(plan, /TEMP B-TREE/, plan);
  expectStatus(await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/imports/imp_00000000000000000000000000`, { token: w.tokens.viewer }), 404);
  const alias = await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/contacts/imports/${r.body.imports[0].id}`, { token: w.tokens.viewer });
  expectStatus(alias, 200);
  assert.is(alias.body.id, r.body.imports[0].id);
});

A('Idempotency-Key: a retried POST gets its first job (200, no second import); another body under the key → 422 (D4 e)', async ({ t, w }) => {
  const ledgerId = await createLedger(t, w.tokens.editor, w.orgId, 'idempotent');
  const path = `${ledgerPath(w.orgId, ledgerId)}/contacts`;
  const body = { contacts: [{ name: 'Ann Lee', company: 'Acme' }, { name: 'Bo Chen', company: 'Globex' }] };
  const headers = { 'idempotency-key': 'crm-sync-2026-11-23-0001' };
  const first = await t.call('POST', path, { token: w.tokens.editor, body, headers });
  expectStatus(first, 202);
  const again = await Promise.all([1, 2].map(() => t.call('POST', path, { token: w.tokens.editor, body, headers })));
  for (const r of again) {
    expectStatus(r, 200, 'replayed');
    assert.is(r.body.id, first.body.id);
    assert.is(r.headers.get('idempotent-replayed'), 'true');
    assert.is(r.headers.get('location'), first.headers.get('location'));
  }
  // the same contacts with their keys in another order (a client that re-serializes) are the same request
  const reordered = { contacts: [{ company: 'Acme', name: 'Ann Lee' }, { company: 'Globex', name: 'Bo Chen' }] };
  const replay = await t.call('POST', path, { token: w.tokens.editor, body: reordered, headers });
  expectStatus(replay, 200, 'keys in another order');
  assert.is(replay.body.id, first.body.id);
  await waitForImport(t, w.tokens.editor, w.orgId, ledgerId, first.body.id);
  assert.is((await t.call('GET', `${path}?view=count`, { token: w.tokens.viewer })).body.count, 2, 'imported once');
  assert.is((await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/imports`, { token: w.tokens.viewer })).body.imports.length, 1);
  const other = await t.call('POST', path, { token: w.tokens.editor, body: { contacts: [{ name: 'Cy Poe', company: 'Initech' }] }, headers });
  expectStatus(other, 422);
  assert.is(other.body.code, 'idempotency_key_reused');
  // a job stored before 239622b (2026-11-24) has the fingerprint of JSON.stringify(contacts): an
  // upgraded database keeps it, and the client's retry is the same request (a tester's case: 422)
  const before = await t.call('POST', path, { token: w.tokens.editor, body: { contacts: [{ name: 'Old Key', company: 'Acme', title: 'CTO' }] }, headers: { 'idempotency-key': 'before-the-upgrade' } });
  expectStatus(before, 202);
  const oldHash = createHash('sha256').update(JSON.stringify([{ name: 'Old Key', company: 'Acme', title: 'CTO' }])).digest('hex');
  t.rt.db.raw.prepare('UPDATE import_jobs SET request_hash = ? WHERE id = ?').run(oldHash, before.body.id);
  const acrossUpgrade = await t.call('POST', path, { token: w.tokens.editor, body: { contacts: [{ name: 'Old Key', company: 'Acme', title: 'CTO' }] }, headers: { 'idempotency-key': 'before-the-upgrade' } });
  expectStatus(acrossUpgrade, 200, 'a retry across the upgrade');
  assert.is(acrossUpgrade.body.id, before.body.id);
  // the key is the caller's, per ledger: another ledger, or another caller (a service account, an
  // admin) picking the same key, makes its own job (a tester's case: it got the editor's job, or a 422)
  const elsewhere = await createLedger(t, w.tokens.editor, w.orgId, 'elsewhere');
  expectStatus(await t.call('POST', `${ledgerPath(w.orgId, elsewhere)}/contacts`, { token: w.tokens.editor, body, headers }), 202);
  const otherCaller = await t.call('POST', path, { token: w.tokens.admin, body: { contacts: [{ name: 'Di Moe', company: 'Hooli' }] }, headers });
  expectStatus(otherCaller, 202, 'another caller, the same key');
  assert.is.not(otherCaller.body.id, first.body.id);
  const sameBody = await t.call('POST', path, { token: w.tokens.admin, body, headers: { 'idempotency-key': 'admin-own-key' } });
  expectStatus(sameBody, 202);
  const adminRetry = await t.call('POST', path, { token: w.tokens.admin, body: { contacts: [{ name: 'Di Moe', company: 'Hooli' }] }, headers });
  expectStatus(adminRetry, 200, "the other caller's retry replays its own job");
  assert.is(adminRetry.body.id, otherCaller.body.id);
  // a malformed key (an empty one too) is a 400
  for (const bad of ['', 'x'.repeat(256), 'has space', 'naïve']) {
    // an empty header is a malformed key, not no key: the client meant to send one
    const r = await t.call('POST', path, { token: w.tokens.editor, body, headers: { 'idempotency-key': bad } });
    expectStatus(r, 400, bad);
    assert.is(r.body.code, 'invalid_idempotency_key');
  }
});

A('deleting rejected rows takes at most about a megabyte of them a chunk, at least one row, however many rows a chunk may take', async ({ t, w, ledgerId }) => {
  const imp = await addContacts(t, w.tokens.editor, w.orgId, ledgerId, [{ name: 'Big Rows', company: 'Acme' }]);
  const put = t.rt.db.raw.prepare("INSERT INTO import_rejections (import_id, row_no, line, reason, kind, raw) VALUES (?, ?, NULL, 'refused', 'invalid', ?)");
  const big = JSON.stringify({ notes: 'x'.repeat(600_000) });
  for (let row = 2; row <= 4; row++) put.run(imp.id, row, big);
  put.run(imp.id, 5, '{}');
  put.run(imp.id, 6, '{}');
  const imports = t.rt.ledger.repos.imports;
  const gone = [1, 2, 3, 4].map(() => t.rt.db.tx(() => imports.deleteRejections(imp.id, 1000)));
  assert.equal(gone, [1, 1, 3, 0], 'one 600 KB row a chunk, then the last big one with the small ones after it');
});

A("an ended import's rejected rows can be deleted (an erasure request): the rows go, the counts stay; not while it runs", async ({ t, w, ledgerId }) => {
  const imp = await addContacts(t, w.tokens.editor, w.orgId, ledgerId, [{ name: 'Kept Row', company: 'Acme' }, { company: 'Refused Without Name', email: 'refused.person@erasure.test' }]);
  const path = `${ledgerPath(w.orgId, ledgerId)}/imports/${imp.id}`;
  assert.match((await t.call('GET', `${path}/errors`, { token: w.tokens.viewer })).text, /refused\.person@erasure\.test/);
  expectStatus(await t.call('DELETE', `${path}/errors`, { token: w.tokens.viewer }), 403);
  expectStatus(await t.call('DELETE', `${path}/errors`, { token: w.tokens.editor }), 204);
  const after = await t.call('GET', `${path}/errors`, { token: w.tokens.viewer });
  assert.not.match(after.text, /refused/);
  assert.is(after.text.trim().split('\n').length, 1, 'the header alone');
  const job = (await t.call('GET', path, { token: w.tokens.viewer })).body;
  assert.equal([job.imported, job.invalid], [1, 1], 'the counts stay');
  const audit = await t.call('GET', `${ID}/orgs/${w.orgId}/audit?limit=5`, { token: w.tokens.admin });
  assert.equal(audit.body.events.find((e: any) => e.action === 'import.rejections_deleted').data, { ledgerId, deleted: 1 });
  expectStatus(await t.call('DELETE', `${ledgerPath(w.orgId, ledgerId)}/imports/imp_00000000000000000000000000/errors`, { token: w.tokens.editor }), 404);
  // one still waiting to run: refused, nothing deleted
  const hold = holdBulkJobs(t);
  try {
    const pending = await t.call('POST', `${ledgerPath(w.orgId, ledgerId)}/contacts`, { token: w.tokens.editor, body: { contacts: [{ company: 'no name either' }] } });
    const busy = await t.call('DELETE', `${ledgerPath(w.orgId, ledgerId)}/imports/${pending.body.id}/errors`, { token: w.tokens.editor });
    expectStatus(busy, 409);
    assert.is(busy.body.code, 'import_in_progress');
  } finally {
    await hold.release();
  }
});

A('delete one contact and bulk delete; counts stay exact; ids of other ledgers are not touched', async ({ t, w, ledgerId }) => {
  const other = await createLedger(t, w.tokens.editor, w.orgId, 'other');
  await addContacts(t, w.tokens.editor, w.orgId, other, [{ name: 'Keep', company: 'K' }]);
  const keep = (await t.call('GET', `${ledgerPath(w.orgId, other)}/contacts`, { token: w.tokens.viewer })).body.contacts[0].id;
  const before = (await t.call('GET', ledgerPath(w.orgId, ledgerId), { token: w.tokens.viewer })).body.contactCount;
  const page = (await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/contacts?limit=3`, { token: w.tokens.viewer })).body.contacts;
  expectStatus(await t.call('DELETE', `${ledgerPath(w.orgId, ledgerId)}/contacts/${page[0].id}`, { token: w.tokens.viewer }), 403);
  expectStatus(await t.call('DELETE', `${ledgerPath(w.orgId, ledgerId)}/contacts/${page[0].id}`, { token: w.tokens.editor }), 204);
  expectStatus(await t.call('DELETE', `${ledgerPath(w.orgId, ledgerId)}/contacts/${page[0].id}`, { token: w.tokens.editor }), 404);
  expectStatus(await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/contacts/${page[0].id}`, { token: w.tokens.editor }), 404);
  expectStatus(await t.call('DELETE', `${ledgerPath(w.orgId, ledgerId)}/contacts/${keep}`, { token: w.tokens.editor }), 404);
  const bulk = await t.call('POST', `${ledgerPath(w.orgId, ledgerId)}/contacts/bulk_delete`, { token: w.tokens.editor, body: { contactIds: [page[1].id, page[2].id, page[2].id, keep, 'c_nope'] } });
  expectStatus(bulk, 200);
  assert.equal(bulk.body, { countRowsDeleted: 2 });
  // the audit log names the contacts deleted, as a single delete's entry does (which contacts an erasure removed)
  const audit = await t.call('GET', `${ID}/orgs/${w.orgId}/audit?limit=5`, { token: w.tokens.admin });
  const entry = audit.body.events.find((e: any) => e.action === 'contacts.deleted');
  assert.equal(entry.data, { requested: 5, deleted: 2, contactIds: [page[1].id, page[2].id] });
  const after = (await t.call('GET', ledgerPath(w.orgId, ledgerId), { token: w.tokens.viewer })).body.contactCount;
  assert.is(after, before - 3);
  const counted = await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/contacts?view=count`, { token: w.tokens.viewer });
  assert.is(counted.body.count, after);
  expectStatus(await t.call('GET', `${ledgerPath(w.orgId, other)}/contacts/${keep}`, { token: w.tokens.viewer }), 200);
  // ids of no contact here (gone, or another ledger's) delete nothing, and write nothing to the audit log
  const audited = () => t.rt.db.raw.prepare("SELECT count(*) FROM audit_log WHERE action = 'contacts.deleted'").pluck().get() as number;
  const entries = audited();
  const noop = await t.call('POST', `${ledgerPath(w.orgId, ledgerId)}/contacts/bulk_delete`, { token: w.tokens.editor, body: { contactIds: [page[1].id, keep, 'c_nope'] } });
  assert.equal(noop.body, { countRowsDeleted: 0 });
  assert.is(audited(), entries, 'no entry for a call that deleted nothing');
  const none = await t.call('POST', `${ledgerPath(w.orgId, ledgerId)}/contacts/bulk_delete`, { token: w.tokens.editor, body: { contactIds: [] } });
  expectStatus(none, 200, 'an empty list deletes nothing (a client sending its last, empty batch)');
  assert.equal(none.body, { countRowsDeleted: 0 });
  const tooMany = await t.call('POST', `${ledgerPath(w.orgId, ledgerId)}/contacts/bulk_delete`, { token: w.tokens.editor, body: { contactIds: Array.from({ length: 1001 }, (_, i) => `c_${i}`) } });
  expectStatus(tooMany, 413, 'more ids than one call takes, like an oversized batch of contacts');
  assert.match(tooMany.body.message, /At most 1000 contact ids per call \(1001 sent\)/);
  assert.is((await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/contacts?view=count`, { token: w.tokens.viewer })).body.count, after, 'nothing deleted by either');
  expectStatus(await t.call('POST', `${ledgerPath(w.orgId, 'l_00000000000000000000000000')}/contacts/bulk_delete`, { token: w.tokens.editor, body: { contactIds: [] } }), 404);
  expectStatus(await t.call('POST', `${ledgerPath(w.orgId, ledgerId)}/contacts/bulk_delete`, { token: w.tokens.editor, body: { ids: ['x'] } }), 422);
});

A('a deleted contact is not left readable in the database file nor in a backup taken afterwards (secure_delete; an erasure request)', async ({ t, w, ledgerId }) => {
  const mark = randomBytes(6).toString('hex');
  const one = { name: `Erasure One ${mark}`, company: `Forgetting ${mark} Inc`, email: `one.${mark}@erasure.test`, linkedin: `https://www.linkedin.com/in/erasure-one-${mark}`, referenceId: `ref-one-${mark}` };
  const two = { name: `Erasure Two ${mark}`, company: 'Initech', email: `two.${mark}@erasure.test` };
  await addContacts(t, w.tokens.editor, w.orgId, ledgerId, [one, two, { name: 'Stays', company: `Kept ${mark}` }]);
  const path = `${ledgerPath(w.orgId, ledgerId)}/contacts`;
  const idOf = async (name: string) => (await t.call('GET', `${path}?name=${encodeURIComponent(name)}`, { token: w.tokens.viewer })).body.contacts[0].id as string;
  expectStatus(await t.call('DELETE', `${path}/${await idOf(one.name)}`, { token: w.tokens.editor }), 204);
  expectStatus(await t.call('POST', `${path}/bulk_delete`, { token: w.tokens.editor, body: { contactIds: [await idOf(two.name)] } }), 200);
  const raw = t.rt.db.raw;
  raw.pragma('wal_checkpoint(TRUNCATE)');
  const backup = join(t.dataDir, `erasure-${mark}.db`);
  await backupTo(raw, backup);
  for (const file of [join(t.dataDir, 'contact-ledger.db'), backup]) {
    const bytes = readFileSync(file).toString('latin1');
    assert.ok(bytes.includes(`Kept ${mark}`), `${file}: the contact kept is there (the search works)`);
    for (const value of [one.email, one.linkedin, one.referenceId, one.company, two.name, two.email]) assert.not.ok(bytes.includes(value), `${file} still holds ${value}`);
  }
});

A.run();

// ── listing ───────────────────────────────────────────────────────────────
const Q = suite<Ctx & { ledgerId: string; path: string }>('listing contacts');
const DAY = 86_400_000;
Q.before(async (ctx) => {
  ctx.t = await startApp();
  ctx.w = await seedWorld(ctx.t);
  ctx.ledgerId = await createLedger(ctx.t, ctx.w.tokens.editor, ctx.w.orgId, 'list');
  ctx.path = `${ledgerPath(ctx.w.orgId, ctx.ledgerId)}/contacts`;
  const names = ['delta', 'Alpha', 'charlie', 'Bravo', 'echo', 'Émile', 'foxtrot_1', 'golf%2'];
  const contacts = Array.from({ length: 250 }, (_, i) => ({
    name: `${names[i % names.length]} ${String(i).padStart(3, '0')}`,
    company: i % 2 ? 'Acme Corp' : 'Globex',
    title: i % 3 ? 'Software Engineer' : 'VP Sales',
    email: `p${i}@example.test`,
    linkedin: `linkedin.com/in/person-${i}`,
    referenceId: `ref-${i}`,
  }));
  await addContacts(ctx.t, ctx.w.tokens.editor, ctx.w.orgId, ctx.ledgerId, contacts);
  // Change times as change tracking (issue 4) will set them: a job change bumps both.
  const db = ctx.t.rt.db.raw;
  const base = Date.parse('2026-11-01T00:00:00Z');
  const upd = db.prepare('UPDATE contacts SET last_info_changed_at = ?, last_job_changed_at = ?, is_verified = 1 WHERE ledger_id = ? AND reference_id = ?');
  for (let i = 0; i < 250; i += 5) upd.run(base + i * DAY / 10, i % 10 === 0 ? base + i * DAY / 10 : null, ctx.ledgerId, `ref-${i}`);
});
Q.after(async (ctx) => ctx.t.close());

Q('default order is creation order; pages join up exactly with no repeats (empty ledger too)', async ({ t, w, path, ledgerId }) => {
  const all = await listAll(t, w.tokens.viewer, path, '', 37);
  assert.is(all.length, 250);
  assert.is(new Set(all.map((c) => c.id)).size, 250);
  assert.equal(all.map((c) => c.referenceId).slice(0, 3), ['ref-0', 'ref-1', 'ref-2']);
  const last = await t.call('GET', `${path}?limit=250`, { token: w.tokens.viewer });
  assert.is(last.body.contacts.length, 250);
  assert.is(last.body.nextCursor, null, 'an exactly full last page has no next cursor');
  const empty = await createLedger(t, w.tokens.editor, w.orgId, 'empty');
  const e = await t.call('GET', `${ledgerPath(w.orgId, empty)}/contacts`, { token: w.tokens.viewer });
  assert.equal(e.body, { contacts: [], nextCursor: null });
  assert.equal((await t.call('GET', `${ledgerPath(w.orgId, empty)}/contacts?view=count`, { token: w.tokens.viewer })).body, { count: 0 });
  void ledgerId;
});

Q('contacts inserted between pages appear once, at the end; none is skipped', async ({ t, w, path, ledgerId }) => {
  const first = await t.call('GET', `${path}?limit=100`, { token: w.tokens.viewer });
  await addContacts(t, w.tokens.editor, w.orgId, ledgerId, [{ name: 'Late Comer', company: 'Z', referenceId: 'late-1' }]);
  const seen = [...first.body.contacts];
  let cursor = first.body.nextCursor;
  while (cursor) {
    const r = await t.call('GET', `${path}?limit=100&cursor=${cursor}`, { token: w.tokens.viewer });
    seen.push(...r.body.contacts);
    cursor = r.body.nextCursor;
  }
  assert.is(seen.length, 251);
  assert.is(seen.at(-1).referenceId, 'late-1');
  assert.is(new Set(seen.map((c) => c.id)).size, 251);
  await t.call('POST', `${path}/bulk_delete`, { token: w.tokens.editor, body: { contactIds: [seen.at(-1).id] } });
});

Q('in every sort, contacts inserted between pages never make the walk skip or repeat one; those after the cursor appear once', async ({ t, w, path, ledgerId }) => {
  for (const sort of ['+name', '-name', '-createdAt', '-lastInfoChangedAt', '-lastJobChangedAt']) {
    const before = await listAll(t, w.tokens.viewer, path, `sortBy=${encodeURIComponent(sort)}`, 1000);
    const first = await t.call('GET', `${path}?limit=100&sortBy=${encodeURIComponent(sort)}`, { token: w.tokens.viewer });
    const tag = sort.replace(/\W/g, '');
    // one that sorts before the cursor's position and one after it, in either direction of the name sorts
    const added = await addContacts(t, w.tokens.editor, w.orgId, ledgerId, [
      { name: `0 first ${tag}`, company: 'Z', referenceId: `early-${tag}` },
      { name: `ω last ${tag}`, company: 'Z', referenceId: `late-${tag}` },
    ]);
    assert.is(added.imported, 2);
    const seen = [...first.body.contacts];
    let cursor = first.body.nextCursor;
    while (cursor) {
      const r = await t.call('GET', `${path}?limit=100&sortBy=${encodeURIComponent(sort)}&cursor=${cursor}`, { token: w.tokens.viewer });
      seen.push(...r.body.contacts);
      cursor = r.body.nextCursor;
    }
    const ids = seen.map((c) => c.id);
    assert.is(new Set(ids).size, ids.length, `${sort}: no contact twice`);
    assert.ok(before.every((c) => ids.includes(c.id)), `${sort}: every contact there before is seen`);
    // a new contact behind the cursor is not seen, one ahead of it is (where each lands in the
    // change-time sorts, among the unchanged contacts by seq, depends on the first page: at most once, above)
    const newcomers = seen.filter((c) => /^(early|late)-/.test(c.referenceId)).map((c) => c.referenceId);
    const expected = { '+name': [`late-${tag}`], '-name': [`early-${tag}`], '-createdAt': [] }[sort as '+name'];
    if (expected) assert.equal(newcomers, expected, sort);
    const doneIds = (await listAll(t, w.tokens.viewer, path, `referenceId=early-${tag}`)).concat(await listAll(t, w.tokens.viewer, path, `referenceId=late-${tag}`)).map((c) => c.id);
    await t.call('POST', `${path}/bulk_delete`, { token: w.tokens.editor, body: { contactIds: doneIds } });
  }
});

Q('every sort orders correctly across pages', async ({ t, w, path }) => {
  const check = async (sort: string, key: (c: any) => any, cmp: (a: any, b: any) => number) => {
    const all = await listAll(t, w.tokens.viewer, path, `sortBy=${encodeURIComponent(sort)}`, 33);
    assert.is(all.length, 250, sort);
    assert.is(new Set(all.map((c) => c.id)).size, 250, `${sort}: no repeats`);
    for (let i = 1; i < all.length; i++) assert.ok(cmp(key(all[i - 1]), key(all[i])) <= 0, `${sort} out of order at ${i}: ${key(all[i - 1])} then ${key(all[i])}`);
    return all;
  };
  // by the folded name (accents removed, lower case, punctuation as spaces): Émile between echo and foxtrot
  const ci = (a: string, b: string) => (nameKey(a) < nameKey(b) ? -1 : nameKey(a) > nameKey(b) ? 1 : 0);
  await check('+name', (c) => c.name, ci);
  await check('-name', (c) => c.name, (a, b) => ci(b, a));
  await check('+createdAt', (c) => c.createdAt, (a, b) => (a < b ? -1 : a > b ? 1 : 0));
  await check('-createdAt', (c) => c.createdAt, (a, b) => (a > b ? -1 : a < b ? 1 : 0));
  const nullsLast = (a: string | null, b: string | null) => (a === b ? 0 : a === null ? 1 : b === null ? -1 : a > b ? -1 : 1);
  const job = await check('-lastJobChangedAt', (c) => c.lastJobChangedAt, nullsLast);
  assert.ok(job[0].lastJobChangedAt !== null && job.at(-1).lastJobChangedAt === null);
  await check('-lastInfoChangedAt', (c) => c.lastInfoChangedAt, nullsLast);
  // "+" written raw in a URL arrives as a space; a bare field name means ascending
  const plain = await t.call('GET', `${path}?sortBy=+name&limit=1`, { token: w.tokens.viewer });
  const bare = await t.call('GET', `${path}?sortBy=name&limit=1`, { token: w.tokens.viewer });
  assert.is(plain.body.contacts[0].id, bare.body.contacts[0].id);
});

Q('every filter selects exactly the matching contacts', async ({ t, w, path }) => {
  const count = async (q: string) => {
    const all = await listAll(t, w.tokens.viewer, path, q, 1000);
    const c = await t.call('GET', `${path}?${q}&view=count`, { token: w.tokens.viewer });
    expectStatus(c, 200, q);
    assert.is(c.body.count, all.length, `view=count agrees for ${q}`);
    return all;
  };
  const base = Date.parse('2026-11-01T00:00:00Z');
  const info = await count(`lastInfoChangedAt=${new Date(base + 100 * DAY / 10).toISOString()}`);
  assert.is(info.length, 30, 'i = 100, 105, … 245 (≥ is inclusive)');
  assert.ok(info.every((c) => Date.parse(c.lastInfoChangedAt) >= base + 10 * DAY));
  assert.is((await count('lastInfoChangedAt=2026-11-01')).length, 50, 'a plain date');
  assert.is((await count('lastInfoChangedAt=2026-11-01T00:00:00')).length, 50, 'no zone = UTC');
  assert.is((await count('lastInfoChangedAt=2026-11-01T01:00:00%2B01:00')).length, 50, 'an offset');
  assert.is((await count('lastInfoChangedAt=2026-11-01T01:00:00+01:00')).length, 50, 'an offset whose + was sent unencoded (it arrives as a space)');
  assert.is((await count('lastInfoChangedAt=2026-11-01T01:00+0100')).length, 50, 'the same without colons');
  assert.is((await count('lastInfoChangedAt=2026-11-01T01:00:00.000+01')).length, 50, 'an hours-only offset whose + was sent unencoded');
  assert.is((await count('lastInfoChangedAt=2026-11-01T01:00+01')).length, 50, 'the same without seconds');
  assert.is((await count('lastInfoChangedAt=2026-11-01%2001:00:00+01:00')).length, 50, 'a space between date and time, and an unencoded +');
  assert.is((await count('lastInfoChangedAt=2026-11-01&lastInfoChangedAtBefore=2026-11-02')).length, 2, 'i = 0, 5');
  // a bound between two milliseconds: i = 0 changed at 00:00:00.000, before 00:00:00.0005 and not at or after it
  assert.is((await count('lastInfoChangedAtBefore=2026-11-01T00:00:00.0005Z')).length, 1, 'sub-millisecond upper bound');
  assert.is((await count('lastInfoChangedAt=2026-11-01T00:00:00.0005Z')).length, 49, 'sub-millisecond lower bound');
  assert.is((await count('lastInfoChangedAt=2026-11-01T00:00:00.000000Z')).length, 50, 'zeros beyond the millisecond');
  assert.is((await count('lastJobChangedAt=2026-11-01')).length, 25);
  assert.is((await count('lastJobChangedAtBefore=2026-11-11')).length, 10);
  assert.is((await count('referenceId=ref-7')).length, 1);
  assert.is((await count('referenceId=REF-7')).length, 0, 'referenceId is exact');
  assert.is((await count('referenceId=%20ref-7%20')).length, 1, 'trimmed, as imports store it');
  assert.is((await count(`linkedin=${encodeURIComponent('https://www.LinkedIn.com/in/Person-7/')}`)).length, 1, 'linkedin canonicalized');
  assert.is((await count('email=P7@EXAMPLE.TEST')).length, 1);
  assert.is((await count('name=ALPHA')).length, 32, 'name is a case-insensitive substring');
  assert.is((await count('name=émile')).length, 31, 'non-ASCII case folding');
  assert.is((await count('name=_')).length, 31, '_ is literal');
  assert.is((await count('name=%25')).length, 31, '% is literal');
  assert.is((await count('company=acme')).length, 125);
  assert.is((await count('title=vp%20sales')).length, 84);
  assert.is((await count('isVerified=true')).length, 50);
  assert.is((await count('isVerified=false')).length, 200);
  assert.is((await count('company=globex&title=vp&isVerified=true')).length, 9, 'filters combine (i ≡ 0 mod 30 and mod 5 → 0,30,…,240 → 9)');
  const first = (await t.call('GET', `${path}?limit=1`, { token: w.tokens.viewer })).body.contacts[0];
  assert.is((await count(`importId=${first.importId}`)).length, 250);
  const created = Date.parse(first.createdAt);
  assert.is((await count(`createdAfter=${new Date(created).toISOString()}`)).length, 250);
  assert.is((await count(`createdBefore=${new Date(created).toISOString()}`)).length, 0);
  // filters combine with every sort
  for (const sort of ['-lastInfoChangedAt', '+name', '-createdAt']) {
    const r = await listAll(t, w.tokens.viewer, path, `lastInfoChangedAt=2026-11-11&sortBy=${encodeURIComponent(sort)}`, 7);
    assert.is(r.length, 30, sort);
  }
});

Q('every cursor the server issues is accepted back: names at the length limit whose JSON escaping is longest', async ({ t, w }) => {
  const ledger = await createLedger(t, w.tokens.editor, w.orgId, 'long names');
  const path = `${ledgerPath(w.orgId, ledger)}/contacts`;
  // 256 characters (the limit) that JSON escapes to 6 bytes each (\u0001), 2 bytes (" and \\), 3 bytes (€ in UTF-8),
  // after the one letter that makes each a name
  const names = ['\u0001', '"', '\\', '€'].map((c) => `A${c.repeat(255)}`).concat(['Ann Lee', 'zed']);
  const imp = await addContacts(t, w.tokens.editor, w.orgId, ledger, names.map((name) => ({ name, company: 'X' })));
  assert.is(imp.imported, names.length);
  let longest = 0;
  for (const sort of ['+name', '-name']) {
    const seen: any[] = [];
    let cursor: string | null = null;
    do {
      const r: any = await t.call('GET', `${path}?sortBy=${encodeURIComponent(sort)}&limit=1${cursor ? `&cursor=${cursor}` : ''}`, { token: w.tokens.viewer });
      expectStatus(r, 200, `${sort} page ${seen.length + 1}`);
      seen.push(...r.body.contacts);
      cursor = r.body.nextCursor;
      longest = Math.max(longest, cursor?.length ?? 0);
    } while (cursor);
    assert.is(seen.length, names.length, sort);
    assert.equal(new Set(seen.map((c) => c.name)), new Set(names), `${sort}: every row once`);
  }
  assert.ok(longest > 2048, `the \\u0001 name's cursor is longer than the old 2,048 cap (${longest})`);
  // a cap remains: a forged cursor longer than any the server issues, or with a longer name, is refused
  const forge = (name: string) => Buffer.from(JSON.stringify(['contacts+name', name, 1, 0])).toString('base64url');
  for (const cursor of [forge('\u0001'.repeat(257)), forge('a'.repeat(257)), 'A'.repeat(4000)]) {
    const r = await t.call('GET', `${path}?sortBy=%2Bname&cursor=${cursor}`, { token: w.tokens.viewer });
    expectStatus(r, 400, `forged cursor of ${cursor.length}`);
    assert.ok(r.body.errors.some((e: any) => e.path === 'cursor'));
  }
});

Q('names sort by their folded form: accents, case and letters like ø do not move a name past z, page by page as in one page', async ({ t, w }) => {
  const ledger = await createLedger(t, w.tokens.editor, w.orgId, 'accents');
  const path = `${ledgerPath(w.orgId, ledger)}/contacts`;
  const names = ['Zoe Zimmer', 'Émile Zola', 'emma stone', 'Ava Adams', 'Øyvind Ås', 'Ángel Ruiz', "O'Brien Kate", 'Oliver Obi', 'ZOE ALBA'];
  const imp = await addContacts(t, w.tokens.editor, w.orgId, ledger, names.map((name) => ({ name, company: 'X' })));
  assert.is(imp.imported, names.length);
  const ascending = ['Ángel Ruiz', 'Ava Adams', 'Émile Zola', 'emma stone', "O'Brien Kate", 'Oliver Obi', 'Øyvind Ås', 'ZOE ALBA', 'Zoe Zimmer'];
  for (const [sort, expected] of [['+name', ascending], ['-name', [...ascending].reverse()]] as const) {
    const whole = await t.call('GET', `${path}?sortBy=${encodeURIComponent(sort)}`, { token: w.tokens.viewer });
    assert.equal(whole.body.contacts.map((c: any) => c.name), expected, `${sort}, one page`);
    const paged: string[] = [];
    let cursor: string | null = null;
    do {
      const r: any = await t.call('GET', `${path}?sortBy=${encodeURIComponent(sort)}&limit=2${cursor ? `&cursor=${cursor}` : ''}`, { token: w.tokens.viewer });
      expectStatus(r, 200);
      paged.push(...r.body.contacts.map((c: any) => c.name));
      cursor = r.body.nextCursor;
    } while (cursor);
    assert.equal(paged, expected, `${sort}, pages of two`);
  }
});

Q('bad parameters are 400 naming the parameter and never reach SQL (I5, I6)', async ({ t, w, path, ledgerId }) => {
  const bad = async (q: string, name: string) => {
    const r = await t.call('GET', `${path}?${q}`, { token: w.tokens.viewer });
    expectStatus(r, 400, q);
    assert.match(r.headers.get('content-type')!, /problem\+json/);
    assert.ok(r.body.errors.some((e: any) => e.path === name), `${q} names ${name}: ${JSON.stringify(r.body.errors)}`);
  };
  await bad('sortBy=name;DROP TABLE contacts--', 'sortBy');
  await bad('sortBy=(CASE WHEN 1 THEN name END)', 'sortBy');
  await bad('sortBy=%2BlastJobChangedAt', 'sortBy');
  await bad('limit=-1', 'limit');
  await bad('limit=1e9', 'limit');
  await bad('limit=0', 'limit');
  await bad('limit=1001', 'limit');
  await bad('limit=1&limit=2', 'limit');
  await bad('sortBy[]=name', 'sortBy[]');
  await bad('nmae=x', 'nmae');
  await bad('lastInfoChangedAt=yesterday', 'lastInfoChangedAt');
  await bad('lastJobChangedAt=2026-13-01', 'lastJobChangedAt');
  // zone offsets beyond ±23:59 (RFC 3339), also for view=count
  await bad('lastJobChangedAt=2026-11-23T00:00:00%2B24:60&view=count', 'lastJobChangedAt');
  await bad('createdAfter=2026-11-23T22:00%2B99:99', 'createdAfter');
  await bad('createdBefore=2026-11-23T22:00-24:00', 'createdBefore');
  await bad('createdAfter=0000-01-01', 'createdAfter');
  await bad('isVerified=yes', 'isVerified');
  await bad('importId=1%20OR%201=1', 'importId');
  // what an import id looks like, not only its prefix (a tester's imp_nope was told it must be imp_…)
  const shape = await t.call('GET', `${path}?importId=imp_nope`, { token: w.tokens.viewer });
  assert.equal(shape.body.errors, [{ path: 'importId', message: 'must be an import id as its import was answered with: imp_ and 26 lower-case letters or digits' }]);
  await bad('linkedin=https://example.com/x', 'linkedin');
  await bad('view=all', 'view');
  await bad('view=count&limit=5', 'limit');
  await bad('cursor=abc', 'cursor');
  // percent-encoding that is not UTF-8 is refused, not looked for with U+FFFD in its place
  await bad('name=%FF', 'name');
  await bad('company=Caf%E9', 'company');
  await bad('title=%C3%28x', 'title');
  const bytes = await t.call('GET', `${path}?name=%FF`, { token: w.tokens.viewer });
  assert.match(bytes.body.detail, /name: is not UTF-8 once percent-decoded/);
  assert.is((await t.call('GET', `${path}?name=%C3%A9&view=count`, { token: w.tokens.viewer })).status, 200, 'é as UTF-8 is fine');
  // schema messages are written for people, not zod's defaults
  const empty = await t.call('GET', `${path}?cursor=`, { token: w.tokens.viewer });
  assert.equal(empty.body.errors, [{ path: 'cursor', message: 'must not be empty' }]);
  const other = await t.call('GET', `${path}?sortBy=%2Bname&limit=1`, { token: w.tokens.viewer });
  await bad(`cursor=${other.body.nextCursor}`, 'cursor'); // a cursor of another sort
  const forged = Buffer.from(JSON.stringify(['contacts+createdAt', "1 OR 1=1", 1, 0])).toString('base64url');
  await bad(`cursor=${forged}`, 'cursor');
  const offset = await t.call('GET', `${path}?lastInfoChangedAt=2026-11-23T22:00%2B99:99`, { token: w.tokens.viewer });
  const error = offset.body.errors.find((e: any) => e.path === 'lastInfoChangedAt');
  assert.match(error.message, /ISO 8601.*years 0001–9999 \(ending before year 10000 in UTC, to the millisecond rounded up\).*±23:59/, 'the message says what is accepted, also of the last nanoseconds of 9999 (a tester\'s case)');
  // which of ISO 8601's forms: the basic one is ISO 8601 too, and was told it must be ISO 8601 (two testers' cases)
  const basic = await t.call('GET', `${path}?lastJobChangedAt=20261202T114024Z`, { token: w.tokens.viewer });
  assert.match(basic.body.errors[0].message, /^must be a timestamp in ISO 8601's extended format, 2026-11-01T09:30:00\.5Z \(.*up to nine fractional digits.*\), or a date \(2026-11-01\)/);
  // years below 100 are the years written (not 1900–1999): every contact was created after 0001-01-01
  for (const q of ['createdAfter=0001-01-01', 'createdAfter=0001-01-01T00:00%2B01:00', 'createdAfter=0099-12-31T23:59:59.999Z', 'createdBefore=9999-12-31']) {
    const all = await t.call('GET', `${path}?${q}&view=count`, { token: w.tokens.viewer });
    expectStatus(all, 200, q);
    assert.is(all.body.count, 250, q);
  }
  const none = await t.call('GET', `${path}?createdBefore=0001-01-01&view=count`, { token: w.tokens.viewer });
  expectStatus(none, 200);
  assert.is(none.body.count, 0);
  const literal = await t.call('GET', `${path}?name=${encodeURIComponent("%' OR 1=1--")}`, { token: w.tokens.viewer });
  expectStatus(literal, 200);
  assert.is(literal.body.contacts.length, 0);
  assert.is(t.rt.db.raw.prepare('SELECT count(*) FROM contacts WHERE ledger_id = ?').pluck().get(ledgerId), 250, 'table intact');
});

Q('every list query is an index scan, never a full scan or a sort of the whole ledger', ({ t, ledgerId }) => {
  const repo = t.rt.ledger.repos.contacts;
  const filters: Record<string, unknown>[] = [
    {}, { lastJobChangedAt: 0 }, { lastInfoChangedAt: 0 }, { lastInfoChangedAt: 0, lastInfoChangedAtBefore: 1e15 }, { lastJobChangedAtBefore: 1e15 },
    { referenceId: 'x' }, { linkedin: 'https://www.linkedin.com/in/x' }, { email: 'x@y.z' }, { name: 'a' }, { company: 'a' }, { title: 'a' },
    { isVerified: true }, { importId: 'imp_x' }, { createdAfter: 0, createdBefore: 1e15 }, { name: 'é' },
  ];
  const sorts = ['+createdAt', '-createdAt', '+name', '-name', '-lastJobChangedAt', '-lastInfoChangedAt'] as const;
  for (const f of filters) {
    for (const sort of sorts) {
      for (const after of [undefined, { value: sort.includes('name') ? 'm' : 5, seq: 10 }, { value: null, seq: 10, nulls: true }]) {
        if (after?.nulls && !sort.includes('Changed')) continue;
        const plans = repo.explainList(ledgerId, f as never, sort, after as never);
        for (const plan of plans) {
          const text = plan.join(' | ');
          assert.ok(plan.some((d) => /USING (COVERING )?INDEX contacts_by_/.test(d)), `${JSON.stringify(f)} ${sort}: ${text}`);
          assert.not.ok(plan.some((d) => /^SCAN contacts$/.test(d)), `full scan for ${JSON.stringify(f)} ${sort}: ${text}`);
          // sorting in a temporary b-tree happens only for equality lookups, small change-time ranges and names few contacts can have
          const sortsInTemp = plan.some((d) => /TEMP B-TREE/.test(d));
          const bounded = ['referenceId', 'linkedin', 'email', 'importId', 'lastJobChangedAt', 'lastInfoChangedAt', 'name'].some((k) => k in f);
          if (sortsInTemp) assert.ok(bounded, `unbounded sort for ${JSON.stringify(f)} ${sort}: ${text}`);
        }
      }
    }
    // a download by a change time reads its rows by seq (contacts-repo downloadRowsOf): one primary-key look-up each, whatever the filter
    const byRowid = repo.explainRowsOf(ledgerId, f as never).join(' | ');
    assert.match(byRowid, /^SEARCH contacts USING INTEGER PRIMARY KEY \(rowid=\?\)/, `${JSON.stringify(f)}: ${byRowid}`);
    assert.not.match(byRowid, /INDEX contacts_by|SCAN contacts/, `${JSON.stringify(f)}: ${byRowid}`);
  }
});

Q('the name-key condition of a name search never drops a name the search finds: every substring of names of many scripts, in any case', ({ t }) => {
  const names = [
    'Søren Kierkegaard', "O'Brien", 'D’Angelo', 'Jean-Luc Picard', 'Zoë Saldaña', 'Zoe\u0308 Decomposed', 'José Ñúñez', 'Łukasz Żółć', 'Straße Müller', 'ẞIG Letter',
    'ŒUVRE Cœur', 'Þór Ðuð', 'İsmail Işık', 'ΟΔΥΣΣΕΑΣ Παπαδόπουλος', 'Σίσυφος Σ.', 'Иван Петров', '王小明', 'Nguyễn Văn Ánh', 'Ærø Æble', 'ǅemal ǈuba',
    'ﬁnn ﬂy ﬀ', 'Kelvin \u212a', 'Smith & Wesson', 'A. B. Cé', 'Mary  Ann', '  Lead Space', 'Ann-Marie O’Neil', 'ÅSA ÅKESSON', 'Đorđe Ħamrun ŧest Ŋ ĸ',
    '100% real_name \\ x', 'ᾼ Greek', '① Ⅻ',
    // scripts whose marks make other letters (twenty-fifth session: the key keeps them)
    'कमला वर्मा', 'ராமன் க்ஷ', 'ダン・バンダイ', 'タ\u3099ン decomposed', 'ดวงใจ', '김철수', 'שָׁלוֹם', 'مُحَمَّد',
  ];
  const like = t.rt.db.raw.prepare<[string, string], number>("SELECT ? LIKE ? ESCAPE '\\'").pluck();
  const asciiLower = (s: string) => s.replace(/[A-Z]/g, (c) => c.toLowerCase());
  let checked = 0;
  for (const name of names) {
    const key = nameKey(name);
    for (let i = 0; i < name.length; i++) {
      for (let j = i + 1; j <= Math.min(name.length, i + 8); j++) {
        for (const needle of new Set([name.slice(i, j), name.slice(i, j).toUpperCase(), name.slice(i, j).toLowerCase()])) {
          // what the search itself finds (contacts-list-repo: LIKE for an ASCII needle, or folding where the name holds a character that folds to ASCII; else Unicode folding)
          const folded = foldForContains(name).includes(foldForContains(needle));
          const found = /^[\x00-\x7f]*$/.test(needle) ? asciiLower(name).includes(asciiLower(needle)) || ([...FOLDS_TO_ASCII].some((c) => name.includes(c)) && folded) : folded;
          if (!found) continue;
          const pattern = nameKeyPattern(needle);
          if (pattern !== undefined) assert.is(like.get(key, pattern), 1, `${JSON.stringify(name)} (key ${JSON.stringify(key)}) is found by ${JSON.stringify(needle)} but not by ${pattern}`);
          checked++;
        }
      }
    }
  }
  assert.ok(checked > 1000, `${checked}`);
});

Q('a name search few names can answer reads them from the name index and sorts them, in every sort', ({ t, ledgerId }) => {
  const repo = t.rt.ledger.repos.contacts;
  for (const sort of ['+createdAt', '-createdAt', '-lastJobChangedAt', '+name'] as const) {
    const plan = repo.explainList(ledgerId, { name: 'søren' } as never, sort)[0]!.join(' | ');
    assert.match(plan, /INDEX contacts_by_name/, `${sort}: ${plan}`);
  }
  // a ledger above 100,000 contacts walks the sort order: reading its whole name index to find out
  // would cost more than the walk saves for a common name
  const raw = t.rt.db.raw;
  const count = raw.prepare('SELECT contact_count FROM ledgers WHERE id = ?').pluck().get(ledgerId);
  raw.prepare('UPDATE ledgers SET contact_count = 100001 WHERE id = ?').run(ledgerId);
  try {
    assert.match(repo.explainList(ledgerId, { name: 'søren' } as never, '+createdAt')[0]!.join(' | '), /INDEX contacts_by_created/);
  } finally {
    raw.prepare('UPDATE ledgers SET contact_count = ? WHERE id = ?').run(count, ledgerId);
  }
});

Q('a change-time filter with many matches walks the sort index instead of sorting them all', ({ t, ledgerId }) => {
  const repo = t.rt.ledger.repos.contacts;
  const db = t.rt.db.raw;
  const small = repo.explainList(ledgerId, { lastInfoChangedAt: 0 }, '+createdAt')[0]!.join(' ');
  assert.match(small, /contacts_by_info_change/, 'few matches (50): the range index');
  const big = createLedgerRows(db, ledgerId, 6000);
  const large = repo.explainList(ledgerId, { lastInfoChangedAt: 0 }, '+createdAt')[0]!.join(' ');
  assert.match(large, /contacts_by_created/, 'many matches: the sort index');
  assert.not.match(large, /TEMP B-TREE/);
  db.prepare('DELETE FROM contacts WHERE ledger_id = ? AND reference_id LIKE ?').run(ledgerId, 'bulk-%');
  void big;
});

Q('a few contacts changed since a time, in creation order: keys from a covering index, then the page rows, ties by seq', async ({ t, w, path, ledgerId }) => {
  const repo = t.rt.ledger.repos.contacts;
  for (const [key, index] of [['lastInfoChangedAt', 'contacts_by_info_change_created'], ['lastJobChangedAt', 'contacts_by_job_change_created']] as const) {
    for (const sort of ['+createdAt', '-createdAt'] as const) {
      for (const after of [undefined, { value: 5, seq: 10 }]) {
        const plan = repo.explainList(ledgerId, { [key]: 0 }, sort, after as never)[0]!.join(' | ');
        assert.match(plan, new RegExp(`COVERING INDEX ${index}`), `${key} ${sort}: ${plan}`);
        assert.match(plan, /SEARCH contacts USING INTEGER PRIMARY KEY/, `only the page's rows are read: ${plan}`);
      }
    }
  }
  // the pages join up in exactly the order of the sort (reference: the planner's own choice, no index forced)
  const db = t.rt.db.raw;
  const since = Date.parse('2026-11-11T00:00:00Z');
  const inRange = db.prepare('SELECT count(*) AS n, count(DISTINCT created_at) AS times FROM contacts WHERE ledger_id = ? AND last_info_changed_at >= ?').get(ledgerId, since) as { n: number; times: number };
  assert.ok(inRange.times < inRange.n, 'the range holds contacts created in the same millisecond (ties by seq)');
  for (const [sort, dir] of [['+createdAt', 'ASC'], ['-createdAt', 'DESC']] as const) {
    const expected = db.prepare(`SELECT id FROM contacts WHERE ledger_id = ? AND last_info_changed_at >= ? ORDER BY created_at ${dir}, seq ${dir}`).pluck().all(ledgerId, since);
    const pages = await listAll(t, w.tokens.viewer, path, `lastInfoChangedAt=2026-11-11&sortBy=${encodeURIComponent(sort)}`, 7);
    assert.equal(pages.map((c) => c.id), expected, sort);
  }
});

Q('the contacts of one import page in creation order without a sort', ({ t, ledgerId }) => {
  const repo = t.rt.ledger.repos.contacts;
  for (const sort of ['+createdAt', '-createdAt'] as const) {
    for (const after of [undefined, { value: 5, seq: 10 }]) {
      const plan = repo.explainList(ledgerId, { importId: 'imp_x' }, sort, after as never)[0]!.join(' | ');
      assert.match(plan, /INDEX contacts_by_import/, `${sort}: ${plan}`);
      assert.not.match(plan, /TEMP B-TREE/, `${sort}: ${plan}`);
    }
  }
});

Q('a big import in another order than creation walks the sort\'s index (in steps, never sorted whole); a small one is read through the import\'s index and sorted', async ({ t, w, path, ledgerId }) => {
  const repo = t.rt.ledger.repos.contacts;
  const db = t.rt.db.raw;
  const [SMALL, BIG] = [`imp_${'0'.repeat(25)}1`, `imp_${'0'.repeat(25)}2`];
  createLedgerRows(db, ledgerId, 3000, SMALL);
  createLedgerRows(db, ledgerId, 6000, BIG, 3000);
  // half of the big import without a job change, the other half with one: both parts of the sort
  db.prepare('UPDATE contacts SET last_job_changed_at = 1000 + seq % 7 WHERE import_id = ? AND seq % 2 = 0').run(BIG);
  const plan = (importId: string, sort: string) => repo.explainList(ledgerId, { importId }, sort as never).map((p) => p.join(' | ')).join(' || ');
  try {
    for (const sort of ['+name', '-name', '-lastJobChangedAt', '-lastInfoChangedAt'] as const) {
      assert.match(plan(SMALL, sort), /INDEX contacts_by_import/, `small import, ${sort}`);
      const big = plan(BIG, sort);
      // sorting 6,000 rows for every page would hold the event loop (0.4 s a page at 200,000)
      assert.not.match(big, /contacts_by_import|TEMP B-TREE/, `big import, ${sort}: ${big}`);
    }
    // the same rows in the same order either way (reference: the planner's own choice, no index forced)
    const reference = {
      '-name': 'name COLLATE NOCASE DESC, seq DESC',
      '-lastJobChangedAt': 'last_job_changed_at IS NULL, last_job_changed_at DESC, seq DESC',
      '-lastInfoChangedAt': 'last_info_changed_at IS NULL, last_info_changed_at DESC, seq DESC',
    };
    for (const [sort, order] of Object.entries(reference)) {
      for (const importId of [SMALL, BIG]) {
        const expected = db.prepare(`SELECT id FROM contacts WHERE ledger_id = ? AND import_id = ? ORDER BY ${order}`).pluck().all(ledgerId, importId);
        const pages = await listAll(t, w.tokens.viewer, path, `importId=${importId}&sortBy=${encodeURIComponent(sort)}`, 1000);
        assert.equal(pages.map((c) => c.id), expected, `${importId} ${sort}`);
      }
    }
  } finally {
    db.prepare('DELETE FROM contacts WHERE ledger_id = ? AND import_id IN (?, ?)').run(ledgerId, SMALL, BIG);
    db.prepare('UPDATE ledgers SET contact_count = (SELECT count(*) FROM contacts WHERE ledger_id = ?) WHERE id = ?').run(ledgerId, ledgerId);
  }
});

/** Inserts `n` contacts with a change time directly (test setup for planner thresholds), of an import if given. */
function createLedgerRows(db: TestApp['rt']['db']['raw'], ledgerId: string, n: number, importId: string | null = null, from = 0): number {
  const ins = db.prepare(
    "INSERT INTO contacts (id, ledger_id, import_id, reference_id, name, name_key, company, import_company, created_at, updated_at, last_info_changed_at) VALUES (?, ?, ?, ?, ?, ?, 'c', 'c', 1, 1, 5)",
  );
  db.transaction(() => {
    for (let i = from; i < from + n; i++) {
      const name = `n ${(i * 7919) % 10007}`;
      ins.run(`c_bulk${String(i).padStart(22, '0')}`, ledgerId, importId, `bulk-${i}`, name, nameKey(name));
    }
  })();
  return n;
}

Q.run();

// Cursors are sealed with the installation's secret (src/cursor.ts): they show nothing of the
// position they hold, are refused when altered or used on another list, and outlive a restart.
const C = suite<Ctx & { ledgerId: string; path: string }>('cursors');
C.before(async (ctx) => {
  ctx.t = await startApp();
  ctx.w = await seedWorld(ctx.t);
  ctx.ledgerId = await createLedger(ctx.t, ctx.w.tokens.editor, ctx.w.orgId, 'cursors');
  await createLedger(ctx.t, ctx.w.tokens.editor, ctx.w.orgId, 'second');
  ctx.path = `${ledgerPath(ctx.w.orgId, ctx.ledgerId)}/contacts`;
  await addContacts(ctx.t, ctx.w.tokens.editor, ctx.w.orgId, ctx.ledgerId, ['Nadia Quispe', 'Olaf Rask', 'Pia Sand'].map((name) => ({ name, company: 'Initech' })));
  await addContacts(ctx.t, ctx.w.tokens.editor, ctx.w.orgId, ctx.ledgerId, [{ name: 'Quinn Tate', company: 'Initech' }]);
});
C.after(async (ctx) => ctx.t.close());

const firstPage = async (t: TestApp, token: string, path: string) => {
  const r = await t.call('GET', `${path}${path.includes('?') ? '&' : '?'}limit=1`, { token });
  expectStatus(r, 200, path);
  assert.type(r.body.nextCursor, 'string', `${path} has a second page`);
  return r.body;
};

C('a cursor shows nothing of its position: no name, no sequence number, no JSON', async ({ t, w, path }) => {
  const page = await firstPage(t, w.tokens.viewer, `${path}?sortBy=%2Bname`);
  assert.is(page.contacts[0].name, 'Nadia Quispe');
  const bytes = Buffer.from(page.nextCursor, 'base64url');
  assert.not.ok(bytes.toString('latin1').includes('Nadia'), 'the name is not in the cursor');
  assert.throws(() => JSON.parse(bytes.toString('utf8')));
  const seq = t.rt.db.raw.prepare('SELECT seq FROM contacts WHERE id = ?').pluck().get(page.contacts[0].id) as number;
  assert.not.ok(bytes.toString('latin1').includes(`,${seq},`), 'the sequence number is not in the cursor');
  // the same position gives the same cursor, so a client may compare them
  assert.is((await firstPage(t, w.tokens.viewer, `${path}?sortBy=%2Bname`)).nextCursor, page.nextCursor);
});

C('an altered cursor, a forged one and one of another list or ledger are each a 400 naming the cursor', async ({ t, w, path }) => {
  const second = (await t.call('GET', ledgerPath(w.orgId), { token: w.tokens.viewer })).body.ledgers.find((l: any) => l.name === 'second').id;
  await addContacts(t, w.tokens.editor, w.orgId, second, [{ name: 'Rosa Ulm', company: 'Initech' }, { name: 'Sven Vik', company: 'Initech' }]);
  const contacts = (await firstPage(t, w.tokens.viewer, path)).nextCursor as string;
  const ledgers = (await firstPage(t, w.tokens.viewer, ledgerPath(w.orgId))).nextCursor as string;
  const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
  const forged = Buffer.from(JSON.stringify(['contacts+createdAt', 0, 1, 0])).toString('base64url');
  const tries: [string, string][] = [
    [`${path}?cursor=${flip(contacts, 0)}`, 'the tag altered'],
    [`${path}?cursor=${flip(contacts, contacts.length - 1)}`, 'the sealed key altered'],
    [`${path}?cursor=${contacts.slice(0, -2)}`, 'cut short'],
    [`${path}?cursor=${forged}`, 'a plain cursor as the server used to issue'],
    [`${path}?cursor=${contacts}A`, 'a character appended (its bits would be ignored)'],
    [`${path}?sortBy=-createdAt&cursor=${contacts}`, 'a cursor of another sort'],
    [`${path}?company=Initech&cursor=${contacts}`, 'a cursor of the list without a filter, sent with one'],
    [`${path}?name=Q&cursor=${(await firstPage(t, w.tokens.viewer, `${path}?company=Initech`)).nextCursor}`, 'a cursor of one filter sent with another (it skipped what that list holds before its position)'],
    [`${ledgerPath(w.orgId, second)}/contacts?cursor=${contacts}`, 'a cursor of another ledger, same sort'],
    [`${ledgerPath(w.otherOrgId)}?cursor=${ledgers}`, "a cursor of this organization's ledgers on another's"],
    // both are (time, id) keysets: only the list's label, sealed with the key, tells them apart
    [`${ledgerPath(w.orgId, (await firstPage(t, w.tokens.viewer, ledgerPath(w.orgId))).ledgers[0].id)}/imports?cursor=${ledgers}`, 'a cursor of the ledger list on the import list'],
  ];
  for (const [url, what] of tries) {
    const r = await t.call('GET', url, { token: url.includes(w.otherOrgId) ? w.root : w.tokens.viewer });
    expectStatus(r, 400, what);
    assert.is(r.body.code, 'invalid_cursor', what);
  }
  // the untouched cursors work where they belong: a filtered one with its own filter, however spelled
  expectStatus(await t.call('GET', `${path}?cursor=${contacts}`, { token: w.tokens.viewer }), 200);
  const filtered = (await firstPage(t, w.tokens.viewer, `${path}?company=Initech&isVerified=false`)).nextCursor as string;
  expectStatus(await t.call('GET', `${path}?isVerified=false&company=Initech&cursor=${filtered}`, { token: w.tokens.viewer }), 200);
  // the case-insensitive filters in another case are the same list (an API tester's case: a 400)
  const next = await t.call('GET', `${path}?isVerified=false&company=Initech&cursor=${filtered}`, { token: w.tokens.viewer });
  const otherCase = await t.call('GET', `${path}?isVerified=false&company=INITECH&cursor=${filtered}`, { token: w.tokens.viewer });
  expectStatus(otherCase, 200);
  assert.equal(otherCase.body, next.body);
  expectStatus(await t.call('GET', `${ledgerPath(w.orgId)}?cursor=${ledgers}`, { token: w.tokens.viewer }), 200);
});

C('a cursor stays valid across a restart, and is refused by another installation', async (ctx) => {
  const { w, path } = ctx;
  const page = await firstPage(ctx.t, w.tokens.viewer, `${path}?sortBy=-name`);
  const before = await ctx.t.call('GET', `${path}?sortBy=-name&cursor=${page.nextCursor}`, { token: w.tokens.viewer });
  expectStatus(before, 200);
  await ctx.t.close();
  ctx.t = await startApp({ dataDir: ctx.t.dataDir });
  const after = await ctx.t.call('GET', `${path}?sortBy=-name&cursor=${page.nextCursor}`, { token: w.tokens.viewer });
  expectStatus(after, 200, 'after the restart');
  assert.equal(after.body, before.body);
  // the same list, the same kind of key, another installation's secret
  const users = (await firstPage(ctx.t, w.root, `${ID}/users`)).nextCursor as string;
  expectStatus(await ctx.t.call('GET', `${ID}/users?cursor=${users}`, { token: w.root }), 200);
  const other = await startApp();
  try {
    const r = await other.call('GET', `${ID}/users?cursor=${users}`, { token: (await signInRoot(other)).accessToken });
    expectStatus(r, 400, 'another installation');
    assert.is(r.body.code, 'invalid_cursor');
  } finally {
    await other.close();
  }
});

C.run();
