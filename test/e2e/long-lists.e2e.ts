// Lists longer than the server's largest page (1000): the pages that need a whole list (the
// webhooks page's ledgers, a superuser's organizations) read every page of it, so the one created
// last is not missing.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { apiToken, ROOT_EMAIL, ROOT_PASSWORD, shoot, signInUi, start, type E2E } from './harness.ts';

const ID = '/api/identity/v1';
const LEDGER = '/api/ledger/v1';
/** One more than the server's largest page (`limit` 1–1000). */
const COUNT = 1001;

interface Ctx {
  e: E2E;
  root: string;
  orgId: string;
  lastLedger: string;
}
const L = suite<Ctx>('web application: lists longer than one page');
L.before(async (ctx) => {
  ctx.e = await start();
  const { e } = ctx;
  const token = (ctx.root = await apiToken(e, ROOT_EMAIL, ROOT_PASSWORD));
  ctx.orgId = (await e.call('POST', `${ID}/orgs`, { token, body: { name: 'Many Ledgers Org' } })).body.id;
  // one after the other: the list's order is the order of creation, so "Ledger 1000" is on page 2
  for (let i = 0; i < COUNT; i++) {
    const r = await e.call('POST', `${LEDGER}/orgs/${ctx.orgId}/ledgers`, { token, body: { name: `Ledger ${String(i).padStart(4, '0')}` } });
    assert.is(r.status, 201, r.text);
    ctx.lastLedger = r.body.id;
  }
  const page1 = await e.call('GET', `${LEDGER}/orgs/${ctx.orgId}/ledgers?limit=1000`, { token });
  assert.is(page1.body.ledgers.length, 1000);
  assert.ok(page1.body.nextCursor, 'the last ledger is beyond the largest page');
  await signInUi(e.page, e.base, ROOT_EMAIL, ROOT_PASSWORD);
});
L.after(async (ctx) => ctx.e.close());

L('webhooks: a webhook of the ledger beyond the first 1000 names it, and the ledger can be chosen', async (ctx) => {
  const { page, base, call } = ctx.e;
  const url = 'https://hooks.example.test/last-ledger';
  const w = await call('POST', `${LEDGER}/orgs/${ctx.orgId}/webhooks`, { token: ctx.root, body: { url, events: ['contact.job_changed'], ledgerIds: [ctx.lastLedger] } });
  assert.is(w.status, 201, w.text);
  await page.goto(`${base}/orgs/${ctx.orgId}/webhooks`);
  const card = page.getByRole('listitem', { name: url });
  await card.getByText('ledger: Ledger 1000').waitFor({ timeout: 10_000 });
  assert.is(await card.getByText('a deleted ledger').count(), 0, 'the ledger is not taken for a deleted one');
  // its edit dialog shows it ticked by its name, among all the ledgers
  await card.getByRole('button', { name: 'Edit' }).click();
  const dialog = page.getByRole('dialog', { name: 'Edit webhook' });
  const group = dialog.getByRole('group', { name: 'Ledgers' });
  await group.getByRole('checkbox', { name: 'Ledger 1000' }).waitFor();
  assert.ok(await group.getByRole('checkbox', { name: 'Ledger 1000' }).isChecked());
  assert.is(await group.getByRole('checkbox').count(), COUNT, 'every ledger, and no "deleted" one');
  await shoot(page, 'long-lists-webhook-edit');
  await dialog.getByRole('button', { name: 'Cancel' }).click();
});

L("a superuser's organizations beyond the first 1000: in the switcher, and their pages open", async (ctx) => {
  const { page, base, call } = ctx.e;
  let last = '';
  // with the one made in before(), COUNT + 1 organizations; "Org 1000" is the last created
  for (let i = 0; i < COUNT; i++) {
    const r = await call('POST', `${ID}/orgs`, { token: ctx.root, body: { name: `Org ${String(i).padStart(4, '0')}` } });
    assert.is(r.status, 201, r.text);
    last = r.body.id;
  }
  await page.goto(`${base}/orgs/${last}/ledgers`);
  await page.getByText('No ledgers yet.').waitFor({ timeout: 10_000 });
  assert.is(await page.getByRole('heading', { name: /not found/i }).count(), 0);
  const switcher = page.getByLabel('Organization');
  assert.is(await switcher.inputValue(), last, 'the switcher shows it');
  assert.is(await switcher.locator('option:not([value="__new"])').count(), COUNT + 1, 'every organization');
  // and the first one, through the switcher
  await switcher.selectOption({ label: 'Many Ledgers Org' });
  await page.waitForURL(new RegExp(`/orgs/${ctx.orgId}/ledgers$`));
});

L.run();
