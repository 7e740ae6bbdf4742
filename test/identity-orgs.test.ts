// Organizations, members, users, service accounts and the audit log (SPEC §3.2–3.4),
// with the role-escalation cases of RELIABILITY.md Z3.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { ManualClock } from '../src/clock.ts';
import { generatePassword } from '../src/identity/user-service.ts';
import { addContacts, clientToken, expectStatus, tempDir, until, ID, LEDGER, ledgerPath, PASSWORD, seedWorld, sendInTwoParts, signIn, signInRoot, startApp, type TestApp, type World } from './helpers.ts';

const O = suite<{ t: TestApp; w: World }>('organizations and members');
O.before(async (ctx) => {
  ctx.t = await startApp();
  ctx.w = await seedWorld(ctx.t);
});
O.after(async (ctx) => ctx.t.close());

O('superuser creates an organization with an admin given by e-mail (new user with a password)', async ({ t, w }) => {
  const r = await t.call('POST', `${ID}/orgs`, { token: w.root, body: { name: 'Initech', adminEmail: 'Boss@Initech.test', adminName: 'Bill', adminPassword: 'tps reports 4ever' } });
  expectStatus(r, 201);
  assert.match(r.body.id, /^o_[0-9a-z]{26}$/);
  assert.is(r.headers.get('location'), `http://ledger.test${ID}/orgs/${r.body.id}`);
  assert.match(r.body.createdAt, /Z$/);
  const boss = await signIn(t, 'boss@initech.test', 'tps reports 4ever');
  assert.equal(boss.orgs, [{ id: r.body.id, name: 'Initech', role: 'admin' }]);
  const members = await t.call('GET', `${ID}/orgs/${r.body.id}/members`, { token: boss.accessToken });
  expectStatus(members, 200);
  assert.is(members.body.members.length, 1);
  assert.is(members.body.members[0].email, 'boss@initech.test');
  assert.is(members.body.members[0].role, 'admin');
  assert.is(members.body.nextCursor, null);
});

O('an account made through an organization is audited installation-wide (user.created), so the record outlives the organization; an admin\'s name or password without adminEmail is refused', async ({ t, w }) => {
  const org = await t.call('POST', `${ID}/orgs`, { token: w.root, body: { name: 'Shortlived', adminEmail: 'dan@short.test', adminPassword: 'dans own passphrase' } });
  expectStatus(org, 201);
  const added = await t.call('POST', `${ID}/orgs/${org.body.id}/members`, { token: w.root, body: { email: 'carol@short.test', role: 'viewer', password: 'carols passphrase' } });
  expectStatus(added, 201);
  expectStatus(await t.call('DELETE', `${ID}/orgs/${org.body.id}`, { token: w.root }), 204);
  const audit = await t.call('GET', `${ID}/audit?limit=50`, { token: w.root });
  const made = audit.body.events.filter((e: any) => e.action === 'user.created').map((e: any) => [e.orgId, e.data.email, e.data.inOrg]);
  assert.ok(made.some((m: any) => m[1] === 'dan@short.test' && m[0] === null && m[2] === org.body.id), JSON.stringify(made));
  assert.ok(made.some((m: any) => m[1] === 'carol@short.test' && m[0] === null && m[2] === org.body.id), JSON.stringify(made));
  for (const body of [{ name: 'No Admin', adminPassword: 'a passphrase here' }, { name: 'No Admin', adminName: 'Nobody' }]) {
    const r = await t.call('POST', `${ID}/orgs`, { token: w.root, body });
    expectStatus(r, 422, JSON.stringify(body));
    assert.match(r.body.errors[0].message, /give adminEmail too/);
  }
});

O('creating an organization for an unknown e-mail without a password → 422; non-superusers → 403', async ({ t, w }) => {
  const r = await t.call('POST', `${ID}/orgs`, { token: w.root, body: { name: 'X', adminEmail: 'ghost@x.test' } });
  assert.is(r.status, 422);
  assert.equal(r.body.errors[0].path, 'adminPassword');
  assert.is((await t.call('POST', `${ID}/orgs`, { token: w.tokens.admin, body: { name: 'X' } })).status, 403);
});

O('the creator of an organization is its admin; with adminEmail that user is the only admin', async ({ t, w }) => {
  const org = (await t.call('POST', `${ID}/orgs`, { token: w.root, body: { name: 'Created by root' } })).body;
  assert.is(org.role, 'admin');
  const rootId = (await t.call('GET', `${ID}/users/me`, { token: w.root })).body.id;
  const members = await t.call('GET', `${ID}/orgs/${org.id}/members`, { token: w.root });
  assert.equal(members.body.members.map((m: any) => [m.userId, m.role]), [[rootId, 'admin']]);
  // the creator is the last admin: cannot be removed
  const last = await t.call('DELETE', `${ID}/orgs/${org.id}/members/${rootId}`, { token: w.root });
  assert.is(last.status, 409);
  assert.is(last.body.code, 'last_admin');
  const o2 = await t.call('POST', `${ID}/orgs`, { token: w.root, body: { name: 'Two', adminEmail: 'viewer@a.test' } });
  expectStatus(o2, 201);
  const m = await t.call('GET', `${ID}/orgs/${o2.body.id}/members`, { token: w.tokens.viewer });
  assert.equal(m.body.members.map((x: any) => [x.email, x.role]), [['viewer@a.test', 'admin']]);
});

O('members: add existing user, add-and-create, duplicate → 409, password for an existing user → 409', async ({ t, w }) => {
  const a = await t.call('POST', `${ID}/orgs/${w.otherOrgId}/members`, { token: w.tokens.otherAdmin, body: { email: 'editor@a.test', role: 'viewer' } });
  expectStatus(a, 201);
  assert.is(a.body.role, 'viewer');
  assert.is(a.body.userId, w.users.editor);
  const dup = await t.call('POST', `${ID}/orgs/${w.otherOrgId}/members`, { token: w.tokens.otherAdmin, body: { email: 'editor@a.test', role: 'editor' } });
  assert.is(dup.status, 409);
  assert.is(dup.body.code, 'already_member');
  const pw = await t.call('POST', `${ID}/orgs/${w.otherOrgId}/members`, { token: w.tokens.otherAdmin, body: { email: 'viewer@a.test', role: 'viewer', password: 'another password 1' } });
  assert.is(pw.status, 409);
  assert.is(pw.body.code, 'user_exists');
  const noPw = await t.call('POST', `${ID}/orgs/${w.otherOrgId}/members`, { token: w.tokens.otherAdmin, body: { email: 'new@b.test', role: 'viewer' } });
  assert.is(noPw.status, 422);
  const created = await t.call('POST', `${ID}/orgs/${w.otherOrgId}/members`, { token: w.tokens.otherAdmin, body: { email: 'new@b.test', role: 'editor', password: PASSWORD, name: 'New' } });
  expectStatus(created, 201);
  assert.equal({ email: created.body.email, name: created.body.name, role: created.body.role }, { email: 'new@b.test', name: 'New', role: 'editor' });
  // its Location answers a GET with the member (it was 405: a contract tester's case); not a member → 404
  const location = new URL(created.headers.get('location')!).pathname;
  const one = await t.call('GET', location, { token: w.tokens.otherAdmin });
  expectStatus(one, 200);
  assert.equal(one.body, created.body);
  expectStatus(await t.call('GET', `${ID}/orgs/${w.otherOrgId}/members/${w.users.viewer}`, { token: w.tokens.otherAdmin }), 404);
  // the editor of A now sees both organizations
  const orgs = await t.call('GET', `${ID}/orgs`, { token: w.tokens.editor });
  assert.equal(orgs.body.orgs.map((o: any) => [o.id, o.role]).sort(), [[w.orgId, 'editor'], [w.otherOrgId, 'viewer']].sort());
});

O('an account an admin of one organization made with a password of their choice joins no other until a superuser sets its password: that admin could sign in there as the user (a security tester\'s case)', async ({ t, w }) => {
  // B's admin makes the account of A's colleague, and removes it from B to hide it
  const made = await t.call('POST', `${ID}/orgs/${w.otherOrgId}/members`, { token: w.tokens.otherAdmin, body: { email: 'bob.squat@a.test', role: 'viewer', name: 'Bob', password: 'Mallory-Owns-Bob-42' } });
  expectStatus(made, 201);
  const bob = made.body.userId as string;
  expectStatus(await t.call('DELETE', `${ID}/orgs/${w.otherOrgId}/members/${bob}`, { token: w.tokens.otherAdmin }), 204);
  // A's admin adds the colleague: refused, saying why and what to do
  const add = await t.call('POST', `${ID}/orgs/${w.orgId}/members`, { token: w.tokens.admin, body: { email: 'bob.squat@a.test', role: 'editor' } });
  expectStatus(add, 409);
  assert.is(add.body.code, 'password_set_by_another_org');
  assert.match(add.body.detail, /ask a superuser of this installation to set a new password for it \(on the server: contact-ledger user passwd --email bob\.squat@a\.test\)/);
  assert.not.match(add.body.detail, bob, "an organization's admin learns no id of another organization's user");
  assert.equal((await signIn(t, 'bob.squat@a.test', 'Mallory-Owns-Bob-42')).orgs, [], 'the account reaches no organization');
  // with a password too: this, not "add them without a password" first (an upgrade tester's case)
  const withPassword = await t.call('POST', `${ID}/orgs/${w.orgId}/members`, { token: w.tokens.admin, body: { email: 'bob.squat@a.test', role: 'editor', password: 'Alice-For-Bob-2026x' } });
  expectStatus(withPassword, 409);
  assert.is(withPassword.body.code, 'password_set_by_another_org');
  // nor as the admin of a new organization, even a superuser's
  const org = await t.call('POST', `${ID}/orgs`, { token: w.root, body: { name: 'Squat', adminEmail: 'bob.squat@a.test' } });
  expectStatus(org, 409);
  assert.is(org.body.code, 'password_set_by_another_org');
  assert.match(org.body.detail, new RegExp(`a superuser must set a new password for it first \\(PATCH /api/identity/v1/users/${bob}`), 'a superuser is given the path');
  assert.not.ok((await t.call('GET', `${ID}/orgs`, { token: w.root })).body.orgs.some((o: any) => o.name === 'Squat'), 'nothing made');
  // the organization that made it may add it back; a password the user sets lifts nothing (it may be that admin's doing)
  expectStatus(await t.call('POST', `${ID}/orgs/${w.otherOrgId}/members`, { token: w.tokens.otherAdmin, body: { email: 'bob.squat@a.test', role: 'viewer' } }), 201);
  const own = (await signIn(t, 'bob.squat@a.test', 'Mallory-Owns-Bob-42')).accessToken;
  expectStatus(await t.call('PATCH', `${ID}/users/me`, { token: own, body: { currentPassword: 'Mallory-Owns-Bob-42', password: 'Mallory-Again-43' } }), 200);
  expectStatus(await t.call('POST', `${ID}/orgs/${w.orgId}/members`, { token: w.tokens.admin, body: { email: 'bob.squat@a.test', role: 'editor' } }), 409);
  // nor become a superuser, an admin of every organization, without a password of a superuser's (a reviewer's case)
  const promote = await t.call('PATCH', `${ID}/users/${bob}`, { token: w.root, body: { superuser: true } });
  expectStatus(promote, 409);
  assert.is(promote.body.code, 'password_set_by_another_org');
  // a superuser sets a new password: the account may join A, and the old one is gone
  expectStatus(await t.call('PATCH', `${ID}/users/${bob}`, { token: w.root, body: { password: 'Bob-Real-Password-44' } }), 200);
  const joined = await t.call('POST', `${ID}/orgs/${w.orgId}/members`, { token: w.tokens.admin, body: { email: 'bob.squat@a.test', role: 'editor' } });
  expectStatus(joined, 201);
  assert.is((await t.call('POST', `${ID}/session`, { body: { grantType: 'password', email: 'bob.squat@a.test', password: 'Mallory-Again-43' } })).status, 401);
  // an account a superuser made, with a password, joins any organization (seedWorld's)
  const superMade = await t.call('POST', `${ID}/orgs/${w.orgId}/members`, { token: w.root, body: { email: 'super.made@a.test', role: 'viewer', password: PASSWORD } });
  expectStatus(superMade, 201);
  expectStatus(await t.call('POST', `${ID}/orgs/${w.otherOrgId}/members`, { token: w.tokens.otherAdmin, body: { email: 'super.made@a.test', role: 'viewer' } }), 201);
});

O('the start names the accounts whose password an organization\'s admin chose that another organization already has as members, or that are superusers (made so before the check)', async () => {
  const dir = tempDir();
  const first = await startApp({ dataDir: dir });
  let expected: unknown;
  try {
    const w = await seedWorld(first);
    const make = async (email: string) => {
      const made = await first.call('POST', `${ID}/orgs/${w.otherOrgId}/members`, { token: w.tokens.otherAdmin, body: { email, role: 'viewer', password: 'Made-By-B-admin-1' } });
      expectStatus(made, 201);
      return made.body.userId as string;
    };
    const bob = await make('before@a.test');
    const boss = await make('boss@b.test');
    await make('stays@b.test'); // a member of its own organization only: not named
    // as a version before 0047 let A's admin add one, and a superuser promote another (an upgrade tester's case)
    first.rt.db.raw.prepare("INSERT INTO members (org_id, user_id, role, added_at) VALUES (?, ?, 'editor', 1)").run(w.orgId, bob);
    first.rt.db.raw.prepare('UPDATE users SET superuser = 1 WHERE id = ?').run(boss);
    expected = [
      { userId: bob, email: 'before@a.test', passwordFrom: w.otherOrgId, superuser: false, memberOf: [{ orgId: w.orgId, name: 'Org A' }] },
      { userId: boss, email: 'boss@b.test', passwordFrom: w.otherOrgId, superuser: true, memberOf: [] },
    ].sort((a, b) => a.userId.localeCompare(b.userId));
    assert.equal(first.rt.identity.users.exposedAccounts(), expected);
  } finally {
    await first.close();
  }
  const again = await startApp({ dataDir: dir });
  try {
    const line = again.logs.join('').split('\n').find((l) => l.includes('are superusers or members of other organizations'));
    assert.ok(line, 'a warning at start');
    assert.equal(JSON.parse(line!).accounts, expected);
  } finally {
    await again.close();
  }
});

O('a password change racing a superuser\'s reset does not overwrite it: the one who knew the old password keeps no way in (a reviewer\'s case)', async ({ t, w }) => {
  const made = await t.call('POST', `${ID}/orgs/${w.otherOrgId}/members`, { token: w.tokens.otherAdmin, body: { email: 'race.reset@a.test', role: 'viewer', password: 'Mallory-Knows-It-1' } });
  expectStatus(made, 201);
  const id = made.body.userId as string;
  const own = (await signIn(t, 'race.reset@a.test', 'Mallory-Knows-It-1')).accessToken;
  // the change holds between its check of the current password and its write, while the reset lands
  const hasher = t.rt.identity.hasher;
  const hash = hasher.hash.bind(hasher);
  let asked = false;
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  hasher.hash = async (pw: string) => {
    const h = await hash(pw);
    if (pw === 'Mallory-New-One-2') {
      asked = true;
      await gate;
    }
    return h;
  };
  try {
    const change = t.call('PATCH', `${ID}/users/me`, { token: own, body: { currentPassword: 'Mallory-Knows-It-1', password: 'Mallory-New-One-2' } });
    await until('the change to have checked the current password', async () => asked, Boolean, 5000);
    expectStatus(await t.call('PATCH', `${ID}/users/${id}`, { token: w.root, body: { password: 'Owner-Gets-This-3' } }), 200);
    release();
    const r = await change;
    expectStatus(r, 409);
    assert.is(r.body.code, 'password_changed_meanwhile');
  } finally {
    hasher.hash = hash;
    release();
  }
  assert.is((await t.call('POST', `${ID}/session`, { body: { grantType: 'password', email: 'race.reset@a.test', password: 'Mallory-New-One-2' } })).status, 401);
  expectStatus(await t.call('POST', `${ID}/session`, { body: { grantType: 'password', email: 'race.reset@a.test', password: 'Owner-Gets-This-3' } }), 200);
  expectStatus(await t.call('POST', `${ID}/orgs/${w.orgId}/members`, { token: w.tokens.admin, body: { email: 'race.reset@a.test', role: 'viewer' } }), 201);
});

O('two concurrent requests creating the same new user with a password (a member, an org admin): one 201, the other 409 user_exists; the first password stands', async ({ t, w }) => {
  const [first, second] = await Promise.all([
    t.call('POST', `${ID}/orgs/${w.otherOrgId}/members`, { token: w.tokens.otherAdmin, body: { email: 'race@b.test', role: 'viewer', password: 'race password one' } }),
    t.call('POST', `${ID}/orgs`, { token: w.root, body: { name: 'Race', adminEmail: 'race@b.test', adminPassword: 'race password two' } }),
  ]);
  assert.equal([first.status, second.status].sort(), [201, 409], `${first.text} ${second.text}`);
  const lost = first.status === 409 ? first : second;
  // the member's request won: the account's password is B's admin's, which the new organization is
  // told when it found the account before its transaction (0047), and user_exists when inside it
  const codes = first.status === 201 ? ['user_exists', 'password_set_by_another_org'] : ['user_exists'];
  assert.ok(codes.includes(lost.body.code), `${lost.body.code}: ${lost.text}`);
  const won = first.status === 201 ? 'race password one' : 'race password two';
  const signIn = (password: string) => t.call('POST', `${ID}/session`, { body: { email: 'race@b.test', password } });
  assert.is((await signIn(won)).status, 200, 'the password of the request that created the user');
  assert.is((await signIn(won === 'race password one' ? 'race password two' : 'race password one')).status, 401);
  assert.not.ok(((await t.call('GET', `${ID}/orgs`, { token: w.root })).body.orgs as { name: string }[]).some((o) => o.name === 'Race' && second.status === 409), 'the refused org was not created');
});

O('roles: the last admin cannot be demoted or removed (409); with two admins one can go', async ({ t, w }) => {
  const org = (await t.call('POST', `${ID}/orgs`, { token: w.root, body: { name: 'Solo', adminEmail: 'admin@b.test' } })).body;
  const solo = w.tokens.otherAdmin;
  const demote = await t.call('PATCH', `${ID}/orgs/${org.id}/members/${w.users.otherAdmin}`, { token: solo, body: { role: 'editor' } });
  assert.is(demote.status, 409);
  assert.is(demote.body.code, 'last_admin');
  assert.match(demote.body.message, /is the last admin of ".+" \(o_/, "names the organization");
  const add = await t.call('POST', `${ID}/orgs/${org.id}/members`, { token: solo, body: { email: 'viewer@a.test', role: 'admin' } });
  expectStatus(add, 201);
  expectStatus(await t.call('PATCH', `${ID}/orgs/${org.id}/members/${w.users.otherAdmin}`, { token: solo, body: { role: 'viewer' } }), 200, 'demote with two admins');
  // immediately effective (Z3g): the still-valid token of the demoted admin is refused for admin work
  const denied = await t.call('POST', `${ID}/orgs/${org.id}/members`, { token: solo, body: { email: 'editor@a.test', role: 'viewer' } });
  assert.is(denied.status, 403);
  const remove = await t.call('DELETE', `${ID}/orgs/${org.id}/members/${w.users.viewer}`, { token: w.tokens.viewer });
  assert.is(remove.status, 409, 'the viewer of A is now the only admin of Solo');
});

O('the last admin is the last one who can sign in: a disabled admin does not count, may itself be demoted, and is refused as a new organization\'s admin (409)', async ({ t, w }) => {
  const mk = async (email: string) => (await t.call('POST', `${ID}/users`, { token: w.root, body: { email, password: 'admins passphrase 1' } })).body.id as string;
  const [c1, c3] = [await mk('c1@c.test'), await mk('c3@c.test')];
  const org = (await t.call('POST', `${ID}/orgs`, { token: w.root, body: { name: 'Org C', adminEmail: 'c1@c.test' } })).body;
  expectStatus(await t.call('POST', `${ID}/orgs/${org.id}/members`, { token: w.root, body: { email: 'c3@c.test', role: 'admin' } }), 201);
  expectStatus(await t.call('PATCH', `${ID}/users/${c3}`, { token: w.root, body: { disabled: true } }), 200);
  // a tester's case: c1 was demoted (200), leaving only a disabled admin
  const demote = await t.call('PATCH', `${ID}/orgs/${org.id}/members/${c1}`, { token: w.root, body: { role: 'viewer' } });
  expectStatus(demote, 409);
  assert.is(demote.body.code, 'last_admin');
  // why, where an admin can see it: the other admin is shown disabled, and the refusal says such a one does not count (an org tester's case)
  assert.match(demote.body.message, /who can sign in \(a disabled admin does not count\)/);
  const listed = await t.call('GET', `${ID}/orgs/${org.id}/members`, { token: w.root });
  assert.equal(listed.body.members.map((m: any) => [m.email, m.role, m.disabled]).sort(), [['c1@c.test', 'admin', false], ['c3@c.test', 'admin', true]], 'in any order: added in the same millisecond');
  expectStatus(await t.call('DELETE', `${ID}/orgs/${org.id}/members/${c1}`, { token: w.root }), 409);
  expectStatus(await t.call('PATCH', `${ID}/orgs/${org.id}/members/${c3}`, { token: w.root, body: { role: 'editor' } }), 200, 'the disabled admin may go');
  expectStatus(await t.call('DELETE', `${ID}/orgs/${org.id}/members/${c3}`, { token: w.root }), 204);
  // enabled again, an admin counts again
  expectStatus(await t.call('PATCH', `${ID}/users/${c3}`, { token: w.root, body: { disabled: false } }), 200);
  expectStatus(await t.call('POST', `${ID}/orgs/${org.id}/members`, { token: w.root, body: { email: 'c3@c.test', role: 'admin' } }), 201);
  expectStatus(await t.call('PATCH', `${ID}/orgs/${org.id}/members/${c1}`, { token: w.root, body: { role: 'viewer' } }), 200);
  // a new organization whose admin could not sign in: refused, nothing made
  expectStatus(await t.call('PATCH', `${ID}/users/${c1}`, { token: w.root, body: { disabled: true } }), 200);
  const before = (await t.call('GET', `${ID}/orgs?limit=1000`, { token: w.root })).body.orgs.length;
  const half = await t.call('POST', `${ID}/orgs`, { token: w.root, body: { name: 'Half Org', adminEmail: 'C1@c.test' } });
  expectStatus(half, 409);
  assert.is(half.body.code, 'user_disabled');
  assert.is((await t.call('GET', `${ID}/orgs?limit=1000`, { token: w.root })).body.orgs.length, before);
});

O('role escalation (Z3): editors cannot change roles; invalid roles are rejected; a member cannot promote itself', async ({ t, w }) => {
  const e = await t.call('PATCH', `${ID}/orgs/${w.orgId}/members/${w.users.viewer}`, { token: w.tokens.editor, body: { role: 'admin' } });
  assert.is(e.status, 403);
  const self = await t.call('PATCH', `${ID}/orgs/${w.orgId}/members/${w.users.editor}`, { token: w.tokens.editor, body: { role: 'admin' } });
  assert.is(self.status, 403);
  const owner = await t.call('PATCH', `${ID}/orgs/${w.orgId}/members/${w.users.viewer}`, { token: w.tokens.admin, body: { role: 'owner' } });
  assert.is(owner.status, 422);
  assert.equal(owner.body.errors, [{ path: 'role', message: 'must be one of viewer, editor, admin' }]);
  const missing = await t.call('POST', `${ID}/orgs/${w.orgId}/members`, { token: w.tokens.admin, body: { email: 'outsider@x.test' } });
  assert.equal([missing.status, missing.body.errors], [422, [{ path: 'role', message: 'is required' }]], 'a missing role is said to be missing');
  const extra = await t.call('POST', `${ID}/orgs/${w.orgId}/members`, { token: w.tokens.admin, body: { email: 'outsider@x.test', role: 'viewer', orgId: w.otherOrgId } });
  assert.is(extra.status, 422, 'mass assignment: unknown fields are refused');
});

O('a removed member loses access on the next request', async ({ t, w }) => {
  const add = await t.call('POST', `${ID}/orgs/${w.orgId}/members`, { token: w.tokens.admin, body: { email: 'outsider@x.test', role: 'viewer' } });
  expectStatus(add, 201);
  const s = await signIn(t, 'outsider@x.test', PASSWORD);
  expectStatus(await t.call('GET', `${ID}/orgs/${w.orgId}`, { token: s.accessToken }), 200);
  expectStatus(await t.call('DELETE', `${ID}/orgs/${w.orgId}/members/${w.users.outsider}`, { token: w.tokens.admin }), 204);
  assert.is((await t.call('GET', `${ID}/orgs/${w.orgId}`, { token: s.accessToken })).status, 403);
});

O('organization get, rename (admin), members list paging', async ({ t, w }) => {
  const g = await t.call('GET', `${ID}/orgs/${w.orgId}`, { token: w.tokens.viewer });
  expectStatus(g, 200);
  assert.is(g.body.role, 'viewer');
  const p = await t.call('PATCH', `${ID}/orgs/${w.orgId}`, { token: w.tokens.admin, body: { name: 'Org A renamed' } });
  expectStatus(p, 200);
  assert.is(p.body.name, 'Org A renamed');
  // the same name again, and users patched with what they have: nothing moves, nothing is audited
  const audited = () => t.rt.db.raw.prepare("SELECT count(*) FROM audit_log WHERE action IN ('org.updated', 'user.updated')").pluck().get();
  const entries = audited();
  (t.clock as ManualClock).advance(1000);
  const same = await t.call('PATCH', `${ID}/orgs/${w.orgId}`, { token: w.tokens.admin, body: { name: ' Org A renamed ' } });
  expectStatus(same, 200);
  assert.is(same.body.updatedAt, p.body.updatedAt, 'updatedAt stays');
  const viewer = await t.call('GET', `${ID}/users/${w.users.viewer}`, { token: w.root });
  const unchanged = await t.call('PATCH', `${ID}/users/${w.users.viewer}`, { token: w.root, body: { disabled: false, superuser: false, name: viewer.body.name } });
  expectStatus(unchanged, 200);
  assert.is(unchanged.body.updatedAt, viewer.body.updatedAt);
  const me = await t.call('PATCH', `${ID}/users/me`, { token: w.tokens.viewer, body: { name: viewer.body.name } });
  expectStatus(me, 200);
  assert.is(me.body.updatedAt, viewer.body.updatedAt);
  assert.is(audited(), entries, 'no entry for a PATCH that changed nothing');
  const page1 = await t.call('GET', `${ID}/orgs/${w.orgId}/members?limit=2`, { token: w.tokens.viewer });
  assert.is(page1.body.members.length, 2);
  assert.type(page1.body.nextCursor, 'string');
  const page2 = await t.call('GET', `${ID}/orgs/${w.orgId}/members?limit=2&cursor=${page1.body.nextCursor}`, { token: w.tokens.viewer });
  const seen = [...page1.body.members, ...page2.body.members].map((m: any) => m.userId);
  assert.is(new Set(seen).size, seen.length, 'no member twice across pages');
  const bad = await t.call('GET', `${ID}/orgs/${w.orgId}/members?cursor=not-a-cursor`, { token: w.tokens.viewer });
  assert.is(bad.status, 400);
  assert.is(bad.body.code, 'invalid_cursor');
  const other = await t.call('GET', `${ID}/orgs/${w.orgId}/members?cursor=${encodeURIComponent(Buffer.from(JSON.stringify(['users', 1, 'x'])).toString('base64url'))}`, { token: w.tokens.viewer });
  assert.is(other.status, 400, 'a cursor of another list is refused');
});

O('superuser deletes an organization with everything it owns', async ({ t, w }) => {
  const org = (await t.call('POST', `${ID}/orgs`, { token: w.root, body: { name: 'Doomed' } })).body;
  const sa = await t.call('POST', `${ID}/orgs/${org.id}/service-accounts`, { token: w.root, body: { name: 'doomed sa', role: 'viewer' } });
  const saToken = await clientToken(t, sa.body.clientId, sa.body.clientSecret);
  expectStatus(await t.call('DELETE', `${ID}/orgs/${org.id}`, { token: w.root }), 204);
  assert.is((await t.call('GET', `${ID}/orgs/${org.id}`, { token: w.root })).status, 404);
  assert.is((await t.call('GET', `${ID}/orgs`, { token: saToken })).status, 401, 'its service accounts are gone');
  const left = t.rt.db.raw.prepare('SELECT (SELECT count(*) FROM members WHERE org_id = ?) + (SELECT count(*) FROM service_accounts WHERE org_id = ?) + (SELECT count(*) FROM audit_log WHERE org_id = ?)').pluck().get(org.id, org.id, org.id);
  assert.is(left, 0);
  const installAudit = await t.call('GET', `${ID}/audit`, { token: w.root });
  assert.ok(installAudit.body.events.some((e: any) => e.action === 'org.deleted' && e.target.id === org.id));
});

O.run();

// ── access checked again once a JSON body has arrived ──────────────────────

const LB = suite<{ t: TestApp; w: World }>('access after a JSON body');
LB.before(async (ctx) => {
  ctx.t = await startApp();
  ctx.w = await seedWorld(ctx.t);
});
LB.after(async (ctx) => ctx.t.close());

LB('a write whose body arrives after its sender lost access makes nothing: a member removed or demoted, a service account deleted (RELIABILITY.md Z3)', async ({ t, w }) => {
  // the moment the server has authenticated a request (its headers are in), whatever its body does
  let authenticated = 0;
  const authenticate = t.rt.identity.authenticate.bind(t.rt.identity);
  t.rt.identity.authenticate = async (token) => {
    const actor = await authenticate(token);
    authenticated++;
    return actor;
  };
  const ledgerId = (await t.call('POST', `${LEDGER}/orgs/${w.orgId}/ledgers`, { token: w.tokens.admin, body: { name: 'slow bodies' } })).body.id as string;
  const member = async (email: string, role: string) => {
    const r = await t.call('POST', `${ID}/orgs/${w.orgId}/members`, { token: w.root, body: { email, role, password: PASSWORD } });
    expectStatus(r, 201);
    return { userId: r.body.userId as string, token: (await signIn(t, email, PASSWORD)).accessToken };
  };
  /** Sends `body` in two parts as `token`; `meanwhile` runs once the server has authenticated it. */
  const slowly = (method: string, path: string, token: string, body: unknown, meanwhile: () => Promise<void>) => {
    const bytes = Buffer.from(JSON.stringify(body));
    const seen = authenticated;
    const cut = Math.min(10, bytes.length - 1);
    return sendInTwoParts(t, path, { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, bytes.subarray(0, cut), bytes.subarray(cut), () => authenticated > seen, meanwhile, method);
  };
  const webhooks = `${LEDGER}/orgs/${w.orgId}/webhooks`;

  // an admin removed while their new webhook (to a host of their choosing) arrives
  const leaving = await member('leaving-admin@a.test', 'admin');
  const hook = await slowly('POST', webhooks, leaving.token, { url: 'https://receiver.example.net/hook', events: ['contact.job_changed'] }, async () => {
    expectStatus(await t.call('DELETE', `${ID}/orgs/${w.orgId}/members/${leaving.userId}`, { token: w.root }), 204);
  });
  assert.is(hook.status, 403, JSON.stringify(hook.body));
  // an admin demoted to viewer while their change of a webhook's URL arrives
  const existing = await t.call('POST', webhooks, { token: w.tokens.admin, body: { url: 'https://ours.example.net/hook', events: ['contact.job_changed'] } });
  expectStatus(existing, 201);
  const demoted = await member('demoted-admin@a.test', 'admin');
  const patch = await slowly('PATCH', `${webhooks}/${existing.body.id}`, demoted.token, { url: 'https://elsewhere.example.net/hook' }, async () => {
    expectStatus(await t.call('PATCH', `${ID}/orgs/${w.orgId}/members/${demoted.userId}`, { token: w.root, body: { role: 'viewer' } }), 200);
  });
  assert.is(patch.status, 403, JSON.stringify(patch.body));
  const hooks = (await t.call('GET', webhooks, { token: w.tokens.admin })).body.webhooks as { url: string }[];
  assert.equal(hooks.map((h) => h.url), ['https://ours.example.net/hook'], 'no webhook made or moved');

  // an editor removed while their bulk_delete arrives
  const added = await addContacts(t, w.tokens.editor, w.orgId, ledgerId, [{ name: 'Ann Keep', company: 'Acme' }, { name: 'Bo Keep', company: 'Acme' }]);
  assert.is(added.imported, 2);
  const ids = (await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/contacts`, { token: w.tokens.viewer })).body.contacts.map((c: any) => c.id);
  const editor = await member('leaving-editor@a.test', 'editor');
  const deleted = await slowly('POST', `${ledgerPath(w.orgId, ledgerId)}/contacts/bulk_delete`, editor.token, { contactIds: ids }, async () => {
    expectStatus(await t.call('DELETE', `${ID}/orgs/${w.orgId}/members/${editor.userId}`, { token: w.root }), 204);
  });
  assert.is(deleted.status, 403, JSON.stringify(deleted.body));

  // a service account deleted while its batch of contacts arrives
  const sa = await t.call('POST', `${ID}/orgs/${w.orgId}/service-accounts`, { token: w.tokens.admin, body: { name: 'short-lived', role: 'editor' } });
  expectStatus(sa, 201);
  const saToken = await clientToken(t, sa.body.clientId, sa.body.clientSecret);
  const batch = await slowly('POST', `${ledgerPath(w.orgId, ledgerId)}/contacts`, saToken, { contacts: [{ name: 'Cy New', company: 'Acme' }] }, async () => {
    expectStatus(await t.call('DELETE', `${ID}/orgs/${w.orgId}/service-accounts/${sa.body.clientId}`, { token: w.tokens.admin }), 204);
  });
  assert.is(batch.status, 401, JSON.stringify(batch.body));

  // a route without a body still reads the {} some clients send: an admin removed while it arrives
  // does not get a new secret for an admin service account (a reviewer's case: access for good)
  const adminSa = await t.call('POST', `${ID}/orgs/${w.orgId}/service-accounts`, { token: w.tokens.admin, body: { name: 'kept admin', role: 'admin' } });
  expectStatus(adminSa, 201);
  const rotator = await member('leaving-rotator@a.test', 'admin');
  const rotated = await slowly('POST', `${ID}/orgs/${w.orgId}/service-accounts/${adminSa.body.clientId}/rotate`, rotator.token, {}, async () => {
    expectStatus(await t.call('DELETE', `${ID}/orgs/${w.orgId}/members/${rotator.userId}`, { token: w.root }), 204);
  });
  assert.is(rotated.status, 403, JSON.stringify(rotated.body));
  expectStatus(await t.call('POST', `${ID}/session`, { body: { grantType: 'clientCredentials', clientId: adminSa.body.clientId, clientSecret: adminSa.body.clientSecret } }), 200, 'its secret is unchanged');

  const left = await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/contacts`, { token: w.tokens.viewer });
  assert.equal(left.body.contacts.map((c: any) => c.name).sort(), ['Ann Keep', 'Bo Keep'], 'nothing deleted, nothing added');
  const imports = await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/imports`, { token: w.tokens.viewer });
  assert.is(imports.body.imports.length, 1, 'no import job for the refused batch');
  // a member who keeps access, sending as slowly, is served
  const staying = await slowly('POST', webhooks, w.tokens.admin, { url: 'https://ours.example.net/second', events: ['import.completed'] }, async () => {});
  assert.is(staying.status, 201, JSON.stringify(staying.body));
});

LB.run();

const U = suite<{ t: TestApp; w: World }>('users');
U.before(async (ctx) => {
  ctx.t = await startApp();
  ctx.w = await seedWorld(ctx.t);
});
U.after(async (ctx) => ctx.t.close());

U('GET/PATCH /users/me: rename; a service account has no profile', async ({ t, w }) => {
  const me = await t.call('GET', `${ID}/users/me`, { token: w.tokens.editor });
  expectStatus(me, 200);
  assert.equal({ email: me.body.email, superuser: me.body.superuser, disabled: me.body.disabled }, { email: 'editor@a.test', superuser: false, disabled: false });
  assert.is(me.body.passwordHash, undefined);
  const p = await t.call('PATCH', `${ID}/users/me`, { token: w.tokens.editor, body: { name: 'Edith' } });
  expectStatus(p, 200);
  assert.is(p.body.name, 'Edith');
  assert.is((await t.call('GET', `${ID}/users/me`, { token: w.serviceAccounts.saAdmin.token })).status, 403);
});

U('names are one line: control characters (NUL, ESC, tabs, line breaks) are refused in people, organization, ledger and service-account names; bidi and joiners are text', async ({ t, w }) => {
  const cases: [string, string, object][] = [
    ['PATCH', `${ID}/users/me`, { name: 'a\u0000b' }],
    ['PATCH', `${ID}/users/me`, { name: 'a\u001b[31mb' }],
    ['POST', `${ID}/users`, { email: 'ctl@a.test', password: PASSWORD, name: 'line\nbreak' }],
    ['PATCH', `${ID}/users/${w.users.viewer}`, { name: 'tab\there' }],
    ['POST', `${ID}/orgs`, { name: 'Evil\u001b]0;title\u0007' }],
    ['PATCH', `${ID}/orgs/${w.orgId}`, { name: 'C1\u0085' }],
    ['POST', `${ID}/orgs/${w.orgId}/service-accounts`, { name: 'del\u007f', role: 'viewer' }],
    ['POST', ledgerPath(w.orgId), { name: 'two\r\nlines' }],
  ];
  for (const [method, path, body] of cases) {
    const r = await t.call(method, path, { token: w.root, body });
    expectStatus(r, 422, `${method} ${path} ${JSON.stringify(body)}`);
    assert.match(r.body.errors[0].message, /NUL|control characters/);
    assert.is(r.body.errors[0].path, 'name');
  }
  // a tester's case: all of them were stored
  assert.is((await t.call('GET', `${ID}/users?limit=1000`, { token: w.root })).body.users.filter((u: any) => /[\u0000-\u001f\u007f-\u009f]/.test(u.name ?? '')).length, 0);
  const bidi = await t.call('PATCH', `${ID}/users/me`, { token: w.tokens.editor, body: { name: 'علي\u200d \u202eAli' } });
  expectStatus(bidi, 200);
  assert.is(bidi.body.name, 'علي\u200d \u202eAli');
});

U('names that show nothing (only spaces and invisible characters: zero-width, fillers, a byte order mark) are refused; an empty person name and an emoji are names', async ({ t, w }) => {
  const blank = '\u200b\u3164 \u00a0\ufeff\u2800\u200d';
  const cases: [string, string, object][] = [
    ['PATCH', `${ID}/users/me`, { name: blank }],
    ['POST', `${ID}/users`, { email: 'blank@a.test', password: PASSWORD, name: '\u115f' }],
    ['POST', `${ID}/orgs`, { name: blank }],
    ['POST', `${ID}/orgs`, { name: 'Named', adminEmail: 'new.admin@a.test', adminPassword: PASSWORD, adminName: '\u200b' }],
    ['PATCH', `${ID}/orgs/${w.orgId}`, { name: '\u200b' }],
    ['POST', `${ID}/orgs/${w.orgId}/members`, { email: 'blank.member@a.test', role: 'viewer', password: PASSWORD, name: '\u3164' }],
    ['POST', `${ID}/orgs/${w.orgId}/service-accounts`, { name: '\u2060', role: 'viewer' }],
    ['POST', ledgerPath(w.orgId), { name: '\u200b\u200b' }],
  ];
  for (const [method, path, body] of cases) {
    const r = await t.call(method, path, { token: w.root, body });
    expectStatus(r, 422, `${method} ${path} ${JSON.stringify(body)}`);
    assert.match(r.body.errors[0].message, /must show at least one character/);
    assert.match(r.body.errors[0].path, /^(name|adminName)$/);
  }
  assert.is((await t.call('GET', `${ID}/users?limit=1000`, { token: w.root })).body.users.filter((u: any) => ['blank@a.test', 'blank.member@a.test', 'new.admin@a.test'].includes(u.email)).length, 0, 'no account made');
  const empty = await t.call('PATCH', `${ID}/users/me`, { token: w.tokens.editor, body: { name: '' } });
  expectStatus(empty, 200, 'a person name may be empty');
  const rocket = await t.call('POST', ledgerPath(w.orgId), { token: w.root, body: { name: '\u{1f680}' } });
  expectStatus(rocket, 201, 'an emoji shows');
});

U('password change needs the current password and ends every other session (A5b)', async ({ t }) => {
  const keep = await signIn(t, 'viewer@a.test', PASSWORD);
  const other = await signIn(t, 'viewer@a.test', PASSWORD);
  const missing = await t.call('PATCH', `${ID}/users/me`, { token: keep.accessToken, body: { password: 'brand new password' } });
  assert.is(missing.status, 422);
  // a currentPassword without a new password is checked by nothing: refused, not ignored
  const alone = await t.call('PATCH', `${ID}/users/me`, { token: keep.accessToken, body: { name: 'Vera', currentPassword: 'wrong one' } });
  assert.equal([alone.status, alone.body.errors?.[0]?.path], [422, 'currentPassword']);
  const wrong = await t.call('PATCH', `${ID}/users/me`, { token: keep.accessToken, body: { password: 'brand new password', currentPassword: 'not it at all' } });
  assert.is(wrong.status, 422);
  assert.is(wrong.body.code, 'invalid_current_password');
  const ok = await t.call('PATCH', `${ID}/users/me`, { token: keep.accessToken, body: { password: 'brand new password', currentPassword: PASSWORD } });
  expectStatus(ok, 200);
  expectStatus(await t.call('GET', `${ID}/users/me`, { token: keep.accessToken }), 200, 'the session that changed it stays');
  assert.is((await t.call('GET', `${ID}/users/me`, { token: other.accessToken })).status, 401);
  assert.is((await t.call('POST', `${ID}/session`, { body: { grantType: 'refreshToken', refreshToken: other.refreshToken } })).status, 401);
  assert.is((await t.call('POST', `${ID}/session`, { body: { email: 'viewer@a.test', password: PASSWORD } })).status, 401);
  expectStatus(await t.call('POST', `${ID}/session`, { body: { email: 'viewer@a.test', password: 'brand new password' } }), 200);
});

U('the current password of a password change is throttled like a sign-in, on the same counters, and failures are audited; a password reset lifts it (A2)', async ({ t, w }) => {
  const email = 'Guesser@A.test';
  const user = await t.call('POST', `${ID}/users`, { token: w.root, body: { email, name: 'Guess', password: PASSWORD } });
  expectStatus(user, 201);
  const { accessToken } = await signIn(t, email.toLowerCase(), PASSWORD);
  const guess = (currentPassword: string) => t.call('PATCH', `${ID}/users/me`, { token: accessToken, body: { password: 'brand new password', currentPassword } });
  for (let i = 0; i < 10; i++) assert.is((await guess(`wrong guess ${i}`)).body.code, 'invalid_current_password');
  const stopped = await guess(PASSWORD);
  expectStatus(stopped, 429, 'the 11th attempt, even with the right password');
  assert.ok(Number(stopped.headers.get('retry-after')) > 0);
  assert.match(stopped.body.message, /Too many wrong passwords; try again in \d+ seconds/);
  const signInNow = await t.call('POST', `${ID}/session`, { body: { grantType: 'password', email: email.toLowerCase(), password: PASSWORD } });
  expectStatus(signInNow, 429, 'the account is throttled for sign-in too');
  const audit = await t.call('GET', `${ID}/audit?limit=100`, { token: w.root });
  assert.is(audit.body.events.filter((e: any) => e.action === 'user.password_change_failed' && JSON.stringify(e).includes(user.body.id)).length, 10);
  // a password reset by a superuser lifts the throttle: the locked-out user gets back in at once
  expectStatus(await t.call('PATCH', `${ID}/users/${user.body.id}`, { token: w.root, body: { password: 'reset by the admin' } }), 200);
  const fresh = await signIn(t, email.toLowerCase(), 'reset by the admin');
  expectStatus(await t.call('PATCH', `${ID}/users/me`, { token: fresh.accessToken, body: { password: 'brand new password', currentPassword: 'reset by the admin' } }), 200);
});

U('superuser: list, create (409 on a taken e-mail), get, disable, reset password, end sessions', async ({ t, w }) => {
  const list = await t.call('GET', `${ID}/users?limit=3`, { token: w.root });
  expectStatus(list, 200);
  assert.is(list.body.users.length, 3);
  assert.type(list.body.nextCursor, 'string');
  const c = await t.call('POST', `${ID}/users`, { token: w.root, body: { email: 'Carol@X.test', name: 'Carol', password: PASSWORD } });
  expectStatus(c, 201);
  assert.is(c.body.email, 'carol@x.test');
  assert.is((await t.call('POST', `${ID}/users`, { token: w.root, body: { email: 'carol@x.test', password: PASSWORD } })).body.code, 'email_taken');
  // every field's error in one answer: the password policy is not a second round after the e-mail's
  const both = await t.call('POST', `${ID}/users`, { token: w.root, body: { email: 'bad', password: 'short' } });
  expectStatus(both, 422);
  assert.equal(both.body.errors.map((e: any) => e.path).sort(), ['email', 'password']);
  expectStatus(await t.call('GET', `${ID}/users/${c.body.id}`, { token: w.root }), 200);
  assert.is((await t.call('GET', `${ID}/users/u_00000000000000000000000000`, { token: w.root })).status, 404);
  const s = await signIn(t, 'carol@x.test', PASSWORD);
  const ended = await t.call('DELETE', `${ID}/users/${c.body.id}/sessions`, { token: w.root });
  expectStatus(ended, 200);
  assert.is(ended.body.revokedSessions, 1);
  assert.is((await t.call('GET', `${ID}/users/me`, { token: s.accessToken })).status, 401, 'A5d: admin-terminated session');
  const reset = await t.call('PATCH', `${ID}/users/${c.body.id}`, { token: w.root, body: { password: 'reset by the admin 1' } });
  expectStatus(reset, 200);
  expectStatus(await t.call('POST', `${ID}/session`, { body: { email: 'carol@x.test', password: 'reset by the admin 1' } }), 200);
});

U('an e-mail in composed and in decomposed Unicode form is one account: the second is taken, members and sign-in find it either way', async ({ t, w }) => {
  const [composed, decomposed] = ['j\u00f6rg@ex\u00e4mple.test', 'jo\u0308rg@exa\u0308mple.test'];
  const first = await t.call('POST', `${ID}/users`, { token: w.root, body: { email: decomposed, password: 'long enough pass 1' } });
  expectStatus(first, 201);
  assert.is(first.body.email, composed, 'stored composed');
  // a tester's case: a second account that looked the same
  const second = await t.call('POST', `${ID}/users`, { token: w.root, body: { email: composed.toUpperCase(), password: 'long enough pass 1' } });
  expectStatus(second, 409);
  assert.is(second.body.code, 'email_taken');
  const member = await t.call('POST', `${ID}/orgs/${w.orgId}/members`, { token: w.tokens.admin, body: { email: decomposed, role: 'viewer' } });
  expectStatus(member, 201);
  assert.is(member.body.userId, first.body.id);
  for (const email of [composed, decomposed]) expectStatus(await t.call('POST', `${ID}/session`, { body: { email, password: 'long enough pass 1' } }), 200, email);
});

U('full-width letters and a domain in its ASCII (Punycode) form name the same account: the second is taken, members and sign-in find it', async ({ t, w }) => {
  // a tester's cases: "ＡＤＭＩＮＡ@…" was a second account that looked like an admin's in member lists
  const plain = await t.call('POST', `${ID}/users`, { token: w.root, body: { email: 'wide@example.test', password: 'long enough pass 1' } });
  expectStatus(plain, 201);
  const wide = '\uff37\uff29\uff24\uff25@example.test'; // ＷＩＤＥ
  const second = await t.call('POST', `${ID}/users`, { token: w.root, body: { email: wide, password: 'long enough pass 1' } });
  expectStatus(second, 409);
  assert.is(second.body.code, 'email_taken');
  const member = await t.call('POST', `${ID}/orgs/${w.orgId}/members`, { token: w.tokens.admin, body: { email: wide, role: 'viewer', password: 'long enough pass 1' } });
  expectStatus(member, 409, 'an admin cannot make a look-alike member either');
  expectStatus(await t.call('POST', `${ID}/session`, { body: { email: wide, password: 'long enough pass 1' } }), 200, 'sign-in finds it');
  const idn = await t.call('POST', `${ID}/users`, { token: w.root, body: { email: 'm\u00e4x@xn--exmple-cua.test', password: 'long enough pass 1' } });
  expectStatus(idn, 201);
  assert.is(idn.body.email, 'm\u00e4x@ex\u00e4mple.test', 'stored in the form people type');
  expectStatus(await t.call('POST', `${ID}/users`, { token: w.root, body: { email: 'M\u00c4X@EX\u00c4MPLE.TEST', password: 'long enough pass 1' } }), 409);
  expectStatus(await t.call('POST', `${ID}/session`, { body: { email: 'm\u00e4x@XN--EXMPLE-CUA.TEST', password: 'long enough pass 1' } }), 200);
});

U('an account e-mail with an invisible or control character, or not in an address\'s shape, is refused: it would pass for another account', async ({ t, w }) => {
  const taken = 'member@x.test';
  expectStatus(await t.call('POST', `${ID}/users`, { token: w.root, body: { email: taken, password: 'long enough pass 1' } }), 201);
  // a tester's case: "adminb@x.org" + a zero-width space was a second account, shown as the first
  for (const email of [`${taken}\u200b`, `${taken}\u0000`, `mem\u00adber@x.test`, `${taken}.`, 'member@localhost']) {
    const user = await t.call('POST', `${ID}/users`, { token: w.root, body: { email, password: 'long enough pass 1' } });
    expectStatus(user, 422, JSON.stringify(email));
    assert.is(user.body.errors[0].path, 'email');
    const member = await t.call('POST', `${ID}/orgs/${w.orgId}/members`, { token: w.tokens.admin, body: { email, role: 'viewer', password: 'long enough pass 1' } });
    expectStatus(member, 422, JSON.stringify(email));
  }
  const zw = await t.call('POST', `${ID}/users`, { token: w.root, body: { email: `${taken}\u200b`, password: 'long enough pass 1' } });
  assert.match(zw.body.errors[0].message, /invisible character \(U\+200B\)/);
  const users = (await t.call('GET', `${ID}/users`, { token: w.root })).body.users as { email: string }[];
  assert.is(users.filter((u) => u.email.startsWith('mem')).length, 1, 'no second account');
});

U('the last active superuser cannot be disabled or demoted (409)', async ({ t, w }) => {
  const rootId = (await t.call('GET', `${ID}/users/me`, { token: w.root })).body.id;
  const r = await t.call('PATCH', `${ID}/users/${rootId}`, { token: w.root, body: { superuser: false } });
  assert.is(r.status, 409);
  assert.is(r.body.code, 'last_superuser');
  assert.is((await t.call('PATCH', `${ID}/users/${rootId}`, { token: w.root, body: { disabled: true } })).status, 409);
});

U('a generated first-superuser password never starts with "-" (the CLI would read it as a flag), and keeps 24 base64url characters', () => {
  // one in 64 started with "-": 10,000 draws meet one with certainty but for (63/64)^10000 ≈ 1e-69
  const drawn = Array.from({ length: 10_000 }, generatePassword);
  assert.equal(drawn.filter((p) => p.startsWith('-')), []);
  assert.ok(drawn.every((p) => /^[A-Za-z0-9_-]{24}$/.test(p)));
  assert.ok(drawn.some((p) => p.startsWith('_')) && drawn.some((p) => p.slice(1).includes('-')), 'the other characters are all still drawn');
  assert.is(new Set(drawn).size, drawn.length);
});

U('routes that set a password answer 429 with Retry-After while the hashing queue is full, as their documents declare (under the tests an undeclared 429 was a 500: a reviewer\'s case)', async () => {
  const t = await startApp({ config: { bcryptCost: 10 } });
  try {
    const root = (await signInRoot(t)).accessToken;
    const burst = await Promise.all(Array.from({ length: 120 }, (_, i) => t.call('POST', `${ID}/users`, { token: root, body: { email: `burst-${i}@q.test`, password: PASSWORD } })));
    const statuses = burst.map((r) => r.status);
    assert.ok(statuses.every((s) => s === 201 || s === 429), JSON.stringify(burst.find((r) => r.status !== 201 && r.status !== 429)?.body));
    const busy = burst.find((r) => r.status === 429);
    assert.ok(busy, 'the queue of 64 was full at least once');
    assert.is(busy!.headers.get('retry-after'), '1');
    assert.match(busy!.body.detail, /Too many passwords are being checked or set right now/);
    assert.ok(statuses.includes(201));
  } finally {
    await t.close();
  }
});

U.run();

const SA = suite<{ t: TestApp; w: World }>('service accounts');
SA.before(async (ctx) => {
  ctx.t = await startApp();
  ctx.w = await seedWorld(ctx.t);
});
SA.after(async (ctx) => ctx.t.close());

SA('create shows the secret once (≥ 256 bits); lists never show it', async ({ t, w }) => {
  const r = await t.call('POST', `${ID}/orgs/${w.orgId}/service-accounts`, { token: w.tokens.admin, body: { name: 'crm sync', role: 'editor' } });
  expectStatus(r, 201);
  assert.match(r.body.id, /^sa_[0-9a-z]{26}$/);
  assert.is(r.body.clientId, r.body.id);
  assert.match(r.body.clientSecret, /^cls_[A-Za-z0-9_-]{43}$/);
  assert.ok(Buffer.from(r.body.clientSecret.slice(4), 'base64url').length >= 32);
  assert.is(r.body.role, 'editor');
  assert.is(r.headers.get('cache-control'), 'no-store');
  const list = await t.call('GET', `${ID}/orgs/${w.orgId}/service-accounts`, { token: w.tokens.admin });
  expectStatus(list, 200);
  assert.ok(list.body.serviceAccounts.length >= 4);
  assert.not.ok(list.text.includes(r.body.clientSecret));
  assert.not.ok(list.text.includes('clientSecret'));
  assert.not.ok(list.text.includes('secretHash'));
  // the Location of the new account answers with it (a tester's case: 405), never with its secret
  const one = await t.call('GET', r.headers.get('location')!.replace(/^.*?\/api\/identity\/v1/, ID), { token: w.tokens.admin });
  expectStatus(one, 200);
  assert.equal(one.body, list.body.serviceAccounts.find((x: any) => x.id === r.body.id));
  assert.not.ok(one.text.includes('clientSecret') || one.text.includes('secretHash'));
  assert.is((await t.call('GET', `${ID}/orgs/${w.orgId}/service-accounts/${r.body.id}`, { token: w.tokens.editor })).status, 403, 'admins only');
  assert.is((await t.call('GET', `${ID}/orgs/${w.otherOrgId}/service-accounts/${r.body.id}`, { token: w.root })).status, 404, 'not in another organization');
});

SA('lastUsedAt: never until it signs in; then when it last got an access token, by sign-in or refresh', async ({ t, w }) => {
  const clock = t.clock as ManualClock;
  const r = await t.call('POST', `${ID}/orgs/${w.orgId}/service-accounts`, { token: w.tokens.admin, body: { name: 'last used', role: 'viewer' } });
  const lastUsed = async () => (await t.call('GET', `${ID}/orgs/${w.orgId}/service-accounts`, { token: w.tokens.admin })).body.serviceAccounts.find((s: any) => s.id === r.body.id).lastUsedAt;
  assert.is(await lastUsed(), null);
  const session = await t.call('POST', `${ID}/session`, { body: { grantType: 'clientCredentials', clientId: r.body.clientId, clientSecret: r.body.clientSecret } });
  assert.is(await lastUsed(), new Date(clock.now()).toISOString());
  clock.advance(5 * 60_000);
  expectStatus(await t.call('POST', `${ID}/session`, { body: { grantType: 'refreshToken', refreshToken: session.body.refreshToken } }), 200);
  assert.is(await lastUsed(), new Date(clock.now()).toISOString(), 'a refresh is a use');
});

SA('a service account role may not exceed the caller; an admin service account may create lower ones (Z3f)', async ({ t, w }) => {
  const up = await t.call('POST', `${ID}/orgs/${w.orgId}/service-accounts`, { token: w.serviceAccounts.saAdmin.token, body: { name: 'child', role: 'admin' } });
  expectStatus(up, 201, 'admin may create admin');
  const low = await t.call('POST', `${ID}/orgs/${w.orgId}/service-accounts`, { token: w.serviceAccounts.saEditor.token, body: { name: 'child', role: 'viewer' } });
  assert.is(low.status, 403, 'editors cannot manage service accounts at all');
});

SA('rotate: the old secret and its sessions stop working, the new one works', async ({ t, w }) => {
  const c = (await t.call('POST', `${ID}/orgs/${w.orgId}/service-accounts`, { token: w.tokens.admin, body: { name: 'rot', role: 'viewer' } })).body;
  const oldToken = await clientToken(t, c.clientId, c.clientSecret);
  const r = await t.call('POST', `${ID}/orgs/${w.orgId}/service-accounts/${c.id}/rotate`, { token: w.tokens.admin });
  expectStatus(r, 200);
  assert.is.not(r.body.clientSecret, c.clientSecret);
  assert.type(r.body.rotatedAt, 'string');
  assert.is((await t.call('POST', `${ID}/session`, { body: { grantType: 'clientCredentials', clientId: c.clientId, clientSecret: c.clientSecret } })).status, 401);
  assert.is((await t.call('GET', `${ID}/orgs`, { token: oldToken })).status, 401);
  const fresh = await clientToken(t, c.clientId, r.body.clientSecret);
  expectStatus(await t.call('GET', `${ID}/orgs/${w.orgId}`, { token: fresh }), 200);
});

SA('delete: its tokens stop working at once; another org cannot touch it (404)', async ({ t, w }) => {
  const c = (await t.call('POST', `${ID}/orgs/${w.orgId}/service-accounts`, { token: w.tokens.admin, body: { name: 'del', role: 'viewer' } })).body;
  const token = await clientToken(t, c.clientId, c.clientSecret);
  assert.is((await t.call('DELETE', `${ID}/orgs/${w.otherOrgId}/service-accounts/${c.id}`, { token: w.tokens.otherAdmin })).status, 404);
  assert.is((await t.call('POST', `${ID}/orgs/${w.otherOrgId}/service-accounts/${c.id}/rotate`, { token: w.tokens.otherAdmin })).status, 404);
  expectStatus(await t.call('DELETE', `${ID}/orgs/${w.orgId}/service-accounts/${c.id}`, { token: w.tokens.admin }), 204);
  assert.is((await t.call('GET', `${ID}/orgs/${w.orgId}`, { token })).status, 401);
});

SA('installation service accounts: superuser only, permissions, no organization access', async ({ t, w }) => {
  const r = await t.call('POST', `${ID}/service-accounts`, { token: w.root, body: { name: 'pipeline', permissions: ['feed'] } });
  expectStatus(r, 201);
  assert.equal(r.body.permissions, ['feed']);
  assert.is(r.body.orgId, undefined);
  const bad = await t.call('POST', `${ID}/service-accounts`, { token: w.root, body: { name: 'x', permissions: ['admin'] } });
  assert.is(bad.status, 422);
  const token = await clientToken(t, r.body.clientId, r.body.clientSecret);
  const s = await t.call('GET', `${ID}/session`, { token });
  assert.equal(s.body.serviceAccount, { id: r.body.id, name: 'pipeline', orgId: null, role: null, permissions: ['feed'] });
  assert.equal(s.body.orgs, []);
  assert.is((await t.call('GET', `${ID}/orgs/${w.orgId}`, { token })).status, 403);
  const list = await t.call('GET', `${ID}/service-accounts`, { token: w.root });
  assert.ok(list.body.serviceAccounts.some((x: any) => x.id === r.body.id));
  assert.ok(list.body.serviceAccounts.every((x: any) => x.orgId === undefined));
  const one = await t.call('GET', r.headers.get('location')!.replace(/^.*?\/api\/identity\/v1/, ID), { token: w.root });
  expectStatus(one, 200);
  assert.equal([one.body.id, one.body.permissions, one.text.includes('clientSecret')], [r.body.id, ['feed'], false]);
  assert.is((await t.call('GET', `${ID}/service-accounts/${w.serviceAccounts.saAdmin.id}`, { token: w.root })).status, 404, 'an org account is not an installation account');
  const rot = await t.call('POST', `${ID}/service-accounts/${r.body.id}/rotate`, { token: w.root });
  expectStatus(rot, 200);
  assert.is((await t.call('POST', `${ID}/service-accounts/${w.serviceAccounts.saAdmin.id}/rotate`, { token: w.root })).status, 404, 'an org account is not an installation account');
  expectStatus(await t.call('DELETE', `${ID}/service-accounts/${r.body.id}`, { token: w.root }), 204);
});

SA('a lowered service-account role takes effect on the next request', async ({ t, w }) => {
  // roles of service accounts are fixed at creation; deleting one is the way to lower access
  const c = (await t.call('POST', `${ID}/orgs/${w.orgId}/service-accounts`, { token: w.tokens.admin, body: { name: 'x', role: 'admin' } })).body;
  const token = await clientToken(t, c.clientId, c.clientSecret);
  expectStatus(await t.call('GET', `${ID}/orgs/${w.orgId}/audit`, { token }), 200);
  expectStatus(await t.call('DELETE', `${ID}/orgs/${w.orgId}/service-accounts/${c.id}`, { token: w.tokens.admin }), 204);
  assert.is((await t.call('GET', `${ID}/orgs/${w.orgId}/audit`, { token })).status, 401);
});

SA.run();

const AU = suite<{ t: TestApp; w: World }>('audit log (SPEC §3.4)');
AU.before(async (ctx) => {
  ctx.t = await startApp();
  ctx.w = await seedWorld(ctx.t);
});
AU.after(async (ctx) => ctx.t.close());

AU('every identity change of an organization is in its audit log, newest first, readable by admins only', async ({ t, w }) => {
  await t.call('PATCH', `${ID}/orgs/${w.orgId}/members/${w.users.viewer}`, { token: w.tokens.admin, body: { role: 'editor' } });
  await t.call('DELETE', `${ID}/orgs/${w.orgId}/members/${w.users.viewer}`, { token: w.tokens.admin });
  const sa = (await t.call('POST', `${ID}/orgs/${w.orgId}/service-accounts`, { token: w.tokens.admin, body: { name: 'audited', role: 'viewer' } })).body;
  await t.call('POST', `${ID}/orgs/${w.orgId}/service-accounts/${sa.id}/rotate`, { token: w.tokens.admin });
  await t.call('DELETE', `${ID}/orgs/${w.orgId}/service-accounts/${sa.id}`, { token: w.tokens.admin });
  await t.call('PATCH', `${ID}/orgs/${w.orgId}`, { token: w.tokens.admin, body: { name: 'A2' } });
  const r = await t.call('GET', `${ID}/orgs/${w.orgId}/audit?limit=1000`, { token: w.tokens.admin });
  expectStatus(r, 200);
  const actions = r.body.events.map((e: any) => e.action);
  for (const a of ['org.created', 'member.added', 'member.role_changed', 'member.removed', 'service_account.created', 'service_account.rotated', 'service_account.deleted', 'org.updated']) {
    assert.ok(actions.includes(a), `missing ${a}`);
  }
  assert.is(actions[0], 'org.updated', 'newest first');
  const change = r.body.events.find((e: any) => e.action === 'member.role_changed');
  assert.equal(change.data, { email: 'viewer@a.test', from: 'viewer', to: 'editor' });
  assert.equal(change.actor, { type: 'user', id: w.users.admin, label: 'admin@a.test' });
  assert.equal(change.target, { type: 'user', id: w.users.viewer });
  assert.match(change.at, /Z$/);
  assert.not.ok(r.text.includes('clientSecret') || r.text.includes('cls_'));
  assert.is((await t.call('GET', `${ID}/orgs/${w.orgId}/audit`, { token: w.tokens.editor })).status, 403);
  assert.is((await t.call('GET', `${ID}/orgs/${w.orgId}/audit`, { token: w.tokens.otherAdmin })).status, 403);
  const otherLog = await t.call('GET', `${ID}/orgs/${w.otherOrgId}/audit`, { token: w.tokens.otherAdmin });
  assert.not.ok(otherLog.body.events.some((e: any) => e.orgId === w.orgId), 'tenant isolation of the audit log');
});

AU('audit pages follow the cursor without gaps or repeats', async ({ t, w }) => {
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const r: any = await t.call('GET', `${ID}/orgs/${w.orgId}/audit?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { token: w.tokens.admin });
    expectStatus(r, 200);
    seen.push(...r.body.events.map((e: any) => e.id));
    cursor = r.body.nextCursor;
  } while (cursor);
  const all = await t.call('GET', `${ID}/orgs/${w.orgId}/audit?limit=1000`, { token: w.tokens.admin });
  assert.equal(seen, all.body.events.map((e: any) => e.id));
});

AU.run();
