// Crash safety of imports (RELIABILITY.md D4 a, D6): the server runs as a child process and is
// killed with SIGKILL several times in the middle of a CSV import; after each restart the job
// resumes, and in the end every row was imported or rejected exactly once. SIGTERM hands the job
// back with its progress and leaves a checkpointed database.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { csvForm, ID, LEDGER, request, tempDir } from './helpers.ts';
import { serve, type Running } from './child-server.ts';

const ROWS = 50_000;
const EMAIL = 'crash@example.com';
const PASSWORD = 'crash test password';

/** name,company,referenceId,email — every 1000th row has no company (invalid), every 997th repeats a referenceId. */
function csvFile(): { text: string; invalid: number; duplicates: number } {
  const lines = ['name,company,referenceId,email'];
  let invalid = 0;
  let duplicates = 0;
  for (let i = 1; i <= ROWS; i++) {
    const company = i % 1000 === 0 ? '' : `Company ${i % 50}`;
    const ref = i % 997 === 0 ? `ref-${i - 1}` : `ref-${i}`;
    if (!company) invalid++;
    else if (i % 997 === 0) duplicates++;
    lines.push(`Person ${i},${company},${ref},p${i}@example.test`);
  }
  return { text: `${lines.join('\n')}\n`, invalid, duplicates };
}

const C = suite('import crash safety');
// Servers still running when a test fails are killed, so the suite ends instead of hanging.
const running = new Set<() => Running>();
C.after.each(() => {
  for (const s of running) s().child.kill('SIGKILL');
  running.clear();
});

C('kill -9 in the middle of an import, four times: the job resumes and counts every row exactly once', async () => {
  const data = tempDir();
  const env = { CONTACT_LEDGER_DATA: data, CONTACT_LEDGER_ADMIN_EMAIL: EMAIL, CONTACT_LEDGER_ADMIN_PASSWORD: PASSWORD };
  let server: Running = await serve(env);
  running.add(() => server);
  const call = (method: string, path: string, opts: Parameters<typeof request>[3] = {}) => request(`http://127.0.0.1:${server.port}`, method, path, opts);
  const session = async () => (await call('POST', `${ID}/session`, { body: { grantType: 'password', email: EMAIL, password: PASSWORD } })).body.accessToken as string;
  let token = await session();
  const orgId = (await call('POST', `${ID}/orgs`, { token, body: { name: 'Crash' } })).body.id;
  const ledgerId = (await call('POST', `${LEDGER}/orgs/${orgId}/ledgers`, { token, body: { name: 'crash' } })).body.id;
  const base = `${LEDGER}/orgs/${orgId}/ledgers/${ledgerId}`;
  const file = csvFile();
  const up = await call('POST', `${base}/imports`, { token, raw: csvForm(file.text) });
  assert.is(up.status, 202, up.text);
  assert.is(up.body.submitted, ROWS, 'the upload scan counts the rows exactly');
  const importId = up.body.id;
  const status = async () => (await call('GET', `${base}/imports/${importId}`, { token })).body;

  let kills = 0;
  for (const fraction of [0.1, 0.3, 0.5, 0.7]) {
    let s = await status();
    while (s.status !== 'completed' && s.processed < ROWS * fraction) s = await status();
    if (s.status === 'completed') break;
    server.child.kill('SIGKILL');
    await server.exit;
    kills++;
    try {
      server = await serve(env);
    } catch (err) {
      throw new Error(`restart after kill ${kills} failed: ${(err as Error).message}`);
    }
    token = await session();
  }
  assert.ok(kills >= 2, `the import was interrupted (${kills} kills)`);
  let s = await status();
  while (s.status !== 'completed' && s.status !== 'failed') s = await status();
  assert.is(s.status, 'completed', s.message ?? '');
  assert.is(s.submitted, ROWS);
  assert.is(s.invalid, file.invalid);
  assert.is(s.duplicates, file.duplicates);
  assert.is(s.imported, ROWS - file.invalid - file.duplicates);
  const ledger = (await call('GET', base, { token })).body;
  assert.is(ledger.contactCount, s.imported);
  const count = (await call('GET', `${base}/contacts?view=count&importId=${importId}`, { token })).body.count;
  assert.is(count, s.imported);

  server.child.kill('SIGTERM');
  assert.is(await server.exit, 0);
  const db = new Database(join(data, 'contact-ledger.db'), { readonly: true });
  assert.is(db.prepare('PRAGMA integrity_check').pluck().get(), 'ok');
  assert.is(db.prepare('SELECT count(*) FROM contacts WHERE ledger_id = ?').pluck().get(ledgerId), s.imported);
  assert.is(db.prepare('SELECT count(DISTINCT reference_id) FROM contacts WHERE ledger_id = ?').pluck().get(ledgerId), s.imported);
  assert.is(db.prepare('SELECT count(*) FROM import_rejections WHERE import_id = ?').pluck().get(importId), file.invalid + file.duplicates);
  db.close();
  let uploadGone = false;
  try {
    statSync(join(data, 'uploads', `${importId}.csv`));
  } catch {
    uploadGone = true;
  }
  assert.ok(uploadGone, 'the stored upload is removed when the job ends');
});

C('SIGTERM during an import: exit 0, the job is handed back with its progress, the WAL is checkpointed (D6)', async () => {
  const data = tempDir();
  const env = { CONTACT_LEDGER_DATA: data, CONTACT_LEDGER_ADMIN_EMAIL: EMAIL, CONTACT_LEDGER_ADMIN_PASSWORD: PASSWORD };
  let server = await serve(env);
  running.add(() => server);
  const call = (method: string, path: string, opts: Parameters<typeof request>[3] = {}) => request(`http://127.0.0.1:${server.port}`, method, path, opts);
  let token = (await call('POST', `${ID}/session`, { body: { grantType: 'password', email: EMAIL, password: PASSWORD } })).body.accessToken;
  const orgId = (await call('POST', `${ID}/orgs`, { token, body: { name: 'Term' } })).body.id;
  const ledgerId = (await call('POST', `${LEDGER}/orgs/${orgId}/ledgers`, { token, body: { name: 'term' } })).body.id;
  const base = `${LEDGER}/orgs/${orgId}/ledgers/${ledgerId}`;
  const file = csvFile();
  const importId = (await call('POST', `${base}/imports`, { token, raw: csvForm(file.text) })).body.id;
  let s = (await call('GET', `${base}/imports/${importId}`, { token })).body;
  while (s.status !== 'completed' && s.processed < ROWS * 0.2) s = (await call('GET', `${base}/imports/${importId}`, { token })).body;
  assert.is(s.status, 'processing');
  server.child.kill('SIGTERM');
  assert.is(await server.exit, 0);
  assert.is(statSync(join(data, 'contact-ledger.db-wal'), { throwIfNoEntry: false })?.size ?? 0, 0, 'WAL checkpointed and truncated');
  const db = new Database(join(data, 'contact-ledger.db'), { readonly: true });
  const job = db.prepare('SELECT j.status, j.lease_owner, i.cursor_rows FROM jobs j JOIN import_jobs i ON i.id = j.id WHERE j.id = ?').get(importId) as { status: string; lease_owner: string | null; cursor_rows: number };
  db.close();
  assert.is(job.status, 'pending');
  assert.is(job.lease_owner, null);
  assert.ok(job.cursor_rows > 0 && job.cursor_rows < ROWS, `progress kept (${job.cursor_rows})`);

  server = await serve(env);
  token = (await call('POST', `${ID}/session`, { body: { grantType: 'password', email: EMAIL, password: PASSWORD } })).body.accessToken;
  s = (await call('GET', `${base}/imports/${importId}`, { token })).body;
  while (s.status !== 'completed' && s.status !== 'failed') s = (await call('GET', `${base}/imports/${importId}`, { token })).body;
  assert.is(s.status, 'completed');
  assert.is(s.imported + s.duplicates + s.invalid, ROWS);
  assert.is(s.imported, ROWS - file.invalid - file.duplicates);
  server.child.kill('SIGTERM');
  assert.is(await server.exit, 0);
});

C.run();
