// Load shedding (src/http/load-shedding.ts, RELIABILITY.md L2): while the event loop stays late or saturated,
// new bulk work with a large body — a batch, a CSV upload, a feed — is answered 503 with
// Retry-After and nothing of it is kept; reads and small bodies are served as before.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { BULK_BODY_BYTES, HOLD_MS, LoadShedder } from '../src/http/load-shedding.ts';
import { createLedger, csvForm, expectStatus, LEDGER, ledgerPath, seedWorld, startApp, until, type TestApp, type World } from './helpers.ts';

/** Holds the event loop for `ms` (what a CPU-bound turn does). */
function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

/** Keeps the event loop `turnMs` late on every turn (a standing queue of work) until stopped. */
function hogLoop(turnMs: number): { stop(): void } {
  let on = true;
  const turn = () => {
    if (!on) return;
    busy(turnMs);
    setImmediate(turn);
  };
  setImmediate(turn);
  return { stop: () => void (on = false) };
}

/** Runs `fn` with a shedder watching this process's event loop, and stops it after. */
async function watching(targetMs: number, fn: (shedder: LoadShedder) => Promise<void>): Promise<void> {
  const shedder = new LoadShedder(targetMs).start();
  try {
    await fn(shedder);
  } finally {
    shedder.stop();
  }
}

/** Whether the shedder said "overloaded" at any time while the loop was kept `turnMs` late for `ms`. */
async function overloadedWhileHogged(shedder: LoadShedder, turnMs: number, ms: number): Promise<boolean> {
  const hog = hogLoop(turnMs);
  const start = performance.now();
  let seen = false;
  await until(`the loop to stay late for ${ms} ms`, () => {
    seen ||= shedder.overloaded();
    return performance.now() - start >= ms;
  });
  hog.stop();
  return seen;
}

const W = suite('the watch on the event loop');

W('a loop kept late for longer than the hold is overloaded; a stall or a burst is not; it ends when the loop catches up', () =>
  watching(20, async (shedder) => {
    assert.is(shedder.overloaded(), false, 'an idle loop');
    // one long stall, twice the hold: one late sample, not a queue
    busy(HOLD_MS * 2);
    // this timer runs right after the watch's own, which found the loop late
    await new Promise((r) => setTimeout(r, 0));
    assert.is(shedder.overloaded(), false, 'after a single long turn');
    await new Promise((r) => setTimeout(r, 30)); // on time again: the next late turns start a run of their own
    assert.is(await overloadedWhileHogged(shedder, 60, 300), false, 'a burst shorter than the hold');
    await new Promise((r) => setTimeout(r, 30));
    // late turns for longer than the hold
    const hog = hogLoop(60);
    const since = performance.now();
    await until('overloaded while the loop stays late', () => shedder.overloaded(), Boolean, 5_000);
    // (a window of the utilization that began just before the late turns may end a little before the hold)
    assert.ok(performance.now() - since >= HOLD_MS * 0.85, `not before the hold (${(performance.now() - since).toFixed(0)} ms)`);
    hog.stop();
    await until('not overloaded once the loop catches up', () => !shedder.overloaded(), Boolean, 5_000);
  }));

W('a loop busy nearly all the time in short turns is overloaded, though every turn is on time', () =>
  // clients that wait for each answer keep the queue on their side: the loop is never late, only full
  watching(20, async (shedder) => {
    const hog = hogLoop(8);
    await until('overloaded while the loop is saturated', () => shedder.overloaded(), Boolean, 5_000);
    hog.stop();
    await until('not overloaded once it is not', () => !shedder.overloaded(), Boolean, 5_000);
  }));

W('a target of 0 never sheds', () =>
  watching(0, async (shedder) => {
    assert.is(await overloadedWhileHogged(shedder, 60, HOLD_MS * 2), false);
  }));

W.run();

const H = suite<{ t: TestApp; w: World; ledger: string }>('bulk routes while the server is overloaded');
H.before(async (ctx) => {
  ctx.t = await startApp({ config: { overloadDelayMs: 20 } });
  ctx.w = await seedWorld(ctx.t);
  ctx.ledger = await createLedger(ctx.t, ctx.w.tokens.editor, ctx.w.orgId);
});
H.after(async (ctx) => ctx.t.close());

const contact = (i: number) => ({ name: `Person ${i}`, company: 'Acme', title: 'Engineer '.repeat(10).trim(), referenceId: `r${i}` });
/** A batch whose body is past BULK_BODY_BYTES. */
const bigBatch = (from: number) => ({ contacts: Array.from({ length: 600 }, (_, i) => contact(from + i)) });
const bigCsv = (from: number) => ['name,company,title,referenceId', ...Array.from({ length: 1000 }, (_, i) => `Person ${from + i},Acme,${'Engineer '.repeat(10).trim()},c${from + i}`)].join('\n');

H('large batches, CSV uploads and feeds get 503 with Retry-After and leave nothing; reads and single contacts go on; all is taken again once the loop catches up', async ({ t, w, ledger }) => {
  const contacts = `${ledgerPath(w.orgId, ledger)}/contacts`;
  const imports = `${ledgerPath(w.orgId, ledger)}/imports`;
  const token = w.tokens.editor;
  assert.ok(Buffer.byteLength(JSON.stringify(bigBatch(0))) >= BULK_BODY_BYTES && Buffer.byteLength(bigCsv(0)) >= BULK_BODY_BYTES);
  const countImports = async () => {
    const r = await t.call('GET', `${imports}?limit=1000`, { token });
    expectStatus(r, 200);
    return r.body.imports.length as number;
  };
  expectStatus(await t.call('POST', contacts, { token, body: bigBatch(0) }), 202, 'a large batch before');
  const before = await countImports();

  const hog = hogLoop(60);
  try {
    await until('the server to be overloaded', () => t.rt.loadShedder.overloaded(), Boolean, 10_000);
    const shed = [
      ['a large batch', await t.call('POST', contacts, { token, body: bigBatch(1000) })],
      ['a CSV upload', await t.call('POST', imports, { token, raw: csvForm(bigCsv(2000)) })],
      ['a CSV preview', await t.call('POST', `${imports}/preview`, { token, raw: csvForm(bigCsv(2000)) })],
      ['a feed', await t.call('POST', `${LEDGER}/feed`, { token: w.serviceAccounts.feed.token, raw: Array.from({ length: 1000 }, (_, i) => JSON.stringify({ linkedin: `linkedin.com/in/p-${i}`, name: `P ${i}`, company: 'Globex' })).join('\n'), headers: { 'content-type': 'application/x-ndjson' } })],
    ] as const;
    for (const [what, r] of shed) {
      expectStatus(r, 503, what);
      assert.is(r.headers.get('content-type'), 'application/problem+json', what);
      assert.is(r.headers.get('retry-after'), '2', what);
      assert.is(r.body.code, 'server_overloaded', what);
    }
    // the rest of the API is served: reads, a single contact, a small batch
    expectStatus(await t.call('GET', `${contacts}?limit=5`, { token }), 200, 'a list');
    expectStatus(await t.call('POST', contacts, { token, body: contact(5000) }), 202, 'a single contact');
    expectStatus(await t.call('POST', contacts, { token, body: { contacts: [contact(5001), contact(5002)] } }), 202, 'a small batch');
    assert.is(await countImports(), before + 2, 'no job for a refused body');
    const metrics = (await t.call('GET', '/metrics', { token: w.root })).text;
    assert.match(metrics, /^contact_ledger_overloaded 1$/m);
    assert.match(metrics, /^contact_ledger_overload_refusals_total 4$/m);
  } finally {
    hog.stop();
  }
  const again = await until('a large batch taken again', () => t.call('POST', contacts, { token, body: bigBatch(1000) }), (r) => r.status !== 503, 10_000);
  expectStatus(again, 202);
  expectStatus(await t.call('POST', imports, { token, raw: csvForm(bigCsv(2000)) }), 202, 'a CSV upload after');
  const feeds = await t.call('GET', `${LEDGER}/feed`, { token: w.serviceAccounts.feed.token });
  assert.is(feeds.body.feeds.length, 0, 'no feed job for the refused feed');
  assert.match((await t.call('GET', '/metrics', { token: w.root })).text, /^contact_ledger_overloaded 0$/m);
});

H('the OpenAPI document lists the 503 of the bulk routes', async ({ t }) => {
  const doc = (await t.call('GET', `${LEDGER}/openapi.json`)).body;
  const bulk: [string, string][] = [
    ['/orgs/{orgId}/ledgers/{ledgerId}/contacts', 'post'],
    ['/orgs/{orgId}/ledgers/{ledgerId}/imports', 'post'],
    ['/orgs/{orgId}/ledgers/{ledgerId}/contacts/imports', 'post'],
    ['/orgs/{orgId}/ledgers/{ledgerId}/imports/preview', 'post'],
    ['/feed', 'post'],
  ];
  for (const [path, method] of bulk) {
    assert.match(doc.paths[path]?.[method]?.responses?.['503']?.description ?? '', /overloaded/, `${method} ${path}`);
  }
  assert.not.match(doc.paths['/orgs/{orgId}/ledgers/{ledgerId}/contacts'].get.responses['503'].description, /overloaded/, 'not a read');
});

H.run();
