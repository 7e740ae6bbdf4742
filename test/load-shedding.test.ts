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

/** A whole window of the watch (HOLD_MS) and a few of its samples more. */
const QUIET_MS = HOLD_MS + 50;
/**
 * The longest gap between two polls of quiet() that still counts as on time: below the target of
 * every watch here (20 ms). A sample of the watch falls due between two polls and runs by the
 * second, so it finds the loop less late than this.
 */
const ON_TIME_GAP_MS = 15;

/**
 * Waits, the loop idle, until the watch has had nothing to report for QUIET_MS in a row: it said
 * "not overloaded" all along, and this wait's own polls (5 ms apart) never came ON_TIME_GAP_MS
 * late, so each of the watch's samples meanwhile was on time. A run of late samples has then
 * ended, and the window of utilization in progress began on the idle loop: the next phase of a
 * test starts from a clean state, however busy the machine (a busy machine only makes it wait longer).
 */
async function quiet(overloaded: () => boolean, what: string): Promise<void> {
  let since = performance.now();
  let last = since;
  await until(
    what,
    () => {
      const now = performance.now();
      if (overloaded() || now - last >= ON_TIME_GAP_MS) since = now;
      last = now;
      return now - since >= QUIET_MS;
    },
    Boolean,
    30_000,
  );
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
    // on time again: the next late turns start a run of their own. (Was a 30 ms pause, about three
    // samples: on a starved machine they could all be late, and the stall's run went on into the
    // burst; and a window of utilization then held both the burst and the next phase's late turns.)
    await quiet(() => shedder.overloaded(), 'the loop on time again after the stall');
    assert.is(await overloadedWhileHogged(shedder, 60, 300), false, 'a burst shorter than the hold');
    await quiet(() => shedder.overloaded(), 'the loop on time again after the burst');
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
  const refusals = async () => Number(/^contact_ledger_overload_refusals_total (\d+)$/m.exec((await t.call('GET', '/metrics', { token: w.root })).text)?.[1]);
  /**
   * A large body sent while the server is not overloaded: once the watch has had nothing to report
   * for a window (the seeding, or the hog, kept this process's loop busy, and a window of it may
   * still be on the watch's record), and after the next such wait again while the answer is 503 —
   * on a machine so starved that handling the request itself kept the loop late for the hold, the
   * server is overloaded by its own measure. It is the first other answer; a server that refuses
   * large bodies while idle fails at the deadline.
   */
  const whenIdle = (what: string, send: () => Promise<Awaited<ReturnType<TestApp['call']>>>) =>
    until(
      `${what} not refused`,
      async () => {
        await quiet(() => t.rt.loadShedder.overloaded(), `the server idle before ${what}`);
        return send();
      },
      (r) => r.status !== 503,
      60_000,
    );
  expectStatus(await whenIdle('a large batch before', () => t.call('POST', contacts, { token, body: bigBatch(0) })), 202, 'a large batch before');
  const before = await countImports();
  const refusedBefore = await refusals();

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
    // (counted from the refusals before: a large body sent again above was refused too)
    assert.match(metrics, new RegExp(`^contact_ledger_overload_refusals_total ${refusedBefore + 4}$`, 'm'));
  } finally {
    hog.stop();
  }
  // Was: the batch sent until it was not 503, then the CSV upload at once; but a window of the
  // utilization that held mostly the hog can end just after the batch got through, and refuse the
  // upload. Now each waits until the watch has seen the loop caught up (within the deadline).
  expectStatus(await whenIdle('a large batch after', () => t.call('POST', contacts, { token, body: bigBatch(1000) })), 202, 'a large batch after');
  expectStatus(await whenIdle('a CSV upload after', () => t.call('POST', imports, { token, raw: csvForm(bigCsv(2000)) })), 202, 'a CSV upload after');
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
