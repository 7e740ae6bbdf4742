// Webhooks (SPEC §6): administration and validation, roles and tenants, the outbox written with
// each change, signed deliveries to a real local receiver, retries driven by the manual clock,
// deadlines, redirects, the host allow-list, disabling after persistent failure, the test ping,
// fairness between organizations and hosts, and fenced claims (RELIABILITY.md D4). The kill -9 case is in webhooks-crash.test.ts.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createHmac, timingSafeEqual } from 'node:crypto';
import http, { type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../src/clock.ts';
import { ConfigError, loadConfig } from '../src/config.ts';
import { DB_FILE } from '../src/runtime.ts';
import { openDb } from '../src/storage/db.ts';
import { VERSION } from '../src/version.ts';
import { RETRY_DELAYS_MS } from '../src/webhooks/dispatcher.ts';
import { createSender, type Resolve } from '../src/webhooks/sender.ts';
import { checkWebhookUrl, hostAllowed } from '../src/webhooks/url-policy.ts';
import { MAX_WEBHOOKS_PER_ORG } from '../src/webhooks/webhook-service.ts';
import { createWebhooksRepo } from '../src/webhooks/webhooks-repo.ts';
import { addContacts, clientToken, createLedger, csvForm, expectStatus, feedAndWait, ID, LEDGER, ledgerPath, PASSWORD, seedWorld, signIn, signInRoot, startApp, type TestApp, type World } from './helpers.ts';

// ── a real receiver on 127.0.0.1 ─────────────────────────────────────────

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  path: string;
}

type Reply = (r: Received, res: ServerResponse) => void;

interface Receiver {
  url: string;
  got: Received[];
  /** Requests whose answer is still outstanding. */
  open: () => number;
  reply: Reply;
  close(): Promise<void>;
}

const ok: Reply = (_r, res) => res.end('ok');
const hang: Reply = () => undefined;

/** Receivers still listening; every suite closes them at its end, whatever happened. */
const receivers = new Set<Receiver>();
const closeReceivers = async () => {
  for (const r of receivers) await r.close();
};

/**
 * A receiver listening on `listen`: 127.0.0.1, another loopback address (127.0.0.2 … — another
 * host name to the dispatcher's per-host limit), or 0.0.0.0 to be reachable on every address of
 * this machine (its URL then names 127.0.0.1).
 */
async function receiver(reply: Reply = ok, listen = '127.0.0.1'): Promise<Receiver> {
  const got: Received[] = [];
  let open = 0;
  const rec: Receiver = {
    url: '',
    got,
    open: () => open,
    reply,
    close: async () => {
      if (!receivers.delete(rec)) return;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      const r = { headers: req.headers, body, path: req.url ?? '' };
      got.push(r);
      open++;
      res.on('close', () => open--);
      rec.reply(r, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, listen, () => resolve()));
  receivers.add(rec);
  rec.url = `http://${listen === '0.0.0.0' ? '127.0.0.1' : listen}:${(server.address() as AddressInfo).port}/hooks/ledger`;
  return rec;
}

/** Polls until `fn` returns a truthy value (no fixed sleeps; the dispatcher is kicked meanwhile). */
async function until<T>(t: TestApp, what: string, fn: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    t.rt.webhooks.kick();
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Verifies X-Ledger-Signature the way a receiver would: HMAC-SHA256(secret, "<t>.<raw body>"). */
function signatureValid(secret: string, header: string | string[] | undefined, rawBody: string): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(header));
  if (!m) return false;
  const expected = createHmac('sha256', secret).update(`${m[1]}.${rawBody}`).digest();
  return timingSafeEqual(expected, Buffer.from(m[2]!, 'hex'));
}

// ── helpers over the API ─────────────────────────────────────────────────

const hooks = (w: World, rest = '') => `${LEDGER}/orgs/${w.orgId}/webhooks${rest}`;

async function createHook(t: TestApp, w: World, body: Record<string, unknown>): Promise<{ id: string; secret: string; [k: string]: any }> {
  const r = await t.call('POST', hooks(w), { token: w.tokens.admin, body });
  expectStatus(r, 201, 'create webhook');
  return r.body;
}

const feed = (t: TestApp, token: string, records: unknown[]) => feedAndWait(t, token, records.map((x) => JSON.stringify(x)).join('\n'));

let people = 0;
/** Imports `n` contacts, then feeds records that move each person to another company: n job changes. */
async function jobChanges(t: TestApp, w: World, ledgerId: string, n: number): Promise<string[]> {
  const slugs = Array.from({ length: n }, () => `person-${++people}-${Date.now().toString(36)}`);
  await addContacts(t, w.tokens.editor, w.orgId, ledgerId, slugs.map((slug) => ({ name: `Pat ${slug}`, company: 'Acme', title: 'Engineer', linkedin: `linkedin.com/in/${slug}` })));
  const job = await feed(t, w.serviceAccounts.feed.token, slugs.map((slug) => ({ linkedin: `linkedin.com/in/${slug}`, name: `Pat ${slug}`, company: 'Globex', title: 'VP Engineering' })));
  assert.is(job.jobChanges, n, `the feed made ${n} job changes`);
  const ids: string[] = [];
  for (const slug of slugs) {
    const list = await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/contacts?linkedin=linkedin.com/in/${slug}`, { token: w.tokens.viewer });
    ids.push(list.body.contacts[0].id);
  }
  return ids;
}
const jobChange = async (t: TestApp, w: World, ledgerId: string) => ({ contactId: (await jobChanges(t, w, ledgerId, 1))[0]! });

/** New access tokens for the world's actors (after the manual clock jumped past their expiry). */
async function freshTokens(t: TestApp, w: World): Promise<void> {
  for (const who of ['admin', 'editor', 'viewer'] as const) w.tokens[who] = (await signIn(t, `${who}@a.test`, PASSWORD)).accessToken;
  w.serviceAccounts.feed.token = await clientToken(t, w.serviceAccounts.feed.id, w.serviceAccounts.feed.secret);
}

/** Creates an organization as the superuser, who becomes its admin (`root`: the superuser's access token). */
async function newOrg(t: TestApp, root: string, name: string): Promise<string> {
  const r = await t.call('POST', `${ID}/orgs`, { token: root, body: { name } });
  expectStatus(r, 201, `create org ${name}`);
  return r.body.id;
}

const orgHooks = (orgId: string, rest = '') => `${LEDGER}/orgs/${orgId}/webhooks${rest}`;

/** Creates a webhook in any organization (`token`: one of its admins) and returns its id. */
async function hookIn(t: TestApp, token: string, orgId: string, url: string, events = ['import.completed']): Promise<string> {
  const r = await t.call('POST', orgHooks(orgId), { token, body: { url, events } });
  expectStatus(r, 201, 'create webhook');
  return r.body.id;
}

/** Sends a webhook's test ping; returns the delivery id. */
async function ping(t: TestApp, token: string, orgId: string, hookId: string): Promise<string> {
  const r = await t.call('POST', orgHooks(orgId, `/${hookId}/test`), { token });
  expectStatus(r, 202, 'ping');
  return r.body.id;
}

/** The webhook as an admin reads it. */
const webhook = async (t: TestApp, w: World, hookId: string) => (await t.call('GET', hooks(w, `/${hookId}`), { token: w.tokens.admin })).body;

const deliveries = async (t: TestApp, w: World, hookId: string, query = '') => {
  const r = await t.call('GET', hooks(w, `/${hookId}/deliveries${query}`), { token: w.tokens.admin });
  expectStatus(r, 200, 'deliveries');
  return r.body.deliveries as any[];
};

// ── administration ───────────────────────────────────────────────────────

type Ctx = { t: TestApp; w: World };
const A = suite<Ctx>('webhook administration');
A.before(async (ctx) => {
  ctx.t = await startApp();
  ctx.w = await seedWorld(ctx.t);
});
A.after(async (ctx) => {
  await closeReceivers();
  await ctx.t.close();
});

A('create returns the secret once; get, list, patch and delete; every change is audited', async ({ t, w }) => {
  const ledgerId = await createLedger(t, w.tokens.editor, w.orgId, 'hooked');
  const created = await t.call('POST', hooks(w), { token: w.tokens.admin, body: { url: 'https://hooks.example.test/ledger?x=1', events: ['contact.job_changed', 'contact.job_changed'], ledgerIds: [ledgerId], token: 'receiver-token-1' } });
  expectStatus(created, 201);
  const h = created.body;
  assert.match(h.id, /^wh_[0-9a-z]{26}$/);
  assert.match(h.secret, /^whsec_[A-Za-z0-9_-]{43}$/, '256 random bits');
  assert.is(created.headers.get('location'), `http://ledger.test${hooks(w, `/${h.id}`)}`);
  assert.is(created.headers.get('cache-control'), 'no-store');
  assert.equal(
    { url: h.url, events: h.events, ledgerIds: h.ledgerIds, hasToken: h.hasToken, enabled: h.enabled, disabledReason: h.disabledReason, orgId: h.orgId },
    { url: 'https://hooks.example.test/ledger?x=1', events: ['contact.job_changed'], ledgerIds: [ledgerId], hasToken: true, enabled: true, disabledReason: null, orgId: w.orgId },
  );
  assert.not.ok('token' in h, 'the token is never returned');

  const got = await t.call('GET', hooks(w, `/${h.id}`), { token: w.tokens.admin });
  expectStatus(got, 200);
  assert.not.ok('secret' in got.body, 'the secret is shown only at creation');
  assert.not.ok(got.text.includes(h.secret) || got.text.includes('receiver-token-1'));
  const list = await t.call('GET', hooks(w), { token: w.tokens.admin });
  assert.ok(list.body.webhooks.some((x: any) => x.id === h.id));
  assert.is(list.body.nextCursor, null);

  const patched = await t.call('PATCH', hooks(w, `/${h.id}`), { token: w.tokens.admin, body: { events: ['import.completed', 'contact.info_changed'], ledgerIds: null, token: null, url: 'http://HOOKS.example.test:8080/a/../b' } });
  expectStatus(patched, 200);
  assert.equal([patched.body.events, patched.body.ledgerIds, patched.body.hasToken, patched.body.url], [['import.completed', 'contact.info_changed'], null, false, 'http://hooks.example.test:8080/b']);
  const off = await t.call('PATCH', hooks(w, `/${h.id}`), { token: w.tokens.admin, body: { enabled: false } });
  assert.equal([off.body.enabled, off.body.disabledReason], [false, 'disabled by admin@a.test']);
  assert.ok(off.body.disabledAt);
  const on = await t.call('PATCH', hooks(w, `/${h.id}`), { token: w.tokens.admin, body: { enabled: true } });
  assert.equal([on.body.enabled, on.body.disabledReason, on.body.disabledAt], [true, null, null]);

  const rotated = await t.call('POST', hooks(w, `/${h.id}/rotate`), { token: w.tokens.admin });
  expectStatus(rotated, 200);
  assert.match(rotated.body.secret, /^whsec_/);
  assert.is.not(rotated.body.secret, h.secret);

  expectStatus(await t.call('DELETE', hooks(w, `/${h.id}`), { token: w.tokens.admin }), 204);
  expectStatus(await t.call('GET', hooks(w, `/${h.id}`), { token: w.tokens.admin }), 404);
  expectStatus(await t.call('DELETE', hooks(w, `/${h.id}`), { token: w.tokens.admin }), 404);

  const audit = await t.call('GET', `${ID}/orgs/${w.orgId}/audit?limit=50`, { token: w.tokens.admin });
  const mine = audit.body.events.filter((e: any) => e.target?.id === h.id || e.targetId === h.id);
  const actions = mine.map((e: any) => e.action);
  for (const a of ['webhook.created', 'webhook.updated', 'webhook.secret_rotated', 'webhook.deleted']) assert.ok(actions.includes(a), `${a} audited (${actions.join(', ')})`);
  assert.not.ok(JSON.stringify(mine).includes('receiver-token-1') || JSON.stringify(mine).includes(h.secret) || JSON.stringify(mine).includes(rotated.body.secret), 'no token or secret in the audit log');
});

A("a webhook URL's query, often the receiver's credential, stays out of the audit log", async ({ t, w }) => {
  const h = await createHook(t, w, { url: 'https://hooks.example.test/in?key=sekrit-one', events: ['import.completed'] });
  expectStatus(await t.call('PATCH', hooks(w, `/${h.id}`), { token: w.tokens.admin, body: { url: 'https://hooks.example.test/in?key=sekrit-two' } }), 200);
  expectStatus(await t.call('PATCH', hooks(w, `/${h.id}`), { token: w.tokens.admin, body: { url: 'https://other.example.test/in' } }), 200);
  expectStatus(await t.call('DELETE', hooks(w, `/${h.id}`), { token: w.tokens.admin }), 204);
  const audit = await t.call('GET', `${ID}/orgs/${w.orgId}/audit?limit=50`, { token: w.tokens.admin });
  const mine = audit.body.events.filter((e: any) => e.target?.id === h.id);
  assert.not.ok(JSON.stringify(mine).includes('sekrit'), JSON.stringify(mine));
  const byAction = (a: string) => mine.filter((e: any) => e.action === a).map((e: any) => e.data.url);
  assert.equal(byAction('webhook.created'), ['https://hooks.example.test/in?…']);
  assert.equal(byAction('webhook.updated'), [
    { from: 'https://hooks.example.test/in?…', to: 'https://other.example.test/in' },
    { from: 'https://hooks.example.test/in?…', to: 'https://hooks.example.test/in?…', queryChanged: true },
  ], 'newest first: the host change, then the change of the query alone');
  assert.equal(byAction('webhook.deleted'), ['https://other.example.test/in']);
});

A('invalid webhooks are refused with a 422 naming the field', async ({ t, w }) => {
  const bad: [Record<string, unknown>, string, RegExp][] = [
    [{ url: 'ftp://files.example.test/x', events: ['import.completed'] }, 'url', /http or https/],
    [{ url: 'not-a-url', events: ['import.completed'] }, 'url', /absolute http/],
    [{ url: 'not a url', events: ['import.completed'] }, 'url', /spaces/],
    // what the URL parser forgives is refused, not read as another host or path
    [{ url: 'http:///hooks/path', events: ['import.completed'] }, 'url', /scheme:\/\/host/],
    [{ url: 'http:hooks.example.test/x', events: ['import.completed'] }, 'url', /scheme:\/\/host/],
    [{ url: 'https:\\\\hooks.example.test/x', events: ['import.completed'] }, 'url', /backslash/],
    [{ url: 'https://hooks.example.test\\x', events: ['import.completed'] }, 'url', /backslash/],
    [{ url: 'https://good.example.test\\@evil.example.test/', events: ['import.completed'] }, 'url', /backslash/],
    [{ url: 'https://hooks.example.test:8a/', events: ['import.completed'] }, 'url', /port 8a .*a number between 1 and 65535/],
    [{ url: 'https://ho\u00adoks.example.test/', events: ['import.completed'] }, 'url', /invisible/],
    [{ url: 'https://hooks\u200b.example.test/', events: ['import.completed'] }, 'url', /invisible/],
    [{ url: 'https://hooks.example.test/\u0085', events: ['import.completed'] }, 'url', /invisible/],
    [{ url: 'https://hooks.example.test/a b', events: ['import.completed'] }, 'url', /spaces/],
    [{ url: 'https://hooks.exam\tple.test/', events: ['import.completed'] }, 'url', /tabs/],
    [{ url: 'https://hooks.example.test:0/', events: ['import.completed'] }, 'url', /port 0 .*between 1 and 65535/],
    [{ url: 'https://hooks.example.test:99999/', events: ['import.completed'] }, 'url', /port 99999 .*between 1 and 65535/],
    [{ url: 'javascript:alert(1)', events: ['import.completed'] }, 'url', /http or https/],
    [{ url: 'https://user:pw@hooks.example.test/', events: ['import.completed'] }, 'url', /user name or password/],
    // hosts the URL parser takes but no lookup finds: they could only ever fail "not found"
    ...['http://./', 'http://a..b/', 'http://-a.example.test/', 'http://a-.example.test/', 'http://*.example.test/', 'http://xn--localhost-.test/', `http://${'a'.repeat(64)}.test/`].map(
      (url) => [{ url, events: ['import.completed'] }, 'url', /is not a host name that can be looked up/] as [Record<string, unknown>, string, RegExp],
    ),
    [{ url: 'https://hooks.example.test/#frag', events: ['import.completed'] }, 'url', /fragment/],
    [{ url: `https://hooks.example.test/${'a'.repeat(2100)}`, events: ['import.completed'] }, 'url', /2048/],
    // within the limit as typed, over it as stored (each ü is %C3%BC): refused, not accepted and then never sent
    [{ url: `https://hooks.example.test/${'ü'.repeat(1000)}`, events: ['import.completed'] }, 'url', /at most 2048 characters once normalized .*, and is 6027/],
    [{ url: 'https://hooks.example.test/', events: [] }, 'events', /at least one/],
    [{ url: 'https://hooks.example.test/', events: ['contact.deleted'] }, 'events.0', /must be one of/],
    [{ url: 'https://hooks.example.test/' }, 'events', /./],
    [{ url: 'https://hooks.example.test/', events: ['import.completed'], token: 'a\r\nX-Evil: 1' }, 'token', /printable ASCII/],
    [{ url: 'https://hooks.example.test/', events: ['import.completed'], ledgerIds: ['l_nope'] }, 'ledgerIds.0', /no ledger/],
    [{ url: 'https://hooks.example.test/', events: ['import.completed'], secret: 'mine' }, 'secret', /not a known field/],
    [{ url: 'https://hooks.example.test/', events: ['import.completed'], enabled: 'yes' }, 'enabled', /true or false/],
  ];
  for (const [body, path, message] of bad) {
    const r = await t.call('POST', hooks(w), { token: w.tokens.admin, body });
    assert.is(r.status, 422, `${JSON.stringify(body).slice(0, 80)} → ${r.status} ${r.text.slice(0, 200)}`);
    const e = r.body.errors.find((x: any) => x.path === path);
    assert.ok(e, `error on ${path}: ${r.text.slice(0, 300)}`);
    assert.match(e.message, message);
  }
  // one error a field: an empty token is "must not be empty", not that and the pattern it fails too
  const empty = await t.call('POST', hooks(w), { token: w.tokens.admin, body: { url: 'https://hooks.example.test/', events: ['import.completed'], token: '' } });
  assert.equal(empty.body.errors, [{ path: 'token', message: 'must not be empty' }]);
  // another organization's ledger is not a ledger of this one
  const bLedger = await createLedger(t, w.tokens.otherAdmin, w.otherOrgId, 'B ledger');
  const cross = await t.call('POST', hooks(w), { token: w.tokens.admin, body: { url: 'https://hooks.example.test/', events: ['import.completed'], ledgerIds: [bLedger] } });
  assert.is(cross.status, 422);
  for (const url of ['http://host_1.lan/', 'https://bücher.example.test./x', 'http://10.0.0.5:8080/']) {
    expectStatus(await t.call('DELETE', hooks(w, `/${(await createHook(t, w, { url, events: ['import.completed'] })).id}`), { token: w.tokens.admin }), 204);
  }
  const h = await createHook(t, w, { url: 'https://hooks.example.test/', events: ['import.completed'] });
  expectStatus(await t.call('PATCH', hooks(w, `/${h.id}`), { token: w.tokens.admin, body: {} }), 422);
  expectStatus(await t.call('PATCH', hooks(w, `/${h.id}`), { token: w.tokens.admin, body: { url: 'gopher://x' } }), 422);
  expectStatus(await t.call('DELETE', hooks(w, `/${h.id}`), { token: w.tokens.admin }), 204);
});

A('a deleted ledger leaves the webhooks that named it; one left naming none is disabled saying why, and needs ledgers to be enabled again', async ({ t, w }) => {
  const [gone, kept] = [await createLedger(t, w.tokens.editor, w.orgId, 'to delete'), await createLedger(t, w.tokens.editor, w.orgId, 'to keep')];
  const both = await createHook(t, w, { url: 'https://hooks.example.test/both', events: ['import.completed'], ledgerIds: [gone, kept] });
  const only = await createHook(t, w, { url: 'https://hooks.example.test/only', events: ['import.completed'], ledgerIds: [gone] });
  const every = await createHook(t, w, { url: 'https://hooks.example.test/every', events: ['import.completed'], ledgerIds: null });
  const off = await createHook(t, w, { url: 'https://hooks.example.test/off', events: ['import.completed'], ledgerIds: [gone] });
  const turnedOff = await t.call('PATCH', hooks(w, `/${off.id}`), { token: w.tokens.admin, body: { enabled: false } });
  expectStatus(turnedOff, 200);
  expectStatus(await t.call('DELETE', ledgerPath(w.orgId, gone), { token: w.tokens.admin }), 204);
  // one an admin had disabled says why it cannot be enabled now, and keeps who disabled it and when (a tester's case)
  const f = await webhook(t, w, off.id);
  assert.equal([f.ledgerIds, f.enabled, f.disabledAt], [[], false, turnedOff.body.disabledAt]);
  assert.is(f.disabledReason, `every ledger it reported on was deleted (the last: ${gone}); before that: ${turnedOff.body.disabledReason}`);
  const [b, o, e] = await Promise.all([both, only, every].map((h) => webhook(t, w, h.id)));
  assert.equal([b.ledgerIds, b.enabled], [[kept], true], 'the other ledger stays');
  assert.equal([o.ledgerIds, o.enabled], [[], false], 'naming no ledger, it is disabled (not widened to every ledger)');
  assert.match(o.disabledReason, new RegExp(`every ledger it reported on was deleted \\(the last: ${gone}\\)`));
  assert.equal([e.ledgerIds, e.enabled], [null, true], 'a webhook for every ledger is untouched');
  // the list it shows is accepted back; enabling one that names no ledger asks for ledgers
  expectStatus(await t.call('PATCH', hooks(w, `/${both.id}`), { token: w.tokens.admin, body: { ledgerIds: b.ledgerIds } }), 200);
  const refused = await t.call('PATCH', hooks(w, `/${only.id}`), { token: w.tokens.admin, body: { enabled: true } });
  expectStatus(refused, 422, 'enabled without a ledger');
  assert.equal(refused.body.errors, [{ path: 'ledgerIds', message: 'names no ledger (they were deleted)' }]);
  // the whole webhook as it is shown, sent back with another URL: accepted while it stays disabled (a tester's read-modify-write)
  const shown = { url: 'https://hooks.example.test/only-moved', events: o.events, ledgerIds: o.ledgerIds, enabled: o.enabled };
  const sentBack = await t.call('PATCH', hooks(w, `/${only.id}`), { token: w.tokens.admin, body: shown });
  expectStatus(sentBack, 200, 'the shown ledgerIds: [] sent back');
  assert.equal([sentBack.body.url, sentBack.body.ledgerIds, sentBack.body.enabled], [shown.url, [], false]);
  const noLedger = { path: 'ledgerIds', message: 'must name at least one ledger (or be null for every ledger)' };
  const enabling = await t.call('PATCH', hooks(w, `/${only.id}`), { token: w.tokens.admin, body: { ...shown, enabled: true } });
  expectStatus(enabling, 422, '[] with enabled: true');
  assert.equal(enabling.body.errors, [noLedger]);
  const emptied = await t.call('PATCH', hooks(w, `/${both.id}`), { token: w.tokens.admin, body: { ledgerIds: [] } });
  expectStatus(emptied, 422, 'an enabled webhook emptied of ledgers');
  assert.equal(emptied.body.errors, [noLedger]);
  const created = await t.call('POST', hooks(w), { token: w.tokens.admin, body: { url: 'https://hooks.example.test/none', events: ['import.completed'], ledgerIds: [] } });
  expectStatus(created, 422, 'created enabled with no ledger');
  assert.equal(created.body.errors, [noLedger]);
  const copy = await t.call('POST', hooks(w), { token: w.tokens.admin, body: shown });
  expectStatus(copy, 201, 'a copy of the shown webhook, disabled');
  expectStatus(await t.call('DELETE', hooks(w, `/${copy.body.id}`), { token: w.tokens.admin }), 204);
  const again = await t.call('PATCH', hooks(w, `/${only.id}`), { token: w.tokens.admin, body: { enabled: true, ledgerIds: [kept] } });
  expectStatus(again, 200);
  assert.equal([again.body.enabled, again.body.ledgerIds, again.body.disabledReason], [true, [kept], null]);
  const audit = await t.call('GET', `${ID}/orgs/${w.orgId}/audit?limit=50`, { token: w.tokens.admin });
  const forgot = audit.body.events.find((x: any) => x.action === 'webhook.updated' && (x.target?.id ?? x.targetId) === only.id && x.data?.enabled?.to === false);
  assert.equal(forgot?.data, { ledgerIds: { from: [gone], to: [] }, enabled: { from: true, to: false } }, 'the deletion\'s change to the webhook is audited');
  for (const h of [both, only, every]) expectStatus(await t.call('DELETE', hooks(w, `/${h.id}`), { token: w.tokens.admin }), 204);
});

A('routes that take no body refuse one (not silently ignore it); none, whitespace or {} are fine', async ({ t, w }) => {
  const h = await createHook(t, w, { url: 'https://hooks.example.test/', events: ['import.completed'] });
  for (const [path, body] of [[`/${h.id}/rotate`, { secret: 'mine' }], [`/${h.id}/test`, { url: 'https://elsewhere.test/' }]] as const) {
    const r = await t.call('POST', hooks(w, path), { token: w.tokens.admin, body });
    expectStatus(r, 422, path);
    assert.equal(r.body.errors, [{ path: 'body', message: 'is not taken by this request' }]);
    assert.match(r.body.message, /takes no body/);
    const text = await t.call('POST', hooks(w, path), { token: w.tokens.admin, raw: 'rotate please', headers: { 'content-type': 'text/plain' } });
    expectStatus(text, 422, `${path} text`);
  }
  assert.is((await webhook(t, w, h.id)).url, 'https://hooks.example.test/', 'nothing changed');
  expectStatus(await t.call('POST', hooks(w, `/${h.id}/rotate`), { token: w.tokens.admin, body: {} }), 200);
  expectStatus(await t.call('POST', hooks(w, `/${h.id}/test`), { token: w.tokens.admin, raw: ' { }\n', headers: { 'content-type': 'application/json' } }), 202);
  expectStatus(await t.call('POST', hooks(w, `/${h.id}/test`), { token: w.tokens.admin }), 202);
  expectStatus(await t.call('DELETE', hooks(w, `/${h.id}`), { token: w.tokens.admin, body: { force: true } }), 422);
  // a GET too: a filter sent in its body would be ignored and the whole list answered
  const getWithBody = await new Promise<number>((resolve, reject) => {
    const body = JSON.stringify({ status: 'failed' });
    const req = http.request(`${t.base}${hooks(w, `/${h.id}/deliveries`)}`, { method: 'GET', headers: { authorization: `Bearer ${w.tokens.admin}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.on('error', reject);
    req.end(body);
  });
  assert.is(getWithBody, 422);
  expectStatus(await t.call('GET', hooks(w, `/${h.id}/deliveries`), { token: w.tokens.admin }), 200);
  expectStatus(await t.call('DELETE', hooks(w, `/${h.id}`), { token: w.tokens.admin }), 204);
});

A('only admins manage webhooks; another organization gets 403 on the path and 404 for its ids', async ({ t, w }) => {
  const h = await createHook(t, w, { url: 'https://hooks.example.test/', events: ['import.completed'] });
  for (const token of [w.tokens.viewer, w.tokens.editor, w.serviceAccounts.saEditor.token, w.tokens.outsider, w.tokens.otherAdmin]) {
    expectStatus(await t.call('GET', hooks(w), { token }), 403);
    expectStatus(await t.call('POST', hooks(w), { token, body: { url: 'https://x.test/', events: ['import.completed'] } }), 403);
    expectStatus(await t.call('PATCH', hooks(w, `/${h.id}`), { token, body: { enabled: false } }), 403);
    expectStatus(await t.call('POST', hooks(w, `/${h.id}/test`), { token }), 403);
  }
  expectStatus(await t.call('GET', hooks(w, `/${h.id}`), { token: w.serviceAccounts.saAdmin.token }), 200);
  // B's admin, naming A's webhook under B's own organization: not found, and nothing changes
  const B = `${LEDGER}/orgs/${w.otherOrgId}/webhooks/${h.id}`;
  for (const [method, path, body] of [['GET', B], ['PATCH', B, { enabled: false }], ['DELETE', B], ['POST', `${B}/rotate`], ['POST', `${B}/test`], ['GET', `${B}/deliveries`]] as [string, string, unknown?][]) {
    const r = await t.call(method, path, { token: w.tokens.otherAdmin, body });
    assert.is(r.status, 404, `${method} ${path}: ${r.text}`);
    assert.is(r.body.code, 'webhook_not_found');
  }
  const still = await t.call('GET', hooks(w, `/${h.id}`), { token: w.tokens.admin });
  assert.is(still.body.enabled, true);
  expectStatus(await t.call('DELETE', hooks(w, `/${h.id}`), { token: w.tokens.admin }), 204);
});

A.run();

// ── deleting a webhook ───────────────────────────────────────────────────

const X = suite('deleting a webhook');
X.after(closeReceivers);

/** Creates one more webhook in the world's organization; returns the answer. */
const createAnother = (t: TestApp, w: World) => t.call('POST', hooks(w), { token: w.tokens.admin, body: { url: 'https://hooks.example.test/more', events: ['import.completed'] } });

X('DELETE hides a webhook at once (API, limit, outbox, dispatcher) and its deliveries go in a background purge that survives a restart', async () => {
  const rx = await receiver();
  // no scheduler yet: what the request did alone can be looked at before any purge ran
  const first = await startApp({ noScheduler: true });
  const w = await seedWorld(first);
  const raw = first.rt.db.raw;
  const ledgerId = await createLedger(first, w.tokens.editor, w.orgId, 'hooked');
  const events = ['contact.job_changed', 'contact.info_changed', 'import.completed'];
  const gone = await createHook(first, w, { url: rx.url, events });
  const kept = await createHook(first, w, { url: rx.url, events });
  for (let i = 2; i < MAX_WEBHOOKS_PER_ORG; i++) await createHook(first, w, { url: `https://hooks.example.test/${i}`, events: ['import.completed'] });
  expectStatus(await createAnother(first, w), 409, 'the organization is at its limit');

  // the delivery log of a busy webhook: delivered ones and a pending backlog that is due now
  const N = 20_000;
  const now = first.clock.now();
  const ins = raw.prepare(
    `INSERT INTO webhook_deliveries (id, webhook_id, event_id, type, payload, status, attempts, max_attempts, next_at, created_at, finished_at)
     VALUES (?, ?, ?, 'contact.job_changed', '{}', ?, ?, 7, ?, ?, ?)`,
  );
  raw.transaction(() => {
    for (let i = 0; i < N; i++) {
      const pending = i % 10 === 0;
      ins.run(`dlv_gone_${i}`, gone.id, `evt_${i}`, pending ? 'pending' : 'delivered', pending ? 0 : 1, now - 1, now - 1000, pending ? null : now - 500);
    }
    for (let i = 0; i < 10; i++) ins.run(`dlv_kept_${i}`, kept.id, `evt_k${i}`, 'delivered', 1, now - 1, now - 1000, now - 500);
  })();
  const count = raw.prepare<[string], number>('SELECT count(*) FROM webhook_deliveries WHERE webhook_id = ?').pluck();
  const purgeJob = raw.prepare<[], { status: string }>("SELECT status FROM jobs WHERE kind = 'webhook.purge'");

  expectStatus(await first.call('DELETE', hooks(w, `/${gone.id}`), { token: w.tokens.admin }), 204);

  // gone for the API at once
  for (const [method, path] of [['GET', ''], ['PATCH', ''], ['DELETE', ''], ['POST', '/rotate'], ['POST', '/test'], ['GET', '/deliveries'], ['GET', '/deliveries/dlv_gone_1']] as const) {
    const r = await first.call(method, hooks(w, `/${gone.id}${path}`), { token: w.tokens.admin, body: method === 'PATCH' ? { enabled: false } : undefined });
    assert.is(r.status, 404, `${method} ${path}: ${r.text}`);
  }
  const list = await first.call('GET', hooks(w, '?limit=100'), { token: w.tokens.admin });
  assert.ok(!list.body.webhooks.some((x: any) => x.id === gone.id), 'not listed');
  assert.is(list.body.webhooks.length, MAX_WEBHOOKS_PER_ORG - 1);
  // not counted in the limit: its place is free at once, and only its place
  expectStatus(await createAnother(first, w), 201, 'a webhook in the place of the deleted one');
  expectStatus(await createAnother(first, w), 409, 'the limit again');
  // no new deliveries for it (the outbox's targets) and none of its pending ones sent (the dispatcher's)
  const targets = first.rt.webhooks.repo.listEnabledForLedger(ledgerId).map((x) => x.id);
  assert.ok(targets.includes(kept.id) && !targets.includes(gone.id), 'the outbox writes for the others only');
  assert.not.ok(first.rt.webhooks.repo.listDueWebhooks(first.clock.now()).some((x) => x.id === gone.id), 'its due deliveries are not sent');
  // the request deleted no delivery: the purge job does, in chunks
  assert.is(count.get(gone.id), N, 'every delivery is still there after the request');
  assert.equal(purgeJob.all(), [{ status: 'pending' }]);

  // the purge starts, and the service stops in the middle of it
  first.rt.scheduler.start();
  await until(first, 'the first chunks of the purge', () => count.get(gone.id)! < N);
  await first.close();
  const db = openDb(join(first.dataDir, DB_FILE));
  const left = db.raw.prepare<[string], number>('SELECT count(*) FROM webhook_deliveries WHERE webhook_id = ?').pluck().get(gone.id)!;
  const job = db.raw.prepare<[], { status: string }>("SELECT status FROM jobs WHERE kind = 'webhook.purge'").get();
  db.close();
  assert.ok(left > 0 && left < N, `stopped in the middle (${left} of ${N} left)`);
  assert.equal(job, { status: 'pending' }, 'handed back, to be taken up again');

  // after the restart the purge goes on with what is left, then deletes the row
  const t = await startApp({ dataDir: first.dataDir });
  try {
    await until(t, 'the end of the purge', () => t.rt.db.raw.prepare<[], { status: string }>("SELECT status FROM jobs WHERE kind = 'webhook.purge'").get()?.status === 'completed');
    const r = t.rt.db.raw;
    assert.is(r.prepare('SELECT count(*) FROM webhook_deliveries WHERE webhook_id = ?').pluck().get(gone.id), 0);
    assert.is(r.prepare('SELECT count(*) FROM webhooks WHERE id = ?').pluck().get(gone.id), 0, 'the row went last');
    assert.is(r.prepare('SELECT count(*) FROM webhook_deliveries WHERE webhook_id = ?').pluck().get(kept.id), 10, "another webhook's deliveries stay");
    assert.not.ok(rx.got.some((x) => String(x.headers['x-ledger-delivery']).startsWith('dlv_gone_')), 'no delivery of the deleted webhook was ever sent');
  } finally {
    await t.close();
    await rx.close();
  }
});

X.run();

const E = suite('the event time');
E.after(closeReceivers);

E("a change's event is dated with the change's detectedAt, an import's with its finishedAt, though writing them took time", async () => {
  // every reading of this clock is a millisecond later than the one before, as the time a feed chunk takes
  const ticking = new (class extends ManualClock {
    override now(): number {
      this.advance(1);
      return super.now();
    }
  })();
  const t = await startApp({ clock: ticking });
  try {
    const rx = await receiver();
    const w = await seedWorld(t);
    const ledgerId = await createLedger(t, w.tokens.editor, w.orgId, 'dated');
    await createHook(t, w, { url: rx.url, events: ['contact.job_changed', 'contact.info_changed', 'import.completed'] });
    await jobChange(t, w, ledgerId);
    const types = () => new Set(rx.got.map((r) => JSON.parse(r.body).type));
    await until(t, 'the import and change events', () => types().has('import.completed') && types().has('contact.job_changed') && t.rt.webhooks.dispatcher.inFlight() === 0);
    for (const event of rx.got.map((r) => JSON.parse(r.body))) {
      // an import's event was a millisecond after its finishedAt (a tester's case)
      assert.is(event.createdAt, event.type === 'import.completed' ? event.data.import.finishedAt : event.data.change.detectedAt, event.type);
    }
  } finally {
    await t.close();
  }
});

E.run();

// ── deliveries ───────────────────────────────────────────────────────────

const TIMEOUT_MS = 1500;
const D = suite<Ctx & { ledgerId: string }>('webhook deliveries');
D.before(async (ctx) => {
  ctx.t = await startApp({ config: { webhookTimeoutMs: TIMEOUT_MS } });
  ctx.w = await seedWorld(ctx.t);
  ctx.ledgerId = await createLedger(ctx.t, ctx.w.tokens.editor, ctx.w.orgId, 'webhooks');
});
D.after(async (ctx) => {
  await closeReceivers();
  await ctx.t.close();
});

D('a job change from a feed reaches a real receiver, signed, with the token and the API shapes', async ({ t, w, ledgerId }) => {
  const rx = await receiver();
  const h = await createHook(t, w, { url: rx.url, events: ['contact.job_changed', 'import.completed'], ledgerIds: [ledgerId], token: 'shared-token-42' });
  const otherLedger = await createLedger(t, w.tokens.editor, w.orgId, 'not hooked');
  const before = rx.got.length;
  const { contactId } = await jobChange(t, w, ledgerId);
  await jobChange(t, w, otherLedger); // not in ledgerIds: nothing is sent for it
  const types = () => rx.got.slice(before).map((r) => JSON.parse(r.body).type);
  await until(t, 'the import and the job change', () => types().length >= 2 && t.rt.webhooks.dispatcher.inFlight() === 0);
  assert.equal(types().sort(), ['contact.job_changed', 'import.completed'], 'info changes are not subscribed; the other ledger is not hooked');

  const job = rx.got.slice(before).find((r) => JSON.parse(r.body).type === 'contact.job_changed')!;
  assert.is(job.headers['content-type'], 'application/json');
  assert.is(job.headers['x-ledger-token'], 'shared-token-42');
  assert.match(String(job.headers['x-ledger-delivery']), /^dlv_[0-9a-z]{26}$/);
  assert.is(job.headers['user-agent'], `contact-ledger/${VERSION} (webhooks)`);
  assert.ok(signatureValid(h.secret, job.headers['x-ledger-signature'], job.body), 'the signature verifies with the secret');
  assert.not.ok(signatureValid('whsec_wrong', job.headers['x-ledger-signature'], job.body));
  assert.not.ok(signatureValid(h.secret, job.headers['x-ledger-signature'], job.body.replace('Globex', 'Glob3x')), 'a changed body does not verify');
  const t0 = Number(/^t=(\d+)/.exec(String(job.headers['x-ledger-signature']))![1]);
  assert.ok(Math.abs(t0 - t.clock.now() / 1000) < 60, 'the signed time is now');

  const event = JSON.parse(job.body);
  assert.match(event.id, /^evt_/);
  assert.equal([event.orgId, event.ledgerId, event.data.contact.id, event.data.contact.company, event.data.contact.importCompany], [w.orgId, ledgerId, contactId, 'Globex', 'Acme']);
  const apiContact = await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/contacts/${contactId}`, { token: w.tokens.viewer });
  assert.equal(event.data.contact, apiContact.body, 'the contact in the API shape');
  const history = await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/contacts/${contactId}/changes`, { token: w.tokens.viewer });
  assert.equal(event.data.change, history.body.changes.find((c: any) => c.type === 'job'), 'the change in the change-history shape');
  assert.ok(Date.parse(event.createdAt) > 0);

  const imp = JSON.parse(rx.got.slice(before).find((r) => JSON.parse(r.body).type === 'import.completed')!.body);
  assert.equal([imp.ledgerId, imp.data.import.status, imp.data.import.imported, imp.data.import.ledgerId], [ledgerId, 'completed', 1, ledgerId]);

  const log = await deliveries(t, w, h.id);
  const d = log.find((x) => x.id === job.headers['x-ledger-delivery'])!;
  assert.equal([d.status, d.attempts, d.responseStatus, d.error, d.type, d.eventId], ['delivered', 1, 200, null, 'contact.job_changed', event.id]);
  assert.ok(d.deliveredAt && d.attemptLog.length === 1 && d.attemptLog[0].responseStatus === 200);
  const one = await t.call('GET', hooks(w, `/${h.id}/deliveries/${d.id}`), { token: w.tokens.admin });
  assert.equal(one.body.payload, event, 'the delivery keeps the body exactly as sent');
  const hook = await webhook(t, w, h.id);
  assert.ok(hook.lastSuccessAt);
  assert.is(hook.failingSince, null);

  const logs = t.logs.join('');
  assert.not.ok(logs.includes(h.secret), 'the secret is never logged');
  assert.not.ok(logs.includes('shared-token-42'), 'the token is never logged');
  expectStatus(await t.call('DELETE', hooks(w, `/${h.id}`), { token: w.tokens.admin }), 204);
  await rx.close();
});

D('info changes: one contact.info_changed per changed field; an upload that cannot be read: import.completed with its failed job', async ({ t, w, ledgerId }) => {
  const rx = await receiver();
  const h = await createHook(t, w, { url: rx.url, events: ['contact.info_changed', 'import.completed'], ledgerIds: [ledgerId] });
  const before = rx.got.length;
  const slug = `info-${Date.now().toString(36)}`;
  await addContacts(t, w.tokens.editor, w.orgId, ledgerId, [{ name: 'Ida Info', company: 'Acme', title: 'Engineer', linkedin: `linkedin.com/in/${slug}` }]);
  const fed = await feed(t, w.serviceAccounts.feed.token, [{ linkedin: `linkedin.com/in/${slug}`, name: 'Ida Info', company: 'Acme', title: 'Staff Engineer', location: 'Oslo' }]);
  assert.equal([fed.jobChanges, fed.infoChanges], [0, 2]);
  const up = await t.call('POST', `${ledgerPath(w.orgId, ledgerId)}/imports`, { token: w.tokens.editor, raw: csvForm('name,company\nA,"never closed\n') });
  expectStatus(up, 202);
  assert.is(up.body.status, 'failed');
  const events = () => rx.got.slice(before).map((r) => JSON.parse(r.body));
  await until(t, 'two info changes and two imports', () => events().length >= 4 && t.rt.webhooks.dispatcher.inFlight() === 0);
  const info = events().filter((e) => e.type === 'contact.info_changed');
  assert.equal(info.map((e) => [e.data.change.type, e.data.change.field, e.data.change.to]).sort(), [['info', 'location', { location: 'Oslo' }], ['info', 'title', { title: 'Staff Engineer' }]]);
  assert.ok(info.every((e) => e.data.contact.title === 'Staff Engineer' && e.data.contact.location === 'Oslo'), 'the contact as it is after the change');
  const imports = events().filter((e) => e.type === 'import.completed').map((e) => e.data.import);
  const failed = imports.find((i) => i.id === up.body.id);
  assert.ok(failed, 'the failed upload is announced');
  assert.equal([failed.status, failed.imported, failed.message], ['failed', 0, up.body.message]);
  assert.match(failed.message, /opened on line 2 is never closed/);
  expectStatus(await t.call('DELETE', hooks(w, `/${h.id}`), { token: w.tokens.admin }), 204);
  await rx.close();
});

D('a receiver that fails gets the same delivery again after 5 s, then 1 min (manual clock)', async ({ t, w, ledgerId }) => {
  const clock = t.clock as ManualClock;
  const rx = await receiver((_r, res) => {
    res.statusCode = rx.got.length <= 2 ? 503 : 204;
    res.end();
  });
  const h = await createHook(t, w, { url: rx.url, events: ['contact.job_changed'] });
  await jobChange(t, w, ledgerId);
  const first = await until(t, 'the first attempt', async () => (await deliveries(t, w, h.id)).find((x) => x.attempts === 1));
  assert.equal([first.status, first.responseStatus, first.error], ['pending', 503, 'answered 503']);
  assert.is(Date.parse(first.nextAttemptAt) - Date.parse(first.lastAttemptAt), 5_000);
  const hook = await webhook(t, w, h.id);
  assert.ok(hook.failingSince, 'the webhook is failing');

  clock.advance(4_999);
  t.rt.webhooks.kick();
  assert.not.ok(t.rt.webhooks.repo.listDueWebhooks(clock.now()).some((x) => x.id === h.id), 'not due before 5 s');
  clock.advance(1);
  const second = await until(t, 'the second attempt', async () => (await deliveries(t, w, h.id)).find((x) => x.attempts === 2));
  assert.equal([second.status, second.responseStatus], ['pending', 503]);
  assert.is(Date.parse(second.nextAttemptAt) - Date.parse(second.lastAttemptAt), 60_000);
  clock.advance(60_000);
  const third = await until(t, 'the delivery', async () => (await deliveries(t, w, h.id)).find((x) => x.status === 'delivered'));
  assert.equal([third.attempts, third.responseStatus, third.error, third.nextAttemptAt], [3, 204, null, null]);
  assert.equal(third.attemptLog.map((a: any) => a.responseStatus), [503, 503, 204]);
  assert.is(rx.got.length, 3);
  assert.is(new Set(rx.got.map((r) => r.headers['x-ledger-delivery'])).size, 1, 'every attempt carries the same delivery id');
  assert.is(new Set(rx.got.map((r) => r.body)).size, 1, 'and the same body');
  assert.ok(rx.got.every((r) => signatureValid(h.secret, r.headers['x-ledger-signature'], r.body)));
  const healthy = await webhook(t, w, h.id);
  assert.is(healthy.failingSince, null, 'a success ends the failing streak');
  const metrics = (await t.call('GET', '/metrics', { token: (await signInRoot(t)).accessToken })).text;
  const counted = (outcome: string) => Number(new RegExp(`^contact_ledger_webhook_deliveries_total\\{outcome="${outcome}"\\} (\\d+)`, 'm').exec(metrics)?.[1] ?? 0);
  assert.ok(counted('retry') >= 2 && counted('delivered') >= 1, 'attempts are counted in /metrics');
  expectStatus(await t.call('DELETE', hooks(w, `/${h.id}`), { token: w.tokens.admin }), 204);
  await rx.close();
});

D('a webhook whose URL or token is mended gets its retries at once, not hours later on their schedule; a retry made since keeps its own', async ({ t, w, ledgerId }) => {
  const clock = t.clock as ManualClock;
  const broken = await receiver((_r, res) => {
    res.statusCode = 500;
    res.end();
  });
  let tokenOk = 'right-token';
  const fixed = await receiver((r, res) => {
    res.statusCode = r.headers['x-ledger-token'] === tokenOk ? 204 : 401;
    res.end();
  });
  const h = await createHook(t, w, { url: broken.url, events: ['contact.job_changed'], token: 'wrong-token' });
  await jobChange(t, w, ledgerId);
  await until(t, 'the first attempt', async () => (await deliveries(t, w, h.id)).find((x) => x.attempts === 1));
  clock.advance(5_000);
  const second = await until(t, 'the second attempt', async () => (await deliveries(t, w, h.id)).find((x) => x.attempts === 2));
  assert.is(Date.parse(second.nextAttemptAt) - Date.parse(second.lastAttemptAt), 60_000, 'the next retry in a minute');

  // the URL mended, the token still wrong: the retry goes at once (the clock stands still), and fails
  expectStatus(await t.call('PATCH', hooks(w, `/${h.id}`), { token: w.tokens.admin, body: { url: fixed.url } }), 200);
  const third = await until(t, 'the retry brought forward', async () => (await deliveries(t, w, h.id)).find((x) => x.attempts === 3));
  assert.equal([third.status, third.responseStatus], ['pending', 401]);
  assert.is(fixed.got.length, 1);
  // the token mended: the retry scheduled by that attempt goes at once too, and is delivered
  expectStatus(await t.call('PATCH', hooks(w, `/${h.id}`), { token: w.tokens.admin, body: { token: tokenOk } }), 200);
  const done = await until(t, 'the delivery', async () => (await deliveries(t, w, h.id)).find((x) => x.status === 'delivered'));
  assert.equal([done.id, done.attempts], [second.id, 4]);
  assert.is(broken.got.length, 2);
  await until(t, 'both jobs completed', () => t.rt.db.raw.prepare("SELECT count(*) FROM jobs WHERE kind = 'webhook.retries_forward' AND status = 'completed' AND lane = 'express'").pluck().get() === 2);
  // a change that mends nothing (the events) moves nothing
  expectStatus(await t.call('PATCH', hooks(w, `/${h.id}`), { token: w.tokens.admin, body: { events: ['contact.job_changed', 'contact.info_changed'] } }), 200);
  assert.is(t.rt.db.raw.prepare("SELECT count(*) FROM jobs WHERE kind = 'webhook.retries_forward'").pluck().get(), 2);

  // the walk: a seek in the due index from where it stopped, no sort; a delivery attempted since the change keeps its schedule
  const [atPlan, afterPlan] = t.rt.webhooks.repo.explainPendingWalk();
  assert.ok(atPlan!.some((p) => /SEARCH webhook_deliveries USING INDEX webhook_deliveries_due \(webhook_id=\? AND next_at=\? AND rowid>\?\)/.test(p)), atPlan!.join(' | '));
  assert.ok(afterPlan!.some((p) => /SEARCH webhook_deliveries USING INDEX webhook_deliveries_due \(webhook_id=\? AND next_at>\?\)/.test(p)), afterPlan!.join(' | '));
  for (const plan of [atPlan!, afterPlan!]) assert.not.ok(plan.some((p) => /TEMP B-TREE/.test(p)), plan.join(' | '));
  const held = await createHook(t, w, { url: fixed.url, events: ['contact.job_changed'], enabled: false }); // its deliveries are not sent
  const at = clock.now();
  const put = t.rt.db.raw.prepare(
    `INSERT INTO webhook_deliveries (id, webhook_id, event_id, type, payload, status, attempts, max_attempts, next_at, last_attempt_at, created_at)
     VALUES (?, ?, ?, 'contact.job_changed', '{}', 'pending', 1, 7, ?, ?, ?)`,
  );
  put.run('dlv_before', held.id, 'evt_1', at + 60_000, at - 1, at - 1);
  put.run('dlv_since', held.id, 'evt_2', at + 60_000, at + 1, at - 1);
  put.run('dlv_same_ms', held.id, 'evt_4', at + 60_000, at, at - 1); // against the old URL or the new: brought forward
  put.run('dlv_due', held.id, 'evt_3', at - 5, at - 10, at - 10);
  const walk = t.rt.webhooks.repo.retriesForward(held.id, at);
  assert.is(walk.step(2), 2);
  assert.is(walk.step(2), 1, 'the third of one due time: the walk goes on within a due time');
  assert.is(walk.step(2), 0, 'done: what is due already is not walked');
  assert.is(walk.moved(), 2);
  assert.equal(t.rt.db.raw.prepare("SELECT id, next_at - ? AS due_in FROM webhook_deliveries WHERE webhook_id = ? ORDER BY id").all(at, held.id), [
    { id: 'dlv_before', due_in: 0 },
    { id: 'dlv_due', due_in: -5 },
    { id: 'dlv_same_ms', due_in: 0 },
    { id: 'dlv_since', due_in: 60_000 },
  ]);
  expectStatus(await t.call('DELETE', hooks(w, `/${held.id}`), { token: w.tokens.admin }), 204);
  expectStatus(await t.call('DELETE', hooks(w, `/${h.id}`), { token: w.tokens.admin }), 204);
  await broken.close();
  await fixed.close();
});

D('an attempt in flight when the webhook is mended, that then fails, is retried at once, not on the schedule (a tester\'s case: a hanging receiver)', async ({ t, w, ledgerId }) => {
  const clock = t.clock as ManualClock;
  let release: (() => void) | undefined;
  const hanging = await receiver((_r, res) => {
    release = () => {
      res.statusCode = 500;
      res.end();
    };
  });
  const fixed = await receiver();
  const h = await createHook(t, w, { url: hanging.url, events: ['contact.job_changed'] });
  await jobChange(t, w, ledgerId);
  await until(t, 'the attempt in flight', () => release !== undefined);
  expectStatus(await t.call('PATCH', hooks(w, `/${h.id}`), { token: w.tokens.admin, body: { url: fixed.url } }), 200);
  release!();
  const done = await until(t, 'the retry at the mended URL', async () => (await deliveries(t, w, h.id)).find((x) => x.status === 'delivered'));
  assert.equal([done.attempts, done.attemptLog.map((a: any) => a.responseStatus)], [2, [500, 200]]);
  assert.is(fixed.got.length, 1, 'the clock stood still: the retry was not on its 5 s step');
  expectStatus(await t.call('DELETE', hooks(w, `/${h.id}`), { token: w.tokens.admin }), 204);
  await hanging.close();
  await fixed.close();
});

D('a pending delivery about a contact deleted since, or a contact of a ledger deleted since, is dropped when it comes due, never sent (an erasure request)', async ({ t, w }) => {
  const clock = t.clock as ManualClock;
  const rx = await receiver((_r, res) => {
    res.statusCode = 503;
    res.end();
  });
  const kept = await createLedger(t, w.tokens.editor, w.orgId, 'drop-kept');
  const doomed = await createLedger(t, w.tokens.editor, w.orgId, 'drop-doomed');
  const h = await createHook(t, w, { url: rx.url, events: ['contact.job_changed'], ledgerIds: [kept, doomed] });
  const [erased, other] = await jobChanges(t, w, kept, 2);
  await jobChange(t, w, doomed);
  await until(t, 'the first attempts', async () => (await deliveries(t, w, h.id)).filter((x) => x.attempts === 1).length === 3);
  const sent = rx.got.length;
  const logs = t.logs.length;
  expectStatus(await t.call('DELETE', `${ledgerPath(w.orgId, kept)}/contacts/${erased}`, { token: w.tokens.editor }), 204);
  expectStatus(await t.call('DELETE', ledgerPath(w.orgId, doomed), { token: w.tokens.admin }), 204);
  clock.advance(5_000);
  const left = await until(t, 'the retries', async () => {
    const all = await deliveries(t, w, h.id);
    return all.length === 1 && all[0].attempts === 2 ? all : undefined;
  });
  assert.is(JSON.parse(rx.got.at(-1)!.body).data.contact.id, other, 'the contact still there is retried');
  assert.is(rx.got.length, sent + 1, 'nothing about the deleted contact or ledger went out');
  const dropped = t.logs.slice(logs).filter((l) => l.includes('"msg":"deliveries about deleted contacts or ledgers dropped, not sent"') && l.includes(h.id));
  assert.is(dropped.reduce((n, l) => n + JSON.parse(l).webhooks[h.id], 0), 2, dropped.join('\n'));
  const metrics = (await t.call('GET', '/metrics', { token: (await signInRoot(t)).accessToken })).text;
  assert.match(metrics, /^contact_ledger_webhook_deliveries_total\{outcome="dropped"\} [1-9]/m);

  // one that would not come due for long (held by a disabled webhook; a retry hours away) goes
  // with the nightly sweep, not kept quoting the erased person (a tester's case)
  expectStatus(await t.call('PATCH', hooks(w, `/${h.id}`), { token: w.tokens.admin, body: { enabled: false } }), 200);
  expectStatus(await t.call('DELETE', `${ledgerPath(w.orgId, kept)}/contacts/${other}`, { token: w.tokens.editor }), 204);
  assert.equal((await deliveries(t, w, h.id)).map((x) => x.held), [true], 'held, with the erased contact in its payload');
  assert.is(await t.rt.webhooks.sweepPending({ stopping: false }), 1);
  assert.equal(await deliveries(t, w, h.id), [], 'gone before it came due');
  assert.ok(t.logs.some((l) => l.includes('"msg":"pending deliveries about deleted contacts or ledgers dropped, not sent"')));
  assert.is(await t.rt.webhooks.sweepPending({ stopping: false }), 0, 'the others stay');
  expectStatus(await t.call('DELETE', hooks(w, `/${h.id}`), { token: w.tokens.admin }), 204);
  await rx.close();
});

D('a hanging receiver times out, holds at most 2 connections, and never holds up another webhook', async ({ t, w, ledgerId }) => {
  const stuck = await receiver(hang);
  const fine = await receiver();
  const slow = await createHook(t, w, { url: stuck.url, events: ['contact.job_changed'] });
  const fast = await createHook(t, w, { url: fine.url, events: ['contact.job_changed'] });
  await jobChanges(t, w, ledgerId, 3);
  await until(t, 'the healthy receiver', () => fine.got.length === 3);
  await until(t, 'its deliveries recorded', async () => (await deliveries(t, w, fast.id)).filter((x) => x.status === 'delivered').length === 3);
  assert.is(stuck.open(), 2, 'the hanging receiver holds two requests (the per-webhook limit), unanswered');
  assert.is(stuck.got.length, 2, 'the third waits for a free slot of its webhook');
  assert.ok((await deliveries(t, w, slow.id)).every((x) => x.attempts === 0), 'its attempts are still in flight');
  const timedOut = await until(t, 'the deadline', async () => (await deliveries(t, w, slow.id)).find((x) => x.attempts === 1));
  assert.equal([timedOut.status, timedOut.responseStatus, timedOut.error], ['pending', null, `no answer within ${TIMEOUT_MS / 1000} s`]);
  assert.is(Date.parse(timedOut.nextAttemptAt) - Date.parse(timedOut.lastAttemptAt), 5_000);
  for (const h of [slow, fast]) expectStatus(await t.call('DELETE', hooks(w, `/${h.id}`), { token: w.tokens.admin }), 204);
  await stuck.close();
  await fine.close();
});

D('a 2xx whose body never completes is a failed attempt at the deadline, retried on schedule, never delivered', async ({ t, w, ledgerId }) => {
  const clock = t.clock as ManualClock;
  const rx = await receiver((_r, res) => {
    res.writeHead(200, { 'content-length': '100' });
    res.write('x'); // 1 of the 100 bytes promised, then nothing
  });
  const h = await createHook(t, w, { url: rx.url, events: ['contact.job_changed'] });
  await jobChange(t, w, ledgerId);
  const first = await until(t, 'the first attempt', async () => (await deliveries(t, w, h.id)).find((x) => x.attempts === 1));
  assert.equal([first.status, first.responseStatus, first.deliveredAt], ['pending', 200, null], 'not delivered');
  assert.is(first.error, `answered 200, but the rest of the answer did not arrive within ${TIMEOUT_MS / 1000} s`);
  assert.is(Date.parse(first.nextAttemptAt) - Date.parse(first.lastAttemptAt), 5_000, 'retried after 5 s');
  const failing = await webhook(t, w, h.id);
  assert.equal([failing.lastSuccessAt, typeof failing.failingSince], [null, 'string'], 'the webhook is failing, not succeeding');
  clock.advance(5_000);
  const second = await until(t, 'the retry', async () => (await deliveries(t, w, h.id)).find((x) => x.attempts === 2));
  assert.equal([second.status, second.error], ['pending', first.error]);
  assert.is(rx.got.length, 2, 'the receiver got the same delivery twice');
  assert.is(new Set(rx.got.map((r) => r.headers['x-ledger-delivery'])).size, 1);
  expectStatus(await t.call('DELETE', hooks(w, `/${h.id}`), { token: w.tokens.admin }), 204);
  await rx.close();
});

D('deliveredAt and failedAt are when the attempt ended, lastAttemptAt when it began: a receiver that takes 6 s', async ({ t, w }) => {
  for (const status of [200, 500]) {
    const rx = await receiver((_r, res) => {
      (t.clock as ManualClock).advance(6_000); // the answer comes 6 s after the request
      res.writeHead(status);
      res.end();
    });
    const h = await createHook(t, w, { url: rx.url, events: ['import.completed'] });
    const ping = await t.call('POST', hooks(w, `/${h.id}/test`), { token: w.tokens.admin });
    expectStatus(ping, 202);
    const began = t.clock.now();
    const d = await until(t, 'the attempt', async () => {
      const x = (await t.call('GET', hooks(w, `/${h.id}/deliveries/${ping.body.id}`), { token: w.tokens.admin })).body;
      return x.attempts === 1 && x;
    });
    const ended = new Date(began + 6_000).toISOString();
    assert.equal([d.status, d.lastAttemptAt, d.deliveredAt, d.failedAt, d.attemptLog[0].at], status === 200 ? ['delivered', new Date(began).toISOString(), ended, null, new Date(began).toISOString()] : ['failed', new Date(began).toISOString(), null, ended, new Date(began).toISOString()]);
    expectStatus(await t.call('DELETE', hooks(w, `/${h.id}`), { token: w.tokens.admin }), 204);
    await rx.close();
  }
});

D('redirects are not followed: a 3xx is a failed attempt and the other host hears nothing', async ({ t, w }) => {
  const elsewhere = await receiver();
  const rx = await receiver((_r, res) => {
    res.writeHead(307, { location: elsewhere.url });
    res.end();
  });
  const h = await createHook(t, w, { url: rx.url, events: ['import.completed'] });
  const ping = await t.call('POST', hooks(w, `/${h.id}/test`), { token: w.tokens.admin });
  expectStatus(ping, 202);
  const d = await until(t, 'the attempt', async () => {
    const x = (await t.call('GET', hooks(w, `/${h.id}/deliveries/${ping.body.id}`), { token: w.tokens.admin })).body;
    return x.attempts === 1 && x;
  });
  assert.equal([d.status, d.responseStatus, d.error], ['failed', 307, 'answered 307; redirects are not followed']);
  assert.is(rx.got.length, 1);
  assert.is(elsewhere.got.length, 0, 'the redirect target was never called');
  expectStatus(await t.call('DELETE', hooks(w, `/${h.id}`), { token: w.tokens.admin }), 204);
  await rx.close();
  await elsewhere.close();
});

D('a 101 (Switching Protocols) answer is a failed attempt at once, and frees its slot: the attempts after it are made (a tester\'s receiver held them until a restart)', async ({ t, w }) => {
  const rx = await receiver((_r, res) => {
    // the status line of a protocol switch, and the connection kept open
    res.socket!.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
  });
  const h = await createHook(t, w, { url: rx.url, events: ['import.completed'] });
  const sent: string[] = [];
  // three pings one after another: more than the webhook's two slots, each taken and freed again
  for (let i = 0; i < 3; i++) {
    const ping = await t.call('POST', hooks(w, `/${h.id}/test`), { token: w.tokens.admin });
    expectStatus(ping, 202);
    sent.push(ping.body.id);
  }
  for (const id of sent) {
    const d = await until(t, `the attempt of ${id}`, async () => {
      const x = (await t.call('GET', hooks(w, `/${h.id}/deliveries/${id}`), { token: w.tokens.admin })).body;
      return x.attempts === 1 && x;
    }, TIMEOUT_MS * 3);
    assert.equal([d.status, d.responseStatus, d.error], ['failed', 101, 'answered 101 (switching protocols); a webhook must answer 2xx']);
  }
  assert.is(rx.got.length, 3, 'every ping reached the receiver');
  expectStatus(await t.call('DELETE', hooks(w, `/${h.id}`), { token: w.tokens.admin }), 204);
  await rx.close();
});

D('the test ping goes through the delivery path and says what happened', async ({ t, w }) => {
  const rx = await receiver();
  const h = await createHook(t, w, { url: rx.url, events: ['contact.info_changed'], enabled: false });
  const ping = await t.call('POST', hooks(w, `/${h.id}/test`), { token: w.tokens.admin });
  expectStatus(ping, 202);
  assert.match(ping.body.id, /^dlv_/);
  assert.equal([ping.body.type, ping.body.status, ping.body.attempts, ping.body.maxAttempts], ['ping', 'pending', 0, 1]);
  assert.is(ping.headers.get('location'), `http://ledger.test${hooks(w, `/${h.id}/deliveries/${ping.body.id}`)}`);
  const done = await until(t, 'the ping', async () => {
    const x = (await t.call('GET', hooks(w, `/${h.id}/deliveries/${ping.body.id}`), { token: w.tokens.admin })).body;
    return x.status !== 'pending' && x;
  });
  assert.equal([done.status, done.responseStatus, done.attempts], ['delivered', 200, 1], 'a ping is sent even while the webhook is disabled');
  const body = JSON.parse(rx.got[0]!.body);
  assert.equal([body.type, body.orgId, body.ledgerId, body.data.webhook.id], ['ping', w.orgId, null, h.id]);
  assert.ok(signatureValid(h.secret, rx.got[0]!.headers['x-ledger-signature'], rx.got[0]!.body));
  assert.equal(done.payload, body);
  // a ping to nobody fails once and is not retried
  await t.call('PATCH', hooks(w, `/${h.id}`), { token: w.tokens.admin, body: { url: 'http://127.0.0.1:9/closed' } });
  const dead = await t.call('POST', hooks(w, `/${h.id}/test`), { token: w.tokens.admin });
  const failed = await until(t, 'the failed ping', async () => {
    const x = (await t.call('GET', hooks(w, `/${h.id}/deliveries/${dead.body.id}`), { token: w.tokens.admin })).body;
    return x.status === 'failed' && x;
  });
  assert.equal([failed.attempts, failed.responseStatus], [1, null]);
  assert.match(failed.error, /connection refused by 127\.0\.0\.1:9/);
  const hook = await webhook(t, w, h.id);
  assert.is(hook.failingSince, null, 'pings do not count towards disabling');
  // the log is newest first, paged, and filtered by status
  const page1 = await t.call('GET', hooks(w, `/${h.id}/deliveries?limit=1`), { token: w.tokens.admin });
  assert.equal(page1.body.deliveries.map((x: any) => x.id), [dead.body.id]);
  const page2 = await t.call('GET', hooks(w, `/${h.id}/deliveries?limit=1&cursor=${page1.body.nextCursor}`), { token: w.tokens.admin });
  assert.equal(page2.body.deliveries.map((x: any) => x.id), [ping.body.id]);
  assert.is(page2.body.nextCursor, null);
  assert.equal((await deliveries(t, w, h.id, '?status=failed')).map((x) => x.id), [dead.body.id]);
  expectStatus(await t.call('GET', hooks(w, `/${h.id}/deliveries?limit=1&status=failed&cursor=${page1.body.nextCursor}`), { token: w.tokens.admin }), 400);
  expectStatus(await t.call('GET', hooks(w, `/${h.id}/deliveries/dlv_00000000000000000000000000`), { token: w.tokens.admin }), 404);
  expectStatus(await t.call('DELETE', hooks(w, `/${h.id}`), { token: w.tokens.admin }), 204);
  await rx.close();
});

D('a page of the delivery log is one seek, filtered by status too (migration 0023: a rare status walked every delivery of the webhook)', ({ t }) => {
  const plans = t.rt.webhooks.repo.explainDeliveries().map((p) => p.join(' | '));
  assert.is(plans.length, 4);
  for (const plan of plans) {
    assert.match(plan, /^SEARCH webhook_deliveries USING INDEX webhook_deliveries_by_(webhook|status) \(webhook_id=\?/, plan);
    assert.not.match(plan, /TEMP B-TREE/, plan);
  }
  for (const plan of plans.slice(2)) assert.match(plan, /INDEX webhook_deliveries_by_status \(webhook_id=\? AND status=\?/, plan);
});

D('a delivery is claimed by one worker at a time; a worker whose lease expired is fenced off (D4)', async ({ t, w }) => {
  const h = await createHook(t, w, { url: 'http://127.0.0.1:9/never', events: ['import.completed'], enabled: false });
  const ping = t.rt.db.tx(() => t.rt.webhooks.outbox.ping(t.rt.webhooks.repo.findWebhook(h.id)!));
  // two workers on two connections to the same file (the app's dispatcher leaves disabled webhooks alone but sends pings, so claim first)
  const mine = createWebhooksRepo(t.rt.db);
  const other = openDb(join(t.dataDir, 'contact-ledger.db'));
  const theirs = createWebhooksRepo(other);
  try {
    const now = t.clock.now();
    const c1 = t.rt.db.tx(() => mine.claimDelivery(ping, now, now + 10_000));
    assert.ok(c1, 'the first worker claims it');
    assert.is(other.tx(() => theirs.claimDelivery(ping, now, now + 10_000)), undefined, 'the second cannot while the lease holds');
    assert.equal(theirs.listDueWebhooks(now), [], 'nothing is due while it is held');
    const later = now + 10_001; // the first worker "died"
    const c2 = other.tx(() => theirs.claimDelivery(ping, later, later + 10_000));
    assert.ok(c2 && c2.token > c1!.token, 'after expiry another worker claims it with a newer token');
    const attempt = { at: later, status: 200, error: null, ms: 1 };
    assert.is(t.rt.db.tx(() => mine.recordDelivered(ping, c1!.token, attempt, attempt.at)), false, 'the stale worker records nothing');
    assert.is(other.tx(() => theirs.recordDelivered(ping, c2!.token, attempt, attempt.at)), true);
    const x = (await t.call('GET', hooks(w, `/${h.id}/deliveries/${ping}`), { token: w.tokens.admin })).body;
    assert.equal([x.status, x.attempts], ['delivered', 1]);
  } finally {
    other.close();
  }
  expectStatus(await t.call('DELETE', hooks(w, `/${h.id}`), { token: w.tokens.admin }), 204);
});

D.run();

// ── fairness between organizations ───────────────────────────────────────

const O = suite<Ctx>('webhook deliveries of one organization cannot hold up another');
// An application per test, so that one test's hanging attempts never take the slots of the next.
O.before.each(async (ctx) => {
  // a deadline far beyond the test, so the hanging attempts stay in flight while the other deliveries are made
  ctx.t = await startApp({ config: { webhookTimeoutMs: 120_000 } });
  ctx.w = await seedWorld(ctx.t);
});
O.after.each(async (ctx) => {
  await closeReceivers();
  await ctx.t.close(); // interrupts the hanging attempts
});

O('ten hanging webhooks of one organization take at most its share, less the slots kept for its webhooks in good standing; its healthy webhook and another organization are delivered meanwhile', async ({ t, w }) => {
  const stuck = await receiver(hang);
  const fine = await receiver();
  // A's webhook in good standing: it has delivered
  const aFine = await receiver();
  const good = (await createHook(t, w, { url: aFine.url, events: ['import.completed'] })).id;
  const aLedger = await createLedger(t, w.tokens.editor, w.orgId, 'A hanging');
  await addContacts(t, w.tokens.editor, w.orgId, aLedger, [{ name: 'Ann First', company: 'Acme', linkedin: 'linkedin.com/in/ann-first' }]);
  await until(t, "A's healthy webhook's first delivery", async () => (await deliveries(t, w, good))[0]?.status === 'delivered');
  const slow: string[] = [];
  for (let i = 0; i < 10; i++) slow.push((await createHook(t, w, { url: `${stuck.url}?n=${i}`, events: ['import.completed'] })).id);
  await addContacts(t, w.tokens.editor, w.orgId, aLedger, [{ name: 'Ann Hang', company: 'Acme', linkedin: 'linkedin.com/in/ann-hang' }]); // 11 deliveries, one per webhook
  await until(t, "organization A's share for webhooks not in good standing", () => stuck.open() === 6);
  // the two slots A keeps for its healthy webhooks: its delivery goes out at once, not after a hanging attempt's deadline
  await until(t, "A's healthy webhook's delivery", () => aFine.got.length === 2, PROMPTLY_MS);

  const bHooks = `${LEDGER}/orgs/${w.otherOrgId}/webhooks`;
  const created = await t.call('POST', bHooks, { token: w.tokens.otherAdmin, body: { url: fine.url, events: ['import.completed'] } });
  expectStatus(created, 201, 'create B webhook');
  const bLedger = await createLedger(t, w.tokens.otherAdmin, w.otherOrgId, 'B healthy');
  await addContacts(t, w.tokens.otherAdmin, w.otherOrgId, bLedger, [{ name: 'Bea Fine', company: 'Globex', linkedin: 'linkedin.com/in/bea-fine' }]);
  await until(t, "organization B's delivery", () => fine.got.length === 1);
  assert.is(JSON.parse(fine.got[0]!.body).orgId, w.otherOrgId);
  const bLog = await until(t, 'its outcome recorded', async () => {
    const r = await t.call('GET', `${bHooks}/${created.body.id}/deliveries`, { token: w.tokens.otherAdmin });
    return r.body.deliveries[0]?.status === 'delivered' && r.body.deliveries;
  });
  assert.is(bLog.length, 1);

  // ...while every hanging attempt is still in flight (none reached its deadline), and A never had more than its share
  assert.is(stuck.open(), 6, 'A still has 6 unanswered requests');
  assert.is(stuck.got.length, 6, 'the other four of A wait for a slot of A, though slots are free overall');
  for (const id of slow) assert.ok((await deliveries(t, w, id)).every((x) => x.attempts === 0), 'no hanging attempt has ended');
});

O('webhooks of four organizations calling one hanging host hold at most 16 connections to it; other hosts are not held up', async ({ t, w }) => {
  // Two receivers on two ports of 127.0.0.1: one host name to the dispatcher, but two origins to the
  // sender, whose socket pools (16 per origin) would not stop an 18th request on their own.
  const stuck = [await receiver(hang), await receiver(hang)];
  const open = () => stuck[0]!.open() + stuck[1]!.open();
  const orgs = [w.orgId, w.otherOrgId, await newOrg(t, w.root, 'Org C'), await newOrg(t, w.root, 'Org D')];
  const hanging: { orgId: string; id: string }[] = [];
  for (const orgId of orgs) {
    // 5 each: under each organization's share for webhooks not yet in good standing (6 of its 8)
    for (let i = 0; i < 5; i++) hanging.push({ orgId, id: await hookIn(t, w.root, orgId, `${stuck[i % 2]!.url}?n=${i}`) });
  }
  for (const h of hanging) await ping(t, w.root, h.orgId, h.id); // 20 attempts due at the hanging host
  await until(t, 'the per-host limit of attempts in flight', () => open() >= 16);

  // a webhook on another host, of an organization with hanging attempts, is delivered meanwhile
  const elsewhere = await receiver(ok, '127.0.0.2');
  const other = await hookIn(t, w.root, w.orgId, elsewhere.url);
  const started = Date.now();
  const sent = await ping(t, w.root, w.orgId, other);
  await until(t, 'the delivery to another host', async () => (await t.call('GET', orgHooks(w.orgId, `/${other}/deliveries/${sent}`), { token: w.root })).body.status === 'delivered');
  assert.ok(Date.now() - started < 2_000, `delivered in ${Date.now() - started} ms, while the hanging attempts have a deadline of 120 s`);

  // ...while the hanging host never had more than 16 requests: the other four wait, unclaimed, though slots are free overall
  assert.is(open(), 16, 'the hanging host holds 16 unanswered requests');
  assert.is(stuck[0]!.got.length + stuck[1]!.got.length, 16, 'no 17th request reached it');
  assert.is(t.rt.webhooks.dispatcher.inFlight(), 16, 'and none is waiting in the sender for a socket either');
  for (const h of hanging) {
    const [d] = (await t.call('GET', orgHooks(h.orgId, `/${h.id}/deliveries`), { token: w.root })).body.deliveries;
    assert.equal([d.status, d.attempts], ['pending', 0], 'no hanging attempt has ended');
  }
});

/**
 * `orgs` × `perOrg` webhooks on hanging receivers at `hosts` loopback addresses (127.0.0.2 …), each
 * pinged once: as many attempts per organization and per host as their limits allow. Their replies
 * are held in `held` with the URL called (to cut one), and `open` counts the requests held unanswered.
 */
async function hangingFleet(t: TestApp, w: World, orgs: number, hosts: number, perOrg = 8) {
  const held: { url: string; res: ServerResponse }[] = [];
  const stuck = await Promise.all(Array.from({ length: hosts }, (_, i) => receiver((r, res) => void held.push({ url: `http://127.0.0.${i + 2}:${r.headers.host?.split(':')[1]}${r.path}`, res }), `127.0.0.${i + 2}`)));
  const orgIds = [w.orgId, w.otherOrgId];
  while (orgIds.length < orgs) orgIds.push(await newOrg(t, w.root, `Org hanging ${orgIds.length}`));
  const hooks: { orgId: string; id: string; url: string }[] = [];
  for (const [i, orgId] of orgIds.slice(0, orgs).entries()) {
    for (let j = 0; j < perOrg; j++) {
      const url = `${stuck[(i + j) % hosts]!.url}?org=${i}&n=${j}`;
      hooks.push({ orgId, url, id: await hookIn(t, w.root, orgId, url) });
    }
  }
  for (const h of hooks) await ping(t, w.root, h.orgId, h.id); // pings: these webhooks never succeed, and the pings do not retry
  return { hooks, held, open: () => stuck.reduce((n, s) => n + s.open(), 0), got: () => stuck.reduce((n, s) => n + s.got.length, 0) };
}

/** An organization with a ledger; `event()` imports one contact there: an `import.completed` for each of its webhooks. */
async function eventfulOrg(t: TestApp, w: World, name: string) {
  const orgId = await newOrg(t, w.root, name);
  const ledgerId = await createLedger(t, w.root, orgId, name);
  let n = 0;
  const event = () => addContacts(t, w.root, orgId, ledgerId, [{ name: `Pat Event ${++n}`, company: 'Acme', linkedin: `linkedin.com/in/${orgId}-${n}` }]);
  const hook = async (id: string) => (await t.call('GET', orgHooks(orgId, `/${id}`), { token: w.root })).body;
  const log = async (id: string): Promise<any[]> => (await t.call('GET', orgHooks(orgId, `/${id}/deliveries`), { token: w.root })).body.deliveries;
  return { orgId, event, hook, log };
}

/** Well below the hanging attempts' deadline (120 s): what "promptly" means below. */
const PROMPTLY_MS = 2_000;

O('hanging receivers of eight organizations take at most 48 slots: 16 are kept for webhooks whose last delivery succeeded', async ({ t, w }) => {
  const healthy = await eventfulOrg(t, w, 'Org healthy');
  const fine = await receiver();
  const good = await hookIn(t, w.root, healthy.orgId, fine.url);
  await healthy.event();
  await until(t, 'its first delivery', async () => (await healthy.hook(good)).lastSuccessAt); // in good standing from now on

  // 8 organizations × 8 webhooks on 4 hosts × 16: 64 attempts due, 6 of each organization's in flight at most (2 of its 8 are kept for its healthy webhooks)
  const fleet = await hangingFleet(t, w, 8, 4);
  await until(t, 'the hanging attempts', () => fleet.open() >= 48);

  const started = Date.now();
  await healthy.event();
  await until(t, 'the healthy delivery', () => fine.got.length === 2, PROMPTLY_MS);
  await until(t, 'its outcome recorded', () => t.rt.webhooks.dispatcher.inFlight() === 48);
  assert.ok(Date.now() - started < PROMPTLY_MS, `delivered ${Date.now() - started} ms after its event`);
  assert.is(fleet.open(), 48, 'the hanging receivers hold 48 requests');
  assert.is(fleet.got(), 48, 'the other 16 wait, though 16 slots are free, and no hanging attempt has ended');
});

O('receivers that answer 2xx but slowly, in eight organizations, take only the 48 shared slots once known slow: a fast webhook of another organization is delivered at once', async ({ t, w }) => {
  const healthy = await eventfulOrg(t, w, 'Org fast');
  const fine = await receiver();
  const good = await hookIn(t, w.root, healthy.orgId, fine.url);
  await healthy.event();
  await until(t, 'its first delivery', async () => (await healthy.hook(good)).lastSuccessAt);

  let holdMs = 0;
  const answer: Reply = (_r, res) => void setTimeout(() => ((res.statusCode = 204), res.end()), holdMs).unref(); // (unref: the held ones must not keep the test process alive)
  const hosts = await Promise.all([0, 1, 2, 3].map((i) => receiver(answer, `127.0.0.${i + 2}`)));
  const got = () => hosts.reduce((n, r) => n + r.got.length, 0);
  const open = () => hosts.reduce((n, r) => n + r.open(), 0);
  const orgs: Awaited<ReturnType<typeof eventfulOrg>>[] = [];
  for (let i = 0; i < 8; i++) {
    const org = await eventfulOrg(t, w, `Org slow ${i}`);
    for (let j = 0; j < 8; j++) await hookIn(t, w.root, org.orgId, `${hosts[(i + j) % 4]!.url}?org=${i}&n=${j}`);
    orgs.push(org);
  }
  const round = async (what: string, total: number) => {
    for (const org of orgs) await org.event();
    await until(t, what, () => got() === total && t.rt.webhooks.dispatcher.inFlight() === 0, 30_000);
  };
  await round('quick deliveries: every webhook in good standing', 64);
  holdMs = 1_500; // over SLOW_ATTEMPT_MS
  await round('slow deliveries, still successful', 128);
  holdMs = 120_000;
  for (const org of orgs) await org.event();
  await until(t, 'the slow attempts', () => open() === 48);
  const started = Date.now();
  await healthy.event();
  await until(t, 'the fast delivery', () => fine.got.length === 2, PROMPTLY_MS);
  assert.ok(Date.now() - started < PROMPTLY_MS, `delivered ${Date.now() - started} ms after its event`);
  assert.is(open(), 48, 'the slow webhooks hold the shared slots only, though they are in good standing');
});

O('a failing webhook gets only the shared slots; once it succeeds again it has the reserved ones too', async ({ t, w }) => {
  const clock = t.clock as ManualClock;
  const org = await eventfulOrg(t, w, 'Org mixed');
  const fine = await receiver();
  let down = true;
  const flaky = await receiver((_r, res) => {
    res.statusCode = down ? 503 : 204;
    res.end();
  });
  const good = await hookIn(t, w.root, org.orgId, fine.url);
  const bad = await hookIn(t, w.root, org.orgId, flaky.url);
  await org.event();
  await until(t, 'the first attempts', async () => (await org.hook(good)).lastSuccessAt && (await org.hook(bad)).failingSince);

  // 8 organizations × 6 webhooks (each organization's share for webhooks not in good standing) on 4 hosts: the 48 shared slots, all taken
  const fleet = await hangingFleet(t, w, 8, 4, 6);
  await until(t, 'the hanging attempts', () => fleet.open() === 48);

  // an event for both: the webhook in good standing gets it at once, the failing one waits for a shared slot
  down = false;
  await org.event();
  await until(t, 'the delivery of the webhook in good standing', () => fine.got.length === 2 && t.rt.webhooks.dispatcher.inFlight() === 48, PROMPTLY_MS);
  assert.is(flaky.got.length, 1, 'the failing webhook was passed over');

  // one hanging attempt ends (its connection is cut): its shared slot goes to the failing webhook, which succeeds
  const cut = fleet.held[0]!;
  cut.res.destroy();
  const recovered = await until(t, 'the recovery', async () => (await org.log(bad)).find((d) => d.status === 'delivered'));
  assert.is(recovered.attempts, 1, "the new event's delivery (the first one's retry is not due yet)");
  assert.equal([(await org.hook(bad)).failingSince, flaky.got.length], [null, 2]);

  // the shared slots full again (the cut webhook pinged anew); the recovered webhook now has the reserved ones:
  // its first delivery's retry and a new event go out at once, two at a time like any webhook's
  const again = fleet.hooks.find((h) => h.url === cut.url)!;
  await ping(t, w.root, again.orgId, again.id);
  await until(t, 'the hanging attempts', () => fleet.open() === 48);
  clock.advance(5_000);
  await org.event();
  await until(t, 'the retry and the new event', () => flaky.got.length === 4 && fine.got.length === 3 && t.rt.webhooks.dispatcher.inFlight() === 48, PROMPTLY_MS);
  assert.ok((await org.log(bad)).every((d) => d.status === 'delivered'), 'every delivery of the recovered webhook is delivered');
  assert.is(fleet.open(), 48, 'while the shared slots stay full');
});

O.run();

const B = suite<Ctx>('webhook deliveries in bulk');
B.before(async (ctx) => {
  ctx.t = await startApp({ config: { webhookTimeoutMs: TIMEOUT_MS } });
  ctx.w = await seedWorld(ctx.t);
});
B.after(async (ctx) => {
  await closeReceivers();
  await ctx.t.close();
});

B('a burst of deliveries commits its claims and outcomes together, not one transaction each (each is a synchronous commit on the event loop)', async ({ t, w }) => {
  const rx = await receiver();
  const ledgerId = await createLedger(t, w.tokens.editor, w.orgId, 'bulk deliveries');
  for (let i = 0; i < 8; i++) await createHook(t, w, { url: `${rx.url}?n=${i}`, events: ['contact.job_changed'], ledgerIds: [ledgerId] });
  let transactions = 0;
  const noted = t.rt.db.onWrite;
  t.rt.db.onWrite = (bulk, failure) => {
    if (!bulk) transactions++;
    noted?.(bulk, failure);
  };
  try {
    await jobChanges(t, w, ledgerId, 30); // 240 deliveries
    await until(t, 'every delivery recorded', () => t.rt.db.raw.prepare("SELECT count(*) FROM webhook_deliveries WHERE status = 'delivered'").pluck().get() === 240, 60_000);
  } finally {
    t.rt.db.onWrite = noted;
  }
  assert.is(rx.got.length, 240);
  // one claim and one outcome each were 480 (with the requests' and the feed's own writes on top)
  assert.ok(transactions < 240, `${transactions} transactions for 240 deliveries`);
});

B('an outcome that cannot be written fails alone: the others of its batch are recorded', async ({ t, w }) => {
  // the receiver answers once all four deliveries have arrived, so that their outcomes share a batch
  const held: (() => void)[] = [];
  const rx = await receiver((_r, res) => {
    held.push(() => res.end('ok'));
    if (held.length === 4) for (const answer of held.splice(0)) answer();
  });
  const ledgerId = await createLedger(t, w.tokens.editor, w.orgId, 'one refused outcome');
  const hookIds: string[] = [];
  for (let i = 0; i < 4; i++) hookIds.push((await createHook(t, w, { url: `${rx.url}?n=${i}`, events: ['contact.job_changed'], ledgerIds: [ledgerId] })).id);
  // a real storage failure for one row: the database refuses to record the first webhook's outcome
  t.rt.db.raw.exec(`CREATE TEMP TRIGGER refuse_one BEFORE UPDATE OF status ON main.webhook_deliveries
    WHEN NEW.webhook_id = '${hookIds[0]}' AND NEW.status = 'delivered' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`);
  let batches = 0;
  const noted = t.rt.db.onWrite;
  try {
    await jobChanges(t, w, ledgerId, 1);
    const statuses = () =>
      t.rt.db.raw.prepare('SELECT webhook_id, status FROM webhook_deliveries WHERE webhook_id IN (?, ?, ?, ?) ORDER BY webhook_id').all(...hookIds) as { webhook_id: string; status: string }[];
    t.rt.db.onWrite = (bulk, failure) => {
      if (!bulk && failure === undefined) batches++;
      noted?.(bulk, failure);
    };
    const rows = await until(t, 'the other outcomes recorded', () => {
      const r = statuses();
      return r.filter((x) => x.status === 'delivered').length === 3 && r;
    });
    assert.is(rx.got.length, 4);
    assert.equal(rows.find((x) => x.webhook_id === hookIds[0])?.status, 'pending', 'the refused outcome is not recorded: its lease will expire and it is sent again');
  } finally {
    t.rt.db.onWrite = noted;
    t.rt.db.raw.exec('DROP TRIGGER refuse_one');
  }
  assert.is(batches, 0, 'no batch transaction failed');
});

B.run();

// ── persistent failure ───────────────────────────────────────────────────

const F = suite<Ctx>('disabling after persistent failure');
F.before(async (ctx) => {
  ctx.t = await startApp();
  ctx.w = await seedWorld(ctx.t);
});
F.after(async (ctx) => {
  await closeReceivers();
  await ctx.t.close();
});

/**
 * A webhook for job changes whose receiver answers `status()`, in a ledger of its own, once one job
 * change's delivery made its first attempt. `oldest` is that first delivery as it is now.
 */
async function hookAfterFirstAttempt(t: TestApp, w: World, name: string, status: () => number) {
  const rx = await receiver((_r, res) => {
    res.statusCode = status();
    res.end();
  });
  const ledgerId = await createLedger(t, w.tokens.editor, w.orgId, name);
  const h = await createHook(t, w, { url: rx.url, events: ['contact.job_changed'] });
  await jobChange(t, w, ledgerId);
  const oldest = () => deliveries(t, w, h.id).then((all) => all[all.length - 1]);
  await until(t, 'the first attempt', async () => (await oldest())?.attempts === 1);
  return { rx, ledgerId, h, oldest };
}

/** Moves the clock through the retry schedule of `delivery` (the last wait `lateLast` longer) until it has failed for good. */
async function failEveryRetry(t: TestApp, w: World, delivery: () => Promise<any>, lateLast = 0): Promise<void> {
  for (const [i, delay] of RETRY_DELAYS_MS.entries()) {
    (t.clock as ManualClock).advance(delay + (i === RETRY_DELAYS_MS.length - 1 ? lateLast : 0));
    await freshTokens(t, w); // the old access tokens expired with the jump
    await until(t, `attempt ${i + 2}`, async () => (await delivery())?.attempts === i + 2);
  }
  assert.is((await delivery()).status, 'failed');
}

F('one failure after a quiet spell does not disable a webhook: a failure streak ends after a day without failed attempts', async ({ t, w }) => {
  const clock = t.clock as ManualClock;
  const { rx, h } = await hookAfterFirstAttempt(t, w, 'quiet', () => 502);
  const first = (await webhook(t, w, h.id)).failingSince;
  clock.advance(4 * 86_400_000); // nothing attempted for four days, then the retry fails again
  await freshTokens(t, w);
  await until(t, 'the second attempt', async () => (await deliveries(t, w, h.id))[0]?.attempts === 2);
  const hook = await webhook(t, w, h.id);
  assert.is(hook.enabled, true);
  assert.is(hook.failingSince, new Date(clock.now()).toISOString(), 'a new streak');
  assert.ok(Date.parse(hook.failingSince) > Date.parse(first));
  assert.ok(await t.call('DELETE', hooks(w, `/${h.id}`), { token: w.tokens.admin }));
  await rx.close();
});

F('sparse events to a receiver that is down: a delivery that failed for good keeps the streak going over the quiet spell, and the webhook is disabled', async ({ t, w }) => {
  const clock = t.clock as ManualClock;
  const { rx, ledgerId, h, oldest: first } = await hookAfterFirstAttempt(t, w, 'sparse', () => 503);
  const since = (await webhook(t, w, h.id)).failingSince;
  await failEveryRetry(t, w, first); // every retry of the event fails: ~17 hours later its delivery has failed for good
  // four quiet days (longer than a streak's gap), then the next event fails too: its first attempt
  // keeps the streak going, and its retry 5 s later, failing as well, disables the webhook
  clock.advance(4 * 86_400_000);
  await freshTokens(t, w);
  await jobChange(t, w, ledgerId);
  const next = () => deliveries(t, w, h.id).then((all) => all[0]);
  await until(t, 'the next event\'s first attempt', async () => (await next())?.attempts === 1 && (await next()).id !== (await first()).id);
  const chance = await webhook(t, w, h.id);
  assert.equal([chance.enabled, chance.failingSince], [true, since], 'one more chance after the pause, in the same streak');
  clock.advance(RETRY_DELAYS_MS[0]);
  const hook = await until(t, 'disabled', async () => {
    const x = await webhook(t, w, h.id);
    return x.enabled === false && x;
  });
  assert.is(hook.failingSince, since, 'the streak began with the first failure');
  assert.match(hook.disabledReason, /^no successful delivery for 4.7 days \(failing since .+\); last error: answered 503$/);
  assert.ok(await t.call('DELETE', hooks(w, `/${h.id}`), { token: w.tokens.admin }));
  await rx.close();
});

F('a delivery whose last retry comes after a day without attempts (the server was down) starts a new streak: it failed for good only now', async ({ t, w }) => {
  const clock = t.clock as ManualClock;
  const { rx, h, oldest } = await hookAfterFirstAttempt(t, w, 'server down', () => 500);
  await failEveryRetry(t, w, oldest, 2 * 86_400_000); // the last retry two days late
  const hook = await webhook(t, w, h.id);
  assert.equal([hook.enabled, hook.failingSince], [true, new Date(clock.now()).toISOString()], 'a new streak, not one of 2.7 days');
  assert.ok(await t.call('DELETE', hooks(w, `/${h.id}`), { token: w.tokens.admin }));
  await rx.close();
});

F('failures for 3 days without a success: the webhook is disabled, says why, holds its deliveries until re-enabled', async ({ t, w }) => {
  const clock = t.clock as ManualClock;
  let healthy = false;
  const { rx, ledgerId, h } = await hookAfterFirstAttempt(t, w, 'failing', () => (healthy ? 200 : 500));
  const failing = await webhook(t, w, h.id);
  assert.equal([failing.enabled, failing.failingSince === null], [true, false]);

  // the retries keep failing, never a day apart: after 20, 40, 60 and 80 hours the webhook is disabled
  let off: any;
  for (let step = 1; step <= 4 && !off; step++) {
    clock.advance(20 * 3_600_000);
    await freshTokens(t, w); // the old access tokens expired with the jump
    await until(t, `attempt ${step + 1}`, async () => (await deliveries(t, w, h.id))[0]?.attempts === step + 1);
    const x = await webhook(t, w, h.id);
    if (!x.enabled) off = x;
  }
  assert.ok(off, 'disabled');
  const admin = w.tokens.admin;
  assert.match(off.disabledReason, /^no successful delivery for 3.3 days \(failing since .+\); last error: answered 500$/);
  assert.is(off.disabledAt, new Date(clock.now()).toISOString());
  const audit = await t.call('GET', `${ID}/orgs/${w.orgId}/audit?limit=20`, { token: admin });
  const entry = audit.body.events.find((e: any) => e.action === 'webhook.disabled');
  assert.ok(entry, 'the automatic disabling is audited');
  assert.is(entry.actor?.type ?? entry.actorType, 'system');

  // held: nothing due for it, and new changes write no deliveries for it
  const held = (await deliveries(t, w, h.id))[0];
  assert.equal([held.status, held.attempts, held.held], ['pending', 5, true], 'the API says it is held');
  // a ping is sent while disabled, so it is never held
  const ping = await t.call('POST', hooks(w, `/${h.id}/test`), { token: w.tokens.admin });
  assert.equal([ping.status, ping.body.status, ping.body.held], [202, 'pending', false]);
  await until(t, 'the ping tried', async () => (await t.call('GET', hooks(w, `/${h.id}/deliveries/${ping.body.id}`), { token: w.tokens.admin })).body.status === 'failed');
  clock.advance(3_600_000);
  assert.equal(t.rt.webhooks.repo.listDueWebhooks(clock.now()), [], 'a disabled webhook gets nothing sent');
  await freshTokens(t, w);
  await jobChange(t, w, ledgerId);
  assert.is((await deliveries(t, w, h.id)).filter((x) => x.type !== 'ping').length, 1, 'no outbox rows while disabled');
  const sent = rx.got.length;

  healthy = true;
  const on = await t.call('PATCH', hooks(w, `/${h.id}`), { token: admin, body: { enabled: true } });
  assert.equal([on.body.enabled, on.body.disabledReason, on.body.disabledAt, on.body.failingSince], [true, null, null, null]);
  // the held delivery's next attempt (after its fifth) was due 4 hours after it: enabled again, it goes at once
  const delivered = await until(t, 'the held delivery', async () => (await deliveries(t, w, h.id)).find((x) => x.status === 'delivered'));
  assert.equal([delivered.id, delivered.attempts, delivered.held], [held.id, 6, false]);
  assert.is(rx.got.length, sent + 1);

  // delivered and failed deliveries are kept 30 days; a backlog of them goes in sized chunks
  t.rt.db.raw
    .prepare(
      `WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 500)
       INSERT INTO webhook_deliveries (id, webhook_id, event_id, type, payload, status, max_attempts, next_at, created_at, finished_at)
       SELECT 'dlv_old' || n, ?, 'evt_old' || n, 'contact.job_changed', '{}', 'failed', 7, 0, 0, ? FROM s`,
    )
    .run(h.id, clock.now() - 1);
  clock.advance(30 * 86_400_000 + 1);
  const writes = t.rt.db.writes;
  assert.is(await t.rt.webhooks.prune({ stopping: false }), 502, 'the 500, the delivered one and the ping');
  assert.ok(t.rt.db.writes - writes >= 3, `502 deliveries in ${t.rt.db.writes - writes} transactions (100, then at most twice the one before)`);
  await freshTokens(t, w);
  assert.equal(await deliveries(t, w, h.id), []);
  await rx.close();
});

F.run();

// ── the allow-list ───────────────────────────────────────────────────────

const L = suite('WEBHOOK_ALLOW_HOSTS');
L.after(closeReceivers);

L('an entry that is not a host name or IP address (a scheme, a path, no port a URL can name) stops the start with a message naming it', () => {
  const good = loadConfig({ WEBHOOK_ALLOW_HOSTS: 'hooks.example.com, *.corp.test, 10.0.0.5, ::1, [::1], bücher.example, host_1.lan, example.com., hooks.example.com:8443' });
  assert.equal(good.webhookAllowHosts.length, 9);
  for (const bad of ['https://hooks.example.com', 'hooks.example.com/x', 'hooks.example.com:x', '*', '*.', 'a..b', '-x.test', 'user@host']) {
    try {
      loadConfig({ WEBHOOK_ALLOW_HOSTS: `ok.test,${bad}` });
      assert.unreachable(bad);
    } catch (err) {
      assert.instance(err, ConfigError, bad);
      // (what comes before an @ may be a password: never shown)
      assert.match((err as Error).message, `WEBHOOK_ALLOW_HOSTS: "${bad.replace(/^.*@/, '***@')}" is not a host name or IP address`);
    }
  }
  for (const bad of ['hooks.example.com:0', 'hooks.example.com:65536', '[::1]:99999']) {
    assert.throws(() => loadConfig({ WEBHOOK_ALLOW_HOSTS: bad }), (err: Error) => err instanceof ConfigError && err.message === `WEBHOOK_ALLOW_HOSTS: "${bad}" has no port a URL can name (1 to 65535)`, bad);
  }
  // no URL can name it: it would never match (a tester's list started with it)
  for (const bad of ['256.1.1.1', '10.0.0.300', '*.1.2.3.999']) {
    assert.throws(() => loadConfig({ WEBHOOK_ALLOW_HOSTS: `ok.test,${bad}` }), (err: Error) => err instanceof ConfigError && err.message === `WEBHOOK_ALLOW_HOSTS: "${bad}" is no host a URL can name (an IPv4 address has four numbers up to 255), so it would never match`, bad);
  }
});

L('a list of separators alone stops the start (it allowed any host, as if unset); empty is unset', () => {
  for (const raw of [',', ' , ', ',,']) {
    assert.throws(() => loadConfig({ WEBHOOK_ALLOW_HOSTS: raw }), (err: Error) => err instanceof ConfigError && err.message === `WEBHOOK_ALLOW_HOSTS "${raw}" names no host; list the hosts webhooks may call, or leave it empty to allow any`, JSON.stringify(raw));
  }
  for (const raw of ['', '  ']) assert.equal(loadConfig({ WEBHOOK_ALLOW_HOSTS: raw }).webhookAllowHosts, [], JSON.stringify(raw));
});

L('entries compare with URL hosts as the URL parser writes them: IPv6 in any spelling, names in any case; an IPv4 entry the parser reads as another address stops the start', () => {
  const c = loadConfig({ WEBHOOK_ALLOW_HOSTS: '2001:db8:0:0:0:0:0:10, fd00:0::5, ::ffff:10.0.0.7, 2001:0db8::20, Hooks.Example.COM, *.Corp.TEST' });
  assert.equal(c.webhookAllowHosts, ['2001:db8::10', 'fd00::5', '::ffff:a00:7', '2001:db8::20', 'hooks.example.com', '*.corp.test']);
  for (const url of ['http://[2001:db8:0:0:0:0:0:10]/', 'http://[2001:db8::10]/', 'http://[fd00::5]/', 'http://[::ffff:10.0.0.7]/', 'http://[2001:0db8::20]/', 'https://hooks.example.com/x', 'https://a.corp.test/']) {
    const v = checkWebhookUrl(url, c.webhookAllowHosts);
    assert.ok(v.ok, `${url}: ${v.ok ? '' : v.reason}`);
  }
  // an entry with a port allows that port alone: a receiver on this machine without every local port (a webhooks tester's case)
  const ported = loadConfig({ WEBHOOK_ALLOW_HOSTS: '127.0.0.1:8443, [0:0::1]:9000, Hooks.Example.COM:443, *.Corp.TEST:8080' });
  assert.equal(ported.webhookAllowHosts, ['127.0.0.1:8443', '[::1]:9000', 'hooks.example.com:443', '*.corp.test:8080']);
  for (const url of ['http://127.0.0.1:8443/hook', 'http://[::1]:9000/', 'https://hooks.example.com/x', 'https://hooks.example.com:443/x', 'http://a.corp.test:8080/']) {
    const v = checkWebhookUrl(url, ported.webhookAllowHosts, true);
    assert.ok(v.ok, `${url}: ${v.ok ? '' : v.reason}`);
  }
  for (const url of ['http://127.0.0.1/', 'http://127.0.0.1:22/', 'http://[::1]:9001/', 'http://hooks.example.com/x', 'https://hooks.example.com:8443/', 'http://a.corp.test/']) {
    const v = checkWebhookUrl(url, ported.webhookAllowHosts, true);
    assert.ok(!v.ok && v.code === 'host_not_allowed' && / is in WEBHOOK_ALLOW_HOSTS \(.*\) with other ports than \d+$/.test(v.reason), `${url}: ${v.ok ? 'allowed' : v.reason}`);
  }
  // the unnormalized list, as a caller of the policy might hold it, compares the same
  assert.ok(hostAllowed('[2001:db8::10]', ['2001:db8:0:0:0:0:0:10']));
  assert.not.ok(hostAllowed('[2001:db8::11]', ['2001:db8:0:0:0:0:0:10']));
  for (const [bad, read] of [['10.0.0.010', '10.0.0.8'], ['1', '0.0.0.1'], ['0x7f.1', '127.0.0.1']]) {
    try {
      loadConfig({ WEBHOOK_ALLOW_HOSTS: `ok.test,${bad}` });
      assert.unreachable(bad);
    } catch (err) {
      assert.instance(err, ConfigError, bad);
      assert.is((err as Error).message, `WEBHOOK_ALLOW_HOSTS: "${bad}" is read in a URL as the address ${read} (a part with a leading 0 is octal, 0x hexadecimal, and missing parts are filled in); write it as four decimal numbers (10.0.0.5)`);
    }
  }
});

L('only listed hosts are accepted, and a delivery to a host no longer listed is not sent', async () => {
  const rx = await receiver();
  const first = await startApp();
  const w = await seedWorld(first);
  const h = await createHook(first, w, { url: rx.url, events: ['import.completed'] });
  await first.close();

  const t = await startApp({ dataDir: first.dataDir, config: { webhookAllowHosts: ['hooks.example.test', '*.corp.test', '::1', 'bücher.example', '*.münchen.test'] } });
  try {
    const root = (await signInRoot(t)).accessToken;
    const admin = (await signIn(t, 'admin@a.test', PASSWORD)).accessToken;
    assert.ok(root && admin);
    const create = (url: string) => t.call('POST', hooks(w), { token: admin, body: { url, events: ['import.completed'] } });
    // entries in Unicode allow their hosts, written either way (URL hosts compare in punycode)
    const idn = ['https://bücher.example/x', 'https://xn--bcher-kva.example/y', 'https://hooks.münchen.test/', 'https://hooks.xn--mnchen-3ya.test/'];
    for (const url of ['https://hooks.example.test/x', 'https://HOOKS.example.test./y', 'https://a.corp.test/', 'https://b.a.corp.test:8443/', 'http://[::1]:8080/', ...idn]) {
      expectStatus(await create(url), 201, url);
    }
    for (const url of [rx.url, 'https://corp.test/', 'https://hooks.example.test.evil.test/', 'https://evilcorp.test/', 'http://localhost/']) {
      const r = await create(url);
      assert.is(r.status, 422, `${url}: ${r.text}`);
      assert.is(r.body.code, 'webhook_host_not_allowed');
      assert.match(r.body.message, /is not in WEBHOOK_ALLOW_HOSTS/);
      assert.is(r.body.errors[0].path, 'url');
    }
    const patched = await t.call('PATCH', hooks(w, `/${h.id}`), { token: admin, body: { url: `${rx.url}?again` } });
    assert.is(patched.status, 422);

    // made before the list existed: the ping is refused without a connection
    const ping = await t.call('POST', hooks(w, `/${h.id}/test`), { token: admin });
    const d = await until(t, 'the refused ping', async () => {
      const x = (await t.call('GET', hooks(w, `/${h.id}/deliveries/${ping.body.id}`), { token: admin })).body;
      return x.status === 'failed' && x;
    });
    assert.match(d.error, /^not sent: the URL host 127\.0\.0\.1 is not in WEBHOOK_ALLOW_HOSTS/);
    assert.is(rx.got.length, 0, 'no connection was made');
  } finally {
    await t.close();
    await rx.close();
  }
});

L('without WEBHOOK_ALLOW_LOCAL, this machine, link-local addresses and cloud metadata services are refused: by name, by literal address, and by what a name resolves to', async () => {
  const rx = await receiver();
  const t = await startApp({ env: { WEBHOOK_ALLOW_LOCAL: 'false' } });
  try {
    const w = await seedWorld(t);
    const local = [rx.url, 'http://localhost:8080/', 'http://api.localhost/', 'http://[::1]/', 'http://169.254.169.254/latest/meta-data/', 'http://[::ffff:127.0.0.1]/', 'http://0.0.0.0/', 'http://[fe80::1]/', 'http://[fd00:ec2::254]/latest/meta-data/', 'http://100.100.100.200/latest/meta-data/', 'http://168.63.129.16/machine',
      // loopback and metadata inside IPv6: IPv4-compatible, NAT64, 6to4 (they passed: a security tester's case)
      'http://[::127.0.0.1]/', 'http://[64:ff9b::7f00:1]/', 'http://[2002:7f00:1::]/', 'http://[64:ff9b::a9fe:a9fe]/latest/meta-data/', 'http://[2002:6464:64c8::1]/',
      'http://[::ffff:0:7f00:1]/', 'http://[64:ff9b:1::7f00:1]/'];
    for (const url of local) {
      const r = await t.call('POST', hooks(w), { token: w.tokens.admin, body: { url, events: ['import.completed'] } });
      assert.is(r.status, 422, `${url}: ${r.text}`);
      assert.is(r.body.code, 'webhook_host_not_allowed');
      assert.match(r.body.message, /WEBHOOK_ALLOW_LOCAL=true/);
    }
    await createHook(t, w, { url: 'http://10.1.2.3/hooks', events: ['import.completed'] }); // receivers on the private network are fine
    await createHook(t, w, { url: 'http://[64:ff9b::a01:203]/hooks', events: ['import.completed'] }); // and through NAT64
  } finally {
    await t.close();
  }
  // At connect time (a name that passed the checks may resolve to a local address): nothing is sent.
  const port = new URL(rx.url).port;
  const strict = createSender('test');
  const open = createSender('test', { allowLocal: true });
  try {
    const byName = await strict.send(`http://localhost:${port}/hooks`, {}, Buffer.from('{}'), { timeoutMs: 5000 });
    assert.equal([byName.ok, byName.status], [false, null]);
    assert.match(byName.error!, /^not sent: localhost resolves to this machine \(loopback or one of its own addresses\), a link-local address or a cloud metadata service/);
    const byLiteral = await strict.send(rx.url, {}, Buffer.from('{}'), { timeoutMs: 5000 });
    assert.match(byLiteral.error!, /^not sent: 127\.0\.0\.1 resolves to this machine/);
    assert.is(rx.got.length, 0, 'no connection was made');
    // a name that resolves to a cloud metadata service (a resolver that says so, in place of DNS)
    const metadata: Resolve = (_hostname, _options, callback) => callback(null, [{ address: 'fd00:ec2::254', family: 6 }]);
    const cloud = createSender('test', { resolve: metadata });
    try {
      const imds = await cloud.send('http://hooks.example.test/', {}, Buffer.from('{}'), { timeoutMs: 5000 });
      assert.equal([imds.ok, imds.status], [false, null]);
      assert.match(imds.error!, /^not sent: hooks\.example\.test resolves to .* a cloud metadata service/);
    } finally {
      cloud.close();
    }
    assert.is((await open.send(`http://localhost:${port}/hooks`, {}, Buffer.from('{}'), { timeoutMs: 5000 })).ok, true);
    assert.is(rx.got.length, 1);
  } finally {
    strict.close();
    open.close();
    await rx.close();
  }
});

L("without WEBHOOK_ALLOW_LOCAL, the addresses of this machine's own network interfaces are refused too, literal or resolved", async () => {
  const mine = Object.values(networkInterfaces())
    .flatMap((x) => x ?? [])
    .filter((a) => !a.internal && !a.address.startsWith('fe80:') && !a.address.startsWith('169.254.'));
  if (!mine.length) {
    console.warn('SKIPPED: this machine has no non-loopback, non-link-local interface address to test with');
    return;
  }
  const rx = await receiver(ok, '0.0.0.0'); // reachable on every IPv4 address of this machine
  const port = new URL(rx.url).port;
  const literal = (a: { address: string; family: string }) => `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${port}/hooks`;
  const t = await startApp({ env: { WEBHOOK_ALLOW_LOCAL: 'false' } });
  try {
    const w = await seedWorld(t);
    for (const a of mine) {
      const r = await t.call('POST', hooks(w), { token: w.tokens.admin, body: { url: literal(a), events: ['import.completed'] } });
      assert.is(r.status, 422, `${literal(a)}: ${r.text}`);
      assert.is(r.body.code, 'webhook_host_not_allowed');
      assert.match(r.body.message, /is this machine, a link-local address or a cloud metadata service; set WEBHOOK_ALLOW_LOCAL=true/);
    }
  } finally {
    await t.close();
  }
  // At connect time: a name that resolves to one of them (a resolver that says so, in place of DNS), and the literal itself.
  const v4 = mine.find((a) => a.family === 'IPv4');
  if (!v4) {
    console.warn('SKIPPED (connect-time part): this machine has no non-loopback IPv4 address for the 0.0.0.0 receiver');
    await rx.close();
    return;
  }
  const resolve: Resolve = (hostname, _options, callback) =>
    hostname === 'crm.example.test' ? callback(null, [{ address: v4.address, family: 4 }]) : callback(Object.assign(new Error('not found'), { code: 'ENOTFOUND' }), []);
  const strict = createSender('test', { resolve });
  const open = createSender('test', { resolve, allowLocal: true });
  try {
    const byName = await strict.send(`http://crm.example.test:${port}/hooks`, {}, Buffer.from('{}'), { timeoutMs: 5000 });
    assert.equal([byName.ok, byName.status], [false, null]);
    assert.match(byName.error!, /^not sent: crm\.example\.test resolves to this machine \(loopback or one of its own addresses\)/);
    const byLiteral = await strict.send(literal(v4), {}, Buffer.from('{}'), { timeoutMs: 5000 });
    assert.match(byLiteral.error!, /^not sent: .+ resolves to this machine/);
    assert.is(rx.got.length, 0, 'no connection was made');
    // the same name with WEBHOOK_ALLOW_LOCAL reaches the receiver: the refusal above was the policy, not the network
    const allowed = await open.send(`http://crm.example.test:${port}/hooks`, {}, Buffer.from('{}'), { timeoutMs: 5000 });
    assert.equal([allowed.ok, allowed.status], [true, 200]);
    assert.is(rx.got.length, 1);
  } finally {
    strict.close();
    open.close();
    await rx.close();
  }
});

L.run();

const K = suite('the sender\'s sockets');
K('an answer that is no 2xx frees its socket at once: a receiver that sends its error slowly does not hold the sockets other webhooks of its host wait for (a tester\'s case)', async () => {
  const open = new Set<import('node:net').Socket>();
  const server = http.createServer((req, res) => {
    req.resume();
    if (req.url === '/ok') return void res.end('ok');
    // 500 at once, then a byte every 200 ms, never the end
    res.writeHead(500, { 'content-type': 'text/plain' });
    res.write('e');
    const drip = setInterval(() => res.write('e'), 200);
    res.on('close', () => clearInterval(drip));
  });
  server.on('connection', (s) => {
    open.add(s);
    s.on('close', () => open.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const sender = createSender('test', { allowLocal: true });
  try {
    // as many failing attempts as the agent has sockets for one host (16)
    const failed = await Promise.all(Array.from({ length: 16 }, (_, i) => sender.send(`${base}/err/${i}`, {}, Buffer.from('{}'), { timeoutMs: 20_000 })));
    assert.ok(failed.every((r) => !r.ok && r.status === 500 && r.error === 'answered 500'), JSON.stringify(failed[0]));
    // another webhook on that host: its attempt does not queue behind the slow error bodies
    const ok = await sender.send(`${base}/ok`, {}, Buffer.from('{}'), { timeoutMs: 3_000 });
    assert.equal([ok.ok, ok.status, ok.error], [true, 200, null]);
    assert.ok(open.size <= 1, `the failed attempts' connections are closed: ${open.size} open`);
  } finally {
    sender.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});
K('a kept-alive connection the receiver closed while idle is not its failure: the request goes once more on a new connection, and only there (a tester\'s case: a ping said "the connection was reset")', async () => {
  // a raw receiver: the first request on a connection gets 204 and the connection stays open; a
  // second one on it is reset, as a peer that closed its idle end meanwhile resets the write
  const seen: { connection: number; request: number }[] = [];
  let connections = 0;
  let resetAll = false;
  const server = createNetServer((socket) => {
    const connection = ++connections;
    let requests = 0;
    let text = '';
    socket.on('error', () => undefined);
    socket.on('data', (d) => {
      text += d.toString('latin1');
      while (text.includes('\r\n\r\n') && text.indexOf('{}') > text.indexOf('\r\n\r\n')) {
        text = text.slice(text.indexOf('{}') + 2);
        requests++;
        if (requests > 1 || resetAll) {
          if (resetAll) seen.push({ connection, request: requests });
          return void socket.resetAndDestroy();
        }
        seen.push({ connection, request: requests });
        socket.write('HTTP/1.1 204 No Content\r\n\r\n');
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  const sender = createSender('test', { allowLocal: true });
  try {
    const results = [];
    for (let i = 0; i < 3; i++) results.push(await sender.send(url, { 'content-type': 'application/json' }, Buffer.from('{}'), { timeoutMs: 5_000 }));
    assert.equal(results.map((r) => [r.ok, r.status, r.error]), [[true, 204, null], [true, 204, null], [true, 204, null]]);
    assert.equal(seen, [{ connection: 1, request: 1 }, { connection: 2, request: 1 }, { connection: 3, request: 1 }], 'each request received once, the retries on new connections');
    // a receiver that resets a new connection fails the attempt, sent once (the retry schedule's business)
    resetAll = true;
    seen.length = 0;
    const another = createSender('test', { allowLocal: true });
    const reset = await another.send(url, {}, Buffer.from('{}'), { timeoutMs: 5_000 });
    another.close();
    assert.equal([reset.ok, reset.status, reset.error], [false, null, 'the connection was reset']);
    assert.is(seen.length, 1, 'sent once');
  } finally {
    sender.close();
    await new Promise((r) => server.close(r));
  }
});
K.run();
