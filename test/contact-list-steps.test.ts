// The contact list's walks (src/ledger/contacts-list-repo.ts, contacts-repo.ts): a filter that few
// rows meet is read in steps with turns of the event loop between them, and gives the same rows,
// pages, counts and download rows as one statement; each side of a walk has one bound (a cursor's
// position or the filter's range, whichever is tighter), and a change-time sort filtered by that
// time reads no contact without one.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { FOLDS_TO_ASCII, foldForContains, listParts, rowsSql, windowEndSql, type ContactFilter, type ContactPosition, type ContactSort } from '../src/ledger/contacts-list-repo.ts';
import { createContactsRepo, downloadPosition, positionOf, type ContactsRepo } from '../src/ledger/contacts-repo.ts';
import type { Contact } from '../src/ledger/model.ts';
import { nameKey } from '../src/normalize.ts';
import { request } from 'node:http';
import { AppError } from '../src/errors.ts';
import { clientGone } from '../src/http/request-context.ts';
import { addContacts, createLedger, seedWorld, startApp, until, type TestApp } from './helpers.ts';

type Ctx = { t: TestApp; ledgerId: string; stepped: ContactsRepo; whole: ContactsRepo; all: Contact[] };

const SORTS: ContactSort[] = ['+createdAt', '-createdAt', '+name', '-name', '-lastJobChangedAt', '-lastInfoChangedAt'];
const BASE = Date.parse('2026-11-01T00:00:00Z');
const at = (i: number) => BASE + Math.floor(i / 3) * 1000; // creation times with ties (three contacts a second)

const S = suite<Ctx>('walks in steps');
S.before(async (ctx) => {
  ctx.t = await startApp();
  const w = await seedWorld(ctx.t);
  ctx.ledgerId = await createLedger(ctx.t, w.tokens.editor, w.orgId, 'steps');
  const names = ['delta', 'Alpha', 'charlie', 'Bravo', 'Émile', 'Søren'];
  const contacts = Array.from({ length: 240 }, (_, i) => ({
    name: `${names[i % names.length]} ${String(i % 50).padStart(2, '0')}`,
    company: i === 200 ? 'Rare Widgets' : i % 2 ? 'Acme Corp' : 'Globex',
    title: i === 17 ? 'Directeur Général' : i % 3 ? 'Software Engineer' : 'VP Sales',
    referenceId: `ref-${i}`,
  }));
  await addContacts(ctx.t, w.tokens.editor, w.orgId, ctx.ledgerId, contacts);
  const db = ctx.t.rt.db.raw;
  const set = db.prepare('UPDATE contacts SET created_at = ?, last_info_changed_at = ?, last_job_changed_at = ?, is_verified = ? WHERE ledger_id = ? AND reference_id = ?');
  for (let i = 0; i < 240; i++) {
    const info = i % 4 === 0 ? BASE + (i % 40) * 60_000 : null; // ties here too
    const job = i % 8 === 0 ? info : null;
    set.run(at(i), info, job, i % 5 === 0 ? 1 : 0, ctx.ledgerId, `ref-${i}`);
  }
  // windows of three index entries: every walk below takes many steps
  ctx.stepped = createContactsRepo(ctx.t.rt.db, ctx.t.rt.db, { steps: { firstRows: 3, minRows: 3, maxRows: 3, targetMs: 5 }, orderStep: 7 });
  ctx.whole = ctx.t.rt.ledger.repos.contacts; // 240 contacts: one window, one statement
  ctx.all = [];
  let after: ContactPosition | undefined;
  for (;;) {
    const page = await ctx.whole.listContacts(ctx.ledgerId, {}, '+createdAt', 100, after);
    ctx.all.push(...page);
    if (page.length < 100) break;
    after = positionOf(page.at(-1)!, '+createdAt');
  }
  assert.is(ctx.all.length, 240);
});
S.after(async (ctx) => ctx.t.close());

/** What a filter finds, by SPEC §4.2's words (an ASCII needle as LIKE reads it, or by folding where the text holds a character that folds to ASCII; other needles by Unicode case folding), without SQL. */
function meets(c: Contact, f: ContactFilter): boolean {
  const ascii = (s: string) => /^[\x00-\x7f]*$/.test(s);
  const contains = (value: string | null, needle: string | undefined) => {
    if (needle === undefined) return true;
    if (value === null) return false;
    if (!ascii(needle)) return foldForContains(value).includes(foldForContains(needle));
    const asciiLower = (s: string) => s.replace(/[A-Z]/g, (c) => c.toLowerCase());
    return asciiLower(value).includes(asciiLower(needle)) || ([...FOLDS_TO_ASCII].some((c) => value.includes(c)) && foldForContains(value).includes(foldForContains(needle)));
  };
  const inRange = (v: number | null, from?: number, before?: number) => (from === undefined || (v !== null && v >= from)) && (before === undefined || (v !== null && v < before));
  return (
    contains(c.name, f.name) && contains(c.company, f.company) && contains(c.title, f.title) &&
    (f.isVerified === undefined || c.isVerified === f.isVerified) &&
    inRange(c.createdAt, f.createdAfter, f.createdBefore) &&
    inRange(c.lastJobChangedAt, f.lastJobChangedAt, f.lastJobChangedAtBefore) &&
    inRange(c.lastInfoChangedAt, f.lastInfoChangedAt, f.lastInfoChangedAtBefore) &&
    (f.importId === undefined || c.importId === f.importId)
  );
}

/** The order of a sort, without SQL: its value, then seq, nulls last in the change-time sorts. */
function ordered(cs: Contact[], sort: ContactSort): Contact[] {
  const value = (c: Contact): string | number | null =>
    ({ '+createdAt': c.createdAt, '-createdAt': c.createdAt, '+name': nameKey(c.name), '-name': nameKey(c.name), '-lastJobChangedAt': c.lastJobChangedAt, '-lastInfoChangedAt': c.lastInfoChangedAt })[sort];
  const desc = sort.startsWith('-');
  return [...cs].sort((a, b) => {
    const [va, vb] = [value(a), value(b)];
    if (va === null || vb === null) return va === vb ? b.seq - a.seq : va === null ? 1 : -1;
    const byValue = va < vb ? -1 : va > vb ? 1 : 0;
    return (desc ? -1 : 1) * (byValue || a.seq - b.seq);
  });
}

async function walk(repo: ContactsRepo, ledgerId: string, f: ContactFilter, sort: ContactSort, limit: number): Promise<string[]> {
  const out: string[] = [];
  let after: ContactPosition | undefined;
  for (;;) {
    const page = await repo.listContacts(ledgerId, f, sort, limit, after);
    out.push(...page.map((c) => c.id));
    if (page.length < limit) return out;
    after = positionOf(page.at(-1)!, sort);
  }
}

async function download(repo: ContactsRepo, ledgerId: string, f: ContactFilter, sort: ContactSort, limit: number): Promise<string[]> {
  const out: string[] = [];
  let after: ContactPosition | undefined;
  for (;;) {
    const page = await repo.listDownloadRows(ledgerId, f, sort, limit, after);
    out.push(...page.map((r) => r[1]));
    if (page.length < limit) return out;
    after = downloadPosition(page.at(-1)!, sort);
  }
}

const FILTERS: ContactFilter[] = [
  {},
  { company: 'rare' },
  { company: 'no such company' },
  { company: 'acme' },
  { title: 'général' },
  { name: 'søren' },
  { name: 'ALPHA 1' },
  { isVerified: true },
  { company: 'globex', isVerified: false },
  { createdAfter: at(100) },
  { createdAfter: at(100), createdBefore: at(160), company: 'acme' },
  { createdBefore: at(90), title: 'vp' },
  { lastInfoChangedAt: BASE + 10 * 60_000 },
  { lastInfoChangedAt: BASE + 10 * 60_000, lastInfoChangedAtBefore: BASE + 30 * 60_000, company: 'globex' },
  { lastJobChangedAtBefore: BASE + 20 * 60_000 },
  { lastJobChangedAt: BASE, isVerified: true },
];

S('every filter in every sort: the same pages in steps as in one statement, and what the filter finds in the sort\'s order', async ({ ledgerId, stepped, whole, all }) => {
  let checked = 0;
  // an import's contacts: in creation order its own index is walked (by name, the name index: the import is the whole ledger)
  const importId = all[0]!.importId!;
  const filters: ContactFilter[] = [...FILTERS, { importId }, { importId, company: 'rare' }, { importId, createdAfter: at(100), isVerified: true }];
  for (const f of filters) {
    for (const sort of SORTS) {
      const expected = ordered(all.filter((c) => meets(c, f)), sort).map((c) => c.id);
      const what = `${JSON.stringify(f)} ${sort}`;
      for (const limit of [1, 7, 1000]) {
        assert.equal(await walk(stepped, ledgerId, f, sort, limit), expected, `in steps, pages of ${limit}: ${what}`);
        assert.equal(await walk(whole, ledgerId, f, sort, limit), expected, `whole, pages of ${limit}: ${what}`);
      }
      assert.equal(await download(stepped, ledgerId, f, sort, 7), expected, `download in steps: ${what}`);
      if (sort.includes('Changed')) {
        // a download in change-time order reads the order first, 7 seqs a step here
        const idOf = new Map(all.map((c) => [c.seq, c.id]));
        const order = (await stepped.downloadOrder(ledgerId, f, sort)).flatMap((step) => Array.from(step, (seq) => idOf.get(seq)));
        assert.equal(order, expected, `download order: ${what}`);
      }
      checked++;
    }
    const n = all.filter((c) => meets(c, f)).length;
    assert.is(await stepped.countContacts(ledgerId, f), n, `count in steps: ${JSON.stringify(f)}`);
    assert.is(await whole.countContacts(ledgerId, f), n, `count: ${JSON.stringify(f)}`);
  }
  assert.is(checked, filters.length * SORTS.length);
});

/** Turns of the event loop (setImmediate callbacks) that ran while `work` was awaited. */
async function turnsDuring(work: () => Promise<unknown>): Promise<number> {
  let turns = 0;
  let running = true;
  const turn = () => {
    if (!running) return;
    turns++;
    setImmediate(turn);
  };
  setImmediate(turn);
  await work();
  running = false;
  return turns;
}

S('a filter few rows meet gives the event loop a turn between steps; one window is one statement', async ({ ledgerId, stepped, whole }) => {
  const rare: ContactFilter = { company: 'no such company' };
  // 240 entries in windows of 3: 80 steps, a turn between two
  assert.ok((await turnsDuring(() => stepped.listContacts(ledgerId, rare, '+name', 101))) >= 60, 'list');
  assert.ok((await turnsDuring(() => stepped.countContacts(ledgerId, rare))) >= 60, 'count');
  assert.ok((await turnsDuring(() => stepped.listDownloadRows(ledgerId, rare, '-createdAt', 1000))) >= 60, 'download page');
  assert.ok((await turnsDuring(() => stepped.countContacts(ledgerId, { createdAfter: at(30) }))) >= 60, 'a count reads its whole range, in steps too');
  // a page the first window fills, and an unfiltered walk (its limit bounds it): no step
  assert.ok((await turnsDuring(() => stepped.listContacts(ledgerId, { company: 'acme' }, '+createdAt', 1))) <= 1, 'found in the first window');
  assert.ok((await turnsDuring(() => stepped.listContacts(ledgerId, {}, '-createdAt', 100))) <= 1, 'no filter');
  assert.ok((await turnsDuring(() => whole.listContacts(ledgerId, rare, '+name', 101))) <= 1, 'one window');
});

S('a walk stops at its next step once its signal is aborted (the client went away), with the signal\'s reason', async ({ ledgerId, stepped }) => {
  const rare: ContactFilter = { company: 'no such company' };
  for (const run of [
    (signal: AbortSignal) => stepped.listContacts(ledgerId, rare, '+name', 101, undefined, signal),
    (signal: AbortSignal) => stepped.countContacts(ledgerId, rare, signal),
    (signal: AbortSignal) => stepped.listDownloadRows(ledgerId, rare, '-createdAt', 1000, undefined, signal),
  ]) {
    const ctl = new AbortController();
    const reason = new Error('gone');
    const turns = await turnsDuring(async () => {
      const walk = run(ctl.signal);
      setImmediate(() => ctl.abort(reason));
      await walk.then(
        () => assert.unreachable('the walk ran to its end'),
        (err: unknown) => assert.is(err, reason),
      );
    });
    assert.ok(turns < 10, `stopped after ${turns} turns (80 steps when not stopped)`);
  }
});

S('the windows are read from the index alone, and each step reads its window\'s rows through the same index', ({ t, ledgerId }) => {
  const db = t.rt.db.raw;
  for (const sort of SORTS) {
    for (const part of listParts(ledgerId, { company: 'x' }, sort, undefined, sort.includes('name') ? 'contacts_by_name' : sort.includes('Job') ? 'contacts_by_job_change' : sort.includes('Info') ? 'contacts_by_info_change' : 'contacts_by_created')) {
      const end = windowEndSql(part, undefined);
      const plan = (db.prepare(`EXPLAIN QUERY PLAN ${end.sql}`).all(...end.params, 10) as { detail: string }[]).map((r) => r.detail).join(' | ');
      assert.match(plan, /USING COVERING INDEX contacts_by_/, `${sort}: ${plan}`);
      assert.not.match(plan, /TEMP B-TREE/, `${sort}: ${plan}`);
      const rows = rowsSql(part, 'seq', undefined, part.key.map(() => 0));
      const rowsPlan = (db.prepare(`EXPLAIN QUERY PLAN ${rows.sql}`).all(...rows.params, 10) as { detail: string }[]).map((r) => r.detail).join(' | ');
      assert.match(rowsPlan, new RegExp(`INDEX ${part.index}`), `${sort}: ${rowsPlan}`);
      assert.not.match(rowsPlan, /TEMP B-TREE/, `${sort}: ${rowsPlan}`);
    }
  }
});

S.run();

const B = suite('the bounds of a walk');
const L = 'l_x';
const conditionsOf = (f: ContactFilter, sort: ContactSort, after: ContactPosition | undefined, index: string) =>
  listParts(L, f, sort, after, index).map((p) => rowsSql(p, 'seq').sql.replace(/^.*? WHERE (.*) ORDER BY.*$/, '$1'));

B('a cursor inside the filter\'s range is the start; without one, or before the range, the range is', () => {
  const created = (f: ContactFilter, sort: ContactSort, after?: ContactPosition) => conditionsOf(f, sort, after, 'contacts_by_created')[0]!;
  // SQLite given both seeks by the one written first: each next page read the ledger from createdAfter again
  assert.is(created({ createdAfter: 100 }, '+createdAt', { value: 500, seq: 9 }), 'ledger_id = ? AND (created_at, seq) > (?, ?)');
  assert.is(created({ createdAfter: 100 }, '+createdAt'), 'ledger_id = ? AND created_at >= ?');
  assert.is(created({ createdAfter: 100 }, '+createdAt', { value: 50, seq: 9 }), 'ledger_id = ? AND created_at >= ?');
  assert.is(created({ createdBefore: 100 }, '-createdAt', { value: 50, seq: 9 }), 'ledger_id = ? AND (created_at, seq) < (?, ?)');
  assert.is(created({ createdBefore: 100 }, '-createdAt', { value: 100, seq: 9 }), 'ledger_id = ? AND created_at < ?');
  // the other side stays the filter's
  assert.is(created({ createdAfter: 100, createdBefore: 900 }, '+createdAt', { value: 500, seq: 9 }), 'ledger_id = ? AND (created_at, seq) > (?, ?) AND created_at < ?');
  const job = conditionsOf({ lastJobChangedAtBefore: 100 }, '-lastJobChangedAt', { value: 50, seq: 9 }, 'contacts_by_job_change');
  assert.equal(job, ['ledger_id = ? AND (last_job_changed_at, seq) < (?, ?) AND last_job_changed_at IS NOT NULL']);
  // an import's contacts in creation order: the walk of its index, the ledger a condition on the rows
  assert.is(
    conditionsOf({ importId: 'imp_x', createdAfter: 100 }, '+createdAt', { value: 500, seq: 9 }, 'contacts_by_import')[0],
    'import_id = ? AND ledger_id = ? AND (created_at, seq) > (?, ?)',
  );
  // not a walk of the sort order (an equality lookup): every condition as it is
  assert.is(conditionsOf({ email: 'a@b.c', createdAfter: 100 }, '+createdAt', { value: 500, seq: 9 }, 'contacts_by_email')[0], 'ledger_id = ? AND email IS NOT NULL AND coalesce(email_key, lower(email)) = ? AND created_at >= ? AND (created_at, seq) > (?, ?)');
});

B('a window\'s last entry is the stop unless the filter\'s range ends first; a time filter stops the walk before the contacts without a value', () => {
  const [part] = listParts(L, { createdBefore: 900, company: 'x' }, '+createdAt', undefined, 'contacts_by_created');
  const where = (until: number[]) => rowsSql(part!, 'seq', undefined, until).sql.replace(/^.*? WHERE (.*) ORDER BY.*$/, '$1');
  // an ASCII needle: LIKE, or the Unicode folding where the company has ß
  const company = `(company LIKE ? ESCAPE '\\' OR length(company) <> octet_length(company) AND (${[...FOLDS_TO_ASCII].map((c) => `instr(company, '${c}')`).join(' OR ')}) AND cl_contains_ci(company, ?))`;
  assert.is(where([500, 3]), `ledger_id = ? AND ${company} AND (created_at, seq) <= (?, ?)`);
  assert.is(where([900, 3]), `ledger_id = ? AND ${company} AND created_at < ?`);
  const [withTime] = listParts(L, { lastInfoChangedAt: 100, company: 'x' }, '-lastInfoChangedAt', undefined, 'contacts_by_info_change');
  assert.is(rowsSql(withTime!, 'seq').sql.replace(/^.*? WHERE (.*) ORDER BY.*$/, '$1'), `ledger_id = ? AND ${company} AND last_info_changed_at >= ?`);
  const end = windowEndSql(withTime!, [500, 3]).sql;
  assert.match(end, /WHERE ledger_id = \? AND \(last_info_changed_at, seq\) < \(\?, \?\) AND last_info_changed_at >= \? ORDER BY/, end);
});

B('a change-time sort filtered by that time has no part for the contacts without one (it read them all to find none)', () => {
  for (const [sort, key, index] of [
    ['-lastJobChangedAt', 'lastJobChangedAt', 'contacts_by_job_change'],
    ['-lastJobChangedAt', 'lastJobChangedAtBefore', 'contacts_by_job_change'],
    ['-lastInfoChangedAt', 'lastInfoChangedAt', 'contacts_by_info_change'],
    ['-lastInfoChangedAt', 'lastInfoChangedAtBefore', 'contacts_by_email'],
  ] as const) {
    const parts = listParts(L, { [key]: 100, email: 'a@b.c' }, sort, undefined, index);
    assert.is(parts.length, 1, `${sort} ${key}`);
    assert.not.match(rowsSql(parts[0]!, 'seq').sql, /IS NULL/);
  }
  // filtered by the other time: both parts
  assert.is(listParts(L, { lastInfoChangedAt: 100 }, '-lastJobChangedAt', undefined, 'contacts_by_job_change').length, 2);
  assert.is(listParts(L, {}, '-lastJobChangedAt', { value: null, seq: 5, nulls: true }, 'contacts_by_job_change').length, 1, 'the cursor is past the contacts with a value');
});

B.run();

// The signal the list routes hand to a walk (src/http/request-context.ts clientGone): aborted with a
// 499 when the connection closes before the answer, never after an answer sent whole.
const G = suite<{ t: TestApp; signals: Map<string, AbortSignal>; release: Map<string, () => void> }>('a client gone');
G.before(async (ctx) => {
  ctx.signals = new Map();
  ctx.release = new Map();
  ctx.t = await startApp({
    extend: (app) =>
      app.use(async (ctx2, next) => {
        const m = /^\/test\/held\/(\w+)$/.exec(ctx2.path);
        if (!m) return next();
        ctx.signals.set(m[1]!, clientGone(ctx2));
        await new Promise<void>((resolve) => ctx.release.set(m[1]!, resolve));
        ctx2.body = { ok: true };
      }),
  });
});
G.after(async (ctx) => ctx.t.close());

G('aborted when the client closes its connection first; not when the answer was sent', async ({ t, signals, release }) => {
  const { port } = new URL(t.base);
  const gone = request({ host: '127.0.0.1', port, path: '/test/held/gone' });
  gone.on('error', () => {}); // the socket is destroyed on purpose
  gone.end();
  const signal = (await until('the request arrived', () => signals.get('gone')))!;
  assert.not.ok(signal.aborted);
  gone.destroy();
  await until('the signal aborted', () => signal.aborted);
  assert.ok(signal.reason instanceof AppError);
  assert.is((signal.reason as AppError).status, 499);
  release.get('gone')!();

  const answered = t.call('GET', '/test/held/answered');
  const kept = (await until('the request arrived', () => signals.get('answered')))!;
  release.get('answered')!();
  assert.equal((await answered).body, { ok: true });
  // the access line is written on the response's close event, with clientGone's listener
  await until('the access line', () => t.logs.some((l) => l.includes('"path":"/test/held/answered"')));
  assert.not.ok(kept.aborted, 'an answer sent whole does not abort');
});

G.run();
