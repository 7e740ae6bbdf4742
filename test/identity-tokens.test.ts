// Access-token verification (RELIABILITY.md A4) and signing-key handling (A8).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import fs, { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import { generateKeyPair, SignJWT } from 'jose';
import type { ManualClock } from '../src/clock.ts';
import { rotateSigningKeys } from '../src/identity/signing-keys.ts';
import { createLogger } from '../src/log.ts';
import { openRuntime } from '../src/runtime.ts';
import { expectStatus, ID, PASSWORD, seedWorld, signIn, startApp, tempDir, testConfig, type TestApp, type World } from './helpers.ts';

interface Ctx {
  t: TestApp;
  w: World;
  key: Uint8Array;
  kid: string;
  sid: string;
  sub: string;
}

const A = suite<Ctx>('access tokens (A4)');
A.before(async (ctx) => {
  ctx.t = await startApp();
  ctx.w = await seedWorld(ctx.t);
  const file = JSON.parse(readFileSync(join(ctx.t.dataDir, 'secrets', 'jwt-keys.json'), 'utf8'));
  ctx.key = new Uint8Array(Buffer.from(file.keys[0].k, 'base64url'));
  ctx.kid = file.keys[0].kid;
  const s = await signIn(ctx.t, 'viewer@a.test', PASSWORD);
  const claims = JSON.parse(Buffer.from(s.accessToken.split('.')[1]!, 'base64url').toString());
  ctx.sid = claims.sid;
  ctx.sub = claims.sub;
});
A.after(async (ctx) => ctx.t.close());

const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');

async function forge(ctx: Ctx, edit: { header?: Record<string, unknown>; claims?: Record<string, unknown>; omit?: string[]; alg?: string; key?: Parameters<SignJWT['sign']>[0] }) {
  const now = Math.floor(ctx.t.clock.now() / 1000);
  const claims: Record<string, unknown> = { sid: ctx.sid, sub: ctx.sub, iss: 'contact-ledger', aud: 'contact-ledger-api', iat: now, exp: now + 600, ...edit.claims };
  for (const k of edit.omit ?? []) delete claims[k];
  return new SignJWT(claims).setProtectedHeader({ alg: edit.alg ?? 'HS256', typ: 'at+jwt', kid: ctx.kid, ...edit.header } as never).sign(edit.key ?? ctx.key);
}

async function expect401(ctx: Ctx, token: string, what: string) {
  const r = await ctx.t.call('GET', `${ID}/users/me`, { token });
  assert.is(r.status, 401, what);
  assert.is(r.headers.get('www-authenticate'), 'Bearer error="invalid_token"', what);
  assert.is(r.body.code, 'invalid_token', what);
}

A('a well-formed token forged with the real key is accepted (the baseline for the cases below)', async (ctx) => {
  expectStatus(await ctx.t.call('GET', `${ID}/users/me`, { token: await forge(ctx, {}) }), 200);
});

A('alg none → 401', async (ctx) => {
  const now = Math.floor(ctx.t.clock.now() / 1000);
  const token = `${b64({ alg: 'none', typ: 'at+jwt', kid: ctx.kid })}.${b64({ sid: ctx.sid, sub: ctx.sub, iss: 'contact-ledger', aud: 'contact-ledger-api', iat: now, exp: now + 600 })}.`;
  await expect401(ctx, token, 'none');
});

A('HS512 with the same key → 401 (one pinned algorithm)', async (ctx) => {
  await expect401(ctx, await forge(ctx, { alg: 'HS512' }), 'HS512');
});

A('RS256 with an attacker key → 401', async (ctx) => {
  const { privateKey } = await generateKeyPair('RS256');
  await expect401(ctx, await forge(ctx, { alg: 'RS256', key: privateKey }), 'RS256');
});

A('one signature byte flipped → 401', async (ctx) => {
  const t = await forge(ctx, {});
  const [h, p, s] = t.split('.');
  const sig = Buffer.from(s!, 'base64url');
  sig[0] = sig[0]! ^ 1;
  await expect401(ctx, `${h}.${p}.${sig.toString('base64url')}`, 'flipped');
});

A('missing exp, iat, sub or sid → 401', async (ctx) => {
  for (const claim of ['exp', 'iat', 'sub', 'sid']) await expect401(ctx, await forge(ctx, { omit: [claim] }), `no ${claim}`);
});

A('exp 31 s in the past → 401; 29 s is within the tolerance', async (ctx) => {
  const now = Math.floor(ctx.t.clock.now() / 1000);
  await expect401(ctx, await forge(ctx, { claims: { exp: now - 31 } }), 'expired');
  expectStatus(await ctx.t.call('GET', `${ID}/users/me`, { token: await forge(ctx, { claims: { exp: now - 29 } }) }), 200);
});

A("no token outlives the lifetime the server gives: an iat in the future → 401, an exp years away ends an hour after its iat, remembered or not (a reviewer's case)", async (ctx) => {
  const clock = ctx.t.clock as ManualClock;
  const now = Math.floor(clock.now() / 1000);
  await expect401(ctx, await forge(ctx, { claims: { iat: now + 120 } }), 'iat in the future');
  expectStatus(await ctx.t.call('GET', `${ID}/users/me`, { token: await forge(ctx, { claims: { iat: now + 29 } }) }), 200, 'within the clock tolerance');
  const farExp = { claims: { iat: now, exp: now + 10 * 365 * 86_400 } };
  const seen = await forge(ctx, farExp);
  expectStatus(await ctx.t.call('GET', `${ID}/users/me`, { token: seen }), 200, 'within its hour');
  clock.set((now + 3600 + 1 + 29) * 1000);
  expectStatus(await ctx.t.call('GET', `${ID}/users/me`, { token: seen }), 200, 'the tolerance holds as for exp');
  clock.set((now + 3600 + 1 + 31) * 1000);
  await expect401(ctx, seen, 'remembered, past its hour');
  clock.set(now * 1000);
  const unseen = await forge(ctx, farExp);
  clock.set((now + 3600 + 1 + 31) * 1000);
  await expect401(ctx, unseen, 'never seen, past its hour');
  clock.set(Date.now());
});

A('a real token expires after its hour (manual clock)', async (ctx) => {
  const s = await signIn(ctx.t, 'viewer@a.test', PASSWORD);
  (ctx.t.clock as ManualClock).advance(3600_000 + 31_000);
  const r = await ctx.t.call('GET', `${ID}/users/me`, { token: s.accessToken });
  assert.is(r.status, 401);
  assert.match(r.body.message, /expired/);
  (ctx.t.clock as ManualClock).set(Date.now());
});

A('a token that passed once is still checked on every use: its exact bytes and its expiry (verified-token cache)', async (ctx) => {
  const clock = ctx.t.clock as ManualClock;
  const s = await signIn(ctx.t, 'viewer@a.test', PASSWORD);
  expectStatus(await ctx.t.call('GET', `${ID}/users/me`, { token: s.accessToken }), 200);
  const [h, p, sig] = s.accessToken.split('.') as [string, string, string];
  const flipped = Buffer.from(sig, 'base64url');
  flipped[flipped.length - 1] = flipped[flipped.length - 1]! ^ 1;
  await expect401(ctx, `${h}.${p}.${flipped.toString('base64url')}`, 'signature of a remembered token changed');
  const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
  await expect401(ctx, `${h}.${b64({ ...claims, sub: ctx.w.users.admin })}.${sig}`, 'payload of a remembered token changed');
  expectStatus(await ctx.t.call('GET', `${ID}/users/me`, { token: s.accessToken }), 200);
  clock.set(claims.exp * 1000 + 29_000); // within jose's 30 s tolerance, as for a token never seen
  expectStatus(await ctx.t.call('GET', `${ID}/users/me`, { token: s.accessToken }), 200);
  clock.set(claims.exp * 1000 + 31_000);
  const r = await ctx.t.call('GET', `${ID}/users/me`, { token: s.accessToken });
  assert.is(r.status, 401);
  assert.match(r.body.message, /expired/);
  clock.set(Date.now());
});

A('nbf in the future, wrong iss, wrong aud, typ JWT → 401', async (ctx) => {
  const now = Math.floor(ctx.t.clock.now() / 1000);
  await expect401(ctx, await forge(ctx, { claims: { nbf: now + 120 } }), 'nbf');
  await expect401(ctx, await forge(ctx, { claims: { iss: 'someone-else' } }), 'iss');
  await expect401(ctx, await forge(ctx, { claims: { aud: 'another-api' } }), 'aud');
  await expect401(ctx, await forge(ctx, { header: { typ: 'JWT' } }), 'typ');
});

/**
 * Watches this process's file-system calls and SQL executions (the app runs in this process) for
 * arguments holding any of `markers`; stop() restores everything and returns what it saw.
 */
function spyLookups(db: TestApp['rt']['db']['raw'], markers: string[]): { stop(): string[] } {
  const seen: string[] = [];
  const holds = (args: unknown[]) => args.some((a) => markers.some((m) => (typeof a === 'string' || Buffer.isBuffer(a) ? String(a).includes(m) : false)));
  const patched: [object, string, unknown][] = [];
  const wrap = (target: Record<string, unknown>, name: string, what: (self: unknown, args: unknown[]) => string | undefined) => {
    const original = target[name] as (...a: unknown[]) => unknown;
    patched.push([target, name, original]);
    target[name] = function (this: unknown, ...args: unknown[]) {
      const found = what(this, args);
      if (found) seen.push(found);
      return original.apply(this, args);
    };
  };
  for (const name of ['readFileSync', 'openSync', 'statSync', 'lstatSync', 'existsSync', 'accessSync', 'readdirSync', 'createReadStream', 'readFile', 'open', 'stat']) {
    wrap(fs as unknown as Record<string, unknown>, name, (_self, args) => (holds(args) ? `fs.${name}(${String(args[0])})` : undefined));
  }
  for (const name of ['readFile', 'open', 'stat']) {
    wrap(fs.promises as unknown as Record<string, unknown>, name, (_self, args) => (holds(args) ? `fs.promises.${name}(${String(args[0])})` : undefined));
  }
  syncBuiltinESMExports();
  const statement = Object.getPrototypeOf(db.prepare('SELECT 1')) as Record<string, unknown>;
  for (const name of ['get', 'all', 'run', 'iterate']) {
    wrap(statement, name, (self, args) => (holds([...args, (self as { source: string }).source]) ? `SQL ${(self as { source: string }).source} with ${JSON.stringify(args)}` : undefined));
  }
  return {
    stop() {
      for (const [target, name, original] of patched.reverse()) (target as Record<string, unknown>)[name] = original;
      syncBuiltinESMExports();
      return seen;
    },
  };
}

A('hostile kid values and key-reference headers → 401 without any lookup', async (ctx) => {
  const markers = ['etc/passwd', 'OR 1=1'];
  const spy = spyLookups(ctx.t.rt.db.raw, markers);
  try {
    // the spy sees what it must: a file read and a query carrying a marker
    existsSync('/nonexistent/etc/passwd');
    ctx.t.rt.db.raw.prepare('SELECT ?').get("x' OR 1=1");
    await expect401(ctx, await forge(ctx, { header: { kid: '../../etc/passwd' } }), 'kid traversal');
    await expect401(ctx, await forge(ctx, { header: { kid: "' OR 1=1--" } }), 'kid sql');
  } finally {
    const seen = spy.stop();
    assert.equal(seen.length, 2, `only the spy's own two probes: ${seen.join('; ')}`);
  }
  await expect401(ctx, await forge(ctx, { header: { jku: 'http://attacker.test/jwks' } }), 'jku');
  await expect401(ctx, await forge(ctx, { header: { x5u: 'http://attacker.test/cert' } }), 'x5u');
  await expect401(ctx, await forge(ctx, { header: { jwk: { kty: 'oct', k: 'AAAA' } } }), 'jwk');
});

A('a session id or subject that does not match → 401', async (ctx) => {
  await expect401(ctx, await forge(ctx, { claims: { sid: 'sf_00000000000000000000000000' } }), 'unknown sid');
  await expect401(ctx, await forge(ctx, { claims: { sub: ctx.w.users.admin } }), 'sub of another user in this session');
});

A('the sub of a disabled user → 401 on the next request (A5c)', async (ctx) => {
  const s = await signIn(ctx.t, 'outsider@x.test', PASSWORD);
  expectStatus(await ctx.t.call('GET', `${ID}/users/me`, { token: s.accessToken }), 200);
  expectStatus(await ctx.t.call('PATCH', `${ID}/users/${ctx.w.users.outsider}`, { token: ctx.w.root, body: { disabled: true } }), 200);
  await expect401(ctx, s.accessToken, 'disabled');
  const again = await ctx.t.call('POST', `${ID}/session`, { body: { email: 'outsider@x.test', password: PASSWORD } });
  assert.is(again.status, 401);
  expectStatus(await ctx.t.call('PATCH', `${ID}/users/${ctx.w.users.outsider}`, { token: ctx.w.root, body: { disabled: false } }), 200);
});

A('malformed Authorization headers → 401 with WWW-Authenticate', async (ctx) => {
  for (const h of ['', 'Bearer', 'Basic abc', 'Bearer a b', 'Bearer not.a.jwt']) {
    const r = await ctx.t.call('GET', `${ID}/orgs`, { headers: h ? { authorization: h } : {} });
    assert.is(r.status, 401, h);
    assert.is(r.headers.get('www-authenticate'), 'Bearer error="invalid_token"');
  }
});

A.run();

const K = suite('signing keys (A4, A8)');
const quiet = { log: createLogger('silent') };

K('the key is generated on first start in the data folder with mode 0600, 256 bits', async () => {
  const dir = tempDir();
  const rt = await openRuntime(testConfig(dir), quiet);
  const file = join(dir, 'secrets', 'jwt-keys.json');
  const { statSync } = await import('node:fs');
  assert.is(statSync(file).mode & 0o777, 0o600);
  const keys = JSON.parse(readFileSync(file, 'utf8')).keys;
  assert.is(keys.length, 1);
  assert.is(Buffer.from(keys[0].k, 'base64url').length, 32);
  await rt.close();
  // a second installation gets a different key (nothing constant in the code)
  const dir2 = tempDir();
  const rt2 = await openRuntime(testConfig(dir2), quiet);
  assert.is.not(JSON.parse(readFileSync(join(dir2, 'secrets', 'jwt-keys.json'), 'utf8')).keys[0].k, keys[0].k);
  await rt2.close();
});

K('a key file readable by others, or a short key, stops the start with a clear message', async () => {
  const dir = tempDir();
  await (await openRuntime(testConfig(dir), quiet)).close();
  const file = join(dir, 'secrets', 'jwt-keys.json');
  chmodSync(file, 0o644);
  try {
    await openRuntime(testConfig(dir), quiet);
    assert.unreachable('started with a world-readable key');
  } catch (err) {
    assert.match((err as Error).message, /chmod 600/);
    assert.is((err as Error).name, 'ConfigError', 'exit 2: a restart cannot mend it');
  }
  const keys = JSON.parse(readFileSync(file, 'utf8'));
  keys.keys[0].k = Buffer.alloc(16, 7).toString('base64url');
  writeFileSync(file, JSON.stringify(keys), { mode: 0o600 });
  chmodSync(file, 0o600);
  try {
    await openRuntime(testConfig(dir), quiet);
    assert.unreachable('started with a 128-bit key');
  } catch (err) {
    assert.match((err as Error).message, /at least 32 random bytes/);
  }
});

K('rotation: tokens signed before still verify, new tokens use the new kid', async () => {
  const t = await startApp();
  const before = await signIn(t, 'root@example.com', 'root password 1');
  const dataDir = t.dataDir;
  const clock = t.clock;
  await t.close();
  const { kid } = rotateSigningKeys(dataDir);
  const t2 = await startApp({ dataDir, clock });
  expectStatus(await t2.call('GET', `${ID}/users/me`, { token: before.accessToken }), 200, 'old token after rotation');
  const after = await signIn(t2, 'root@example.com', 'root password 1');
  const header = JSON.parse(Buffer.from(after.accessToken.split('.')[0]!, 'base64url').toString());
  assert.is(header.kid, kid);
  assert.is(header.alg, 'HS256');
  assert.is(header.typ, 'at+jwt');
  await t2.close();
  // a second rotation soon after keeps the original key: tokens it signed may still be alive
  const ttl = t2.rt.config.tokenTtlSeconds;
  const originalKid = JSON.parse(Buffer.from(before.accessToken.split('.')[0]!, 'base64url').toString()).kid as string;
  assert.equal(rotateSigningKeys(dataDir, clock.now()).retired, []);
  const t3 = await startApp({ dataDir, clock });
  expectStatus(await t3.call('GET', `${ID}/users/me`, { token: before.accessToken }), 200, 'old token after a second rotation');
  await t3.close();
  // once they have all expired — a token lifetime and the clock skew after a start found a newer key (t2's) — it goes
  assert.not.ok(rotateSigningKeys(dataDir, clock.now() + ttl * 1000).retired.includes(originalKid));
  assert.ok(rotateSigningKeys(dataDir, clock.now() + (ttl + 32) * 1000).retired.includes(originalKid));
});

K('rotations racing one another and servers starting beside them lose no key: each reported key is in the file (a lock on it)', async () => {
  const dataDir = tempDir();
  rotateSigningKeys(dataDir); // the first key, then the racers
  const keysModule = pathToFileURL(join(import.meta.dirname, '..', 'src', 'identity', 'signing-keys.ts')).href;
  // each child: 40 rotations, or (a server starting) 40 loads that record the signer in the file
  const racer = (what: 'rotate' | 'load') => {
    const code = `const m = await import(${JSON.stringify(keysModule)}); const kids = [];
for (let i = 0; i < 40; i++) ${what === 'rotate' ? 'kids.push(m.rotateSigningKeys(process.argv[1]).kid)' : 'm.loadSigningKeys(process.argv[1], Date.now(), { tokenTtlSeconds: 3600 + i })'};
console.log(JSON.stringify(kids));`;
    return new Promise<string[]>((resolve, reject) => {
      const c = spawn(process.execPath, [...process.execArgv, '--input-type=module', '-e', code, dataDir], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      c.stdout!.on('data', (d: Buffer) => (out += d));
      c.stderr!.on('data', (d: Buffer) => (err += d));
      c.on('exit', (status) => (status === 0 ? resolve(JSON.parse(out) as string[]) : reject(new Error(`${what} exited ${status}: ${err}`))));
    });
  };
  const reported = (await Promise.all([racer('rotate'), racer('rotate'), racer('rotate'), racer('load')])).flat();
  assert.is(reported.length, 120);
  const inFile = new Set(JSON.parse(readFileSync(join(dataDir, 'secrets', 'jwt-keys.json'), 'utf8')).keys.map((k: { kid: string }) => k.kid));
  assert.equal(reported.filter((kid) => !inFile.has(kid)), [], 'every key a rotation reported is in the file');
  assert.equal(readdirSync(join(dataDir, 'secrets')).filter((n) => n.includes('.lock')), [], 'the lock is released');
});

K.run();
