// What the app says, as a black-box tester read it (thirty-third session): why an import or feed job
// failed is text in its row, not a tooltip; a new organization's first admin without an account
// gets a password field; the API's refusals are shown in plain words at the fields they are about,
// without ids or field paths; the service-account help does not promise a token lifetime.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { apiToken, dialogEntryGone, type E2E, hasFocus, ROOT_EMAIL, ROOT_PASSWORD, shoot, signInUi, start, until } from './harness.ts';
import { feedAndWait, uploadCsv, ID, LEDGER } from '../helpers.ts';


interface Ctx {
  e: E2E;
  token: string;
  orgId: string;
  ledgerId: string;
}
const M = suite<Ctx>('web application: job failures, new organizations, plain messages');
M.before(async (ctx) => {
  ctx.e = await start();
  const { e } = ctx;
  ctx.token = await apiToken(e, ROOT_EMAIL, ROOT_PASSWORD);
  ctx.orgId = (await e.call('POST', `${ID}/orgs`, { token: ctx.token, body: { name: 'Second Org' } })).body.id;
  ctx.ledgerId = (await e.call('POST', `${LEDGER}/orgs/${ctx.orgId}/ledgers`, { token: ctx.token, body: { name: 'Leads' } })).body.id;
  await signInUi(e.page, e.base, ROOT_EMAIL, ROOT_PASSWORD);
});
M.after(async (ctx) => ctx.e.close());

M('a failed import and a failed feed job say why in their rows, as text', async (ctx) => {
  const { page, base } = ctx.e;
  const { token } = ctx;
  // a quote never closed: the import fails at line 3
  const failed = await uploadCsv(ctx.e, token, ctx.orgId, ctx.ledgerId, 'name,company\nAda,Acme\n"Bob,Bolt\n', { fileName: 'broken.csv' });
  assert.is(failed.status, 'failed');
  assert.ok(failed.message, 'the job has a message');
  await page.goto(`${base}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}/imports`);
  const row = page.getByRole('region', { name: 'Imports' }).locator('tbody tr', { hasText: 'broken.csv' });
  await row.getByText(failed.message as string).waitFor();
  assert.ok(await row.getByText(failed.message as string).isVisible(), 'the reason is visible text');
  assert.match((await row.getAttribute('class')) ?? '', 'failed');

  // a feed of one record that cannot be applied fails, and the feed page says why
  const feed = await feedAndWait(ctx.e, token, '{"company":"Nobody Inc"}\n');
  assert.is(feed.status, 'failed');
  await page.goto(`${base}/feed`);
  const feedRow = page.getByRole('region', { name: 'Feed jobs' }).locator('tbody tr.failed').first();
  await feedRow.getByText(feed.message as string).waitFor();
  assert.ok(await feedRow.getByText(feed.message as string).isVisible());
  await shoot(page, 'feed-failed-job');
});

M("a new organization whose first admin has no account: a password field, the API's answer at it, gone once a password is typed", async (ctx) => {
  const { page, base } = ctx.e;
  const email = 'new.admin@neworg.test';
  await page.goto(`${base}/orgs/new`);
  await page.getByLabel('Name', { exact: true }).fill('Third Org');
  assert.is(await page.getByLabel("First admin's initial password").count(), 0, 'no password field before an e-mail');
  await page.getByLabel("First admin's e-mail").fill(email);
  const password = page.getByLabel("First admin's initial password");
  await password.waitFor();
  await page.getByRole('button', { name: 'Create organization' }).click();
  const fieldError = page.locator('.field-error');
  await fieldError.waitFor();
  assert.match(await fieldError.innerText(), `No user has the e-mail ${email}; give a password to create one.`);
  assert.is(await password.getAttribute('aria-invalid'), 'true');
  assert.not.match(await page.locator('main').innerText(), 'adminPassword');
  await until(() => hasFocus(password), 'focus on the password field');
  await shoot(page, 'new-org-needs-password');
  await password.fill('first admin password 1');
  // the refusal was about the empty password: typing one takes it away, as in the dialog forms
  assert.is(await fieldError.count(), 0, 'the message about the value before is gone');
  assert.is(await password.getAttribute('aria-invalid'), null);
  assert.is(await page.locator('.form-error').count(), 0);
  await page.getByLabel("First admin's name").fill('Nora New');
  await page.getByRole('button', { name: 'Create organization' }).click();
  await page.waitForURL(/\/orgs\/o_[^/]+\/ledgers$/);
  // the first admin can sign in with that password and is the organization's admin
  const r = await ctx.e.call('POST', `${ID}/session`, { body: { grantType: 'password', email, password: 'first admin password 1' } });
  assert.is(r.status, 200, r.text);
  assert.ok((r.body.orgs as { name: string; role: string }[]).some((o) => o.name === 'Third Org' && o.role === 'admin'), JSON.stringify(r.body.orgs));
});

M('team errors in plain words: the missing password at its field, the last admin without ids', async (ctx) => {
  const { page, base } = ctx.e;
  await page.goto(`${base}/orgs/${ctx.orgId}/team`);
  await page.getByRole('button', { name: 'Add member' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByLabel('E-mail').fill('ed@x.test');
  await dialog.getByRole('button', { name: 'Add member' }).click();
  await dialog.locator('.field-error').waitFor();
  const password = dialog.getByLabel('Initial password (for a new user)');
  assert.is(await password.getAttribute('aria-invalid'), 'true');
  assert.match(await dialog.locator('.field-error').innerText(), 'No user has the e-mail ed@x.test; give a password to create one.');
  assert.not.match(await dialog.innerText(), 'password:');
  assert.match(await dialog.locator('.form-error').innerText(), 'Check the marked field.');
  await dialog.getByRole('button', { name: 'Cancel' }).click();

  // the only admin made a viewer: the 409 names the organization by its name only
  await page.getByRole('combobox', { name: `Role of ${ROOT_EMAIL}` }).selectOption('viewer');
  const box = page.getByRole('alert').filter({ hasText: 'The role was not changed.' });
  await box.waitFor();
  const text = await box.innerText();
  assert.match(text, 'is the last admin of Second Org');
  assert.not.match(text, ctx.orgId);
  assert.not.match(text, /\(o_/);
  // and removing them
  await page.getByRole('button', { name: `Remove ${ROOT_EMAIL}` }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Remove member' }).click();
  const err = page.getByRole('dialog').locator('.form-error');
  await err.waitFor();
  assert.match(await err.innerText(), 'is the last admin of Second Org');
  assert.not.match(await err.innerText(), ctx.orgId);
  await page.keyboard.press('Escape');
});

M('something deleted meanwhile is named in words, not by the id the API gives', async (ctx) => {
  const { page, base, call } = ctx.e;
  const added = await call('POST', `${ID}/orgs/${ctx.orgId}/members`, { token: ctx.token, body: { email: 'gone.soon@x.test', role: 'viewer', password: 'a long enough passphrase 7' } });
  assert.is(added.status, 201, added.text);
  await page.goto(`${base}/orgs/${ctx.orgId}/team`);
  await page.getByRole('button', { name: 'Remove gone.soon@x.test' }).click();
  // removed meanwhile, in another tab
  assert.is((await call('DELETE', `${ID}/orgs/${ctx.orgId}/members/${added.body.userId}`, { token: ctx.token })).status, 204);
  await page.getByRole('dialog').getByRole('button', { name: 'Remove member' }).click();
  const err = page.getByRole('dialog').locator('.form-error');
  await err.waitFor();
  assert.match(await err.innerText(), 'This member does not exist (it may have been deleted meanwhile).');
  assert.not.match(await err.innerText(), /u_\w+/);
  await page.keyboard.press('Escape');
});

M('a success answer that is not the API\'s JSON (a captive portal\'s page, 200 text/html) is said in words, not as the parser\'s error', async (ctx) => {
  const { page, base } = ctx.e;
  const ledgers = (u: URL) => u.pathname === `/api/ledger/v1/orgs/${ctx.orgId}/ledgers`;
  await page.route(ledgers, (route) => route.fulfill({ status: 200, contentType: 'text/html', body: '<html>captive portal: sign in to the hotel network</html>' }));
  try {
    await page.goto(`${base}/orgs/${ctx.orgId}/ledgers`);
    const box = page.getByRole('alert').filter({ hasText: 'That did not work.' });
    await box.waitFor();
    const text = await box.innerText();
    assert.match(text, "The server answered 200 OK with a web page instead of the app's data: a proxy or a network's sign-in page may be answering in its place.");
    assert.not.match(text, /Unexpected token|JSON|<html>/);
  } finally {
    await page.unroute(ledgers);
  }
  await page.getByRole('button', { name: 'Try again' }).click();
  await page.getByRole('link', { name: 'Leads' }).first().waitFor();
});

M("the service account's help names no token lifetime of its own: the answer's expiresIn says it", async (ctx) => {
  const { page, base } = ctx.e;
  await page.goto(`${base}/orgs/${ctx.orgId}/service-accounts`);
  await page.getByRole('button', { name: 'New service account' }).click();
  await page.getByRole('dialog').getByLabel('Name').fill('Reporting');
  await page.getByRole('dialog').getByRole('button', { name: 'Create' }).click();
  const dialog = page.getByRole('dialog', { name: 'Reporting is ready' });
  await dialog.getByText('How the integration signs in').click();
  const help = await dialog.locator('details').innerText();
  assert.match(help, 'expiresIn');
  assert.not.match(help, 'one hour');
  await dialog.getByRole('button', { name: 'I have stored the secret' }).click();
  await dialogEntryGone(page);
});

M('Back with a secret shown once closes its dialog and stays on the page (a web tester lost one); closed by its button, Back leaves the page as before', async (ctx) => {
  const { page, base } = ctx.e;
  await page.goto(`${base}/orgs/${ctx.orgId}/ledgers`);
  await page.getByRole('link', { name: 'Service accounts' }).first().click();
  await page.getByRole('button', { name: 'New service account' }).waitFor();
  const create = async (name: string) => {
    await page.getByRole('button', { name: 'New service account' }).click();
    await page.getByRole('dialog').getByLabel('Name').fill(name);
    await page.getByRole('dialog').getByRole('button', { name: 'Create' }).click();
    await page.getByRole('dialog', { name: `${name} is ready` }).waitFor();
  };
  await create('Back once');
  await page.goBack();
  await page.getByRole('dialog', { name: 'Back once is ready' }).waitFor({ state: 'detached' });
  assert.match(page.url(), /\/service-accounts$/, 'still on the page');
  await page.getByRole('row', { name: /Back once/ }).waitFor();
  // a reload with one open leaves its entry; the next one's Back still closes it (a reviewer's case: the same mark after the reload swallowed Back)
  await create('Back reloaded');
  await page.reload();
  await page.getByRole('row', { name: /Back reloaded/ }).waitFor();
  await create('Back after reload');
  await page.goBack();
  await page.getByRole('dialog', { name: 'Back after reload is ready' }).waitFor({ state: 'detached' });
  assert.match(page.url(), /\/service-accounts$/);
  await create('Back twice');
  const mark = await page.evaluate('history.state && history.state.dialog');
  await page.getByRole('dialog', { name: 'Back twice is ready' }).getByRole('button', { name: 'I have stored the secret' }).click();
  await page.getByRole('dialog').waitFor({ state: 'detached' });
  // its history step is taken back as it closes, asynchronously: a Back before that raced it
  await until(async () => (await page.evaluate('history.state && history.state.dialog')) !== mark, 'the dialog\'s history step gone', 5000);
  await page.goBack();
  // (the entry the reload left is one step: the page itself, again)
  await page.goBack();
  await until(async () => /\/ledgers$/.test(page.url()), 'Back to the ledgers, the dialog leaving no step behind', 5000);
});

/**
 * Each secret shown once — a new service account (`account`), its rotated secret, a new webhook
 * (`url`), its rotated secret — asked for on a page of Second Org, its POST held with page.route
 * while the browser's Back leaves the page and `away` goes on from there, then let through: the
 * dialog the shell shows is `title(its usual title)` (exactly), over the page `at`, with the secret
 * the server answered.
 */
async function lateSecrets(ctx: Ctx, names: { account: string; url: string }, opts: { away: () => Promise<void>; at: string; title: (usual: string) => string }): Promise<void> {
  const { page, base } = ctx.e;
  const ledgers = `/orgs/${ctx.orgId}/ledgers`;
  const orgPath = (api: string) => `${api}/orgs/${ctx.orgId}`;
  const cases = [
    {
      what: 'a new service account',
      tab: 'Service accounts',
      start: async () => {
        await page.getByRole('button', { name: 'New service account' }).click();
        await page.getByRole('dialog').getByLabel('Name').fill(names.account);
        await page.getByRole('dialog').getByRole('button', { name: 'Create' }).click();
      },
      isPost: (u: URL) => u.pathname === `${orgPath(ID)}/service-accounts`,
      dialog: `${names.account} is ready`,
      label: 'client secret',
      secret: (b: Record<string, string>) => b.clientSecret,
    },
    {
      what: 'a rotated service-account secret',
      tab: 'Service accounts',
      start: async () => {
        await page.getByRole('button', { name: `Rotate the secret of ${names.account}` }).click();
        await page.getByRole('dialog').getByRole('button', { name: 'Rotate secret' }).click();
      },
      isPost: (u: URL) => u.pathname.startsWith(`${orgPath(ID)}/service-accounts/`) && u.pathname.endsWith('/rotate'),
      dialog: `New secret for ${names.account}`,
      label: 'client secret',
      secret: (b: Record<string, string>) => b.clientSecret,
    },
    {
      what: 'a new webhook',
      tab: 'Webhooks',
      start: async () => {
        await page.getByRole('button', { name: 'New webhook' }).click();
        await page.getByRole('dialog').getByLabel('URL').fill(names.url);
        await page.getByRole('dialog').getByRole('button', { name: 'Create webhook' }).click();
      },
      isPost: (u: URL) => u.pathname === `${orgPath(LEDGER)}/webhooks`,
      dialog: 'Webhook created',
      label: 'signing secret',
      secret: (b: Record<string, string>) => b.secret,
    },
    {
      what: "a webhook's rotated secret",
      tab: 'Webhooks',
      start: async () => {
        await page.getByRole('button', { name: `Rotate secret of ${names.url}` }).click();
        await page.getByRole('dialog').getByRole('button', { name: 'Rotate secret' }).click();
      },
      isPost: (u: URL) => u.pathname.startsWith(`${orgPath(LEDGER)}/webhooks/`) && u.pathname.endsWith('/rotate'),
      dialog: 'New signing secret',
      label: 'signing secret',
      secret: (b: Record<string, string>) => b.secret,
    },
  ];
  for (const c of cases) {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let held = false;
    let answer: Record<string, string> | undefined;
    await page.route(c.isPost, async (route) => {
      if (route.request().method() !== 'POST') return route.continue();
      held = true;
      await released;
      const res = await route.fetch();
      answer = (await res.json()) as Record<string, string>;
      await route.fulfill({ response: res });
    });
    try {
      await page.goto(`${base}${ledgers}`);
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: c.tab }).click();
      await c.start();
      await until(async () => held, `${c.what}: the request on its way`);
      // the dialog waits for the answer; the browser's Back does not
      await page.goBack();
      await page.waitForURL(`${base}${ledgers}`);
      await page.getByRole('heading', { level: 1, name: 'Ledgers' }).waitFor();
      await opts.away();
      release();
      const dialog = page.getByRole('dialog', { name: opts.title(c.dialog), exact: true });
      await dialog.waitFor();
      assert.ok(answer, `${c.what}: answered`);
      assert.is(await dialog.getByLabel(c.label, { exact: true }).inputValue(), c.secret(answer!), `${c.what}: the secret the server answered is shown`);
      assert.is(new URL(page.url()).pathname, opts.at, `${c.what}: on the page gone to`);
      if (c.label === 'client secret') {
        const signedIn = await ctx.e.call('POST', `${ID}/session`, { body: { grantType: 'clientCredentials', clientId: answer!.clientId, clientSecret: answer!.clientSecret } });
        assert.is(signedIn.status, 200, `${c.what}: the secret shown works`);
      }
      await dialog.getByRole('button', { name: 'I have stored the secret' }).click();
      await dialog.waitFor({ state: 'detached' });
      await dialogEntryGone(page);
      assert.is(new URL(page.url()).pathname, opts.at, `${c.what}: closing it leaves the page where it is`);
    } finally {
      release();
      await page.unroute(c.isPost);
    }
  }
}

M('a secret answered after Back left its page is shown all the same, over the page Back led to (a reviewer\'s case: the credential was made, and its secret shown to nobody)', async (ctx) => {
  // over a page of its own organization, the title as on its page: the header names the organization
  await lateSecrets(ctx, { account: 'Late sync', url: 'https://hooks.example.test/late' }, { away: async () => undefined, at: `/orgs/${ctx.orgId}/ledgers`, title: (usual) => usual });
});

M("a secret answered once another organization is shown names its own in the dialog's title (a reviewer's case: nothing said whose credential it was)", async (ctx) => {
  const { page, base } = ctx.e;
  const other = (await ctx.e.call('POST', `${ID}/orgs`, { token: ctx.token, body: { name: 'Elsewhere Org' } })).body.id as string;
  await lateSecrets(ctx, { account: 'Far sync', url: 'https://hooks.example.test/far' }, {
    // Back, then the switcher to another organization, before the answer
    away: async () => {
      await page.getByLabel('Organization').selectOption(other);
      await page.waitForURL(`${base}/orgs/${other}/ledgers`);
      await page.getByRole('heading', { level: 1, name: 'Ledgers' }).waitFor();
    },
    at: `/orgs/${other}/ledgers`,
    title: (usual) => `${usual} in Second Org`,
  });
});

M.run();
