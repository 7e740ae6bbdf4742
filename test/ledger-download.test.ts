// CSV download of a ledger's contacts (SPEC §4.3; RELIABILITY.md I4): headers and file name, the
// fixed header row, every matching row across internal pages, the list's filters and sort,
// spreadsheet formula-injection escaping (and turning it off), access and query validation.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { parse } from 'csv-parse/sync';
import { stringify } from 'csv-stringify/sync';
import { get as httpGet, type IncomingMessage } from 'node:http';
import { csvLines } from '../src/csv/write.ts';
import { addContacts, createLedger, expectStatus, ledgerPath, listAll, seedWorld, startApp, until, uploadCsv, type Response, type TestApp, type World } from './helpers.ts';

type Ctx = { t: TestApp; w: World; big: string; bigImports: string[]; formulas: string };

const HEADER = ['id', 'referenceId', 'name', 'linkedin', 'importCompany', 'importTitle', 'company', 'title', 'titleLevel', 'titleDomain', 'email', 'location', 'isVerified', 'lastJobChangedAt', 'lastInfoChangedAt', 'createdAt'];
const col = (name: string) => HEADER.indexOf(name);

const BIG = 2500; // more than two internal pages of 1000
// (a NUL cannot be stored: contact fields refuse it; the rejected-rows CSV, which gives it back, escapes it — below)
const FORMULAS = ['=1+2', '+1', '-1', '@SUM(A1)', '\tx', '\rx', '\nx'];

const downloadPath = (w: World, ledgerId: string, query = '') => `${ledgerPath(w.orgId, ledgerId)}/contacts/download${query ? `?${query}` : ''}`;

async function download(t: TestApp, token: string, path: string): Promise<{ res: Response; rows: string[][] }> {
  const res = await t.call('GET', path, { token });
  expectStatus(res, 200, `download ${path}`);
  // strict: any line break outside quotes ends a record (as a spreadsheet reads it)
  return { res, rows: parse(res.text, { relax_column_count: false, record_delimiter: ['\r\n', '\n', '\r'] }) as string[][] };
}

const byRefOf = (rows: string[][]) => new Map(rows.slice(1).map((r) => [r[col('referenceId')]!, r]));

/**
 * The cells a spreadsheet whose list separator is `sep` makes of the text: cut at `sep` and line
 * ends outside quotes (a quoted cell starts with its quote).
 */
function cellsSplitBy(text: string, sep: string): string[] {
  const cells: string[] = [];
  let quoted = false;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"') quoted = !quoted;
    else if (!quoted && (c === sep || c === '\r' || c === '\n')) {
      cells.push(text.slice(start, i));
      start = i + 1;
    }
  }
  cells.push(text.slice(start));
  return cells;
}

/** `yyyymmdd-hhmmss` (UTC) of a time. */
const stamp = (ms: number) => {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}-${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}`;
};

const D = suite<Ctx>('contacts download');
D.before(async (ctx) => {
  ctx.t = await startApp();
  ctx.w = await seedWorld(ctx.t);
  const { t, w } = ctx;
  // a ledger of BIG contacts in two imports (one CSV, one API batch)
  ctx.big = await createLedger(t, w.tokens.editor, w.orgId, 'big');
  const rows = Array.from({ length: BIG - 500 }, (_, i) => `Person ${String(i).padStart(5, '0')},Company ${i % 7},Engineer,ref-${i},https://linkedin.com/in/p-${i}`);
  const csvJob = await uploadCsv(t, w.tokens.editor, w.orgId, ctx.big, `name,company,title,referenceId,linkedin\n${rows.join('\n')}\n`);
  assert.is(csvJob.imported, BIG - 500);
  const apiJob = await addContacts(
    t,
    w.tokens.editor,
    w.orgId,
    ctx.big,
    Array.from({ length: 500 }, (_, i) => ({ name: `Batch ${String(i).padStart(3, '0')}`, company: 'Batch Co', location: 'Paris, France', email: `b${i}@example.com` })),
  );
  assert.is(apiJob.imported, 500);
  ctx.bigImports = [csvJob.id, apiJob.id];
  // a ledger of cells a spreadsheet would run as formulas
  ctx.formulas = await createLedger(t, w.tokens.editor, w.orgId, 'formulas');
  const contacts = [
    ...FORMULAS.map((name, i) => ({ name, company: `Co ${i}`, referenceId: `f${i}` })),
    { name: 'a,=1+2', company: '=cmd|\' /C calc\'!A0', title: '-Director', referenceId: 'comma' },
    { name: 'He said "hi"\r\nthen left', company: 'Plain, Inc', location: '@home', referenceId: 'quotes' },
    { name: 'Ada', company: '+Acme', email: 'ada@example.com', referenceId: '-5' },
    { name: 'Zoë Łukasz 😀', company: 'Ünïcode, GmbH', referenceId: 'unicode' }, // multi-byte UTF-8, quoted
    { name: "Bob;=cmd|' /C calc'!A0;x", company: 'Tab\t=1+2\tCo', referenceId: 'separators' }, // a ; or tab list separator would split these
    { name: "'=typed", company: "'@co", title: "''-two", location: "'plain", referenceId: 'typed' }, // text that looks escaped already
    // blanks before a formula character (trimmed on import, but a zero-width space is kept before them): a spreadsheet that trims reads a formula
    { name: '\u200b=1+2', company: '\u200b\u3000@co', title: "'\u200b -x", location: '\u200bplain', referenceId: 'blanks' },
  ];
  const job = await addContacts(t, w.tokens.editor, w.orgId, ctx.formulas, contacts);
  assert.is(job.imported, contacts.length, JSON.stringify(job));
});
D.after(async (ctx) => ctx.t.close());

D('headers: text/csv; charset=utf-8 and an attachment named ledger-<id>-<yyyymmdd-hhmmss>.csv', async ({ t, w, formulas }) => {
  const { res, rows } = await download(t, w.tokens.viewer, downloadPath(w, formulas));
  assert.is(res.headers.get('content-type'), 'text/csv; charset=utf-8');
  const disposition = res.headers.get('content-disposition') ?? '';
  const name = `ledger-${formulas}-${stamp(t.clock.now())}.csv`;
  assert.is(disposition, `attachment; filename="${name}"; filename*=UTF-8''${name}`);
  assert.match(disposition, /^attachment; filename="ledger-l_[0-9a-z]+-\d{8}-\d{6}\.csv"; /);
  assert.equal(rows[0], HEADER, 'the fixed header of SPEC §4.3, in order');
  assert.ok(res.text.startsWith(`${HEADER.join(',')}\r\n`), 'no BOM, CRLF records');
});

D('the download gives the event loop a turn between its pages: a client reading as fast as they come does not hold every other request', async ({ t, big }) => {
  const pages = t.rt.ledger.contacts.pages(big, {}, '+createdAt');
  let turns = 0;
  const count = () => {
    turns++;
    if (turns < 100) setImmediate(count);
  };
  setImmediate(count);
  const seen: number[] = [];
  for await (const page of pages) seen.push(turns), void page;
  assert.ok(seen.length >= 2, `${seen.length} pages`);
  // each page after the first comes after at least one more turn (it was all promise callbacks: a
  // tester's server answered nothing else for 5.6 s while 852,000 contacts went out)
  for (let i = 1; i < seen.length; i++) assert.ok(seen[i]! > seen[i - 1]!, `a turn before page ${i + 1}: ${seen.join(',')}`);
});

D('a download with a "since" whose wait for the write in flight times out is a 503 with Retry-After, not a 200 cut off after its header (a reviewer\'s case)', async ({ t, w, formulas }) => {
  const lock = t.rt.db.processWriteLock();
  lock.acquire('thread', 1_000); // a bulk-thread write that does not end
  try {
    const r = await t.call('GET', `${ledgerPath(w.orgId, formulas)}/contacts/download?lastInfoChangedAt=2000-01-01`, { token: w.tokens.viewer });
    assert.is(r.status, 503, r.text.slice(0, 200));
    assert.is(r.body.code, 'database_busy');
    assert.ok(r.headers.get('retry-after'));
  } finally {
    lock.release('thread');
  }
  const after = await t.call('GET', `${ledgerPath(w.orgId, formulas)}/contacts/download?lastInfoChangedAt=2000-01-01`, { token: w.tokens.viewer });
  assert.is(after.status, 200, 'once the write ended');
});

D('every contact across internal pages, each once, with the values of the list', async ({ t, w, big }) => {
  const { rows } = await download(t, w.tokens.viewer, downloadPath(w, big));
  const data = rows.slice(1);
  assert.is(data.length, BIG);
  const ids = data.map((r) => r[col('id')]!);
  assert.is(new Set(ids).size, BIG, 'no row twice');
  const listed = await listAll(t, w.tokens.viewer, `${ledgerPath(w.orgId, big)}/contacts`);
  assert.equal(ids, listed.map((c) => c.id), 'same rows in the same (default) order as the list');
  const byId = new Map(listed.map((c) => [c.id, c]));
  for (const r of data) {
    const c = byId.get(r[col('id')]!)!;
    const expected = [
      c.id, c.referenceId, c.name, c.linkedin, c.importCompany, c.importTitle, c.company, c.title, c.titleLevel, c.titleDomain,
      c.contactInfo.email, c.location, String(c.isVerified), c.lastJobChangedAt, c.lastInfoChangedAt, c.createdAt,
    ].map((v) => (v === null ? '' : v));
    assert.equal(r, expected);
  }
  const p7 = data.find((r) => r[col('referenceId')] === 'ref-7')!;
  assert.equal([p7[col('name')], p7[col('linkedin')], p7[col('title')], p7[col('isVerified')]], ['Person 00007', 'https://www.linkedin.com/in/p-7', 'Engineer', 'false']);
  assert.match(p7[col('createdAt')]!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  const b1 = data.find((r) => r[col('name')] === 'Batch 001')!;
  assert.equal([b1[col('location')], b1[col('email')], b1[col('referenceId')]], ['Paris, France', 'b1@example.com', '']);
});

D('the filters and sorts of the list apply (every filter and sort: the download pages the list\'s own query)', async ({ t, w, big, bigImports }) => {
  const cases = [
    'name=person%200001',
    'company=company%203',
    `importId=${bigImports[1]}`,
    `importId=${bigImports[0]}&name=99`,
    'referenceId=ref-42',
    'email=B7@EXAMPLE.COM',
    'title=engineer&sortBy=-name',
    'sortBy=%2Bname',
    'isVerified=true',
    'createdAfter=2000-01-01&lastInfoChangedAt=2000-01-01',
    'linkedin=linkedin.com/in/p-7',
    'lastJobChangedAt=2000-01-01',
    'lastJobChangedAtBefore=2100-01-01&lastInfoChangedAtBefore=2100-01-01',
    'createdBefore=2100-01-01&sortBy=-createdAt',
    'createdBefore=2000-01-01',
    `importId=${bigImports[0]}&sortBy=%2Bname`,
    'sortBy=-lastInfoChangedAt',
  ];
  for (const q of cases) {
    const listed = await listAll(t, w.tokens.viewer, `${ledgerPath(w.orgId, big)}/contacts`, q);
    const { rows } = await download(t, w.tokens.viewer, downloadPath(w, big, q));
    assert.equal(rows[0], HEADER, q);
    assert.equal(rows.slice(1).map((r) => r[col('id')]), listed.map((c) => c.id), q);
  }
  const name = (await download(t, w.tokens.viewer, downloadPath(w, big, 'name=person%200001'))).rows.slice(1);
  assert.equal(name.map((r) => r[col('name')]).sort(), Array.from({ length: 10 }, (_, i) => `Person 0001${i}`), 'a case-insensitive substring');
  const imp = (await download(t, w.tokens.viewer, downloadPath(w, big, `importId=${bigImports[1]}`))).rows.slice(1);
  assert.is(imp.length, 500);
  assert.ok(imp.every((r) => r[col('company')] === 'Batch Co'));
  const sorted = (await download(t, w.tokens.viewer, downloadPath(w, big, 'sortBy=-name'))).rows.slice(1).map((r) => r[col('name')]!);
  assert.is(sorted.length, BIG);
  assert.equal(sorted, [...sorted].sort().reverse());
  const none = await download(t, w.tokens.viewer, downloadPath(w, big, 'name=nobody'));
  assert.equal(none.rows, [HEADER], 'no match: the header alone');
});

D('formula injection: cells starting with = + - @ tab CR LF NUL come back prefixed with \'', async ({ t, w, formulas }) => {
  const { res, rows } = await download(t, w.tokens.viewer, downloadPath(w, formulas));
  assert.is(rows.length, 1 + FORMULAS.length + 7);
  assert.equal([byRefOf(rows).get('unicode')![col('name')], byRefOf(rows).get('unicode')![col('company')]], ['Zoë Łukasz 😀', 'Ünïcode, GmbH']);
  const byRef = new Map(rows.slice(1).map((r) => [r[col('referenceId')]!, r]));
  FORMULAS.forEach((value, i) => {
    const r = byRef.get(`f${i}`)!;
    assert.is(r[col('name')], `'${value}`, JSON.stringify(value));
    assert.is(r[col('company')], `Co ${i}`, 'safe cells are untouched');
  });
  const comma = byRef.get('comma')!;
  assert.is(comma.length, HEADER.length, 'a,=1+2 stays one cell');
  assert.is(comma[col('name')], 'a,=1+2');
  assert.is(comma[col('company')], "'=cmd|' /C calc'!A0");
  assert.is(comma[col('title')], "'-Director");
  assert.is(comma[col('importTitle')], "'-Director");
  assert.is(comma[col('importCompany')], "'=cmd|' /C calc'!A0");
  const quotes = byRef.get('quotes')!;
  assert.equal([quotes[col('name')], quotes[col('company')], quotes[col('location')]], ['He said "hi"\r\nthen left', 'Plain, Inc', "'@home"]);
  assert.ok(byRef.has("'-5"), 'a text referenceId starting with - is escaped too');
  // a ' before a formula character gets one more, so taking one off gives every text back; a ' before other text stays as it is
  assert.equal(['name', 'company', 'title', 'location'].map((c) => byRef.get('typed')![col(c)]), ["''=typed", "''@co", "'''-two", "'plain"]);
  assert.equal(['name', 'company', 'title', 'location'].map((c) => byRef.get('blanks')![col(c)]), ["'\u200b=1+2", "'\u200b\u3000@co", "''\u200b -x", '\u200bplain']);
  assert.is(byRef.get("'-5")![col('company')], "'+Acme");
  // no cell of the raw text starts a record or a field with a formula character
  for (const record of rows) for (const cell of record) assert.not.match(cell, /^[=+\-@\t\r\n\0]/, JSON.stringify(cell));
  assert.not.ok(/(^|,)[=+@-]/m.test(res.text.replace(/"[^"]*"/g, '""')), 'no unquoted field starts with a formula character');
  // every text cell is quoted, so a spreadsheet splitting at ; or tab (its locale's list separator) makes no formula cell either
  assert.equal([byRef.get('separators')![col('name')], byRef.get('separators')![col('company')]], ["Bob;=cmd|' /C calc'!A0;x", 'Tab\t=1+2\tCo']);
  for (const sep of [',', ';', '\t']) {
    const formulaCells = cellsSplitBy(res.text, sep).filter((cell) => /^[=+\-@\0]/.test(cell));
    assert.equal(formulaCells, [], `cells split at ${JSON.stringify(sep)}`);
  }
  // a NUL comes back only in a rejected row, escaped like the rest
  const nul = await addContacts(t, w.tokens.editor, w.orgId, formulas, [{ name: '\0x', company: 'Co' }]);
  assert.is(nul.invalid, 1);
  const errors = await t.call('GET', `${ledgerPath(w.orgId, formulas)}/imports/${nul.id}/errors`, { token: w.tokens.viewer });
  const rejected = (parse(errors.text, { relax_column_count: false, record_delimiter: ['\r\n', '\n', '\r'] }) as string[][])[1]!;
  assert.is(rejected[1], "'\0x");
  // a rejected row's cells are as uploaded, untrimmed: a space before = is escaped there too
  const csv = await uploadCsv(t, w.tokens.editor, w.orgId, formulas, 'name,company,email\r\n" =1+2",Co,not-an-address\r\n');
  assert.is(csv.invalid, 1);
  const csvErrors = await t.call('GET', `${ledgerPath(w.orgId, formulas)}/imports/${csv.id}/errors`, { token: w.tokens.viewer });
  const row = (parse(csvErrors.text, { record_delimiter: ['\r\n'] }) as string[][])[1]!;
  assert.is(row[0], "' =1+2");
});

D('limit and cursor apply to the download as to the list (SPEC §4.2): at most limit contacts, from where the cursor\'s page starts, in every sort', async ({ t, w, big }) => {
  const list = `${ledgerPath(w.orgId, big)}/contacts`;
  for (const sortBy of ['+createdAt', '-name', '-lastInfoChangedAt']) {
    const all = (await listAll(t, w.tokens.viewer, list, `sortBy=${encodeURIComponent(sortBy)}`)).map((c: any) => c.id);
    assert.is(all.length, BIG);
    const first = await download(t, w.tokens.viewer, downloadPath(w, big, `sortBy=${encodeURIComponent(sortBy)}&limit=10`));
    assert.equal(first.rows.slice(1).map((r) => r[col('id')]), all.slice(0, 10), `${sortBy}: the first 10`);
    const page = await t.call('GET', `${list}?sortBy=${encodeURIComponent(sortBy)}&limit=100`, { token: w.tokens.viewer });
    const cursor = encodeURIComponent(page.body.nextCursor);
    const from = await download(t, w.tokens.viewer, downloadPath(w, big, `sortBy=${encodeURIComponent(sortBy)}&cursor=${cursor}&limit=1500`));
    assert.equal(from.rows.slice(1).map((r) => r[col('id')]), all.slice(100, 1600), `${sortBy}: 1,500 from the second page of 100 on`);
    const rest = await download(t, w.tokens.viewer, downloadPath(w, big, `sortBy=${encodeURIComponent(sortBy)}&cursor=${cursor}`));
    assert.equal(rest.rows.slice(1).map((r) => r[col('id')]), all.slice(100), `${sortBy}: the rest`);
  }
  // with a filter, the cursor of that filter's list
  const acme = (await listAll(t, w.tokens.viewer, list, 'company=Company%203')).map((c: any) => c.id);
  const page = await t.call('GET', `${list}?company=Company%203&limit=50`, { token: w.tokens.viewer });
  const filtered = await download(t, w.tokens.viewer, downloadPath(w, big, `company=Company%203&cursor=${encodeURIComponent(page.body.nextCursor)}`));
  assert.equal(filtered.rows.slice(1).map((r) => r[col('id')]), acme.slice(50));
  // a cursor of another list, or a bad limit: 400 before the file starts
  const other = await t.call('GET', downloadPath(w, big, `cursor=${encodeURIComponent(page.body.nextCursor)}`), { token: w.tokens.viewer });
  expectStatus(other, 400);
  assert.is(other.body.code, 'invalid_cursor');
  for (const limit of ['0', '-1', '1.5', 'all', '99999999999']) {
    const bad = await t.call('GET', downloadPath(w, big, `limit=${limit}`), { token: w.tokens.viewer });
    expectStatus(bad, 400, limit);
    assert.equal(bad.body.errors.map((e: any) => e.path), ['limit']);
  }
});

D('a download uploaded again (into another ledger) imports every text as it was: our escaping is taken off, and only ours', async ({ t, w, formulas }) => {
  const original = await listAll(t, w.tokens.viewer, `${ledgerPath(w.orgId, formulas)}/contacts`);
  const fields = (c: any) => [c.referenceId, c.name, c.company, c.title, c.location, c.contactInfo?.email];
  // (escapeFormulas=false: its cells that begin with = + - @ say that nothing is escaped, so a text that begins with ' keeps it)
  for (const query of ['', 'bom=true&delimiter=semicolon', 'escapeFormulas=false']) {
    const res = await fetch(`${t.base}${downloadPath(w, formulas, query)}`, { headers: { authorization: `Bearer ${w.tokens.viewer}` } });
    assert.is(res.status, 200);
    const copy = await createLedger(t, w.tokens.editor, w.orgId, `copy ${query}`);
    const job = await uploadCsv(t, w.tokens.editor, w.orgId, copy, Buffer.from(await res.arrayBuffer()));
    assert.equal([job.imported, job.invalid], [original.length, 0], query);
    const copied = await listAll(t, w.tokens.viewer, `${ledgerPath(w.orgId, copy)}/contacts`);
    assert.equal(copied.map(fields).sort(), original.map(fields).sort(), query);
  }
  // a download edited in a spreadsheet — the columns one does not need taken out, the rest moved,
  // a row added — is still ours: its escaping comes off (a tester's case: the ' stayed for good)
  const res = await fetch(`${t.base}${downloadPath(w, formulas, 'escapeFormulas=true')}`, { headers: { authorization: `Bearer ${w.tokens.viewer}` } });
  const full = parse(await res.text(), { relax_column_count: false }) as string[][];
  const keep = ['referenceId', 'name', 'company', 'title', 'email'];
  const edited = [['name', ...keep.filter((c) => c !== 'name'), ''], ...full.slice(1).map((r) => [r[col('name')]!, ...keep.filter((c) => c !== 'name').map((c) => r[col(c)]!), ''])];
  edited.push(['Added Person', 'added', 'Addco', "'=typed by hand", '', '']);
  const trimmed = await createLedger(t, w.tokens.editor, w.orgId, 'trimmed download');
  const job = await uploadCsv(t, w.tokens.editor, w.orgId, trimmed, stringify(edited));
  assert.equal([job.imported, job.invalid], [original.length + 1, 0]);
  const trimmedFields = (c: any) => [c.referenceId, c.name, c.company, c.title, c.contactInfo?.email];
  const got = await listAll(t, w.tokens.viewer, `${ledgerPath(w.orgId, trimmed)}/contacts`);
  assert.equal(got.map(trimmedFields).sort(), [...original.map(trimmedFields), ['added', 'Added Person', 'Addco', '=typed by hand', null]].sort());
  // the price (docs/decisions.md): a file of one's own named exactly as a download, with no cell
  // beginning with = + - @ unescaped, is read as one — its '-Lee loses the '
  const alike = await createLedger(t, w.tokens.editor, w.orgId, 'own file named as a download');
  await uploadCsv(t, w.tokens.editor, w.orgId, alike, "name,company\n'-Lee,Acme\n");
  assert.equal((await listAll(t, w.tokens.viewer, `${ledgerPath(w.orgId, alike)}/contacts`)).map((c: any) => c.name), ['-Lee']);
  // a file of one's own with other column names is read as it is: its ' stays
  const own = await createLedger(t, w.tokens.editor, w.orgId, 'own file');
  await uploadCsv(t, w.tokens.editor, w.orgId, own, "Name,Company\n'-Ann,'+Plus\n");
  const [ann] = await listAll(t, w.tokens.viewer, `${ledgerPath(w.orgId, own)}/contacts`);
  assert.equal([ann.name, ann.company], ["'-Ann", "'+Plus"]);
});

D('a download uploaded again into its own ledger doubles nothing: a row whose id is a contact still in the ledger is a duplicate, with or without a referenceId; into another ledger it is a copy', async ({ t, w }) => {
  const ledger = await createLedger(t, w.tokens.editor, w.orgId, 'round trip');
  const first = await addContacts(t, w.tokens.editor, w.orgId, ledger, [
    { name: 'José Müller', company: 'Acme', title: 'VP' },
    { name: 'Zoë Dupré', company: 'Bolt', email: 'zoe@bolt.test' },
    { name: 'Ref Holder', company: 'Acme', referenceId: 'r-1' },
  ]);
  assert.is(first.imported, 3);
  const { rows } = await download(t, w.tokens.viewer, downloadPath(w, ledger));
  const ids = rows.slice(1).map((r) => r[col('id')]!);
  // one contact deleted since the download: its row comes back as a new contact
  const gone = rows.slice(1).find((r) => r[col('name')] === 'Zoë Dupré')![col('id')]!;
  expectStatus(await t.call('DELETE', `${ledgerPath(w.orgId, ledger)}/contacts/${gone}`, { token: w.tokens.editor }), 204);
  // edited: a title changed, the id column moved to the end, a new row without an id
  const edited = [[...HEADER.filter((c) => c !== 'id'), 'id'], ...rows.slice(1).map((r) => [...HEADER.filter((c) => c !== 'id').map((c) => (c === 'title' && r[col('title')] === 'VP' ? 'SVP' : r[col(c)]!)), r[col('id')]!])];
  edited.push([...HEADER.filter((c) => c !== 'id').map((c) => ({ name: 'New Person', company: 'Crux' })[c] ?? ''), '']);
  const again = await uploadCsv(t, w.tokens.editor, w.orgId, ledger, stringify(edited));
  assert.equal([again.submitted, again.imported, again.duplicates, again.invalid], [4, 2, 2, 0], JSON.stringify(again));
  const errors = await t.call('GET', `${ledgerPath(w.orgId, ledger)}/imports/${again.id}/errors`, { token: w.tokens.viewer });
  const reasons = (parse(errors.text, { relax_column_count: false }) as string[][]).slice(1).map((r) => r.at(-2)).sort();
  const [jose, ref] = [ids.find((id) => id !== gone && rows.find((r) => r[col('id')] === id)![col('name')] === 'José Müller')!, ids.find((id) => rows.find((r) => r[col('id')] === id)![col('name')] === 'Ref Holder')!];
  assert.equal(reasons, [`contact ${jose} (the row's id) is already in the ledger: this row is from a download of it`, `contact ${ref} (the row's id) is already in the ledger: this row is from a download of it`].sort());
  // the rejected rows of that round, uploaded again as they came: still the download's rows, still duplicates (a reviewer's case)
  const round2 = await uploadCsv(t, w.tokens.editor, w.orgId, ledger, errors.text);
  assert.equal([round2.submitted, round2.imported, round2.duplicates], [2, 0, 2], JSON.stringify(round2));
  const now = await listAll(t, w.tokens.viewer, `${ledgerPath(w.orgId, ledger)}/contacts`);
  assert.equal(now.map((c: any) => c.name).sort(), ['José Müller', 'New Person', 'Ref Holder', 'Zoë Dupré']);
  // edited as a spreadsheet user does — columns cut down, a cell typed with a leading + (so no longer
  // read as a download), a column of notes added: the ids still say whose rows they are (a tester's case)
  const cut = [['id', 'name', 'company', 'title', 'Notes'], ...rows.slice(1).filter((r) => r[col('id')] !== gone).map((r) => [r[col('id')]!, r[col('name')]!, r[col('company')]!, '+VP', 'call back'])];
  const edited2 = await uploadCsv(t, w.tokens.editor, w.orgId, ledger, stringify(cut));
  assert.equal([edited2.submitted, edited2.imported, edited2.duplicates], [2, 0, 2], JSON.stringify(edited2));
  // into another ledger: every row is a contact of its own
  const other = await createLedger(t, w.tokens.editor, w.orgId, 'round trip copy');
  const copy = await uploadCsv(t, w.tokens.editor, w.orgId, other, stringify(rows));
  assert.equal([copy.imported, copy.duplicates], [3, 0]);
});

D('escapeFormulas=false returns the cells verbatim', async ({ t, w, formulas }) => {
  const { rows } = await download(t, w.tokens.viewer, downloadPath(w, formulas, 'escapeFormulas=false'));
  const byRef = new Map(rows.slice(1).map((r) => [r[col('referenceId')]!, r]));
  FORMULAS.forEach((value, i) => assert.is(byRef.get(`f${i}`)![col('name')], value, JSON.stringify(value)));
  assert.is(byRef.get('comma')![col('company')], "=cmd|' /C calc'!A0");
  assert.is(byRef.get('-5')![col('company')], '+Acme');
  const on = await download(t, w.tokens.viewer, downloadPath(w, formulas, 'escapeFormulas=true'));
  assert.is(new Map(on.rows.slice(1).map((r) => [r[col('referenceId')]!, r])).get('f0')![col('name')], "'=1+2");
  // with filters too
  const one = await download(t, w.tokens.viewer, downloadPath(w, formulas, 'referenceId=f3&escapeFormulas=false'));
  assert.equal(one.rows.slice(1).map((r) => r[col('name')]), ['@SUM(A1)']);
});

D('bom=true starts the file with a UTF-8 BOM (Excel reads it as UTF-8); delimiter=semicolon|tab join the cells with ; or a tab', async ({ t, w, formulas }) => {
  const bytes = async (q: string) => {
    const res = await fetch(`${t.base}${downloadPath(w, formulas, q)}`, { headers: { authorization: `Bearer ${w.tokens.viewer}` } });
    assert.is(res.status, 200, q);
    return Buffer.from(await res.arrayBuffer());
  };
  const plain = await bytes('');
  assert.is(plain.subarray(0, 2).toString(), 'id', 'no BOM unless asked');
  const withBom = await bytes('bom=true');
  assert.equal([...withBom.subarray(0, 3)], [0xef, 0xbb, 0xbf]);
  assert.ok(withBom.subarray(3).equals(plain), 'the same file after it');
  const comma = parse(plain.toString(), { relax_column_count: false }) as string[][];
  for (const [name, sep] of [['semicolon', ';'], ['tab', '\t']] as const) {
    const text = (await bytes(`delimiter=${name}&bom=false`)).toString();
    assert.is(text.split('\r\n')[0], HEADER.join(sep));
    assert.equal(parse(text, { delimiter: sep, relax_column_count: false }), comma, `${name}: the same cells`);
  }
  const bad = await t.call('GET', downloadPath(w, formulas, 'delimiter=%3B'), { token: w.tokens.viewer });
  expectStatus(bad, 400);
  assert.equal(bad.body.errors, [{ path: 'delimiter', message: 'must be comma, semicolon or tab' }]);
});

D('a ledger deleted while its file streams cuts the download off: the connection closes without the end of the body, never a complete-looking file', async ({ t, w }) => {
  const ledgerId = await createLedger(t, w.tokens.editor, w.orgId, 'deleted while downloading');
  // more rows than the connection's buffers hold, so the file is still being made when the ledger goes
  const db = t.rt.db.raw;
  const ins = db.prepare("INSERT INTO contacts (id, ledger_id, name, name_key, company, import_company, created_at, updated_at) VALUES (?, ?, ?, ?, 'Company', 'Company', ?, ?)");
  db.transaction(() => {
    for (let i = 0; i < 100_000; i++) ins.run(`c_gone${String(i).padStart(20, '0')}`, ledgerId, `Person ${i} ${'x'.repeat(100)}`, `person ${i}`, i, i);
  })();
  const res = await fetch(`${t.base}${downloadPath(w, ledgerId)}`, { headers: { authorization: `Bearer ${w.tokens.viewer}` } });
  assert.is(res.status, 200);
  expectStatus(await t.call('DELETE', ledgerPath(w.orgId, ledgerId), { token: w.tokens.admin }), 204);
  let received = 0;
  let failed: unknown;
  try {
    for await (const chunk of res.body! as AsyncIterable<Uint8Array>) received += chunk.length;
  } catch (err) {
    failed = err;
  }
  assert.ok(failed, `the body ended as if complete after ${received} bytes`);
  assert.ok(received < 100_000 * 100, `${received} bytes: cut off before the end`);
  await until('the cut is logged as such', () => t.logs.some((l) => l.includes('response cut off after it started') && l.includes('ledger_not_found')), Boolean, 5_000);
});

D('a ledger deleted, and its rows already purged, while its file streams: cut off too, though the page after is empty', async ({ t, w }) => {
  const ledgerId = await createLedger(t, w.tokens.editor, w.orgId, 'purged while downloading');
  // three pages of rows, each big enough that the first two are still on their way when the ledger goes (the
  // stream reads a page ahead): the third page, read after the purge, comes back empty
  const db = t.rt.db.raw;
  const ins = db.prepare("INSERT INTO contacts (id, ledger_id, name, name_key, company, import_company, location, created_at, updated_at) VALUES (?, ?, ?, ?, 'Company', 'Company', ?, ?, ?)");
  db.transaction(() => {
    for (let i = 0; i < 2500; i++) ins.run(`c_purged${String(i).padStart(18, '0')}`, ledgerId, `Person ${i}`, `person ${i}`, 'l'.repeat(20_000), i, i);
  })();
  // a client that reads nothing yet (node:http applies its back-pressure to the socket, so the server waits)
  const url = new URL(downloadPath(w, ledgerId), t.base);
  const res = await new Promise<IncomingMessage>((resolve, reject) =>
    httpGet({ host: url.hostname, port: url.port, path: url.pathname, headers: { authorization: `Bearer ${w.tokens.viewer}` } }, (r) => {
      r.pause();
      resolve(r);
    }).on('error', reject),
  );
  assert.is(res.statusCode, 200);
  expectStatus(await t.call('DELETE', ledgerPath(w.orgId, ledgerId), { token: w.tokens.admin }), 204);
  db.prepare('DELETE FROM contacts WHERE ledger_id = ?').run(ledgerId); // what its purge does
  const outcome = await new Promise<string>((resolve) => {
    res.on('data', () => {});
    res.on('end', () => resolve(res.complete ? 'complete' : 'cut off'));
    res.on('aborted', () => resolve('cut off'));
    res.on('error', () => resolve('cut off'));
    res.resume();
  });
  assert.is(outcome, 'cut off');
});

D('by a change time, the file holds every contact once, in the order of the moment it began, though changes move contacts meanwhile', async ({ t, w }) => {
  const ledgerId = await createLedger(t, w.tokens.editor, w.orgId, 'moving while downloading');
  // 2,000 contacts with a job change (the newest first in the file), then 500 without; each row
  // big enough that the file is still being made while the changes below are written
  const db = t.rt.db.raw;
  const ins = db.prepare("INSERT INTO contacts (id, ledger_id, name, name_key, company, import_company, location, last_job_changed_at, created_at, updated_at) VALUES (?, ?, ?, ?, 'Company', 'Company', ?, ?, ?, ?)");
  const ids = Array.from({ length: 2500 }, (_, i) => `c_moving${String(i).padStart(18, '0')}`);
  db.transaction(() => ids.forEach((id, i) => ins.run(id, ledgerId, `Person ${i}`, `person ${i}`, 'l'.repeat(20_000), i < 2000 ? 1_000_000 + i : null, i, i)))();
  const inOrder = [...ids.slice(0, 2000).reverse(), ...ids.slice(2000).reverse()];
  const url = new URL(downloadPath(w, ledgerId, 'sortBy=-lastJobChangedAt'), t.base);
  const res = await new Promise<IncomingMessage>((resolve, reject) =>
    httpGet({ host: url.hostname, port: url.port, path: url.pathname + url.search, headers: { authorization: `Bearer ${w.tokens.viewer}` } }, resolve).on('error', reject),
  );
  assert.is(res.statusCode, 200);
  // the first rows have come: the file is under way; the client stops reading (back-pressure holds the server)
  const chunks: Buffer[] = [];
  await new Promise<void>((resolve) => {
    let bytes = 0;
    res.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      bytes += chunk.length;
      if (bytes > 100_000 && bytes - chunk.length <= 100_000) {
        res.pause();
        resolve();
      }
    });
  });
  // meanwhile a feed gives new job changes to the contacts the file has not reached (the oldest
  // changes and some without one): each moves to the front of the order, behind the download
  const move = db.prepare("UPDATE contacts SET company = 'Globex', last_job_changed_at = ? WHERE id = ?");
  db.transaction(() => [...ids.slice(0, 100), ...ids.slice(2400)].forEach((id, i) => move.run(5_000_000 + i, id)))();
  const text = await new Promise<string>((resolve, reject) => {
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', reject);
    res.resume();
  });
  const rows = parse(text, { relax_column_count: false }) as string[][];
  assert.is(rows.length - 1, 2500, 'every contact');
  assert.equal(rows.slice(1).map((r) => r[col('id')]), inOrder, 'each once, in the order of the moment the download began');
  // once nothing moves, the file by a change time is the list's, with a filter too
  for (const q of ['sortBy=-lastJobChangedAt', 'sortBy=-lastJobChangedAt&company=globex', 'sortBy=-lastInfoChangedAt&name=person%2024', 'sortBy=-lastJobChangedAt&lastJobChangedAt=1970-01-01T01:23:20Z']) {
    const listed = await listAll(t, w.tokens.viewer, `${ledgerPath(w.orgId, ledgerId)}/contacts`, q);
    const file = await download(t, w.tokens.viewer, downloadPath(w, ledgerId, q));
    assert.equal(file.rows.slice(1).map((r) => r[col('id')]), listed.map((c) => c.id), q);
    assert.ok(listed.length > 0, q);
  }
});

D('an empty ledger downloads the header alone', async ({ t, w }) => {
  const empty = await createLedger(t, w.tokens.editor, w.orgId, 'empty');
  const { res, rows } = await download(t, w.tokens.viewer, downloadPath(w, empty));
  assert.equal(rows, [HEADER]);
  assert.is(res.text, `${HEADER.join(',')}\r\n`);
});

D('access: viewers and service accounts may download; another organization → 403/404; no token → 401', async ({ t, w, formulas }) => {
  await download(t, w.tokens.viewer, downloadPath(w, formulas));
  await download(t, w.serviceAccounts.saViewer.token, downloadPath(w, formulas));
  const other = await t.call('GET', downloadPath(w, formulas), { token: w.tokens.otherAdmin });
  assert.ok(other.status === 403 || other.status === 404, `another org's admin → ${other.status}`);
  assert.match(other.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.not.match(other.text, /=1\+2|Co 0/, 'no contact data leaks');
  expectStatus(await t.call('GET', downloadPath(w, formulas), { token: w.tokens.outsider }), 403);
  // the other org's own path with this org's ledger id: not found there
  const cross = await t.call('GET', `${ledgerPath(w.otherOrgId, formulas)}/contacts/download`, { token: w.tokens.otherAdmin });
  expectStatus(cross, 404);
  expectStatus(await t.call('GET', downloadPath(w, 'l_00000000000000000000000000'), { token: w.tokens.viewer }), 404);
  expectStatus(await t.call('GET', downloadPath(w, formulas)), 401);
});

D('an unknown query parameter or a bad value → 400 naming it (never ignored)', async ({ t, w, formulas }) => {
  const cases: [string, string][] = [
    ['colour=red', 'colour'],
    ['escapeFormula=false', 'escapeFormula'],
    ['escapeFormulas=maybe', 'escapeFormulas'],
    ['sortBy=name;DROP%20TABLE%20contacts', 'sortBy'],
    ['isVerified=yes', 'isVerified'],
    ['createdAfter=yesterday', 'createdAfter'],
    ['view=count', 'view'],
  ];
  for (const [q, param] of cases) {
    const r = await t.call('GET', downloadPath(w, formulas, q), { token: w.tokens.viewer });
    assert.is(r.status, 400, `${q}: ${r.status} ${r.text.slice(0, 200)}`);
    assert.match(r.headers.get('content-type') ?? '', /^application\/problem\+json/, q);
    assert.is(r.body.code, 'invalid_parameter', q);
    assert.ok(r.body.message.includes(param) || r.body.errors?.some((e: any) => e.path === param), `${q} names ${param}: ${r.text}`);
  }
});

D.run();

const W = suite('CSV writer');

W('csvLines writes what csv-stringify writes (the library it replaced), plus the LF/NUL prefix, the prefix of formula characters after blanks and the second \' of text that looks escaped, on random input', () => {
  let seed = 4_242;
  const rnd = () => ((seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0) / 2 ** 32);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const chars = ['a', 'Z', ' ', '\u2009', '\u00a0', '\u200b', '\u3000', ',', '"', '\r', '\n', '\t', '\0', '=', '+', '-', '@', "'", 'é', 'Ł', '\uff1d', '\uff0b', '\uff0d', '\uff20', ';', '😀'];
  const text = () => Array.from({ length: Math.floor(rnd() * 6) }, () => pick(chars)).join('');
  const value = (): unknown => {
    const k = rnd();
    if (k < 0.6) return text();
    if (k < 0.68) return pick([0, -5, 3.25, -0.5, 1e21, Number.NaN]);
    if (k < 0.72) return rnd() < 0.5;
    if (k < 0.78) return null;
    if (k < 0.82) return undefined;
    if (k < 0.86) return 12n;
    if (k < 0.9) return new Date(1_795_000_000_000);
    return pick([{ a: '=x', b: [1, '"'] }, ['-1', 2], {}]);
  };
  // the old module: prefix LF/NUL starts and formula characters after blanks on strings, then the
  // library; text that looks escaped already gets a second '
  const oracle = (rows: unknown[][], escape: boolean) =>
    stringify(
      rows.map((r) => r.map((v) => (escape && typeof v === 'string' && /^(?:[\n\0]|'*[ \u00a0\u2009\u200b\u3000]+[=+\-@\t\r\n\0\uff1d\uff0b\uff0d\uff20]|'+[=+\-@\t\r\n\0\uff1d\uff0b\uff0d\uff20])/.test(v) ? `'${v}` : v))),
      { escape_formulas: escape, quoted_string: true, quoted_empty: false, record_delimiter: '\r\n', quote_record_delimiter: true, cast: { boolean: (b) => (b ? 'true' : 'false') } },
    );
  for (let n = 0; n < 3000; n++) {
    const rows = Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => Array.from({ length: 1 + Math.floor(rnd() * 5) }, value));
    for (const escape of [true, false]) assert.is(csvLines(rows, escape), oracle(rows, escape), JSON.stringify(rows, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v)));
  }
  assert.is(csvLines([], true), '');
});

W.run();
