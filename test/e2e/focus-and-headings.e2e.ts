// A web tester's findings (forty-fourth session): focus that fell to <body> — signing in, the
// contacts list's "Clear the filters", Back and Forward between its pages, a "Not found" page
// after access was lost —, dialogs that opened on "×" (a secret shown once, a deletion), values of
// a hand-edited URL ignored or named wrongly, dates of a contact's page, and missing headings.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { apiToken, hasFocus, ROOT_EMAIL, ROOT_PASSWORD, start, until, type E2E } from './harness.ts';
import { addContacts, ID, LEDGER } from '../helpers.ts';

interface Ctx {
  e: E2E;
  token: string;
  orgId: string;
  ledgerId: string;
}
const F = suite<Ctx>('web application: focus after sign-in, paging and dialogs; hand-edited list URLs; headings');
F.before(async (ctx) => {
  ctx.e = await start();
  const { e } = ctx;
  ctx.token = await apiToken(e, ROOT_EMAIL, ROOT_PASSWORD);
  const token = ctx.token;
  ctx.orgId = (await e.call('POST', `${ID}/orgs`, { token, body: { name: 'Focus Org' } })).body.id;
  ctx.ledgerId = (await e.call('POST', `${LEDGER}/orgs/${ctx.orgId}/ledgers`, { token, body: { name: 'Focus list' } })).body.id;
  const contacts = Array.from({ length: 60 }, (_, i) => ({ name: `Person ${String(i).padStart(2, '0')}`, company: 'Acme', title: 'Engineer', email: `p${i}@focus.test` }));
  assert.is((await addContacts(e, token, ctx.orgId, ctx.ledgerId, contacts)).status, 'completed');
});
F.after(async (ctx) => ctx.e.close());

const listUrl = (ctx: Ctx, query = '') => `${ctx.e.base}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}${query}`;
const rows = (ctx: Ctx) => ctx.e.page.getByRole('region', { name: 'Contacts' }).locator('tbody tr');
const main = (ctx: Ctx) => ctx.e.page.locator('#main');

F('the sign-in page starts in E-mail; signed in, the page of `next` has focus on its content', async (ctx) => {
  const { page } = ctx.e;
  await page.goto(listUrl(ctx, '?limit=25'));
  await page.waitForURL(/\/signin\?next=/);
  await until(() => hasFocus(page.getByLabel('E-mail')), 'focus in E-mail', 5000);
  await page.keyboard.type(ROOT_EMAIL);
  await page.keyboard.press('Tab');
  await page.keyboard.type(ROOT_PASSWORD);
  await page.keyboard.press('Enter');
  await page.waitForURL(/\/ledgers\/[^/?]+\?limit=25$/);
  await until(async () => (await rows(ctx).count()) === 25, 'the list of `next`');
  await until(() => hasFocus(main(ctx)), 'focus on the page content, not the body', 5000);
});

F('Back and Forward between pages of the list: focus on the list heading, naming the page', async (ctx) => {
  const { page } = ctx.e;
  await page.goto(listUrl(ctx, '?limit=25&sortBy=-name'));
  await until(async () => (await rows(ctx).count()) === 25, 'the first page');
  await page.getByRole('button', { name: 'Next' }).click();
  await until(async () => (await rows(ctx).first().innerText()).includes('Person 34'), 'the second page');
  await page.getByRole('button', { name: 'Next' }).click();
  await until(async () => (await rows(ctx).count()) === 10, 'the third page');
  const heading = (name: string) => page.getByRole('heading', { level: 2, name, exact: true });
  await page.goBack();
  await until(async () => (await rows(ctx).first().innerText()).includes('Person 34'), 'the second page again');
  await until(() => hasFocus(heading('Contacts, page 2')), 'focus on the heading of page 2', 5000);
  await page.goBack();
  await until(async () => (await rows(ctx).first().innerText()).includes('Person 59'), 'the first page again');
  await until(() => hasFocus(heading('Contacts')), 'focus on the heading of the first page', 5000);
  await page.goForward();
  await until(async () => (await rows(ctx).first().innerText()).includes('Person 34'), 'the second page by Forward');
  await until(() => hasFocus(heading('Contacts, page 2')), 'focus on the heading after Forward', 5000);
});

F('"Clear the filters" in the empty result gives focus to the form\'s Clear; headings of the filters and the list', async (ctx) => {
  const { page } = ctx.e;
  await page.goto(listUrl(ctx, '?name=nobody'));
  await page.getByText('No contact matches these filters.').waitFor();
  await page.getByRole('button', { name: 'Clear the filters' }).click();
  await page.locator('p.count', { hasText: '60 contacts' }).waitFor();
  await until(() => hasFocus(page.getByRole('button', { name: 'Clear', exact: true })), 'focus on Clear', 5000);
  await page.getByRole('heading', { level: 2, name: 'Filter contacts' }).waitFor({ state: 'attached' });
  assert.is(await page.getByRole('form', { name: 'Filter contacts' }).count(), 1, 'the form named by its heading');
  // the Title filter's label names its field: the heading's id was the field's too (flt-title), and
  // the label named the heading (a web tester's case)
  assert.is(await page.getByLabel('Title contains', { exact: true }).evaluate((el) => el.tagName), 'INPUT');
  const repeated = await page.evaluate("(() => { const ids = [...document.querySelectorAll('[id]')].map((el) => el.id); return ids.filter((id, i) => ids.indexOf(id) !== i); })()");
  assert.equal(repeated, [], 'every id on the page once');
  await page.getByRole('heading', { level: 2, name: 'Contacts', exact: true }).waitFor({ state: 'attached' });
});

F('a page size the list does not offer: the URL is corrected and a notice says so', async (ctx) => {
  const { page } = ctx.e;
  await page.goto(listUrl(ctx, '?limit=7&name=Person'));
  await until(async () => !new URL(page.url()).searchParams.has('limit'), 'limit taken out of the URL', 5000);
  assert.is(new URL(page.url()).searchParams.get('name'), 'Person', 'the filter kept');
  assert.match(await page.getByRole('status').filter({ hasText: 'per page' }).innerText(), /“7” contacts per page, which the list does not offer \(25, 50, 100\), so it shows 50 per page/);
  assert.is(await page.getByLabel('Per page').inputValue(), '50');
  await until(async () => (await rows(ctx).count()) === 50, '50 rows');
});

F('a refused "on or before" is named by the link\'s value, not as the last day included', async (ctx) => {
  const { page } = ctx.e;
  await page.goto(listUrl(ctx, '?createdBefore=2026-02-30'));
  const alert = page.locator('#list-refused');
  await alert.waitFor();
  const text = await alert.innerText();
  assert.match(text, 'createdBefore=2026-02-30');
  assert.match(text, '“Added on or before” the day before it');
  assert.not.match(text, '“Added on or before” is “2026-02-30”');
  // the field shows no day Date rolled 30 February over to
  assert.is(await page.getByLabel('Added on or before').inputValue(), '');
});

F('a contact\'s page shows its days as the list does (UTC days); deleting it opens on Cancel', async (ctx) => {
  const { page } = ctx.e;
  await page.goto(listUrl(ctx));
  await page.getByRole('link', { name: 'Person 00' }).click();
  await page.getByRole('heading', { level: 1, name: 'Person 00' }).waitFor();
  const added = page.locator('dt', { hasText: 'Added' }).locator('xpath=following-sibling::dd[1]');
  assert.match(await added.innerText(), /^\d{1,2} \w{3} \d{4}$/, 'a day, no time of day');
  await page.getByRole('button', { name: 'Delete' }).click();
  const dialog = page.getByRole('dialog', { name: 'Delete Person 00?' });
  await dialog.waitFor();
  await until(() => hasFocus(dialog.getByRole('button', { name: 'Cancel' })), 'focus on Cancel', 5000);
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'detached' });
});

F('import history has its heading; a new service account opens on its secret; deleting a ledger opens on Cancel', async (ctx) => {
  const { page } = ctx.e;
  await page.goto(listUrl(ctx, '/imports'));
  await page.getByRole('heading', { level: 2, name: 'Import history' }).waitFor({ state: 'attached' });

  await page.goto(`${ctx.e.base}/orgs/${ctx.orgId}/service-accounts`);
  await page.getByRole('button', { name: 'New service account' }).click();
  const form = page.getByRole('dialog', { name: 'New service account' });
  await form.getByLabel('Name').fill('focus sync');
  await form.getByRole('button', { name: 'Create' }).click();
  const secret = page.getByRole('textbox', { name: 'client secret' });
  await secret.waitFor();
  await until(() => hasFocus(secret), 'focus on the secret, not on "×"', 5000);
  // Enter there keeps it (on "×" it closed the dialog)
  await page.keyboard.press('Enter');
  assert.ok(await secret.isVisible(), 'still shown');
  const mark = await page.evaluate('history.state && history.state.dialog');
  await page.getByRole('button', { name: 'I have stored the secret' }).click();
  // the dialog takes its history step back as it closes (asynchronously): a goto meanwhile was aborted
  await until(async () => (await page.evaluate('history.state && history.state.dialog')) !== mark, 'the dialog\'s history step gone', 5000);

  await page.goto(`${ctx.e.base}/orgs/${ctx.orgId}/ledgers`);
  await page.getByRole('button', { name: 'Delete Focus list' }).click();
  const dialog = page.getByRole('dialog', { name: 'Delete "Focus list"?' });
  await until(() => hasFocus(dialog.getByRole('button', { name: 'Cancel' })), 'focus on Cancel', 5000);
  await dialog.getByRole('button', { name: 'Cancel' }).click();
});

F('access lost: the "Not found" page has focus on its heading and says so in the window title', async (ctx) => {
  const { page } = ctx.e;
  const viewer = { email: 'viewer@focus.test', password: 'viewer password 1' };
  const added = await ctx.e.call('POST', `${ID}/orgs/${ctx.orgId}/members`, { token: ctx.token, body: { ...viewer, role: 'viewer', name: 'Vera Viewer' } });
  assert.is(added.status, 201, added.text);
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(/\/signin/);
  await page.goto(listUrl(ctx, '?limit=25'));
  await page.getByLabel('E-mail').fill(viewer.email);
  await page.getByLabel('Password').fill(viewer.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await until(async () => (await rows(ctx).count()) === 25, 'the viewer sees the list');
  const removed = await ctx.e.call('DELETE', `${ID}/orgs/${ctx.orgId}/members/${added.body.userId}`, { token: ctx.token });
  assert.ok(removed.status < 300, removed.text);
  await page.getByRole('button', { name: 'Next' }).click();
  const heading = page.getByRole('heading', { level: 1, name: 'Not found' });
  await heading.waitFor();
  await until(() => hasFocus(heading), 'focus on the heading, not the body', 5000);
  assert.is(await page.title(), 'Not found · contact-ledger');
});

F.run();
