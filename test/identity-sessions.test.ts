// Sessions (SPEC §3.1) and RELIABILITY.md A1, A2, A3, A5, A6, A7.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import bcrypt from 'bcryptjs';
import type { ManualClock } from '../src/clock.ts';
import { createPasswordHasher, noAccountHash as noAccountHashFor } from '../src/identity/passwords.ts';
import { expectStatus, ID, PASSWORD, ROOT_EMAIL, ROOT_PASSWORD, seedWorld, signIn, signInRoot, startApp, tempDir, threadNice, threadNices, until, type TestApp, type World } from './helpers.ts';

const S = suite<{ t: TestApp; w: World }>('sessions');
S.before(async (ctx) => {
  ctx.t = await startApp();
  ctx.w = await seedWorld(ctx.t);
});
S.after(async (ctx) => ctx.t.close());

S('password grant: camelCase JSON returns the SPEC §3.1 shape', async ({ t, w }) => {
  const r = await t.call('POST', `${ID}/session`, { body: { grantType: 'password', email: 'admin@a.test', password: PASSWORD } });
  expectStatus(r, 200);
  const b = r.body;
  assert.type(b.accessToken, 'string');
  assert.is(b.tokenType, 'Bearer');
  assert.is(b.expiresIn, 3600);
  assert.match(b.refreshToken, /^clr_[A-Za-z0-9_-]{43}$/);
  assert.match(b.refreshExpiresAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.equal(b.user, { id: w.users.admin, email: 'admin@a.test', name: 'admin', superuser: false });
  assert.is(b.serviceAccount, null);
  assert.equal(b.orgs, [{ id: w.orgId, name: 'Org A', role: 'admin' }]);
  assert.is(r.headers.get('cache-control'), 'no-store');
  assert.is(r.headers.get('pragma'), 'no-cache');
});

S('expiresAt: UTC, no zone, six fractional digits, one hour ahead (parsable by Python %f)', async ({ t }) => {
  const now = t.clock.now();
  const r = await t.call('POST', `${ID}/session`, { body: { grantType: 'password', email: 'admin@a.test', password: PASSWORD } });
  assert.match(r.body.expiresAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}$/);
  const parsed = Date.parse(`${r.body.expiresAt.slice(0, 23)}Z`);
  // the whole second the JWT's exp says, so that GET /session can give the same time
  assert.ok(parsed - now >= 3600_000 && parsed - now < 3601_000 && parsed % 1000 === 0, `${r.body.expiresAt}, signed in at ${new Date(now).toISOString()}`);
  // the exact client check: a Python program parsing it with the hosted service's format (printed
  // with its microseconds: isoformat() leaves them out when they are 0, one start in a thousand)
  const out = execFileSync('python3', ['-c', 'import sys,datetime; print(datetime.datetime.strptime(sys.argv[1], "%Y-%m-%dT%H:%M:%S.%f").isoformat(timespec="microseconds"))', r.body.expiresAt]).toString().trim();
  assert.is(out, r.body.expiresAt);
});

S('password grant: RFC 6749 snake_case JSON, form grant_type, and form username+password without grant type', async ({ t, w }) => {
  const a = await t.call('POST', `${ID}/session`, { body: { grant_type: 'password', username: 'editor@a.test', password: PASSWORD } });
  expectStatus(a, 200, 'snake json');
  const b = await t.call('POST', `${ID}/session`, { form: { grant_type: 'password', username: 'editor@a.test', password: PASSWORD } });
  expectStatus(b, 200, 'form with grant_type');
  const c = await t.call('POST', `${ID}/session`, { form: { username: 'editor@a.test', password: PASSWORD } });
  expectStatus(c, 200, 'form without grant type');
  assert.is(c.body.user.id, w.users.editor);
  const d = await t.call('POST', `${ID}/session`, { body: { email: 'EDITOR@A.test', password: PASSWORD } });
  expectStatus(d, 200, 'json without grant type, e-mail in another case');
});

S('auth alias /auth/v1/session: form username+password → snake_case token response', async ({ t }) => {
  const r = await t.call('POST', '/auth/v1/session', { form: { username: 'viewer@a.test', password: PASSWORD } });
  expectStatus(r, 200);
  assert.equal(Object.keys(r.body).sort(), ['access_token', 'expires_at', 'expires_in', 'refresh_token', 'token_type']);
  assert.is(r.body.token_type, 'Bearer');
  assert.is(r.body.expires_in, 3600);
  assert.match(r.body.expires_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}$/);
  const me = await t.call('GET', `${ID}/users/me`, { token: r.body.access_token });
  expectStatus(me, 200);
  assert.is(me.body.email, 'viewer@a.test');
  const bad = await t.call('POST', '/auth/v1/session', { form: { username: 'viewer@a.test', password: 'wrong password!' } });
  assert.is(bad.status, 401);
  assert.is(bad.body.code, 'invalid_grant');
});

S('wrong credentials: unknown e-mail and wrong password give the same 401 invalid_grant (A3)', async ({ t }) => {
  const a = await t.call('POST', `${ID}/session`, { body: { grantType: 'password', email: 'nobody@a.test', password: 'whatever123' } });
  const b = await t.call('POST', `${ID}/session`, { body: { grantType: 'password', email: 'viewer@a.test', password: 'whatever123' } });
  assert.is(a.status, 401);
  assert.is(b.status, 401);
  const strip = (x: any) => ({ ...x, requestId: undefined });
  assert.equal(strip(a.body), strip(b.body));
  assert.is(a.body.code, 'invalid_grant');
  assert.is(a.body.error, 'invalid_grant');
  assert.match(a.headers.get('content-type') ?? '', /^application\/problem\+json/);
});

S('unknown accounts cost the same bcrypt work as real ones: one compare at the configured cost (A3)', async ({ t }) => {
  const h = t.rt.identity.hasher;
  const before = h.stats();
  await t.call('POST', `${ID}/session`, { body: { email: 'nobody-at-all@a.test', password: 'whatever123' } });
  const mid = h.stats();
  assert.is(mid.compares - before.compares, 1, 'an unknown e-mail still runs one bcrypt compare');
  await t.call('POST', `${ID}/session`, { body: { email: 'viewer@a.test', password: 'whatever123' } });
  assert.is(h.stats().compares - mid.compares, 1, 'a known e-mail runs exactly one compare too');
  assert.is(mid.hashes - before.hashes, 0, 'nothing is hashed for it');
  // the first unknown e-mail after a start too: its compare runs at the configured cost against a
  // hash of no account, none made for it (one was, at the cost: that answer took a hash longer)
  const fresh = createPasswordHasher({ cost: 6, prehashKey: Buffer.alloc(32, 7) });
  try {
    assert.is(await fresh.verifyNothing('no such password'), false);
    assert.equal(fresh.stats(), { hashes: 0, compares: 1, compareWork: 2 ** 6 });
    // a wrong password against an old-cost hash pads with compares at the costs between, none hashed either
    assert.is(await fresh.verify('wrong', bcrypt.hashSync('x', 4)), false);
    assert.equal(fresh.stats(), { hashes: 0, compares: 4, compareWork: 2 ** 6 + 2 ** 4 + 2 ** 4 + 2 ** 5 });
    for (const cost of [4, 10, 12]) assert.not.ok(bcrypt.compareSync('no such account', noAccountHashFor(cost)), `cost ${cost}: no password matches`);
  } finally {
    await fresh.close();
  }
});

S('bcrypt runs on a thread of the lowest priority: requests keep the CPU in a login storm (RELIABILITY L1 scenario 4)', async ({ t }) => {
  await t.call('POST', `${ID}/session`, { body: { email: 'nobody-at-all@a.test', password: 'whatever123' } }); // the hasher's thread is up
  const threads = threadNices();
  assert.equal(threads.filter((n) => n === 19).length, 1, `one thread at nice 19: ${JSON.stringify(threads)}`);
  assert.is(threadNice(process.pid), 0, 'the event loop keeps the normal priority');
});

S('refresh: rotation returns a new pair; re-use of the old token revokes the whole family (A6a)', async ({ t }) => {
  const s1 = await signIn(t, 'editor@a.test', PASSWORD);
  const r2 = await t.call('POST', `${ID}/session`, { body: { grantType: 'refreshToken', refreshToken: s1.refreshToken } });
  expectStatus(r2, 200, 'first refresh');
  assert.is.not(r2.body.refreshToken, s1.refreshToken);
  assert.is.not(r2.body.accessToken, s1.accessToken);
  assert.is(r2.body.user.email, 'editor@a.test');
  // the old token comes back: re-use
  const reuse = await t.call('POST', `${ID}/session`, { body: { grant_type: 'refresh_token', refresh_token: s1.refreshToken } });
  assert.is(reuse.status, 401);
  assert.is(reuse.body.code, 'invalid_grant');
  // …which ends the family: the newest refresh token and the access tokens are dead too
  const r3 = await t.call('POST', `${ID}/session`, { body: { grantType: 'refreshToken', refreshToken: r2.body.refreshToken } });
  assert.is(r3.status, 401);
  const me = await t.call('GET', `${ID}/users/me`, { token: r2.body.accessToken });
  assert.is(me.status, 401);
  assert.match(me.headers.get('www-authenticate') ?? '', /Bearer error="invalid_token"/);
  // another session of the same user is unaffected
  const other = await signIn(t, 'editor@a.test', PASSWORD);
  expectStatus(await t.call('GET', `${ID}/users/me`, { token: other.accessToken }), 200);
});

S('a refresh token presented again after its session ended otherwise (signed out, disabled) is told the session ended, not that it was re-used', async ({ t }) => {
  const s = await signIn(t, 'viewer@a.test', PASSWORD);
  const refresh = () => t.call('POST', `${ID}/session`, { body: { grantType: 'refreshToken', refreshToken: s.refreshToken } });
  expectStatus(await t.call('DELETE', `${ID}/session`, { token: s.accessToken }), 204);
  for (const attempt of [1, 2]) {
    const r = await refresh();
    assert.is(r.status, 401);
    assert.match(r.body.message, /The session has ended; sign in again/, `attempt ${attempt}: ${r.body.message}`);
  }
  // a re-use of a rotated token still says so, also when presented again after its family ended
  const live = await signIn(t, 'viewer@a.test', PASSWORD);
  expectStatus(await t.call('POST', `${ID}/session`, { body: { grantType: 'refreshToken', refreshToken: live.refreshToken } }), 200);
  for (const attempt of [1, 2]) {
    const r = await t.call('POST', `${ID}/session`, { body: { grantType: 'refreshToken', refreshToken: live.refreshToken } });
    assert.match(r.body.message, /already used/, `re-use ${attempt}`);
  }
});

S('a used refresh token presented again and again: one audit row for the revocation, and the address is throttled like any bad token', async () => {
  const t = await startApp({ config: { loginMaxFailuresPerAddress: 20 } });
  try {
    await seedWorld(t);
    const s = await signIn(t, 'viewer@a.test', PASSWORD);
    expectStatus(await t.call('POST', `${ID}/session`, { body: { grantType: 'refreshToken', refreshToken: s.refreshToken } }), 200);
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) statuses.push((await t.call('POST', `${ID}/session`, { body: { grantType: 'refreshToken', refreshToken: s.refreshToken } })).status);
    const rows = t.rt.db.raw.prepare("SELECT count(*) FROM audit_log WHERE action = 'session.refresh_token_reused'").pluck().get();
    assert.is(rows, 1, 'the revocation is audited once');
    assert.equal([...new Set(statuses)], [401, 429], `401 until the address's limit, then 429: ${statuses.join(',')}`);
  } finally {
    await t.close();
  }
});

S('a sign-in whose password check overlaps a password reset or a disable gets no session (A5)', async ({ t, w }) => {
  // the hasher's queue held: the check starts with the old password, the reset commits meanwhile
  for (const change of ['reset', 'disable'] as const) {
    const email = `race-${change}@a.test`;
    const created = await t.call('POST', `${ID}/users`, { token: w.root, body: { email, password: 'the old password 42' } });
    expectStatus(created, 201);
    const h = t.rt.identity.hasher;
    const verify = h.verify.bind(h);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    h.verify = async (pw, hash) => {
      const ok = await verify(pw, hash);
      await held;
      return ok;
    };
    const compares = h.stats().compares;
    try {
      const signing = t.call('POST', `${ID}/session`, { body: { email, password: 'the old password 42' } });
      await until('the password check started', () => h.stats().compares > compares);
      const patch = change === 'reset' ? { password: 'the new password 42' } : { disabled: true };
      expectStatus(await t.call('PATCH', `${ID}/users/${created.body.id}`, { token: w.root, body: patch }), 200);
      release();
      const r = await signing;
      assert.is(r.status, 401, `${change}: ${r.text}`);
      assert.is(r.body.code, 'invalid_grant');
    } finally {
      h.verify = verify;
    }
  }
});

S('concurrent refreshes with one token: exactly one wins, the family is then revoked (A6b)', async ({ t }) => {
  const s = await signIn(t, 'viewer@a.test', PASSWORD);
  const results = await Promise.all(
    Array.from({ length: 8 }, () => t.call('POST', `${ID}/session`, { body: { grantType: 'refreshToken', refreshToken: s.refreshToken } })),
  );
  const ok = results.filter((r) => r.status === 200);
  assert.is(ok.length, 1, 'exactly one refresh succeeds');
  assert.ok(results.every((r) => r.status === 200 || (r.status === 401 && r.body.code === 'invalid_grant')));
  // the documented policy: a second use of a rotated token revokes the family, winner included
  const after = await t.call('POST', `${ID}/session`, { body: { grantType: 'refreshToken', refreshToken: ok[0]!.body.refreshToken } });
  assert.is(after.status, 401);
});

S('concurrent sign-ins each get their own session', async ({ t }) => {
  const results = await Promise.all(Array.from({ length: 6 }, () => t.call('POST', `${ID}/session`, { body: { grantType: 'password', email: 'editor@a.test', password: PASSWORD } })));
  assert.ok(results.every((r) => r.status === 200));
  const sids = new Set(results.map((r) => JSON.parse(Buffer.from(r.body.accessToken.split('.')[1], 'base64url').toString()).sid));
  assert.is(sids.size, 6);
  for (const r of results) expectStatus(await t.call('POST', `${ID}/session`, { body: { grantType: 'refreshToken', refreshToken: r.body.refreshToken } }), 200);
});

S('DELETE /session signs out: refresh fails and the access token is refused (A5a)', async ({ t }) => {
  const s = await signIn(t, 'viewer@a.test', PASSWORD);
  expectStatus(await t.call('GET', `${ID}/session`, { token: s.accessToken }), 200);
  expectStatus(await t.call('DELETE', `${ID}/session`, { token: s.accessToken }), 204);
  const me = await t.call('GET', `${ID}/users/me`, { token: s.accessToken });
  assert.is(me.status, 401);
  const r = await t.call('POST', `${ID}/session`, { body: { grantType: 'refreshToken', refreshToken: s.refreshToken } });
  assert.is(r.status, 401);
  assert.is(r.body.code, 'invalid_grant');
});

S('GET /session returns the shape of the sign-in answer without tokens: the access token\'s expiry, the principal and organizations', async ({ t, w }) => {
  const s = await signIn(t, 'admin@a.test', PASSWORD);
  const r = await t.call('GET', `${ID}/session`, { token: s.accessToken });
  expectStatus(r, 200);
  assert.is(r.body.accessToken, undefined);
  assert.is(r.body.refreshToken, undefined);
  assert.equal(Object.keys(r.body).sort(), Object.keys(s).filter((k) => k !== 'accessToken' && k !== 'refreshToken').sort(), 'every other member of the sign-in answer');
  assert.equal([r.body.refreshExpiresAt, r.body.tokenType], [s.refreshExpiresAt, 'Bearer'], 'the refresh token the client holds');
  assert.match(r.body.expiresAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}$/, 'in the sign-in answer\'s format');
  const [told, own] = [Date.parse(`${s.expiresAt.slice(0, 23)}Z`), Date.parse(`${r.body.expiresAt.slice(0, 23)}Z`)];
  assert.is(own, told, `one token, one expiry: ${r.body.expiresAt} against ${s.expiresAt} at sign-in (a compatibility tester saw them a fraction of a second apart)`);
  assert.ok(r.body.expiresIn > 3500 && r.body.expiresIn <= 3600, `seconds left: ${r.body.expiresIn}`);
  assert.is(r.body.user.id, w.users.admin);
  assert.equal(r.body.orgs, [{ id: w.orgId, name: 'Org A', role: 'admin' }]);
});

S('a superuser\'s session lists the organizations and roles GET /orgs lists and the server enforces: every one, as admin, also where a member with a lower role', async ({ t, w }) => {
  const email = 'super-viewer@x.test';
  const created = await t.call('POST', `${ID}/users`, { token: w.root, body: { email, password: PASSWORD, superuser: true } });
  expectStatus(created, 201);
  expectStatus(await t.call('POST', `${ID}/orgs/${w.otherOrgId}/members`, { token: w.root, body: { email, role: 'viewer' } }), 201);
  const s = await signIn(t, email, PASSWORD);
  const listed = (await t.call('GET', `${ID}/orgs?limit=1000`, { token: s.accessToken })).body.orgs.map((o: any) => ({ id: o.id, name: o.name, role: o.role }));
  assert.ok(listed.length >= 2 && listed.every((o: any) => o.role === 'admin'), JSON.stringify(listed));
  const byId = (orgs: { id: string }[]) => [...orgs].sort((a, b) => a.id.localeCompare(b.id));
  assert.equal(byId(s.orgs), byId(listed), 'the sign-in answer');
  assert.equal(byId((await t.call('GET', `${ID}/session`, { token: s.accessToken })).body.orgs), byId(listed), 'GET /session');
  // what the answer says is what the server does: admin on Org B, where the membership says viewer
  expectStatus(await t.call('GET', `${ID}/orgs/${w.otherOrgId}/audit`, { token: s.accessToken }), 200, 'an admin route of Org B');
  // no longer a superuser: the membership's role, on the next request
  expectStatus(await t.call('PATCH', `${ID}/users/${created.body.id}`, { token: w.root, body: { superuser: false } }), 200);
  const after = await t.call('GET', `${ID}/session`, { token: s.accessToken });
  assert.equal(after.body.orgs, [{ id: w.otherOrgId, name: 'Org B', role: 'viewer' }]);
  assert.equal((await t.call('GET', `${ID}/orgs`, { token: s.accessToken })).body.orgs.map((o: any) => [o.id, o.role]), [[w.otherOrgId, 'viewer']]);
});

S('client credentials: JSON, snake_case, form and HTTP Basic; service accounts get refresh tokens (SPEC)', async ({ t, w }) => {
  const { id, secret } = w.serviceAccounts.saEditor;
  const a = await t.call('POST', `${ID}/session`, { body: { grantType: 'clientCredentials', clientId: id, clientSecret: secret } });
  expectStatus(a, 200, 'json');
  assert.equal(a.body.serviceAccount, { id, name: 'sa editor', orgId: w.orgId, role: 'editor' });
  assert.is(a.body.user, null);
  assert.equal(a.body.orgs, [{ id: w.orgId, name: 'Org A', role: 'editor' }]);
  assert.match(a.body.refreshToken, /^clr_/);
  expectStatus(await t.call('POST', `${ID}/session`, { body: { grant_type: 'client_credentials', client_id: id, client_secret: secret } }), 200, 'snake');
  expectStatus(await t.call('POST', `${ID}/session`, { form: { grant_type: 'client_credentials', client_id: id, client_secret: secret } }), 200, 'form');
  const basic = Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64');
  expectStatus(await t.call('POST', `${ID}/session`, { form: { grant_type: 'client_credentials' }, headers: { authorization: `Basic ${basic}` } }), 200, 'basic');
  const refreshed = await t.call('POST', `${ID}/session`, { body: { grantType: 'refreshToken', refreshToken: a.body.refreshToken } });
  expectStatus(refreshed, 200, 'service account refresh');
  assert.is(refreshed.body.serviceAccount.id, id);
});

S('a refresh token presented by another client → 401 invalid_grant, and stays usable by its own (A6c, RFC 6749 §10.4)', async ({ t, w }) => {
  const x = w.serviceAccounts.saEditor;
  const y = w.serviceAccounts.saViewer;
  const issued = await t.call('POST', `${ID}/session`, { body: { grantType: 'clientCredentials', clientId: x.id, clientSecret: x.secret } });
  expectStatus(issued, 200);
  const xToken = issued.body.refreshToken;
  const user = await signIn(t, 'viewer@a.test', PASSWORD);
  for (const [body, what] of [
    [{ grant_type: 'refresh_token', refresh_token: xToken, client_id: y.id, client_secret: y.secret }, 'client Y, authenticated'],
    [{ grant_type: 'refresh_token', refresh_token: xToken, client_id: y.id }, 'client Y, named only'],
    [{ grant_type: 'refresh_token', refresh_token: user.refreshToken, client_id: y.id, client_secret: y.secret }, "a user's token presented by a client"],
  ] as const) {
    const r = await t.call('POST', `${ID}/session`, { form: body });
    assert.is(r.status, 401, what);
    assert.is(r.body.error, 'invalid_grant', what);
    assert.is(r.body.message, 'The refresh token was not issued to this client.', what);
  }
  const basicY = Buffer.from(`${y.id}:${y.secret}`).toString('base64');
  const viaBasic = await t.call('POST', `${ID}/session`, { form: { grant_type: 'refresh_token', refresh_token: xToken }, headers: { authorization: `Basic ${basicY}` } });
  assert.is(viaBasic.body.error, 'invalid_grant', 'client Y by HTTP Basic');
  const wrongSecret = await t.call('POST', `${ID}/session`, { form: { grant_type: 'refresh_token', refresh_token: xToken, client_id: x.id, client_secret: 'cls_wrong' } });
  assert.equal([wrongSecret.status, wrongSecret.body.error], [401, 'invalid_client'], 'its own id with a wrong secret');
  // none of these used the token: its own client rotates it, and the user's still works
  const own = await t.call('POST', `${ID}/session`, { form: { grant_type: 'refresh_token', refresh_token: xToken, client_id: x.id, client_secret: x.secret } });
  expectStatus(own, 200, 'the token still works for the client it was issued to');
  assert.is(own.body.serviceAccount.id, x.id);
  expectStatus(await t.call('POST', `${ID}/session`, { body: { grantType: 'refreshToken', refreshToken: user.refreshToken } }), 200, "the user's token too");
});

S('client credentials: wrong secret or unknown id → 401 invalid_client; secret in the URL → 400 and not logged (A7b, A7c)', async ({ t, w }) => {
  const { id } = w.serviceAccounts.saViewer;
  const wrong = await t.call('POST', `${ID}/session`, { body: { grantType: 'clientCredentials', clientId: id, clientSecret: 'cls_wrong' } });
  assert.is(wrong.status, 401);
  assert.is(wrong.body.code, 'invalid_client');
  assert.is(wrong.body.error, 'invalid_client');
  // RFC 6749 §5.2: the scheme to authenticate with, also for a client that sent HTTP Basic
  const basic = await t.call('POST', `${ID}/session`, { raw: 'grant_type=client_credentials', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${id}:cls_wrong`).toString('base64')}` } });
  assert.is(basic.status, 401);
  assert.match(basic.headers.get('www-authenticate') ?? '', /^Basic realm="contact-ledger"/);
  const unknown = await t.call('POST', `${ID}/session`, { body: { grantType: 'clientCredentials', clientId: 'sa_00000000000000000000000000', clientSecret: 'cls_wrong' } });
  assert.is(unknown.status, 401);
  assert.is(unknown.body.message, wrong.body.message);
  const inUrl = await t.call('POST', `${ID}/session?client_secret=SECRETINURL123&client_id=${id}`, { body: { grantType: 'clientCredentials', clientId: id, clientSecret: 'x' } });
  assert.is(inUrl.status, 400);
  assert.not.ok(t.logs.join('').includes('SECRETINURL123'), 'the query string never reaches the log');
});

S('client credentials sent with a password grant are checked: wrong or unreadable → 401 invalid_client, valid → 400 unauthorized_client (RFC 6749 §3.2.1, §5.2)', async ({ t, w }) => {
  const { id, secret } = w.serviceAccounts.saAdmin;
  const basic = (text: string) => ({ authorization: `Basic ${Buffer.from(text).toString('base64')}` });
  const user = { grant_type: 'password', username: 'viewer@a.test', password: PASSWORD };
  const cases: [string, { form?: Record<string, string>; body?: unknown; headers?: Record<string, string> }, number, string][] = [
    ['an unknown client by Basic', { form: user, headers: basic('sa_bogus:cls_wrong') }, 401, 'invalid_client'],
    ['a real client with a wrong secret by Basic', { form: user, headers: basic(`${id}:cls_wrong`) }, 401, 'invalid_client'],
    ['Basic that is not base64', { form: user, headers: { authorization: 'Basic !!!notbase64' } }, 401, 'invalid_client'],
    ['Basic without credentials', { form: user, headers: { authorization: 'Basic' } }, 401, 'invalid_client'],
    ['Basic without a colon', { form: user, headers: basic(id) }, 401, 'invalid_client'],
    ['Basic with bad percent-encoding', { form: user, headers: basic(`${id}:%E0%A4%A`) }, 401, 'invalid_client'],
    ['a wrong secret in the body', { body: { grantType: 'password', email: 'viewer@a.test', password: PASSWORD, clientId: id, clientSecret: 'cls_wrong' } }, 401, 'invalid_client'],
    ['form username + password without grant type, wrong Basic', { form: { username: 'viewer@a.test', password: PASSWORD }, headers: basic(`${id}:cls_wrong`) }, 401, 'invalid_client'],
    ['a valid client by Basic', { form: user, headers: basic(`${id}:${secret}`) }, 400, 'unauthorized_client'],
    ['a valid client in the body', { body: { ...user, client_id: id, client_secret: secret } }, 400, 'unauthorized_client'],
  ];
  // a reverse proxy's own Basic login (not one of our clients) is no client authentication: the user signs in
  for (const path of [`${ID}/session`, '/auth/v1/session']) {
    const proxied = await t.call('POST', path, { form: { ...(path.startsWith(ID) ? { grant_type: 'password' } : {}), username: 'viewer@a.test', password: PASSWORD }, headers: basic('intranet-user:proxy password') });
    expectStatus(proxied, 200, path);
  }
  // a client id alone is a public client's name, which OAuth libraries send by default: the user signs in
  const named = await t.call('POST', `${ID}/session`, { body: { ...user, client_id: 'my-crm-plugin' } });
  expectStatus(named, 200);
  assert.is(named.body.user.email, 'viewer@a.test');
  for (const [what, opts, status, error] of cases) {
    const r = await t.call('POST', `${ID}/session`, opts);
    assert.equal([r.status, r.body.error, r.body.code], [status, error, error], what);
    assert.is(r.headers.get('content-type'), 'application/problem+json', what);
    assert.is(r.body.accessToken, undefined, what);
  }
  // the refresh grant, which checked a readable Basic header, no longer ignores an unreadable one
  const s = await signIn(t, 'viewer@a.test', PASSWORD);
  const bad = await t.call('POST', `${ID}/session`, { form: { grant_type: 'refresh_token', refresh_token: s.refreshToken }, headers: { authorization: 'Basic !!!notbase64' } });
  assert.equal([bad.status, bad.body.error], [401, 'invalid_client'], 'refresh grant, unreadable Basic');
  // nor does the auth alias (a password grant too)
  for (const headers of [basic('sa_bogus:cls_wrong'), { authorization: 'Basic !!!notbase64' }]) {
    const r = await t.call('POST', '/auth/v1/session', { form: { username: 'viewer@a.test', password: PASSWORD }, headers });
    assert.equal([r.status, r.body.error], [401, 'invalid_client'], `alias, ${headers.authorization}`);
  }
  const alias = await t.call('POST', '/auth/v1/session', { form: { username: 'viewer@a.test', password: PASSWORD }, headers: basic(`${id}:${secret}`) });
  assert.equal([alias.status, alias.body.error], [400, 'unauthorized_client'], 'alias, a valid client');
  // one client authentication method: not Basic and a secret in the body
  const twice = await t.call('POST', `${ID}/session`, { form: { grant_type: 'client_credentials', client_id: id, client_secret: secret }, headers: basic(`${id}:${secret}`) });
  assert.is(twice.body.error, 'invalid_request', 'Basic and client_secret both');
  // a failed client authentication is one of the client's: audited and counted as such
  const [audited] = t.rt.db.raw.prepare("SELECT data FROM audit_log WHERE action = 'session.sign_in_failed' ORDER BY rowid DESC LIMIT 1").pluck().all() as string[];
  assert.equal(JSON.parse(audited!), { grantType: 'password', clientId: null, clientIdNotAnId: true });
  // without client credentials (or with another scheme than Basic) the password grant is what it was
  expectStatus(await t.call('POST', `${ID}/session`, { form: user }), 200, 'no client');
  expectStatus(await t.call('POST', `${ID}/session`, { form: user, headers: { authorization: 'Bearer whatever' } }), 200, 'a Bearer header is no client authentication');
  expectStatus(await t.call('POST', `${ID}/session`, { form: { grant_type: 'client_credentials' }, headers: basic(`${id}:${secret}`) }), 200, 'the client itself, by Basic');
});

S('bad session requests: unknown grant type 400, missing or unknown fields 400 invalid_request, wrong media type 415', async ({ t }) => {
  const a = await t.call('POST', `${ID}/session`, { body: { grantType: 'implicit' } });
  assert.is(a.status, 400);
  assert.is(a.body.code, 'unsupported_grant_type');
  const b = await t.call('POST', `${ID}/session`, { body: { grantType: 'password', email: 'a@b.c' } });
  assert.is(b.status, 400);
  assert.equal(b.body.errors, [{ path: 'password', message: 'password is required for the password grant' }]);
  const c = await t.call('POST', `${ID}/session`, { body: { grantType: 'password', email: 'a@b.c', password: 'x', admin: true } });
  assert.is(c.status, 400);
  assert.equal(c.body.errors, [{ path: 'admin', message: 'is not a known field' }]);
  const d = await t.call('POST', `${ID}/session`, { raw: 'email=a', headers: { 'content-type': 'text/plain' } });
  assert.is(d.status, 415);
  const e = await t.call('POST', `${ID}/session`, { body: {} });
  assert.is(e.status, 400);
  const f = await t.call('POST', `${ID}/session`, { body: { grantType: 'password', email: ['a@b.c', 'd@e.f'], password: 'x' } });
  assert.is(f.status, 400, 'type confusion (I6)');
  for (const r of [b, c, d, e, f]) assert.is(r.body.error, 'invalid_request');
});

S('every error of the token endpoint (and its auth alias) carries RFC 6749\'s error and error_description, 400 where other routes answer 422 (RELIABILITY I7)', async ({ t }) => {
  const json = (raw: string) => ({ raw, headers: { 'content-type': 'application/json' } });
  const form = (raw: string) => ({ raw, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  const cases: [string, string, { raw: string; headers: Record<string, string> }, number, string, string][] = [
    ['an array', `${ID}/session`, json('[]'), 400, 'invalid_request', 'validation_failed'],
    ['an e-mail that is a number', `${ID}/session`, json('{"grantType":"password","email":5,"password":"x"}'), 400, 'invalid_request', 'validation_failed'],
    ['invalid JSON', `${ID}/session`, json('{bad'), 400, 'invalid_request', 'malformed_body'],
    ['a key given twice', `${ID}/session`, json('{"email":"a@b.c","password":"x","password":"y"}'), 400, 'invalid_request', 'validation_failed'],
    ['an empty body', `${ID}/session`, json(''), 400, 'invalid_request', 'validation_failed'],
    ['form: the grant alone', `${ID}/session`, form('grant_type=authorization_code'), 400, 'unsupported_grant_type', 'unsupported_grant_type'],
    ['form: the grant with its parameters', `${ID}/session`, form('grant_type=authorization_code&code=x&redirect_uri=http%3A%2F%2Fa.test'), 400, 'unsupported_grant_type', 'unsupported_grant_type'],
    ['form: a field without its grant', `${ID}/session`, form('grant_type=password&username=a%40b.c'), 400, 'invalid_request', 'validation_failed'],
    ['form: not UTF-8', `${ID}/session`, form('username=a%40b.c&password=%FF'), 400, 'invalid_request', 'malformed_body'],
    ['a credential in the URL', `${ID}/session?client_secret=x`, json('{"grantType":"clientCredentials","clientId":"sa_x","clientSecret":"y"}'), 400, 'invalid_request', 'invalid_parameter'],
    ['text/plain', `${ID}/session`, { raw: 'x', headers: { 'content-type': 'text/plain' } }, 415, 'invalid_request', 'unsupported_media_type'],
    ['alias: an array', '/auth/v1/session', json('[]'), 400, 'invalid_request', 'validation_failed'],
    ['alias: no password', '/auth/v1/session', form('username=a%40b.c'), 400, 'invalid_request', 'validation_failed'],
    ['alias: another grant', '/auth/v1/session', form('grant_type=client_credentials&username=a%40b.c&password=x'), 400, 'unsupported_grant_type', 'unsupported_grant_type'],
    ['alias: invalid JSON', '/auth/v1/session', json('{bad'), 400, 'invalid_request', 'malformed_body'],
  ];
  for (const [what, path, opts, status, error, code] of cases) {
    const r = await t.call('POST', path, opts);
    assert.equal([r.status, r.body.error, r.body.code], [status, error, code], `${what}: ${r.text}`);
    assert.is(r.headers.get('content-type'), 'application/problem+json', what);
    // problem+json as before: status, message (= detail), and a description for OAuth clients
    assert.equal([r.body.status, r.body.detail], [status, r.body.message], what);
    assert.type(r.body.error_description, 'string', what);
    assert.match(r.body.error_description, /^[\x20\x21\x23-\x5b\x5d-\x7e]+$/, `${what}: RFC 6749 §5.2 characters only`);
  }
  // the errors list stays where there is one
  const many = await t.call('POST', `${ID}/session`, json('{"grantType":"password","email":5,"password":"x","admin":true}'));
  assert.equal(many.body.errors.map((e: { path: string }) => e.path).sort(), ['admin', 'email']);
  // a 429 says so too, keeping its status and Retry-After
  const throttled = await startApp({ config: { loginMaxFailuresPerAccount: 1, loginMaxFailuresPerAddress: 1000 } });
  try {
    await throttled.call('POST', `${ID}/session`, { body: { email: 'nobody@a.test', password: 'not it at all' } });
    const r = await throttled.call('POST', `${ID}/session`, { body: { email: 'nobody@a.test', password: 'not it at all' } });
    assert.equal([r.status, r.body.error, r.body.code], [429, 'temporarily_unavailable', 'too_many_requests']);
    assert.ok(Number(r.headers.get('retry-after')) > 0);
  } finally {
    await throttled.close();
  }
});

S('refresh token used as a bearer token → 401; an access token as refresh token → 401', async ({ t }) => {
  const s = await signIn(t, 'viewer@a.test', PASSWORD);
  const a = await t.call('GET', `${ID}/users/me`, { token: s.refreshToken });
  assert.is(a.status, 401);
  const b = await t.call('POST', `${ID}/session`, { body: { grantType: 'refreshToken', refreshToken: s.accessToken } });
  assert.is(b.status, 401);
});

S('refresh tokens expire after 30 idle days; a sign-in ends after its absolute lifetime (A5e, A6f)', async ({ t }) => {
  const clock = t.clock as ManualClock;
  const s = await signIn(t, 'viewer@a.test', PASSWORD);
  const reuseAlarms = () => t.rt.db.raw.prepare("SELECT count(*) FROM audit_log WHERE action = 'session.refresh_token_reused'").pluck().get();
  const alarmsBefore = reuseAlarms();
  clock.advance(31 * 86_400_000);
  const idle = await t.call('POST', `${ID}/session`, { body: { grantType: 'refreshToken', refreshToken: s.refreshToken } });
  assert.is(idle.status, 401);
  assert.match(idle.body.message, /expired/);
  // a client retrying the expired token is told its session ended: no false re-use alarm
  const retry = await t.call('POST', `${ID}/session`, { body: { grantType: 'refreshToken', refreshToken: s.refreshToken } });
  assert.is(retry.status, 401);
  assert.match(retry.body.message, /The session has ended/, retry.body.message);
  assert.is(reuseAlarms(), alarmsBefore, 'no re-use audited');
  // used continuously, the family still ends at 90 days
  let current = (await signIn(t, 'viewer@a.test', PASSWORD)).refreshToken;
  for (let day = 0; day < 89; day += 20) {
    clock.advance(20 * 86_400_000);
    const r = await t.call('POST', `${ID}/session`, { body: { grantType: 'refreshToken', refreshToken: current } });
    if (r.status !== 200) break;
    current = r.body.refreshToken;
  }
  clock.advance(20 * 86_400_000);
  const late = await t.call('POST', `${ID}/session`, { body: { grantType: 'refreshToken', refreshToken: current } });
  assert.is(late.status, 401);
  clock.set(Date.now());
});

S('an access token issued in the last hour of a sign-in says it ends with the sign-in, and does', async ({ t }) => {
  const clock = t.clock as ManualClock;
  const start = clock.now();
  try {
    let current = (await signIn(t, 'viewer@a.test', PASSWORD)).refreshToken;
    // refreshed every 20 days, then 30 minutes before the 90-day absolute end
    for (let day = 20; day < 90; day += 20) {
      clock.set(start + day * 86_400_000);
      current = (await t.call('POST', `${ID}/session`, { body: { grantType: 'refreshToken', refreshToken: current } })).body.refreshToken;
    }
    clock.set(start + 90 * 86_400_000 - 30 * 60_000);
    const late = await t.call('POST', `${ID}/session`, { body: { grantType: 'refreshToken', refreshToken: current } });
    expectStatus(late, 200);
    assert.is(late.body.expiresIn, 1800, 'half an hour left, not an hour');
    assert.is(Date.parse(`${late.body.expiresAt}Z`), start + 90 * 86_400_000);
    assert.is(Date.parse(late.body.refreshExpiresAt), start + 90 * 86_400_000, 'the refresh token ends then too');
    const described = await t.call('GET', `${ID}/session`, { token: late.body.accessToken });
    assert.is(described.body.expiresIn, 1800);
    clock.set(start + 90 * 86_400_000 - 1000);
    expectStatus(await t.call('GET', `${ID}/users/me`, { token: late.body.accessToken }), 200, 'good until the time it gave');
    clock.set(start + 90 * 86_400_000 + 1000);
    expectStatus(await t.call('GET', `${ID}/users/me`, { token: late.body.accessToken }), 401, 'and not after');
  } finally {
    clock.set(Date.now());
  }
});

S('no raw refresh token or client secret is stored anywhere in the database (A6d, A7a)', async ({ t, w }) => {
  const s = await signIn(t, 'editor@a.test', PASSWORD);
  const needles = [s.refreshToken, s.refreshToken.slice(4), w.serviceAccounts.saAdmin.secret, w.serviceAccounts.saAdmin.secret.slice(4), PASSWORD];
  const db = new Database(join(t.dataDir, 'contact-ledger.db'), { readonly: true });
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[];
  for (const table of tables) {
    for (const row of db.prepare(`SELECT * FROM "${table}"`).all() as Record<string, unknown>[]) {
      const text = JSON.stringify(row, (_k, v) => (Buffer.isBuffer(v) ? v.toString('hex') : v));
      for (const n of needles) assert.not.ok(text.includes(n), `${table} contains a secret`);
    }
  }
  db.close();
});

S('logs never contain passwords, secrets or tokens (A1e)', async ({ t, w }) => {
  const s = await signIn(t, 'editor@a.test', PASSWORD);
  const all = t.logs.join('\n');
  for (const needle of [PASSWORD, ROOT_PASSWORD, s.accessToken, s.refreshToken, w.serviceAccounts.saAdmin.secret]) assert.not.ok(all.includes(needle));
  assert.ok(all.includes('"path":"/api/identity/v1/session"'), 'requests are logged');
});

S('password hashes are bcrypt at the configured cost; the default cost is 12 (A1a, A1c)', async ({ t }) => {
  const hashes = t.rt.db.raw.prepare('SELECT password_hash FROM users').pluck().all() as string[];
  for (const h of hashes) {
    assert.match(h, /^\$2[aby]\$\d\d\$/);
    assert.is(bcrypt.getRounds(h), 4); // tests run at cost 4 for speed
  }
  assert.is(new Set(hashes).size, hashes.length, 'same passwords hash differently (salt)');
  const { loadConfig } = await import('../src/config.ts');
  assert.ok(loadConfig({}).bcryptCost >= 12);
  assert.is(loadConfig({ BCRYPT_COST: '10' }).bcryptCost, 10);
  // (and a log level whatever its case, as booleans are read: an operator tester's LOG_LEVEL=WARN was refused)
  assert.is(loadConfig({ LOG_LEVEL: 'WARN' }).logLevel, 'warn');
  assert.is(loadConfig({ LOG_LEVEL: ' Info\r' }).logLevel, 'info');
  assert.throws(() => loadConfig({ BCRYPT_COST: '9' }), /BCRYPT_COST must be at least 10/, 'below 10 only for the test suite');
  assert.is(loadConfig({ BCRYPT_COST: '4', CONTACT_LEDGER_TEST_WEAK_HASHING: '1' }).bcryptCost, 4);
  assert.throws(() => loadConfig({ BCRYPT_COST: '16' }), /BCRYPT_COST must be an integer from 10 to 15/, 'the range operators may use');
  // METRICS_TOKEN is a bearer token: only characters a bearer token can carry (RFC 6750 token68)
  assert.throws(() => loadConfig({ METRICS_TOKEN: 'Sup3r!Secret#Token@2026' }), /METRICS_TOKEN must be at least 16 characters of/);
  assert.is(loadConfig({ METRICS_TOKEN: 'abc-DEF_123.456~+/xyz==' }).metricsToken, 'abc-DEF_123.456~+/xyz==');
  // a token file with a blank line after it or spaces around it: the token, as Prometheus reads such files (an operator tester's case)
  const tokenFile = join(tempDir(), 'metrics-token');
  writeFileSync(tokenFile, '  abc-DEF_123.456~+/xyz==\n\n');
  assert.is(loadConfig({ METRICS_TOKEN_FILE: tokenFile }).metricsToken, 'abc-DEF_123.456~+/xyz==');
  // a carriage return from a file saved on Windows is no part of the level; in a refused value it is shown
  assert.is(loadConfig({ LOG_LEVEL: 'info\r' }).logLevel, 'info');
  assert.throws(() => loadConfig({ LOG_LEVEL: 'inf\r' }), (e: Error) => e.message === 'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "inf\\r"');
  // BASE_URL is written as links are made from it: no slash at its end, the host as URLs write it
  assert.is(loadConfig({ BASE_URL: ' https://Contacts.Example.org/ledger/ ' }).baseUrl, 'https://contacts.example.org/ledger');
  assert.throws(() => loadConfig({ BASE_URL: 'https://x.example/?q=1' }), /without a query, fragment or credentials/);
  assert.is(loadConfig({ JWT_ISSUER: '' }).jwtIssuer, 'contact-ledger', 'empty, as unit templates leave it: the default');
  assert.throws(() => loadConfig({ JWT_ISSUER: ' ' }), /JWT_ISSUER must be a name or URL without spaces/);
  for (const issuer of ['a\u00a0b', 'a\u2028b', 'a\u200bb']) assert.throws(() => loadConfig({ JWT_ISSUER: issuer }), /without spaces or control characters/, JSON.stringify(issuer));
  assert.is(loadConfig({ JWT_ISSUER: 'https://idp.example/bücher' }).jwtIssuer, 'https://idp.example/bücher');
  // AUTH_URL uses only its path: a query or credentials, which BASE_URL refuses, are let be there
  assert.is(loadConfig({ AUTH_URL: 'https://u:p@x.example/auth?q=1' }).authPath, '/auth');
});

S('a hash made before BCRYPT_COST was raised is made again at the new cost when its user signs in (A1a, A3)', async () => {
  const dir = tempDir();
  const t = await startApp({ dataDir: dir });
  await t.close();
  const again = await startApp({ dataDir: dir, config: { bcryptCost: 5 } });
  try {
    const hash = again.rt.db.raw.prepare<[string], string>('SELECT password_hash FROM users WHERE email = ?').pluck();
    assert.is(bcrypt.getRounds(hash.get(ROOT_EMAIL)!), 4, 'made at the old cost');
    // a wrong password costs the account as much bcrypt work as an unknown e-mail's check at the new
    // cost, so the time does not tell an account not signed in since the raise (A3; a contract tester's case)
    const work = () => again.rt.identity.hasher.stats().compareWork;
    const beforeUnknown = work();
    assert.is((await again.call('POST', `${ID}/session`, { body: { email: 'nobody-at-all@a.test', password: 'not the password' } })).status, 401);
    const unknownWork = work() - beforeUnknown;
    assert.is(unknownWork, 2 ** 5, 'an unknown e-mail: one compare at the new cost');
    const beforeWrong = work();
    const wrong = await again.call('POST', `${ID}/session`, { body: { email: ROOT_EMAIL, password: 'not the password' } });
    assert.is(wrong.status, 401);
    assert.is(work() - beforeWrong, unknownWork, 'a wrong password against the old hash: the same work');
    assert.is(bcrypt.getRounds(hash.get(ROOT_EMAIL)!), 4, 'a failed sign-in changes nothing');
    await signInRoot(again);
    assert.is(bcrypt.getRounds(hash.get(ROOT_EMAIL)!), 5, 'the new cost after a sign-in');
    const hashes = again.rt.identity.hasher.stats().hashes;
    await signInRoot(again); // the password still works
    assert.is(again.rt.identity.hasher.stats().hashes, hashes, 'and is not hashed once more');
  } finally {
    await again.close();
  }
});

S('passwords are verified exactly: 64 × "é" works, the same first 72 bytes with another tail does not (A1b)', async ({ t, w }) => {
  const long = 'é'.repeat(64); // 128 bytes: beyond bcrypt's 72
  const add = await t.call('POST', `${ID}/orgs/${w.orgId}/members`, { token: w.tokens.admin, body: { email: 'long@a.test', role: 'viewer', password: long } });
  expectStatus(add, 201);
  expectStatus(await t.call('POST', `${ID}/session`, { body: { email: 'long@a.test', password: long } }), 200);
  const sameStart = 'é'.repeat(36) + 'x'.repeat(28);
  const r = await t.call('POST', `${ID}/session`, { body: { email: 'long@a.test', password: sameStart } });
  assert.is(r.status, 401);
});

S('password policy: too short, too long, common, repetitive and sequential passwords → 422 (A1d)', async ({ t, w }) => {
  for (const [pw, msg] of [['short7!', 'at least 8'], ['x'.repeat(257), 'at most 256'], ['password123', 'most common']] as const) {
    const r = await t.call('POST', `${ID}/orgs/${w.orgId}/members`, { token: w.tokens.admin, body: { email: `p${pw.length}@a.test`, role: 'viewer', password: pw } });
    assert.is(r.status, 422, pw);
    assert.ok(r.body.errors[0].message.includes(msg), r.text);
  }
  // ASVS 6.2.4's top 3,000 and more: a sample from the frequency list's top, middle and tail, any case
  const { commonPasswordCount } = await import('../src/identity/common-passwords.ts');
  assert.ok(commonPasswordCount() > 15_000, `${commonPasswordCount()} passwords of 8+ characters`);
  for (const pw of ['midnight', 'Victoria', '87654321', 'NOVEMBER', 'metallica', 'slipknot', 'blink182', 'alexander', 'jonathan', 'corvette', 'maverick', 'contactledger']) {
    const r = await t.call('PATCH', `${ID}/users/me`, { token: w.tokens.viewer, body: { currentPassword: PASSWORD, password: pw } });
    assert.is(r.status, 422, pw);
  }
  expectStatus(await t.call('POST', `${ID}/orgs/${w.orgId}/members`, { token: w.tokens.admin, body: { email: 'passphrase@a.test', role: 'viewer', password: 'midnight victoria maverick' } }), 201, 'words of the list in a passphrase');
  // repetitive or sequential characters (NIST SP 800-63B §3.1.1.2; a tester's aaaaaaaa and eight spaces)
  for (const [pw, msg] of [['$$$$$$$$$$', 'repeats'], [' '.repeat(8), 'repeats'], ['xyxyxyxyxy', 'repeats'], ['ÉÉÉÉÉÉÉÉ', 'repeats'], ['klmnopqrst', 'consecutive'], ['ZYXWVUTSRQ', 'consecutive']] as const) {
    const r = await t.call('PATCH', `${ID}/users/me`, { token: w.tokens.viewer, body: { currentPassword: PASSWORD, password: pw } });
    assert.is(r.status, 422, JSON.stringify(pw));
    assert.ok(r.body.errors[0].message.includes(msg), r.text);
  }
  for (const pw of ['xyz xyz xyz', 'klmnopqrsu', 'x'.repeat(15)]) {
    expectStatus(await t.call('POST', `${ID}/orgs/${w.orgId}/members`, { token: w.tokens.admin, body: { email: `ok-${pw.length}-${pw[0]}@a.test`, role: 'viewer', password: pw } }), 201, pw);
  }
});

S("password policy: the account's own e-mail address, its local part or name, and the current password are no new password (ASVS 5.0 6.2.11)", async ({ t, w }) => {
  for (const pw of ['viewer@a.test', 'VIEWER@A.TEST', 'viewer.atest']) {
    const r = await t.call('PATCH', `${ID}/users/me`, { token: w.tokens.viewer, body: { currentPassword: PASSWORD, password: pw } });
    expectStatus(r, 422, pw);
    assert.match(r.body.errors[0].message, /e-mail address or name/, pw);
  }
  const same = await t.call('PATCH', `${ID}/users/me`, { token: w.tokens.viewer, body: { currentPassword: PASSWORD, password: PASSWORD } });
  expectStatus(same, 422);
  assert.equal(same.body.errors[0], { path: 'password', message: 'is the current password; choose a new one' });
  const member = await t.call('POST', `${ID}/orgs/${w.orgId}/members`, { token: w.tokens.admin, body: { email: 'jonathan.harker@a.test', role: 'viewer', password: 'Jonathan.Harker' } });
  expectStatus(member, 422, 'a new member whose password is their address\'s local part');
  assert.match(member.body.errors[0].message, /e-mail address or name/);
  const created = await t.call('POST', `${ID}/users`, { token: w.root, body: { email: 'mina@a.test', name: 'Mina Murray Harker', password: 'mina murray harker' } });
  const nameAsMember = await t.call('POST', `${ID}/orgs/${w.orgId}/members`, { token: w.tokens.admin, body: { email: 'arthur@a.test', name: 'Arthur Holmwood', role: 'viewer', password: 'arthur holmwood' } });
  expectStatus(nameAsMember, 422, 'a new member whose password is the name the admin gave them (an org tester\'s case)');
  assert.match(nameAsMember.body.errors[0].message, /e-mail address or name/);
  const nameAsAdmin = await t.call('POST', `${ID}/orgs`, { token: w.root, body: { name: 'Carfax', adminEmail: 'quincey@a.test', adminName: 'Quincey Morris', adminPassword: 'Quincey-Morris' } });
  expectStatus(nameAsAdmin, 422, "a new organization's new admin likewise");
  expectStatus(created, 422, 'a new user whose password is their name');
  assert.match(created.body.errors[0].message, /e-mail address or name/, created.text);
  expectStatus(await t.call('POST', `${ID}/orgs/${w.orgId}/members`, { token: w.tokens.admin, body: { email: 'lucy@a.test', role: 'viewer', password: 'lucy westenra of whitby' } }), 201, 'a passphrase with the name in it is a passphrase');
});

S("a superuser changes their own password with the current one, as everyone: PATCH /users/:id of oneself is refused (a stolen token could take the account over)", async ({ t, w }) => {
  const me = (await t.call('GET', `${ID}/session`, { token: w.root })).body.user.id as string;
  const own = await t.call('PATCH', `${ID}/users/${me}`, { token: w.root, body: { password: 'A-Whole-New-Password-77' } });
  expectStatus(own, 422);
  assert.equal(own.body.errors[0], { path: 'password', message: 'is your own: change it with PATCH /users/me, giving currentPassword' });
  expectStatus(await t.call('GET', `${ID}/session`, { token: w.root }), 200, 'the session stays');
  expectStatus(await t.call('PATCH', `${ID}/users/${me}`, { token: w.root, body: { name: 'Root Renamed' } }), 200, 'the rest of one\'s own account may be patched there');
  expectStatus(await t.call('PATCH', `${ID}/users/${w.users.viewer}`, { token: w.root, body: { password: 'Reset-By-Root-55' } }), 200, "another account's password a superuser may reset");
});

S.run();

// ── throttling gets its own app: it deliberately locks accounts ─────────────
const T = suite<{ t: TestApp; w: World }>('sign-in throttling (A2)');
T.before(async (ctx) => {
  ctx.t = await startApp({ config: { loginMaxFailuresPerAccount: 10, loginMaxFailuresPerAddress: 1000, loginWindowSeconds: 900 } });
  ctx.w = await seedWorld(ctx.t);
});
T.after(async (ctx) => ctx.t.close());

T('100 wrong passwords, then the right one → 429 with Retry-After; the lock ends with the window (A2a, A2c)', async ({ t }) => {
  const statuses: number[] = [];
  for (let i = 0; i < 100; i++) {
    const r = await t.call('POST', `${ID}/session`, { body: { email: 'viewer@a.test', password: `wrong password ${i}` } });
    statuses.push(r.status);
  }
  assert.equal(statuses.slice(0, 10), Array(10).fill(401));
  assert.ok(statuses.slice(10).every((s) => s === 429));
  const right = await t.call('POST', `${ID}/session`, { body: { email: 'viewer@a.test', password: PASSWORD } });
  assert.is(right.status, 429);
  assert.is(right.body.code, 'too_many_requests');
  const retry = Number(right.headers.get('retry-after'));
  assert.ok(retry > 0 && retry <= 900, `Retry-After ${retry}`);
  // other accounts are not locked out by this one
  expectStatus(await t.call('POST', `${ID}/session`, { body: { email: 'editor@a.test', password: PASSWORD } }), 200);
  (t.clock as ManualClock).advance(901_000);
  expectStatus(await t.call('POST', `${ID}/session`, { body: { email: 'viewer@a.test', password: PASSWORD } }), 200, 'after the window');
});

T('rotating X-Forwarded-For does not reset the counter (A2b: proxy headers not trusted by default)', async ({ t }) => {
  for (let i = 0; i < 10; i++) {
    await t.call('POST', `${ID}/session`, { body: { email: 'editor@a.test', password: `nope nope ${i}` }, headers: { 'x-forwarded-for': `203.0.113.${i}` } });
  }
  const r = await t.call('POST', `${ID}/session`, { body: { email: 'editor@a.test', password: PASSWORD }, headers: { 'x-forwarded-for': '198.51.100.7' } });
  assert.is(r.status, 429);
});

T('behind a trusted proxy the address is the one the proxy added, not what the client put before it (A2b)', async () => {
  for (const [config, forwarded] of [
    [{}, (i: number) => `203.0.113.${i}`], // proxy headers not trusted: the socket's address
    [{ trustProxy: true }, (i: number) => `203.0.113.${i}, 192.0.2.9`], // one proxy appended 192.0.2.9
    [{ trustProxy: true, trustProxyHops: 2 }, (i: number) => `203.0.113.${i}, 192.0.2.9, 10.0.0.${i}`],
  ] as const) {
    const t = await startApp({ config: { ...config, loginMaxFailuresPerAccount: 1000, loginMaxFailuresPerAddress: 5, loginWindowSeconds: 900 } });
    try {
      // a different account each time, so only the address counter can fill
      const statuses: number[] = [];
      for (let i = 0; i < 7; i++) {
        const r = await t.call('POST', `${ID}/session`, { body: { email: `nobody${i}@a.test`, password: 'not the password' }, headers: { 'x-forwarded-for': forwarded(i) } });
        statuses.push(r.status);
      }
      assert.equal(statuses, [401, 401, 401, 401, 401, 429, 429], JSON.stringify(config));
    } finally {
      await t.close();
    }
  }
  const t = await startApp({ config: { trustProxy: true, loginMaxFailuresPerAccount: 1000, loginMaxFailuresPerAddress: 5, loginWindowSeconds: 900 } });
  try {
    for (let i = 0; i < 7; i++) {
      const r = await t.call('POST', `${ID}/session`, { body: { email: `nobody${i}@a.test`, password: 'not the password' }, headers: { 'x-forwarded-for': `192.0.2.${i}` } });
      assert.is(r.status, 401, 'distinct clients behind the proxy are counted apart');
    }
  } finally {
    await t.close();
  }
  // a proxy that adds the client's port (a new one per connection) or writes no address at all
  for (const [what, forwarded] of [
    ['IPv4 with a port', (i: number) => `203.0.113.7:${40000 + i}`],
    ['IPv6 with a port', (i: number) => `[2001:db8::7]:${40000 + i}`],
    ['no address', (i: number) => (i % 2 ? 'unknown' : `client-${i}.example`)],
  ] as const) {
    const t = await startApp({ config: { trustProxy: true, loginMaxFailuresPerAccount: 1000, loginMaxFailuresPerAddress: 5, loginWindowSeconds: 900 } });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 7; i++) {
        const r = await t.call('POST', `${ID}/session`, { body: { email: `nobody${i}@a.test`, password: 'not the password' }, headers: { 'x-forwarded-for': forwarded(i) } });
        statuses.push(r.status);
      }
      assert.equal(statuses, [401, 401, 401, 401, 401, 429, 429], `${what}: one client`);
      const lines = t.logs.filter((l) => l.includes('"msg":"request"') && l.includes('/session'));
      if (what === 'no address') {
        assert.ok(lines.every((l) => /"ip":"(?:::ffff:)?127\.0\.0\.1"/.test(l)), 'counted as the proxy itself');
        assert.is(t.logs.filter((l) => l.includes('names no address')).length, 1, 'said once');
      } else assert.ok(lines.every((l) => l.includes(what.startsWith('IPv4') ? '"ip":"203.0.113.7"' : '"ip":"2001:db8::7"')), 'the address without its port');
    } finally {
      await t.close();
    }
  }
});

T('a locked address stops guesses, not unguessable credentials: a valid refresh token and a right client secret still get tokens, their failures get 429 (A2, ASVS 5.0 6.1.1)', async () => {
  const t = await startApp({ config: { loginMaxFailuresPerAccount: 1000, loginMaxFailuresPerAddress: 5, loginWindowSeconds: 900 } });
  try {
    const w = await seedWorld(t);
    const session = await signIn(t, 'editor@a.test', PASSWORD);
    const reused = await signIn(t, 'viewer@a.test', PASSWORD);
    expectStatus(await t.call('POST', `${ID}/session`, { body: { grantType: 'refreshToken', refreshToken: reused.refreshToken } }), 200, 'rotated once');
    const { id, secret } = w.serviceAccounts.saEditor;
    // someone else behind the same address (a shared NAT) fills its budget with wrong passwords
    for (let i = 0; i < 5; i++) expectStatus(await t.call('POST', `${ID}/session`, { body: { email: `nobody${i}@a.test`, password: 'not the password' } }), 401);
    const grant = (body: Record<string, unknown>) => t.call('POST', `${ID}/session`, { body });
    expectStatus(await grant({ email: 'editor@a.test', password: PASSWORD }), 429, 'a password is still a guess');
    expectStatus(await grant({ grantType: 'refreshToken', refreshToken: session.refreshToken }), 200, 'the session renews');
    expectStatus(await grant({ grantType: 'clientCredentials', clientId: id, clientSecret: secret }), 200, 'the pipeline signs in');
    const badRefresh = await grant({ grantType: 'refreshToken', refreshToken: 'rt_not_a_token' });
    expectStatus(badRefresh, 429, 'a bad refresh token meets the lock');
    assert.ok(Number(badRefresh.headers.get('retry-after')) > 0);
    expectStatus(await grant({ grantType: 'clientCredentials', clientId: id, clientSecret: 'cls_wrong' }), 429, 'a wrong secret meets the lock');
    // a rotated token presented again from the locked address still ends its family
    expectStatus(await grant({ grantType: 'refreshToken', refreshToken: reused.refreshToken }), 429);
    expectStatus(await t.call('GET', `${ID}/session`, { token: reused.accessToken }), 401, 'the copied family was revoked all the same');
    const counted = t.rt.db.raw.prepare("SELECT failures FROM auth_throttle WHERE key LIKE 'address:%'").pluck().all();
    assert.equal(counted, [5], 'failures met by the lock are not counted again');
    const perClient = t.rt.db.raw.prepare("SELECT failures FROM auth_throttle WHERE key LIKE 'client:%'").pluck().all();
    assert.equal(perClient, [1], 'but a wrong secret still counts against its client id, whose own lock holds from any address');
    // made-up client ids from the locked address write nothing: each would be a row of its own (a reviewer's case)
    const rows = t.rt.db.raw.prepare('SELECT count(*) FROM auth_throttle').pluck();
    const before = rows.get();
    for (let i = 0; i < 30; i++) expectStatus(await grant({ grantType: 'clientCredentials', clientId: `sa_madeup${i}${'x'.repeat(20)}`, clientSecret: 'cls_wrong' }), 429);
    for (let i = 0; i < 10; i++) expectStatus(await grant({ grantType: 'clientCredentials', clientId: `not-an-id-${i}`, clientSecret: 'cls_wrong' }), 429);
    assert.is(rows.get(), before, 'no row for a client id that names no service account');
  } finally {
    await t.close();
  }
});

T('made-up client ids from an address that is not locked write one row, the address\'s: none of their own (a reviewer\'s case)', async () => {
  const t = await startApp({ config: { loginMaxFailuresPerAccount: 1000, loginMaxFailuresPerAddress: 100, loginWindowSeconds: 900 } });
  try {
    const w = await seedWorld(t);
    for (let i = 0; i < 20; i++) expectStatus(await t.call('POST', `${ID}/session`, { body: { grantType: 'clientCredentials', clientId: `sa_madeup${i}${'x'.repeat(20)}`, clientSecret: 'cls_wrong' } }), 401);
    for (let i = 0; i < 5; i++) expectStatus(await t.call('POST', `${ID}/session`, { body: { grantType: 'clientCredentials', clientId: `not-an-id-${i}`, clientSecret: 'cls_wrong' } }), 401);
    expectStatus(await t.call('POST', `${ID}/session`, { body: { grantType: 'clientCredentials', clientId: w.serviceAccounts.saEditor.id, clientSecret: 'cls_wrong' } }), 401);
    const keys = t.rt.db.raw.prepare('SELECT key, failures FROM auth_throttle ORDER BY key').all() as { key: string; failures: number }[];
    assert.equal(keys.map((k) => [k.key.split(':')[0], k.failures]), [['address', 26], ['client', 1]], 'the address counts every failure, the one service account its own');
  } finally {
    await t.close();
  }
});

T('an IPv6 client is counted by its /64, and an IPv4 address as itself also when carried in IPv6 (A2)', async () => {
  const t = await startApp({ config: { trustProxy: true, loginMaxFailuresPerAccount: 1000, loginMaxFailuresPerAddress: 5, loginWindowSeconds: 900 } });
  try {
    const guess = async (i: number, from: string) =>
      (await t.call('POST', `${ID}/session`, { body: { email: `nobody${i}@a.test`, password: 'not the password' }, headers: { 'x-forwarded-for': from } })).status;
    // one network's hosts, a new address each time: one client
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push(await guess(i, `2001:db8:1:2::${(i + 1).toString(16)}:${(i * 7919).toString(16)}`));
    assert.equal(statuses, [401, 401, 401, 401, 401, 429, 429], 'addresses of one /64');
    assert.is(await guess(8, '2001:db8:1:3::1'), 401, 'the next /64 is another client');
    // 192.0.2.1 as itself, then mapped into IPv6 and through NAT64: the same client
    const carried = ['192.0.2.1', '::ffff:192.0.2.1', '64:ff9b::c000:201', '192.0.2.1', '::ffff:c000:201', '64:ff9b::192.0.2.1'];
    const seen: number[] = [];
    for (const [i, from] of carried.entries()) seen.push(await guess(20 + i, from));
    assert.equal(seen, [401, 401, 401, 401, 401, 429], 'one IPv4 client however written');
  } finally {
    await t.close();
  }
});

T('a burst of concurrent guesses cannot get past the limit while earlier ones are still being checked', async ({ t }) => {
  const burst = await Promise.all(
    Array.from({ length: 40 }, (_, i) => t.call('POST', `${ID}/session`, { body: { email: 'burst@a.test', password: `burst guess ${i}` } })),
  );
  const statuses = burst.map((r) => r.status);
  assert.is(statuses.filter((s) => s === 401).length, 10, 'exactly the limit is checked');
  assert.is(statuses.filter((s) => s === 429).length, 30);
});

T('client credentials are throttled per client id too (A2d)', async ({ t, w }) => {
  const { id, secret } = w.serviceAccounts.saViewer;
  for (let i = 0; i < 10; i++) await t.call('POST', `${ID}/session`, { body: { grantType: 'clientCredentials', clientId: id, clientSecret: `cls_bad${i}` } });
  const r = await t.call('POST', `${ID}/session`, { body: { grantType: 'clientCredentials', clientId: id, clientSecret: secret } });
  assert.is(r.status, 429);
  assert.ok(Number(r.headers.get('retry-after')) > 0);
});

T('rotating a locked-out service account\'s secret lifts its lockout: the new secret works at once (organization and installation accounts)', async ({ t, w }) => {
  const org = await t.call('POST', `${ID}/orgs/${w.orgId}/service-accounts`, { token: w.tokens.admin, body: { name: 'locked pipeline', role: 'editor' } });
  const inst = await t.call('POST', `${ID}/service-accounts`, { token: w.root, body: { name: 'locked feed', permissions: ['feed'] } });
  for (const [created, rotate, token] of [
    [org, `${ID}/orgs/${w.orgId}/service-accounts/${org.body.id}/rotate`, w.tokens.admin],
    [inst, `${ID}/service-accounts/${inst.body.id}/rotate`, w.root],
  ] as const) {
    expectStatus(created, 201);
    const clientId = created.body.clientId as string;
    for (let i = 0; i < 10; i++) expectStatus(await t.call('POST', `${ID}/session`, { body: { grantType: 'clientCredentials', clientId, clientSecret: `cls_guess${i}` } }), 401);
    const locked = await t.call('POST', `${ID}/session`, { body: { grantType: 'clientCredentials', clientId, clientSecret: created.body.clientSecret } });
    assert.is(locked.status, 429, 'locked out, even with the right secret');
    const rotated = await t.call('POST', rotate, { token });
    expectStatus(rotated, 200);
    expectStatus(await t.call('POST', `${ID}/session`, { body: { grantType: 'clientCredentials', clientId, clientSecret: rotated.body.clientSecret } }), 200, 'the new secret, right after the rotation');
    expectStatus(await t.call('POST', `${ID}/session`, { body: { grantType: 'clientCredentials', clientId, clientSecret: created.body.clientSecret } }), 401, 'the old secret');
  }
});

T('service-account sign-ins, good and bad, are audited installation-wide like a user\'s, not in the organization\'s log', async ({ t, w }) => {
  const { id, secret } = w.serviceAccounts.saEditor;
  const entries = (action: string) =>
    t.rt.db.raw.prepare('SELECT org_id AS orgId, actor_type AS actorType, actor_id AS actorId, data FROM audit_log WHERE action = ? AND data LIKE ?').all(action, `%${id}%`) as { orgId: string | null; actorType: string; actorId: string | null; data: string }[];
  const okBefore = (t.rt.db.raw.prepare("SELECT count(*) FROM audit_log WHERE action = 'session.signed_in' AND actor_id = ?").pluck().get(id) as number);
  assert.is((await t.call('POST', `${ID}/session`, { body: { grantType: 'clientCredentials', clientId: id, clientSecret: 'cls_not_it' } })).status, 401);
  const failed = entries('session.sign_in_failed');
  assert.is(failed.length, 1);
  assert.is(failed[0]!.orgId, null);
  assert.is((await t.call('POST', `${ID}/session`, { body: { grantType: 'clientCredentials', clientId: id, clientSecret: secret } })).status, 200);
  const ok = t.rt.db.raw.prepare("SELECT org_id AS orgId, actor_type AS actorType FROM audit_log WHERE action = 'session.signed_in' AND actor_id = ?").all(id) as { orgId: string | null; actorType: string }[];
  assert.is(ok.length, okBefore + 1);
  assert.equal(ok.at(-1), { orgId: null, actorType: 'service_account' });
});

T('each failure writes an audit entry without the password (A2e), also when it was typed into the e-mail field', async ({ t }) => {
  const rows = t.rt.db.raw.prepare("SELECT data FROM audit_log WHERE action = 'session.sign_in_failed'").pluck().all() as string[];
  assert.ok(rows.length >= 20);
  assert.not.ok(rows.some((r) => r.includes('wrong password') || r.includes('nope nope')));
  // a password typed as the e-mail (a tester's case): neither the audit log nor the throttling table keeps it
  const typed = 'Hunter2 Secret Phrase';
  expectStatus(await t.call('POST', `${ID}/session`, { body: { grantType: 'password', email: typed, password: 'something else' } }), 401);
  const [last] = t.rt.db.raw.prepare("SELECT data FROM audit_log WHERE action = 'session.sign_in_failed' ORDER BY rowid DESC LIMIT 1").pluck().all() as string[];
  assert.equal(JSON.parse(last!), { grantType: 'password', email: null, emailNotAnAddress: true });
  const everything = JSON.stringify([
    t.rt.db.raw.prepare('SELECT * FROM audit_log').all(),
    t.rt.db.raw.prepare('SELECT * FROM auth_throttle').all(),
  ]).toLowerCase();
  assert.not.ok(everything.includes(typed.toLowerCase()));
  // nor a plain digest of it, which a dictionary reverses (a reviewer's point): the key is an HMAC with a secret of the installation
  for (const encoding of ['hex', 'base64url'] as const) assert.not.ok(everything.includes(createHash('sha256').update(typed.toLowerCase()).digest(encoding).toLowerCase()), encoding);
  // an address typed is kept, as typed (lower case): who was tried
  expectStatus(await t.call('POST', `${ID}/session`, { body: { grantType: 'password', email: 'Nobody@A.test', password: 'something else' } }), 401);
  const [address] = t.rt.db.raw.prepare("SELECT data FROM audit_log WHERE action = 'session.sign_in_failed' ORDER BY rowid DESC LIMIT 1").pluck().all() as string[];
  assert.equal(JSON.parse(address!), { grantType: 'password', email: 'nobody@a.test' });
});

T('a client secret typed into the clientId field (id and secret swapped) is kept neither in the audit log nor in the throttling table (A7a)', async ({ t, w }) => {
  const { id, secret } = w.serviceAccounts.saAdmin;
  const swapped = [
    { body: { grantType: 'clientCredentials', clientId: secret, clientSecret: id } },
    { form: { grant_type: 'client_credentials' }, headers: { authorization: `Basic ${Buffer.from(`${secret}:${id}`).toString('base64')}` } },
    { body: { grantType: 'refreshToken', refreshToken: 'clr_whatever', clientId: secret, clientSecret: id } },
  ];
  for (const opts of swapped) {
    const r = await t.call('POST', `${ID}/session`, opts);
    assert.equal([r.status, r.body.error], [401, 'invalid_client'], JSON.stringify(opts));
  }
  // the installation audit log, as an operator reads it: the attempts are there, without the text
  const events = (await t.call('GET', `${ID}/audit?limit=3`, { token: w.root })).body.events as { action: string; data: unknown }[];
  assert.equal(events.map((e) => [e.action, e.data]), [
    ['session.sign_in_failed', { grantType: 'refreshToken', clientId: null, clientIdNotAnId: true }],
    ['session.sign_in_failed', { grantType: 'clientCredentials', clientId: null, clientIdNotAnId: true }],
    ['session.sign_in_failed', { grantType: 'clientCredentials', clientId: null, clientIdNotAnId: true }],
  ]);
  const everything = JSON.stringify([t.rt.db.raw.prepare('SELECT * FROM audit_log').all(), t.rt.db.raw.prepare('SELECT * FROM auth_throttle').all(), t.logs]);
  for (const needle of [secret, secret.slice(4, 40), createHash('sha256').update(secret).digest('hex'), createHash('sha256').update(secret).digest('base64url')]) {
    assert.not.ok(everything.includes(needle), `${needle.slice(0, 8)}… is stored`);
  }
  // a well-formed client id is still named: which client was tried
  expectStatus(await t.call('POST', `${ID}/session`, { body: { grantType: 'clientCredentials', clientId: id, clientSecret: 'cls_not_it' } }), 401);
  const [last] = t.rt.db.raw.prepare("SELECT data FROM audit_log WHERE action = 'session.sign_in_failed' ORDER BY rowid DESC LIMIT 1").pluck().all() as string[];
  assert.equal(JSON.parse(last!), { grantType: 'clientCredentials', clientId: id });
  // its own counter is another key than the swapped attempts': they did not count against the account
  expectStatus(await t.call('POST', `${ID}/session`, { body: { grantType: 'clientCredentials', clientId: id, clientSecret: secret } }), 200);
});

T('the nightly prune removes ended throttling windows and expired sessions with their refresh tokens, in sized chunks', async ({ t }) => {
  const raw = t.rt.db.raw;
  const count = (table: string) => raw.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number;
  await signIn(t, 'viewer@a.test', PASSWORD);
  assert.ok(count('auth_throttle') > 0 && count('sessions') > 0 && count('refresh_tokens') > 0);
  // a backlog: 300 sessions with 1,000 refresh tokens, and 300 throttling windows
  const now = t.clock.now();
  const userId = raw.prepare("SELECT id FROM users WHERE email = 'viewer@a.test'").pluck().get();
  const series = (n: number) => `WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < ${n})`;
  raw.prepare(`${series(300)} INSERT INTO sessions (id, user_id, created_at, last_used_at, expires_at) SELECT 'ses_prune' || n, ?, ?, ?, ? FROM s`).run(userId, now, now, now + 1000);
  raw.prepare(`${series(1000)} INSERT INTO refresh_tokens (token_hash, session_id, issued_at, expires_at) SELECT randomblob(32), 'ses_prune' || (1 + n % 300), ?, ? FROM s`).run(now, now + 1000);
  raw.prepare(`${series(300)} INSERT INTO auth_throttle (key, failures, window_started_at) SELECT 'prune:' || n, 1, ? FROM s`).run(now);
  (t.clock as ManualClock).advance(91 * 86_400_000); // past the absolute session lifetime and every window
  const db = t.rt.db;
  const bulkTx = db.bulkTx;
  let chunks = 0;
  db.bulkTx = function <T>(this: typeof db, fn: () => T): T {
    chunks++;
    return bulkTx.call(this, fn) as T;
  };
  try {
    assert.is(await t.rt.scheduler.runNow('identity-prune'), true);
  } finally {
    db.bulkTx = bulkTx;
  }
  assert.equal([count('auth_throttle'), count('sessions'), count('refresh_tokens')], [0, 0, 0]);
  // chunks start at 100 rows and at most double: 1,000 tokens take ≥ 4, 300 sessions ≥ 2, 300 windows ≥ 2 (not one transaction)
  assert.ok(chunks >= 8, `${chunks} transactions`);
});

T('the limiter survives a restart (stored in SQLite)', async ({ t }) => {
  for (let i = 0; i < 10; i++) await t.call('POST', `${ID}/session`, { body: { email: 'admin@a.test', password: `bad bad ${i}` } });
  const dataDir = t.dataDir;
  const clock = t.clock;
  await t.close();
  const t2 = await startApp({ dataDir, clock, config: { loginMaxFailuresPerAccount: 10, loginMaxFailuresPerAddress: 1000 } });
  const r = await t2.call('POST', `${ID}/session`, { body: { email: 'admin@a.test', password: PASSWORD } });
  assert.is(r.status, 429);
  await t2.close();
  // the suite's after() closes t again: make that harmless
  t.close = async () => {};
});

T.run();


// ── cookie delivery of the refresh token (the web application's sessions, docs/web.md) ──
const C = suite<{ t: TestApp; w: World }>('sessions: refresh token in a cookie');
C.before(async (ctx) => {
  ctx.t = await startApp();
  ctx.w = await seedWorld(ctx.t);
});
C.after(async (ctx) => ctx.t.close());

const COOKIE = { 'x-session-cookie': '1' };
/** The cl_refresh Set-Cookie line of a response, if any. */
const setCookie = (r: { headers: Headers }) => r.headers.getSetCookie().find((c) => c.startsWith('cl_refresh='));
const cookieValue = (line: string | undefined) => /^cl_refresh=([^;]*)/.exec(line ?? '')?.[1] ?? '';

C('password grant with X-Session-Cookie: 1 sets an httpOnly SameSite=Strict cookie on the session path; the body has no refresh token', async ({ t }) => {
  const r = await t.call('POST', `${ID}/session`, { headers: COOKIE, body: { grantType: 'password', email: 'admin@a.test', password: PASSWORD } });
  expectStatus(r, 200);
  assert.is(r.body.refreshToken, null);
  assert.type(r.body.accessToken, 'string');
  const line = setCookie(r)!;
  assert.ok(line, 'a cl_refresh cookie is set');
  assert.match(cookieValue(line), /^clr_[A-Za-z0-9_-]{43}$/);
  const attrs = line.toLowerCase();
  assert.ok(attrs.includes('path=/api/identity/v1/session'));
  assert.ok(attrs.includes('httponly'));
  assert.ok(attrs.includes('samesite=strict'));
  assert.not.ok(attrs.includes('secure'), 'not Secure over plain HTTP');
  assert.match(attrs, /expires=\w{3}, \d\d \w{3} 20\d\d/, "a lifetime (the refresh token's)");
});

C('without the header nothing changes: the token is in the body, no cookie is set, a cookie alone is ignored', async ({ t }) => {
  const r = await t.call('POST', `${ID}/session`, { body: { grantType: 'password', email: 'admin@a.test', password: PASSWORD } });
  expectStatus(r, 200);
  assert.match(r.body.refreshToken, /^clr_/);
  assert.is(setCookie(r), undefined);
  const viaCookie = await t.call('POST', `${ID}/session`, { headers: { cookie: `cl_refresh=${r.body.refreshToken}` }, body: { grantType: 'refreshToken' } });
  assert.equal([viaCookie.status, viaCookie.body.error], [400, 'invalid_request'], 'the cookie is read only in cookie mode');
  const viaBody = await t.call('POST', `${ID}/session`, { body: { grantType: 'refreshToken', refreshToken: r.body.refreshToken } });
  expectStatus(viaBody, 200, 'the body token still works');
});

C('refreshToken grant without a body token reads the cookie and rotates it; re-use of the old cookie revokes the family and clears it', async ({ t }) => {
  const first = await t.call('POST', `${ID}/session`, { headers: COOKIE, body: { grantType: 'password', email: 'editor@a.test', password: PASSWORD } });
  const c1 = cookieValue(setCookie(first));
  const second = await t.call('POST', `${ID}/session`, { headers: { ...COOKIE, cookie: `cl_refresh=${c1}` }, body: { grantType: 'refreshToken' } });
  expectStatus(second, 200, 'refresh from the cookie');
  assert.is(second.body.refreshToken, null);
  assert.is(second.body.user.email, 'editor@a.test');
  const c2 = cookieValue(setCookie(second));
  assert.match(c2, /^clr_/);
  assert.is.not(c2, c1, 'rotated');
  const me = await t.call('GET', `${ID}/session`, { token: second.body.accessToken });
  expectStatus(me, 200);

  const reused = await t.call('POST', `${ID}/session`, { headers: { ...COOKIE, cookie: `cl_refresh=${c1}` }, body: { grantType: 'refreshToken' } });
  assert.is(reused.status, 401);
  assert.is(reused.body.code, 'invalid_grant');
  assert.is(cookieValue(setCookie(reused)), '', 'the cookie is cleared');
  assert.match(setCookie(reused)!.toLowerCase(), /expires=thu, 01 jan 1970/);
  const after = await t.call('POST', `${ID}/session`, { headers: { ...COOKIE, cookie: `cl_refresh=${c2}` }, body: { grantType: 'refreshToken' } });
  assert.is(after.status, 401, 'the whole family is revoked');
  const gone = await t.call('GET', `${ID}/session`, { token: second.body.accessToken });
  assert.is(gone.status, 401);
});

C('cookie mode without a cookie → 401 no_session (OAuth error invalid_grant), a refused cookie → invalid_grant; a body token still wins over the cookie', async ({ t }) => {
  const r = await t.call('POST', `${ID}/session`, { headers: COOKIE, body: { grantType: 'refreshToken' } });
  assert.is(r.status, 401);
  assert.equal([r.body.code, r.body.error], ['no_session', 'invalid_grant']);
  const refused = await t.call('POST', `${ID}/session`, { headers: { ...COOKIE, cookie: 'cl_refresh=clr_not_a_real_token' }, body: { grantType: 'refreshToken' } });
  assert.equal([refused.status, refused.body.code], [401, 'invalid_grant'], 'a session that was: the web app says it ended');
  const plain = await signIn(t, 'viewer@a.test', PASSWORD);
  const both = await t.call('POST', `${ID}/session`, { headers: { ...COOKIE, cookie: 'cl_refresh=clr_not_a_real_token' }, body: { grantType: 'refreshToken', refreshToken: plain.refreshToken } });
  expectStatus(both, 200, 'the body token is used');
  assert.is(both.body.user.email, 'viewer@a.test');
});

C('CSRF: cookie mode refuses another Origin or a cross-site Sec-Fetch-Site (403), accepts this site', async ({ t }) => {
  const login = await t.call('POST', `${ID}/session`, { headers: COOKIE, body: { grantType: 'password', email: 'viewer@a.test', password: PASSWORD } });
  const c = cookieValue(setCookie(login));
  const host = new URL(t.base).host;
  for (const headers of [{ origin: 'http://evil.test' } as Record<string, string>, { origin: 'null' }, { 'sec-fetch-site': 'cross-site' }, { 'sec-fetch-site': 'same-site' }, { origin: `https://${host}.evil.test` }]) {
    const r = await t.call('POST', `${ID}/session`, { headers: { ...COOKIE, ...headers, cookie: `cl_refresh=${c}` }, body: { grantType: 'refreshToken' } });
    assert.is(r.status, 403, JSON.stringify(headers));
    assert.is(r.body.code, 'cross_site_request');
    assert.is(setCookie(r), undefined);
  }
  const pw = await t.call('POST', `${ID}/session`, { headers: { ...COOKIE, origin: 'http://evil.test' }, body: { grantType: 'password', email: 'viewer@a.test', password: PASSWORD } });
  assert.is(pw.status, 403, 'no cookie sign-in from another site either');
  const ok = await t.call('POST', `${ID}/session`, { headers: { ...COOKIE, origin: t.base, 'sec-fetch-site': 'same-origin', cookie: `cl_refresh=${c}` }, body: { grantType: 'refreshToken' } });
  expectStatus(ok, 200, 'same origin, after the refused attempts (which consumed nothing)');
});

C('behind a proxy that does not pass Host on, the origin of BASE_URL is this site', async () => {
  const t = await startApp({ config: { baseUrl: 'https://contacts.example.org' } });
  try {
    await seedWorld(t);
    const body = { grantType: 'password', email: 'viewer@a.test', password: PASSWORD };
    const headers = { ...COOKIE, 'sec-fetch-site': 'same-origin' };
    expectStatus(await t.call('POST', `${ID}/session`, { headers: { ...headers, origin: 'https://contacts.example.org' }, body }), 200, 'the public origin');
    const other = await t.call('POST', `${ID}/session`, { headers: { ...headers, origin: 'https://other.example.org' }, body });
    assert.is(other.status, 403, 'any other origin is still refused');
  } finally {
    await t.close();
  }
});

C('DELETE /session clears the cookie and revokes the session it belongs to', async ({ t }) => {
  const login = await t.call('POST', `${ID}/session`, { headers: COOKIE, body: { grantType: 'password', email: 'admin@a.test', password: PASSWORD } });
  const c = cookieValue(setCookie(login));
  const out = await t.call('DELETE', `${ID}/session`, { token: login.body.accessToken, headers: { cookie: `cl_refresh=${c}` } });
  assert.is(out.status, 204);
  assert.is(cookieValue(setCookie(out)), '');
  assert.match(setCookie(out)!.toLowerCase(), /path=\/api\/identity\/v1\/session/);
  const again = await t.call('POST', `${ID}/session`, { headers: { ...COOKIE, cookie: `cl_refresh=${c}` }, body: { grantType: 'refreshToken' } });
  assert.is(again.status, 401);
  const plain = await signIn(t, 'admin@a.test', PASSWORD);
  const noCookie = await t.call('DELETE', `${ID}/session`, { token: plain.accessToken });
  assert.is(noCookie.status, 204);
  assert.is(setCookie(noCookie), undefined, 'clients without the cookie see no Set-Cookie');
});

C('over HTTPS (behind a trusted proxy) the cookie is Secure', async () => {
  const t = await startApp({ config: { trustProxy: true } });
  try {
    const r = await t.call('POST', `${ID}/session`, { headers: { ...COOKIE, 'x-forwarded-proto': 'https' }, body: { grantType: 'password', email: 'root@example.com', password: ROOT_PASSWORD } });
    expectStatus(r, 200);
    assert.ok(setCookie(r)!.toLowerCase().includes('secure'));
  } finally {
    await t.close();
  }
});

C.run();
