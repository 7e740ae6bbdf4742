// The rejections a job keeps for its errors CSV (RELIABILITY.md I3, row errors "capped at N";
// src/jobs/rejections.ts): past the cap an import or a feed goes on counting exactly but stores no
// more reasons, so a file of endless bad lines (a gzip feed expands a thousandfold) cannot fill the
// disk; and a feed of which not one record could be applied fails instead of completing.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { gzipSync } from 'node:zlib';
import { parse } from 'csv-parse/sync';
import { addContacts, createLedger, feedAndWait, LEDGER, ledgerPath, seedWorld, startApp, uploadCsv, type TestApp, type World } from './helpers.ts';

const FEED = `${LEDGER}/feed`;
const CAP = 3;

const feed = feedAndWait;

const csvOf = (r: { text: string }) => parse(r.text, { relax_column_count: false }) as string[][];

const X = suite<{ t: TestApp; w: World }>('rejections kept for the errors CSV');
X.before(async (ctx) => {
  ctx.t = await startApp({ config: { maxStoredRejections: CAP } });
  ctx.w = await seedWorld(ctx.t);
});
X.after(async (ctx) => ctx.t.close());

X('imports past the cap: exact counts, the first rejected rows in the errors CSV, a message saying so', async ({ t, w }) => {
  const ledgerId = await createLedger(t, w.tokens.editor, w.orgId, 'capped');
  const csv = ['name,company,referenceId', 'Good 1,Acme,r1', ',No name 1,', 'Dup,Acme,r1', ',No name 2,', ',No name 3,', 'Good 2,Acme,r2', ',No name 4,'].join('\n');
  const job = await uploadCsv(t, w.tokens.editor, w.orgId, ledgerId, `${csv}\n`);
  assert.equal([job.status, job.submitted, job.imported, job.duplicates, job.invalid], ['completed', 7, 2, 1, 4]);
  assert.is(job.message, '5 rows were rejected; the errors CSV lists the first 3');
  const errors = csvOf(await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/imports/${job.id}/errors`, { token: w.tokens.viewer }));
  assert.equal(errors.map((r) => [r[0], r.at(-1)]), [['name', 'line'], ['', '3'], ['Dup', '4'], ['', '5']], 'the first three, in file order');
  // an API batch too; at the cap exactly, nothing is left out and there is no message
  const batch = await addContacts(t, w.tokens.editor, w.orgId, ledgerId, [{ name: 'A' }, { name: 'B' }, { company: 'C' }, { name: 'Fine', company: 'Co' }]);
  assert.equal([batch.status, batch.invalid, batch.message], ['completed', 3, null]);
  const over = await addContacts(t, w.tokens.editor, w.orgId, ledgerId, [{ name: 'A' }, { name: 'B' }, { company: 'C' }, { company: 'D' }]);
  assert.equal([over.status, over.invalid, over.message], ['completed', 4, '4 rows were rejected; the errors CSV lists the first 3']);
  const stored = t.rt.db.raw.prepare('SELECT count(*) FROM import_rejections WHERE import_id = ?').pluck();
  assert.equal([stored.get(job.id), stored.get(batch.id), stored.get(over.id)], [3, 3, 3]);
});

X('a gzip feed of endless bad lines: counted exactly, no more than the cap stored, the good record applied', async ({ t, w }) => {
  const body = gzipSync(`${'x\n'.repeat(50_000)}{"name":"Ok Person","company":"Acme"}\n`);
  assert.ok(body.length < 1_000, `${body.length} bytes`);
  const job = await feed(t, w.root, body);
  assert.equal([job.status, job.received, job.invalid, job.personsUpdated], ['completed', 50_001, 50_000, 1]);
  assert.is(job.message, '50000 records were rejected; the errors CSV lists the first 3');
  assert.is(t.rt.db.raw.prepare('SELECT count(*) FROM feed_rejections WHERE feed_id = ?').pluck().get(job.id), CAP);
  const errors = csvOf(await t.call('GET', `${FEED}/${job.id}/errors`, { token: w.root }));
  assert.equal(errors, [['record', 'line', 'reason'], ['1', '1', 'the line is not valid JSON'], ['2', '2', 'the line is not valid JSON'], ['3', '3', 'the line is not valid JSON']]);
});

X('a feed of which not one record could be applied fails, naming the first reason; so does one without records', async ({ t, w }) => {
  const wrong = await feed(t, w.root, 'nom,societe\nAnn,Lee\nBo,Ng\n', 'text/csv');
  assert.is(wrong.status, 'failed');
  assert.match(wrong.message, /^not one of its 2 records could be applied \(the first, line 2: name and company are required/);
  assert.ok(wrong.message.endsWith(`every reason is in GET /api/ledger/v1/feed/${wrong.id}/errors`), wrong.message);
  const empty = await feed(t, w.root, '');
  assert.equal([empty.status, empty.received, empty.message], ['failed', 0, 'the file holds no records']);
  const some = await feed(t, w.root, '{"name":"Applied Al","company":"Acme"}\nnot json\n');
  assert.equal([some.status, some.received, some.invalid, some.message], ['completed', 2, 1, null], 'one record applied: completed');
});

X.run();
