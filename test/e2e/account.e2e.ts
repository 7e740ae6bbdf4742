// The account page (forty-fifth session, a tester's finding: the "add member" and "new
// organization" forms said users "can change it later", and nothing in the app let them): changing
// one's own password through PATCH /users/me, the API's refusals at their fields in the page's
// words, the other sessions ended and this one kept.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { apiToken, type E2E, hasFocus, ROOT_EMAIL, ROOT_PASSWORD, shoot, signInUi, start, until } from './harness.ts';
import { ID } from '../helpers.ts';

interface Ctx {
  e: E2E;
  root: string;
}
const EMAIL = 'paula@account.test';
const FIRST = 'first password of paula';
const SECOND = 'second password of paula';
const THIRD = 'third password of paula';

/** Opens the account page, fills its form to change `from` to `to` and sends it (`before` runs right before the click). */
async function changePassword(e: E2E, from: string, to: string, before?: () => Promise<void>): Promise<void> {
  await e.page.goto(`${e.base}/account`);
  await e.page.getByLabel('Current password', { exact: true }).fill(from);
  await e.page.getByLabel('New password', { exact: true }).fill(to);
  await e.page.getByLabel('Confirm the new password').fill(to);
  await before?.(); // (after the page's own start, which refreshes its session too)
  await e.page.getByRole('button', { name: 'Change password' }).click();
}

const A = suite<Ctx>('web application: the account page and a password change');
A.before(async (ctx) => {
  // three wrong current passwords lock the account (10 by default): the throttle's message is tested too
  ctx.e = await start({ LOGIN_MAX_FAILURES_PER_ACCOUNT: '3' });
  ctx.root = await apiToken(ctx.e, ROOT_EMAIL, ROOT_PASSWORD);
  const r = await ctx.e.call('POST', `${ID}/users`, { token: ctx.root, body: { email: EMAIL, name: 'Paula Password', password: FIRST } });
  assert.is(r.status, 201, r.text);
});
A.after(async (ctx) => ctx.e.close());

A('the header links to the account page; mismatch, wrong current and weak passwords are said at their fields', async (ctx) => {
  const { page, base } = ctx.e;
  await signInUi(page, base, EMAIL, FIRST);
  const patches: string[] = [];
  page.on('request', (r) => r.method() === 'PATCH' && r.url().endsWith('/users/me') && patches.push(r.url()));
  await page.getByRole('link', { name: /Your account: Paula Password/ }).click();
  await page.waitForURL(`${base}/account`);
  await page.getByRole('heading', { level: 1, name: 'Your account' }).waitFor();
  assert.is(await page.getByRole('link', { name: /Your account/ }).getAttribute('aria-current'), 'page');
  const current = page.getByLabel('Current password', { exact: true });
  const next = page.getByLabel('New password', { exact: true });
  const confirm = page.getByLabel('Confirm the new password');
  assert.is(await current.getAttribute('autocomplete'), 'current-password');
  assert.is(await next.getAttribute('autocomplete'), 'new-password');
  assert.is(await confirm.getAttribute('autocomplete'), 'new-password');
  assert.is(await page.getByLabel('E-mail').getAttribute('autocomplete'), 'username');
  assert.match(await page.locator('main').innerText(), 'signs you out everywhere else');
  // the rule about runs holds below 15 characters, and the hint must not read as a maximum length
  // ("…; under 15 characters, not a run…" did: a tester's case; docs/security.md)
  const hint = await page.locator(`#${(await next.getAttribute('aria-describedby'))!.split(' ')[0]}`).innerText();
  assert.match(hint, 'At least 8 characters');
  assert.match(hint, 'One shorter than 15 characters must also not be a run or a repetition');
  assert.not.match(hint, /under 15 characters/i);

  // the confirmation differs: said at it, nothing sent
  await current.fill(FIRST);
  await next.fill(SECOND);
  await confirm.fill(`${SECOND}!`);
  await page.getByRole('button', { name: 'Change password' }).click();
  await page.getByText('This does not match the new password.').waitFor();
  assert.is(await confirm.getAttribute('aria-invalid'), 'true');
  await until(() => hasFocus(confirm), 'focus on the confirmation');
  assert.is(patches.length, 0, 'no request for a mismatch');

  // a wrong current password: at its field, in words
  await current.fill('not my password at all');
  await confirm.fill(SECOND);
  await page.getByRole('button', { name: 'Change password' }).click();
  await page.getByText('This is not your current password.').waitFor();
  assert.is(await current.getAttribute('aria-invalid'), 'true');
  assert.is(await confirm.getAttribute('aria-invalid'), null, 'the confirmation no longer marked');
  await until(() => hasFocus(current), 'focus on the current password');
  assert.not.match(await page.locator('main').innerText(), 'currentPassword');

  // a weak new password: the policy's reason at the new password
  await current.fill(FIRST);
  await next.fill('aaaaaaaa');
  await confirm.fill('aaaaaaaa');
  await page.getByRole('button', { name: 'Change password' }).click();
  await page.getByText('The new password repeats one or two characters').waitFor();
  assert.is(await next.getAttribute('aria-invalid'), 'true');
  await until(() => hasFocus(next), 'focus on the new password');
  await shoot(page, 'account-weak-password');
  assert.is(patches.length, 2);
});

A('a changed password: other sessions end, this one stays (also over a reload), then the new password signs in', async (ctx) => {
  const { page, base, call } = ctx.e;
  // another session of the user's (another device): its refresh token must stop working
  const other = await call('POST', `${ID}/session`, { body: { grantType: 'password', email: EMAIL, password: FIRST } });
  assert.is(other.status, 200, other.text);
  await page.getByLabel('Current password', { exact: true }).fill(FIRST);
  await page.getByLabel('New password', { exact: true }).fill(SECOND);
  await page.getByLabel('Confirm the new password').fill(SECOND);
  await page.getByLabel('Confirm the new password').press('Enter');
  const notice = page.getByRole('status').filter({ hasText: 'Your password was changed.' });
  await notice.waitFor();
  assert.is(await page.getByLabel('Current password', { exact: true }).inputValue(), '', 'the fields are emptied');
  // focus on the notice, not left in the emptied confirmation
  await until(() => hasFocus(notice), 'focus on the success notice', 5000);
  const refused = await call('POST', `${ID}/session`, { body: { grantType: 'refreshToken', refreshToken: other.body.refreshToken } });
  assert.is(refused.status, 401, `the other session ended: ${refused.text}`);
  // this tab: still signed in, also after a reload (its cookie's session was kept)
  await page.reload();
  await page.getByRole('heading', { level: 1, name: 'Your account' }).waitFor();
  await shoot(page, 'account');
  await page.getByRole('button', { name: 'Sign out' }).click();
  // the old password no longer signs in; the new one does
  await page.getByLabel('E-mail').fill(EMAIL);
  await page.getByLabel('Password').fill(FIRST);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByText('The e-mail or password is incorrect.').waitFor();
  await page.getByLabel('Password').fill(SECOND);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).first().waitFor();
  assert.ok((await apiToken(ctx.e, EMAIL, SECOND)).length > 0);
});

A('should the session end after the change all the same, the page signs in again with the new password and says it was changed', async (ctx) => {
  const { page, base } = ctx.e;
  await page.goto(`${base}/account`);
  await page.getByLabel('Current password', { exact: true }).fill(SECOND);
  await page.getByLabel('New password', { exact: true }).fill(THIRD);
  await page.getByLabel('Confirm the new password').fill(THIRD);
  // the refresh after the change refused once, as if the server had ended this session too
  let refusedOnce = false;
  await page.route('**/api/identity/v1/session', async (route) => {
    const body = route.request().postData() ?? '';
    if (!refusedOnce && route.request().method() === 'POST' && body.includes('refreshToken')) {
      refusedOnce = true;
      await route.fulfill({ status: 401, contentType: 'application/problem+json', body: JSON.stringify({ code: 'invalid_grant', detail: 'The session has ended.' }) });
    } else await route.continue();
  });
  await page.getByRole('button', { name: 'Change password' }).click();
  await page.getByRole('status').filter({ hasText: 'Your password was changed.' }).waitFor();
  await until(() => hasFocus(page.getByRole('status').filter({ hasText: 'Your password was changed.' })), 'focus on the notice after signing in again', 5000);
  await page.unroute('**/api/identity/v1/session');
  assert.ok(refusedOnce, 'the refresh was refused');
  assert.is(new URL(page.url()).pathname, '/account');
  await page.getByRole('heading', { level: 1, name: 'Your account' }).waitFor();
  assert.ok(await page.getByRole('button', { name: 'Sign out' }).first().isVisible(), 'signed in');
  await page.reload();
  await page.getByRole('heading', { level: 1, name: 'Your account' }).waitFor();
});

A('a refresh that fails after the change (not an ended session) leaves the change said as made, with a note, never as a failure', async (ctx) => {
  const { page, base } = ctx.e;
  const FOURTH = 'fourth passphrase of paula';
  const change = (from: string, to: string, before?: () => Promise<void>) => changePassword(ctx.e, from, to, before);
  let failedOnce = false;
  // the refresh after the change fails once, as a server too busy to answer would
  const failRefresh = async () => {
    await page.route('**/api/identity/v1/session', async (route) => {
      if (!failedOnce && route.request().method() === 'POST' && (route.request().postData() ?? '').includes('refreshToken')) {
        failedOnce = true;
        await route.fulfill({ status: 503, contentType: 'application/problem+json', headers: { 'Retry-After': '1' }, body: JSON.stringify({ code: 'service_unavailable', detail: 'Busy.' }) });
      } else await route.continue();
    });
  };
  await change(THIRD, FOURTH, failRefresh);
  await page.getByRole('status').filter({ hasText: 'Your password was changed.' }).filter({ hasText: 'could not refresh its session' }).waitFor();
  await page.unroute('**/api/identity/v1/session');
  assert.ok(failedOnce);
  assert.is(await page.locator('.form-error').count(), 0, 'no "That did not work"');
  // back to the password the next test starts from
  await change(FOURTH, THIRD);
  await page.getByRole('status').filter({ hasText: 'Your password was changed.' }).waitFor();
});

A('a change answered after the page was left does not open the account page over the page gone to, also when the page signs in again (a reviewer\'s case); the password is changed all the same', async (ctx) => {
  const { page, base } = ctx.e;
  const FIFTH = 'fifth passphrase of paula';
  await page.goto(`${base}/`);
  await page.getByRole('heading', { level: 1, name: 'Welcome' }).waitFor();
  await page.getByRole('link', { name: /Your account: Paula Password/ }).click();
  await page.getByLabel('Current password', { exact: true }).fill(THIRD);
  await page.getByLabel('New password', { exact: true }).fill(FIFTH);
  await page.getByLabel('Confirm the new password').fill(FIFTH);
  const isChange = (u: URL) => u.pathname === `${ID}/users/me`;
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let held = false;
  await page.route(isChange, async (route) => {
    if (route.request().method() !== 'PATCH') return route.continue();
    held = true;
    await released;
    await route.continue().catch(() => undefined);
  });
  // the refresh after the change refused once, as if the server had ended this session too: the page signs in again
  let refused = false;
  const refuseRefresh = async () =>
    page.route('**/api/identity/v1/session', async (route) => {
      if (!refused && route.request().method() === 'POST' && (route.request().postData() ?? '').includes('refreshToken')) {
        refused = true;
        await route.fulfill({ status: 401, contentType: 'application/problem+json', body: JSON.stringify({ code: 'invalid_grant', detail: 'The session has ended.' }) });
      } else await route.continue();
    });
  let signedInAgain = false;
  const onFinished = (r: { method(): string; url(): string; postData(): string | null }) => {
    if (r.method() === 'POST' && r.url().endsWith('/session') && (r.postData() ?? '').includes('"password"')) signedInAgain = true;
  };
  page.on('requestfinished', onFinished);
  try {
    await page.getByRole('button', { name: 'Change password' }).click();
    await until(async () => held, 'the change on its way');
    await page.goBack();
    await page.waitForURL(`${base}/`);
    await page.getByRole('heading', { level: 1, name: 'Welcome' }).waitFor();
    await refuseRefresh();
    release();
    await until(async () => refused && signedInAgain, 'the refresh refused, then signed in again with the new password');
    await page.getByRole('button', { name: 'Sign out' }).first().waitFor();
    await page.evaluate('new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))');
    assert.is(new URL(page.url()).pathname, '/', 'still on the page Back went to');
    await page.getByRole('heading', { level: 1, name: 'Welcome' }).waitFor();
  } finally {
    release();
    page.off('requestfinished', onFinished);
    await page.unroute(isChange);
    await page.unroute('**/api/identity/v1/session');
  }
  assert.ok((await apiToken(ctx.e, EMAIL, FIFTH)).length > 0, 'changed all the same');
  // back to the password the next test starts from
  await changePassword(ctx.e, FIFTH, THIRD);
  await page.getByRole('status').filter({ hasText: 'Your password was changed.' }).waitFor();
});

A('should signing in again fail too, the sign-in page already shown says the password was changed, not that the session ended (a reviewer\'s case)', async (ctx) => {
  const { page, base } = ctx.e;
  const SIXTH = 'sixth passphrase of paula';
  await page.goto(`${base}/account`);
  await page.getByLabel('Current password', { exact: true }).fill(THIRD);
  await page.getByLabel('New password', { exact: true }).fill(SIXTH);
  await page.getByLabel('Confirm the new password').fill(SIXTH);
  // the refresh after the change refused, as if the server had ended this session too (the
  // sign-in page replaces the app at once), then the page's sign-in with the new password fails
  let refused = false;
  let failed = false;
  await page.route('**/api/identity/v1/session', async (route) => {
    const body = route.request().postData() ?? '';
    if (route.request().method() !== 'POST') return route.continue();
    if (!refused && body.includes('refreshToken')) {
      refused = true;
      await route.fulfill({ status: 401, contentType: 'application/problem+json', body: JSON.stringify({ code: 'invalid_grant', detail: 'The session has ended.' }) });
    } else if (refused && !failed && body.includes('"password"')) {
      failed = true;
      await route.fulfill({ status: 503, contentType: 'application/problem+json', body: JSON.stringify({ code: 'service_unavailable', detail: 'Busy.' }) });
    } else await route.continue();
  });
  try {
    await page.getByRole('button', { name: 'Change password' }).click();
    await until(async () => failed, 'the refresh refused, then the sign-in again failed');
    const notice = page.getByRole('status').filter({ hasText: 'Your password was changed. Sign in with the new password.' });
    await notice.waitFor();
    assert.is(new URL(page.url()).pathname, '/signin');
    await page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
    assert.is(await page.getByText('Your session ended').count(), 0, 'not "Your session ended": the user would try the old password');
  } finally {
    await page.unroute('**/api/identity/v1/session');
  }
  // the new password signs in
  await page.getByLabel('E-mail').fill(EMAIL);
  await page.getByLabel('Password').fill(SIXTH);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).first().waitFor();
  // and leads back to the account page, as after any ended session (it led to the start page)
  await page.getByRole('heading', { level: 1, name: 'Your account' }).waitFor();
  assert.is(new URL(page.url()).pathname, '/account');
  // back to the password the next test starts from
  await changePassword(ctx.e, SIXTH, THIRD);
  await page.getByRole('status').filter({ hasText: 'Your password was changed.' }).waitFor();
});

A('wrong current passwords count against the sign-in throttle: the pause is said with how long to wait', async (ctx) => {
  const { page } = ctx.e;
  for (let i = 0; i < 3; i++) {
    await page.getByLabel('Current password', { exact: true }).fill(`wrong guess ${i}`);
    await page.getByLabel('New password', { exact: true }).fill('fourth password of paula');
    await page.getByLabel('Confirm the new password').fill('fourth password of paula');
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.getByText('This is not your current password.').waitFor();
    await until(async () => !(await page.getByRole('button', { name: 'Change password' }).isDisabled()), 'the answer');
  }
  await page.getByLabel('Current password', { exact: true }).fill(THIRD);
  await page.getByRole('button', { name: 'Change password' }).click();
  const alert = page.locator('.form-error').filter({ hasText: 'Too many wrong passwords for this account.' });
  await alert.waitFor();
  assert.match(await alert.innerText(), /try again in \d+ (seconds|minutes)/);
});

A.run();
