// The role × endpoint matrix (RELIABILITY.md Z2) and cross-tenant isolation (Z1). The matrix is
// checked against the routers' own stacks: a route without a row here fails the suite.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import { clientToken, expectStatus, ID, PASSWORD, seedWorld, startApp, until, waitForImport, type CallOptions, type TestApp, type World } from './helpers.ts';
import { MATRIX, type Need } from './matrix-rows.ts';

type ActorName = 'anon' | 'viewer' | 'editor' | 'admin' | 'saViewer' | 'saEditor' | 'saAdmin' | 'outsider' | 'otherAdmin' | 'feed' | 'root';
const ACTORS: ActorName[] = ['anon', 'viewer', 'editor', 'admin', 'saViewer', 'saEditor', 'saAdmin', 'outsider', 'otherAdmin', 'feed', 'root'];
const RANK = { viewer: 1, editor: 2, admin: 3 } as const;

/** The status the contract promises for an actor on a route, given the route's requirement. */
function expected(need: Need, actor: ActorName, ok: number): number {
  if (need === 'public') return ok;
  if (actor === 'anon') return 401;
  if (need === 'any') return ok;
  if (actor === 'root') return ok; // a superuser may do everything
  if (need === 'superuser') return 403;
  if (need === 'user') return actor.startsWith('sa') || actor === 'feed' ? 403 : ok;
  if (need === 'feed') return actor === 'feed' ? ok : 403;
  const have: Record<string, number> = { viewer: 1, editor: 2, admin: 3, saViewer: 1, saEditor: 2, saAdmin: 3 };
  return (have[actor] ?? 0) >= RANK[need] ? ok : 403;
}

const M = suite<{ t: TestApp; w: World }>('authorization matrix (Z2)');
M.before(async (ctx) => {
  ctx.t = await startApp();
  ctx.w = await seedWorld(ctx.t);
});
M.after(async (ctx) => ctx.t.close());

const routeKeys = (t: TestApp) =>
  t.routers.flatMap((r) => r.router.stack.map((layer) => `${layer.methods.filter((m) => m !== 'HEAD')[0]} ${layer.path}`));

M('every route of every router has a matrix row, and every row names a real route', ({ t }) => {
  const keys = routeKeys(t);
  const missing = keys.filter((k) => !MATRIX[k]);
  assert.equal(missing, [], `routes without a matrix row: ${missing.join(', ')}`);
  const stale = Object.keys(MATRIX).filter((k) => !keys.includes(k));
  assert.equal(stale, [], `matrix rows without a route: ${stale.join(', ')}`);
});

M('each actor gets exactly the status its role allows on each route', async ({ t, w }) => {
  const tokens: Record<ActorName, string | undefined> = {
    anon: undefined,
    viewer: w.tokens.viewer,
    editor: w.tokens.editor,
    admin: w.tokens.admin,
    saViewer: w.serviceAccounts.saViewer.token,
    saEditor: w.serviceAccounts.saEditor.token,
    saAdmin: w.serviceAccounts.saAdmin.token,
    outsider: w.tokens.outsider,
    otherAdmin: w.tokens.otherAdmin,
    feed: w.serviceAccounts.feed.token,
    root: w.root,
  };
  const failures: string[] = [];
  // DELETE /session ends the caller's session: run it last
  const keys = Object.keys(MATRIX).sort((a, b) => Number(a.startsWith('DELETE /api/identity/v1/session')) - Number(b.startsWith('DELETE /api/identity/v1/session')));
  for (const key of keys) {
    const row = MATRIX[key]!;
    const [method] = key.split(' ');
    for (const actor of ACTORS) {
      const req = await row.request({ t, w });
      const res = await t.call(method!, req.path, { ...req.opts, token: tokens[actor] } as CallOptions);
      const want = expected(row.need, actor, row.ok);
      if (res.status !== want) failures.push(`${key} as ${actor}: expected ${want}, got ${res.status} ${res.text.slice(0, 160)}`);
      if (res.status >= 400 && !/problem\+json/.test(res.headers.get('content-type') ?? '')) failures.push(`${key} as ${actor}: error without problem+json`);
    }
  }
  assert.equal(failures, [], failures.join('\n'));
});

M.run();

// ── Z1: another organization's ids ────────────────────────────────────────
const Z = suite<{ t: TestApp; w: World }>('cross-tenant isolation (Z1)');
Z.before(async (ctx) => {
  ctx.t = await startApp();
  ctx.w = await seedWorld(ctx.t);
});
Z.after(async (ctx) => ctx.t.close());

/** A digest of everything organization B owns. */
function snapshotOf(t: TestApp, orgId: string): string {
  const q = (sql: string) => JSON.stringify(t.rt.db.raw.prepare(sql).all(orgId), (_k, v) => (Buffer.isBuffer(v) ? v.toString('hex') : v));
  return createHash('sha256')
    .update(q('SELECT * FROM orgs WHERE id = ?'))
    .update(q('SELECT * FROM members WHERE org_id = ? ORDER BY user_id'))
    .update(q('SELECT * FROM service_accounts WHERE org_id = ? ORDER BY id'))
    .update(q('SELECT * FROM audit_log WHERE org_id = ? ORDER BY seq'))
    .digest('hex');
}

Z('an admin of A gets 403 on every route of B and 404 for B objects under A; B is unchanged', async ({ t, w }) => {
  const bSa = await t.call('POST', `${ID}/orgs/${w.otherOrgId}/service-accounts`, { token: w.tokens.otherAdmin, body: { name: 'b sa', role: 'viewer' } });
  expectStatus(bSa, 201);
  const before = snapshotOf(t, w.otherOrgId);
  const a = w.tokens.admin;
  const B = w.otherOrgId;
  const A = w.orgId;
  const attempts: [string, string, CallOptions, number][] = [
    ['GET', `${ID}/orgs/${B}`, {}, 403],
    ['PATCH', `${ID}/orgs/${B}`, { body: { name: 'pwned' } }, 403],
    ['GET', `${ID}/orgs/${B}/members`, {}, 403],
    ['POST', `${ID}/orgs/${B}/members`, { body: { email: 'admin@a.test', role: 'admin' } }, 403],
    ['PATCH', `${ID}/orgs/${B}/members/${w.users.otherAdmin}`, { body: { role: 'viewer' } }, 403],
    ['DELETE', `${ID}/orgs/${B}/members/${w.users.otherAdmin}`, {}, 403],
    ['GET', `${ID}/orgs/${B}/service-accounts`, {}, 403],
    ['POST', `${ID}/orgs/${B}/service-accounts`, { body: { name: 'x', role: 'admin' } }, 403],
    ['POST', `${ID}/orgs/${B}/service-accounts/${bSa.body.id}/rotate`, {}, 403],
    ['DELETE', `${ID}/orgs/${B}/service-accounts/${bSa.body.id}`, {}, 403],
    ['GET', `${ID}/orgs/${B}/audit`, {}, 403],
    // B's objects named under A's path: not found, never touched
    ['POST', `${ID}/orgs/${A}/service-accounts/${bSa.body.id}/rotate`, {}, 404],
    ['DELETE', `${ID}/orgs/${A}/service-accounts/${bSa.body.id}`, {}, 404],
    ['PATCH', `${ID}/orgs/${A}/members/${w.users.otherAdmin}`, { body: { role: 'viewer' } }, 404],
    ['DELETE', `${ID}/orgs/${A}/members/${w.users.otherAdmin}`, {}, 404],
    // parameter and body pollution do not widen the scope
    ['GET', `${ID}/orgs?orgId=${B}`, {}, 400],
    ['POST', `${ID}/orgs/${A}/service-accounts`, { body: { name: 'x', role: 'viewer', orgId: B } }, 422],
  ];
  for (const [method, path, opts, status] of attempts) {
    const r = await t.call(method, path, { ...opts, token: a });
    assert.is(r.status, status, `${method} ${path}: ${r.text}`);
  }
  // A service account of A is confined the same way
  for (const tok of [w.serviceAccounts.saAdmin.token, await clientToken(t, w.serviceAccounts.saAdmin.id, w.serviceAccounts.saAdmin.secret)]) {
    assert.is((await t.call('GET', `${ID}/orgs/${B}/members`, { token: tok })).status, 403);
  }
  const list = await t.call('GET', `${ID}/orgs`, { token: a });
  assert.equal(list.body.orgs.map((o: any) => o.id), [A]);
  assert.is(snapshotOf(t, w.otherOrgId), before, "B's rows are unchanged");
  assert.ok(PASSWORD);
});

/** A digest of the ledger-side data organization B owns (ledgers, contacts, imports, changes, webhooks). */
function ledgerSnapshotOf(t: TestApp, orgId: string): string {
  const q = (sql: string) => JSON.stringify(t.rt.db.raw.prepare(sql).all(orgId));
  const ofLedgers = 'SELECT id FROM ledgers WHERE org_id = ?';
  return createHash('sha256')
    .update(q('SELECT * FROM ledgers WHERE org_id = ? ORDER BY id'))
    .update(q(`SELECT * FROM contacts WHERE ledger_id IN (${ofLedgers}) ORDER BY seq`))
    .update(q(`SELECT * FROM import_jobs WHERE ledger_id IN (${ofLedgers}) ORDER BY id`))
    .update(q(`SELECT * FROM changes WHERE ledger_id IN (${ofLedgers}) ORDER BY seq`))
    .update(q('SELECT * FROM webhooks WHERE org_id = ? ORDER BY id'))
    .update(q('SELECT d.* FROM webhook_deliveries d JOIN webhooks h ON h.id = d.webhook_id WHERE h.org_id = ? ORDER BY d.seq'))
    .digest('hex');
}

Z('every ledger-service route, for each of B\'s objects named under A\'s path → 404, under B\'s path → 403; B is unchanged', async ({ t, w }) => {
  const B = w.otherOrgId;
  const bTok = w.tokens.otherAdmin;
  const bPath = `/api/ledger/v1/orgs/${B}`;
  const ledger = await t.call('POST', `${bPath}/ledgers`, { token: bTok, body: { name: 'B secrets' } });
  expectStatus(ledger, 201);
  const imp = await t.call('POST', `${bPath}/ledgers/${ledger.body.id}/contacts`, { token: bTok, body: { contacts: [{ name: 'B One', company: 'B Co', referenceId: 'b1' }] } });
  expectStatus(imp, 202);
  assert.is((await waitForImport(t, bTok, B, ledger.body.id, imp.body.id)).status, 'completed');
  const contact = (await t.call('GET', `${bPath}/ledgers/${ledger.body.id}/contacts`, { token: bTok })).body.contacts[0];
  const hook = await t.call('POST', `${bPath}/webhooks`, { token: bTok, body: { url: 'http://127.0.0.1:9/b', events: ['contact.job_changed'] } });
  expectStatus(hook, 201);
  const ping = await t.call('POST', `${bPath}/webhooks/${hook.body.id}/test`, { token: bTok });
  expectStatus(ping, 202);
  // the ping's one attempt (nobody listens on port 9) ends before the snapshot is taken
  await until('the ping attempted', () => t.call('GET', `${bPath}/webhooks/${hook.body.id}/deliveries/${ping.body.id}`, { token: bTok }), (r) => r.body.status !== 'pending');
  const ids: Record<string, string> = {
    ledgerId: ledger.body.id, contactId: contact.id, importId: imp.body.id, webhookId: hook.body.id, deliveryId: ping.body.id,
    date: '20261122', file: 'changes-20261122-1.jsonl.gz',
  };
  const before = ledgerSnapshotOf(t, B);
  const failures: string[] = [];
  for (const key of Object.keys(MATRIX).filter((k) => k.split(' ')[1]!.startsWith('/api/ledger/v1/orgs/:orgId'))) {
    const [method, pattern] = key.split(' ') as [string, string];
    const req = await MATRIX[key]!.request({ t, w }); // a valid request (body) for A's own objects
    const fill = (orgId: string) => pattern.replace(/:(\w+)/g, (_m, name: string) => (name === 'orgId' ? orgId : ids[name]!));
    const query = req.path.includes('?') ? req.path.slice(req.path.indexOf('?')) : '';
    if (/:(?!orgId)\w+/.test(pattern)) {
      const r = await t.call(method, `${fill(w.orgId)}${query}`, { ...req.opts, token: w.tokens.admin });
      if (r.status !== 404) failures.push(`${key} with B's ids under A: ${r.status} ${r.text.slice(0, 120)}`);
    }
    const r = await t.call(method, `${fill(B)}${query}`, { ...req.opts, token: w.tokens.admin });
    if (r.status !== 403) failures.push(`${key} under B's path: ${r.status} ${r.text.slice(0, 120)}`);
  }
  assert.equal(failures, [], failures.join('\n'));
  assert.is(ledgerSnapshotOf(t, B), before, "B's ledgers, contacts, imports, changes and webhooks are unchanged");
});

Z.run();
