// One row per route: who may call it (the contract of SPEC §3–§6), the success status, and a
// request that succeeds for an allowed caller. Requests that consume their target build a fresh one.
import { randomBytes } from 'node:crypto';
import { addContacts, createLedger, csvForm, expectStatus, ID, ledgerPath, PASSWORD, until, type CallOptions, type TestApp, type World } from './helpers.ts';

export type Need = 'public' | 'any' | 'user' | 'superuser' | 'feed' | 'viewer' | 'editor' | 'admin';

export interface Row {
  need: Need;
  ok: number;
  request(c: { t: TestApp; w: World }): Promise<{ path: string; opts?: CallOptions }>;
}

const uniq = () => randomBytes(5).toString('hex');

/** Adds a fresh member to org A (as root) and returns its user id. */
async function freshMember(t: TestApp, w: World, role = 'viewer'): Promise<string> {
  const r = await t.call('POST', `${ID}/orgs/${w.orgId}/members`, { token: w.root, body: { email: `m-${uniq()}@a.test`, role, password: PASSWORD } });
  expectStatus(r, 201, 'fresh member');
  return r.body.userId;
}

async function freshOrgServiceAccount(t: TestApp, w: World): Promise<string> {
  const r = await t.call('POST', `${ID}/orgs/${w.orgId}/service-accounts`, { token: w.root, body: { name: `sa-${uniq()}`, role: 'viewer' } });
  expectStatus(r, 201, 'fresh service account');
  return r.body.id;
}

async function freshInstallationServiceAccount(t: TestApp, w: World): Promise<string> {
  const r = await t.call('POST', `${ID}/service-accounts`, { token: w.root, body: { name: `inst-${uniq()}`, permissions: ['feed'] } });
  expectStatus(r, 201, 'fresh installation account');
  return r.body.id;
}

async function freshUser(t: TestApp, w: World): Promise<string> {
  const r = await t.call('POST', `${ID}/users`, { token: w.root, body: { email: `u-${uniq()}@x.test`, password: PASSWORD } });
  expectStatus(r, 201, 'fresh user');
  return r.body.id;
}

async function freshOrg(t: TestApp, w: World): Promise<string> {
  const r = await t.call('POST', `${ID}/orgs`, { token: w.root, body: { name: `org-${uniq()}` } });
  expectStatus(r, 201, 'fresh org');
  return r.body.id;
}

const I = (path: string) => `${ID}${path}`;

/** A ledger of org A with one imported contact, made once per world. */
const fixtures = new WeakMap<World, Promise<{ ledgerId: string; importId: string; contactId: string }>>();
function ledgerFixture(t: TestApp, w: World) {
  let f = fixtures.get(w);
  if (!f) {
    f = (async () => {
      const ledgerId = await createLedger(t, w.root, w.orgId, 'matrix');
      const imp = await addContacts(t, w.root, w.orgId, ledgerId, [{ name: 'Ann Example', company: 'Acme' }, { company: 'no name' }]);
      const list = await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/contacts`, { token: w.root });
      return { ledgerId, importId: imp.id, contactId: list.body.contacts[0].id };
    })();
    fixtures.set(w, f);
  }
  return f;
}
const LP = (w: World, ledgerId: string, rest = '') => `${ledgerPath(w.orgId, ledgerId)}${rest}`;
async function freshLedger(t: TestApp, w: World): Promise<string> {
  return createLedger(t, w.root, w.orgId, `l-${uniq()}`);
}
async function freshContact(t: TestApp, w: World, ledgerId: string): Promise<string> {
  const before = await addContacts(t, w.root, w.orgId, ledgerId, [{ name: `n-${uniq()}`, company: 'Acme', referenceId: uniq() }]);
  const r = await t.call('GET', `${LP(w, ledgerId, '/contacts')}?importId=${before.id}`, { token: w.root });
  return r.body.contacts[0].id;
}
const CSV = 'name,company\nAnn,Acme\n';

/** A daily change set of the fixture ledger: a feed moves its contact to another company. */
const streams = new WeakMap<World, Promise<{ ledgerId: string; day: string; file: string }>>();
function streamFixture(t: TestApp, w: World) {
  let f = streams.get(w);
  if (!f) {
    f = (async () => {
      const { ledgerId } = await ledgerFixture(t, w);
      const r = await t.call('POST', '/api/ledger/v1/feed', { token: w.root, raw: '{"personId":"ann-1","name":"Ann Example","company":"Acme"}\n', headers: { 'content-type': 'application/x-ndjson' } });
      expectStatus(r, 202, 'stream fixture feed');
      for (;;) {
        const s = await t.call('GET', `/api/ledger/v1/feed/${r.body.id}`, { token: w.root });
        if (s.body.status === 'completed' || s.body.status === 'failed') break;
        await new Promise((resolve) => setImmediate(resolve));
      }
      const moved = await t.call('POST', '/api/ledger/v1/feed', { token: w.root, raw: '{"personId":"ann-1","name":"Ann Example","company":"Initech"}\n', headers: { 'content-type': 'application/x-ndjson' } });
      for (;;) {
        const s = await t.call('GET', `/api/ledger/v1/feed/${moved.body.id}`, { token: w.root });
        if (s.body.status === 'completed' || s.body.status === 'failed') break;
        await new Promise((resolve) => setImmediate(resolve));
      }
      const day = new Date(t.clock.now()).toISOString().slice(0, 10).replace(/-/g, '');
      const [set] = await t.rt.tracking.dailySets.generate(day);
      return { ledgerId, day, file: set!.files[0]!.name };
    })();
    streams.set(w, f);
  }
  return f;
}

const feeds = new WeakMap<World, Promise<string>>();
function feedFixture(t: TestApp, w: World): Promise<string> {
  let f = feeds.get(w);
  if (!f) {
    f = (async () => {
      const r = await t.call('POST', '/api/ledger/v1/feed', { token: w.root, raw: '{"name":"Bo","company":"X"}\n{"company":"no name"}\n', headers: { 'content-type': 'application/x-ndjson' } });
      expectStatus(r, 202, 'feed fixture');
      return r.body.id as string;
    })();
    feeds.set(w, f);
  }
  return f;
}

/** The feed fixture once it has ended (its rejected records can be deleted then). */
async function endedFeedFixture(t: TestApp, w: World): Promise<string> {
  const id = await feedFixture(t, w);
  await until('the feed fixture', async () => (await t.call('GET', `/api/ledger/v1/feed/${id}`, { token: w.root })).body.status, (s) => s === 'completed' || s === 'failed', 20_000);
  return id;
}

/** A disabled webhook of org A (nothing is sent to it but pings), made once per world; fresh ones for DELETE. */
const HOOK_URL = 'http://127.0.0.1:9/matrix-hook';
async function freshWebhook(t: TestApp, w: World): Promise<string> {
  const r = await t.call('POST', `/api/ledger/v1/orgs/${w.orgId}/webhooks`, { token: w.root, body: { url: HOOK_URL, events: ['contact.job_changed'], enabled: false } });
  expectStatus(r, 201, 'fresh webhook');
  return r.body.id;
}
const webhooks = new WeakMap<World, Promise<{ webhookId: string; deliveryId: string }>>();
function webhookFixture(t: TestApp, w: World) {
  let f = webhooks.get(w);
  if (!f) {
    f = (async () => {
      const webhookId = await freshWebhook(t, w);
      const ping = await t.call('POST', `/api/ledger/v1/orgs/${w.orgId}/webhooks/${webhookId}/test`, { token: w.root });
      expectStatus(ping, 202, 'webhook fixture ping');
      return { webhookId, deliveryId: ping.body.id as string };
    })();
    webhooks.set(w, f);
  }
  return f;
}
const WH = (w: World, rest = '') => `/api/ledger/v1/orgs/${w.orgId}/webhooks${rest}`;

export const MATRIX: Record<string, Row> = {
  // ── operations and documents ──
  'GET /healthz': { need: 'public', ok: 200, request: async () => ({ path: '/healthz' }) },
  'GET /readyz': { need: 'public', ok: 200, request: async () => ({ path: '/readyz' }) },
  'GET /metrics': { need: 'superuser', ok: 200, request: async () => ({ path: '/metrics' }) },
  'GET /api/identity/v1/openapi.json': { need: 'public', ok: 200, request: async () => ({ path: I('/openapi.json') }) },
  'GET /api/ledger/v1/openapi.json': { need: 'public', ok: 200, request: async () => ({ path: '/api/ledger/v1/openapi.json' }) },

  // ── sessions ──
  'POST /api/identity/v1/session': {
    need: 'public', ok: 200,
    request: async () => ({ path: I('/session'), opts: { body: { grantType: 'password', email: 'editor@a.test', password: PASSWORD } } }),
  },
  'POST /auth/v1/session': { need: 'public', ok: 200, request: async () => ({ path: '/auth/v1/session', opts: { form: { username: 'editor@a.test', password: PASSWORD } } }) },
  'GET /api/identity/v1/session': { need: 'any', ok: 200, request: async () => ({ path: I('/session') }) },
  'DELETE /api/identity/v1/session': { need: 'any', ok: 204, request: async () => ({ path: I('/session') }) },

  // ── organizations ──
  'GET /api/identity/v1/orgs': { need: 'any', ok: 200, request: async () => ({ path: I('/orgs') }) },
  'POST /api/identity/v1/orgs': { need: 'superuser', ok: 201, request: async () => ({ path: I('/orgs'), opts: { body: { name: `org-${uniq()}` } } }) },
  'GET /api/identity/v1/orgs/:orgId': { need: 'viewer', ok: 200, request: async ({ w }) => ({ path: I(`/orgs/${w.orgId}`) }) },
  'PATCH /api/identity/v1/orgs/:orgId': { need: 'admin', ok: 200, request: async ({ w }) => ({ path: I(`/orgs/${w.orgId}`), opts: { body: { name: 'Org A' } } }) },
  'DELETE /api/identity/v1/orgs/:orgId': { need: 'superuser', ok: 204, request: async ({ t, w }) => ({ path: I(`/orgs/${await freshOrg(t, w)}`) }) },
  'GET /api/identity/v1/orgs/:orgId/members': { need: 'viewer', ok: 200, request: async ({ w }) => ({ path: I(`/orgs/${w.orgId}/members`) }) },
  'POST /api/identity/v1/orgs/:orgId/members': {
    need: 'admin', ok: 201,
    request: async ({ w }) => ({ path: I(`/orgs/${w.orgId}/members`), opts: { body: { email: `n-${uniq()}@a.test`, role: 'viewer', password: PASSWORD } } }),
  },
  'GET /api/identity/v1/orgs/:orgId/members/:userId': { need: 'viewer', ok: 200, request: async ({ w }) => ({ path: I(`/orgs/${w.orgId}/members/${w.users.viewer}`) }) },
  'PATCH /api/identity/v1/orgs/:orgId/members/:userId': {
    need: 'admin', ok: 200,
    request: async ({ t, w }) => ({ path: I(`/orgs/${w.orgId}/members/${await freshMember(t, w)}`), opts: { body: { role: 'editor' } } }),
  },
  'DELETE /api/identity/v1/orgs/:orgId/members/:userId': {
    need: 'admin', ok: 204,
    request: async ({ t, w }) => ({ path: I(`/orgs/${w.orgId}/members/${await freshMember(t, w)}`) }),
  },
  'GET /api/identity/v1/orgs/:orgId/service-accounts': { need: 'admin', ok: 200, request: async ({ w }) => ({ path: I(`/orgs/${w.orgId}/service-accounts`) }) },
  'POST /api/identity/v1/orgs/:orgId/service-accounts': {
    need: 'admin', ok: 201,
    request: async ({ w }) => ({ path: I(`/orgs/${w.orgId}/service-accounts`), opts: { body: { name: `sa-${uniq()}`, role: 'viewer' } } }),
  },
  'GET /api/identity/v1/orgs/:orgId/service-accounts/:serviceAccountId': {
    need: 'admin', ok: 200,
    request: async ({ t, w }) => ({ path: I(`/orgs/${w.orgId}/service-accounts/${await freshOrgServiceAccount(t, w)}`) }),
  },
  'POST /api/identity/v1/orgs/:orgId/service-accounts/:serviceAccountId/rotate': {
    need: 'admin', ok: 200,
    request: async ({ t, w }) => ({ path: I(`/orgs/${w.orgId}/service-accounts/${await freshOrgServiceAccount(t, w)}/rotate`) }),
  },
  'DELETE /api/identity/v1/orgs/:orgId/service-accounts/:serviceAccountId': {
    need: 'admin', ok: 204,
    request: async ({ t, w }) => ({ path: I(`/orgs/${w.orgId}/service-accounts/${await freshOrgServiceAccount(t, w)}`) }),
  },
  'GET /api/identity/v1/orgs/:orgId/audit': { need: 'admin', ok: 200, request: async ({ w }) => ({ path: I(`/orgs/${w.orgId}/audit`) }) },

  // ── users ──
  'GET /api/identity/v1/users/me': { need: 'user', ok: 200, request: async () => ({ path: I('/users/me') }) },
  'PATCH /api/identity/v1/users/me': { need: 'user', ok: 200, request: async () => ({ path: I('/users/me'), opts: { body: { name: 'Same Name' } } }) },
  'GET /api/identity/v1/users': { need: 'superuser', ok: 200, request: async () => ({ path: I('/users') }) },
  'POST /api/identity/v1/users': { need: 'superuser', ok: 201, request: async () => ({ path: I('/users'), opts: { body: { email: `v-${uniq()}@x.test`, password: PASSWORD } } }) },
  'GET /api/identity/v1/users/:userId': { need: 'superuser', ok: 200, request: async ({ w }) => ({ path: I(`/users/${w.users.viewer}`) }) },
  'PATCH /api/identity/v1/users/:userId': {
    need: 'superuser', ok: 200,
    request: async ({ t, w }) => ({ path: I(`/users/${await freshUser(t, w)}`), opts: { body: { name: 'Renamed' } } }),
  },
  'DELETE /api/identity/v1/users/:userId/sessions': { need: 'superuser', ok: 200, request: async ({ t, w }) => ({ path: I(`/users/${await freshUser(t, w)}/sessions`) }) },

  // ── installation service accounts and audit ──
  'GET /api/identity/v1/service-accounts': { need: 'superuser', ok: 200, request: async () => ({ path: I('/service-accounts') }) },
  'POST /api/identity/v1/service-accounts': {
    need: 'superuser', ok: 201,
    request: async () => ({ path: I('/service-accounts'), opts: { body: { name: `p-${uniq()}`, permissions: ['feed'] } } }),
  },
  'GET /api/identity/v1/service-accounts/:serviceAccountId': {
    need: 'superuser', ok: 200,
    request: async ({ t, w }) => ({ path: I(`/service-accounts/${await freshInstallationServiceAccount(t, w)}`) }),
  },
  'POST /api/identity/v1/service-accounts/:serviceAccountId/rotate': {
    need: 'superuser', ok: 200,
    request: async ({ t, w }) => ({ path: I(`/service-accounts/${await freshInstallationServiceAccount(t, w)}/rotate`) }),
  },
  'DELETE /api/identity/v1/service-accounts/:serviceAccountId': {
    need: 'superuser', ok: 204,
    request: async ({ t, w }) => ({ path: I(`/service-accounts/${await freshInstallationServiceAccount(t, w)}`) }),
  },
  'GET /api/identity/v1/audit': { need: 'superuser', ok: 200, request: async () => ({ path: I('/audit') }) },

  // ── ledgers ──
  'GET /api/ledger/v1/orgs/:orgId/ledgers': { need: 'viewer', ok: 200, request: async ({ w }) => ({ path: ledgerPath(w.orgId) }) },
  'POST /api/ledger/v1/orgs/:orgId/ledgers': { need: 'editor', ok: 201, request: async ({ w }) => ({ path: ledgerPath(w.orgId), opts: { body: { name: `m-${uniq()}` } } }) },
  'GET /api/ledger/v1/orgs/:orgId/ledgers/:ledgerId': { need: 'viewer', ok: 200, request: async ({ t, w }) => ({ path: LP(w, (await ledgerFixture(t, w)).ledgerId) }) },
  'PATCH /api/ledger/v1/orgs/:orgId/ledgers/:ledgerId': {
    need: 'editor', ok: 200,
    request: async ({ t, w }) => ({ path: LP(w, (await ledgerFixture(t, w)).ledgerId), opts: { body: { description: 'same' } } }),
  },
  'DELETE /api/ledger/v1/orgs/:orgId/ledgers/:ledgerId': { need: 'admin', ok: 204, request: async ({ t, w }) => ({ path: LP(w, await freshLedger(t, w)) }) },

  // ── contacts ──
  'POST /api/ledger/v1/orgs/:orgId/ledgers/:ledgerId/contacts': {
    need: 'editor', ok: 202,
    request: async ({ t, w }) => ({ path: LP(w, (await ledgerFixture(t, w)).ledgerId, '/contacts'), opts: { body: { name: 'New One', company: 'Acme' } } }),
  },
  'GET /api/ledger/v1/orgs/:orgId/ledgers/:ledgerId/contacts': { need: 'viewer', ok: 200, request: async ({ t, w }) => ({ path: LP(w, (await ledgerFixture(t, w)).ledgerId, '/contacts') }) },
  'GET /api/ledger/v1/orgs/:orgId/ledgers/:ledgerId/contacts/download': {
    need: 'viewer', ok: 200,
    request: async ({ t, w }) => ({ path: LP(w, (await ledgerFixture(t, w)).ledgerId, '/contacts/download') }),
  },
  'POST /api/ledger/v1/orgs/:orgId/ledgers/:ledgerId/contacts/bulk_delete': {
    need: 'editor', ok: 200,
    request: async ({ t, w }) => {
      const { ledgerId } = await ledgerFixture(t, w);
      return { path: LP(w, ledgerId, '/contacts/bulk_delete'), opts: { body: { contactIds: [await freshContact(t, w, ledgerId)] } } };
    },
  },
  'GET /api/ledger/v1/orgs/:orgId/ledgers/:ledgerId/contacts/:contactId': {
    need: 'viewer', ok: 200,
    request: async ({ t, w }) => {
      const f = await ledgerFixture(t, w);
      return { path: LP(w, f.ledgerId, `/contacts/${f.contactId}`) };
    },
  },
  'DELETE /api/ledger/v1/orgs/:orgId/ledgers/:ledgerId/contacts/:contactId': {
    need: 'editor', ok: 204,
    request: async ({ t, w }) => {
      const { ledgerId } = await ledgerFixture(t, w);
      return { path: LP(w, ledgerId, `/contacts/${await freshContact(t, w, ledgerId)}`) };
    },
  },

  'POST /api/ledger/v1/orgs/:orgId/ledgers/:ledgerId/imports': {
    need: 'editor', ok: 202,
    request: async ({ t, w }) => ({ path: LP(w, (await ledgerFixture(t, w)).ledgerId, '/imports'), opts: { raw: csvForm(CSV) } }),
  },
  'GET /api/ledger/v1/orgs/:orgId/ledgers/:ledgerId/imports': { need: 'viewer', ok: 200, request: async ({ t, w }) => ({ path: LP(w, (await ledgerFixture(t, w)).ledgerId, '/imports') }) },
  'GET /api/ledger/v1/orgs/:orgId/ledgers/:ledgerId/imports/:importId': {
    need: 'viewer', ok: 200,
    request: async ({ t, w }) => {
      const f = await ledgerFixture(t, w);
      return { path: LP(w, f.ledgerId, `/imports/${f.importId}`) };
    },
  },
  'GET /api/ledger/v1/orgs/:orgId/ledgers/:ledgerId/imports/:importId/errors': {
    need: 'viewer', ok: 200,
    request: async ({ t, w }) => {
      const f = await ledgerFixture(t, w);
      return { path: LP(w, f.ledgerId, `/imports/${f.importId}/errors`) };
    },
  },
  'POST /api/ledger/v1/orgs/:orgId/ledgers/:ledgerId/contacts/imports': {
    need: 'editor', ok: 202,
    request: async ({ t, w }) => ({ path: LP(w, (await ledgerFixture(t, w)).ledgerId, '/contacts/imports'), opts: { raw: csvForm(CSV) } }),
  },
  'GET /api/ledger/v1/orgs/:orgId/ledgers/:ledgerId/contacts/imports': { need: 'viewer', ok: 200, request: async ({ t, w }) => ({ path: LP(w, (await ledgerFixture(t, w)).ledgerId, '/contacts/imports') }) },
  'GET /api/ledger/v1/orgs/:orgId/ledgers/:ledgerId/contacts/imports/:importId': {
    need: 'viewer', ok: 200,
    request: async ({ t, w }) => {
      const f = await ledgerFixture(t, w);
      return { path: LP(w, f.ledgerId, `/contacts/imports/${f.importId}`) };
    },
  },
  'GET /api/ledger/v1/orgs/:orgId/ledgers/:ledgerId/contacts/imports/:importId/downloadErrors': {
    need: 'viewer', ok: 200,
    request: async ({ t, w }) => {
      const f = await ledgerFixture(t, w);
      return { path: LP(w, f.ledgerId, `/contacts/imports/${f.importId}/downloadErrors`) };
    },
  },
  'POST /api/ledger/v1/orgs/:orgId/ledgers/:ledgerId/imports/preview': {
    need: 'editor', ok: 200,
    request: async ({ t, w }) => ({ path: LP(w, (await ledgerFixture(t, w)).ledgerId, '/imports/preview'), opts: { raw: csvForm(CSV) } }),
  },
  'POST /api/ledger/v1/orgs/:orgId/ledgers/:ledgerId/contacts/imports/preview': {
    need: 'editor', ok: 200,
    request: async ({ t, w }) => ({ path: LP(w, (await ledgerFixture(t, w)).ledgerId, '/contacts/imports/preview'), opts: { raw: csvForm(CSV) } }),
  },

  // ── change tracking ──
  'POST /api/ledger/v1/feed': {
    need: 'feed', ok: 202,
    request: async () => ({ path: '/api/ledger/v1/feed', opts: { raw: '{"name":"Ann Example","company":"Acme"}\n', headers: { 'content-type': 'application/x-ndjson' } } }),
  },
  'GET /api/ledger/v1/feed': { need: 'feed', ok: 200, request: async () => ({ path: '/api/ledger/v1/feed' }) },
  'GET /api/ledger/v1/feed/:feedId': { need: 'feed', ok: 200, request: async ({ t, w }) => ({ path: `/api/ledger/v1/feed/${await feedFixture(t, w)}` }) },
  'GET /api/ledger/v1/people': { need: 'superuser', ok: 200, request: async () => ({ path: '/api/ledger/v1/people?email=nobody@people.test' }) },
  'DELETE /api/ledger/v1/people': { need: 'superuser', ok: 200, request: async () => ({ path: `/api/ledger/v1/people?email=${uniq()}@people.test` }) },
  'GET /api/ledger/v1/feed/:feedId/errors': { need: 'feed', ok: 200, request: async ({ t, w }) => ({ path: `/api/ledger/v1/feed/${await feedFixture(t, w)}/errors` }) },
  'DELETE /api/ledger/v1/feed/:feedId/errors': { need: 'feed', ok: 204, request: async ({ t, w }) => ({ path: `/api/ledger/v1/feed/${await endedFeedFixture(t, w)}/errors` }) },
  'DELETE /api/ledger/v1/orgs/:orgId/ledgers/:ledgerId/imports/:importId/errors': {
    need: 'editor', ok: 204,
    request: async ({ t, w }) => {
      const f = await ledgerFixture(t, w);
      return { path: LP(w, f.ledgerId, `/imports/${f.importId}/errors`) };
    },
  },
  'GET /api/ledger/v1/orgs/:orgId/ledgers/:ledgerId/contacts/:contactId/changes': {
    need: 'viewer', ok: 200,
    request: async ({ t, w }) => {
      const f = await ledgerFixture(t, w);
      return { path: LP(w, f.ledgerId, `/contacts/${f.contactId}/changes`) };
    },
  },
  'GET /api/ledger/v1/orgs/:orgId/ledgers/:ledgerId/changes': { need: 'viewer', ok: 200, request: async ({ t, w }) => ({ path: LP(w, (await ledgerFixture(t, w)).ledgerId, '/changes?type=job') }) },
  'GET /api/ledger/v1/orgs/:orgId/ledgers/:ledgerId/streams/daily': {
    need: 'viewer', ok: 200,
    request: async ({ t, w }) => ({ path: LP(w, (await streamFixture(t, w)).ledgerId, '/streams/daily') }),
  },
  'GET /api/ledger/v1/orgs/:orgId/ledgers/:ledgerId/streams/daily/:date/:file': {
    need: 'viewer', ok: 200,
    request: async ({ t, w }) => {
      const f = await streamFixture(t, w);
      return { path: LP(w, f.ledgerId, `/streams/daily/${f.day}/${f.file}`) };
    },
  },

  // ── webhooks ──
  'GET /api/ledger/v1/orgs/:orgId/webhooks': { need: 'admin', ok: 200, request: async ({ w }) => ({ path: WH(w) }) },
  'POST /api/ledger/v1/orgs/:orgId/webhooks': {
    need: 'admin', ok: 201,
    request: async ({ w }) => ({ path: WH(w), opts: { body: { url: HOOK_URL, events: ['import.completed'], enabled: false } } }),
  },
  'GET /api/ledger/v1/orgs/:orgId/webhooks/:webhookId': { need: 'admin', ok: 200, request: async ({ t, w }) => ({ path: WH(w, `/${(await webhookFixture(t, w)).webhookId}`) }) },
  'PATCH /api/ledger/v1/orgs/:orgId/webhooks/:webhookId': {
    need: 'admin', ok: 200,
    request: async ({ t, w }) => ({ path: WH(w, `/${(await webhookFixture(t, w)).webhookId}`), opts: { body: { events: ['contact.job_changed', 'contact.info_changed'] } } }),
  },
  'DELETE /api/ledger/v1/orgs/:orgId/webhooks/:webhookId': { need: 'admin', ok: 204, request: async ({ t, w }) => ({ path: WH(w, `/${await freshWebhook(t, w)}`) }) },
  'POST /api/ledger/v1/orgs/:orgId/webhooks/:webhookId/rotate': { need: 'admin', ok: 200, request: async ({ t, w }) => ({ path: WH(w, `/${(await webhookFixture(t, w)).webhookId}/rotate`) }) },
  'POST /api/ledger/v1/orgs/:orgId/webhooks/:webhookId/test': { need: 'admin', ok: 202, request: async ({ t, w }) => ({ path: WH(w, `/${(await webhookFixture(t, w)).webhookId}/test`) }) },
  'GET /api/ledger/v1/orgs/:orgId/webhooks/:webhookId/deliveries': {
    need: 'admin', ok: 200,
    request: async ({ t, w }) => ({ path: WH(w, `/${(await webhookFixture(t, w)).webhookId}/deliveries?limit=5`) }),
  },
  'GET /api/ledger/v1/orgs/:orgId/webhooks/:webhookId/deliveries/:deliveryId': {
    need: 'admin', ok: 200,
    request: async ({ t, w }) => {
      const f = await webhookFixture(t, w);
      return { path: WH(w, `/${f.webhookId}/deliveries/${f.deliveryId}`) };
    },
  },
};
