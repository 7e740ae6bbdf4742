// Sessions in the browser (docs/web.md): the access token only in memory, the refresh token in an
// httpOnly SameSite=Strict cookie; a reload keeps the session, two tabs refreshing at once do not
// trip the refresh-token re-use detection, sign-out ends the session everywhere.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { apiToken, ROOT_EMAIL, ROOT_PASSWORD, shoot, signInUi, start, until, type E2E } from './harness.ts';

const S = suite<{ e: E2E }>('web application: sessions');
S.before(async (ctx) => {
  ctx.e = await start({ LOGIN_MAX_FAILURES_PER_ACCOUNT: '3' });
});
S.after(async (ctx) => ctx.e.close());

const signedIn = (page: E2E['page']) => page.getByRole('button', { name: 'Sign out' }).waitFor({ state: 'attached' });

S('sign in with the keyboard alone', async ({ e }) => {
  const { page, base } = e;
  await page.goto(`${base}/orgs/o_nowhere/ledgers`);
  await page.waitForURL(/\/signin\?next=/);
  await page.getByLabel('E-mail').focus();
  await page.keyboard.type(ROOT_EMAIL);
  await page.keyboard.press('Tab');
  await page.keyboard.type(ROOT_PASSWORD);
  await page.keyboard.press('Enter');
  await signedIn(page);
  // back where it wanted to go (an organization that does not exist: a clear not-found page)
  await page.waitForURL(/\/orgs\/o_nowhere\/ledgers$/);
  await page.getByRole('heading', { name: 'Not found' }).waitFor();
});

S('no token in storage; the refresh token is an httpOnly, SameSite=Strict cookie on the session path', async ({ e }) => {
  const { page, context } = e;
  const stored = await page.evaluate(() => JSON.stringify({ local: { ...localStorage }, session: { ...sessionStorage } }));
  assert.not.match(stored, /clr_|eyJ|accessToken|refresh/i);
  const cookies = await context.cookies();
  assert.is(cookies.length, 1, JSON.stringify(cookies.map((c) => c.name)));
  const c = cookies[0]!;
  assert.is(c.name, 'cl_refresh');
  assert.ok(c.httpOnly);
  assert.is(c.sameSite, 'Strict');
  assert.is(c.path, '/api/identity/v1/session');
  const fromScript = await page.evaluate('document.cookie');
  assert.is(fromScript, '', 'page scripts cannot read it');
});

S('a reload keeps the session', async ({ e }) => {
  const { page, base } = e;
  await page.goto(`${base}/`);
  await signedIn(page);
  for (let i = 0; i < 3; i++) {
    await page.reload();
    await signedIn(page);
  }
  assert.ok((await page.locator('.who').innerText()).includes('Administrator'));
});

S('two tabs reloading at the same moment both stay signed in (refreshes are serialized)', async ({ e }) => {
  const { page, context, base } = e;
  const second = await context.newPage();
  await second.goto(`${base}/`);
  await signedIn(second);
  for (let i = 0; i < 4; i++) {
    await Promise.all([page.reload(), second.reload()]);
    await Promise.all([signedIn(page), signedIn(second)]);
  }
  // and the session is still good: a third reload works (a detected re-use would have revoked it)
  await page.reload();
  await signedIn(page);
  await second.close();
});

S('sign-out ends the session: the cookie is gone, a reload asks to sign in, other tabs sign out too', async ({ e }) => {
  const { page, context, base } = e;
  const other = await context.newPage();
  await other.goto(`${base}/`);
  await signedIn(other);
  const before = (await context.cookies())[0]!.value;
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(/\/signin$/);
  await other.waitForURL(/\/signin/);
  assert.is((await context.cookies()).length, 0, 'the cookie is cleared');
  await page.reload();
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  // the old refresh token is revoked on the server, not just forgotten here
  const r = await e.call('POST', '/api/identity/v1/session', { body: { grantType: 'refreshToken', refreshToken: before } });
  assert.is(r.status, 401);
  await other.close();
});

S('a session that ended by itself (its refresh refused, in the page or at a reload) is said on the sign-in page; a first visit or a sign-out is not', async ({ e }) => {
  const { page, context, base } = e;
  const ended = page.getByText('Your session ended. Sign in again.');
  await page.goto(`${base}/`);
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  assert.is(await ended.count(), 0, 'not on a first visit');
  const orgId = (await e.call('POST', '/api/identity/v1/orgs', { token: await apiToken(e, ROOT_EMAIL, ROOT_PASSWORD), body: { name: 'Session Org' } })).body.id;
  await signInUi(page, base, ROOT_EMAIL, ROOT_PASSWORD);
  await page.waitForURL(new RegExp(`/orgs/${orgId}/ledgers$`));
  // the session ends: its refresh cookie is gone, and the next request is answered 401 (as an
  // expired access token is); the app's one refresh is refused by the server
  await context.clearCookies();
  await page.route('**/members?**', (route) => route.fulfill({ status: 401, contentType: 'application/problem+json', body: JSON.stringify({ status: 401, title: 'Unauthorized', code: 'unauthenticated', detail: 'Expired.', message: 'Expired.' }) }), { times: 1 });
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Team' }).click();
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  await ended.waitFor({ timeout: 5000 });
  await page.unrouteAll({ behavior: 'ignoreErrors' });
  // signed in again; the session is then ended elsewhere (its refresh token used by someone else:
  // the server revokes the whole session) and the page reloaded: said too (it was not, after a reload)
  await page.getByLabel('E-mail').fill(ROOT_EMAIL);
  await page.getByLabel('Password').fill(ROOT_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).first().waitFor(); // back where it was (the team page)
  const cookie = (await context.cookies())[0]!.value;
  assert.is((await e.call('POST', '/api/identity/v1/session', { body: { grantType: 'refreshToken', refreshToken: cookie } })).status, 200, 'used once, elsewhere');
  await page.reload();
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  await ended.waitFor({ timeout: 5000 });
  // signed in again, then signed out on purpose: no such message
  await page.getByLabel('E-mail').fill(ROOT_EMAIL);
  await page.getByLabel('Password').fill(ROOT_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).first().click();
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  assert.is(await ended.count(), 0, 'not after a sign-out');
});

S('a sign-out keeps no deep link: the next person to sign in on this browser lands on their own start page, not on the page of the one who signed out (a tester\'s case)', async ({ e }) => {
  const { page, context, base } = e;
  const token = await apiToken(e, ROOT_EMAIL, ROOT_PASSWORD);
  const orgId = (await e.call('POST', '/api/identity/v1/orgs', { token, body: { name: 'Left Behind Org' } })).body.id as string;
  const ledgerId = (await e.call('POST', `/api/ledger/v1/orgs/${orgId}/ledgers`, { token, body: { name: 'Private leads' } })).body.id as string;
  const other = await e.call('POST', '/api/identity/v1/orgs', { token, body: { name: 'Next User Org', adminEmail: 'next.user@session.test', adminName: 'Next User', adminPassword: 'next user passphrase 4' } });
  assert.is(other.status, 201, other.text);
  // signed in from a link (kept as next), then on through the app to a filtered list: one page load
  await page.goto(`${base}/orgs/${orgId}/ledgers`);
  await page.getByLabel('E-mail').fill(ROOT_EMAIL);
  await page.getByLabel('Password').fill(ROOT_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('link', { name: 'Private leads' }).click();
  await page.getByRole('heading', { level: 1, name: 'Private leads' }).waitFor();
  await page.getByText('More filters').click();
  await page.getByLabel('E-mail (exact)').fill('searched@secret.test');
  await page.getByLabel('E-mail (exact)').press('Enter');
  await page.waitForURL((u) => u.pathname === `/orgs/${orgId}/ledgers/${ledgerId}` && u.searchParams.get('email') === 'searched@secret.test');
  const second = await context.newPage();
  await second.goto(`${base}/orgs/${orgId}/team`);
  await signedIn(second);
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  assert.is(new URL(page.url()).pathname + new URL(page.url()).search, '/signin', 'no next after a sign-out');
  await until(async () => new URL(second.url()).pathname === '/signin', 'the other tab on the sign-in page');
  assert.is(new URL(second.url()).search, '', 'no next in the other tab either');
  await second.close();
  // Back to the pages of the user who signed out (the list before the filter): the sign-in page, still without them as next
  await page.goBack();
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  assert.not.match(page.url(), 'next=');
  // the next person signs in and gets their own organization, not the ledger of the one before
  await page.getByLabel('E-mail').fill('next.user@session.test');
  await page.getByLabel('Password').fill('next user passphrase 4');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await signedIn(page);
  await until(async () => new URL(page.url()).pathname === `/orgs/${other.body.id}/ledgers`, 'their own organization opened');
  assert.is(await page.getByRole('heading', { name: 'Not found' }).count(), 0);
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
});

S('the organization last opened is remembered for each user of the browser: the next one to sign in opens their own, and one they may no longer open is forgotten (a tester\'s case)', async ({ e }) => {
  const { page, base } = e;
  const ID = '/api/identity/v1';
  const token = await apiToken(e, ROOT_EMAIL, ROOT_PASSWORD);
  const ann = { email: 'ann@last-org.test', password: 'ann passphrase of orgs 5' };
  const ben = { email: 'ben@last-org.test', password: 'ben passphrase of orgs 6' };
  // two organizations, Ann the admin of both, Ben a viewer of both
  const first = await e.call('POST', `${ID}/orgs`, { token, body: { name: 'Shared Alpha', adminEmail: ann.email, adminName: 'Ann', adminPassword: ann.password } });
  assert.is(first.status, 201, first.text);
  const second = await e.call('POST', `${ID}/orgs`, { token, body: { name: 'Shared Beta', adminEmail: ann.email } });
  assert.is(second.status, 201, second.text);
  const added = await e.call('POST', `${ID}/orgs/${first.body.id}/members`, { token, body: { email: ben.email, name: 'Ben', role: 'viewer', password: ben.password } });
  assert.is(added.status, 201, added.text);
  assert.is((await e.call('POST', `${ID}/orgs/${second.body.id}/members`, { token, body: { email: ben.email, role: 'viewer' } })).status, 201);
  const benId = added.body.userId as string;
  // as the app lists them for Ben: x is the one his start page opens first, y the other
  const [x, y] = ((await e.call('GET', `${ID}/orgs?limit=1000`, { token: await apiToken(e, ben.email, ben.password) })).body.orgs as { id: string }[]).map((o) => o.id) as [string, string];
  const stored = () => page.evaluate('Object.values(localStorage)') as Promise<string[]>;
  const open = async (orgId: string) => {
    await page.goto(`${base}/orgs/${orgId}/ledgers`);
    await page.getByRole('heading', { level: 1, name: 'Ledgers' }).waitFor();
    await until(async () => (await stored()).includes(orgId), 'the organization remembered');
  };
  const signOut = async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  };
  const startPage = async (who: string, path: string) => {
    await until(async () => new URL(page.url()).pathname === path, `${who}'s start page: ${path}`);
    await page.getByRole('heading', { level: 1 }).waitFor();
    assert.is(await page.getByRole('heading', { name: 'Not found' }).count(), 0, `${who}: no "Not found"`);
  };

  try {
    await signInUi(page, base, ben.email, ben.password);
    await startPage('Ben, the first time', `/orgs/${x}/ledgers`);
    await open(y);
    await signOut();
    await signInUi(page, base, ann.email, ann.password);
    await open(x);
    await signOut();
    // Ben's own, not the one Ann opened last on this browser
    await signInUi(page, base, ben.email, ben.password);
    await startPage('Ben', `/orgs/${y}/ledgers`);
    await signOut();

    // Ben removed from both: his start page says he has none, and what he had opened is forgotten
    for (const orgId of [x, y]) assert.is((await e.call('DELETE', `${ID}/orgs/${orgId}/members/${benId}`, { token })).status, 204);
    await signInUi(page, base, ben.email, ben.password);
    await startPage('Ben, a member of nothing', '/');
    await page.getByText('You are not a member of any organization yet.').waitFor();
    assert.not.ok((await stored()).includes(y), `Ben's organization forgotten: ${JSON.stringify(await stored())}`);
    await signOut();
    // and Ann's is still hers
    await signInUi(page, base, ann.email, ann.password);
    await startPage('Ann', `/orgs/${x}/ledgers`);
    await signOut();
  } finally {
    // a failure leaves nobody signed in for the next test
    if (await page.getByRole('button', { name: 'Sign out' }).count()) await signOut();
  }
});

/** Whether focus is on the sign-in form's error message (FormError: the alert, focusable). */
const focusOnAlert = (page: E2E['page']) => page.evaluate('document.activeElement?.getAttribute("role") === "alert" && document.activeElement.classList.contains("form-error")') as Promise<boolean>;

S('a refused sign-in is said in words, never the API\'s or the parser\'s message, and focus goes to it (it fell to the page)', async ({ e }) => {
  const { page, base } = e;
  await page.goto(`${base}/signin`);
  await page.getByLabel('E-mail').waitFor();
  const attempt = async (email: string) => {
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
  };
  // a wrong password (an account that does not exist: the throttle test below counts the superuser's)
  await attempt('nobody@example.com');
  const alert = page.locator('.form-error');
  await alert.getByText('The e-mail or password is incorrect.').waitFor();
  await until(() => focusOnAlert(page), 'focus on the message after a wrong password', 5000);

  // the sign-in answered by someone else: a captive portal's page, 200 text/html
  const answers: Record<string, { status: number; contentType: string; body: string } | 'abort'> = {
    portal: { status: 200, contentType: 'text/html', body: '<html>captive portal: sign in to the hotel network</html>' },
    badRequest: { status: 400, contentType: 'application/problem+json', body: JSON.stringify({ code: 'invalid_request', detail: 'grantType: Invalid discriminator value', errors: [{ path: 'grantType', message: 'Invalid discriminator value' }] }) },
    down: 'abort',
  };
  let answer: keyof typeof answers = 'portal';
  await page.route('**/api/identity/v1/session', async (route) => {
    if (!(route.request().postData() ?? '').includes('"password"')) return route.continue();
    const a = answers[answer]!;
    if (a === 'abort') return route.abort('connectionrefused');
    return route.fulfill(a);
  });
  try {
    await attempt(ROOT_EMAIL);
    await alert.getByText("The server answered 200 OK with a web page instead of the app's data", { exact: false }).waitFor();
    assert.not.match(await alert.innerText(), /Unexpected token|JSON/);
    await until(() => focusOnAlert(page), 'focus on the message after an answer that is not JSON', 5000);
    await shoot(page, '26a-signin-captive-portal');

    answer = 'badRequest';
    await attempt(ROOT_EMAIL);
    await alert.getByText('The server did not accept this sign-in (it answered 400).', { exact: false }).waitFor();
    assert.not.match(await alert.innerText(), /grantType|discriminator/);
    await until(() => focusOnAlert(page), 'focus on the message after a 400', 5000);

    answer = 'down';
    await attempt(ROOT_EMAIL);
    await alert.getByText('The server cannot be reached.', { exact: false }).waitFor();
    await until(() => focusOnAlert(page), 'focus on the message when the server is down', 5000);
  } finally {
    await page.unroute('**/api/identity/v1/session');
  }
});

S('throttling: repeated failures say when to try again', async ({ e }) => {
  const { page, base } = e;
  await page.goto(`${base}/signin`);
  for (let i = 0; i < 3; i++) {
    await page.getByLabel('E-mail').fill(ROOT_EMAIL);
    await page.getByLabel('Password').fill(`wrong password ${i}`);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('The e-mail or password is incorrect.').waitFor();
  }
  await page.getByLabel('Password').fill(ROOT_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByText(/Too many failed attempts\. .* try again in \d+ (seconds|minutes)\./).waitFor();
  await until(() => focusOnAlert(page), 'focus on the message when throttled (it stayed on the page)', 5000);
  await shoot(page, '26-signin-throttled');
});

S.run();
