// The reference servers of `npm run bench:list` (scripts/bench/bare-server.ts, koa-server.ts) must
// answer what the project answers for `GET …/contacts?lastInfoChangedAt=…&limit=100`: the benchmark's
// ratio compares like with like only while their SQL is the project's. Checked here on a small real
// ledger, so a schema or query change that the reference servers miss fails the suite, not a
// benchmark run hours later.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { addContacts, createLedger, expectStatus, ID, ledgerPath, signInRoot, startApp, type TestApp } from './helpers.ts';

const ROOT = join(import.meta.dirname, '..');
const DAY = 86_400_000;

type Ctx = { t: TestApp; token: string; orgId: string; ledgerId: string; since: number; children: ChildProcess[] };
const B = suite<Ctx>('bench:list reference servers');

/** Starts scripts/bench/<script> on the database file and returns its base URL. */
async function reference(ctx: Ctx, script: string): Promise<string> {
  const child = spawn(process.execPath, [...process.execArgv, join(ROOT, 'scripts', 'bench', script), join(ctx.t.dataDir, 'contact-ledger.db')], { stdio: ['ignore', 'pipe', 'pipe'] });
  ctx.children.push(child);
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}: ${err}`)));
  });
  return `http://127.0.0.1:${port}`;
}

B.before(async (ctx) => {
  ctx.children = [];
  ctx.t = await startApp();
  ctx.token = (await signInRoot(ctx.t)).accessToken;
  const org = await ctx.t.call('POST', `${ID}/orgs`, { token: ctx.token, body: { name: 'Bench' } });
  expectStatus(org, 201);
  ctx.orgId = org.body.id;
  ctx.ledgerId = await createLedger(ctx.t, ctx.token, ctx.orgId);
  const contacts = Array.from({ length: 300 }, (_, i) => ({ name: `Person ${i}`, company: `Company ${i % 7}`, title: i % 3 ? 'Engineer' : undefined, email: `p${i}@example.com` }));
  for (let i = 0; i < contacts.length; i += 100) assert.is((await addContacts(ctx.t, ctx.token, ctx.orgId, ctx.ledgerId, contacts.slice(i, i + 100))).imported, 100);
  // like the benchmark's ledger (scripts/bench/list.ts markChanges): some contacts changed on days
  // after the import — here every other one, on day seq % 30; the poll asks from day 5 on (120 rows)
  const t0 = ctx.t.rt.db.raw.prepare('SELECT max(created_at) FROM contacts').pluck().get() as number;
  ctx.t.rt.db.raw.prepare('UPDATE contacts SET last_info_changed_at = ? + (seq % 30) * ? WHERE seq % 2 = 0').run(t0, DAY);
  ctx.since = t0 + 5 * DAY;
});
B.after(async (ctx) => {
  for (const c of ctx.children) if (c.exitCode === null) c.kill('SIGTERM');
  await Promise.all(ctx.children.map((c) => (c.exitCode === null ? once(c, 'exit') : undefined)));
  await ctx.t.close();
});

B('the bare and the Koa server answer the same bytes, and the same contacts in the same order as the project', async (ctx) => {
  const bare = await reference(ctx, 'bare-server.ts');
  const koa = await reference(ctx, 'koa-server.ts');
  const query = `/contacts?ledgerId=${ctx.ledgerId}&since=${ctx.since}`;
  const bareRes = await fetch(bare + query);
  assert.is(bareRes.status, 200);
  assert.is(bareRes.headers.get('content-type'), 'application/json');
  const bareText = await bareRes.text();
  const koaRes = await fetch(koa + query);
  assert.is(koaRes.status, 200);
  assert.match(koaRes.headers.get('content-type')!, /^application\/json/);
  assert.is(await koaRes.text(), bareText);

  const project = await ctx.t.call('GET', `${ledgerPath(ctx.orgId, ctx.ledgerId)}/contacts?lastInfoChangedAt=${encodeURIComponent(new Date(ctx.since).toISOString())}&limit=100`, { token: ctx.token });
  expectStatus(project, 200);
  assert.is(project.body.contacts.length, 100, 'more than a page matches, so LIMIT and order matter');
  assert.ok(project.body.nextCursor);
  const rows = (JSON.parse(bareText) as { contacts: { id: string; name: string; last_info_changed_at: number }[] }).contacts;
  assert.equal(rows.map((r) => r.id), project.body.contacts.map((c: { id: string }) => c.id));
  assert.equal(rows.map((r) => r.name), project.body.contacts.map((c: { name: string }) => c.name));
  assert.is(rows.length, 100);
  assert.ok(rows.every((r) => r.last_info_changed_at >= ctx.since));
});

B('both answer 404 to a request without a ledger or a time', async (ctx) => {
  for (const script of ['bare-server.ts', 'koa-server.ts']) {
    const base = await reference(ctx, script);
    assert.is((await fetch(`${base}/contacts?since=1`)).status, 404, `${script}: no ledgerId`);
    assert.is((await fetch(`${base}/contacts?ledgerId=${ctx.ledgerId}&since=soon`)).status, 404, `${script}: since not a number`);
    assert.is((await fetch(`${base}/other`)).status, 404, `${script}: other path`);
  }
});

B.run();
