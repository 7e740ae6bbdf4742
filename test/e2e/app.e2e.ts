// The web application end to end, as a person uses it (issue 6 "Done when"): set up an organization
// and a team, import a CSV, see who changed jobs since last week, download them, and hand a
// service-account credential to an integration; a viewer sees no editing controls.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { chromium } from 'playwright-core';
import { apiToken, CHROMIUM, dialogEntryGone, type E2E, hasFocus, readText, ROOT_EMAIL, ROOT_PASSWORD, shoot, signInUi, start, until } from './harness.ts';

const ID = '/api/identity/v1';
const LEDGER = '/api/ledger/v1';
const VIEWER = { email: 'vera.viewer@acme.test', password: 'viewer password 1' };

const GOOD = 3000;
/** A CSV whose company column has a name the importer does not know ("Firm"), two bad rows and a duplicate. */
function csv(): string {
  const lines = ['Full Name,Firm,Job Title,E-mail,LinkedIn URL,CRM ID'];
  lines.push('Ada Lovelace,Analytical Engines,Mathematician,ada@engines.test,https://www.linkedin.com/in/ada-lovelace,crm-ada');
  for (let i = 1; i < GOOD; i++) lines.push(`Person ${i},Company ${i % 50},Engineer,person${i}@example.test,,crm-${i}`);
  lines.push('No Company Here,,Engineer,nocompany@example.test,,crm-bad-1');
  lines.push('Bad Linkedin,Acme,Engineer,badli@example.test,not a linkedin url,crm-bad-2');
  lines.push('Ada Again,Analytical Engines,Mathematician,,,crm-ada');
  return `${lines.join('\n')}\n`;
}

interface Ctx {
  e: E2E;
  orgId: string;
  ledgerId: string;
  root: string;
}
const A = suite<Ctx>('web application: a first day with contact-ledger');
A.before(async (ctx) => {
  ctx.e = await start();
});
A.after(async (ctx) => ctx.e.close());

A('sign in: a wrong password says so, the right one opens the start page', async (ctx) => {
  const { page, base } = ctx.e;
  await page.goto(`${base}/`);
  await page.waitForURL(/\/signin$/);
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  await shoot(page, '01-signin');
  await page.getByLabel('E-mail').fill(ROOT_EMAIL);
  await page.getByLabel('Password').fill('not the password');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('alert').getByText('The e-mail or password is incorrect.').waitFor();
  await shoot(page, '02-signin-error');
  await page.getByLabel('Password').fill(ROOT_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByText('There is no organization yet.').waitFor();
  await shoot(page, '03-welcome');
});

A('create an organization, then add a viewer to its team', async (ctx) => {
  const { page } = ctx.e;
  await page.getByRole('link', { name: 'Create an organization' }).click();
  await page.getByLabel('Name').fill('Acme Sales');
  await shoot(page, '04-new-org');
  await page.getByRole('button', { name: 'Create organization' }).click();
  await page.waitForURL(/\/orgs\/o_[^/]+\/ledgers$/);
  ctx.orgId = /\/orgs\/(o_[^/]+)\//.exec(page.url())![1]!;
  await page.getByText('No ledgers yet.').waitFor();
  await shoot(page, '05-ledgers-empty');

  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Team' }).click();
  await page.getByRole('button', { name: 'Add member' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByLabel('E-mail').fill(VIEWER.email);
  await dialog.getByLabel('Role').selectOption('viewer');
  await dialog.getByLabel('Name (optional)').fill('Vera Viewer');
  await dialog.getByLabel('Initial password (for a new user)').fill(VIEWER.password);
  await shoot(page, '06-team-add');
  await dialog.getByRole('button', { name: 'Add member' }).click();
  await page.getByText(`Added ${VIEWER.email} as viewer.`).waitFor();
  const row = page.getByRole('row', { name: /Vera Viewer/ });
  assert.is(await row.getByRole('combobox').inputValue(), 'viewer');
  // the last admin cannot be demoted: the API's 409 is shown, the role stays
  await page.getByRole('combobox', { name: `Role of ${ROOT_EMAIL}` }).selectOption('viewer');
  await page.getByText('The role was not changed.').waitFor();
  assert.is(await page.getByRole('combobox', { name: `Role of ${ROOT_EMAIL}` }).inputValue(), 'admin');
  await shoot(page, '07-team');
});

A('create a ledger, rename it', async (ctx) => {
  const { page, base } = ctx.e;
  await page.goto(`${base}/orgs/${ctx.orgId}/ledgers`);
  await page.getByRole('button', { name: 'New ledger' }).click();
  await page.getByRole('dialog').getByLabel('Name').fill('Prospects');
  await page.getByRole('dialog').getByLabel('Description (optional)').fill('Leads from the autumn fair');
  await page.getByRole('dialog').getByRole('button', { name: 'Create ledger' }).click();
  await page.waitForURL(/\/ledgers\/l_[^/]+$/);
  ctx.ledgerId = /\/ledgers\/(l_[^/?]+)/.exec(page.url())![1]!;
  await page.getByText('This ledger has no contacts yet.').waitFor();
  await shoot(page, '08-contacts-empty');
  await page.getByRole('link', { name: 'Ledgers' }).first().click();
  await page.getByRole('button', { name: 'Rename Prospects' }).click();
  await page.getByRole('dialog').getByLabel('Name').fill('Autumn prospects');
  await page.getByRole('dialog').getByRole('button', { name: 'Save' }).click();
  await page.getByText('Saved "Autumn prospects".').waitFor();
  await page.getByRole('heading', { name: 'Autumn prospects' }).waitFor();
  await shoot(page, '09-ledgers');
});

A('upload a CSV: preview, map the unknown column, watch the progress bar reach completion', async (ctx) => {
  const { page, base } = ctx.e;
  await page.goto(`${base}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}/import`);
  await shoot(page, '10-import-choose');
  await page.getByLabel('CSV file', { exact: true }).setInputFiles({ name: 'fair-leads.csv', mimeType: 'text/csv', buffer: Buffer.from(csv()) });
  await page.getByRole('heading', { name: 'Check the columns' }).waitFor();
  // suggested from the header; the company column ("Firm") is unknown and must be chosen
  // (the options' values are the columns' places; what a person reads is the option's text)
  const shown = (label: string) => page.getByLabel(label).evaluate((s) => (s as unknown as { selectedOptions: { textContent: string | null }[] }).selectedOptions[0]?.textContent);
  assert.is(await shown('Name (required)'), 'Full Name');
  assert.is(await shown('LinkedIn URL'), 'LinkedIn URL');
  assert.is(await shown('Company (required)'), '— not imported —');
  await page.getByText('Choose a column for Company').waitFor();
  assert.is(await page.locator('#columns-left').innerText(), 'Not imported: Firm. To import one, choose it for a field above.', 'the columns left out are said');
  assert.ok(await page.getByRole('button', { name: /^Import .* rows$/ }).isDisabled(), 'no import without a company column');
  // one column for two fields is said at them before anything is sent (a web tester got the server's words, no field marked)
  await page.getByLabel('Company (required)').selectOption('Full Name');
  const shared = page.locator('#columns-shared');
  assert.is(await shared.innerText(), '“Full Name” is chosen for Name and Company: choose a column of its own for each field, or “— not imported —” for all but one.');
  assert.is(await shared.getAttribute('role'), 'alert');
  for (const label of ['Name (required)', 'Company (required)']) {
    assert.is(await page.getByLabel(label).getAttribute('aria-invalid'), 'true', label);
    assert.is(await page.getByLabel(label).getAttribute('aria-describedby'), 'columns-shared', label);
  }
  assert.ok(await page.getByRole('button', { name: /^Import .* rows$/ }).isDisabled(), 'no import with one column for two fields');
  await page.getByLabel('Company (required)').selectOption('Firm');
  await shared.waitFor({ state: 'detached' });
  assert.is(await page.getByLabel('Name (required)').getAttribute('aria-invalid'), null);
  await page.locator('#columns-left').waitFor({ state: 'detached' });
  await shoot(page, '11-import-preview');
  const seen: string[] = [];
  const watch = setInterval(() => {
    void page
      .locator('progress')
      .first()
      .getAttribute('aria-valuetext')
      .then((v) => v && seen.push(v))
      .catch(() => undefined);
  }, 50);
  await page.getByRole('button', { name: `Import ${(GOOD + 3).toLocaleString('en-GB')} rows` }).click();
  await page.getByRole('heading', { name: 'Import finished' }).waitFor({ timeout: 60_000 });
  clearInterval(watch);
  const bar = page.locator('progress').first();
  assert.is(await bar.getAttribute('max'), String(GOOD + 3));
  assert.is(await bar.getAttribute('value'), String(GOOD + 3));
  await page.getByText(`${(GOOD + 3).toLocaleString('en-GB')} of ${(GOOD + 3).toLocaleString('en-GB')} rows (100%)`).waitFor();
  assert.ok(seen.length > 0, 'the progress bar was shown while importing');
  const counts = page.locator('dl.counts');
  assert.is(await counts.locator('div', { hasText: 'Imported' }).locator('dd').innerText(), GOOD.toLocaleString('en-GB'));
  // "rejected" is one thing on every screen: the invalid rows and the duplicates (a tester found "Rejected 4" here and 5 in the history)
  assert.is(await counts.locator('div', { hasText: 'Invalid' }).locator('dd').innerText(), '2');
  assert.not.match(await counts.innerText(), 'Rejected');
  assert.is(await counts.locator('div', { hasText: 'Duplicates' }).locator('dd').innerText(), '1');
  await shoot(page, '12-import-result');
});

A('open the rejected rows: each with its reason, and as a CSV download', async (ctx) => {
  const { page } = ctx.e;
  await page.getByRole('button', { name: 'Open the 3 rejected rows' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByRole('table').waitFor();
  assert.is(await dialog.locator('tbody tr').count(), 3);
  const text = await dialog.locator('tbody').innerText();
  assert.ok(text.includes('No Company Here'));
  assert.ok(text.includes('Bad Linkedin'));
  assert.ok(text.includes('Ada Again'));
  assert.ok((await dialog.locator('td.reason').count()) === 3, 'a reason for every row');
  await shoot(page, '13-rejected-rows');
  const [dl] = await Promise.all([page.waitForEvent('download'), dialog.getByRole('button', { name: 'Download rejected rows (CSV)' }).click()]);
  assert.match(dl.suggestedFilename(), /^import-imp_.*-errors\.csv$/);
  const body = readText((await dl.path())!);
  // with a BOM (Excel reads it as UTF-8), the file's own column names: text, quoted
  assert.ok(body.startsWith('\uFEFF"Full Name","Firm","Job Title","E-mail","LinkedIn URL","CRM ID","reason","line"\r\n'), body.slice(0, 100));
  await dialog.getByRole('button', { name: 'Close' }).last().click();
  await page.getByRole('link', { name: 'Import history' }).first().click();
  await page.getByRole('table', { name: 'Imports' }).or(page.locator('table.imports')).first().waitFor();
  await page.getByText('fair-leads.csv').waitFor();
  const row = page.getByRole('row', { name: /fair-leads\.csv/ });
  const header = (await page.getByRole('columnheader').allTextContents()).map((h) => h.trim());
  // the start time is the row's header (a cell of its own before: the buttons did not say which import)
  const cells = await row.locator('th, td').allInnerTexts();
  assert.is(cells[header.indexOf('Rejected')]?.trim(), '3', `the 3 rejected rows the result offered: ${JSON.stringify([header, cells])}`);
  assert.ok(await row.getByRole('button', { name: /^Rejected rows of the import fair-leads\.csv, / }).isVisible(), 'the button names its import');
  await shoot(page, '14-import-history');
});

A('feed a job change; "job changed since" finds the contact; its timeline shows it', async (ctx) => {
  const { page, base } = ctx.e;
  ctx.root = await apiToken(ctx.e, ROOT_EMAIL, ROOT_PASSWORD);
  const record = { linkedin: 'https://www.linkedin.com/in/ada-lovelace', name: 'Ada Lovelace', company: 'Babbage Computing', title: 'CTO', location: 'London' };
  const fed = await ctx.e.call('POST', `${LEDGER}/feed`, { token: ctx.root, raw: `${JSON.stringify(record)}\n`, headers: { 'content-type': 'application/x-ndjson' } });
  assert.is(fed.status, 202, fed.text);
  await until(async () => (await ctx.e.call('GET', `${LEDGER}/feed/${fed.body.id}`, { token: ctx.root })).body.status === 'completed', 'the feed job');

  await page.goto(`${base}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}`);
  await page.getByRole('region', { name: 'Contacts' }).waitFor();
  await page.locator('p.count').getByText(`${GOOD.toLocaleString('en-GB')} contacts`).waitFor();
  await shoot(page, '15-contacts');
  const weekAgo = new Date(Date.now() - 7 * 86_400_000).toISOString().slice(0, 10);
  await page.getByLabel('Job changed since').fill(weekAgo);
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await page.waitForURL(new RegExp(`lastJobChangedAt=${weekAgo}`));
  await page.getByText('1 contact matches the filter').waitFor();
  const rows = page.getByRole('region', { name: 'Contacts' }).locator('tbody tr');
  assert.is(await rows.count(), 1);
  const row = await rows.first().innerText();
  assert.ok(row.includes('Ada Lovelace') && row.includes('Babbage Computing') && row.includes('was Analytical Engines'), row);
  await shoot(page, '16-contacts-job-changed');

  // the filter is in the URL: a reload shows the same view
  await page.reload();
  await page.getByText('1 contact matches the filter').waitFor();

  await page.getByRole('link', { name: 'Ada Lovelace' }).click();
  await page.getByRole('heading', { name: 'Change history' }).waitFor();
  const timeline = await page.locator('ol.timeline').innerText();
  assert.ok(timeline.includes('job change'), timeline);
  assert.ok(timeline.includes('Analytical Engines') && timeline.includes('Babbage Computing'), timeline);
  // an info change from no value: "— → London", not the change's raw JSON
  assert.match(timeline, /location changed\s*— → London/);

  // each value isolated from the words around it: a right-to-left company would otherwise read swapped (a web tester's case)
  assert.ok((await page.locator('ol.timeline bdi', { hasText: 'Babbage Computing' }).count()) > 0, 'values in <bdi>');
  assert.not.ok(timeline.includes('{'), timeline);
  await shoot(page, '17-contact-detail');
  // fields in words, not the API's names ("emailStatus changed": a web tester's case)
  const status = { ...record, email: 'ada@engines.test', emailStatus: 'valid' };
  const again = await ctx.e.call('POST', `${LEDGER}/feed`, { token: ctx.root, raw: `${JSON.stringify(status)}\n`, headers: { 'content-type': 'application/x-ndjson' } });
  await until(async () => (await ctx.e.call('GET', `${LEDGER}/feed/${again.body.id}`, { token: ctx.root })).body.status === 'completed', 'the second feed job');
  await page.reload();
  await page.locator('ol.timeline').getByText('e-mail status changed').waitFor();
  const words = await page.locator('ol.timeline').innerText();
  assert.match(words, /e-mail status changed\s*— → valid/, words);
  assert.not.match(words, /emailStatus/);
  await page.goBack();
  await page.getByText('1 contact matches the filter').waitFor();

  // a filter the API refuses: its error, and no rows of the filter before shown as if they matched it
  await page.getByText('More filters').click();
  await page.getByLabel('LinkedIn URL').fill('someone');
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await page.getByText(/“LinkedIn URL” is “someone”, which is not a LinkedIn profile URL\./).first().waitFor();
  assert.ok(await page.getByRole('button', { name: 'Remove that filter' }).isVisible(), 'a way out');
  assert.is(await page.getByRole('region', { name: 'Contacts' }).locator('tbody tr').count(), 0, 'the rows of the earlier filter are gone');
  assert.ok(await page.getByRole('button', { name: 'Download these as CSV' }).isDisabled());
  await shoot(page, '17b-contacts-refused-filter');
  if (!(await page.getByLabel('LinkedIn URL').isVisible())) await page.getByText('More filters').click();
  await page.getByLabel('LinkedIn URL').fill('');
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await page.getByText('1 contact matches the filter').waitFor();
});

A('download the CSV of the current filter', async (ctx) => {
  const { page } = ctx.e;
  const [dl] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download these as CSV' }).click()]);
  assert.match(dl.suggestedFilename(), /^ledger-l_.*\.csv$/);
  const text = readText((await dl.path())!);
  assert.ok(text.startsWith('\uFEFFid,referenceId,name,linkedin,importCompany'), 'with a BOM, for spreadsheets');
  const lines = text.slice(1).trim().split(/\r?\n/);
  assert.is(lines.length, 2, 'the header and the one matching contact');
  assert.ok(lines[1]!.includes('Ada Lovelace') && lines[1]!.includes('Babbage Computing'));
  await page.getByText(/Downloaded ledger-l_.*\.csv/).waitFor();
  // the button, disabled while the file was prepared, has focus again (it fell to the page)
  await until(() => hasFocus(page.getByRole('button', { name: 'Download these as CSV' })), 'focus back on the download button', 5000);
  // without a filter: every contact
  await page.getByRole('button', { name: 'Clear' }).click();
  await page.locator('p.count').getByText(`${GOOD.toLocaleString('en-GB')} contacts`).waitFor();
  const [all] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download CSV' }).click()]);
  assert.is(readText((await all.path())!).trim().split(/\r?\n/).length, GOOD + 1);
});

A('a day is the UTC day, a moment names its zone: a start month reads as that month west of Greenwich', async (ctx) => {
  // jobStartedAt 2024-03 is kept as 2024-03-01T00:00:00Z; in New York that moment is 29 February (a
  // day early, until the forty-second session), and the day filters are UTC days anyway
  const record = { linkedin: 'https://www.linkedin.com/in/ada-lovelace', name: 'Ada Lovelace', company: 'Babbage Computing', title: 'CTO', location: 'London', jobStartedAt: '2024-03' };
  const fed = await ctx.e.call('POST', `${LEDGER}/feed`, { token: ctx.root, raw: `${JSON.stringify(record)}\n`, headers: { 'content-type': 'application/x-ndjson' } });
  assert.is(fed.status, 202, fed.text);
  await until(async () => (await ctx.e.call('GET', `${LEDGER}/feed/${fed.body.id}`, { token: ctx.root })).body.status === 'completed', 'the feed job');
  const found = await ctx.e.call('GET', `${LEDGER}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}/contacts?linkedin=${encodeURIComponent(record.linkedin)}`, { token: ctx.root });
  const ada = found.body.contacts[0];
  assert.is(ada.jobStartedAt, '2024-03-01T00:00:00.000Z');
  // a second browser: the first one's zone is fixed for its profile
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
  try {
    const west = await (await browser.newContext({ locale: 'en-GB', timezoneId: 'America/New_York' })).newPage();
    await signInUi(west, ctx.e.base, ROOT_EMAIL, ROOT_PASSWORD);
    await west.goto(`${ctx.e.base}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}/contacts/${ada.id}`);
    await west.getByRole('heading', { name: 'Change history' }).waitFor();
    assert.is(await west.evaluate(() => Intl.DateTimeFormat().resolvedOptions().timeZone), 'America/New_York');
    const facts = west.locator('dl.facts').first();
    const started = facts.locator('dt', { hasText: 'Job started' }).locator('xpath=following-sibling::dd[1]');
    assert.is((await started.innerText()).trim(), '1 Mar 2024');
    // the last change is a day too, the UTC day the list shows and its filters find (forty-fourth session)
    const changed = facts.locator('dt', { hasText: 'Last job change' }).locator('xpath=following-sibling::dd[1]');
    const utcDay = new Date(ada.lastJobChangedAt).toLocaleDateString('en-GB', { timeZone: 'UTC', day: 'numeric', month: 'short', year: 'numeric' });
    assert.is((await changed.innerText()).trim(), utcDay);
    assert.is(await changed.locator('time').getAttribute('title'), ada.lastJobChangedAt, 'the exact UTC moment on hover');
    // a moment with its time of day — when the history's change was detected — names the reader's zone
    const detected = west.locator('ol.timeline p.when time').first();
    assert.match(await detected.innerText(), /GMT-[45]\b/, 'the zone of the reader is named');
  } finally {
    await browser.close();
  }
});

A('paging: next and previous pages of 50', async (ctx) => {
  const { page } = ctx.e;
  await page.getByRole('button', { name: 'Next' }).click();
  await page.getByText(`51–100 of ${GOOD.toLocaleString('en-GB')}`).waitFor();
  await page.getByRole('button', { name: 'Previous' }).click();
  await page.getByText(`1–50 of ${GOOD.toLocaleString('en-GB')}`).waitFor();
});

A('create a service account: the secret is shown exactly once, and it works', async (ctx) => {
  const { page, base } = ctx.e;
  await page.goto(`${base}/orgs/${ctx.orgId}/service-accounts`);
  await page.getByText('No service accounts yet.').waitFor();
  await shoot(page, '18-service-accounts-empty');
  await page.getByRole('button', { name: 'New service account' }).click();
  await page.getByRole('dialog').getByLabel('Name').fill('CRM sync');
  await page.getByRole('dialog').getByLabel('Role').selectOption('editor');
  await page.getByRole('dialog').getByRole('button', { name: 'Create' }).click();
  const secretBox = page.getByLabel('client secret');
  await secretBox.waitFor();
  const secret = await secretBox.inputValue();
  const clientId = await page.getByLabel('Client id').inputValue();
  assert.match(secret, /^cls_/);
  assert.match(clientId, /^sa_/);
  await page.getByText('It is shown only this once').waitFor();
  await page.getByRole('button', { name: 'Copy' }).waitFor();
  await shoot(page, '19-service-account-secret');
  const signedIn = await ctx.e.call('POST', `${ID}/session`, { body: { grantType: 'clientCredentials', clientId, clientSecret: secret } });
  assert.is(signedIn.status, 200, 'the integration can sign in with it');

  await page.getByRole('button', { name: 'I have stored the secret' }).click();
  await page.getByRole('row', { name: /CRM sync/ }).waitFor();
  await dialogEntryGone(page);
  assert.not.ok((await page.content()).includes(secret), 'gone from the page once closed');
  await page.reload();
  await page.getByRole('row', { name: /CRM sync/ }).waitFor();
  assert.not.ok((await page.content()).includes(secret), 'never shown again');
  await shoot(page, '20-service-accounts');

  // rotate: a new secret, once; the old one stops working
  await page.getByRole('button', { name: 'Rotate the secret of CRM sync' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Rotate secret' }).click();
  const rotated = await page.getByLabel('client secret').inputValue();
  assert.is.not(rotated, secret);
  await page.getByRole('button', { name: 'I have stored the secret' }).click();
  await dialogEntryGone(page);
  const old = await ctx.e.call('POST', `${ID}/session`, { body: { grantType: 'clientCredentials', clientId, clientSecret: secret } });
  assert.is(old.status, 401);
});

A('webhooks page', async (ctx) => {
  const { page, base } = ctx.e;
  await page.goto(`${base}/orgs/${ctx.orgId}/webhooks`);
  await page.getByRole('heading', { name: 'Webhooks' }).waitFor();
  await page.getByText('No webhooks yet.').waitFor(); // the whole page: test/e2e/webhooks.e2e.ts
  await shoot(page, '21-webhooks');
});

A('feed page for superusers: the job that was fed', async (ctx) => {
  const { page, base } = ctx.e;
  await page.goto(`${base}/feed`);
  await page.getByRole('region', { name: 'Feed jobs' }).waitFor();
  const text = await page.getByRole('region', { name: 'Feed jobs' }).innerText();
  assert.ok(text.includes('upload') && text.includes('completed'), text);
  // a file chosen on the page: the list names it (its name goes along as Content-Disposition; a tester's case)
  const record = { name: 'Zoë Page', company: 'Uploaded Ltd', observedAt: '2026-11-01T00:00:00Z' };
  await page.getByLabel(/Feed file/).setInputFiles({ name: "Zoë people (2026-11) O'Neil.ndjson", mimeType: 'application/x-ndjson', buffer: Buffer.from(`${JSON.stringify(record)}\n`) });
  await page.getByRole('button', { name: 'Start feed job' }).click();
  await page.getByRole('region', { name: 'Feed jobs' }).getByText("Zoë people (2026-11) O'Neil.ndjson").waitFor();
  await shoot(page, '22-feed');
});

A('keyboard: the mobile menu opens and the sign-out button is reachable', async (ctx) => {
  const { page, base } = ctx.e;
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${base}/orgs/${ctx.orgId}/ledgers`);
  await page.getByRole('heading', { name: 'Ledgers' }).waitFor();
  assert.not.ok(await page.getByRole('button', { name: 'Sign out' }).isVisible(), 'the menu starts closed on a phone');
  await page.getByRole('button', { name: 'Menu' }).focus();
  await page.keyboard.press('Enter');
  await page.getByRole('button', { name: 'Sign out' }).waitFor({ state: 'visible' });
  await page.screenshot({ path: 'test-artifacts/23-menu-open-390x844.png' });
  await page.setViewportSize({ width: 1280, height: 800 });
});

A('a viewer sees no editing controls, and the API refuses them anyway', async (ctx) => {
  const { page, base } = ctx.e;
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(/\/signin/);
  await signInUi(page, base, VIEWER.email, VIEWER.password);
  await page.goto(`${base}/orgs/${ctx.orgId}/ledgers`);
  await page.getByRole('heading', { name: 'Autumn prospects' }).waitFor();
  assert.is(await page.getByRole('button', { name: 'New ledger' }).count(), 0);
  assert.is(await page.getByRole('button', { name: /^Rename|^Delete/ }).count(), 0);
  const nav = page.getByRole('navigation', { name: 'Main' });
  assert.is(await nav.getByRole('link', { name: 'Service accounts' }).count(), 0);
  assert.is(await nav.getByRole('link', { name: 'Webhooks' }).count(), 0);
  await shoot(page, '24-viewer-ledgers');
  await page.getByRole('link', { name: 'Autumn prospects' }).click();
  await page.getByRole('region', { name: 'Contacts' }).waitFor();
  assert.is(await page.getByRole('link', { name: 'Import CSV' }).count(), 0);
  await page.getByRole('link', { name: 'Ada Lovelace' }).click();
  await page.getByRole('heading', { name: 'Change history' }).waitFor();
  assert.is(await page.getByRole('button', { name: 'Delete contact' }).count(), 0);
  await page.goto(`${base}/orgs/${ctx.orgId}/team`);
  await page.getByRole('row', { name: /Vera Viewer/ }).waitFor();
  assert.is(await page.getByRole('button', { name: 'Add member' }).count(), 0);
  assert.is(await page.getByRole('combobox', { name: /Role of/ }).count(), 0);
  assert.is(await page.getByRole('button', { name: /Remove/ }).count(), 0);
  await shoot(page, '25-viewer-team');

  const token = await apiToken(ctx.e, VIEWER.email, VIEWER.password);
  const refused = [
    await ctx.e.call('POST', `${LEDGER}/orgs/${ctx.orgId}/ledgers`, { token, body: { name: 'sneaky' } }),
    await ctx.e.call('PATCH', `${LEDGER}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}`, { token, body: { name: 'renamed' } }),
    await ctx.e.call('DELETE', `${LEDGER}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}`, { token }),
    await ctx.e.call('POST', `${ID}/orgs/${ctx.orgId}/members`, { token, body: { email: 'x@acme.test', role: 'admin' } }),
    await ctx.e.call('GET', `${ID}/orgs/${ctx.orgId}/service-accounts`, { token }),
    await ctx.e.call('POST', `${ID}/orgs/${ctx.orgId}/service-accounts`, { token, body: { name: 'x', role: 'viewer' } }),
  ];
  for (const r of refused) {
    assert.is(r.status, 403, r.text);
    assert.is(r.body.code, 'forbidden');
  }
});

A.run();
