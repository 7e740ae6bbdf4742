// A ledger's "Changes" tab (forty-fifth session, a tester's finding: the ledger-wide change feed and
// the daily change sets were in the API only): the changes in the API's order with their contacts'
// names, the type and "since" filters, paging by cursor, the empty states, and a daily change set
// listed and downloaded with the session's token.
import { gunzipSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { apiToken, type E2E, hasFocus, ROOT_EMAIL, ROOT_PASSWORD, shoot, signInUi, start, until } from './harness.ts';
import { serve, type Running } from '../child-server.ts';
import { addContacts, feedAndWait, ID, LEDGER, startApp } from '../helpers.ts';

interface Ctx {
  e: E2E;
  token: string;
  orgId: string;
  ledgerId: string;
  emptyId: string;
  restarted?: Running;
}
const PEOPLE = 52;

const C = suite<Ctx>('web application: a ledger\'s changes and daily change sets');
C.before(async (ctx) => {
  ctx.e = await start();
  const { e } = ctx;
  ctx.token = await apiToken(e, ROOT_EMAIL, ROOT_PASSWORD);
  ctx.orgId = (await e.call('POST', `${ID}/orgs`, { token: ctx.token, body: { name: 'Changes Org' } })).body.id;
  ctx.ledgerId = (await e.call('POST', `${LEDGER}/orgs/${ctx.orgId}/ledgers`, { token: ctx.token, body: { name: 'Tracked' } })).body.id;
  ctx.emptyId = (await e.call('POST', `${LEDGER}/orgs/${ctx.orgId}/ledgers`, { token: ctx.token, body: { name: 'Quiet' } })).body.id;
  const people = Array.from({ length: PEOPLE }, (_, i) => ({ name: `Person ${String(i).padStart(2, '0')}`, company: 'Old Co', title: 'Engineer', email: `p${i}@changes.test` }));
  const imported = await addContacts(e, ctx.token, ctx.orgId, ctx.ledgerId, people);
  assert.is(imported.status, 'completed');
  // every person moves to New Co (52 job changes, in this order), then two of them move city (2 info changes)
  const jobs = await feedAndWait(e, ctx.token, `${people.map((p) => JSON.stringify({ email: p.email, name: p.name, company: 'New Co', title: 'Director' })).join('\n')}\n`);
  assert.is(jobs.jobChanges, PEOPLE, JSON.stringify(jobs));
  const info = await feedAndWait(e, ctx.token, `${people.slice(0, 2).map((p) => JSON.stringify({ email: p.email, name: p.name, company: 'New Co', title: 'Director', location: 'Lisbon' })).join('\n')}\n`);
  assert.is(info.infoChanges, 2, JSON.stringify(info));
  await signInUi(e.page, e.base, ROOT_EMAIL, ROOT_PASSWORD);
});
C.after(async (ctx) => {
  if (ctx.restarted) {
    ctx.restarted.child.kill('SIGTERM');
    await ctx.restarted.exit;
  }
  await ctx.e.close();
});

C('the Changes tab lists the changes with their contacts, what changed and when; "Show more" reads the next page', async (ctx) => {
  const { page, base } = ctx.e;
  await page.goto(`${base}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}`);
  await page.getByRole('navigation', { name: 'Ledger' }).getByRole('link', { name: 'Changes' }).click();
  await page.waitForURL(`${base}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}/changes`);
  assert.is(await page.getByRole('navigation', { name: 'Ledger' }).getByRole('link', { name: 'Changes' }).getAttribute('aria-current'), 'page');
  const items = page.locator('ol.changes > li');
  await items.first().waitFor();
  assert.is(await items.count(), 50, 'a page of 50');
  // in the order detected: the feed's first record first
  const first = items.first();
  assert.match(await first.innerText(), 'job change');
  assert.match(await first.innerText(), 'Engineer at Old Co → Director at New Co');
  assert.ok(await first.locator('time').count(), 'when');
  const link = first.getByRole('link', { name: 'Person 00' });
  assert.match((await link.getAttribute('href')) ?? '', new RegExp(`/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}/contacts/c_`));
  assert.match(await page.getByRole('status').filter({ hasText: 'changes are shown' }).innerText(), 'The first 50 changes are shown.');
  await shoot(page, 'ledger-changes');

  await page.getByRole('button', { name: 'Show more changes' }).click();
  await until(async () => (await items.count()) === PEOPLE + 2, 'the second page');
  assert.is(await page.getByRole('button', { name: 'Show more changes' }).count(), 0, 'no more to read');
  assert.match(await page.getByRole('status').filter({ hasText: 'changes are shown' }).innerText(), `All ${PEOPLE + 2} changes are shown.`);
  const last = items.last();
  assert.match(await last.innerText(), 'location changed');
  assert.match(await last.innerText(), '— → Lisbon');
  await until(() => hasFocus(items.nth(50)), 'focus on the first change the page added');
  // the contact's link opens its page
  await link.click();
  await page.getByRole('heading', { level: 1, name: 'Person 00' }).waitFor();
});

C('the type and "since" filters are in the URL; no match and a ledger without changes say so', async (ctx) => {
  const { page, base } = ctx.e;
  await page.goto(`${base}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}/changes`);
  await page.locator('ol.changes > li').first().waitFor();
  await page.getByLabel('Type').selectOption('info');
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await page.waitForURL(/\?type=info$/);
  await until(async () => (await page.locator('ol.changes > li').count()) === 2, 'the two information changes');
  assert.match(await page.locator('ol.changes').innerText(), 'Person 00');
  assert.not.match(await page.locator('ol.changes').innerText(), 'job change');
  assert.match(await page.getByRole('status').filter({ hasText: 'changes that match' }).innerText(), 'All 2 changes that match are shown.');
  // a reload keeps the filter
  await page.reload();
  await until(async () => (await page.locator('ol.changes > li').count()) === 2, 'the filter after a reload');
  assert.is(await page.getByLabel('Type').inputValue(), 'info');

  // since tomorrow (UTC): nothing yet
  const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
  await page.getByLabel('Type').selectOption('');
  await page.getByLabel('Detected since').fill(tomorrow);
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await page.getByText('No change matches these filters.').waitFor();
  assert.is(new URL(page.url()).searchParams.get('since'), tomorrow);
  // since today: all of them again
  await page.getByLabel('Detected since').fill(new Date().toISOString().slice(0, 10));
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await until(async () => (await page.locator('ol.changes > li').count()) === 50, 'the first page since today');

  // a "since" typed by hand that is no date: said, with a way out
  await page.goto(`${base}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}/changes?since=banana`);
  await page.getByText('“Detected since” is “banana”, which is not a date.').waitFor();
  await page.getByRole('button', { name: 'Clear the filters' }).click();
  await until(async () => (await page.locator('ol.changes > li').count()) === 50, 'the list without filters');

  await page.goto(`${base}/orgs/${ctx.orgId}/ledgers/${ctx.emptyId}/changes`);
  await page.getByText('No change has been recorded in this ledger yet.').waitFor();
  await page.getByText('No daily change set yet').waitFor();
});

C('a daily change set is listed and downloads with the session (written by the runtime over the server\'s data)', async (ctx) => {
  const { page, base, e } = { ...ctx.e, e: ctx.e };
  await page.goto(`${base}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}/changes`);
  await page.getByText('No daily change set yet').waitFor();
  // The scheduler writes a day's set after the day ends. The server is stopped, today's set written
  // through the runtime over its data folder (as test/tracking.test.ts does), and the server started
  // again on the same port: the browser's session goes on.
  e.server.child.kill('SIGTERM');
  await e.server.exit;
  const day = new Date().toISOString().slice(0, 10).replace(/-/g, '');
  const t = await startApp({ dataDir: e.dataDir, noScheduler: true });
  try {
    const sets = await t.rt.tracking.dailySets.generate(day);
    assert.ok(sets.some((s) => s.ledgerId === ctx.ledgerId), 'a set for the ledger');
  } finally {
    await t.close();
  }
  ctx.restarted = await serve({ CONTACT_LEDGER_DATA: e.dataDir, CONTACT_LEDGER_ADMIN_EMAIL: ROOT_EMAIL, CONTACT_LEDGER_ADMIN_PASSWORD: ROOT_PASSWORD, HOST: '127.0.0.1', PORT: String(e.server.port) });
  await page.reload();
  const table = page.getByRole('region', { name: 'Daily change sets' });
  const file = `changes-${day}-1.jsonl.gz`;
  await table.getByText(file).waitFor();
  const row = table.locator('tbody tr', { hasText: file });
  assert.match(await row.innerText(), String(PEOPLE));
  await shoot(page, 'ledger-daily-sets');
  const [download] = await Promise.all([page.waitForEvent('download'), row.getByRole('button', { name: `Download ${file}` }).click()]);
  assert.is(download.suggestedFilename(), file);
  const lines = gunzipSync(readFileSync((await download.path())!)).toString('utf8').trim().split('\n').map((l) => JSON.parse(l) as { name: string; company: string; ledgerId: string });
  assert.is(lines.length, PEOPLE);
  assert.ok(lines.every((c) => c.company === 'New Co' && c.ledgerId === ctx.ledgerId));
  await page.getByRole('status').filter({ hasText: `Downloaded ${file}.` }).waitFor();
});

C.run();
