// The webhooks page against the real API and a real receiver (node:http on 127.0.0.1): create a
// webhook in the browser and see its signing secret once, send a test ping and see it delivered, a
// real job change (a contact imported, then a feed record) delivered and in the log, the receiver
// checking every signature with the secret the page showed; rotation, a failing receiver, disabling
// by hand and by the server, deletion.
import Database from 'better-sqlite3';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { apiToken, dialogEntryGone, type E2E, hasFocus, ROOT_EMAIL, ROOT_PASSWORD, shoot, signInUi, start, until } from './harness.ts';

const ID = '/api/identity/v1';
const LEDGER = '/api/ledger/v1';
const TOKEN = 'e2e-shared-token';
const GRACE = { name: 'Grace Hopper', company: 'US Navy', title: 'Rear Admiral', linkedin: 'https://www.linkedin.com/in/grace-hopper-e2e' };

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The signature verified, in the receiver, with the secret the page showed. */
  signed: boolean;
}

/** A webhook receiver: `/hooks` answers 204 only to a delivery signed with `secret` and carrying the token; `/broken` answers 500. */
class Receiver {
  readonly got: Received[] = [];
  secret = '';
  url = '';
  private server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const signed = verify(this.secret, req.headers['x-ledger-signature'], raw);
      this.got.push({ path: req.url ?? '', headers: req.headers, body: raw.toString('utf8'), signed });
      if (req.url === '/broken') return void res.writeHead(500).end('broken on purpose');
      res.writeHead(signed && req.headers['x-ledger-token'] === TOKEN ? 204 : 401).end();
    });
  });
  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
  of(type: string): Received[] {
    return this.got.filter((r) => (JSON.parse(r.body) as { type: string }).type === type);
  }
}

/** docs/webhooks.md "Verifying a delivery": HMAC-SHA256(secret, "<t>.<raw body>"), constant-time, recent t. */
function verify(secret: string, header: string | string[] | undefined, raw: Buffer): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(header ?? ''));
  if (!secret || !m) return false;
  const expected = createHmac('sha256', secret).update(`${m[1]}.`).update(raw).digest();
  return Math.abs(Date.now() / 1000 - Number(m[1])) < 300 && timingSafeEqual(expected, Buffer.from(m[2]!, 'hex'));
}

interface Ctx {
  e: E2E;
  rx: Receiver;
  root: string;
  orgId: string;
  ledgerId: string;
  webhookId: string;
  hookUrl: string;
}
const W = suite<Ctx>('web application: webhooks against the real API');
W.before(async (ctx) => {
  ctx.e = await start();
  ctx.rx = new Receiver();
  await ctx.rx.listen();
  ctx.hookUrl = `${ctx.rx.url}/hooks`;
  ctx.root = await apiToken(ctx.e, ROOT_EMAIL, ROOT_PASSWORD);
  const org = await ctx.e.call('POST', `${ID}/orgs`, { token: ctx.root, body: { name: 'Hooked Ltd' } });
  assert.is(org.status, 201, org.text);
  ctx.orgId = org.body.id;
  const mk = async (name: string) => {
    const r = await ctx.e.call('POST', `${LEDGER}/orgs/${ctx.orgId}/ledgers`, { token: ctx.root, body: { name } });
    assert.is(r.status, 201, r.text);
    return r.body.id as string;
  };
  ctx.ledgerId = await mk('Leads');
  await mk('Archive');
  await signInUi(ctx.e.page, ctx.e.base, ROOT_EMAIL, ROOT_PASSWORD);
});
W.after(async (ctx) => {
  await ctx.rx.close();
  await ctx.e.close();
});

/** Adds a contact through the API (an import job of one row) and waits for the job. */
async function importContact(ctx: Ctx, contact: Record<string, string>): Promise<void> {
  const r = await ctx.e.call('POST', `${LEDGER}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}/contacts`, { token: ctx.root, body: { contacts: [contact] } });
  assert.is(r.status, 202, r.text);
  await until(async () => ['completed', 'failed'].includes((await ctx.e.call('GET', `${LEDGER}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}/imports/${r.body.id}`, { token: ctx.root })).body.status), 'the import job');
}

const card = (ctx: Ctx) => ctx.e.page.getByRole('listitem', { name: ctx.hookUrl });
const log = (ctx: Ctx) => ctx.e.page.getByRole('region', { name: 'Deliveries' }).locator('tbody tr');
/** Clicks "Refresh" until the delivery log has a row with all of `texts` (the log is polled, not waited on). */
async function inLog(ctx: Ctx, what: string, ...texts: string[]) {
  let rows = log(ctx);
  for (const t of texts) rows = rows.filter({ hasText: t });
  await until(async () => {
    await ctx.e.page.getByRole('button', { name: 'Refresh' }).click();
    await ctx.e.page.getByRole('button', { name: 'Refresh', exact: true }).waitFor();
    return (await rows.count()) > 0;
  }, what);
  return rows.first();
}

W('empty state; create a webhook: events, one ledger, a token; the signing secret is shown exactly once', async (ctx) => {
  const { page, base } = ctx.e;
  await page.goto(`${base}/orgs/${ctx.orgId}/webhooks`);
  await page.getByText('No webhooks yet.').waitFor();
  await shoot(page, '30-webhooks-empty');

  await page.getByRole('button', { name: 'New webhook' }).click();
  const dialog = page.getByRole('dialog', { name: 'New webhook' });
  // a URL the API refuses: its message at the URL field, which is marked (a tester's case: "url: …" above the buttons)
  const url = dialog.getByLabel('URL');
  await url.fill('ftp://example.test/hook');
  await dialog.getByRole('button', { name: 'Create webhook' }).click();
  await dialog.locator('.field-error').filter({ hasText: 'http or https' }).waitFor();
  assert.is(await url.getAttribute('aria-invalid'), 'true');
  assert.match(await dialog.locator('.form-error').innerText(), 'Check the marked field.');
  assert.not.match(await dialog.innerText(), 'url:');
  // a user name and password in the URL: said in plain words that say what to use instead (it read "use token to authenticate to the receiver")
  await url.fill('https://user:pw@hooks.example.test/');
  await dialog.getByRole('button', { name: 'Create webhook' }).click();
  const userinfo = dialog.locator('.field-error').filter({ hasText: 'user name or password' });
  await userinfo.waitFor();
  assert.match(await userinfo.innerText(), "Must not contain a user name or password: give the receiver the webhook's token instead, sent with every delivery as X-Ledger-Token.");
  assert.not.match(await userinfo.innerText(), 'use token');
  // the token's hint says what a token may hold (the server refuses anything but printable ASCII)
  const tokenHint = await dialog.getByLabel('Token (optional)').getAttribute('aria-describedby');
  assert.match(await dialog.locator(`[id="${tokenHint}"]`).innerText(), 'up to 512 printable ASCII characters');
  // and gone once the URL is edited: it was about the URL before
  await url.fill(ctx.hookUrl);
  await dialog.locator('.form-error').waitFor({ state: 'detached' });
  assert.is(await dialog.locator('.field-error').count(), 0);
  assert.is(await url.getAttribute('aria-invalid'), null);
  await dialog.getByRole('checkbox', { name: /information changed/ }).uncheck();
  await dialog.getByRole('radio', { name: 'Only these ledgers' }).check();
  assert.ok(await dialog.getByRole('button', { name: 'Create webhook' }).isDisabled(), 'no webhook without a ledger when "only these" is chosen');
  await dialog.getByText('Choose at least one ledger.').waitFor();
  await dialog.getByRole('checkbox', { name: 'Leads' }).check();
  await dialog.getByLabel('Token (optional)').fill(TOKEN);
  await shoot(page, '31-webhook-new');
  await dialog.getByRole('button', { name: 'Create webhook' }).click();

  const secretBox = page.getByRole('textbox', { name: 'signing secret' });
  await secretBox.waitFor();
  const secret = await secretBox.inputValue();
  assert.match(secret, /^whsec_[A-Za-z0-9_-]{20,}$/);
  // the dialog opens on the secret, not on "×" (one Enter there threw it away: a web tester's case)
  await until(() => hasFocus(secretBox), 'focus on the secret', 5000);
  await page.getByText('It is shown only this once').waitFor();
  await page.getByRole('button', { name: 'Copy' }).waitFor();
  await shoot(page, '32-webhook-secret');
  ctx.rx.secret = secret;

  await page.getByRole('button', { name: 'I have stored the secret' }).click();
  await card(ctx).waitFor();
  await dialogEntryGone(page);
  assert.not.ok((await page.content()).includes(secret), 'gone from the page once closed');
  await page.reload();
  await card(ctx).waitFor();
  assert.not.ok((await page.content()).includes(secret), 'never shown again');
  await card(ctx).getByText('ledger: Leads').waitFor();
  const text = await card(ctx).innerText();
  for (const s of ['enabled', 'job changed', 'import ended', 'ledger: Leads', 'with token', 'last event delivered: never']) assert.ok(text.includes(s), `${s} in ${text}`);
  assert.not.ok(text.includes('information changed'), text);

  const api = await ctx.e.call('GET', `${LEDGER}/orgs/${ctx.orgId}/webhooks`, { token: ctx.root });
  const w = api.body.webhooks[0];
  assert.equal([w.url, w.events, w.ledgerIds, w.hasToken, w.enabled], [ctx.hookUrl, ['contact.job_changed', 'import.completed'], [ctx.ledgerId], true, true]);
  ctx.webhookId = w.id;
});

W('send a test ping: the page waits for its attempt and says it was delivered; the receiver verified the signature', async (ctx) => {
  const { page } = ctx.e;
  const send = card(ctx).getByRole('button', { name: 'Send test' });
  await send.click();
  const outcome = card(ctx).getByRole('status').filter({ hasText: 'Test ping delivered' });
  await outcome.waitFor();
  // disabled while the ping ran, the button gets focus back (it fell to <body>: a keyboard tester's case)
  await until(() => hasFocus(send), 'focus back on Send test', 5000);
  assert.match(await outcome.innerText(), /the receiver answered 204 in \d+ ms/);
  const [ping] = ctx.rx.of('ping');
  assert.ok(ping, 'the receiver got the ping');
  assert.ok(ping.signed, 'signed with the secret the page showed');
  assert.is(ping.headers['x-ledger-token'], TOKEN);
  await shoot(page, '33-webhooks');

  await card(ctx).getByRole('link', { name: 'Delivery log' }).click();
  await page.waitForURL(new RegExp(`/webhooks/${ctx.webhookId}$`));
  const row = await inLog(ctx, 'the ping in the log', 'test ping', 'delivered');
  assert.match(await row.innerText(), /1 of 1/);
});

W('a real job change (contact imported, feed record posted) is delivered, signed, and shown in the log with its attempts', async (ctx) => {
  const { page } = ctx.e;
  await importContact(ctx, GRACE);
  const record = { linkedin: GRACE.linkedin, name: GRACE.name, company: 'Remington Rand', title: 'Senior Mathematician' };
  const fed = await ctx.e.call('POST', `${LEDGER}/feed`, { token: ctx.root, raw: `${JSON.stringify(record)}\n`, headers: { 'content-type': 'application/x-ndjson' } });
  assert.is(fed.status, 202, fed.text);
  await until(async () => (await ctx.e.call('GET', `${LEDGER}/feed/${fed.body.id}`, { token: ctx.root })).body.status === 'completed', 'the feed job');

  const row = await inLog(ctx, 'the job change delivered', 'job changed', 'delivered');
  await inLog(ctx, 'the import delivered', 'import ended', 'delivered');
  assert.match(await row.innerText(), /answered 204/);
  const [job] = ctx.rx.of('contact.job_changed');
  assert.ok(job, 'the receiver got the job change');
  assert.ok(job.signed, 'the job change is signed with the secret the page showed');
  const event = JSON.parse(job.body);
  assert.equal([event.orgId, event.ledgerId, event.data.contact.name, event.data.contact.company, event.data.change.from.company], [ctx.orgId, ctx.ledgerId, GRACE.name, 'Remington Rand', 'US Navy']);
  assert.ok(ctx.rx.got.every((r) => r.signed), 'every delivery so far verified');
  await shoot(page, '34-webhook-log');

  // status filter: in the URL, and the API's ?status=
  await page.getByRole('button', { name: 'Failed' }).click();
  await page.waitForURL(/\?status=failed$/);
  await page.getByText('No failed deliveries.').waitFor();
  await page.getByRole('button', { name: 'Delivered' }).click();
  await page.waitForURL(/\?status=delivered$/);
  await until(async () => (await log(ctx).count()) === 3, 'ping, import and job change delivered');
  await page.getByRole('button', { name: 'All', exact: true }).click();

  // attempt details and the payload as sent
  await row.getByRole('button', { name: 'Details' }).click();
  const dialog = page.getByRole('dialog', { name: 'Delivery' });
  await dialog.getByRole('region', { name: 'Attempts' }).waitFor();
  assert.match(await dialog.getByRole('region', { name: 'Attempts' }).innerText(), /answered 204/);
  const payload = await dialog.getByLabel('Payload').innerText();
  assert.equal(JSON.parse(payload), event, 'the payload is what the receiver got');
  assert.ok((await dialog.innerText()).includes(job.headers['x-ledger-delivery'] as string), 'the X-Ledger-Delivery id');
  await shoot(page, '35-webhook-delivery');
  await dialog.getByRole('button', { name: 'Close' }).last().click();
});

W('rotate the secret: a new one shown once; the next ping is signed with it', async (ctx) => {
  const { page } = ctx.e;
  const old = ctx.rx.secret;
  await page.getByRole('button', { name: 'Rotate secret' }).click();
  const confirm = page.getByRole('dialog', { name: 'Rotate the signing secret?' });
  // a confirmation opens on its Cancel, the action that changes nothing
  assert.ok(await hasFocus(confirm.getByRole('button', { name: 'Cancel' })), 'focus on Cancel');
  await confirm.getByRole('button', { name: 'Rotate secret' }).click();
  const rotatedBox = page.getByRole('textbox', { name: 'signing secret' });
  await until(() => hasFocus(rotatedBox), 'focus on the rotated secret', 5000);
  const rotated = await rotatedBox.inputValue();
  assert.match(rotated, /^whsec_/);
  assert.is.not(rotated, old);
  ctx.rx.secret = rotated;
  await page.getByRole('button', { name: 'I have stored the secret' }).click();
  await page.getByText('Rotated the signing secret').waitFor();
  assert.not.ok((await page.content()).includes(rotated));
  const before = ctx.rx.of('ping').length;
  await page.getByRole('button', { name: 'Send test' }).click();
  await page.getByText('Test ping delivered:').waitFor();
  const ping = ctx.rx.of('ping')[before]!;
  assert.ok(ping.signed, 'signed with the rotated secret');
  assert.not.ok(verify(old, ping.headers['x-ledger-signature'], Buffer.from(ping.body)), 'no longer with the old one');
});

W('a receiver that fails: edit the URL, the test ping says why, the "Failed" filter finds it', async (ctx) => {
  const { page } = ctx.e;
  await page.getByRole('button', { name: 'Edit' }).click();
  const dialog = page.getByRole('dialog', { name: 'Edit webhook' });
  assert.is(await dialog.getByLabel('URL').inputValue(), ctx.hookUrl);
  await dialog.getByRole('radio', { name: 'Keep the current token' }).waitFor();
  await dialog.getByLabel('URL').fill(`${ctx.rx.url}/broken`);
  await shoot(page, '36-webhook-edit');
  await dialog.getByRole('button', { name: 'Save' }).click();
  await page.getByText(`Saved ${ctx.rx.url}/broken.`).waitFor();
  // the ping delivered to the URL before says nothing about this one (a web tester's case: it stayed)
  await until(async () => (await page.getByText('Test ping delivered:').count()) === 0, 'the outcome of the old URL gone', 5000);
  await page.getByRole('button', { name: 'Send test' }).click();
  const failed = page.getByRole('status').filter({ hasText: 'Test ping failed' });
  await failed.waitFor();
  assert.match(await failed.innerText(), /answered 500/);
  await shoot(page, '37-webhook-ping-failed');
  await page.getByRole('button', { name: 'Failed' }).click();
  await until(async () => (await log(ctx).count()) === 1, 'one failed delivery');
  assert.match(await log(ctx).first().innerText(), /test ping[\s\S]*failed[\s\S]*answered 500/);
  await page.getByRole('button', { name: 'All', exact: true }).click();
  const hook = (await ctx.e.call('GET', `${LEDGER}/orgs/${ctx.orgId}/webhooks/${ctx.webhookId}`, { token: ctx.root })).body;
  assert.equal([hook.url, hook.hasToken, hook.failingSince], [`${ctx.rx.url}/broken`, true, null], 'the token was kept; a failed ping does not count as failing');
});

W('disable and enable by hand; disabled by the server after 3 days of failures, the page says why', async (ctx) => {
  const { page } = ctx.e;
  await page.getByRole('button', { name: 'Disable' }).click();
  await page.getByRole('note').filter({ hasText: `Disabled by ${ROOT_EMAIL} on` }).waitFor();
  // focus is on the button that took the pressed one's place, not on <body>
  await until(() => hasFocus(page.getByRole('button', { name: /^Enable/ })), 'focus on Enable', 5000);
  await page.getByRole('button', { name: /^Enable/ }).click();
  await page.getByText(`Enabled ${ctx.rx.url}/broken; held deliveries go out now.`).waitFor();
  await until(() => hasFocus(page.getByRole('button', { name: 'Disable' })), 'focus on Disable', 5000);
  await until(async () => (await page.locator('.badge', { hasText: 'enabled' }).count()) === 1, 'the enabled badge');

  // Three days of failures, as the server would have recorded them (the server's clock cannot be moved
  // from here): failing since 3 days ago, the last failed attempt an hour ago (a streak without a
  // day-long pause). The next real failed delivery disables it.
  const db = new Database(join(ctx.e.dataDir, 'contact-ledger.db'));
  db.pragma('busy_timeout = 5000');
  db.prepare('UPDATE webhooks SET failing_since = ?, last_failed_at = ? WHERE id = ?').run(Date.now() - 3 * 86_400_000 - 60_000, Date.now() - 3_600_000, ctx.webhookId);
  db.close();
  await importContact(ctx, { name: 'Alan Turing', company: 'NPL', title: 'Scientist', linkedin: 'https://www.linkedin.com/in/alan-turing-e2e' });
  await until(async () => (await ctx.e.call('GET', `${LEDGER}/orgs/${ctx.orgId}/webhooks/${ctx.webhookId}`, { token: ctx.root })).body.enabled === false, 'the server disabling the webhook');

  await page.reload();
  const note = page.getByRole('note').filter({ hasText: 'Disabled because deliveries kept failing' });
  await note.waitFor();
  assert.match(await note.innerText(), /no successful delivery for 3 days \(failing since .+\); last error: answered 500/);
  await page.locator('.badge', { hasText: 'disabled' }).first().waitFor();
  const held = log(ctx).filter({ hasText: 'import ended' }).filter({ hasText: 'pending' });
  assert.match(await held.first().innerText(), /answered 500[\s\S]*held while disabled/, 'its failed delivery is held, not retried');
  await shoot(page, '38-webhook-disabled');
  await page.getByRole('link', { name: 'Webhooks' }).first().click();
  await card(ctx).or(page.getByRole('listitem', { name: `${ctx.rx.url}/broken` })).first().waitFor();
  await page.getByRole('note').filter({ hasText: 'Disabled because deliveries kept failing' }).waitFor();
  await shoot(page, '39-webhooks-disabled');

  // back on the working URL, and enabled again: the state clears
  await page.getByRole('button', { name: 'Edit' }).click();
  await page.getByRole('dialog', { name: 'Edit webhook' }).getByLabel('URL').fill(ctx.hookUrl);
  await page.getByRole('dialog', { name: 'Edit webhook' }).getByRole('button', { name: 'Save' }).click();
  await card(ctx).waitFor();
  await card(ctx).getByRole('button', { name: 'Enable again' }).click();
  await card(ctx).getByText('enabled', { exact: true }).waitFor();
  assert.is(await page.getByRole('note').count(), 0, 'no disabled note');
  const hook = (await ctx.e.call('GET', `${LEDGER}/orgs/${ctx.orgId}/webhooks/${ctx.webhookId}`, { token: ctx.root })).body;
  assert.equal([hook.enabled, hook.disabledReason, hook.failingSince], [true, null, null]);
});

W('one disabled by hand whose last ledger is deleted says both, not that deliveries kept failing (a reviewer\'s case), and names no ledger in words, without the deleted one\'s id', async (ctx) => {
  const { page, base } = ctx.e;
  const ledgerId = (await ctx.e.call('POST', `${LEDGER}/orgs/${ctx.orgId}/ledgers`, { token: ctx.root, body: { name: 'Short-lived' } })).body.id;
  const hook = (await ctx.e.call('POST', `${LEDGER}/orgs/${ctx.orgId}/webhooks`, { token: ctx.root, body: { url: `${ctx.rx.url}/short-lived`, events: ['import.completed'], ledgerIds: [ledgerId] } })).body;
  assert.is((await ctx.e.call('PATCH', `${LEDGER}/orgs/${ctx.orgId}/webhooks/${hook.id}`, { token: ctx.root, body: { enabled: false } })).status, 200);
  assert.is((await ctx.e.call('DELETE', `${LEDGER}/orgs/${ctx.orgId}/ledgers/${ledgerId}`, { token: ctx.root })).status, 204);
  try {
    await page.goto(`${base}/orgs/${ctx.orgId}/webhooks/${hook.id}`);
    const note = page.getByRole('note').filter({ hasText: 'Every ledger it reported on was deleted' });
    await note.waitFor();
    assert.match(await note.innerText(), new RegExp(`before that: disabled by ${ROOT_EMAIL.replace(/[.]/g, '\\.')} on `));
    assert.is(await page.getByText('Disabled because deliveries kept failing').count(), 0);
    assert.is(await page.getByRole('button', { name: 'Enable again' }).count(), 0);
    // its ledgers said in words, and the deleted one not by its raw id (it read "Ledgers — ledgers:"
    // with nothing after, and "(the last: l_…)": a tester's case)
    assert.not.match(await note.innerText(), ledgerId);
    assert.not.match(await note.innerText(), '(the last');
    const settings = page.getByRole('region', { name: 'Settings' });
    assert.is(await settings.locator('dt:has-text("Ledgers") + dd').innerText(), 'none: its ledgers were deleted');
    assert.not.match(await settings.innerText(), ledgerId);
    await page.goto(`${base}/orgs/${ctx.orgId}/webhooks`);
    const card = page.getByRole('listitem', { name: `${ctx.rx.url}/short-lived` });
    await card.getByText('no ledger: its ledgers were deleted').waitFor();
    assert.not.match(await card.innerText(), /ledgers:\s*(·|$)/m);
    assert.not.match(await card.innerText(), ledgerId);
  } finally {
    // gone whatever the checks found: the last test expects the list empty ("No webhooks yet.")
    await ctx.e.call('DELETE', `${LEDGER}/orgs/${ctx.orgId}/webhooks/${hook.id}`, { token: ctx.root });
  }
  await page.reload();
});

W('deleted elsewhere while its log follows a retry: the page says it does not exist, and its log stops asking', async (ctx) => {
  const { page, base } = ctx.e;
  const made = await ctx.e.call('POST', `${LEDGER}/orgs/${ctx.orgId}/webhooks`, { token: ctx.root, body: { url: `${ctx.rx.url}/broken`, events: ['import.completed'], ledgerIds: [ctx.ledgerId] } });
  assert.is(made.status, 201, made.text);
  const path = `/orgs/${ctx.orgId}/webhooks/${made.body.id}`;
  await page.goto(`${base}${path}`);
  await page.getByText('Nothing was sent yet.').waitFor();
  await importContact(ctx, { name: 'Retry Person', company: 'Retry Co' });
  // its delivery fails and waits 5 s for a retry, which the log follows
  await inLog(ctx, 'the failing delivery in the log', 'import ended');
  assert.is((await ctx.e.call('DELETE', `${LEDGER}${path}`, { token: ctx.root })).status, 204);
  await page.getByText('This webhook does not exist').waitFor({ timeout: 10_000 });
  // the log, whose following kept asking every 2 s, is gone with the webhook
  assert.is(await page.getByRole('heading', { name: 'Delivery log' }).count(), 0, 'no log, and nothing following it');
  await page.goto(`${base}/orgs/${ctx.orgId}/webhooks`); // where the next test starts
});

W('delete with confirmation: gone from the list, its page says so', async (ctx) => {
  const { page, base } = ctx.e;
  await card(ctx).getByRole('link', { name: 'Delivery log' }).click();
  await page.getByRole('region', { name: 'Deliveries' }).waitFor();
  await page.getByRole('button', { name: 'Delete' }).click();
  const dialog = page.getByRole('dialog', { name: 'Delete this webhook?' });
  assert.ok((await dialog.innerText()).includes(ctx.hookUrl));
  await shoot(page, '40-webhook-delete');
  await dialog.getByRole('button', { name: 'Delete webhook' }).click();
  await page.waitForURL(new RegExp(`/orgs/${ctx.orgId}/webhooks$`));
  await page.getByText(`Deleted the webhook for ${ctx.hookUrl}.`).waitFor();
  await page.getByText('No webhooks yet.').waitFor();
  assert.is((await ctx.e.call('GET', `${LEDGER}/orgs/${ctx.orgId}/webhooks/${ctx.webhookId}`, { token: ctx.root })).status, 404);
  await page.goto(`${base}/orgs/${ctx.orgId}/webhooks/${ctx.webhookId}`);
  await page.getByText('This webhook does not exist').waitFor();
  // named like a missing ledger or contact
  await page.getByRole('heading', { level: 1, name: 'Webhook not found' }).waitFor();
  assert.is(await page.title(), 'Webhook not found · contact-ledger');
  await shoot(page, '41-webhook-not-found');
});

W.run();
