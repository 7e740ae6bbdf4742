// Serving the web application (SPEC §9, STYLE.md P13): SPA fallback, caching, security headers,
// no way out of the folder, and the API's problem+json 404s untouched.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { startApp, tempDir, type TestApp } from './helpers.ts';

const INDEX = '<!doctype html><title>contact-ledger</title><script type="module" src="/app-ABCD1234.js"></script>';
const SECRET = 'secret beside the web folder';

/** A GET with the path sent exactly as written (fetch would normalize dot segments). */
function rawGet(base: string, path: string): Promise<{ status: number; body: string; type: string }> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: u.hostname, port: u.port, path, method: 'GET' }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, type: String(res.headers['content-type'] ?? '') }));
    });
    req.on('error', reject);
    req.end();
  });
}

const W = suite<{ t: TestApp }>('web application at /');
W.before(async (ctx) => {
  const root = tempDir();
  const web = join(root, 'web');
  mkdirSync(join(web, 'assets'), { recursive: true });
  writeFileSync(join(web, 'index.html'), INDEX);
  writeFileSync(join(web, 'app-ABCD1234.js'), 'console.log(1)');
  writeFileSync(join(web, 'app-ABCD1234.css'), 'body{}');
  writeFileSync(join(web, 'assets', 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  writeFileSync(join(root, 'secret.txt'), SECRET);
  writeFileSync(join(root, 'web-secret.txt'), SECRET);
  ctx.t = await startApp({ webDir: web, noScheduler: true });
});
W.after(async (ctx) => ctx.t.close());

W('GET / serves index.html with no-cache and the page security headers', async ({ t }) => {
  const r = await t.call('GET', '/');
  assert.is(r.status, 200);
  assert.is(r.text, INDEX);
  assert.match(r.headers.get('content-type')!, /^text\/html/);
  assert.is(r.headers.get('cache-control'), 'no-cache');
  const csp = r.headers.get('content-security-policy')!;
  assert.ok(csp.includes("frame-ancestors 'none'"));
  assert.ok(csp.includes("script-src 'self'"));
  assert.ok(csp.includes("default-src 'none'"));
  assert.not.ok(csp.includes('unsafe-inline'), 'no inline scripts or styles');
  assert.not.ok(csp.includes('unsafe-eval'));
  assert.is(r.headers.get('x-content-type-options'), 'nosniff');
  assert.is(r.headers.get('referrer-policy'), 'no-referrer');
  assert.is(r.headers.get('x-frame-options'), 'DENY');
});

W('application routes fall back to index.html (a reload on a deep link works)', async ({ t }) => {
  for (const path of ['/signin', '/orgs/o_abc/ledgers', '/orgs/o_abc/ledgers/l_x/contacts/c_y', '/orgs/o_abc/team?x=1']) {
    const r = await t.call('GET', path);
    assert.is(r.status, 200, path);
    assert.is(r.text, INDEX, path);
  }
});

W('hashed assets are cached for good, others briefly; types are right', async ({ t }) => {
  const js = await t.call('GET', '/app-ABCD1234.js');
  assert.is(js.status, 200);
  assert.match(js.headers.get('content-type')!, /^text\/javascript/);
  assert.is(js.headers.get('cache-control'), 'public, max-age=31536000, immutable');
  const css = await t.call('GET', '/app-ABCD1234.css');
  assert.match(css.headers.get('content-type')!, /^text\/css/);
  const svg = await t.call('GET', '/assets/favicon.svg');
  assert.is(svg.status, 200);
  assert.is(svg.headers.get('content-type'), 'image/svg+xml');
  assert.is(svg.headers.get('cache-control'), 'public, max-age=3600');
});

W('HEAD / answers the headers without a body', async ({ t }) => {
  const r = await fetch(`${t.base}/`, { method: 'HEAD' });
  assert.is(r.status, 200);
  assert.is(r.headers.get('content-length'), String(INDEX.length));
  assert.is(await r.text(), '');
});

W('a missing file and unknown API paths stay problem+json 404s', async ({ t }) => {
  // in any case, as the API's router matches its paths (a compatibility tester's /API/… got the page)
  for (const path of ['/app-OLDHASH1.js', '/api/ledger/v1/nope', '/api/identity/v1/orgs/x/nope', '/api', '/api/', '/auth/v1/nope', '/API/ledger/v1/nope', '/Api', '/AUTH/v1/nope']) {
    const r = await t.call('GET', path);
    assert.is(r.status, 404, path);
    assert.match(r.headers.get('content-type')!, /^application\/problem\+json/, path);
    assert.is(r.body.code, 'route_not_found', path);
  }
  const post = await t.call('POST', '/');
  assert.is(post.status, 404);
  assert.match(post.headers.get('content-type')!, /problem\+json/);
});

W('no path reaches outside the web folder', async ({ t }) => {
  for (const path of ['/../secret.txt', '/..%2fsecret.txt', '/%2e%2e/secret.txt', '/%2e%2e%2fsecret.txt', '/assets/..%2f..%2fsecret.txt', '/..%2f..%2f..%2f..%2fetc%2fpasswd', '/%2e%2e/web-secret.txt', '//etc/passwd']) {
    const r = await rawGet(t.base, path);
    assert.not.ok(r.body.includes(SECRET), path);
    assert.not.ok(r.body.includes('root:x:0'), path);
    assert.ok(r.status === 404 || r.status === 400 || (r.status === 200 && r.body === INDEX), `${path}: ${r.status}`);
  }
  for (const path of ['/%00', '/index.html%00.js', '/..%5csecret.txt', '/%E0%A4%A']) {
    const r = await rawGet(t.base, path);
    assert.is(r.status, 400, path);
    assert.match(r.type, /problem\+json/, path);
  }
});

W.run();

const U = suite('web application not built');
U('GET / says how to build it (404 problem+json), the API still works', async () => {
  const t = await startApp({ noScheduler: true });
  try {
    const r = await t.call('GET', '/');
    assert.is(r.status, 404);
    assert.is(r.body.code, 'web_app_not_built');
    assert.ok(r.body.detail.includes('npm run build:web'));
    const health = await t.call('GET', '/healthz');
    assert.is(health.status, 200);
  } finally {
    await t.close();
  }
});
U.run();
