// Layout and keyboard, as a black-box tester found them (thirty-third session): long unbroken words
// wrap instead of making the page scroll sideways, the organization switcher does not leave the
// page while arrow keys move through it, focus stays in a dialog whose request failed and returns
// to the "Rotate secret" button after a new secret is closed, and Escape closes the phone menu.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Page } from 'playwright-core';
import { apiToken, dialogEntryGone, type E2E, hasFocus, ROOT_EMAIL, ROOT_PASSWORD, shoot, signInUi, start, until, widths } from './harness.ts';
import { addContacts, ID, LEDGER } from '../helpers.ts';


const LONG_EMAIL = 'maximilian.alexander.von-hohenzollern@internationale-handelsgesellschaft-deutschland.de';
const long = (word: string, n: number) => word.repeat(Math.ceil(n / word.length)).slice(0, n);

interface Ctx {
  e: E2E;
  token: string;
  orgId: string;
  otherOrg: string;
  ledgerId: string;
  contactId: string;
  /** A ledger of 60 contacts (Row 00 … Row 59). */
  manyLedgerId: string;
}
const K = suite<Ctx>('web application: long words, the organization switcher, focus in dialogs, the phone menu');
K.before(async (ctx) => {
  ctx.e = await start();
  const { e } = ctx;
  ctx.token = await apiToken(e, ROOT_EMAIL, ROOT_PASSWORD);
  const token = ctx.token;
  ctx.orgId = (await e.call('POST', `${ID}/orgs`, { token, body: { name: long('Organisation', 250) } })).body.id;
  ctx.otherOrg = (await e.call('POST', `${ID}/orgs`, { token, body: { name: 'Second Org' } })).body.id;
  const ledger = await e.call('POST', `${LEDGER}/orgs/${ctx.orgId}/ledgers`, { token, body: { name: long('Ledgername', 200), description: long('Description', 250) } });
  assert.is(ledger.status, 201, ledger.text);
  ctx.ledgerId = ledger.body.id;
  const contact = { name: long('Name', 250), company: long('Company', 250), title: long('Title', 250), location: long('Location', 250), email: LONG_EMAIL };
  assert.is((await addContacts(e, token, ctx.orgId, ctx.ledgerId, [contact])).status, 'completed');
  ctx.contactId = (await e.call('GET', `${LEDGER}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}/contacts`, { token })).body.contacts[0].id;
  const hook = await e.call('POST', `${LEDGER}/orgs/${ctx.orgId}/webhooks`, { token, body: { url: 'http://127.0.0.1:9/hook', events: ['contact.job_changed'], ledgerIds: [ctx.ledgerId] } });
  assert.is(hook.status, 201, hook.text);
  const sa = await e.call('POST', `${ID}/orgs/${ctx.orgId}/service-accounts`, { token, body: { name: 'CRM sync', role: 'viewer' } });
  assert.is(sa.status, 201, sa.text);
  await signInUi(e.page, e.base, ROOT_EMAIL, ROOT_PASSWORD);
});
K.after(async (ctx) => ctx.e.close());

/** The page is no wider than the window: nothing makes it scroll sideways. */
async function fits(page: Page, what: string) {
  const { scroll, width } = await widths(page);
  assert.ok(scroll <= width, `${what}: the page is ${scroll} px wide in a ${width} px window`);
}

K('long unbroken names, titles and e-mails wrap: no page scrolls sideways at 375 or 1280 px', async (ctx) => {
  const { page, base } = ctx.e;
  const pages: [string, string, () => Promise<unknown>][] = [
    ['ledgers', `/orgs/${ctx.orgId}/ledgers`, () => page.locator('li.ledger-card').first().waitFor()],
    ['ledger', `/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}`, () => page.getByRole('region', { name: 'Contacts' }).waitFor()],
    ['contact', `/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}/contacts/${ctx.contactId}`, () => page.getByRole('heading', { name: 'As imported' }).waitFor()],
    ['webhooks', `/orgs/${ctx.orgId}/webhooks`, () => page.locator('li.webhook-card').getByText('ledger: Ledgername').waitFor()],
  ];
  for (const [name, path, ready] of pages) {
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(`${base}${path}`);
    await ready();
    await page.getByText('Loading').first().waitFor({ state: 'detached' });
    await fits(page, `${name} at 1280 px`);
    await page.setViewportSize({ width: 375, height: 800 });
    await page.evaluate(() => new Promise<void>((r) => (globalThis as unknown as { requestAnimationFrame(f: () => void): void }).requestAnimationFrame(() => r())));
    await fits(page, `${name} at 375 px`);
    await shoot(page, `long-words-${name}`);
  }
  await page.setViewportSize({ width: 1280, height: 800 });
});

K('the contacts table fits its frame at 1280 and 768 px: long unbroken values wrap in their cells', async (ctx) => {
  const { page, base } = ctx.e;
  // a 200-character company with no space (a keyboard / narrow-window tester's case), beside the
  // 250-character name, title and company of the ledger's first contact
  const r = await addContacts(ctx.e, ctx.token, ctx.orgId, ctx.ledgerId, [{ name: 'Plain Name', company: long('Holding', 200), title: 'CEO', email: 'plain@example.test' }]);
  assert.is(r.status, 'completed');
  await page.goto(`${base}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}`);
  const frame = page.getByRole('region', { name: 'Contacts' });
  await frame.getByText('Plain Name').waitFor();
  for (const width of [1280, 768]) {
    await page.setViewportSize({ width, height: 800 });
    await page.evaluate(() => new Promise<void>((r) => (globalThis as unknown as { requestAnimationFrame(f: () => void): void }).requestAnimationFrame(() => r())));
    const [table, wrap] = (await page.evaluate(`(() => {
      const wrap = document.getElementById('contacts-table');
      return [wrap.querySelector('table').getBoundingClientRect().width, wrap.clientWidth];
    })()`)) as [number, number];
    assert.ok(table <= wrap, `at ${width} px the table is ${table} px wide in a ${wrap} px frame`);
    await fits(page, `the contacts at ${width} px`);
  }
  await shoot(page, 'long-company-contacts');
  // the address may wrap after its @ and before its dots, where a reader expects it, before it
  // wraps anywhere (a tester saw "pat.smi|th@…"); the text is the address as it is (a copy too)
  const cell = (await page.evaluate(`(() => {
    const td = [...document.querySelectorAll('td.email')].find((c) => c.textContent === ${JSON.stringify(LONG_EMAIL)});
    return td && td.innerHTML;
  })()`)) as string | undefined;
  assert.is(cell, 'maximilian<wbr>.alexander<wbr>.von-hohenzollern@<wbr>internationale-handelsgesellschaft-deutschland<wbr>.de');
  await page.setViewportSize({ width: 1280, height: 800 });
});

K('the organization switcher: arrow keys move through it without leaving the page; Enter opens the choice', async (ctx) => {
  const { page, base } = ctx.e;
  await page.goto(`${base}/orgs/${ctx.orgId}/ledgers`);
  await page.locator('li.ledger-card').first().waitFor();
  const select = page.getByLabel('Organization');
  const order = await select.locator('option').evaluateAll((os) => os.map((o) => (o as unknown as { value: string }).value));
  assert.equal(order.slice(-1), ['__new']);
  const here = `${base}/orgs/${ctx.orgId}/ledgers`;
  const i = order.indexOf(ctx.orgId);
  await select.focus();
  await page.keyboard.press('ArrowDown');
  await page.getByRole('button', { name: 'Go' }).waitFor();
  assert.is(page.url(), here, 'ArrowDown did not open the next organization');
  assert.is(await select.inputValue(), order[i + 1]);
  for (let n = i + 2; n < order.length; n++) await page.keyboard.press('ArrowDown');
  assert.is(await select.inputValue(), '__new');
  assert.is(page.url(), here, 'nor "New organization"');
  // Escape puts the organization shown back; then a choice made with Enter is opened
  await page.keyboard.press('Escape');
  assert.is(await select.inputValue(), ctx.orgId);
  await page.getByRole('button', { name: 'Go' }).waitFor({ state: 'detached' });
  const other = order.indexOf(ctx.otherOrg);
  for (let n = i; n !== other; n += other > i ? 1 : -1) await page.keyboard.press(other > i ? 'ArrowDown' : 'ArrowUp');
  assert.is(page.url(), here);
  await page.keyboard.press('Enter');
  await page.waitForURL(`${base}/orgs/${ctx.otherOrg}/ledgers`);
  await page.getByText('No ledgers yet.').waitFor();
  // a pick with the pointer (selectOption: no key pressed) still opens at once; so does "Go"
  await select.selectOption(ctx.orgId);
  await page.waitForURL(here);
  await select.focus();
  await page.keyboard.press(other > i ? 'ArrowDown' : 'ArrowUp');
  assert.is(await select.inputValue(), ctx.otherOrg);
  await page.getByRole('button', { name: 'Go' }).click();
  await page.waitForURL(`${base}/orgs/${ctx.otherOrg}/ledgers`);
});

K('a member\'s role: arrow keys move through the roles without changing them; Enter or "Change role" does, Escape puts it back', async (ctx) => {
  const { page, base } = ctx.e;
  const email = 'pat.teammate@example.test';
  const added = await ctx.e.call('POST', `${ID}/orgs/${ctx.orgId}/members`, { token: ctx.token, body: { email, role: 'editor', password: 'a teammate passphrase' } });
  assert.is(added.status, 201, added.text);
  const roleOnServer = async () => ((await ctx.e.call('GET', `${ID}/orgs/${ctx.orgId}/members?limit=100`, { token: ctx.token })).body.members as { userId: string; role: string }[]).find((m) => m.userId === added.body.userId)?.role;
  await page.goto(`${base}/orgs/${ctx.orgId}/team`);
  const select = page.getByRole('combobox', { name: `Role of ${email}` });
  const change = page.getByRole('button', { name: 'Change role' });
  await select.focus();
  // a tester's case: ↑ made the editor a viewer at once, ↓ an admin
  await page.keyboard.press('ArrowUp');
  await change.waitFor();
  assert.is(await select.inputValue(), 'viewer');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowDown');
  assert.is(await select.inputValue(), 'admin');
  assert.is(await roleOnServer(), 'editor', 'no change while the keys move');
  await page.keyboard.press('Escape');
  assert.is(await select.inputValue(), 'editor');
  await change.waitFor({ state: 'detached' });
  // Enter makes the change
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  await page.getByText('is now admin.').waitFor();
  assert.is(await roleOnServer(), 'admin');
  await change.waitFor({ state: 'detached' });
  // and so does "Change role"
  await select.focus();
  await page.keyboard.press('ArrowUp');
  await change.click();
  await page.getByText('is now editor.').waitFor();
  assert.is(await roleOnServer(), 'editor');
  assert.is(await select.inputValue(), 'editor');
});

K('a dialog whose request failed keeps focus: on the field the API named, else on the message, also after Enter in a field', async (ctx) => {
  const { page, base } = ctx.e;
  await page.goto(`${base}/orgs/${ctx.orgId}/ledgers`);
  await page.getByRole('button', { name: 'New ledger' }).click();
  const dialog = page.getByRole('dialog');
  const name = dialog.getByLabel('Name', { exact: true });
  await name.fill('   ');
  await dialog.getByRole('button', { name: 'Create ledger' }).click();
  await dialog.locator('.field-error').waitFor();
  assert.is(await name.getAttribute('aria-invalid'), 'true');
  await until(() => hasFocus(name), 'focus on the Name field');
  assert.match(await dialog.locator('.field-error').innerText(), 'Must not be empty');
  assert.not.match(await dialog.innerText(), 'Invalid request body');
  // Enter in the field: the same
  await name.press('Enter');
  await until(() => hasFocus(name), 'focus still on the Name field');
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'detached' });
  assert.ok(await hasFocus(page.getByRole('button', { name: 'New ledger' })), 'focus back on New ledger');

  // a 409 (already a member) clicked with the pointer: focus on the message, in the dialog
  await page.goto(`${base}/orgs/${ctx.orgId}/team`);
  await page.getByRole('button', { name: 'Add member' }).click();
  await dialog.getByLabel('E-mail').fill(ROOT_EMAIL);
  await dialog.getByRole('button', { name: 'Add member' }).click();
  const message = dialog.locator('.form-error');
  await message.waitFor();
  assert.match(await message.innerText(), `${ROOT_EMAIL} is already a member of "Organisation`);
  assert.not.match(await message.innerText(), ctx.orgId);
  await until(() => hasFocus(message, true), 'focus on the message');
  // another e-mail typed: the message about the one before goes (it stayed until the next Add)
  await dialog.getByLabel('E-mail').fill('someone.else@keyboard.test');
  assert.is(await message.count(), 0, 'the refusal of the address before is gone');
  // the same 409 sent with Enter from E-mail: focus on the message as well, the field being none
  // the error names (it stayed on E-mail, unmarked, the alert apart: a tester's case)
  await dialog.getByLabel('E-mail').fill(ROOT_EMAIL);
  await dialog.getByLabel('E-mail').press('Enter');
  await message.waitFor();
  await until(() => hasFocus(message, true), 'focus on the message after Enter');
  assert.is(await dialog.getByLabel('E-mail').getAttribute('aria-invalid'), null, 'E-mail is not marked: the message is the place');
  await dialog.getByLabel('E-mail').fill('someone.else@keyboard.test');
  assert.is(await message.count(), 0);
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'detached' });

  // Enter in E-mail for someone with no account: the error names the password, and focus goes there (a web tester's case)
  await page.getByRole('button', { name: 'Add member' }).click();
  await dialog.getByLabel('E-mail').fill('newbie@keyboard.test');
  await dialog.getByLabel('E-mail').press('Enter');
  const password = dialog.getByLabel(/Initial password/);
  await until(async () => (await password.getAttribute('aria-invalid')) === 'true', 'the password marked');
  await until(() => hasFocus(password), 'focus on the field the error names');
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'detached' });
});

K('a dialog whose request is on its way stays open until the answer: Cancel, × and Escape wait (a web tester closed one and the ledger was created all the same)', async (ctx) => {
  const { page, base } = ctx.e;
  await page.goto(`${base}/orgs/${ctx.orgId}/ledgers`);
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let held = false;
  const isCreate = (u: URL) => u.pathname.endsWith(`/orgs/${ctx.orgId}/ledgers`);
  await page.route(isCreate, async (route) => {
    if (route.request().method() !== 'POST') return route.continue();
    held = true;
    await released;
    await route.continue().catch(() => undefined); // the page may be gone by then (a failed run)
  });
  try {
    await page.getByRole('button', { name: 'New ledger' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Name', { exact: true }).fill('Made while waiting');
    await dialog.getByRole('button', { name: 'Create ledger' }).click();
    await until(async () => held, 'the request on its way');
    await dialog.getByRole('button', { name: 'Saving…' }).waitFor();
    assert.ok(await dialog.getByRole('button', { name: 'Cancel' }).isDisabled(), 'Cancel waits');
    assert.ok(await dialog.getByRole('button', { name: 'Close' }).isDisabled(), '× waits');
    await page.keyboard.press('Escape');
    assert.is(await dialog.count(), 1, 'Escape does not close it either');
    release();
    await dialog.waitFor({ state: 'detached' });
    await page.waitForURL(new RegExp(`/orgs/${ctx.orgId}/ledgers/[^/?]+$`)); // the new ledger's page
    await page.getByRole('heading', { level: 1, name: 'Made while waiting' }).waitFor();
  } finally {
    release();
    await page.unroute(isCreate);
  }
});

K('a create answered after Back left its page does not navigate: the page gone back to stays (a reviewer\'s case); the ledger and the organization are made all the same', async (ctx) => {
  const { page, base } = ctx.e;
  const cases = [
    {
      what: 'a new ledger',
      from: async () => {
        await page.goto(`${base}/orgs/${ctx.orgId}/team`);
        await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Ledgers' }).click();
        await page.getByRole('button', { name: 'New ledger' }).click();
        await page.getByRole('dialog').getByLabel('Name', { exact: true }).fill('Made after Back');
        await page.getByRole('dialog').getByRole('button', { name: 'Create ledger' }).click();
      },
      isCreate: (u: URL) => u.pathname.endsWith(`/orgs/${ctx.orgId}/ledgers`),
      left: `/orgs/${ctx.orgId}/team`,
      made: async () => ((await ctx.e.call('GET', `${LEDGER}/orgs/${ctx.orgId}/ledgers`, { token: ctx.token })).body.ledgers as { name: string }[]).some((l) => l.name === 'Made after Back'),
      // the page's last step after the answer (it navigated right away)
      settled: async () => undefined,
    },
    {
      what: 'a new organization',
      from: async () => {
        await page.goto(`${base}/orgs/${ctx.orgId}/team`);
        await page.getByRole('button', { name: 'Add member' }).waitFor();
        await page.getByLabel('Organization').selectOption('__new');
        await page.getByLabel('Name', { exact: true }).fill('Org made after Back');
        await page.getByRole('button', { name: 'Create organization' }).click();
      },
      isCreate: (u: URL) => u.pathname === `${ID}/orgs`,
      left: `/orgs/${ctx.orgId}/team`,
      made: async () => ((await ctx.e.call('GET', `${ID}/orgs?limit=1000`, { token: ctx.token })).body.orgs as { name: string }[]).some((o) => o.name === 'Org made after Back'),
      // the page reads the organizations again (the switcher lists the new one), then navigated
      settled: () => page.getByLabel('Organization').locator('option', { hasText: 'Org made after Back' }).waitFor({ state: 'attached' }),
    },
  ];
  for (const c of cases) {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let held = false;
    let answered!: () => void;
    const answer = new Promise<void>((r) => (answered = r));
    await page.route(c.isCreate, async (route) => {
      if (route.request().method() !== 'POST') return route.continue();
      held = true;
      await released;
      await route.continue().catch(() => undefined);
    });
    page.on('requestfinished', function done(r) {
      if (r.method() === 'POST' && c.isCreate(new URL(r.url()))) {
        page.off('requestfinished', done);
        answered();
      }
    });
    try {
      await c.from();
      await until(async () => held, `${c.what}: the request on its way`);
      // the dialog (or the page's button) waits for the answer; the browser's Back does not
      await page.goBack();
      await page.waitForURL(`${base}${c.left}`);
      await page.getByRole('heading', { level: 1, name: 'Team' }).waitFor();
      release();
      await answer;
      await c.settled();
      await page.evaluate('new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))');
      assert.is(new URL(page.url()).pathname, c.left, `${c.what}: still on the page Back went to`);
      assert.ok(await c.made(), `${c.what}: made all the same`);
    } finally {
      release();
      await page.unroute(c.isCreate);
    }
  }
});

K('after a rotated secret is closed (button or Escape), focus is back on "Rotate secret"', async (ctx) => {
  const { page, base } = ctx.e;
  await page.goto(`${base}/orgs/${ctx.orgId}/service-accounts`);
  const rotate = page.getByRole('button', { name: 'Rotate the secret of CRM sync' });
  const isFocused = async () => (await hasFocus(rotate)) || undefined;
  for (const close of ['button', 'Escape']) {
    await rotate.click();
    await page.getByRole('dialog').getByRole('button', { name: 'Rotate secret' }).click();
    await page.getByRole('dialog', { name: 'New secret for CRM sync' }).waitFor();
    if (close === 'button') await page.getByRole('button', { name: 'I have stored the secret' }).click();
    else await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    await until(isFocused, `focus on Rotate secret after closing with the ${close}`, 5000);
    await dialogEntryGone(page);
  }
  await page.goto(`${base}/orgs/${ctx.orgId}/webhooks`);
  const hookRotate = page.getByRole('button', { name: 'Rotate secret of http://127.0.0.1:9/hook' });
  for (const close of ['button', 'Escape']) {
    await hookRotate.click();
    await page.getByRole('dialog').getByRole('button', { name: 'Rotate secret' }).click();
    await page.getByRole('dialog', { name: 'New signing secret' }).waitFor();
    if (close === 'button') await page.getByRole('button', { name: 'I have stored the secret' }).click();
    else await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    await until(() => hasFocus(hookRotate), `focus on the webhook's Rotate secret after the ${close}`, 5000);
    await dialogEntryGone(page);
  }
});

K('the phone menu closes with Escape, and focus goes back to "Menu"', async (ctx) => {
  const { page, base } = ctx.e;
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${base}/orgs/${ctx.orgId}/ledgers`);
  const menu = page.getByRole('button', { name: 'Menu' });
  await menu.click();
  assert.is(await menu.getAttribute('aria-expanded'), 'true');
  const team = page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Team' });
  await team.focus();
  await page.keyboard.press('Escape');
  await until(async () => (await menu.getAttribute('aria-expanded')) === 'false', 'the menu to close');
  assert.not.ok(await team.isVisible(), 'its links hidden');
  assert.ok(await hasFocus(menu), 'focus on Menu');
  await page.setViewportSize({ width: 1280, height: 800 });
});

K('a link the phone menu hid, or one the page took away: focus goes to the new page\'s content, not the body (an accessibility tester\'s case)', async (ctx) => {
  const { page, base } = ctx.e;
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${base}/orgs/${ctx.orgId}/ledgers`);
  await page.getByRole('button', { name: 'Menu' }).click();
  const team = page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Team' });
  await team.focus();
  await page.keyboard.press('Enter');
  await page.waitForURL(/\/team$/);
  await until(async () => (await page.evaluate('document.activeElement && document.activeElement.id')) === 'main', 'focus on the content');
  await page.setViewportSize({ width: 1280, height: 800 });
  // a contact's link in the list, which the contact's page replaces
  await page.goto(`${base}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}`);
  const link = page.getByRole('region', { name: 'Contacts' }).getByRole('link', { name: 'Plain Name' });
  await link.focus();
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Change history' }).waitFor();
  assert.is(await page.evaluate('document.activeElement && document.activeElement.id'), 'main');
  // the start page's redirect to the organization last opened is the first page seen: Tab begins
  // at "Skip to content", as on any page loaded (a reviewer's case: focus went to the content)
  await page.goto(`${base}/`);
  await page.waitForURL(/\/orgs\/o_[^/]+\/ledgers$/);
  await page.getByRole('heading', { level: 1 }).first().waitFor();
  assert.is(await page.evaluate('document.activeElement === document.body'), true);
  await page.keyboard.press('Tab');
  assert.is(await page.evaluate('document.activeElement.textContent.trim()'), 'Skip to content');
});

K('what gets focus is not hidden under the sticky header; the focus ring stands out (3:1) from the page', async (ctx) => {
  const { page, base } = ctx.e;
  const token = ctx.token;
  const many = await page.context().request.post(`${base}${LEDGER}/orgs/${ctx.orgId}/ledgers`, { headers: { authorization: `Bearer ${token}` }, data: { name: 'Many' } });
  const ledgerId = (await many.json()).id as string;
  ctx.manyLedgerId = ledgerId;
  const rows = Array.from({ length: 60 }, (_, i) => ({ name: `Row ${String(i).padStart(2, '0')}`, company: 'Acme' }));
  assert.is((await addContacts(ctx.e, token, ctx.orgId, ledgerId, rows)).status, 'completed');
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: width === 390 ? 844 : 800 });
    await page.goto(`${base}/orgs/${ctx.orgId}/ledgers/${ledgerId}?limit=50`);
    await page.getByRole('button', { name: 'Next' }).focus();
    // back up through the rows with Shift+Tab, as the tester did: each focused link is below the header
    for (let i = 0; i < 30; i++) {
      await page.keyboard.press('Shift+Tab');
      const [top, headerBottom, what] = (await page.evaluate(`(() => {
        const el = document.activeElement;
        return [el.getBoundingClientRect().top, document.querySelector('header.top').getBoundingClientRect().bottom, el.textContent.slice(0, 40)];
      })()`)) as [number, number, string];
      assert.ok(top >= headerBottom - 1, `at ${width} px "${what}" is at ${top}, under the header that ends at ${headerBottom}`);
    }
  }
  await page.setViewportSize({ width: 1280, height: 800 });
  const ring = (await page.evaluate(`getComputedStyle(document.documentElement).getPropertyValue('--focus').trim()`)) as string;
  const lum = (hex: string) => {
    const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255).map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4));
    return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
  };
  for (const bg of ['#ffffff', '#f5f6f8', '#e6eef9']) assert.ok((lum(bg) + 0.05) / (lum(ring) + 0.05) >= 3, `${ring} on ${bg}`);
});

K('Back from a contact: the list where it was scrolled to, focus on the contact\'s link (it came back at its top, focus on the body)', async (ctx) => {
  const { page, base } = ctx.e;
  await page.goto(`${base}/orgs/${ctx.orgId}/ledgers/${ctx.manyLedgerId}?limit=50`);
  const link = page.getByRole('region', { name: 'Contacts' }).getByRole('link', { name: 'Row 40' });
  await link.focus();
  const y = (await page.evaluate('window.scrollY')) as number;
  assert.ok(y > 300, `scrolled down to row 40: ${y}`);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Change history' }).waitFor();
  await page.goBack();
  await until(async () => (await page.evaluate('document.activeElement && document.activeElement.textContent')) === 'Row 40', 'focus back on Row 40');
  const back = (await page.evaluate('window.scrollY')) as number;
  assert.ok(Math.abs(back - y) < 5, `scrolled to ${back}, was ${y}`);
});

K('the contacts table on a phone: one block per contact, no word broken, nothing scrolled sideways (an accessibility tester\'s case)', async (ctx) => {
  const { page, base } = ctx.e;
  const r = await addContacts(ctx.e, ctx.token, ctx.orgId, ctx.ledgerId, [{ name: 'Maximiliana Executive', company: 'International Holdings', title: 'Executive', email: 'max@example.test' }]);
  assert.is(r.status, 'completed');
  for (const width of [390, 320]) {
    await page.setViewportSize({ width, height: 800 });
    await page.goto(`${base}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}`);
    const frame = page.getByRole('region', { name: 'Contacts' });
    await frame.getByText('Maximiliana Executive').waitFor();
    const [scroll, client] = (await page.evaluate(`(() => { const w = document.getElementById('contacts-table'); return [w.scrollWidth, w.clientWidth]; })()`)) as [number, number];
    assert.ok(scroll <= client, `at ${width} px the table scrolls: ${scroll} px in ${client}`);
    await fits(page, `the contacts at ${width} px`);
    // a value's words are whole: each is on one line
    const row = frame.locator('tbody tr', { hasText: 'Maximiliana Executive' });
    for (const word of ['International', 'Executive']) {
      const lines = (await row.evaluate((tr, w) => {
        const range = tr.ownerDocument.createRange();
        const cell = [...tr.querySelectorAll('td')].find((td) => td.textContent!.includes(w))!;
        const text = [...cell.childNodes].find((n) => n.nodeType === 3 && n.textContent!.includes(w))!;
        const at = text.textContent!.indexOf(w);
        range.setStart(text, at);
        range.setEnd(text, at + w.length);
        return new Set([...range.getClientRects()].map((rect) => Math.round(rect.top))).size;
      }, word)) as number;
      assert.is(lines, 1, `"${word}" broken across lines at ${width} px`);
    }
    assert.ok((await row.locator('td[data-label="Company"]').isVisible()), 'the cells labelled');
    await shoot(page, `contacts-phone-${width}`);
  }
  await page.setViewportSize({ width: 1280, height: 800 });
});

K('Service accounts at 360 px: one labelled block per account, as the Team page, with Rotate secret and Delete in sight (the table scrolled sideways, its buttons off-screen)', async (ctx) => {
  const { page, base } = ctx.e;
  await page.setViewportSize({ width: 360, height: 800 });
  try {
    for (const [what, path, region, buttons] of [
      ['Service accounts', 'service-accounts', 'Service accounts', ['Rotate the secret of CRM sync', 'Delete CRM sync']],
      ['Team', 'team', 'Members', [`Remove ${ROOT_EMAIL}`]],
    ] as const) {
      await page.goto(`${base}/orgs/${ctx.orgId}/${path}`);
      const frame = page.getByRole('region', { name: region });
      await page.getByRole('button', { name: buttons[0] }).waitFor();
      const [scroll, client] = (await frame.evaluate((w) => [w.scrollWidth, w.clientWidth])) as [number, number];
      assert.ok(scroll <= client, `${what} at 360 px scrolls sideways: ${scroll} px in ${client}`);
      for (const name of buttons) {
        const box = (await page.getByRole('button', { name }).boundingBox())!;
        assert.ok(box.x >= 0 && box.x + box.width <= 360, `${what}: "${name}" in sight at 360 px (${box.x}–${box.x + box.width})`);
      }
      await fits(page, `${what} at 360 px`);
    }
    assert.ok(await page.getByRole('region', { name: 'Members' }).locator('td[data-label="Role"]').first().isVisible());
    await page.goto(`${base}/orgs/${ctx.orgId}/service-accounts`);
    await page.getByRole('region', { name: 'Service accounts' }).locator('td[data-label="Client id"]').first().waitFor();
    await shoot(page, 'service-accounts-phone');
  } finally {
    await page.setViewportSize({ width: 1280, height: 800 });
  }
});

K('the quick "job changed in the last N days" filters keep the other filters; pressed again, theirs is taken off', async (ctx) => {
  const { page, base } = ctx.e;
  await page.goto(`${base}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}?name=Plain`);
  await page.getByRole('button', { name: '30 days' }).click();
  await page.waitForURL(/lastJobChangedAt=/);
  const q = new URL(page.url()).searchParams;
  assert.is(q.get('name'), 'Plain', `the name filter stays: ${page.url()}`);
  assert.is(await page.getByRole('button', { name: '30 days' }).getAttribute('aria-pressed'), 'true');
  await page.getByRole('button', { name: '30 days' }).click();
  await until(async () => !new URL(page.url()).searchParams.has('lastJobChangedAt'), 'the quick filter taken off');
  assert.is(new URL(page.url()).searchParams.get('name'), 'Plain');
});

K('a new webhook\'s URL starts empty: a pasted address is not "https://https://…" (a tester\'s case)', async (ctx) => {
  const { page, base } = ctx.e;
  await page.goto(`${base}/orgs/${ctx.orgId}/webhooks`);
  await page.getByRole('button', { name: 'New webhook' }).click();
  const url = page.getByRole('dialog').getByLabel('URL');
  assert.is(await url.inputValue(), '');
  assert.match((await url.getAttribute('placeholder')) ?? '', /^https:\/\//);
  await page.keyboard.press('Escape');
});

K.run();
