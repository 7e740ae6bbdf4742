// The HTTP(S) server of `serve` (src/http/server.ts) in this process, with a handler the test
// controls: the TLS handshake deadline, and the shutdown's closing of every connection without a
// request in flight (idle keep-alive, never used, TLS never started) while a request in flight
// finishes. The SIGTERM path of the real program is in slow-clients.test.ts.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { join } from 'node:path';
import { clientOf } from '../src/client-address.ts';
import { createHttpServer } from '../src/http/server.ts';
import { refusalLog } from '../src/cli/serve.ts';
import { tempDir, within } from './helpers.ts';

const HEADERS_MS = 500;

function certificate(): { cert: Buffer; key: Buffer } {
  const dir = tempDir();
  const [cert, key] = [join(dir, 'cert.pem'), join(dir, 'key.pem')];
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=127.0.0.1'], { stdio: 'ignore' });
  return { cert: readFileSync(cert), key: readFileSync(key) };
}

/** A server whose `/slow` answers only when the test calls release(); everything else at once. */
async function start(tls?: { cert: Buffer; key: Buffer }, limits: { maxConnections?: number; maxConnectionsPerAddress?: number } = {}, onRefused?: (r: { address: string; over: string }) => void) {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const handler: http.RequestListener = (req, res) => {
    if (req.url === '/slow') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first part;');
      void released.then(() => res.end('second part'));
    } else res.end('fast');
  };
  const made = createHttpServer({ headersTimeoutMs: HEADERS_MS, requestTimeoutMs: 2 * HEADERS_MS, ...limits }, handler, tls, onRefused);
  made.server.listen(0, '127.0.0.1');
  await once(made.server, 'listening');
  return { ...made, port: (made.server.address() as AddressInfo).port, release };
}

/** A raw TCP connection that sends nothing; resolves once connected. */
async function silent(port: number): Promise<{ socket: net.Socket; gone: Promise<unknown> }> {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  const gone = once(socket, 'close');
  await once(socket, 'connect');
  return { socket, gone };
}

/** GET over a keep-alive agent; resolves with the response once its head arrived. */
function get(port: number, path: string, tls: boolean, agent: http.Agent): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const options = { host: '127.0.0.1', port, path, agent, rejectUnauthorized: false };
    (tls ? https.get(options, resolve) : http.get(options, resolve)).on('error', reject);
  });
}

/** `promise`, or a failure naming `what` once `ms` passed. */
async function text(res: http.IncomingMessage): Promise<string> {
  let body = '';
  res.setEncoding('utf8');
  for await (const chunk of res) body += chunk;
  return body;
}

const H = suite('HTTP server: TLS handshake deadline and shutdown');
const TLS = certificate();

H('with TLS, a connection that never starts its handshake is closed at the head deadline', async () => {
  const s = await start(TLS);
  try {
    const { gone } = await silent(s.port);
    await within(gone, 10 * HEADERS_MS, 'the server closes the connection at the head deadline (Node alone waits 120 s)');
    // and it is still serving
    assert.is(await text(await get(s.port, '/', true, new https.Agent())), 'fast');
  } finally {
    s.server.closeAllConnections();
    s.server.close();
  }
});

for (const tls of [false, true]) {
  H(`${tls ? 'HTTPS' : 'HTTP'}: the shutdown closes idle, never-used${tls ? ' and handshake-less' : ''} connections at once; a request in flight finishes`, async () => {
    const s = await start(tls ? TLS : undefined);
    const agent = tls ? new https.Agent({ keepAlive: true }) : new http.Agent({ keepAlive: true });
    const neverUsed = await silent(s.port);
    // with TLS: a handshake done but no request (a client that connected ahead of need)
    let handshakeOnly: Promise<unknown> | undefined;
    if (tls) {
      const t = tlsConnect({ host: '127.0.0.1', port: s.port, rejectUnauthorized: false });
      t.on('error', () => undefined);
      handshakeOnly = once(t, 'close');
      await once(t, 'secureConnect');
    }
    // an idle keep-alive connection (its request answered)
    const idleAgent = tls ? new https.Agent({ keepAlive: true }) : new http.Agent({ keepAlive: true });
    assert.is(await text(await get(s.port, '/', tls, idleAgent)), 'fast');
    const idleSocket = Object.values(idleAgent.freeSockets)[0]![0]!;
    const idleClosed = once(idleSocket, 'close');
    // a request in flight: its head and first part are out, the rest not yet
    const slow = await get(s.port, '/slow', tls, agent);
    const slowBody = text(slow);

    const closedServer = new Promise<void>((r) => s.server.close(() => r()));
    const closed = s.closeQuietConnections();
    assert.is(closed, tls ? 3 : 2, 'the never-used and the idle connections (and the handshake-only one) are closed');
    await within(Promise.all([neverUsed.gone, idleClosed, handshakeOnly]), 5000, 'the quiet connections close at once');
    // the request in flight was not cut off
    s.release();
    assert.is(await slowBody, 'first part;second part');
    agent.destroy();
    await closedServer;
  });
}

H('connections over MAX_CONNECTIONS_PER_ADDRESS or MAX_CONNECTIONS are closed as they come; one that ends makes room (a security tester\'s slow-body flood)', async () => {
  for (const [limits, over] of [[{ maxConnectionsPerAddress: 3 }, 'per_address'], [{ maxConnections: 3 }, 'total']] as const) {
    const refused: { address: string; over: string }[] = [];
    const s = await start(undefined, limits, (r) => refused.push(r));
    const agent = new http.Agent({ keepAlive: false });
    try {
      const held = await Promise.all([silent(s.port), silent(s.port), silent(s.port)]);
      // a fourth: closed by the server before it could send anything
      const fourth = await silent(s.port);
      await within(fourth.gone, 300, `${JSON.stringify(limits)}: the fourth connection closed at once (the head deadline is ${HEADERS_MS} ms)`);
      assert.is(await get(s.port, '/', false, agent).then(() => 'answered', () => 'refused'), 'refused');
      // each refusal is told, for the log (they were invisible: a reviewer's case)
      assert.ok(refused.length >= 2 && refused.every((r) => r.over === over && r.address === '127.0.0.1'), JSON.stringify(refused));
      held[0]!.socket.destroy();
      await held[0]!.gone;
      // the server sees the close a moment later
      let answered = '';
      for (let i = 0; i < 50 && !answered; i++) answered = await get(s.port, '/', false, agent).then(text, () => '');
      assert.is(answered, 'fast', `${JSON.stringify(limits)}: room again`);
      for (const h of held) h.socket.destroy();
    } finally {
      agent.destroy();
      s.server.close();
    }
  }
});

H('a client is an IPv4 address (also one a translator carries in IPv6) or an IPv6 /64: one network\'s hosts count together', () => {
  const cases: [string, string, string?][] = [
    ['10.0.0.7', '10.0.0.7'],
    ['::ffff:10.0.0.7', '10.0.0.7'],
    ['2001:db8:1:2:aaaa:bbbb:cccc:dddd', '2001:db8:1:2::/64'],
    ['2001:db8:1:2::1', '2001:db8:1:2::/64'],
    ['2001:0db8:0001:0002:ffff::9', '2001:db8:1:2::/64'],
    ['2001:DB8:1:2::1', '2001:db8:1:2::/64'],
    ['2001:db8::5', '2001:db8:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['::', '0:0:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['1::2:3:4:5:1.2.3.4', '1:0:2:3::/64', 'a dotted tail is two groups'],
    // IPv4 clients a translator carries in IPv6 are IPv4 clients (behind NAT64 they were all one /64: a reviewer's case)
    ['64:ff9b::808:808', '8.8.8.8'],
    ['64:ff9b::8.8.4.4', '8.8.4.4'],
    ['::ffff:0:a00:7', '10.0.0.7'],
    ['::ffff:a00:7', '10.0.0.7'],
    ['::a00:7', '10.0.0.7'],
  ];
  for (const [address, client, why] of cases) assert.is(clientOf(address), client, why ?? address);
});

H('refused connections are logged at once after a quiet minute, then once a minute while a flood lasts, each counted once, the clients with the most first; flush says the rest', () => {
  const said: { refused: number; clients: { client: string; refused: number }[] }[] = [];
  let due: (() => void) | undefined;
  const log = refusalLog({ warn: (fields: object) => void said.push(fields as (typeof said)[number]) } as never, {
    set: (fn) => ((due = fn), 'timer'),
    clear: () => (due = undefined),
  });
  const minute = () => {
    const fn = due;
    due = undefined;
    fn?.();
  };
  log.refused({ address: '10.0.0.1', over: 'per_address' });
  assert.equal(said, [{ refused: 1, clients: [{ client: '10.0.0.1', refused: 1 }] }], 'the first at once');
  for (let i = 0; i < 59; i++) log.refused({ address: i % 3 ? '10.0.0.1' : '10.0.0.2', over: 'per_address' });
  log.refused({ address: '10.0.0.3', over: 'total' });
  assert.is(said.length, 1, 'nothing more within the minute');
  minute();
  assert.equal(said[1], { refused: 60, clients: [{ client: '10.0.0.1', refused: 39 }, { client: '10.0.0.2', refused: 20 }, { client: '10.0.0.3 (all connections in use)', refused: 1 }] });
  log.refused({ address: '10.0.0.1', over: 'per_address' });
  assert.is(said.length, 2, 'the flood goes on: said at the end of the next minute, not at once (it was twice a minute)');
  minute();
  assert.equal(said[2]!.refused, 1);
  minute(); // a quiet minute: the window closes
  assert.is(due, undefined);
  log.refused({ address: '10.0.0.4', over: 'per_address' });
  assert.is(said.length, 4, 'after a quiet minute, at once again');
  log.refused({ address: '10.0.0.4', over: 'per_address' });
  log.flush();
  assert.equal(said[4], { refused: 1, clients: [{ client: '10.0.0.4', refused: 1 }] }, 'flushed');
  assert.is(due, undefined);
});

H.run();
