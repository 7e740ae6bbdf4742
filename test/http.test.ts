// The HTTP layer: problem+json for every failure (RELIABILITY.md I7), input hygiene (I1, I6),
// request ids, security headers, CORS and the OpenAPI documents (SPEC §2).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Router } from '@koa/router';
import { request as httpRequest } from 'node:http';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { compareExactTimes, isoZ, parseExactTimestamp, parseTimestamp } from '../src/clock.ts';
import { invalidUtf8At } from '../src/utf8.ts';
import { OFF_THREAD_BYTES } from '../src/http/json-parser-thread.ts';
import { NICE } from '../src/thread-priority.ts';
import { toAppError } from '../src/http/problem.ts';
import { ApiRouter, checkAnswer, checkErrorStatus, type RouteSpec, type RouterDeps } from '../src/http/route.ts';
import Koa from 'koa';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { AppError } from '../src/errors.ts';
import { z } from 'zod';
import { prng } from '../scripts/prng.ts';
import { createLedger, csvForm, expectStatus, ID, LEDGER, ledgerPath, PASSWORD, seedWorld, signInRoot, startApp, threadNice, threadNices, type TestApp, type World } from './helpers.ts';

const H = suite<{ t: TestApp; w: World }>('problem+json everywhere (I7)');
H.before(async (ctx) => {
  // test-only routes that fail the ways production code can
  const r = new Router();
  r.get('/test-only/boom', () => {
    throw new Error('SELECT secret FROM users at src/x.ts:1 node_modules/');
  });
  r.get('/test-only/busy', () => {
    throw Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
  });
  r.get('/test-only/full', () => {
    throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
  });
  ctx.t = await startApp({ config: { maxJsonBytes: 4096, loginMaxFailuresPerAccount: 2 }, extend: (app) => app.use(r.routes()) });
  ctx.w = await seedWorld(ctx.t);
});
H.after(async (ctx) => ctx.t.close());

H('a table of triggers: each answers problem+json with status, code, title, message and a request id', async ({ t, w }) => {
  const big = { name: 'x'.repeat(5000) };
  const cases: [string, string, string, Parameters<TestApp['call']>[2], number, string][] = [
    ['unknown route', 'GET', '/api/identity/v1/nope', {}, 404, 'route_not_found'],
    ['unknown route outside the APIs', 'POST', '/nope', {}, 404, 'route_not_found'],
    ['missing file outside the APIs', 'GET', '/nope.js', {}, 404, 'route_not_found'],
    ['wrong method', 'PUT', `${ID}/orgs`, { token: w.root }, 405, 'method_not_allowed'],
    ['body over the limit', 'POST', `${ID}/orgs`, { token: w.root, body: big }, 413, 'payload_too_large'],
    ['wrong media type', 'POST', `${ID}/orgs`, { token: w.root, raw: 'name=x', headers: { 'content-type': 'text/plain' } }, 415, 'unsupported_media_type'],
    ['malformed JSON', 'POST', `${ID}/orgs`, { token: w.root, raw: '{"name":', headers: { 'content-type': 'application/json' } }, 400, 'malformed_body'],
    ['validation', 'POST', `${ID}/orgs`, { token: w.root, body: { name: '' } }, 422, 'validation_failed'],
    // no body where one is needed is a malformed request, not a missing field (a tester's case: 422 "name is required")
    ['empty body', 'POST', `${ID}/orgs`, { token: w.root, raw: '', headers: { 'content-type': 'application/json' } }, 400, 'malformed_body'],
    ['blank body', 'POST', `${ID}/orgs`, { token: w.root, raw: ' \r\n', headers: { 'content-type': 'application/json' } }, 400, 'malformed_body'],
    ['blank contact', 'POST', `${LEDGER}/orgs/${w.orgId}/ledgers/l_00000000000000000000000000/contacts`, { token: w.root, raw: '\n', headers: { 'content-type': 'application/json' } }, 400, 'malformed_body'],
    ['no token', 'GET', `${ID}/orgs`, {}, 401, 'invalid_token'],
    ['role missing', 'GET', `${ID}/orgs/${w.orgId}/audit`, { token: w.tokens.viewer }, 403, 'forbidden'],
    ['not found', 'GET', `${ID}/users/u_00000000000000000000000000`, { token: w.root }, 404, 'user_not_found'],
    ['conflict', 'POST', `${ID}/users`, { token: w.root, body: { email: 'viewer@a.test', password: PASSWORD } }, 409, 'email_taken'],
    ['unknown query parameter', 'GET', `${ID}/orgs?sort=name`, { token: w.root }, 400, 'invalid_parameter'],
    ['server error', 'GET', '/test-only/boom', {}, 500, 'internal_error'],
    ['database busy', 'GET', '/test-only/busy', {}, 503, 'database_busy'],
    ['disk full', 'GET', '/test-only/full', {}, 507, 'insufficient_storage'],
  ];
  for (const [what, method, path, opts, status, code] of cases) {
    const r = await t.call(method, path, opts);
    assert.is(r.status, status, `${what}: ${r.text}`);
    assert.match(r.headers.get('content-type') ?? '', /^application\/problem\+json/, what);
    assert.is(r.body.status, status, what);
    assert.is(r.body.code, code, what);
    assert.is(r.body.type, 'about:blank', what);
    assert.type(r.body.title, 'string', what);
    assert.is(r.body.message, r.body.detail, what);
    assert.is(r.body.requestId, r.headers.get('x-request-id'), what);
    assert.not.match(r.text, /at .*\.ts|SQLITE_|SELECT |node_modules\//, `${what} leaks internals`);
  }
  const busy = await t.call('GET', '/test-only/busy');
  assert.is(busy.headers.get('retry-after'), '1');
  // RELIABILITY.md L0: /metrics counts them (the table's one and this one)
  const metrics = (await t.call('GET', '/metrics', { token: w.root })).text;
  assert.match(metrics, /^contact_ledger_sqlite_busy_total\{where="request"\} 2$/m);
  assert.match(metrics, /^contact_ledger_sqlite_busy_total\{where="job"\} 0$/m);
  const wrong = await t.call('PUT', `${ID}/orgs`, { token: w.root });
  assert.match(wrong.headers.get('allow') ?? '', /GET/);
  const logs = t.logs.join('\n');
  assert.ok(logs.includes('"msg":"request failed"'), 'a 500 is logged with its cause');
  // a method the server does not know is the client's doing: its access log line is all (a
  // tester's case: any anonymous client could fill the error log with stack traces); fetch will
  // not send TRACE, node:http does
  const trace = await new Promise<{ status?: number; type?: string; body: string }>((resolve, reject) => {
    const req = httpRequest(`${t.base}${ID}/users`, { method: 'TRACE' }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c: string) => (body += c)).on('end', () => resolve({ status: res.statusCode, type: res.headers['content-type'], body }));
    });
    req.on('error', reject).end();
  });
  assert.is(trace.status, 501);
  assert.match(trace.type ?? '', /^application\/problem\+json/);
  assert.is(JSON.parse(trace.body).code, 'not_implemented');
  const failed = t.logs.filter((l) => l.includes('"msg":"request failed"'));
  assert.ok(failed.length >= 1 && failed.every((l) => !l.includes('"method":"TRACE"')), failed.join('\n'));
});

H('a JSON body of exactly MAX_JSON_BYTES is read; one byte more is 413 — sized by Content-Length or sent chunked (I1)', async ({ t, w }) => {
  const LIMIT = 4096; // maxJsonBytes of this suite
  // A valid request padded with whitespace (valid JSON) to an exact number of bytes; the name's
  // non-ASCII letters make bytes and characters differ.
  const exactly = (bytes: number, name: string) => {
    const json = JSON.stringify({ name });
    const out = json + ' '.repeat(bytes - Buffer.byteLength(json));
    assert.is(Buffer.byteLength(out), bytes);
    return out;
  };
  const chunked = (text: string) => {
    const bytes = Buffer.from(text);
    return new ReadableStream({
      start(c) {
        for (let i = 0; i < bytes.length; i += 1000) c.enqueue(bytes.subarray(i, i + 1000));
        c.close();
      },
    });
  };
  const send = async (body: string, how: 'length' | 'chunked') => {
    const res = await fetch(`${t.base}${ID}/orgs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${w.root}`, 'content-type': 'application/json' },
      body: how === 'length' ? body : chunked(body),
      ...(how === 'chunked' ? { duplex: 'half' } : {}),
    } as RequestInit);
    return { status: res.status, body: (await res.json()) as any };
  };
  for (const how of ['length', 'chunked'] as const) {
    const at = await send(exactly(LIMIT, `Zoë Ørsted ${how}`), how);
    assert.is(at.status, 201, `${LIMIT} bytes (${how}): ${JSON.stringify(at.body)}`);
    assert.is(at.body.name, `Zoë Ørsted ${how}`);
    const over = await send(exactly(LIMIT + 1, `Zoë Ørsted ${how} over`), how);
    assert.is(over.status, 413, `${LIMIT + 1} bytes (${how}): ${JSON.stringify(over.body)}`);
    assert.is(over.body.code, 'payload_too_large');
  }
  const names = (await t.call('GET', `${ID}/orgs?limit=1000`, { token: w.root })).body.orgs.map((o: any) => o.name);
  assert.not.ok(names.some((n: string) => n.endsWith(' over')), 'nothing of a refused body was stored');
});

H('429 throttled answers carry Retry-After', async ({ t }) => {
  for (let i = 0; i < 2; i++) await t.call('POST', `${ID}/session`, { body: { email: 'editor@a.test', password: 'not the password' } });
  const r = await t.call('POST', `${ID}/session`, { body: { email: 'editor@a.test', password: 'not the password' } });
  assert.is(r.status, 429);
  assert.is(r.body.code, 'too_many_requests');
  assert.ok(Number(r.headers.get('retry-after')) > 0);
});

H('validation errors list each field with a path', async ({ t, w }) => {
  const r = await t.call('POST', `${ID}/orgs/${w.orgId}/members`, { token: w.tokens.admin, body: { email: 'not-an-email', role: 'boss', extra: 1 } });
  assert.is(r.status, 422);
  const paths = r.body.errors.map((e: any) => e.path).sort();
  assert.equal(paths, ['email', 'extra', 'role']);
  assert.match(r.body.message, /email/);
});

H.run();

const I = suite<{ t: TestApp; w: World }>('input hygiene (I6) and request ids');
I.before(async (ctx) => {
  ctx.t = await startApp();
  ctx.w = await seedWorld(ctx.t);
});
I.after(async (ctx) => ctx.t.close());

I('__proto__ in a JSON body → 400 and nothing is polluted', async ({ t, w }) => {
  const r = await t.call('POST', `${ID}/orgs`, { token: w.root, raw: '{"name":"x","__proto__":{"role":"owner"}}', headers: { 'content-type': 'application/json' } });
  assert.is(r.status, 400);
  assert.is(({} as any).role, undefined);
  const c = await t.call('POST', `${ID}/orgs`, { token: w.root, raw: '{"name":"x","constructor":{"prototype":{"role":"owner"}}}', headers: { 'content-type': 'application/json' } });
  assert.ok(c.status === 400 || c.status === 422, c.text);
  assert.is(({} as any).role, undefined);
});

I('a full disk met writing a file (a feed body, an upload) is a 507, as a full database is, not a 500', () => {
  for (const code of ['ENOSPC', 'EDQUOT', 'SQLITE_FULL']) {
    const e = toAppError(Object.assign(new Error(`write failed: ${code}`), { code }));
    assert.equal([e.status, e.code], [507, 'insufficient_storage'], code);
  }
  assert.is(toAppError(Object.assign(new Error('x'), { code: 'EACCES' })).status, 500);
});

I('an object with more than 1000 members → 400 before any validation (sign-in too, and inside a contacts batch); errors[] lists at most 100 items', async ({ t, w }) => {
  const wide = (n: number) => `{${Array.from({ length: n }, (_, i) => `"${i.toString(36)}":0`).join(',')}}`;
  const contacts = `${ledgerPath(w.orgId, await createLedger(t, w.tokens.editor, w.orgId, 'wide'))}/contacts`;
  for (const [what, path, body, token] of [
    ['sign-in', `${ID}/session`, wide(100_000), undefined],
    ['an organization', `${ID}/orgs`, wide(1001), w.root],
    ['a contact of a batch', contacts, `{"contacts":[${wide(50_000)}]}`, w.tokens.editor],
  ] as const) {
    const r = await t.call('POST', path, { ...(token ? { token } : {}), raw: body, headers: { 'content-type': 'application/json' } });
    expectStatus(r, 400, what);
    assert.equal([r.body.code, r.body.message], ['malformed_body', 'The request body holds an object with more than 1000 members; no object of this API has that many.'], what);
  }
  // 1000 members are JSON like any other: the schema names the unknown ones, the first 100 of them
  const r = await t.call('POST', `${ID}/orgs`, { token: w.root, raw: wide(1000), headers: { 'content-type': 'application/json' } });
  expectStatus(r, 422);
  assert.is(r.body.errors.length, 101);
  assert.equal(r.body.errors[100], { path: 'body', message: 'and 901 more errors' }, '1000 unknown fields and the missing name');
});

I('JSON nested deeper than 64 levels → 400, also with __proto__ inside, also on the public sign-in route; a charset other than UTF-8 → 415', async ({ t, w }) => {
  const deep = (n: number, inner: string) => `{"a":${'['.repeat(n)}${inner}${']'.repeat(n)}}`;
  const cases: [string, string, string | undefined][] = [
    ['sign-in, __proto__ 200,000 levels down', `${ID}/session`, undefined],
    ['an organization, 65 levels', `${ID}/orgs`, w.root],
  ];
  for (const [what, path, token] of cases) {
    const body = what.includes('200,000') ? deep(200_000, '{"__proto__":1}') : deep(64, '1');
    const r = await t.call('POST', path, { ...(token ? { token } : {}), raw: body, headers: { 'content-type': 'application/json' } });
    expectStatus(r, 400, what);
    assert.match(r.body.message, /deeper than 64 levels/, what);
  }
  // a contacts batch (the exact-integer parse) nested deep, with and without a big integer in it
  const contacts = `${ledgerPath(w.orgId, await createLedger(t, w.tokens.editor, w.orgId, 'deep'))}/contacts`;
  for (const inner of ['1', '9007199254740993']) {
    const r = await t.call('POST', contacts, { token: w.tokens.editor, raw: `{"contacts":[${'['.repeat(200_000)}${inner}${']'.repeat(200_000)}]}`, headers: { 'content-type': 'application/json' } });
    expectStatus(r, 400, inner);
    assert.match(r.body.message, /deeper than 64 levels/, inner);
  }
  // 63 levels inside the object are fine as JSON (the schema has its say)
  expectStatus(await t.call('POST', `${ID}/orgs`, { token: w.root, raw: deep(63, '1'), headers: { 'content-type': 'application/json' } }), 422);
  for (const charset of ['iso-8859-1', 'utf-16']) {
    const r = await t.call('POST', `${ID}/orgs`, { token: w.root, raw: '{"name":"x"}', headers: { 'content-type': `application/json; charset=${charset}` } });
    expectStatus(r, 415, charset);
    assert.match(r.body.message, new RegExp(`UTF-8; charset=${charset} is not supported`));
  }
  expectStatus(await t.call('POST', `${ID}/orgs`, { token: w.root, raw: '{"name":"Charset Co"}', headers: { 'content-type': 'application/json; charset=UTF-8' } }), 201);
  // US-ASCII is UTF-8 too (a tester's client declared it)
  expectStatus(await t.call('POST', `${ID}/orgs`, { token: w.root, raw: '{"name":"Ascii Co"}', headers: { 'content-type': 'application/json; charset=us-ascii' } }), 201);
});

I('a body that is not valid UTF-8 → 400 naming the byte, never text with U+FFFD: JSON and form bodies, plain or compressed', async ({ t, w }) => {
  const json = (bytes: Buffer, headers: Record<string, string> = {}) => ({ token: w.root, raw: bytes, headers: { 'content-type': 'application/json', ...headers } });
  const before = (await t.call('GET', `${ID}/orgs?limit=1000`, { token: w.root })).body.orgs.length;
  const name = Buffer.concat([Buffer.from('{"name":"Bad'), Buffer.from([0xff]), Buffer.from('Name"}')]);
  for (const [what, opts] of [
    ['plain', json(name)],
    ['gzip', json(gzipSync(name), { 'content-encoding': 'gzip' })],
    ['br', json(brotliCompressSync(name), { 'content-encoding': 'br' })],
  ] as const) {
    const r = await t.call('POST', `${ID}/orgs`, opts);
    assert.is(r.status, 400, `${what}: ${r.text}`);
    assert.is(r.body.code, 'malformed_body');
    assert.is(r.body.message, `The request body is not valid UTF-8 (byte 13 of ${name.length}); send the text encoded as UTF-8.`, what);
  }
  for (const bad of [[0xc3, 0x28], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0xf4, 0x90, 0x80, 0x80], [0xc0, 0xaf]]) {
    const r = await t.call('POST', `${ID}/orgs`, json(Buffer.concat([Buffer.from('{"name":"x'), Buffer.from(bad), Buffer.from('"}')])));
    assert.is(r.status, 400, `${Buffer.from(bad).toString('hex')}: ${r.text}`);
  }
  assert.is((await t.call('GET', `${ID}/orgs?limit=1000`, { token: w.root })).body.orgs.length, before, 'nothing was created');
  // valid UTF-8 (with a byte order mark, and compressed) is read as before
  const ok = Buffer.from('\ufeff{"name":"Zoë 𝄞 Ørsted"}');
  expectStatus(await t.call('POST', `${ID}/orgs`, json(ok)), 201);
  expectStatus(await t.call('POST', `${ID}/orgs`, json(deflateSync(ok), { 'content-encoding': 'deflate' })), 201);
  const unknown = await t.call('POST', `${ID}/orgs`, json(ok, { 'content-encoding': 'compress' }));
  assert.is(unknown.status, 415, unknown.text);
  assert.match(unknown.body.message, /Content-Encoding "compress" is not supported.*gzip/);

  // Two different passwords used to be the same text: U+FFFD × 3 for both 0xff 0xfe 0xfd and 0x80 0x81 0x82.
  const replacement = `pass${'\ufffd'.repeat(3)}word`;
  expectStatus(await t.call('POST', `${ID}/users`, { token: w.root, body: { email: 'fffd@x.test', password: replacement } }), 201);
  const signIn = (password: Buffer) =>
    t.call('POST', `${ID}/session`, { raw: Buffer.concat([Buffer.from('{"grantType":"password","email":"fffd@x.test","password":"'), password, Buffer.from('"}')]), headers: { 'content-type': 'application/json' } });
  for (const bytes of [[0xff, 0xfe, 0xfd], [0x80, 0x81, 0x82]]) {
    const r = await signIn(Buffer.concat([Buffer.from('pass'), Buffer.from(bytes), Buffer.from('word')]));
    assert.is(r.status, 400, `${Buffer.from(bytes).toString('hex')}: ${r.text}`);
    assert.is(r.body.code, 'malformed_body');
    assert.is(r.body.accessToken, undefined);
  }
  expectStatus(await signIn(Buffer.from(replacement)), 200, 'the password as it was set');
  // form bodies: raw bytes and percent-escapes alike must make UTF-8
  const form = (body: string | Buffer) => t.call('POST', '/auth/v1/session', { raw: body, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  const rawForm = await form(Buffer.concat([Buffer.from('username=fffd%40x.test&password=pass'), Buffer.from([0x80, 0x81, 0x82]), Buffer.from('word')]));
  assert.is(rawForm.status, 400, rawForm.text);
  assert.match(rawForm.body.message, /not valid UTF-8/);
  const escaped = await form('username=fffd%40x.test&password=pass%FF%FE%FDword');
  assert.is(escaped.status, 400, escaped.text);
  assert.match(escaped.body.message, /percent-encoded form field is not valid UTF-8/);
  const good = await form(`username=fffd%40x.test&password=${encodeURIComponent(replacement)}`);
  expectStatus(good, 200, 'the same password, percent-encoded');
  assert.type(good.body.access_token, 'string');
});

I('half a UTF-16 surrogate pair escaped alone (\\ud800) → 400, never stored as U+FFFD; whole pairs and an escaped backslash are text', async ({ t, w }) => {
  const ledgerId = await createLedger(t, w.tokens.editor, w.orgId, 'surrogates');
  const raw = (text: string) => ({ token: w.tokens.editor, raw: text, headers: { 'content-type': 'application/json' } });
  for (const [method, path, text] of [
    ['POST', `${ledgerPath(w.orgId, ledgerId)}/contacts`, '{"name":"Lone \\ud800 Sur","company":"Co"}'],
    ['PATCH', ledgerPath(w.orgId, ledgerId), '{"name":"Led \\udc00"}'],
    ['PATCH', ledgerPath(w.orgId, ledgerId), '{"\\ud800name":"x"}'],
  ] as const) {
    const r = await t.call(method, path, raw(text));
    expectStatus(r, 400, text);
    assert.equal([r.body.code, /surrogate pair/.test(r.body.message)], ['malformed_body', true], r.text);
  }
  // a NUL in a name or label is refused as in contact fields (exports and C tools cut text at it)
  for (const [path, body] of [[ledgerPath(w.orgId, ledgerId), { name: 'a\0b' }], [ledgerPath(w.orgId, ledgerId), { description: 'x\0' }], [`${ID}/orgs/${w.orgId}`, { name: 'Org\0' }]] as const) {
    const r = await t.call('PATCH', path, { token: w.root, body });
    expectStatus(r, 422, JSON.stringify(body));
    assert.match(r.body.errors[0].message, /NUL/);
  }
  const ok = await t.call('PATCH', ledgerPath(w.orgId, ledgerId), raw('{"name":"Smile \\ud83d\\ude00 and \\\\ud800"}'));
  expectStatus(ok, 200);
  assert.is(ok.body.name, 'Smile 😀 and \\ud800');
});

I('valid JSON of the wrong shape (a string, number, null, true) → 422 saying what shape is expected, like an array; broken JSON → 400', async ({ t, w }) => {
  const ledgerId = await createLedger(t, w.tokens.editor, w.orgId, 'shapes');
  const json = (raw: string) => ({ token: w.root, raw, headers: { 'content-type': 'application/json' } });
  for (const raw of ['"str"', '42', 'null', 'true', '[]', ' [{"name":"A","company":"B"}] ']) {
    const contacts = await t.call('POST', `${ledgerPath(w.orgId, ledgerId)}/contacts`, json(raw));
    assert.is(contacts.status, 422, `contacts ${raw}: ${contacts.text}`);
    assert.is(contacts.body.code, 'validation_failed');
    assert.equal(contacts.body.errors, [{ path: 'body', message: 'send one contact object or {"contacts":[…]}' }], raw);
  }
  for (const [raw, kind] of [['"str"', 'a string'], ['42', 'a number'], ['null', 'null'], ['true', 'a boolean'], ['[{"name":"x"}]', 'an array']]) {
    for (const [method, path] of [['POST', `${ID}/orgs`], ['POST', `${ID}/session`], ['PATCH', `${ID}/users/me`], ['POST', `${LEDGER}/orgs/${w.orgId}/webhooks`]]) {
      const r = await t.call(method!, path!, json(raw!));
      // the token endpoint answers RFC 6749's 400 invalid_request where the other routes answer 422
      const session = path === `${ID}/session`;
      assert.is(r.status, session ? 400 : 422, `${method} ${path} ${raw}: ${r.text}`);
      assert.is(r.body.message, `Invalid request body: body: must be a JSON object, not ${kind}.`, `${path} ${raw}`);
      assert.is(r.body.error, session ? 'invalid_request' : undefined, `${path} ${raw}`);
    }
  }
  // a key given twice would be the last one silently (JSON.parse): refused, naming its path
  for (const [method, path, raw, where] of [
    ['POST', `${ID}/orgs`, '{"name":"Acme","name":"Evil"}', 'name'],
    ['POST', `${LEDGER}/orgs/${w.orgId}/webhooks`, '{"url":"http://127.0.0.1:9/x","events":["job.changed"],"ledgerIds":[{"a":1,"a":2}]}', 'ledgerIds.0.a'],
    ['POST', `${ID}/session`, '{"email":"viewer@a.test","password":"x","password":"y"}', 'password'],
    // runs of spaces (indentation, padding) around and between the brackets and commas that give the path
    ['POST', `${ID}/orgs`, `{  "name"  :  "Acme"${' '.repeat(5000)},   "name" :"Evil"}   `, 'name'],
    ['POST', `${LEDGER}/orgs/${w.orgId}/webhooks`, `{ "url" : "http://127.0.0.1:9/x" , "events" : [ "job.changed" ] , "ledgerIds" : [  {  "a" : 1  }  ,  [  ] ,  {"b":1,    "b"  :2}  ] }`, 'ledgerIds.2.b'],
  ] as const) {
    const r = await t.call(method, path, json(raw));
    assert.is(r.status, path === `${ID}/session` ? 400 : 422, `${raw}: ${r.text}`);
    assert.equal(r.body.errors, [{ path: where, message: 'is given more than once' }], raw);
  }
  const escapedTwice = await t.call('POST', `${ID}/orgs`, json('{"name":"A","n\\u0061me":"B"}'));
  assert.is(escapedTwice.status, 422, 'the same key spelt with an escape');
  const lookalikes = await t.call('POST', `${ID}/orgs`, json('{"name":"{\\"name\\":1,\\"name\\":2}"}'));
  assert.is(lookalikes.status, 201, `keys inside a string value are text: ${lookalikes.text}`);
  for (const raw of ['"str', '{"name":"x",}', 'nul', '{"name":"x"} {}']) {
    const r = await t.call('POST', `${ID}/orgs`, json(raw));
    assert.is(r.status, 400, `${raw}: ${r.text}`);
    assert.match(r.body.message, /^The request body is not valid JSON/);
  }
});

I('an empty PATCH changes nothing and says what it may give (422), on every resource alike', async ({ t, w }) => {
  const org = await t.call('GET', `${ID}/orgs/${w.orgId}`, { token: w.tokens.admin });
  for (const [path, token, says] of [
    [`${ID}/orgs/${w.orgId}`, w.tokens.admin, /name: is required/],
    [`${ID}/users/me`, w.tokens.viewer, /give at least one of name, password/],
    [`${ID}/users/${w.users.viewer}`, w.root, /give at least one of name, superuser, disabled, password/],
  ] as const) {
    const r = await t.call('PATCH', path, { token, body: {} });
    assert.is(r.status, 422, `${path}: ${r.text}`);
    assert.match(r.body.message, says, path);
  }
  assert.is((await t.call('GET', `${ID}/orgs/${w.orgId}`, { token: w.tokens.admin })).body.updatedAt, org.body.updatedAt, 'nothing was written');
});

I('repeated query parameters → 400; wrong types → 422', async ({ t, w }) => {
  const r = await t.call('GET', `${ID}/orgs?limit=1&limit=2`, { token: w.root });
  assert.is(r.status, 400);
  assert.equal(r.body.errors, [{ path: 'limit', message: 'is given more than once' }]);
  for (const bad of ['-1', '0', '1001', '1e9', 'ten', '']) {
    const x = await t.call('GET', `${ID}/orgs?limit=${bad}`, { token: w.root });
    assert.is(x.status, 400, `limit=${bad}`);
    assert.is(x.body.errors[0].path, 'limit');
  }
  const typed = await t.call('POST', `${ID}/users`, { token: w.root, body: { email: 'x@y.test', password: PASSWORD, superuser: 'yes' } });
  assert.is(typed.status, 422);
  assert.is(typed.body.errors[0].path, 'superuser');
});

I('JSON bodies: UTF-8 with a Content-Length in bytes, JSON or problem+json type, HEAD without a body', async ({ t, w }) => {
  const made = await t.call('POST', `${ID}/orgs`, { token: w.root, body: { name: 'Zoë Łukasz Østergaard' } });
  expectStatus(made, 201);
  const r = await t.call('GET', `${ID}/orgs/${made.body.id}`, { token: w.root });
  expectStatus(r, 200);
  assert.is(r.body.name, 'Zoë Łukasz Østergaard');
  assert.is(r.headers.get('content-type'), 'application/json; charset=utf-8');
  assert.is(Number(r.headers.get('content-length')), Buffer.byteLength(r.text));
  const p = await t.call('GET', `${ID}/orgs/o_nope`, { token: w.root });
  assert.is(p.headers.get('content-type'), 'application/problem+json');
  assert.is(Number(p.headers.get('content-length')), Buffer.byteLength(p.text));
  const head = await fetch(`${t.base}${ID}/orgs/${made.body.id}`, { method: 'HEAD', headers: { authorization: `Bearer ${w.root}` } });
  assert.is(head.status, 200);
  assert.is(head.headers.get('content-length'), r.headers.get('content-length'));
  assert.is(await head.text(), '');
});

I('routing: each service answers only under its prefix, case-insensitively; wrong methods → 405 with Allow', async ({ t, w }) => {
  expectStatus(await t.call('GET', `/API/Identity/V1/orgs`, { token: w.root }), 200);
  const ledgers = await t.call('GET', `/api/LEDGER/v1/orgs/${w.orgId}/ledgers`, { token: w.root });
  expectStatus(ledgers, 200);
  const wrong = await t.call('PUT', `/api/ledger/v1/orgs/${w.orgId}/ledgers`, { token: w.root });
  assert.is(wrong.status, 405);
  assert.equal(wrong.headers.get('allow')?.split(', ').sort(), ['GET', 'HEAD', 'POST']);
  assert.is((await t.call('GET', '/api/ledger/v1x/orgs', { token: w.root })).status, 404);
  assert.is((await t.call('GET', `/api/identity/v1/orgs/${w.orgId}/ledgers`, { token: w.root })).status, 404, 'a ledger path under the identity prefix');
});

I('a path a route names literally takes only its own methods: 405 with its Allow, not a lookup of an id called "preview"', async ({ t, w }) => {
  const ledger = (await t.call('POST', `${LEDGER}/orgs/${w.orgId}/ledgers`, { token: w.root, body: { name: 'literal paths' } })).body.id;
  const base = `${LEDGER}/orgs/${w.orgId}/ledgers/${ledger}`;
  const cases: [string, string, string[]][] = [
    ['GET', `${base}/imports/preview`, ['POST']],
    ['GET', `${base}/contacts/bulk_delete`, ['POST']],
    ['DELETE', `${base}/contacts/download`, ['GET', 'HEAD']],
    ['DELETE', `${base}/contacts/IMPORTS`, ['GET', 'HEAD', 'POST']],
    // methods no route of the path takes: the router's own 405, with the literal route's Allow only
    // (not also the methods of …/:contactId or …/:importId, refused on these paths)
    ['POST', `${base}/contacts/download`, ['GET', 'HEAD']],
    ['PUT', `${base}/contacts/bulk_delete`, ['POST']],
    ['PUT', `${base}/imports/preview`, ['POST']],
    ['PATCH', `${base}/imports/preview`, ['POST']],
  ];
  for (const [method, path, allow] of cases) {
    const r = await t.call(method, path, { token: w.root });
    expectStatus(r, 405, `${method} ${path}`);
    assert.is(r.body.code, 'method_not_allowed');
    assert.equal(r.headers.get('allow')?.split(', ').sort(), allow, path);
    assert.match(r.headers.get('content-type') ?? '', /application\/problem\+json/);
  }
  // the routes with parameters still answer for everything else, and the literal ones for their own methods
  assert.is((await t.call('GET', `${base}/imports/imp_00000000000000000000000000`, { token: w.root })).status, 404);
  assert.is((await t.call('GET', `${base}/contacts/c_00000000000000000000000000`, { token: w.root })).status, 404);
  expectStatus(await t.call('GET', `${base}/contacts/download`, { token: w.root }), 200);
  expectStatus(await t.call('GET', `${ID}/users/me`, { token: w.root }), 200);
  // without a token the literal path is still refused for its method first, as any 405
  assert.is((await t.call('GET', `${base}/imports/preview`)).status, 405);
});

I('X-Request-Id: a valid incoming id is echoed, a hostile one replaced', async ({ t }) => {
  const a = await t.call('GET', '/healthz', { headers: { 'x-request-id': 'client-abc.123' } });
  assert.is(a.headers.get('x-request-id'), 'client-abc.123');
  const b = await t.call('GET', '/healthz', { headers: { 'x-request-id': 'bad id <script>' } });
  assert.match(b.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
  assert.ok(t.logs.some((l) => l.includes('"requestId":"client-abc.123"')), 'logs carry the request id');
});

I('security headers on API responses; no CORS unless configured', async ({ t, w }) => {
  const r = await t.call('GET', `${ID}/orgs`, { token: w.root, headers: { origin: 'http://evil.test' } });
  assert.is(r.headers.get('x-content-type-options'), 'nosniff');
  assert.is(r.headers.get('cache-control'), 'no-store');
  assert.match(r.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
  assert.is(r.headers.get('referrer-policy'), 'no-referrer');
  assert.is(r.headers.get('access-control-allow-origin'), null);
  // the routes match case-insensitively, and so do the headers meant for them
  const upper = await t.call('GET', `${ID.toUpperCase()}/orgs`, { token: w.root });
  assert.is(upper.status, 200);
  assert.is(upper.headers.get('cache-control'), 'no-store');
  assert.match(upper.headers.get('content-security-policy') ?? '', /default-src 'none'/);
});

I("the tokens of the auth alias are never cacheable, at any spelling the route takes (a trailing slash, another case) and under another AUTH_URL (a reviewer's case)", async () => {
  const t = await startApp({ env: { AUTH_URL: '/Login' } });
  try {
    await seedWorld(t);
    for (const path of ['/login/v1/session', '/login/v1/session/', '/LOGIN/V1/SESSION/']) {
      const r = await t.call('POST', path, { form: { username: 'viewer@a.test', password: PASSWORD } });
      expectStatus(r, 200, path);
      assert.ok(r.body.access_token, path);
      assert.is(r.headers.get('cache-control'), 'no-store', path);
      assert.match(r.headers.get('content-security-policy') ?? '', /^default-src 'none'/, path);
    }
    const unknown = await t.call('GET', '/login/v1/nothing');
    assert.equal([unknown.status, unknown.headers.get('cache-control')], [404, 'no-store'], 'the rest of the alias is API too');
  } finally {
    await t.close();
  }
});

I.run();

const L = suite<{ t: TestApp; w: World; ledgerId: string }>('large JSON bodies are parsed on their own thread (L2)');
L.before(async (ctx) => {
  ctx.t = await startApp();
  ctx.w = await seedWorld(ctx.t);
  ctx.ledgerId = await createLedger(ctx.t, ctx.w.root, ctx.w.orgId, 'Large bodies');
});
L.after(async (ctx) => ctx.t.close());

L('a body of OFF_THREAD_BYTES or more gets, from the thread, the answer the same body gets in place: values, 400s, 422s, exact integers', async ({ t, w, ledgerId }) => {
  const contacts = `${ledgerPath(w.orgId, ledgerId)}/contacts`;
  const cases: [string, string, string | Buffer][] = [
    ['POST', `${ID}/orgs`, '{"name":"Parsed \\u00e9 \u00e9lan"}'],
    ['POST', `${ID}/orgs`, '{"name":"Acme","name":"Evil"}'],
    ['POST', `${ID}/orgs`, '{"name":"x","__proto__":{"role":"owner"}}'],
    ['POST', `${ID}/orgs`, '{"name":"half \\ud800 a pair"}'],
    ['POST', `${ID}/orgs`, '{"name":\n"x",}'],
    ['POST', `${ID}/orgs`, `{"name":${'['.repeat(70)}${']'.repeat(70)}}`],
    ['POST', `${ID}/orgs`, Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')])],
    ['POST', contacts, '{"name":"One","company":"X","referenceId":18446744073709551617}'],
    ['POST', contacts, '{"name":"One","company":"X","referenceId":"R-1"}'],
    ['POST', contacts, '{"contacts":[{"name":"Two","company":"Y"},{"name":"Three","company":"Z","email":"x"}]}'],
  ];
  const answer = async (method: string, path: string, raw: string | Buffer) => {
    const r = await t.call(method, path, { token: w.root, raw, headers: { 'content-type': 'application/json' } });
    const { requestId: _, id: __, ...rest } = (r.body ?? {}) as Record<string, unknown>;
    // the size of the body, named in the UTF-8 problem, is the one thing padding changes
    return { status: r.status, body: JSON.parse(JSON.stringify(rest).replace(/ of \d+\)/g, ' of N)')), location: (r.headers.get('location') ?? '').replace(/[^/]+$/, '…') };
  };
  // the same text, padded with whitespace (legal around any JSON value) to the size that goes to the thread
  const padded = (raw: string | Buffer) => Buffer.concat([Buffer.from(raw), Buffer.from(' \n\t'.repeat(OFF_THREAD_BYTES / 3 + 1))]);
  const before = t.rt.jsonParser.parsed();
  for (const [method, path, raw] of cases) {
    const small = await answer(method, path, raw);
    const large = await answer(method, path, padded(raw));
    assert.ok(small.status !== 500, `${raw}: ${JSON.stringify(small)}`);
    assert.equal(large, small, String(raw));
  }
  assert.is(t.rt.jsonParser.parsed() - before, cases.length, 'every padded body went to the thread, no small one');
  // the thread runs below the event loop's priority
  assert.ok(threadNices().includes(NICE.largeBodyParsing), JSON.stringify(threadNices()));
  assert.is(threadNice(process.pid), 0, 'the event loop keeps the normal priority');
  // what was created from a padded body is what the text said
  const orgs = (await t.call('GET', `${ID}/orgs`, { token: w.root })).body.orgs.map((o: { name: string }) => o.name);
  assert.is(orgs.filter((n: string) => n === 'Parsed é élan').length, 2, JSON.stringify(orgs));
});

L.run();

const C = suite<{ t: TestApp }>('CORS for configured origins');
C.before(async (ctx) => {
  ctx.t = await startApp({ config: { corsOrigins: ['https://crm.example.com'] } });
});
C.after(async (ctx) => ctx.t.close());

C('preflight and simple requests from an allowed origin get CORS headers; others do not', async ({ t }) => {
  const pre = await t.call('OPTIONS', `${ID}/orgs`, { headers: { origin: 'https://crm.example.com', 'access-control-request-method': 'POST' } });
  assert.is(pre.status, 204);
  assert.is(pre.headers.get('access-control-allow-origin'), 'https://crm.example.com');
  assert.match(pre.headers.get('access-control-allow-headers') ?? '', /Authorization/);
  const other = await t.call('OPTIONS', `${ID}/orgs`, { headers: { origin: 'https://evil.example.com', 'access-control-request-method': 'POST' } });
  assert.is(other.headers.get('access-control-allow-origin'), null);
});

C.run();

const D = suite<{ t: TestApp }>('OpenAPI 3.1 documents');
D.before(async (ctx) => {
  ctx.t = await startApp();
});
D.after(async (ctx) => ctx.t.close());

D('each service documents exactly its routes, with the validating schemas', async ({ t }) => {
  for (const [prefix, router] of [[ID, t.routers[0]!], ['/api/ledger/v1', t.routers[2]!]] as const) {
    const r = await t.call('GET', `${prefix}/openapi.json`);
    expectStatus(r, 200);
    assert.is(r.body.openapi, '3.1.0');
    assert.is(r.body.servers[0].url, `http://ledger.test${prefix}`);
    const documented = Object.entries(r.body.paths as Record<string, Record<string, unknown>>).flatMap(([p, ops]) =>
      Object.keys(ops).filter((m) => m !== 'servers').map((m) => `${m.toUpperCase()} ${p}`),
    );
    const routes = router.routes.map((x) => `${x.method.toUpperCase()} ${x.path.replace(/:(\w+)/g, '{$1}')}`);
    for (const route of routes) assert.ok(documented.includes(route), `${route} is not documented`);
  }
  const doc = (await t.call('GET', `${ID}/openapi.json`)).body;
  const newOrg = doc.paths['/orgs'].post.requestBody.content['application/json'].schema;
  assert.equal(newOrg.required, ['name']);
  assert.is(newOrg.additionalProperties, false);
  assert.is(newOrg.properties.name.maxLength, 256);
  const session = doc.paths['/session'].post;
  assert.ok(session.requestBody.content['application/x-www-form-urlencoded']);
  assert.equal(session.security, []);
  assert.is(doc.paths['/auth/v1/session'].servers[0].url, 'http://ledger.test', 'the auth alias is documented');
  const listOrgs = doc.paths['/orgs'].get.parameters.map((p: any) => p.name);
  assert.equal(listOrgs.sort(), ['cursor', 'limit']);
});

D("an AUTH_URL on another host is the auth alias's server in the document, not BASE_URL: a client built from it called the wrong host (a contract tester's case)", async () => {
  const t = await startApp({ env: { AUTH_URL: 'https://user:pw@login.example.com/sso/?q=1' } });
  try {
    const doc = (await t.call('GET', `${ID}/openapi.json`)).body;
    assert.equal(doc.paths['/sso/v1/session'].servers, [{ url: 'https://login.example.com' }]);
    assert.is(doc.servers[0].url, `http://ledger.test${ID}`, 'the rest stays at BASE_URL');
    await seedWorld(t);
    expectStatus(await t.call('POST', '/sso/v1/session', { form: { username: 'viewer@a.test', password: PASSWORD } }), 200, 'served at its path');
  } finally {
    await t.close();
  }
});

D('every route documents the statuses its kind answers: 413 and 415, 503 with Retry-After for a write and for a read with a "since" (a tester found 413 and 415 undocumented)', async ({ t }) => {
  const L = '/orgs/{orgId}/ledgers/{ledgerId}';
  for (const prefix of [ID, LEDGER]) {
    const doc = (await t.call('GET', `${prefix}/openapi.json`)).body;
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, op] of Object.entries(ops)) {
        if (method === 'servers') continue;
        const what = `${method.toUpperCase()} ${prefix}${path}`;
        for (const status of ['413', '415']) assert.ok(op.responses[status], `${what}: ${status}`); // a body sent to a route without one is read to be refused
        if (method !== 'get') {
          assert.ok(op.responses['503'], `${what}: 503`);
          assert.ok(op.responses['503'].headers?.['Retry-After'], `${what}: 503 Retry-After`);
        }
      }
    }
    if (prefix !== LEDGER) continue;
    assert.match(doc.paths[`${L}/contacts/bulk_delete`].post.responses['413'].description, /More than 1000 contact ids/);
    assert.match(doc.paths[`${L}/contacts`].post.responses['413'].description, /CSV import/, 'a declared 413 is kept');
    for (const path of [`${L}/contacts`, `${L}/contacts/download`, `${L}/changes`]) assert.match(doc.paths[path].get.responses['503'].description, /write in flight/, path);
    assert.not.ok(doc.paths[`${L}/contacts/{contactId}`].get.responses['503'], 'a read without a "since" never waits');
  }
  // what the document says is what the server does: a text/plain body to bulk_delete
  const w = await seedWorld(t);
  const ledgerId = await createLedger(t, w.tokens.editor, w.orgId, 'documented');
  const r = await t.call('POST', `${ledgerPath(w.orgId, ledgerId)}/contacts/bulk_delete`, { token: w.root, raw: 'x', headers: { 'content-type': 'text/plain' } });
  assert.is(r.status, 415, r.text);
  const many = await t.call('POST', `${ledgerPath(w.orgId, ledgerId)}/contacts/bulk_delete`, { token: w.root, body: { contactIds: Array.from({ length: 1001 }, (_, i) => `c_${i}`) } });
  assert.is(many.status, 413, many.text);
});

D('routes that create import jobs document the Idempotency-Key header and the 200 replay with Idempotent-Replayed, as they answer', async ({ t }) => {
  const doc = (await t.call('GET', `${LEDGER}/openapi.json`)).body;
  const L = '/orgs/{orgId}/ledgers/{ledgerId}';
  for (const path of [`${L}/contacts`, `${L}/imports`, `${L}/contacts/imports`]) {
    const op = doc.paths[path].post;
    const key = op.parameters.find((p: any) => p.in === 'header');
    assert.ok(key, `${path}: a header parameter`);
    assert.is(key.name, 'Idempotency-Key', path);
    assert.is(key.required, false, path);
    assert.is(key.schema.type, 'string', path);
    assert.match(key.description, /retry/, path);
    // the documented pattern is the one that validates
    const pattern = new RegExp(key.schema.pattern);
    for (const ok of ['crm-sync-1', '"quoted"', 'x'.repeat(255)]) assert.ok(pattern.test(ok), `${path}: ${ok}`);
    for (const bad of ['has space', 'naïve', 'x'.repeat(256), '""']) assert.not.ok(pattern.test(bad), `${path}: ${bad}`);
    assert.ok(op.responses['202'].headers.Location, `${path}: 202 Location`);
    const replay = op.responses['200'];
    assert.ok(replay, `${path}: the 200 replay answer`);
    assert.match(replay.description, /Idempotency-Key/);
    assert.equal(replay.headers['Idempotent-Replayed'].schema, { type: 'string', const: 'true' }, path);
    assert.ok(replay.headers.Location, `${path}: 200 Location`);
  }
  assert.not.ok((doc.paths[`${L}/contacts/bulk_delete`].post.parameters ?? []).some((p: any) => p.in === 'header'), 'only routes that read it list it');
});

D('every JSON answer of both documents has a schema: 2xx from the route declarations, errors the shared Problem (a tester: client generators got `any` for every answer)', async ({ t }) => {
  for (const prefix of [ID, LEDGER]) {
    const doc = (await t.call('GET', `${prefix}/openapi.json`)).body;
    const text = JSON.stringify(doc);
    for (const ref of new Set(text.match(/"#\/components\/schemas\/[^"]+"/g) ?? [])) assert.ok(doc.components.schemas[JSON.parse(ref).split('/').pop()], `${prefix}: ${ref} resolves`);
    assert.not.match(text, /"\$defs"/, 'named schemas are components, not $defs');
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, op] of Object.entries(ops)) {
        if (method === 'servers') continue;
        const what = `${method.toUpperCase()} ${prefix}${path}`;
        for (const [status, res] of Object.entries(op.responses as Record<string, any>)) {
          if (status === '204') {
            assert.not.ok(res.content, `${what}: a 204 has no body`);
            continue;
          }
          assert.ok(res.content, `${what} ${status}: no content`);
          const [type, media] = Object.entries(res.content as Record<string, any>)[0]!;
          if (Number(status) >= 400) assert.equal(media.schema, { $ref: '#/components/schemas/Problem' }, `${what} ${status}`);
          else if (type === 'application/json') assert.ok(media.schema && Object.keys(media.schema).length, `${what} ${status}: a schema`);
          else assert.ok(['text/csv', 'application/gzip'].includes(type), `${what} ${status}: ${type}`);
        }
      }
    }
  }
  const L = '/orgs/{orgId}/ledgers/{ledgerId}';
  const ledger = (await t.call('GET', `${LEDGER}/openapi.json`)).body;
  const json = (op: any, status = '200') => op.responses[status].content['application/json'].schema;
  const list = json(ledger.paths[`${L}/contacts`].get);
  assert.equal(list.anyOf[0].properties.contacts.items, { $ref: '#/components/schemas/Contact' }, 'the list page holds Contacts');
  assert.equal(list.anyOf[1].required, ['count'], 'view=count');
  assert.equal(json(ledger.paths[`${L}/contacts/{contactId}`].get), { $ref: '#/components/schemas/Contact' });
  assert.equal(json(ledger.paths[`${L}/contacts`].post, '202'), { $ref: '#/components/schemas/ImportJob' });
  assert.equal(json(ledger.paths[`${L}/contacts/{contactId}/changes`].get).properties.changes.items, { $ref: '#/components/schemas/Change' });
  assert.equal(json(ledger.paths[`${L}/changes`].get).properties.changes.items, { $ref: '#/components/schemas/ChangeFeedItem' }, 'a Change, with its contact under include=contact');
  const { Contact, Ledger, Problem, ChangeFeedItem } = ledger.components.schemas;
  for (const kind of ChangeFeedItem.oneOf ?? ChangeFeedItem.anyOf) assert.equal(kind.properties.contact.anyOf, [{ $ref: '#/components/schemas/Contact' }, { type: 'null' }], JSON.stringify(kind.properties.contact));
  assert.equal(Ledger.properties.description.type, ['string', 'null'], "a ledger's description is a string or null");
  assert.equal(Contact.properties.contactInfo.properties.emailStatus.anyOf.find((x: any) => x.enum).enum, ['valid', 'catch-all', 'best-guess']);
  assert.match(Contact.properties.createdAt.pattern, /\\\.\\d\{3\}\(\?:Z\)/, 'times with milliseconds and Z');
  assert.ok(Contact.required.includes('lastJobChangedAt'), 'null, not absent');
  assert.ok(Problem.properties.error_description, 'the OAuth error members of the token endpoint');
  const identity = (await t.call('GET', `${ID}/openapi.json`)).body;
  assert.match(identity.components.schemas.IssuedSession.properties.expiresAt.pattern, /\\d\{6\}\$/, 'expiresAt: six digits, no zone');
});

D('the documents state the headers the answers carry: Location on every 201 and on the ping\'s 202, Retry-After on a sign-in\'s 429; no "format" JSON Schema does not know (a tester\'s client generator)', async ({ t }) => {
  for (const prefix of [ID, LEDGER, '/api/auth/v1']) {
    const doc = (await t.call('GET', `${prefix}/openapi.json`)).body;
    if (!doc?.paths) continue; // a prefix without a document of its own
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, op] of Object.entries(ops)) {
        if (op?.responses?.['201']) assert.ok(op.responses['201'].headers?.Location, `${method.toUpperCase()} ${prefix}${path}: 201 Location`);
      }
    }
    assert.not.match(JSON.stringify(doc), /"format":"starts_with"/, `${prefix}: ids are a pattern`);
  }
  const ledger = (await t.call('GET', `${LEDGER}/openapi.json`)).body;
  assert.ok(ledger.paths['/orgs/{orgId}/webhooks/{webhookId}/test'].post.responses['202'].headers.Location, 'the ping delivery');
  assert.match(ledger.components.schemas.Delivery.properties.id.pattern, /^\^dlv_/);
  const identity = (await t.call('GET', `${ID}/openapi.json`)).body;
  assert.ok(identity.paths['/session'].post.responses['429'].headers['Retry-After'], 'sign-in throttling');
});

D('the request side: the single contact of POST …/contacts, the sortBy values and bulk_delete\'s limit are stated (a tester found an empty object)', async ({ t }) => {
  const doc = (await t.call('GET', `${LEDGER}/openapi.json`)).body;
  const L = '/orgs/{orgId}/ledgers/{ledgerId}';
  const body = doc.paths[`${L}/contacts`].post.requestBody.content['application/json'].schema;
  assert.equal(body.anyOf[1], { $ref: '#/components/schemas/NewContact' });
  assert.equal(body.anyOf[0].properties.contacts.items, { $ref: '#/components/schemas/NewContact' });
  const contact = doc.components.schemas.NewContact;
  assert.equal(contact.required, ['name', 'company']);
  assert.equal(Object.keys(contact.properties), ['name', 'company', 'title', 'location', 'email', 'contactInfo', 'linkedin', 'referenceId']);
  assert.equal(contact.properties.referenceId.anyOf.map((x: any) => x.type), ['string', 'integer', 'null']);
  const sortBy = doc.paths[`${L}/contacts`].get.parameters.find((p: any) => p.name === 'sortBy');
  assert.equal(sortBy.schema.enum, ['+createdAt', '-createdAt', '+name', '-name', '-lastJobChangedAt', '-lastInfoChangedAt']);
  assert.is(doc.paths[`${L}/contacts/bulk_delete`].post.requestBody.content['application/json'].schema.properties.contactIds.maxItems, 1000);
});

D('operation ids a client generator can use, unique in each document; every answer names X-Request-Id, a 401 WWW-Authenticate, a 429 Retry-After, a download Content-Disposition (a contract tester\'s cases)', async ({ t }) => {
  for (const prefix of [ID, LEDGER]) {
    const doc = (await t.call('GET', `${prefix}/openapi.json`)).body;
    const ids: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, op] of Object.entries(ops)) {
        if (method === 'servers') continue;
        const what = `${method.toUpperCase()} ${prefix}${path}`;
        ids.push(op.operationId);
        assert.match(op.operationId, /^[a-z]+[A-Z][A-Za-z0-9]*$/, what);
        for (const [status, res] of Object.entries(op.responses as Record<string, any>)) {
          assert.equal(res.headers?.['X-Request-Id'], { $ref: '#/components/headers/RequestId' }, `${what} ${status}`);
          if (status === '401') assert.ok(res.headers['WWW-Authenticate'], `${what} 401`);
          if (status === '429' || status === '503') assert.equal(res.headers['Retry-After'], { $ref: '#/components/headers/RetryAfter' }, `${what} ${status}`);
          const type = Object.keys(res.content ?? {})[0];
          if (type === 'text/csv' || type === 'application/gzip') assert.ok(res.headers['Content-Disposition'], `${what} ${status}`);
        }
      }
    }
    assert.is(new Set(ids).size, ids.length, `${prefix}: ${ids.filter((x, i) => ids.indexOf(x) !== i).join(', ')} twice`);
    assert.ok(doc.components.headers.RequestId);
  }
  const identity = (await t.call('GET', `${ID}/openapi.json`)).body;
  assert.is(identity.paths['/session'].post.operationId, 'postSession');
  assert.is(identity.paths['/auth/v1/session'].post.operationId, 'postAuthV1Session', 'the alias has an id of its own (both were postSession)');
  const newUser = identity.paths['/users'].post.requestBody.content['application/json'].schema;
  const password = (newUser.$ref ? identity.components.schemas[newUser.$ref.split('/').pop()] : newUser).properties.password;
  assert.equal([password.minLength, password.maxLength], [8, 256], 'the policy\'s bounds (it said 1024)');
  const ledger = (await t.call('GET', `${LEDGER}/openapi.json`)).body;
  const L = '/orgs/{orgId}/ledgers/{ledgerId}';
  assert.is(ledger.paths[`${L}/contacts/bulk_delete`].post.operationId, 'postOrgsByOrgIdLedgersByLedgerIdContactsBulkDelete');
  assert.ok(ledger.paths[`${L}/imports/preview`].post.responses['422'], 'an empty file to preview is a 422');
  // an upload's parts are stated (its body had no schema)
  const upload = ledger.paths[`${L}/imports`].post.requestBody.content['multipart/form-data'].schema;
  assert.equal(upload.required, ['file']);
  assert.equal([upload.properties.file.contentMediaType, upload.properties.mapping.type], ['text/csv', 'string']);
  // what a webhook receives: the event's schema and the headers to verify (there was no webhooks section)
  const delivery = ledger.webhooks.delivery.post;
  assert.equal(delivery.requestBody.content['application/json'].schema, { $ref: '#/components/schemas/WebhookEvent' });
  assert.equal(delivery.parameters.filter((p: any) => p.required).map((p: any) => p.name), ['X-Ledger-Delivery', 'X-Ledger-Signature']);
  assert.ok(delivery.responses['2XX']);
});

D('under the tests an error answer of a status its route does not declare fails loudly, so the document cannot leave one out', async ({ t }) => {
  // preview of an empty file: 422, which the document now declares (it did not)
  const root = (await signInRoot(t)).accessToken;
  const org = await t.call('POST', `${ID}/orgs`, { token: root, body: { name: 'Declared' } });
  const ledgerId = await createLedger(t, root, org.body.id, 'declared');
  const r = await t.call('POST', `${ledgerPath(org.body.id, ledgerId)}/imports/preview`, { token: root, raw: csvForm('') });
  assert.is(r.status, 422, r.text);
  const spec = { method: 'post', path: '/x', summary: 'x', access: 'public', responses: { 200: { description: 'x' } } } as RouteSpec;
  checkErrorStatus(new AppError(409, 'conflict', 'taken'), { ...spec, responses: { 409: { description: 'taken' } } }, 'POST /t/x');
  checkErrorStatus(new AppError(422, 'validation_failed', 'bad'), spec, 'POST /t/x'); // of its kind
  checkErrorStatus(new AppError(500, 'internal', 'fault'), spec, 'POST /t/x'); // a fault is not a contract
  assert.throws(() => checkErrorStatus(new AppError(409, 'conflict', 'taken'), spec, 'POST /t/x'), /POST \/t\/x answered 409 \(taken\), which its OpenAPI operation does not declare/);
  assert.throws(() => checkErrorStatus(new AppError(401, 'unauthenticated', 'who'), spec, 'POST /t/x'), /answered 401/, 'a public route answers no 401');
  // wired into every route when answers are checked (a reviewer's case: nothing showed it was)
  for (const checkAnswers of [true, false]) {
    const app = new Koa();
    const api = new ApiRouter('/t', { maxJsonBytes: 1024, checkAnswers } as RouterDeps).add(spec, () => {
      throw new AppError(409, 'conflict', 'taken');
    });
    app.use(api.router.routes());
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/t/x`, { method: 'POST' });
      assert.is(res.status, checkAnswers ? 500 : 409, `checkAnswers ${checkAnswers}`);
    } finally {
      server.close();
    }
  }
});

D('under the tests every JSON answer is checked against its schema: one that drifted, or a 2xx without a schema, fails loudly', () => {
  const spec = { method: 'get', path: '/x', summary: 'x', access: 'public', responses: { 200: { description: 'x', schema: z.strictObject({ id: z.string() }) }, 201: { description: 'no schema' } } } as RouteSpec;
  const ctx = (status: number, body: unknown) => ({ status, body }) as never;
  checkAnswer(ctx(200, { id: 'a' }), spec, 'GET /x');
  assert.throws(() => checkAnswer(ctx(200, { id: 1 }), spec, 'GET /x'), /the 200 answer of GET \/x does not match its declared schema: .*"path":\["id"\]/);
  assert.throws(() => checkAnswer(ctx(200, { id: 'a', extra: true }), spec, 'GET /x'), /unrecognized_keys/);
  assert.throws(() => checkAnswer(ctx(201, { id: 'a' }), spec, 'GET /x'), /declares no schema/);
  checkAnswer(ctx(200, Buffer.from('csv')), spec, 'GET /x'); // not JSON: not looked at
});

D.run();

const W = suite('wire formats');

W('UTF-8 checking (src/utf8.ts, shared by request bodies, feeds and CSV scanning) agrees with a fatal TextDecoder', () => {
  const rnd = prng(20261124);
  const fatal = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  const valid = (b: Uint8Array) => {
    try {
      fatal.decode(b);
      return true;
    } catch {
      return false;
    }
  };
  // short strings of ASCII, continuation and lead bytes: every kind of cut-off, overlong and out-of-range sequence
  for (let n = 0; n < 50_000; n++) {
    const bytes = Uint8Array.from({ length: Math.floor(rnd() * 8) }, () => {
      const r = rnd();
      return r < 0.4 ? Math.floor(rnd() * 0x80) : r < 0.7 ? 0x80 + Math.floor(rnd() * 0x40) : 0xc0 + Math.floor(rnd() * 0x40);
    });
    const at = invalidUtf8At(bytes);
    assert.is(at < 0, valid(bytes), [...bytes].join(' '));
    if (at >= 0) assert.ok(valid(bytes.subarray(0, at)), `the bytes before ${at} are UTF-8: ${[...bytes].join(' ')}`);
  }
});

W('isoZ writes exactly what Date.prototype.toISOString writes, for any time', () => {
  const edges = [0, 1, 999, 1000, 59_999, 86_399_999, 86_400_000, 951_782_400_000 /* 2000-02-29 */, 4_107_542_399_999 /* 2100-02-28 end */, 253_402_300_799_999, 253_402_300_800_000, -1, -86_400_001, 8.64e15, -8.64e15, 1.5];
  for (const ms of edges) assert.is(isoZ(ms), new Date(ms).toISOString(), String(ms));
  let seed = 20261123;
  const next = () => ((seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0) / 2 ** 32);
  for (let i = 0; i < 20_000; i++) {
    const ms = Math.floor(next() * 253_402_300_800_000);
    assert.is(isoZ(ms), new Date(ms).toISOString());
  }
  for (let i = 0; i < 5000; i++) {
    const ms = 1_795_000_000_000 + Math.floor(next() * 400 * 86_400_000); // recent days, as stored contacts have
    assert.is(isoZ(ms), new Date(ms).toISOString());
  }
});


W('timestamp filters: offsets within ±23:59, years 0001–9999 as written, real calendar days (SPEC §2, RFC 3339)', () => {
  const valid: [string, string][] = [
    ['2026-11-23', '2026-11-23T00:00:00.000Z'],
    ['2026-11-23T22:00', '2026-11-23T22:00:00.000Z'],
    ['2026-11-23 22:00:05', '2026-11-23T22:00:05.000Z'],
    ['2026-11-23T22:00Z', '2026-11-23T22:00:00.000Z'],
    ['2026-11-23t22:00:00.5z', '2026-11-23T22:00:00.500Z'],
    // beyond the millisecond: rounded up, so that ≥ and < bounds on whole milliseconds stay exact
    ['2026-11-23T22:00:00.123456789Z', '2026-11-23T22:00:00.124Z'],
    ['2026-11-23T22:00:00.1230000Z', '2026-11-23T22:00:00.123Z'],
    ['2026-11-23T22:00:00.1425Z', '2026-11-23T22:00:00.143Z'],
    ['2026-11-23T22:00:00.142000001Z', '2026-11-23T22:00:00.143Z'],
    ['2026-11-23T22:00:00.142Z', '2026-11-23T22:00:00.142Z'],
    ['2026-11-23T22:00:00.1Z', '2026-11-23T22:00:00.100Z'],
    ['2026-11-23T22:00:59.9995Z', '2026-11-23T22:01:00.000Z'],
    ['2026-11-23T22:00+01:00', '2026-11-23T21:00:00.000Z'],
    ['2026-11-23T22:00-0130', '2026-11-23T23:30:00.000Z'],
    // ISO 8601's hours-only offset (a tester's case: refused)
    ['2026-11-01T10:00:00+05', '2026-11-01T05:00:00.000Z'],
    ['2026-11-01T10:00-03', '2026-11-01T13:00:00.000Z'],
    ['2026-11-23T22:00+00:00', '2026-11-23T22:00:00.000Z'],
    ['2026-11-23T22:00-00:00', '2026-11-23T22:00:00.000Z'],
    ['2026-11-23T00:00:00+23:59', '2026-11-22T00:01:00.000Z'],
    ['2026-11-23T00:00:00-23:59', '2026-11-23T23:59:00.000Z'],
    ['2026-11-23T23:59:59.999+14:00', '2026-11-23T09:59:59.999Z'],
    ['2024-02-29', '2024-02-29T00:00:00.000Z'],
    ['2000-02-29T12:00Z', '2000-02-29T12:00:00.000Z'],
    // years below 100 are the years written, not 1900–1999
    ['0001-01-01', '0001-01-01T00:00:00.000Z'],
    ['0012-03-04T05:06:07Z', '0012-03-04T05:06:07.000Z'],
    ['0099-12-31T23:59:59.999Z', '0099-12-31T23:59:59.999Z'],
    ['0004-02-29', '0004-02-29T00:00:00.000Z'],
    ['0001-01-01T00:00+01:00', '0000-12-31T23:00:00.000Z'],
    ['1969-12-31T23:59:59.999Z', '1969-12-31T23:59:59.999Z'],
    ['9999-12-31', '9999-12-31T00:00:00.000Z'],
    ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
    ['9999-12-31T23:00+05:00', '9999-12-31T18:00:00.000Z'],
    ['  2026-11-23  ', '2026-11-23T00:00:00.000Z'],
  ];
  for (const [text, iso] of valid) {
    const t = parseTimestamp(text);
    assert.ok(t !== undefined, `${text} is valid`);
    assert.is(new Date(t!).toISOString(), iso, text);
  }
  const invalid = [
    // offsets beyond ±23:59
    '2026-11-23T22:00+99:99', '2026-11-23T00:00:00+24:60', '2026-11-23T00:00:00+24:00', '2026-11-23T00:00:00-24:00',
    '2026-11-23T00:00:00+23:60', '2026-11-23T00:00:00-00:60', '2026-11-23T00:00+2400', '2026-11-23T00:00+0099',
    // malformed offsets
    '2026-11-23T00:00+1', '2026-11-23T00:00+24', '2026-11-23T00:00+01:', '2026-11-23T00:00+01:0', '2026-11-23T00:00+01:000', '2026-11-23T00:00 +01:00', '2026-11-23+01:00',
    // year 0000, and instants from year 10000 on (they would not be written back with four digits)
    '0000-01-01', '0000-12-31T23:59Z', '9999-12-31T23:00-01:00', '10000-01-01', '+010000-01-01T00:00Z', '-000001-01-01',
    // days, months and times that do not exist
    '2026-02-29', '2026-02-31', '2100-02-29', '0001-02-29', '0100-02-29', '2026-04-31', '2026-00-10', '2026-13-01', '2026-01-00', '2026-01-32',
    '2026-11-23T24:00', '2026-11-23T23:60', '2026-11-23T23:59:60', '2026-11-23T23:59:59.', '2026-11-23T23:59:59.1234567890', '9999-12-31T23:59:59.9991Z',
    // not timestamps
    '', 'yesterday', '2026-11', '20261123', '2026-1-23', '26-11-23', '2026-11-23T', '2026-11-23T22', '2026-11-23T22:00ZZ', '2026-11-23T22:00+01:00Z',
  ];
  for (const text of invalid) assert.is(parseTimestamp(text), undefined, text);
});

W('parseExactTimestamp keeps what lies below a millisecond: observation times of one millisecond still come in order', () => {
  const exact = (text: string) => parseExactTimestamp(text)!;
  const ms = Date.parse('2026-11-21T09:30:00.124Z');
  assert.equal(exact('2026-11-21T09:30:00.123456Z'), { ms, nsBefore: 544_000 });
  assert.equal(exact('2026-11-21T09:30:00.123001Z'), { ms, nsBefore: 999_000 });
  assert.equal(exact('2026-11-21T09:30:00.123000001Z'), { ms, nsBefore: 999_999 });
  assert.equal(exact('2026-11-21T09:30:00.124Z'), { ms, nsBefore: 0 });
  assert.equal(exact('2026-11-21T09:30:00.1240Z'), { ms, nsBefore: 0 });
  assert.equal(exact('2026-11-21'), { ms: Date.parse('2026-11-21T00:00:00Z'), nsBefore: 0 });
  assert.equal(exact('2026-11-21T10:30:00.123456+01:00'), exact('2026-11-21T09:30:00.123456Z'));
  assert.is(parseExactTimestamp('2026-02-31T00:00:00.5Z'), undefined);
  // in the order they were written: each later than the one before
  const inOrder = ['2026-11-21T09:30:00.1225Z', '2026-11-21T09:30:00.123Z', '2026-11-21T09:30:00.123000001Z', '2026-11-21T09:30:00.123001Z', '2026-11-21T09:30:00.123456Z', '2026-11-21T09:30:00.123999999Z', '2026-11-21T09:30:00.124Z', '2026-11-21T09:30:00.1240001Z'];
  for (let i = 1; i < inOrder.length; i++) {
    assert.ok(compareExactTimes(exact(inOrder[i - 1]!), exact(inOrder[i]!)) < 0, `${inOrder[i - 1]} before ${inOrder[i]}`);
    assert.ok(compareExactTimes(exact(inOrder[i]!), exact(inOrder[i - 1]!)) > 0, `${inOrder[i]} after ${inOrder[i - 1]}`);
  }
  assert.is(compareExactTimes(exact('2026-11-21T09:30:00.1234Z'), exact('2026-11-21T09:30:00.123400000Z')), 0);
});

W.run();
