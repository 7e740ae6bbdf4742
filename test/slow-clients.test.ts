// Slow clients (RELIABILITY.md I2): the server, as a child process started the way `serve` starts
// it but with deadlines of a second or three (HEADERS_TIMEOUT_MS, REQUEST_TIMEOUT_MS), cuts off a
// client that sends its request head byte by byte (slowloris) and clients that trickle a request
// body — JSON, a CSV upload, a feed upload — with a 408, leaves no temporary file behind and keeps
// serving. The boot sets these limits itself instead of leaving Node's defaults.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigError, loadConfig } from '../src/config.ts';
import { serve, type Running } from './child-server.ts';
import { ID, LEDGER, orgWithLedger, passwordToken, request, tempDir, until, type CallOptions } from './helpers.ts';

const EMAIL = 'slow@example.com';
const PASSWORD = 'slow clients password';
const HEADERS_MS = 1000;
const REQUEST_MS = 3000;
/** What a deadline allows beyond the limit: Node's check interval (100 ms here) and a busy machine. */
const SLACK_MS = 1500;

/** The listening line's `limits`: what the server object holds, read back after it was set up. */
const limitsOf = (s: Running) => JSON.parse(s.stdout().split('\n').find((l) => l.includes('"msg":"listening"'))!).limits;

interface SlowResult {
  /** Milliseconds from connecting until the server closed the connection. */
  ms: number;
  /** Everything the server sent. */
  received: string;
}

/**
 * A client over a raw socket: sends `head`, then one byte of `trickle` every `everyMs` (and
 * nothing more once it ran out) until the server closes the connection, or `deadlineMs` passes
 * (then it gives up: undefined).
 */
function slowClient(port: number, head: string, trickle: string, everyMs: number, deadlineMs: number): Promise<SlowResult | undefined> {
  return new Promise((resolve) => {
    const started = performance.now();
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    let i = 0;
    const timer = setInterval(() => {
      if (i < trickle.length && socket.writable) socket.write(trickle[i++]!);
    }, everyMs);
    const deadline = setTimeout(() => {
      clearInterval(timer);
      socket.destroy();
      resolve(undefined);
    }, deadlineMs);
    socket.on('connect', () => socket.write(head));
    socket.on('data', (d) => (received += d.toString('latin1')));
    socket.on('error', () => undefined); // a reset after the server's close is a close too
    socket.on('close', () => {
      clearInterval(timer);
      clearTimeout(deadline);
      resolve({ ms: performance.now() - started, received });
    });
  });
}

/** Polls until `dir` has no entries (or is gone); false after `ms`. */
async function emptied(dir: string, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  for (;;) {
    let entries: string[] = [];
    try {
      entries = readdirSync(dir);
    } catch {
      /* not there: empty */
    }
    if (entries.length === 0) return true;
    if (Date.now() > until) return false;
    await sleep(20);
  }
}

interface Ctx {
  server: Running;
  data: string;
  token: string;
  orgId: string;
  ledgerId: string;
  feedToken: string;
}

const S = suite<Ctx>('slow clients (I2)');
S.before(async (ctx) => {
  ctx.data = tempDir();
  ctx.server = await serve({
    CONTACT_LEDGER_DATA: ctx.data,
    CONTACT_LEDGER_ADMIN_EMAIL: EMAIL,
    CONTACT_LEDGER_ADMIN_PASSWORD: PASSWORD,
    HEADERS_TIMEOUT_MS: String(HEADERS_MS),
    REQUEST_TIMEOUT_MS: String(REQUEST_MS),
  });
  const call = (method: string, path: string, opts: CallOptions = {}) => request(`http://127.0.0.1:${ctx.server.port}`, method, path, opts);
  ctx.token = await passwordToken(call, EMAIL, PASSWORD);
  Object.assign(ctx, await orgWithLedger(call, ctx.token, 'Slow'));
  const sa = (await call('POST', `${ID}/service-accounts`, { token: ctx.token, body: { name: 'feed', permissions: ['feed'] } })).body;
  ctx.feedToken = (await call('POST', `${ID}/session`, { body: { grantType: 'clientCredentials', clientId: sa.clientId, clientSecret: sa.clientSecret } })).body.accessToken;
});
S.after(async (ctx) => {
  ctx.server.child.kill('SIGKILL');
  await ctx.server.exit;
});

S('the boot sets the limits itself: the configured ones, checked every 100 ms here', ({ server }) => {
  assert.equal(limitsOf(server), { headersTimeoutMs: HEADERS_MS, requestTimeoutMs: REQUEST_MS, keepAliveTimeoutMs: 5000, checkingIntervalMs: 100, maxConnectionsPerAddress: 1024, maxConnections: 16_384 });
});

S('a client sending its request head one byte at a time is answered 408 and cut off at HEADERS_TIMEOUT_MS', async ({ server }) => {
  // Every byte arrives well within any idle timeout; only the deadline for the whole head ends it.
  const r = await slowClient(server.port, 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n', `X-Slow: ${'a'.repeat(200)}\r\n\r\n`, 50, HEADERS_MS + SLACK_MS);
  assert.ok(r, `still connected ${HEADERS_MS + SLACK_MS} ms after connecting (headersTimeout ${HEADERS_MS} ms)`);
  assert.match(r!.received, /^HTTP\/1\.1 408 /, r!.received);
  assert.match(r!.received, /\r\nContent-Type: application\/problem\+json\r\n[\s\S]*"code":"request_timeout"/, 'as problem+json');
});

S('clients that never close their side after the 408 do not keep their sockets: the server destroys them', async ({ server }) => {
  // allowHalfOpen: the client ignores the server's FIN and keeps its side open, as a hostile one would
  const sockets = Array.from({ length: 30 }, () => {
    const s = net.connect({ port: server.port, host: '127.0.0.1', allowHalfOpen: true });
    s.on('error', () => undefined);
    s.on('connect', () => s.write('GET /healthz HTTP/1.1\r\n'));
    return s;
  });
  try {
    // Each client's connection as the server holds it: its socket's inode among the server's open
    // files. Followed one by one (not as a count of the server's files, which other files change),
    // and each seen held once, however the accepts and cut-offs of a busy machine interleave.
    const everHeld = new Set<number>();
    const held = () => {
      const open = serverSocketInodes(server.child.pid!);
      const ports = sockets.map((s) => s.localPort).filter((p): p is number => p !== undefined);
      const inodes = connectionInodes(server.port, ports);
      const now = ports.filter((p) => inodes.has(p) && open.has(inodes.get(p)!));
      now.forEach((p) => everHeld.add(p));
      return now.length;
    };
    await until('the server holds each socket', () => (held(), everHeld.size), (n) => n === 30, 10_000);
    // the 408 at HEADERS_TIMEOUT_MS, then a second's grace to read it
    await until('the server released them', held, (n) => n === 0, HEADERS_MS + 1_000 + 3 * SLACK_MS);
    assert.ok(sockets.every((s) => !s.destroyed), 'the clients kept their side open throughout');
  } finally {
    sockets.forEach((s) => s.destroy());
  }
});

/** The inodes of the sockets process `pid` has open. */
function serverSocketInodes(pid: number): Set<string> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      /* closed while listed */
    }
  }
  return inodes;
}

/** For each client port, the inode of the server's end (local port `serverPort`) of its IPv4 TCP connection. */
function connectionInodes(serverPort: number, clientPorts: number[]): Map<number, string> {
  const wanted = new Set(clientPorts);
  const found = new Map<number, string>();
  for (const line of readFileSync('/proc/net/tcp', 'latin1').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 10) continue;
    const local = parseInt(f[1]!.split(':')[1]!, 16);
    const remote = parseInt(f[2]!.split(':')[1]!, 16);
    if (local === serverPort && wanted.has(remote) && f[9] !== '0') found.set(remote, f[9]!);
  }
  return found;
}

S('a request Node cannot parse (raw non-ASCII in the URL, a head too large) is answered as problem+json, not a bare status line', async ({ server }) => {
  const raw = (bytes: Buffer) => slowClient(server.port, bytes.toString('latin1'), '', 1000, 5000);
  const utf8Url = await raw(Buffer.from('GET /api/ledger/v1/orgs/o/ledgers/l/contacts?name=ÉMILE HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', 'utf8'));
  assert.ok(utf8Url);
  const [head, body] = utf8Url!.received.split('\r\n\r\n');
  assert.match(head!, /^HTTP\/1\.1 400 Bad Request\r\n/);
  assert.match(head!, /\r\nContent-Type: application\/problem\+json\r\n/);
  const problem = JSON.parse(body!);
  assert.equal([problem.status, problem.code], [400, 'malformed_request']);
  assert.is(problem.detail, 'The request is not valid HTTP: Invalid char in url query; spaces and characters outside ASCII in the URL must be percent-encoded (as UTF-8).');
  // each refusal says what was wrong, in the parser's words; the URL's rule only where the URL is at fault (a reviewer's case)
  const detailOf = async (head: string) => {
    const answer = await raw(Buffer.from(head, 'latin1'));
    assert.match(answer!.received, /^HTTP\/1\.1 400 /, head);
    return JSON.parse(answer!.received.split('\r\n\r\n')[1]!).detail as string;
  };
  assert.is(await detailOf('GET /healthz?a=b c HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'), 'The request is not valid HTTP: Expected HTTP/, RTSP/ or ICE/; spaces and characters outside ASCII in the URL must be percent-encoded (as UTF-8).');
  assert.is(await detailOf('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX Bad: 1\r\n\r\n'), 'The request is not valid HTTP: Invalid header token.');
  assert.is(await detailOf('POST /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab'), 'The request is not valid HTTP: Duplicate Content-Length.');
  const huge = await raw(Buffer.from(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`));
  assert.match(huge!.received, /^HTTP\/1\.1 431 [\s\S]*"code":"headers_too_large"/);
  // an id, as every answer has (a contract tester found none), the same in the head and the problem
  const id = /\r\nX-Request-Id: ([0-9a-f-]{36})\r\n/.exec(huge!.received)?.[1];
  assert.ok(id, huge!.received.slice(0, 300));
  assert.ok(huge!.received.includes(`"requestId":"${id}"`));
  assert.is((await request(`http://127.0.0.1:${server.port}`, 'GET', '/healthz')).status, 200, 'still serving');
});

S('clients trickling a body (JSON, CSV upload, feed upload) are answered 408 and cut off at REQUEST_TIMEOUT_MS; nothing is left behind', async (ctx) => {
  const { server, token, orgId, ledgerId, feedToken, data } = ctx;
  const boundary = 'slowclientboundary';
  const post = (path: string, auth: string, type: string, preamble: string) =>
    slowClient(
      server.port,
      `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${auth}\r\nContent-Type: ${type}\r\nX-Request-Id: slow-${type.split(/[/;]/)[1]}\r\nContent-Length: 100000\r\n\r\n${preamble}`,
      'x'.repeat(1000),
      50,
      REQUEST_MS + SLACK_MS,
    );
  // All three at once: each has the whole request deadline to itself.
  const [json, csv, feed] = await Promise.all([
    post(`${ID}/orgs`, token, 'application/json', '{"name":"'),
    post(
      `${LEDGER}/orgs/${orgId}/ledgers/${ledgerId}/imports`,
      token,
      `multipart/form-data; boundary=${boundary}`,
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="slow.csv"\r\nContent-Type: text/csv\r\n\r\nname,company\r\n`,
    ),
    post(`${LEDGER}/feed`, feedToken, 'application/x-ndjson', '{"name":"'),
  ]);
  for (const [what, r] of [['JSON', json], ['CSV upload', csv], ['feed upload', feed]] as const) {
    assert.ok(r, `${what}: still connected ${REQUEST_MS + SLACK_MS} ms after connecting (requestTimeout ${REQUEST_MS} ms)`);
    assert.match(r!.received, /^HTTP\/1\.1 408 /, `${what}: ${r!.received}`);
  }
  // the 408 carries the request's own id, the one its access line logs (it had a new one: a reviewer's case)
  assert.match(json!.received, /\r\nX-Request-Id: slow-json\r\n[\s\S]*"requestId":"slow-json"/);
  assert.ok(await emptied(join(data, 'uploads', 'tmp'), 5000), 'the partial CSV upload is removed');
  assert.ok(await emptied(join(data, 'feeds', 'tmp'), 5000), 'the partial feed upload is removed');
  const call = (path: string, auth = token) => request(`http://127.0.0.1:${server.port}`, 'GET', path, { token: auth });
  assert.is((await call('/healthz')).status, 200, 'the server keeps serving');
  assert.is((await call(`${ID}/orgs`)).body.orgs.length, 1, 'no organization was created');
  assert.is((await call(`${LEDGER}/orgs/${orgId}/ledgers/${ledgerId}/imports`)).body.imports.length, 0, 'no import job');
  assert.is((await call(`${LEDGER}/feed`, feedToken)).body.feeds.length, 0, 'no feed job');
  // the access log and /metrics say 408, what the clients got (not null, nor Koa's unsent 404)
  const logged = await until(
    'the access log has the three cut-off requests',
    () => server.stdout().split('\n').filter((l) => l.includes('"msg":"request"') && l.includes('"aborted":true')).map((l) => JSON.parse(l) as { status: number | null; path: string }),
    (lines) => lines.length >= 3,
  );
  assert.equal(logged.map((l) => l.status), [408, 408, 408], JSON.stringify(logged));
  assert.equal(logged.map((l) => (l as { requestId?: string }).requestId).sort(), ['slow-form-data', 'slow-json', 'slow-x-ndjson']);
  const metrics = (await call('/metrics')).text;
  assert.match(metrics, /contact_ledger_http_requests_total\{method="POST",route="\/api\/identity\/v1\/orgs",status="408"\} 1/);
  assert.not.match(metrics, /method="POST",route="[^"]*",status="404"/);
});

S('SIGTERM with a connection that never sent a request and an idle keep-alive one: both closed at once, exit 0 (not the drain timeout)', async () => {
  // HEADERS_TIMEOUT_MS above the drain timeout (10 s): only the shutdown can close them in time
  const s = await serve({ CONTACT_LEDGER_DATA: tempDir(), HEADERS_TIMEOUT_MS: '60000' });
  const neverUsed = net.connect(s.port, '127.0.0.1');
  neverUsed.on('error', () => undefined);
  const neverUsedClosed = new Promise((r) => neverUsed.once('close', r));
  await new Promise((r) => neverUsed.once('connect', r));
  // fetch keeps its connection open for the next request
  const health = await fetch(`http://127.0.0.1:${s.port}/healthz`);
  assert.is(health.status, 200);
  await health.text();
  s.child.kill('SIGTERM');
  assert.is(await s.exit, 0, s.stderr().slice(-2000));
  await neverUsedClosed;
  assert.not.match(s.stdout(), /did not finish in time/);
});

S('without settings the boot sets 20 s for the head and 600 s for the request (not Node’s 60 s and 300 s)', async () => {
  const s = await serve({ CONTACT_LEDGER_DATA: tempDir() });
  try {
    assert.equal(limitsOf(s), { headersTimeoutMs: 20_000, requestTimeoutMs: 600_000, keepAliveTimeoutMs: 5000, checkingIntervalMs: 1000, maxConnectionsPerAddress: 1024, maxConnections: 16_384 });
  } finally {
    s.child.kill('SIGTERM');
    assert.is(await s.exit, 0);
  }
  assert.throws(() => loadConfig({ HEADERS_TIMEOUT_MS: '5000', REQUEST_TIMEOUT_MS: '4000' }), (e: unknown) => e instanceof ConfigError && /REQUEST_TIMEOUT_MS must be at least HEADERS_TIMEOUT_MS/.test(e.message));
  assert.throws(() => loadConfig({ HEADERS_TIMEOUT_MS: '0' }), (e: unknown) => e instanceof ConfigError && /HEADERS_TIMEOUT_MS/.test(e.message));
  // connections a client may hold: 1024 from one address, 16384 in all; behind a proxy (every
  // connection its own) the per-address limit only when set outright (a reviewer's case)
  assert.equal([loadConfig({}).maxConnectionsPerAddress, loadConfig({}).maxConnections], [1024, 16_384]);
  assert.is(loadConfig({ TRUST_PROXY: 'true' }).maxConnectionsPerAddress, 0);
  assert.is(loadConfig({ TRUST_PROXY: 'true', MAX_CONNECTIONS_PER_ADDRESS: '2000' }).maxConnectionsPerAddress, 2000);
});

S('connections over MAX_CONNECTIONS_PER_ADDRESS are closed as they come, and the log says so once, naming the client', async () => {
  const s = await serve({ CONTACT_LEDGER_DATA: tempDir(), MAX_CONNECTIONS_PER_ADDRESS: '2' });
  const sockets: net.Socket[] = [];
  try {
    for (let i = 0; i < 4; i++) {
      const socket = net.connect(s.port, '127.0.0.1');
      socket.on('error', () => undefined);
      sockets.push(socket);
      await new Promise((r) => socket.once('connect', r));
    }
    const line = await until(
      'the refusal in the log',
      () => s.stdout().split('\n').find((l) => l.includes('connections closed as they came')),
      Boolean,
      5000,
    );
    const said = JSON.parse(line!) as { refused: number; clients: { client: string; refused: number }[] };
    assert.equal([said.refused, said.clients[0]?.client], [1, '127.0.0.1'], line);
  } finally {
    for (const socket of sockets) socket.destroy();
    s.child.kill('SIGTERM');
    assert.is(await s.exit, 0);
  }
});

S.run();
