// Webhook deliveries survive kill -9 (SPEC §6, RELIABILITY.md D4): the server runs as a child
// process; a feed makes a job change, the receiver takes the delivery and does not answer, and
// the server is killed with SIGKILL. After a restart the same delivery (same X-Ledger-Delivery,
// same body) is sent again and recorded as delivered: at-least-once, deduplicable by the receiver.
// SIGTERM interrupts the hanging attempt and hands the delivery back instead of waiting for it.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createHmac, timingSafeEqual } from 'node:crypto';
import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { ID, LEDGER, orgWithLedger, passwordToken, request, tempDir, until } from './helpers.ts';
import { serve, type Running } from './child-server.ts';

const EMAIL = 'crash@example.com';
const PASSWORD = 'crash test password';

const C = suite('webhook crash safety');
const cleanup: (() => void)[] = [];
C.after.each(() => {
  for (const f of cleanup.splice(0)) f();
});

/** Resolves once `fn` returns a truthy value, polling every few milliseconds. */
interface Scenario {
  data: string;
  env: Record<string, string>;
  server: Running;
  got: { headers: IncomingHttpHeaders; body: string }[];
  orgId: string;
  ledgerId: string;
  hookId: string;
  secret: string;
}

/**
 * A server child with a webhook to a receiver that holds its first request open and answers the
 * next ones; a feed makes a job change; resolves once the first attempt reached the receiver.
 */
async function deliveryInFlight(): Promise<Scenario> {
  const got: Scenario['got'] = [];
  const rx = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      got.push({ headers: req.headers, body });
      if (got.length > 1) res.end('ok');
    });
  });
  await new Promise<void>((resolve) => rx.listen(0, '127.0.0.1', () => resolve()));
  cleanup.push(() => {
    rx.closeAllConnections();
    rx.close();
  });
  const hookUrl = `http://127.0.0.1:${(rx.address() as AddressInfo).port}/ledger-events`;

  const data = tempDir();
  const env = { CONTACT_LEDGER_DATA: data, CONTACT_LEDGER_ADMIN_EMAIL: EMAIL, CONTACT_LEDGER_ADMIN_PASSWORD: PASSWORD, WEBHOOK_TIMEOUT_MS: '120000' };
  const server = await serve(env);
  cleanup.push(() => server.child.kill('SIGKILL'));
  const call = (method: string, path: string, opts: Parameters<typeof request>[3] = {}) => request(`http://127.0.0.1:${server.port}`, method, path, opts);
  const token = await passwordToken(call, EMAIL, PASSWORD);
  const { orgId, ledgerId } = await orgWithLedger(call, token, 'Crash');
  const hook = await call('POST', `${LEDGER}/orgs/${orgId}/webhooks`, { token, body: { url: hookUrl, events: ['contact.job_changed'] } });
  assert.is(hook.status, 201, hook.text);

  const imp = await call('POST', `${LEDGER}/orgs/${orgId}/ledgers/${ledgerId}/contacts`, { token, body: { contacts: [{ name: 'Kay Crash', company: 'Acme', linkedin: 'linkedin.com/in/kay-crash' }] } });
  assert.is(imp.status, 202);
  await until('the import', async () => (await call('GET', `${LEDGER}/orgs/${orgId}/ledgers/${ledgerId}/imports/${imp.body.id}`, { token })).body.status === 'completed');
  const sa = (await call('POST', `${ID}/service-accounts`, { token, body: { name: 'feed', permissions: ['feed'] } })).body;
  const feedToken = (await call('POST', `${ID}/session`, { body: { grantType: 'clientCredentials', clientId: sa.clientId, clientSecret: sa.clientSecret } })).body.accessToken;
  const fed = await call('POST', `${LEDGER}/feed`, { token: feedToken, raw: '{"linkedin":"linkedin.com/in/kay-crash","name":"Kay Crash","company":"Globex"}\n', headers: { 'content-type': 'application/x-ndjson' } });
  assert.is(fed.status, 202, fed.text);
  // the change is committed with its outbox row, and the attempt is in flight
  await until('the first attempt to reach the receiver', () => got.length === 1);
  return { data, env, server, got, orgId, ledgerId, hookId: hook.body.id, secret: hook.body.secret };
}

const outbox = (data: string) => {
  const db = new Database(join(data, 'contact-ledger.db'), { readonly: true });
  try {
    return db.prepare('SELECT id, status, attempts FROM webhook_deliveries').all();
  } finally {
    db.close();
  }
};

C('kill -9 between a change and its delivery: after the restart the same delivery arrives', async () => {
  const s = await deliveryInFlight();
  const { data, env, got, orgId, ledgerId, hookId, secret } = s;
  let server = s.server;
  const call = (method: string, path: string, opts: Parameters<typeof request>[3] = {}) => request(`http://127.0.0.1:${server.port}`, method, path, opts);
  const deliveryId = String(got[0]!.headers['x-ledger-delivery']);
  server.child.kill('SIGKILL');
  await server.exit;

  assert.equal(outbox(data), [{ id: deliveryId, status: 'pending', attempts: 0 }], 'the delivery outlived the process, not yet delivered');

  server = await serve(env);
  cleanup.push(() => server.child.kill('SIGKILL'));
  await until('the delivery after the restart', () => got.length === 2);
  const again = got[1]!;
  assert.is(again.headers['x-ledger-delivery'], deliveryId, 'the same delivery id: receivers can deduplicate');
  assert.is(again.body, got[0]!.body, 'the same body');
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(again.headers['x-ledger-signature']))!;
  assert.ok(timingSafeEqual(createHmac('sha256', secret).update(`${m[1]}.${again.body}`).digest(), Buffer.from(m[2]!, 'hex')), 'signed with the secret');
  const event = JSON.parse(again.body);
  assert.equal([event.type, event.ledgerId, event.data.contact.company, event.data.change.to.company], ['contact.job_changed', ledgerId, 'Globex', 'Globex']);

  const token = await passwordToken(call, EMAIL, PASSWORD);
  const d = await until('the delivery recorded', async () => {
    const x = (await call('GET', `${LEDGER}/orgs/${orgId}/webhooks/${hookId}/deliveries/${deliveryId}`, { token })).body;
    return x.status === 'delivered' && x;
  });
  assert.equal([d.attempts, d.responseStatus], [1, 200]);
  assert.is(got.length, 2, 'delivered once more, not more');

  server.child.kill('SIGTERM');
  assert.is(await server.exit, 0);
});

C('SIGTERM while a receiver hangs: the attempt is interrupted, the delivery handed back, exit 0 (D6)', async () => {
  const s = await deliveryInFlight();
  const deliveryId = String(s.got[0]!.headers['x-ledger-delivery']);
  s.server.child.kill('SIGTERM');
  assert.is(await s.server.exit, 0, 'the shutdown does not wait for the 120 s deadline');
  assert.equal(outbox(s.data), [{ id: deliveryId, status: 'pending', attempts: 0 }], 'not counted as an attempt; due again at the next start');
});

C.run();
