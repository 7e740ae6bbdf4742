// The program as operators run it, on its data folder over time: signing keys rotated around restarts, a wall clock that jumps,
// root's commands on the service user's folder, inbox files and the feed command (split from cli.test.ts, which ran near its time limit).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { rotateSigningKeys } from '../src/identity/signing-keys.ts';
import { once } from 'node:events';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { ID, request, tempDir, until, within } from './helpers.ts';
import { baseEnv, MAIN, serve } from './child-server.ts';

function run(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [MAIN, ...args], { env: { ...baseEnv, ...env }, encoding: 'utf8', timeout: 30_000 });
}

const C = suite('command line: the data folder over time');

C('keys rotate, while the server runs and while it is stopped, in any order: every token issued before still verifies after each restart until it expires', async () => {
  // A tester's case: with no server running the newest key was taken for the one the last server
  // signed with, which it was not after a rotation done while it ran, nor after two rotations in a
  // row while stopped: tokens minutes old got 401 after the restart.
  const data = tempDir();
  const env = { CONTACT_LEDGER_DATA: data, CONTACT_LEDGER_ADMIN_EMAIL: 'ops@example.com', CONTACT_LEDGER_ADMIN_PASSWORD: 'a long passphrase 42' };
  const signIn = async (port: number) => (await request(`http://127.0.0.1:${port}`, 'POST', `${ID}/session`, { body: { grantType: 'password', email: 'ops@example.com', password: 'a long passphrase 42' } })).body.accessToken as string;
  const kidOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()).kid as string;
  const rotate = () => {
    const r = run(['keys', 'rotate'], env);
    assert.is(r.status, 0, r.stderr);
    assert.not.match(r.stdout, /removed/, 'no key is removed while a token it signed may be alive');
    return r.stdout;
  };
  const tokens: string[] = [];
  // each round: a server issues a token; rotations while it runs; it stops; rotations while stopped
  const rounds: [whileServing: number, whileStopped: number][] = [[2, 2], [0, 2], [1, 1]];
  for (const [whileServing, whileStopped] of rounds) {
    const s = await serve(env);
    try {
      for (const [i, token] of tokens.entries()) {
        assert.is((await request(`http://127.0.0.1:${s.port}`, 'GET', `${ID}/users/me`, { token })).status, 200, `token ${i} (${kidOf(token)}) after the restart`);
      }
      const token = await signIn(s.port);
      tokens.push(token);
      for (let i = 0; i < whileServing; i++) {
        const out = rotate();
        if (i > 0) assert.match(out, new RegExp(`kept ${kidOf(token)}, which the running server \\(pid ${s.child.pid}\\) still signs with`));
      }
    } finally {
      s.child.kill('SIGTERM');
      assert.is(await s.exit, 0);
    }
    for (let i = 0; i < whileStopped; i++) {
      const out = rotate();
      if (whileServing + i > 0) assert.match(out, new RegExp(`kept ${kidOf(tokens.at(-1)!)}, which the server signed with when it last ran`));
    }
  }
  const last = await serve(env);
  try {
    for (const [i, token] of tokens.entries()) assert.is((await request(`http://127.0.0.1:${last.port}`, 'GET', `${ID}/users/me`, { token })).status, 200, `token ${i} at the end`);
  } finally {
    last.child.kill('SIGTERM');
    await last.exit;
  }
  // a key goes once all its tokens have expired: a token lifetime (TOKEN_TTL_SECONDS, 3600) and the
  // clock skew after a start found a newer key; one no server ever signed with, after the longest
  // lifetime there is (86400 s); the newest stays, it signs
  const file = join(data, 'secrets', 'jwt-keys.json');
  type Stored = { kid: string; retiredAt?: string; signingFrom?: string };
  const keys = (JSON.parse(readFileSync(file, 'utf8')) as { keys: Stored[] }).keys;
  const signing = keys.at(-1)!.kid;
  const latest = Math.max(...keys.filter((k) => k.retiredAt).map((k) => Date.parse(k.retiredAt!)));
  const signedLast = keys.filter((k) => k.signingFrom && Date.parse(k.retiredAt!) === latest).map((k) => k.kid);
  assert.is(signedLast.length, 1, 'the key of the last round');
  const within = rotateSigningKeys(data, latest + 3600_000);
  assert.not.ok(within.retired.includes(signedLast[0]!), 'kept within the token lifetime of its retirement');
  const after = rotateSigningKeys(data, latest + 3632_000);
  const gone = [...within.retired, ...after.retired];
  for (const k of keys.slice(0, -1)) if (k.signingFrom) assert.ok(gone.includes(k.kid), `${k.kid}, which signed, is removed a token lifetime after it was retired`);
  const dayAfter = rotateSigningKeys(data, latest + 86_432_000);
  assert.equal([...gone, ...dayAfter.retired].sort(), keys.slice(0, -1).map((k) => k.kid).sort());
  assert.equal((JSON.parse(readFileSync(file, 'utf8')) as { keys: Stored[] }).keys.map((k) => k.kid), [signing, within.kid, after.kid, dayAfter.kid]);
});

C('a wall clock that jumps a week forward (a VM resumed, NTP setting it right) leaves the server answering and SIGTERM working: its polls count elapsed time', async () => {
  // The program's Date, a week ahead from SIGUSR2 on (its worker threads keep the real one).
  const shift = join(tempDir(), 'shift-clock.mjs');
  writeFileSync(
    shift,
    `const Real = Date; let offset = 0;
class Shifted extends Real { constructor(...a) { if (a.length === 0) super(Real.now() + offset); else super(...a); } static now() { return Real.now() + offset; } }
globalThis.Date = Shifted;
process.on('SIGUSR2', () => { offset += 7 * 86400000; console.log('{"msg":"clock moved"}'); });`,
  );
  const s = await serve({ CONTACT_LEDGER_DATA: tempDir(), NODE_OPTIONS: `--import=${pathToFileURL(shift).href}` });
  try {
    const base = `http://127.0.0.1:${s.port}`;
    s.child.kill('SIGUSR2');
    await until('the clock moved', () => s.stdout().includes('"msg":"clock moved"'), Boolean, 10_000);
    // node-cron 4 went through each of the 604,800 seconds a schedule of every second missed, in one
    // go: the server answered nothing for minutes, SIGTERM included (a tester's case). Its polls now
    // run on timers; node-cron keeps the times of the day, which missed seven each.
    const from = performance.now();
    for (let n = 0; performance.now() - from < 3_000; n++) {
      const r = await within(request(base, 'GET', '/healthz'), 10_000, `request ${n + 1} after the jump answered`);
      assert.is(r.status, 200);
    }
  } finally {
    s.child.kill('SIGTERM');
  }
  assert.is(await s.exit, 0, s.stderr().slice(-2000));
});

C('root\'s commands that write the data folder are refused on a folder the service user owns (exit 2), and leave nothing of root\'s in it', async () => {
  if (process.getuid?.() !== 0) return;
  const data = tempDir();
  const env = { CONTACT_LEDGER_DATA: data };
  assert.is(run(['init', '--email', 'a@b.test', '--password', 'passphrase 12345'], env).status, 0);
  const backup = join(tempDir(), 'b.db');
  assert.is(run(['backup', backup], env).status, 0, 'backup reads only: root\'s cron job may take it');
  // another user, in a folder it may not enter: told so, not that there is no database (a reviewer's case)
  const closed = spawnSync(process.execPath, [MAIN, 'user', 'add', '--email', 'c@d.test', '--password', 'passphrase 12345'], { env: { ...baseEnv, ...env, HOME: tempDir() }, uid: 65534, gid: 65534, encoding: 'utf8', timeout: 30_000 });
  assert.is(closed.status, 2, closed.stderr);
  assert.match(closed.stderr, /is not usable \(EACCES\)/);
  execFileSync('chown', ['-R', '65534:65534', data]);
  const feedFile = join(tempDir(), 'people.jsonl');
  writeFileSync(feedFile, '{"name":"Ann","company":"Acme"}\n');
  const listing = () => execFileSync('find', [data, '-uid', '0'], { encoding: 'utf8' });
  for (const args of [['restore', backup], ['keys', 'rotate'], ['user', 'add', '--email', 'c@d.test', '--password', 'passphrase 12345'], ['migrate'], ['compact'], ['import', 'o_x', 'l_x', feedFile], ['feed', feedFile]]) {
    const r = run(args, env);
    assert.is(r.status, 2, `${args[0]}: ${r.stderr}`);
    // the whole command to copy: sudo clears the environment (an operator tester's case: the data folder was left out)
    assert.match(r.stderr, new RegExp(`the data folder .* is uid 65534's, and ${args[0]} runs as root: .* Run it as that user: sudo -u '#65534' env CONTACT_LEDGER_DATA=/\\S+ contact-ledger ${args[0]}`), args[0]);
  }
  assert.is(listing(), '', 'nothing of root\'s in the folder');
  // a folder whose name a shell would split or leave a quote open in: the command to copy names it as one word (a reviewer's case)
  const spaced = join(tempDir(), "client's data $HOME");
  assert.is(run(['init', '--email', 'a@b.test', '--password', 'passphrase 12345'], { CONTACT_LEDGER_DATA: spaced }).status, 0);
  execFileSync('chown', ['-R', '65534:65534', spaced]);
  const refused = run(['migrate'], { CONTACT_LEDGER_DATA: spaced });
  assert.is(refused.status, 2, refused.stderr);
  const word = /env CONTACT_LEDGER_DATA=(.+) contact-ledger migrate …/.exec(refused.stderr)?.[1];
  assert.ok(word, refused.stderr);
  assert.is(execFileSync('sh', ['-c', `printf %s ${word}`], { encoding: 'utf8' }), spaced, `${word} is the folder to a shell`);
  // feed as root beside a process that holds the folder and ends first: the file waits in the inbox
  // for the next start; the command does not open the folder itself (a reviewer's case: root's files)
  const lockModule = pathToFileURL(join(import.meta.dirname, '..', 'src', 'storage', 'lock.ts')).href;
  const holder = spawn(process.execPath, [...process.execArgv, '--input-type=module', '-e', `const { lockDataDir } = await import(${JSON.stringify(lockModule)}); lockDataDir(${JSON.stringify(data)}); console.log('locked'); setInterval(() => {}, 1000);`], { stdio: ['ignore', 'pipe', 'inherit'], uid: 65534, gid: 65534 });
  try {
    await once(holder.stdout!, 'data');
    const waiting = spawn(process.execPath, [MAIN, 'feed', feedFile], { env: { ...baseEnv, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    const handed = new Promise<void>((resolve) => waiting.stderr!.on('data', (d: Buffer) => ((err += d), /handed people\.jsonl to its inbox/.test(err) && resolve())));
    const exited = new Promise<number | null>((resolve) => waiting.on('exit', resolve));
    await Promise.race([handed, exited]);
    holder.kill('SIGKILL');
    assert.is(await exited, 1, err);
    assert.match(err, /has ended before it ingested \d+-people\.jsonl: the file is in its inbox, and the server ingests it when it starts/);
  } finally {
    holder.kill('SIGKILL');
  }
  assert.is(listing(), '', 'nothing of root\'s in the folder, the handed copy included');
  // the same from another PID namespace (root's container beside the service's): the holder is
  // found by the kernel's lock on the folder, not refused as if none ran (it was exit 2)
  if (spawnSync('unshare', ['--pid', '--fork', '--mount-proc', 'true']).status === 0) {
    const unseen = spawn(process.execPath, [...process.execArgv, '--input-type=module', '-e', `const { lockDataDir } = await import(${JSON.stringify(lockModule)}); lockDataDir(${JSON.stringify(data)}); console.log('locked'); setInterval(() => {}, 1000);`], { stdio: ['ignore', 'pipe', 'inherit'], uid: 65534, gid: 65534 });
    try {
      await once(unseen.stdout!, 'data');
      const waiting = spawn('unshare', ['--pid', '--fork', '--mount-proc', process.execPath, MAIN, 'feed', feedFile], { env: { ...baseEnv, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
      let err = '';
      const handed = new Promise<void>((resolve) => waiting.stderr!.on('data', (d: Buffer) => ((err += d), /handed people\.jsonl to its inbox/.test(err) && resolve())));
      const exited = new Promise<number | null>((resolve) => waiting.on('exit', resolve));
      await Promise.race([handed, exited]);
      assert.match(err, /\(pid \d+ as its own PID namespace numbers it: another container, or a process this one cannot see\) holds the data folder: handed people\.jsonl/, err);
      unseen.kill('SIGKILL');
      assert.is(await exited, 1, err);
      assert.match(err, /has ended before it ingested \d+-people\.jsonl: the file is in its inbox/);
    } finally {
      unseen.kill('SIGKILL');
    }
    assert.is(listing(), '', 'nothing of root\'s in the folder across namespaces either');
  }
  // a data folder not made yet, in a folder the service user owns (the systemd layout before the first start): init as root is refused too
  const parent = tempDir();
  chownSync(parent, 65534, 65534);
  const notYet = run(['init', '--email', 'a@b.test', '--password', 'passphrase 12345'], { CONTACT_LEDGER_DATA: join(parent, 'data') });
  assert.is(notYet.status, 2, notYet.stderr);
  assert.match(notYet.stderr, /is uid 65534's, and init runs as root/);
  assert.not.ok(existsSync(join(parent, 'data')), 'nothing made');
  // a database root's own (a container's root server) in a folder another user owns: root's commands go on
  const mixed = tempDir();
  assert.is(run(['init', '--email', 'a@b.test', '--password', 'passphrase 12345'], { CONTACT_LEDGER_DATA: mixed }).status, 0);
  chownSync(mixed, 65534, 65534);
  assert.is(run(['user', 'add', '--email', 'm@x.test', '--password', 'passphrase 12345'], { CONTACT_LEDGER_DATA: mixed }).status, 0);
  // as the folder's owner, the same commands work
  const asOwner = spawnSync(process.execPath, [MAIN, 'user', 'add', '--email', 'c@d.test', '--password', 'passphrase 12345'], { env: { ...baseEnv, ...env, HOME: data }, uid: 65534, gid: 65534, encoding: 'utf8', timeout: 30_000 });
  assert.is(asOwner.status, 0, asOwner.stderr);
});

C('an inbox file the server may not read goes to failed/ with the reason, and the files after it are still taken (an operator\'s root-owned drop held up the inbox for good)', async () => {
  if (process.getuid?.() !== 0) return; // the server runs as another user, which only root may start
  const data = tempDir();
  chownSync(data, 65534, 65534);
  const s = await serve({ CONTACT_LEDGER_DATA: data, HOME: data, CONTACT_LEDGER_ADMIN_EMAIL: 'a@b.test', CONTACT_LEDGER_ADMIN_PASSWORD: 'passphrase 12345' }, [], MAIN, { uid: 65534, gid: 65534 });
  try {
    const inbox = join(data, 'inbox');
    const record = `${JSON.stringify({ email: 'ro@x.test', name: 'Ro Ot', company: 'Acme' })}\n`;
    writeFileSync(join(inbox, 'a-root.jsonl'), record, { mode: 0o600 }); // root's, owner-only: before the good one in name order
    writeFileSync(join(inbox, 'b-good.jsonl'), record);
    chownSync(join(inbox, 'b-good.jsonl'), 65534, 65534);
    await until('the good file in done/ and the unreadable one in failed/', () => [...readdirSync(join(inbox, 'done')), ...readdirSync(join(inbox, 'failed'))], (names) => names.includes('b-good.jsonl') && names.includes('a-root.jsonl'));
    assert.match(readFileSync(join(inbox, 'failed', 'a-root.jsonl.reason.txt'), 'utf8'), /may not read this file \(it belongs to uid 0, mode 600\); copy feed files in as the data folder's owner under a hidden name, then rename them, e\.g\. install -m 0600 -o 65534 <file> \S+\/inbox\/\.incoming && mv \S+\/inbox\/\.incoming /);
    assert.equal(readdirSync(inbox).filter((n) => !['done', 'failed', 'processing'].includes(n)), [], 'nothing left waiting');
    // the feed command run as root hands the server a copy it may read
    const file = join(tempDir(), 'by-root.jsonl');
    writeFileSync(file, record, { mode: 0o600 });
    const handed = spawnSync(process.execPath, [MAIN, 'feed', file], { env: { ...baseEnv, CONTACT_LEDGER_DATA: data }, encoding: 'utf8', timeout: 60_000 });
    assert.is(handed.status, 0, handed.stderr);
    assert.match(handed.stdout, /^ingested \d+-by-root\.jsonl: feed_[0-9a-z]+ completed: 1 records/);
  } finally {
    s.child.kill('SIGTERM');
    await s.exit;
  }
});

C('feed <file>: runs the feed itself when no server runs, hands it to the running server\'s inbox otherwise', async () => {
  const data = tempDir();
  const env = { CONTACT_LEDGER_DATA: data, CONTACT_LEDGER_ADMIN_EMAIL: 'ops@example.com', CONTACT_LEDGER_ADMIN_PASSWORD: 'a long passphrase 42' };
  const file = join(data, '..', 'people.jsonl');
  writeFileSync(file, '{"name":"Ann","company":"Acme"}\n{"company":"no name"}\nnot json\n');
  assert.is(run(['init'], env).status, 0);
  const direct = run(['feed', file], env);
  assert.is(direct.status, 0, direct.stderr);
  assert.match(direct.stdout, /feed_[0-9a-z]+ completed: 3 records, 2 invalid, 0 older than known, 0 repeated, 1 persons updated/);
  // without a terminal, no progress line of zeros beside the result
  assert.not.match(direct.stderr, /people\.jsonl: 0 records/, direct.stderr);
  assert.is(run(['feed', join(data, 'missing.jsonl')], env).status, 2);
  // a name that was not UTF-8 arrives with U+FFFD in its place: the message says to rename the file
  const undecodable = run(['feed', join(data, 'caf\uFFFD.jsonl')], env);
  assert.is(undecodable.status, 2);
  assert.match(undecodable.stderr, /the file name is not UTF-8.*rename the file/);
  assert.is(run(['feed', file.replace('.jsonl', '.txt')], env).status, 2);

  const server = await serve(env);
  try {
    const handed = spawn(process.execPath, [MAIN, 'feed', file], { env: { ...baseEnv, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    handed.stdout!.on('data', (d: Buffer) => (out += d));
    handed.stderr!.on('data', (d: Buffer) => (err += d));
    const code = await new Promise<number | null>((resolve) => handed.on('exit', resolve));
    assert.is(code, 0, err);
    assert.match(err, /handed people\.jsonl to its inbox/);
    assert.match(out, /^ingested \d+-people\.jsonl: feed_[0-9a-z]+ completed: 3 records, 2 invalid, 0 older than known, 0 repeated, 0 persons updated, 1 unchanged, 0 contacts matched/, 'the counts, as when the command runs the feed itself');
    // a name too long for the server to file with its feed id: the copy is named as the server files it, and the command ends
    const longFile = join(data, '..', `${'m'.repeat(215)}.jsonl`);
    writeFileSync(longFile, '{"name":"Max Len","company":"Acme"}\n');
    const long = spawn(process.execPath, [MAIN, 'feed', longFile], { env: { ...baseEnv, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let longOut = '';
    let longErr = '';
    long.stdout!.on('data', (d: Buffer) => (longOut += d));
    long.stderr!.on('data', (d: Buffer) => (longErr += d));
    assert.is(await new Promise<number | null>((resolve) => long.on('exit', resolve)), 0, longErr);
    assert.match(longOut, /^ingested \d+-m+~\.jsonl: feed_[0-9a-z]+ completed: 1 records/);
    // a name with a line break: the server renames such files, so the copy is named as the server
    // keeps it (the command waited for ever for the name it had handed over; a reviewer's case)
    const brokenName = join(data, '..', 'new\nline.jsonl');
    writeFileSync(brokenName, '{"name":"Line Break","company":"Acme"}\n');
    const broken = spawnSync(process.execPath, [MAIN, 'feed', brokenName], { env: { ...baseEnv, ...env }, encoding: 'utf8', timeout: 30_000 });
    assert.is(broken.status, 0, broken.stderr);
    assert.match(broken.stdout, /^ingested \d+-new_line\.jsonl: feed_[0-9a-z]+ completed: 1 records/);
  } finally {
    server.child.kill('SIGTERM');
    await server.exit;
  }
});

C('feed <file>: when the process holding the data folder is another command that ends, the waiting command ingests the file itself', async () => {
  const data = tempDir();
  mkdirSync(data, { recursive: true });
  const env = { CONTACT_LEDGER_DATA: data, CONTACT_LEDGER_ADMIN_EMAIL: 'ops@example.com', CONTACT_LEDGER_ADMIN_PASSWORD: 'a long passphrase 42' };
  assert.is(run(['init'], env).status, 0);
  // a process that holds the data folder's lock (as a running `feed` or `import` command does) until it is killed
  const lockModule = pathToFileURL(join(import.meta.dirname, '..', 'src', 'storage', 'lock.ts')).href;
  const holder = spawn(process.execPath, [...process.execArgv, '--input-type=module', '-e', `const { lockDataDir } = await import(${JSON.stringify(lockModule)}); lockDataDir(${JSON.stringify(data)}); console.log('locked'); setInterval(() => {}, 1000);`], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    await once(holder.stdout!, 'data');
    const file = join(data, '..', 'late.jsonl');
    // without a final line break: the inbox would wait a minute for the rest of the line, but this file arrives whole (by rename)
    writeFileSync(file, '{"name":"Lee Late","company":"Acme"}');
    const waiting = spawn(process.execPath, [MAIN, 'feed', file], { env: { ...baseEnv, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    waiting.stdout!.on('data', (d: Buffer) => (out += d));
    const handed = new Promise<void>((resolve) =>
      waiting.stderr!.on('data', (d: Buffer) => {
        err += d;
        if (/handed late\.jsonl to its inbox/.test(err)) resolve();
      }),
    );
    const exited = new Promise<number | null>((resolve) => waiting.on('exit', resolve));
    await handed;
    holder.kill('SIGKILL');
    let deadline: NodeJS.Timeout | undefined;
    const code = await Promise.race([exited, new Promise<'waiting'>((resolve) => (deadline = setTimeout(() => resolve('waiting'), 30_000)))]);
    clearTimeout(deadline);
    if (code === 'waiting') waiting.kill('SIGKILL');
    assert.is(code, 0, `still waiting 30 s after the holder ended: ${err}`);
    assert.match(err, /has ended: ingesting \d+-late\.jsonl here/);
    assert.match(out, /ingested \d+-late\.jsonl/);
  } finally {
    holder.kill('SIGKILL');
  }
});

C.run();
