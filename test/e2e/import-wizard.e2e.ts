// The CSV import wizard against a black-box tester's findings (twenty-ninth session): a preview that
// answers late for a file no longer chosen, "Choose another file" during an upload, leaving the
// wizard during an upload, the mapping step's labels and ids, and a column whose header is blank.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Request } from 'playwright-core';
import { csvForm } from '../helpers.ts';
import { apiToken, hasFocus, ROOT_EMAIL, ROOT_PASSWORD, shoot, signInUi, start, until, type E2E } from './harness.ts';

const ID = '/api/identity/v1';
const LEDGER = '/api/ledger/v1';

interface Ctx {
  e: E2E;
  root: string;
  orgId: string;
  ledgerId: string;
}
/** A CSV of `count` generated contacts: long enough, in the tens of thousands, to be seen running. */
const longCsv = (count: number) => `name,company,email\n${Array.from({ length: count }, (_, i) => `Person ${i},Company ${i % 97},person${i}@example.test`).join('\n')}\n`;

/** Starts an import of longCsv(count) through the API, named `fileName`; returns its id. */
async function startLongImport(ctx: Ctx, count: number, fileName: string): Promise<string> {
  const r = await ctx.e.call('POST', `${LEDGER}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}/imports`, { token: ctx.root, raw: csvForm(longCsv(count), { fileName }) });
  assert.is(r.status, 202, r.text);
  return r.body.id as string;
}
const W = suite<Ctx>('web application: the import wizard');
W.before(async (ctx) => {
  ctx.e = await start();
  ctx.root = await apiToken(ctx.e, ROOT_EMAIL, ROOT_PASSWORD);
  ctx.orgId = (await ctx.e.call('POST', `${ID}/orgs`, { token: ctx.root, body: { name: 'Wizard Org' } })).body.id;
  await signInUi(ctx.e.page, ctx.e.base, ROOT_EMAIL, ROOT_PASSWORD);
});
W.after(async (ctx) => ctx.e.close());
W.before.each(async (ctx) => {
  // a ledger of its own for each test: its imports and contacts are that test's alone
  ctx.ledgerId = (await ctx.e.call('POST', `${LEDGER}/orgs/${ctx.orgId}/ledgers`, { token: ctx.root, body: { name: `Ledger ${Date.now()}` } })).body.id;
  await ctx.e.page.unrouteAll({ behavior: 'ignoreErrors' });
  await ctx.e.page.goto(`${ctx.e.base}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}/import`);
  await ctx.e.page.getByRole('heading', { name: 'Choose a CSV file' }).waitFor();
});

const file = (name: string, text: string) => ({ name, mimeType: 'text/csv', buffer: Buffer.from(text) });
/** The text of the option a labelled select shows. */
const shown = (ctx: Ctx, label: string) => ctx.e.page.getByLabel(label, { exact: true }).evaluate((s) => (s as unknown as { selectedOptions: { textContent: string | null }[] }).selectedOptions[0]?.textContent ?? '');
const imports = async (ctx: Ctx) => (await ctx.e.call('GET', `${LEDGER}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}/imports`, { token: ctx.root })).body.imports as { id: string; status: string; fileName: string }[];
/** Chooses a file on the first step and waits for its columns (the mapping step). */
async function previewFile(ctx: Ctx, name: string, text: string) {
  await ctx.e.page.getByLabel('CSV file', { exact: true }).setInputFiles(file(name, text));
  await ctx.e.page.getByRole('heading', { name: 'Check the columns' }).waitFor();
}
/** Imports the file previewed (its one row) and waits for the import's end. */
async function importOneRow(ctx: Ctx) {
  await ctx.e.page.getByRole('button', { name: 'Import 1 row' }).click();
  await ctx.e.page.getByRole('heading', { name: 'Import finished' }).waitFor();
}
const contacts = async (ctx: Ctx) => (await ctx.e.call('GET', `${LEDGER}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}/contacts`, { token: ctx.root })).body.contacts as { name: string; company: string; contactInfo: { email: string | null } }[];

W('a preview that answers after another file was chosen is discarded; the import reads the file previewed', async (ctx) => {
  const { page } = ctx.e;
  // the first preview (the "big" file) is held until the second one has been shown
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const previews: Request[] = [];
  const settled = new Set<Request>();
  page.on('requestfinished', (r) => settled.add(r));
  page.on('requestfailed', (r) => settled.add(r));
  await page.route('**/imports/preview', async (route) => {
    previews.push(route.request());
    if (previews.length === 1) await held;
    await route.continue().catch(() => undefined); // the page may have cancelled it meanwhile
  });
  const input = page.getByLabel('CSV file', { exact: true });
  await input.setInputFiles(file('big.csv', 'full name,employer\nB1,BC1\nB2,BC2\nB3,BC3\n'));
  await until(async () => previews.length === 1, 'the first preview request');
  await input.setInputFiles(file('small.csv', 'name,company\nAlice,Acme\nBob,Beta\n'));
  await page.getByRole('heading', { name: 'Check the columns' }).waitFor();
  await page.getByText('small.csv: 2 rows').waitFor();
  release();
  await until(async () => settled.has(previews[0]!), 'the first preview to end');
  await page.waitForTimeout(300); // a late answer would be rendered by now
  await page.getByText('small.csv: 2 rows').waitFor({ timeout: 1000 });
  assert.is(await shown(ctx, 'Name (required)'), 'name');
  assert.is(await shown(ctx, 'Company (required)'), 'company');
  const heads = await page.locator('table.preview thead th').allTextContents();
  assert.equal(heads, ['name→ Name', 'company→ Company'], "the small file's columns");
  await page.getByRole('button', { name: 'Import 2 rows' }).click();
  await page.getByRole('heading', { name: 'Import finished' }).waitFor();
  const names = (await contacts(ctx)).map((c) => `${c.name}/${c.company}`).sort();
  assert.equal(names, ['Alice/Acme', 'Bob/Beta']);
});

W('"Choose another file" during an upload cancels it: no import is created', async (ctx) => {
  const { page, context } = ctx.e;
  // about 700 kB sent at 100 kB/s: seven seconds of upload to cancel in
  const rows = Array.from({ length: 9000 }, (_, i) => `Person ${i},Company ${i % 40},Engineer at the works,person${i}@example.test`);
  await page.getByLabel('CSV file', { exact: true }).setInputFiles(file('slow.csv', `name,company,title,email\n${rows.join('\n')}\n`));
  await page.getByRole('heading', { name: 'Check the columns' }).waitFor();
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 20, downloadThroughput: 10e6, uploadThroughput: 100e3 });
  try {
    await page.getByRole('button', { name: 'Import 9,000 rows' }).click();
    await page.getByText(/Uploading/).first().waitFor();
    await page.getByText(/^Uploading slow\.csv: \d+%\. Leaving this page cancels the upload\.$/).waitFor();
    await page.waitForTimeout(1000);
    const sentAt = Date.now();
    await page.getByRole('button', { name: 'Choose another file' }).click();
    await page.getByRole('heading', { name: 'Choose a CSV file' }).waitFor();
    await page.getByText('The upload of slow.csv was cancelled; nothing was imported.').waitFor();
    // longer than the whole upload would have taken: the wizard stays, the server has no job
    await page.waitForTimeout(Math.max(0, 9000 - (Date.now() - sentAt)));
    assert.is(await page.getByRole('heading', { name: 'Choose a CSV file' }).count(), 1, 'still at step 1');
    assert.is(await page.getByRole('heading', { name: /Import(ing…| finished)/ }).count(), 0, 'no import shown');
    assert.equal(await imports(ctx), [], 'no import job');
  } finally {
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
    await cdp.detach();
  }
});

W('leaving the wizard during an upload cancels it: no import is created, nothing is left on the server', async (ctx) => {
  const { page, context, dataDir } = ctx.e;
  // about 700 kB sent at 100 kB/s, as above; the user goes to another page of the app meanwhile
  const rows = Array.from({ length: 9000 }, (_, i) => `Person ${i},Company ${i % 40},Engineer at the works,person${i}@example.test`);
  await page.getByLabel('CSV file', { exact: true }).setInputFiles(file('left.csv', `name,company,title,email\n${rows.join('\n')}\n`));
  await page.getByRole('heading', { name: 'Check the columns' }).waitFor();
  const uploads: Request[] = [];
  const ended = new Map<Request, 'finished' | 'failed'>();
  const path = `${LEDGER}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}/imports`;
  const isUpload = (r: Request) => r.method() === 'POST' && new URL(r.url()).pathname === path;
  const sent = (r: Request) => isUpload(r) && uploads.push(r);
  const finished = (r: Request) => isUpload(r) && ended.set(r, 'finished');
  const failed = (r: Request) => isUpload(r) && ended.set(r, 'failed');
  page.on('request', sent).on('requestfinished', finished).on('requestfailed', failed);
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 20, downloadThroughput: 10e6, uploadThroughput: 100e3 });
  try {
    await page.getByRole('button', { name: 'Import 9,000 rows' }).click();
    await page.getByText('Uploading left.csv').waitFor();
    await page.waitForTimeout(1000);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Team' }).click();
    await page.getByRole('heading', { name: 'Team' }).waitFor();
    assert.is(uploads.length, 1, 'one upload request');
    // the page ends the upload at once; left alone it would have finished (and made an import) in a few seconds
    const how = await until(async () => ended.get(uploads[0]!), 'the upload request to end', 15_000);
    assert.is(how, 'failed', 'the upload was aborted when the wizard was left');
  } finally {
    page.off('request', sent).off('requestfinished', finished).off('requestfailed', failed);
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
    await cdp.detach();
  }
  // the server let go of the partial file, and made no import of it
  const tmp = join(dataDir, 'uploads', 'tmp');
  await until(async () => !existsSync(tmp) || readdirSync(tmp).length === 0, 'no upload left in uploads/tmp');
  assert.equal(await imports(ctx), [], 'no import job');
});

W('once the whole file has been sent, the import cannot be cancelled and its answer is shown', async (ctx) => {
  const { page, context } = ctx.e;
  const rows = Array.from({ length: 800 }, (_, i) => `Person ${i},Company ${i % 40},Engineer at the works,person${i}@example.test`);
  await page.getByLabel('CSV file', { exact: true }).setInputFiles(file('sent.csv', `name,company,title,email\n${rows.join('\n')}\n`));
  await page.getByRole('heading', { name: 'Check the columns' }).waitFor();
  // sent in about half a second; the answer takes 2.5 s more to come back
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 2500, downloadThroughput: 10e6, uploadThroughput: 100e3 });
  try {
    await page.getByRole('button', { name: 'Import 800 rows' }).click();
    await page.getByText('sent.csv has been sent; the server is checking it').waitFor();
    assert.ok(await page.getByRole('button', { name: 'Choose another file' }).isDisabled(), 'no cancel that would only hide the answer');
    await page.getByRole('heading', { name: /Import(ing…| finished)/ }).waitFor();
  } finally {
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
    await cdp.detach();
  }
  await page.getByRole('heading', { name: 'Import finished' }).waitFor();
  assert.is((await imports(ctx)).length, 1);
});

W('the mapping step: every id is unique and every control has its label', async (ctx) => {
  const { page } = ctx.e;
  await page.getByLabel('CSV file', { exact: true }).setInputFiles(file('labels.csv', 'name,company,title,email\nAda,Engines,Countess,ada@engines.test\n'));
  await page.getByRole('heading', { name: 'Check the columns' }).waitFor();
  // (strings: the tests are type-checked without the DOM library)
  const dupes = await page.evaluate(`(() => {
    const seen = new Map();
    for (const el of document.querySelectorAll('[id]')) seen.set(el.id, (seen.get(el.id) ?? 0) + 1);
    return [...seen].filter(([, n]) => n > 1).map(([id]) => id);
  })()`);
  assert.equal(dupes, [], 'ids used twice');
  const unlabelled = await page.evaluate(`[...document.querySelectorAll('main select, main input, main textarea')]
    .filter((el) => el.labels.length === 0 && !el.getAttribute('aria-label') && !el.getAttribute('aria-labelledby'))
    .map((el) => el.outerHTML.slice(0, 80))`);
  assert.equal(unlabelled, [], 'controls without a label');
  // the Title field's label leads to its own select
  await page.locator('label', { hasText: /^Title$/ }).click();
  assert.is(await page.evaluate('document.activeElement?.tagName'), 'SELECT');
  assert.is(await shown(ctx, 'Title'), 'title');
});

W('a column with a blank header: shown as "(column 3)", not marked as mapped, and it can be imported', async (ctx) => {
  const { page } = ctx.e;
  await page.getByLabel('CSV file', { exact: true }).setInputFiles(file('blank.csv', 'name,company,,title\nAda Lovelace,Engines,ada@engines.test,Countess\n'));
  await page.getByRole('heading', { name: 'Check the columns' }).waitFor();
  const heads = await page.locator('table.preview thead th').allTextContents();
  assert.is(heads.length, 4);
  assert.ok(heads[2]!.includes('(column 3)'), `the blank column is named by its place: ${heads[2]}`);
  assert.not.ok(heads[2]!.includes('→'), `the blank column is not mapped: ${heads[2]}`);
  assert.is(heads.filter((h) => h.includes('→ E-mail')).length, 0, 'no column is marked as the e-mail before one is chosen');
  assert.is(await shown(ctx, 'E-mail'), '— not imported —');
  await page.getByLabel('E-mail', { exact: true }).selectOption({ label: '(column 3)' });
  assert.is(await page.locator('table.preview thead th').nth(2).textContent(), '(column 3)→ E-mail');
  await shoot(page, 'wizard-blank-column');
  await page.getByRole('button', { name: 'Import 1 row' }).click();
  await page.getByRole('heading', { name: 'Import finished' }).waitFor();
  const [c] = await contacts(ctx);
  assert.is(c?.name, 'Ada Lovelace');
  assert.is(c?.contactInfo.email, 'ada@engines.test');
});

// A keyboard and screen-reader tester's findings (thirty-seventh session): each step replaced the
// control that was used, and focus fell to <body>.
W('the ledger\'s tabs have window titles of their own (a tester\'s case: three pages titled "Ledger …")', async (ctx) => {
  const { page, base } = ctx.e;
  const name = (await ctx.e.call('GET', `${LEDGER}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}`, { token: ctx.root })).body.name;
  await until(async () => (await page.title()) === `Import CSV · ${name} · contact-ledger`, 'the import page\'s title', 5000);
  await page.getByRole('link', { name: 'Import history' }).click();
  await until(async () => (await page.title()) === `Import history · ${name} · contact-ledger`, 'the history\'s title', 5000);
  await page.goto(`${base}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}`);
  await until(async () => (await page.title()) === `${name} · contact-ledger`, 'the contacts\' title', 5000);
});

W('focus follows the steps: the preview\'s heading, the import\'s heading, the file input after "Choose another file"', async (ctx) => {
  const { page } = ctx.e;
  const input = page.getByLabel('CSV file', { exact: true });
  const columns = page.getByRole('heading', { name: 'Check the columns' });
  await input.setInputFiles(file('focus.csv', 'name,company\nAda,Engines\n'));
  await columns.waitFor();
  await until(() => hasFocus(columns), 'focus on "Check the columns"', 5000);
  await page.getByRole('button', { name: 'Choose another file' }).click();
  await until(() => hasFocus(input), 'focus on the file input', 5000);
  await input.setInputFiles(file('focus.csv', 'name,company\nAda,Engines\n'));
  await until(() => hasFocus(columns), 'focus on "Check the columns" again', 5000);
  await page.getByRole('button', { name: 'Import 1 row' }).click();
  const run = page.getByRole('heading', { name: /^Import(ing…| finished)$/ });
  await run.waitFor();
  await until(() => hasFocus(run), 'focus on the import\'s heading', 5000);
  await page.getByRole('heading', { name: 'Import finished' }).waitFor();
  await page.getByRole('button', { name: 'Import another file' }).click();
  await until(() => hasFocus(input), 'focus on the file input after "Import another file"', 5000);
});

// A black-box tester's findings: a file with two columns that could both be one field was refused at
// preview, with a message that told the user to name the column in a mapping (JSON) they were never
// shown; the refusal said "cannot be imported" twice; focus went to <main> after a 422, to the file
// input after a 415.
W('two columns that could both be the e-mail: the mapping step says so at the field, and the column chosen is imported', async (ctx) => {
  const { page } = ctx.e;
  await page.getByLabel('CSV file', { exact: true }).setInputFiles(file('mails.csv', 'name,company,email,E-mail\nAda,Engines,ada@work.test,ada@home.test\n'));
  await page.getByRole('heading', { name: 'Check the columns' }).waitFor();
  const select = page.getByLabel('E-mail', { exact: true });
  assert.is(await shown(ctx, 'E-mail'), '— not imported —', 'neither column is chosen for the user');
  const note = page.locator(`#${await select.getAttribute('aria-describedby')}`);
  assert.is((await note.textContent())?.trim(), '“email” and “E-mail” (columns 3 and 4) could both be the E-mail: choose the one to import, or leave it not imported.');
  assert.ok(await page.getByRole('button', { name: 'Import 1 row' }).isEnabled(), 'the e-mail is not required');
  await shoot(page, 'wizard-ambiguous-column');
  await select.selectOption({ label: 'E-mail' });
  assert.is(await page.locator('table.preview thead th').nth(3).textContent(), 'E-mail→ E-mail');
  await page.getByRole('button', { name: 'Import 1 row' }).click();
  await page.getByRole('heading', { name: 'Import finished' }).waitFor();
  const [c] = await contacts(ctx);
  assert.equal([c?.name, c?.contactInfo.email], ['Ada', 'ada@home.test']);
});

W('two columns that could both be the name (a required field): the user picks one; the same name twice is said at the field before anything is sent', async (ctx) => {
  const { page } = ctx.e;
  const name = page.getByLabel('Name (required)', { exact: true });
  await previewFile(ctx, 'names.csv', 'Name,NAME,company\nAda,ADA,Engines\n');
  assert.is(await shown(ctx, 'Name (required)'), '— not imported —');
  await page.getByText('“Name” and “NAME” (columns 1 and 2) could both be the Name: choose the one to import.').waitFor();
  assert.ok(await page.getByRole('button', { name: 'Import 1 row' }).isDisabled(), 'a name is needed');
  await name.selectOption({ label: 'NAME' });
  await importOneRow(ctx);
  assert.equal((await contacts(ctx)).map((c) => c.name), ['ADA']);
  // the same text twice: a mapping names columns by their text, so neither can be chosen; said before Import
  await page.getByRole('button', { name: 'Import another file' }).click();
  await previewFile(ctx, 'twice.csv', 'name,name,company\nAda,Bo,Engines\n');
  await page.getByText('The header names “name” twice (columns 1 and 2): the import cannot tell them apart. Rename one of them in the file, then choose it.').waitFor();
  await name.selectOption({ index: 1 });
  assert.is(await name.getAttribute('aria-invalid'), 'true');
  assert.ok(await page.getByRole('button', { name: 'Import 1 row' }).isDisabled(), 'nothing is sent that the server would refuse');
  assert.is((await imports(ctx)).length, 1, 'only the first import');
});

// A reviewer's case: with `name,name` the selects offered "name" twice, which could not be told
// apart, and a twin chosen left the note about them a muted hint beside a select marked invalid,
// Import disabled and no error said. (No mapping can choose either: it names columns by their text.)
W('a header that names a column twice: its columns are offered by their place, and one chosen is said once, as an error at the field', async (ctx) => {
  const { page } = ctx.e;
  const name = page.getByLabel('Name (required)', { exact: true });
  const why = 'The header names “name” twice (columns 1 and 2): the import cannot tell them apart. Rename one of them in the file, then choose it.';
  await previewFile(ctx, 'twins.csv', 'name,name,company\nAda,Bo,Engines\n');
  assert.equal(await name.locator('option').allTextContents(), ['— not imported —', 'name (column 1)', 'name (column 2)', 'company']);
  assert.equal(await page.locator('table.preview thead th').allTextContents(), ['name (column 1)', 'name (column 2)', 'company→ Company']);
  await page.getByText(why).waitFor();
  assert.is(await page.getByRole('alert').filter({ hasText: why }).count(), 0, 'a hint while neither is chosen');
  await name.selectOption({ label: 'name (column 2)' });
  const error = page.getByRole('alert').filter({ hasText: why });
  await error.waitFor();
  assert.is(await page.getByText(why).count(), 1, 'said once');
  assert.is(await name.getAttribute('aria-describedby'), await error.getAttribute('id'), 'the select is described by it');
  assert.is(await name.getAttribute('aria-invalid'), 'true');
  assert.ok(await page.getByRole('button', { name: 'Import 1 row' }).isDisabled(), 'nothing is sent that the server would refuse');
  await shoot(page, 'wizard-header-twice');
  await name.selectOption({ label: '— not imported —' });
  await until(async () => (await page.getByRole('alert').filter({ hasText: why }).count()) === 0, 'a hint again once no twin is chosen', 5000);
  assert.equal(await imports(ctx), []);
});

// A reviewer's case: of two first-name columns only the one the suggestion took could make the
// name's pair (`Given name` + `Last Name` was not offered), and two alike (`First Name`, `first_name`)
// left no pair to choose at all, only single columns, each of which would have been the whole name.
W('two first-name columns: the name offers each with the last name, and the pair chosen is imported', async (ctx) => {
  const { page } = ctx.e;
  const name = page.getByLabel('Name (required)', { exact: true });
  // different names: the suggestion takes the first, and the other can be chosen
  await previewFile(ctx, 'given.csv', 'First Name,Given name,Last Name,Company\nAda,Augusta,Lovelace,Engines\n');
  assert.is(await shown(ctx, 'Name (required)'), 'First Name + Last Name');
  await name.selectOption({ label: 'Given name + Last Name' });
  assert.equal(await page.locator('table.preview thead th').allTextContents(), ['First Name', 'Given name→ Name', 'Last Name→ Name', 'Company→ Company']);
  await importOneRow(ctx);
  assert.equal((await contacts(ctx)).map((c) => c.name), ['Augusta Lovelace']);
  // names alike: neither is chosen for the user, and the note says a pair is to be chosen
  await page.getByRole('button', { name: 'Import another file' }).click();
  await previewFile(ctx, 'firsts.csv', 'First Name,first_name,Last Name,Company\nAda,Augusta,King,Engines\n');
  assert.is(await shown(ctx, 'Name (required)'), '— not imported —');
  const note = page.locator(`#${await name.getAttribute('aria-describedby')}`);
  assert.is((await note.textContent())?.trim(), '“First Name” and “first_name” (columns 1 and 2) could both be the first name: choose the first name + last name pair to import.');
  assert.ok(await page.getByRole('button', { name: 'Import 1 row' }).isDisabled(), 'a name is needed');
  await name.selectOption({ label: 'first_name + Last Name' });
  await importOneRow(ctx);
  assert.equal((await contacts(ctx)).map((c) => c.name).sort(), ['Augusta King', 'Augusta Lovelace']);
});

W('a file refused at preview is said once, and focus goes to the file input (422 and 415 alike)', async (ctx) => {
  const { page } = ctx.e;
  const input = page.getByLabel('CSV file', { exact: true });
  for (const [name, bytes, reason] of [
    ['header.csv', Buffer.from('name,company\n'), /^This file cannot be imported: the file has a header row but no contacts\.$/],
    ['image.csv', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0]), /^This file cannot be imported: the file is a PNG image, not a CSV text file\.$/],
  ] as const) {
    await input.setInputFiles({ name, mimeType: 'text/csv', buffer: bytes });
    const alert = page.getByRole('alert').filter({ hasText: 'This file cannot be imported' });
    await alert.waitFor();
    const text = (await alert.textContent())!.trim();
    assert.match(text, reason, text);
    assert.is(text.match(/cannot be imported/g)?.length, 1, `said once: ${text}`);
    await until(() => hasFocus(input), `focus on the file input after ${name}`, 5000);
    await page.waitForTimeout(300);
    assert.ok(await hasFocus(input), `focus stays on the file input after ${name}`);
    assert.is(await input.getAttribute('aria-describedby'), await alert.getAttribute('id'), 'the input is described by the refusal');
  }
});

// A black-box tester's finding: Back while "Importing…", then Forward or a reload, opened the wizard
// afresh at "Choose a CSV file", with no sign of the import that went on — an invitation to import again.
W('the running import is kept in the URL: Back then Forward, and a reload, show its progress and its result', async (ctx) => {
  const { page, base } = ctx.e;
  // from the ledger's contacts, as the tester went: Back returns there
  const contactsUrl = `${base}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}`;
  await page.goto(contactsUrl);
  await page.getByRole('navigation', { name: 'Ledger' }).getByRole('link', { name: 'Import CSV' }).click();
  await page.getByRole('heading', { name: 'Choose a CSV file' }).waitFor();
  await page.getByLabel('CSV file', { exact: true }).setInputFiles(file('big.csv', longCsv(60_000)));
  await page.getByRole('heading', { name: 'Check the columns' }).waitFor();
  await page.getByRole('button', { name: 'Import 60,000 rows' }).click();
  await page.getByRole('heading', { name: /^Import(ing…| finished)$/ }).waitFor();
  const [job] = await imports(ctx);
  assert.ok(job);
  const url = `${base}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}/import?import=${job!.id}`;
  assert.is(page.url(), url, 'the import is in the URL');
  await page.goBack();
  await until(async () => page.url() === contactsUrl, 'Back to the contacts', 5000);
  await page.goForward();
  await page.getByRole('heading', { name: /^Import(ing…| finished)$/ }).waitFor();
  assert.is(await page.getByRole('heading', { name: 'Choose a CSV file' }).count(), 0, 'not the first step');
  await page.getByRole('progressbar', { name: 'Import big.csv' }).waitFor();
  await page.reload();
  await page.getByRole('progressbar', { name: 'Import big.csv' }).waitFor();
  await page.getByRole('heading', { name: 'Import finished' }).waitFor({ timeout: 60_000 });
  await page.getByText('60,000 of 60,000 rows').waitFor();
  // "Import another file" starts afresh, and takes the import out of the URL
  await page.getByRole('button', { name: 'Import another file' }).click();
  await page.getByRole('heading', { name: 'Choose a CSV file' }).waitFor();
  assert.is(page.url(), `${base}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}/import`);
  assert.is((await imports(ctx)).length, 1, 'one import');
});

W('the wizard opened while the ledger has an import running says so, with a link to follow it', async (ctx) => {
  const { page, base } = ctx.e;
  const importId = await startLongImport(ctx, 60_000, 'running.csv');
  await page.goto(`${base}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}/import`);
  await page.getByRole('heading', { name: 'Choose a CSV file' }).waitFor();
  const notice = page.getByText(/^An import of running\.csv is running/);
  await notice.waitFor();
  await page.getByRole('link', { name: 'Follow the import of running.csv' }).click();
  await page.getByRole('progressbar', { name: 'Import running.csv' }).waitFor();
  assert.is(page.url(), `${base}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}/import?import=${importId}`);
  await page.getByRole('heading', { name: 'Import finished' }).waitFor({ timeout: 60_000 });
});

// A reviewer's case: the note stayed as the page first read it, its count frozen and an import that
// had ended still named as running, until a reload.
W('the note of imports still running follows them live: its count goes on, and it goes once the import has ended', async (ctx) => {
  const { page, base } = ctx.e;
  await startLongImport(ctx, 60_000, 'live.csv');
  await page.goto(`${base}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}/import`);
  const note = page.locator('.notice').filter({ hasText: /^An import of live\.csv is running/ });
  await note.waitFor();
  const first = await note.textContent();
  await until(async () => (await note.textContent({ timeout: 1000 }).catch(() => null)) !== first, 'the count to go on without a reload', 30_000);
  assert.is(await page.getByRole('status').filter({ hasText: 'An import of live.csv' }).count(), 0, 'shown, not read out at every change of its count');
  await note.waitFor({ state: 'detached', timeout: 60_000 });
  assert.equal((await imports(ctx)).map((i) => i.status), ['completed'], 'gone because the import ended');
  assert.is(await page.getByRole('heading', { name: 'Choose a CSV file' }).count(), 1, 'still the first step');
});

/** Imports a file whose third column has no name and whose second row has no company; opens its rejected rows. */
async function rejectedOfUnnamed(ctx: Ctx) {
  const { page } = ctx.e;
  await page.getByLabel('CSV file', { exact: true }).setInputFiles(file('unnamed.csv', 'name,company,\nAda,Engines,note 1\nNo Company,,note 2\n'));
  await page.getByRole('heading', { name: 'Check the columns' }).waitFor();
  await page.getByRole('button', { name: 'Import 2 rows' }).click();
  await page.getByRole('heading', { name: 'Import finished' }).waitFor();
  await page.getByRole('button', { name: 'Open the 1 rejected row' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByRole('table').waitFor();
  return dialog;
}

W('the rejected rows: a column with a blank header is named "(column 3)", as in the wizard', async (ctx) => {
  const dialog = await rejectedOfUnnamed(ctx);
  await dialog.getByText('1 row was not imported; the reason column says why. Fix it in the file').waitFor(); // not "1 rows were" (a tester's case)
  await ctx.e.page.locator('.page-head').getByText('1 contact', { exact: true }).waitFor(); // the ledger's one contact, not "1 contacts"
  const heads = (await dialog.locator('thead th').allTextContents()).map((h) => h.trim());
  assert.is(heads.filter((h) => h === '').length, 0, `no empty column header: ${JSON.stringify(heads)}`);
  assert.ok(heads.includes('(column 3)'), `the unnamed column is named by its place: ${JSON.stringify(heads)}`);
  await dialog.getByRole('button', { name: 'Close' }).last().click();
});

W('the rejected rows: focus is back on Download once the file is saved', async (ctx) => {
  const { page } = ctx.e;
  const dialog = await rejectedOfUnnamed(ctx);
  const button = dialog.getByRole('button', { name: 'Download rejected rows (CSV)' });
  await Promise.all([page.waitForEvent('download'), button.click()]);
  await until(() => hasFocus(button), 'focus back on Download', 5000);
  await dialog.getByRole('button', { name: 'Close' }).last().click();
});

W('a role lost mid-wizard is said in an alert that has focus', async (ctx) => {
  const { page, base, call } = ctx.e;
  const email = 'wanda.editor@wizard.test';
  const password = 'editor password 1';
  const m = await call('POST', `${ID}/orgs/${ctx.orgId}/members`, { token: ctx.root, body: { email, role: 'editor', password, name: 'Wanda' } });
  assert.is(m.status, 201, m.text);
  await ctx.e.context.clearCookies();
  await signInUi(page, base, email, password);
  try {
    await page.goto(`${base}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}/import`);
    await page.getByLabel('CSV file', { exact: true }).setInputFiles(file('late.csv', 'name,company\nAda,Engines\n'));
    await page.getByRole('heading', { name: 'Check the columns' }).waitFor();
    const r = await call('PATCH', `${ID}/orgs/${ctx.orgId}/members/${m.body.userId}`, { token: ctx.root, body: { role: 'viewer' } });
    assert.is(r.status, 200, r.text);
    await page.getByRole('button', { name: 'Import 1 row' }).click();
    const alert = page.getByRole('alert').filter({ hasText: 'Your role in this organization is now viewer' });
    await alert.waitFor({ timeout: 5000 });
    await until(() => hasFocus(alert), 'focus on the message', 5000);
    assert.equal(await imports(ctx), [], 'no import job');
  } finally {
    await ctx.e.context.clearCookies();
    await signInUi(page, base, ROOT_EMAIL, ROOT_PASSWORD);
  }
});

W('a ledger deleted while an import runs: the history says it does not exist and stops asking', async (ctx) => {
  const { page, base, call } = ctx.e;
  // an import long enough to be seen running (tens of thousands of rows take seconds)
  await startLongImport(ctx, 40_000, 'long.csv');
  await page.goto(`${base}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}/imports`);
  await page.getByRole('region', { name: 'Imports' }).getByRole('progressbar').waitFor();
  assert.is((await call('DELETE', `${LEDGER}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}`, { token: ctx.root })).status, 204);
  await page.getByRole('heading', { level: 1, name: 'Ledger not found' }).waitFor();
  // it asked every second while the import ran: in three seconds more it would ask twice or thrice
  await page.waitForRequest((q) => new URL(q.url()).pathname.endsWith('/imports'), { timeout: 3000 }).then(
    (q) => assert.unreachable(`asked again after the 404: ${q.url()}`),
    () => undefined,
  );
  assert.is(await page.getByRole('navigation', { name: 'Ledger' }).count(), 0, 'no tabs');
});

W('a ledger deleted while the wizard follows its import: the heading says it does not exist, and the wizard stops asking (a reviewer\'s case)', async (ctx) => {
  const { page, call } = ctx.e;
  // an import long enough to be seen running (tens of thousands of rows take seconds)
  await page.getByLabel('CSV file', { exact: true }).setInputFiles(file('long.csv', longCsv(40_000)));
  await page.getByRole('heading', { name: 'Check the columns' }).waitFor();
  await page.getByRole('button', { name: /^Import 40,000 rows/ }).click();
  await page.getByRole('heading', { name: 'Importing…' }).waitFor();
  const [job] = await imports(ctx);
  assert.ok(job && !['completed', 'failed'].includes(job.status), `still running: ${job?.status}`);
  assert.is((await call('DELETE', `${LEDGER}/orgs/${ctx.orgId}/ledgers/${ctx.ledgerId}`, { token: ctx.root })).status, 204);
  await page.getByRole('heading', { level: 1, name: 'Ledger not found' }).waitFor();
  assert.is(await page.getByText('Lost track of the import').count(), 0, 'no error box under the old heading');
  assert.is(await page.getByRole('navigation', { name: 'Ledger' }).count(), 0, 'no tabs');
  // it asked every 400 ms while the import ran
  await page.waitForRequest((q) => new URL(q.url()).pathname.endsWith(`/imports/${job!.id}`), { timeout: 3000 }).then(
    (q) => assert.unreachable(`asked again after the 404: ${q.url()}`),
    () => undefined,
  );
});

W.run();
