// The program as operators run it: a child process with environment, flags and signals.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { chmodSync, chownSync, closeSync, existsSync, mkdirSync, openSync, readdirSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { ID, request, tempDir, until } from './helpers.ts';
import { baseEnv, MAIN, serve, SOURCE_MAIN } from './child-server.ts';

function run(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [MAIN, ...args], { env: { ...baseEnv, ...env }, encoding: 'utf8', timeout: 30_000 });
}

const C = suite('command line');

/** A file where a folder is expected. */
function aFile(): string {
  const file = join(tempDir(), 'a-file');
  writeFileSync(file, 'not a folder');
  return file;
}

C('the program runs from its TypeScript source as `npm start` runs it (the other tests start it compiled): it serves, and stops on SIGTERM with exit 0', async () => {
  const s = await serve({ CONTACT_LEDGER_DATA: tempDir(), CONTACT_LEDGER_ADMIN_EMAIL: 'src@example.test', CONTACT_LEDGER_ADMIN_PASSWORD: 'a source run passphrase' }, [], SOURCE_MAIN);
  const r = await request(`http://127.0.0.1:${s.port}`, 'POST', `${ID}/session`, { body: { grantType: 'password', email: 'src@example.test', password: 'a source run passphrase' } });
  assert.is(r.status, 200);
  s.child.kill('SIGTERM');
  assert.is(await s.exit, 0, s.stderr().slice(-2000));
  const version = spawnSync(process.execPath, [SOURCE_MAIN, 'version'], { env: baseEnv, encoding: 'utf8', timeout: 30_000 });
  assert.is(version.status, 0, version.stderr);
  assert.match(version.stdout, /^\d+\.\d+\.\d+\n$/);
});

C("SIGUSR1 opens no debugger: Node would listen on 127.0.0.1:9229 for any user of the machine to run code as the server (an operator tester's case); the server serves on, and SIGTERM stops it", async () => {
  const s = await serve({ CONTACT_LEDGER_DATA: tempDir(), CONTACT_LEDGER_ADMIN_EMAIL: 'usr1@example.test', CONTACT_LEDGER_ADMIN_PASSWORD: 'a usr1 run passphrase' });
  s.child.kill('SIGUSR1');
  // a sign-in after the signal: a whole round trip through the event loop that took it
  const r = await request(`http://127.0.0.1:${s.port}`, 'POST', `${ID}/session`, { body: { grantType: 'password', email: 'usr1@example.test', password: 'a usr1 run passphrase' } });
  assert.is(r.status, 200, 'still serving');
  s.child.kill('SIGTERM');
  assert.is(await s.exit, 0, s.stderr().slice(-2000));
  assert.not.match(s.stderr(), /Debugger listening/);
});

C("SIGHUP stops the server in order, as SIGTERM does, with exit status 129: under the systemd unit's Restart=on-failure it starts again, its configuration read anew (a SIGHUP death counted as a clean stop and left the service down; an operator tester's case)", async () => {
  const data = tempDir();
  const s = await serve({ CONTACT_LEDGER_DATA: data, CONTACT_LEDGER_ADMIN_EMAIL: 'hup@example.test', CONTACT_LEDGER_ADMIN_PASSWORD: 'a hup run passphrase' });
  s.child.kill('SIGHUP');
  assert.is(await s.exit, 129, s.stderr().slice(-2000));
  const said = s.stdout().split('\n').filter(Boolean).map((l) => JSON.parse(l).msg as string);
  assert.ok(said.some((m) => /^shutting down \(SIGHUP: the configuration is read only at start/.test(m)), said.join('\n'));
  assert.ok(said.includes('stopped'), 'the shutdown ran to its end');
  assert.not.ok(existsSync(join(data, 'contact-ledger.lock')), 'the lock released');
});

C("a second server or a restore from another PID namespace (another container on the same volume) is refused: the pid in the lock file names nobody there, and the kernel's lock on the folder decides (an operator tester's case: both served, and a restore lost a write)", async () => {
  if (process.getuid?.() !== 0 || spawnSync('unshare', ['--pid', '--fork', '--mount-proc', 'true']).status !== 0) return; // needs root and unshare(1)
  const data = tempDir();
  const s = await serve({ CONTACT_LEDGER_DATA: data, CONTACT_LEDGER_ADMIN_EMAIL: 'ns@example.test', CONTACT_LEDGER_ADMIN_PASSWORD: 'a namespace passphrase' });
  try {
    const backup = join(tempDir(), 'b.db');
    assert.is(run(['backup', backup], { CONTACT_LEDGER_DATA: data }).status, 0);
    const inOtherNamespace = (args: string[]) =>
      spawnSync('unshare', ['--pid', '--fork', '--mount-proc', process.execPath, MAIN, ...args], { env: { ...baseEnv, CONTACT_LEDGER_DATA: data }, encoding: 'utf8', timeout: 60_000 });
    for (const args of [['serve', '--port', '0'], ['restore', backup]]) {
      const r = inOtherNamespace(args);
      assert.is.not(r.status, 0, `${args[0]}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, /\(pid \d+ as its own PID namespace numbers it: another container, or a process this one cannot see\) is using the data folder/, `${args[0]}: ${r.stderr}`);
    }
    // the commands that work beside a server see it there too (they took it for no holder): keys
    // rotate names it, feed hands its file to its inbox and the server ingests it
    assert.is(inOtherNamespace(['keys', 'rotate']).status, 0);
    const keys = inOtherNamespace(['keys', 'rotate']); // the second: the server's key is kept, and it says whose
    assert.is(keys.status, 0, keys.stderr);
    assert.match(keys.stdout, /which the running server \(pid \d+ as its own PID namespace numbers it: another container, or a process this one cannot see\) still signs with/);
    const feedFile = join(tempDir(), 'ns-people.jsonl');
    writeFileSync(feedFile, '{"name":"Ann Namespace","company":"Acme","linkedinUrl":"https://www.linkedin.com/in/ann-namespace"}\n');
    const fed = spawnSync('unshare', ['--pid', '--fork', '--mount-proc', process.execPath, MAIN, 'feed', feedFile], { env: { ...baseEnv, CONTACT_LEDGER_DATA: data }, encoding: 'utf8', timeout: 120_000 });
    assert.is(fed.status, 0, fed.stderr);
    assert.match(fed.stderr, /a contact-ledger server or command \(pid \d+ as its own PID namespace numbers it: [^)]*\) holds the data folder: handed ns-people\.jsonl to its inbox/);
    assert.match(fed.stdout, /ingested \d+-ns-people\.jsonl: /);
    const r = await request(`http://127.0.0.1:${s.port}`, 'POST', `${ID}/session`, { body: { grantType: 'password', email: 'ns@example.test', password: 'a namespace passphrase' } });
    assert.is(r.status, 200, 'the first server serves on, its database in place');
  } finally {
    s.child.kill('SIGTERM');
  }
  assert.is(await s.exit, 0, s.stderr().slice(-2000));
});

C("a server started by another user (root) beside a folder this user may enter is named as the holder of its lock, with what to do (exit 2): it was a bare EACCES on the lock file, exit 1 (an operator tester's case)", async () => {
  if (process.getuid?.() !== 0) return; // needs a second user
  const data = tempDir();
  const s = await serve({ CONTACT_LEDGER_DATA: data, CONTACT_LEDGER_ADMIN_EMAIL: 'rootlock@example.test', CONTACT_LEDGER_ADMIN_PASSWORD: 'a root lock passphrase' });
  try {
    chmodSync(data, 0o777); // the service user may enter and write the folder; root's files stay root's (0600)
    const r = spawnSync(process.execPath, [MAIN, 'serve', '--port', '0'], { env: { ...baseEnv, CONTACT_LEDGER_DATA: data, HOME: data }, encoding: 'utf8', timeout: 60_000, uid: 65534, gid: 65534 });
    assert.is(r.status, 2, r.stderr);
    assert.match(r.stderr, /cannot read \S*contact-ledger\.lock \(EACCES; it is uid 0's, whose contact-ledger may be using the data folder now: stop it first\): run contact-ledger as the user that owns the data folder/);
    const signIn = await request(`http://127.0.0.1:${s.port}`, 'POST', `${ID}/session`, { body: { grantType: 'password', email: 'rootlock@example.test', password: 'a root lock passphrase' } });
    assert.is(signIn.status, 200, 'the first server serves on');
  } finally {
    chmodSync(data, 0o700);
    s.child.kill('SIGTERM');
  }
  assert.is(await s.exit, 0, s.stderr().slice(-2000));
});

C("a backups folder the service user may not write is said at start when BACKUP_CRON is set: the first scheduled backup failed hours after a start that said ready (an operator tester's case)", async () => {
  if (process.getuid?.() !== 0) return; // needs a second user
  const data = tempDir();
  assert.is(run(['init', '--email', 'bk@example.test', '--password', 'a backups passphrase'], { CONTACT_LEDGER_DATA: data }).status, 0);
  execFileSync('chown', ['-R', '65534:65534', data]);
  mkdirSync(join(data, 'backups'), { mode: 0o755 }); // root's, as a root `restore` or a hand left it
  const s = await serve({ CONTACT_LEDGER_DATA: data, HOME: data, BACKUP_CRON: '0 3 * * *' }, [], MAIN, { uid: 65534, gid: 65534 });
  try {
    assert.match(s.stdout(), /"level":"warn".*scheduled backups \(BACKUP_CRON\) will fail: this user \(uid 65534\) may not write in \S+\/backups \(EACCES; it is uid 0's, mode 755\); give it to the service user \(chown\) or remove it/);
  } finally {
    s.child.kill('SIGTERM');
  }
  assert.is(await s.exit, 0, s.stderr().slice(-2000));
  execFileSync('chown', ['65534:65534', join(data, 'backups')]);
  const mended = await serve({ CONTACT_LEDGER_DATA: data, HOME: data, BACKUP_CRON: '0 3 * * *' }, [], MAIN, { uid: 65534, gid: 65534 });
  try {
    assert.not.match(mended.stdout(), /will fail/, 'the service user\'s folder: nothing to say');
  } finally {
    mended.child.kill('SIGTERM');
  }
  assert.is(await mended.exit, 0);
});

C("output that cannot be written (a full disk) is said in one line, exit 1: it was a stack trace (an operator tester's case)", () => {
  if (!existsSync('/dev/full')) return;
  for (const args of [['version'], ['--help']]) {
    const full = openSync('/dev/full', 'w');
    try {
      const r = spawnSync(process.execPath, [MAIN, ...args], { env: { ...baseEnv, CONTACT_LEDGER_DATA: tempDir() }, stdio: ['ignore', full, 'pipe'], encoding: 'utf8', timeout: 30_000 });
      assert.is(r.status, 1, `${args[0]}: ${r.stderr}`);
      assert.match(r.stderr, /^contact-ledger: cannot write its output: ENOSPC: no space left on device/m, args[0]!);
      assert.not.match(r.stderr, /^\s+at /m, `${args[0]}: no stack trace`);
    } finally {
      closeSync(full);
    }
  }
});

C('--help, version, an unknown command and a configuration error load no module of the server (storage, HTTP, services): commands load their code when they run', () => {
  // a module hook that names every source module the program loads
  const hook = join(tempDir(), 'hook.mjs');
  writeFileSync(hook, "export async function load(url, context, next) { if (url.includes('/src/')) process.stderr.write(`loaded ${url}\\n`); return next(url, context); }\n");
  const register = `data:text/javascript,import{register}from'node:module';register(${JSON.stringify(pathToFileURL(hook).href)})`;
  const loadedBy = (args: string[], env: Record<string, string> = {}) => {
    const r = spawnSync(process.execPath, ['--import', register, SOURCE_MAIN, ...args], { env: { ...baseEnv, CONTACT_LEDGER_DATA: tempDir(), ...env }, encoding: 'utf8', timeout: 30_000 });
    return { status: r.status, modules: [...r.stderr.matchAll(/^loaded .*\/(src\/\S+)$/gm)].map((m) => m[1]!) };
  };
  const server = /^src\/(storage|http|identity|ledger|tracking|webhooks\/(?!url-policy)|jobs\/(?!rejections)|bulk-thread|csv|app\.ts|runtime\.ts)/;
  for (const [args, env, status] of [[['version'], {}, 0], [['--help'], {}, 0], [['backup', '--help'], {}, 0], [['frobnicate'], {}, 2], [['serve'], { PORT: 'eighty' }, 2]] as const) {
    const r = loadedBy([...args], env);
    assert.is(r.status, status, args.join(' '));
    assert.ok(r.modules.includes('src/cli/commands.ts'), `${args.join(' ')}: the hook saw the program load (${r.modules.join(', ')})`);
    assert.equal(r.modules.filter((m) => server.test(m)), [], `${args.join(' ')} loaded the server's modules`);
  }
  // a command that runs loads its code
  assert.ok(loadedBy(['keys', 'rotate']).modules.includes('src/cli/keys.ts'));
});

C('first start without admin settings prints a generated password once; it works; the second start prints nothing', async () => {
  const data = tempDir();
  const a = await serve({ CONTACT_LEDGER_DATA: data });
  const m = /e-mail:\s+(\S+)\s+password:\s+(\S+)/.exec(a.stderr());
  assert.ok(m, a.stderr());
  const r = await request(`http://127.0.0.1:${a.port}`, 'POST', `${ID}/session`, { body: { grantType: 'password', email: m![1], password: m![2] } });
  assert.is(r.status, 200);
  assert.is(r.body.user.superuser, true);
  assert.not.ok(a.stdout().includes(m![2]!), 'the password is not in the JSON log');
  a.child.kill('SIGTERM');
  assert.is(await a.exit, 0, a.stderr().slice(-2000));
  const b = await serve({ CONTACT_LEDGER_DATA: data });
  assert.not.match(b.stderr(), /password:/);
  b.child.kill('SIGINT');
  assert.is(await b.exit, 0, b.stderr().slice(-2000));
});

C('the admin e-mail and password can come from _FILE variables (an empty NAME= beside NAME_FILE does not hide it); SIGTERM stops cleanly (exit 0)', async () => {
  const data = tempDir();
  writeFileSync(join(data, '..', 'admin-email'), 'ops@example.com\n');
  writeFileSync(join(data, '..', 'admin-pw'), 'a long passphrase 42\n');
  const a = await serve({
    CONTACT_LEDGER_DATA: join(data, 'd'),
    CONTACT_LEDGER_ADMIN_EMAIL_FILE: join(data, '..', 'admin-email'),
    CONTACT_LEDGER_ADMIN_PASSWORD: '',
    CONTACT_LEDGER_ADMIN_PASSWORD_FILE: join(data, '..', 'admin-pw'),
  });
  const r = await request(`http://127.0.0.1:${a.port}`, 'POST', `${ID}/session`, { body: { email: 'ops@example.com', password: 'a long passphrase 42' } });
  assert.is(r.status, 200);
  const ready = await request(`http://127.0.0.1:${a.port}`, 'GET', '/readyz');
  assert.is(ready.status, 200);
  a.child.kill('SIGTERM');
  assert.is(await a.exit, 0, a.stderr().slice(-2000));
  assert.match(a.stdout(), /"msg":"stopped"/);
});

C('a log destination that takes nothing more (a full disk: /dev/full) neither stops nor hangs the server: it serves, and SIGTERM stops it (exit 0)', async () => {
  // Port 0: the system picks a free port as the server listens, and the server names it on stderr
  // (its JSON log goes to /dev/full). A port found free beforehand could be taken by another
  // process before the child got to listen on it.
  const full = openSync('/dev/full', 'w');
  const child = spawn(process.execPath, [MAIN], {
    env: { ...baseEnv, CONTACT_LEDGER_DATA: tempDir(), PORT: '0', CONTACT_LEDGER_ADMIN_EMAIL: 'a@b.test', CONTACT_LEDGER_ADMIN_PASSWORD: 'passphrase 12345' },
    stdio: ['ignore', full, 'pipe'],
  });
  closeSync(full);
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d));
  const exit = once(child, 'exit');
  const listening = await until('listening', () => /listening on https?:\/\/[^\s]+:(\d+)/.exec(stderr));
  const port = Number(listening![1]);
  assert.ok(port > 0, stderr);
  // every request logs a line, and every line fails (ENOSPC): before, the first one ended the process
  for (let i = 0; i < 300; i++) assert.is((await request(`http://127.0.0.1:${port}`, 'GET', '/healthz')).status, 200, `request ${i}`);
  child.kill('SIGTERM');
  const [code] = await exit; // it never exited: pino's flush at exit retried the failing write for ever
  assert.is(code, 0, stderr.slice(-2000));
  assert.not.match(stderr, /Unhandled|ENOSPC/);
});

C('a process that exits while its log destination has just become full ends: the flush at exit gives up on a write that fails for good', () => {
  // lines written and the process ended at once, before any write could fail and be noticed
  const script = `import { createLogger } from ${JSON.stringify(pathToFileURL(join(import.meta.dirname, '..', 'src', 'log.ts')).href)};
    const log = createLogger('info');
    for (let i = 0; i < 2000; i++) log.info({ i }, 'a line');
    process.exit(3);`;
  const full = openSync('/dev/full', 'w');
  const r = spawnSync(process.execPath, [...process.execArgv, '--input-type=module', '-e', script], { stdio: ['ignore', full, 'pipe'], encoding: 'utf8', timeout: 20_000 });
  closeSync(full);
  assert.is(r.signal, null, 'it ended by itself (it was killed at the timeout: sonic-boom retried ENOSPC for ever)');
  assert.is(r.status, 3, r.stderr);
});

C('flags beat the environment', async () => {
  const data = tempDir();
  const a = await serve({ CONTACT_LEDGER_DATA: data, PORT: '1' }, ['serve', '--port', '0']);
  assert.ok(a.port > 1);
  a.child.kill('SIGTERM');
  assert.is(await a.exit, 0, a.stderr().slice(-2000));
});

C('a port in use ends with a clear message and exit code 1, before the first superuser is made: the next start prints its password', async () => {
  const blocker = createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
  const port = (blocker.address() as { port: number }).port;
  const data = tempDir();
  const r = run(['serve'], { CONTACT_LEDGER_DATA: data, PORT: String(port) });
  blocker.close();
  assert.is(r.status, 1);
  assert.match(r.stderr, new RegExp(`port ${port} on 127\\.0\\.0\\.1 is already in use`));
  assert.not.match(r.stderr + r.stdout, /superuser|password/, 'nobody made, no password shown that the next start would not show again');
  // the first account made by hand is a superuser, or nobody could administer the installation (a reviewer's case)
  const first = run(['user', 'add', '--email', 'first@b.test', '--password', 'passphrase 12345'], { CONTACT_LEDGER_DATA: data });
  assert.is(first.status, 2, first.stderr);
  assert.match(first.stderr, /this installation has no user yet: make the first one a superuser \(--superuser\)/);
  const s = await serve({ CONTACT_LEDGER_DATA: data });
  try {
    await until('the first superuser\'s password', () => /created the first superuser:\n {4}e-mail: {3}admin@contact-ledger\.local\n {4}password: \S+/.test(s.stderr()), Boolean, 10_000);
  } finally {
    s.child.kill('SIGTERM');
    await s.exit;
  }
});

C('a port below 1024 for a user without the capability is a configuration error (2): a restart cannot help', () => {
  if (process.getuid?.() !== 0) return; // the test drops to another user, which only root may
  const data = tempDir();
  chownSync(data, 65534, 65534);
  const r = spawnSync(process.execPath, [MAIN, 'serve'], {
    uid: 65534,
    gid: 65534,
    env: { ...baseEnv, HOME: data, CONTACT_LEDGER_DATA: data, PORT: '81', CONTACT_LEDGER_ADMIN_EMAIL: 'a@b.test', CONTACT_LEDGER_ADMIN_PASSWORD: 'passphrase 12345' },
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.is(r.status, 2, r.stderr); // a tester's case: exit 1, which systemd restarts for ever
  assert.match(r.stderr, /no permission to listen on 127\.0\.0\.1:81; use a port above 1023 or grant the capability/);
});

C('bad configuration values stop with exit code 2 and name the setting', () => {
  const cases: [Record<string, string>, string[], RegExp][] = [
    [{ PORT: 'eighty' }, [], /PORT must be an integer/],
    [{}, ['--port', '99999'], /--port must be an integer from 0 to 65535/],
    [{ LOG_LEVEL: 'loud' }, [], /LOG_LEVEL must be one of/],
    [{ BASE_URL: 'ftp://x' }, [], /BASE_URL must be an http/],
    // a tester's case: every Location became http://x.example/sub?q=1#frag/api/ledger/v1/…
    [{ BASE_URL: 'http://x.example/sub?q=1#frag' }, [], /BASE_URL must be a URL without a query, fragment or credentials/],
    [{ BASE_URL: 'https://user:pw@x.example' }, [], /BASE_URL must be a URL without a query, fragment or credentials/],
    [{ BASE_URL: 'https://x.example/?' }, [], /BASE_URL must be a URL without a query/],
    [{ JWT_ISSUER: ' ' }, [], /JWT_ISSUER must be a name or URL without spaces or control characters, got " "/],
    [{ JWT_ISSUER: 'my issuer' }, [], /JWT_ISSUER must be a name or URL without spaces/],
    [{ TLS_CERT: '/x.pem' }, [], /TLS_CERT and TLS_KEY must be set together/],
    [{ BACKUP_CRON: 'every day' }, [], /BACKUP_CRON must be a cron expression/],
    [{ CONTACT_LEDGER_ADMIN_PASSWORD_FILE: '/nonexistent/pw', CONTACT_LEDGER_ADMIN_EMAIL: 'a@b.test' }, [], /CONTACT_LEDGER_ADMIN_PASSWORD_FILE: cannot read/],
    [{ CONTACT_LEDGER_ADMIN_PASSWORD_FILE: '/nonexistent/pw', CONTACT_LEDGER_ADMIN_PASSWORD: 'a long passphrase', CONTACT_LEDGER_ADMIN_EMAIL: 'a@b.test' }, [], /CONTACT_LEDGER_ADMIN_PASSWORD and CONTACT_LEDGER_ADMIN_PASSWORD_FILE are both set/],
    // checked at the first start, when it is used
    [{ CONTACT_LEDGER_ADMIN_PASSWORD: 'password1', CONTACT_LEDGER_ADMIN_EMAIL: 'a@b.test', PORT: '0' }, [], /CONTACT_LEDGER_ADMIN_PASSWORD is one of the most common passwords/],
    [{ CONTACT_LEDGER_ADMIN_PASSWORD: 'short', CONTACT_LEDGER_ADMIN_EMAIL: 'a@b.test', PORT: '0' }, [], /CONTACT_LEDGER_ADMIN_PASSWORD must be at least 8 characters/],
    [{ CONTACT_LEDGER_ADMIN_PASSWORD: 'a long passphrase', CONTACT_LEDGER_ADMIN_EMAIL: 'a@b.test\u200b', PORT: '0' }, [], /CONTACT_LEDGER_ADMIN_EMAIL contains an invisible character \(U\+200B\)/],
    // a name that does not exist (a restart cannot help; a name server not answering yet is exit 1)
    [{ HOST: 'no-such-host.invalid', PORT: '0' }, [], /HOST no-such-host\.invalid cannot be resolved/],
    // no host at all: the server ended up open with nothing listening, holding the data folder and deaf to SIGTERM (a tester's case)
    [{ HOST: 'localhost:8080' }, [], /HOST must be an IP address or a host name/],
    [{ HOST: 'http://127.0.0.1' }, [], /HOST must be an IP address or a host name/],
    [{ HOST: 'a b' }, [], /HOST must be an IP address or a host name/],
    [{ HOST: 'fe80::1%lo' }, [], /HOST fe80::1%lo cannot be written in a URL; set BASE_URL/],
    [{ HOST: '[127.0.0.1]' }, [], /HOST must be an IP address or a host name/],
    [{ CORS_ORIGINS: 'not a url' }, [], /CORS_ORIGINS: "not a url" is not an origin/],
    [{ CORS_ORIGINS: 'https://crm.example.org/app' }, [], /CORS_ORIGINS: "https:\/\/crm\.example\.org\/app" is not an origin/],
    [{ PORT_FILE: '/etc/hostname' }, [], /PORT_FILE is not read: only secrets are read from a file/],
    // a file in the way of the data folder (exit 1 made systemd restart it for ever)
    [{ CONTACT_LEDGER_DATA: aFile() }, [], /is not usable \(ENOTDIR\)/],
    // a blank or a carriage return at an end of the data folder made a new installation beside the real one (an operator tester's case)
    [{ CONTACT_LEDGER_DATA: `${tempDir()} ` }, [], /CONTACT_LEDGER_DATA "\S+ " begins or ends with a blank or a carriage return, which would be part of the folder's name, and no such folder exists; remove it \("\S+" exists\)/],
    [{ CONTACT_LEDGER_DATA: `${tempDir()}\r` }, [], /CONTACT_LEDGER_DATA "\S+\\r" begins or ends with a blank/],
  ];
  for (const [env, args, msg] of cases) {
    const r = run(['serve', ...args], { CONTACT_LEDGER_DATA: tempDir(), ...env });
    assert.is(r.status, 2, `${JSON.stringify(env)} ${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, msg);
  }
  // a folder whose name does end so is used as named; blanks around a cron expression (a carriage return) are no part of it
  const spaced = `${tempDir()} `;
  mkdirSync(spaced);
  const made = run(['init', '--email', 'sp@example.test', '--password', 'a spaced passphrase'], { CONTACT_LEDGER_DATA: spaced, BACKUP_CRON: '0 3 * * *\r' });
  assert.is(made.status, 0, made.stderr);
  assert.ok(existsSync(join(spaced, 'contact-ledger.db')));
});

C('a URL setting refused for its value never prints the credentials in it: the userinfo is ***', () => {
  const cases: [Record<string, string>, string][] = [
    // a tester's case: the whole value, password included, went to the terminal and the journal
    [{ BASE_URL: 'http://u:p@x.example/?q=1' }, 'BASE_URL must be a URL without a query, fragment or credentials (scheme, host, port and path only), got "http://***@x.example/?q=1"'],
    [{ BASE_URL: 'ftp://admin:hunter2@x.example/' }, 'BASE_URL must be an http:// or https:// URL, got "ftp://***@x.example/"'],
    [{ CORS_ORIGINS: 'https://admin:hunter2@crm.example.org' }, 'CORS_ORIGINS: "https://***@crm.example.org" is not an origin'],
    [{ AUTH_URL: 'https://admin:hunter2@x.example/' }, 'AUTH_URL must be a URL or path such as /auth (not / and not under /api/), got "https://***@x.example/"'],
    [{ WEBHOOK_ALLOW_HOSTS: 'https://admin:hunter2@hooks.example' }, 'WEBHOOK_ALLOW_HOSTS: "https://***@hooks.example" is not a host name'],
    [{ HOST: 'http://admin:hunter2@127.0.0.1' }, 'got "http://***@127.0.0.1"'],
    // a password holding the characters that end an authority (a reviewer's case: the rest of it was shown)
    [{ BASE_URL: 'https://admin:hunter2#x@crm.example.com/' }, 'got "https://***@crm.example.com/"'],
    [{ BASE_URL: 'https://admin:hun/ter2@crm.example.com/' }, 'got "https://***@crm.example.com/"'],
    [{ CORS_ORIGINS: 'https://admin:hunter2?@crm.example.org' }, 'CORS_ORIGINS: "https://***@crm.example.org" is not an origin'],
    [{ WEBHOOK_ALLOW_HOSTS: 'admin:hunter2@hooks.example' }, 'WEBHOOK_ALLOW_HOSTS: "***@hooks.example" is not a host name'],
  ];
  for (const [env, message] of cases) {
    const r = run(['serve'], { CONTACT_LEDGER_DATA: tempDir(), ...env });
    assert.is(r.status, 2, `${JSON.stringify(env)}: ${r.stderr}`);
    assert.ok(r.stderr.includes(message), `${JSON.stringify(env)}: ${r.stderr}`);
    assert.not.ok(/hunter2|hun\/ter2|u:p@/.test(r.stderr), `the password is printed: ${r.stderr}`);
  }
});

C('a CONTACT_LEDGER_ variable that names no setting is a configuration error (2) naming it and the setting meant; nothing is created', () => {
  const cases: [Record<string, string>, RegExp][] = [
    // a tester's cases: the server started a new, empty installation in ./data and printed a new password
    [{ CONTACT_LEDGER_DATA_DIR: '/var/lib/contact-ledger/data' }, /configuration error: CONTACT_LEDGER_DATA_DIR is not a setting \(did you mean CONTACT_LEDGER_DATA\?\)/],
    [{ CONTACT_LEDGER_ADMIN_PASWORD: 'a long passphrase', CONTACT_LEDGER_ADMIN_EMAIL: 'a@b.test' }, /CONTACT_LEDGER_ADMIN_PASWORD is not a setting \(did you mean CONTACT_LEDGER_ADMIN_PASSWORD\?\)/],
    [{ CONTACT_LEDGER_ADMIN_EMIAL_FILE: '/run/credentials/email' }, /CONTACT_LEDGER_ADMIN_EMIAL_FILE is not a setting \(did you mean CONTACT_LEDGER_ADMIN_EMAIL_FILE\?\)/],
    [{ CONTACT_LEDGER_COLOUR: 'blue' }, /CONTACT_LEDGER_COLOUR is not a setting; contact-ledger reads no such variable/],
    // a setting read without our prefix, given with it (an operator tester's case: no hint)
    [{ CONTACT_LEDGER_METRICS_TOKEN: 'a-metrics-token-0123456789' }, /CONTACT_LEDGER_METRICS_TOKEN is not a setting \(did you mean METRICS_TOKEN\?\)/],
    [{ CONTACT_LEDGER_PORT: '8080' }, /CONTACT_LEDGER_PORT is not a setting \(did you mean PORT\?\)/],
    // NAME_FILE of a setting that is no secret keeps its own refusal, which says which ones take a file
    [{ CONTACT_LEDGER_DATA_FILE: '/etc/hostname' }, /CONTACT_LEDGER_DATA_FILE is not read: only secrets are read from a file/],
  ];
  for (const [env, msg] of cases) {
    const cwd = tempDir();
    const r = spawnSync(process.execPath, [MAIN, 'serve'], { cwd, env: { ...baseEnv, PORT: '0', ...env }, encoding: 'utf8', timeout: 30_000 });
    assert.is(r.status, 2, `${JSON.stringify(env)}: ${r.stderr}`);
    assert.match(r.stderr, msg);
    assert.not.match(r.stderr, /password:/, 'no new installation, no generated password');
    assert.equal(readdirSync(cwd), [], 'no ./data made');
  }
  // the known ones, secrets' NAME_FILE included, start as before
  const passwordFile = join(tempDir(), 'pw');
  writeFileSync(passwordFile, 'a long passphrase\n');
  const ok = run(['version'], { CONTACT_LEDGER_DATA: tempDir(), CONTACT_LEDGER_ADMIN_EMAIL: 'a@b.test', CONTACT_LEDGER_ADMIN_PASSWORD_FILE: passwordFile });
  assert.is(ok.status, 0, ok.stderr);
});

C('an unprefixed variable one or two edits from a setting (LOG_LEVL, PROT) is a warning at start, not an error; HOME and the like are not', async () => {
  const s = await serve({ CONTACT_LEDGER_DATA: tempDir(), CONTACT_LEDGER_ADMIN_EMAIL: 'a@b.test', CONTACT_LEDGER_ADMIN_PASSWORD: 'a long passphrase', LOG_LEVL: 'debug', PROT: '8443', BASE_ULR: 'https://x.example', LANG: 'C.UTF-8', TERM: 'dumb', HOSTNAME: 'box' });
  try {
    const warnings = s.stdout().split('\n').filter((l) => l.includes('"level":"warn"') || l.includes('"level":40'));
    const named = warnings.map((l) => JSON.parse(l) as { variable: string; meant: string; msg: string });
    assert.equal(named.map((w) => [w.variable, w.meant]), [['BASE_ULR', 'BASE_URL'], ['LOG_LEVL', 'LOG_LEVEL'], ['PROT', 'PORT']], s.stdout());
    assert.match(named[1]!.msg, /the environment variable LOG_LEVL is not read; if it is meant as LOG_LEVEL, rename it/);
  } finally {
    s.child.kill('SIGTERM');
    assert.is(await s.exit, 0, s.stderr());
  }
});

C('a secret put where the path of its file belongs is refused without a word of it: exit 2 names the setting, never the value', () => {
  const key = '-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----';
  const cert = join(tempDir(), 'cert.pem');
  writeFileSync(cert, 'not read: the key is refused first');
  const cases: [Record<string, string>, string, string][] = [
    [{ TLS_CERT: cert, TLS_KEY: key }, 'TLS_KEY', 'MIGHAgEAMBMG'],
    [{ TLS_CERT: cert, TLS_KEY_FILE: key }, 'TLS_KEY', 'MIGHAgEAMBMG'],
    [{ TLS_CERT: key, TLS_KEY: cert }, 'TLS_CERT', 'MIGHAgEAMBMG'],
    [{ METRICS_TOKEN_FILE: 'abcdefghijklmnop1234' }, 'METRICS_TOKEN_FILE', 'abcdefghijklmnop1234'],
    [{ CONTACT_LEDGER_ADMIN_PASSWORD_FILE: 'MySecretPassw0rd!', CONTACT_LEDGER_ADMIN_EMAIL: 'a@b.test' }, 'CONTACT_LEDGER_ADMIN_PASSWORD_FILE', 'MySecretPassw0rd'],
    // a base64 secret may start with a slash: not a path in a folder that exists
    [{ METRICS_TOKEN_FILE: '/q8Zr+x2/Wk9pLm3n' }, 'METRICS_TOKEN_FILE', 'q8Zr+x2'],
  ];
  for (const [env, name, secret] of cases) {
    const r = run(['serve'], { CONTACT_LEDGER_DATA: tempDir(), PORT: '0', ...env });
    assert.is(r.status, 2, `${name}: ${r.stderr}`);
    assert.match(r.stderr, new RegExp(`${name}: cannot read the file it names \\(ENOENT\\); its value \\(\\d+ characters\\) is not shown`));
    assert.not.ok(r.stderr.includes(secret), `${name}: the value is printed: ${r.stderr}`);
  }
  // a path is still named, so that a typo in it can be seen
  const typo = run(['serve'], { CONTACT_LEDGER_DATA: tempDir(), PORT: '0', METRICS_TOKEN_FILE: join(tempDir(), 'metrics-tokn') });
  assert.is(typo.status, 2);
  assert.match(typo.stderr, /METRICS_TOKEN_FILE: cannot read \/.*\/metrics-tokn: ENOENT/);
});

C('an empty HOST or CONTACT_LEDGER_DATA (as unit templates leave them) is the default: 127.0.0.1, ./data — never the working directory itself', async () => {
  const cwd = tempDir();
  const r = spawnSync(process.execPath, [MAIN, 'init', '--email', 'a@b.test', '--password', 'passphrase 12345'], { cwd, env: { ...baseEnv, CONTACT_LEDGER_DATA: '' }, encoding: 'utf8', timeout: 30_000 });
  assert.is(r.status, 0, r.stderr);
  assert.equal(readdirSync(cwd), ['data']);
  assert.ok(readdirSync(join(cwd, 'data')).length > 0);
  const s = await serve({ CONTACT_LEDGER_DATA: tempDir(), HOST: '' });
  try {
    // (the line on stderr comes after the log's "listening", which serve() waits for)
    await until('the listening line', () => /listening on http:\/\/127\.0\.0\.1:/.test(s.stderr()), Boolean, 10_000);
  } finally {
    s.child.kill('SIGTERM');
  }
  assert.is(await s.exit, 0, s.stderr().slice(-2000));
});

C('serve, init and restore refuse to make an installation inside another installation\'s folder (a rollback run from the data folder restored into data/data and said it had)', () => {
  const data = join(tempDir(), 'data');
  assert.is(run(['init', '--email', 'a@b.test', '--password', 'passphrase 12345'], { CONTACT_LEDGER_DATA: data }).status, 0);
  const backup = join(tempDir(), 'b.db');
  assert.is(run(['backup', backup], { CONTACT_LEDGER_DATA: data }).status, 0);
  const inside = join(data, 'data'); // ./data, run from inside the data folder without CONTACT_LEDGER_DATA
  for (const args of [['restore', backup], ['init', '--email', 'a@b.test', '--password', 'passphrase 12345'], ['serve', '--port', '0']]) {
    const r = run(args, { CONTACT_LEDGER_DATA: inside });
    assert.is(r.status, 2, `${args[0]}: ${r.stderr}`);
    assert.match(r.stderr, new RegExp(`has no installation and is inside the installation in ${data.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}; name the folder meant`), args[0]);
    assert.not.ok(existsSync(inside), `${args[0]} made ${inside}`);
  }
  // a folder whose name a shell would split: the setting to copy names it as one word (a reviewer's case)
  const spaced = join(tempDir(), "client's data");
  assert.is(run(['init', '--email', 'a@b.test', '--password', 'passphrase 12345'], { CONTACT_LEDGER_DATA: spaced }).status, 0);
  const told = run(['init', '--email', 'a@b.test', '--password', 'passphrase 12345'], { CONTACT_LEDGER_DATA: join(spaced, 'data') });
  assert.is(told.status, 2, told.stderr);
  const word = /\(CONTACT_LEDGER_DATA=(.+) or --data /.exec(told.stderr)?.[1];
  assert.ok(word, told.stderr);
  assert.is(execFileSync('sh', ['-c', `printf %s ${word}`], { encoding: 'utf8' }), spaced, `${word} is the folder to a shell`);
  assert.is(run(['restore', backup], { CONTACT_LEDGER_DATA: data }).status, 0, 'the installation itself is restored');
  // a backup named contact-ledger.db is no installation: a new one may be made below it (a reviewer's case)
  const backups = tempDir();
  assert.is(run(['backup', join(backups, 'contact-ledger.db')], { CONTACT_LEDGER_DATA: data }).status, 0);
  const below = run(['init', '--email', 'a@b.test', '--password', 'passphrase 12345'], { CONTACT_LEDGER_DATA: join(backups, 'new') });
  assert.is(below.status, 0, below.stderr);
});

C('unknown commands and flags are usage errors (2); --help and version succeed (0)', () => {
  const unknown = run(['frobnicate']);
  assert.is(unknown.status, 2);
  assert.match(unknown.stderr, /unknown command "frobnicate"/);
  const flag = run(['serve', '--no-such-flag']);
  assert.is(flag.status, 2);
  assert.equal(flag.stderr.trim(), 'contact-ledger serve: unknown option --no-such-flag (see contact-ledger serve --help)', 'one line, no quote left open');
  // a command after an option is that command's line in the wrong order, not serve's unknown option
  const order = run(['--inspect=127.0.0.1:1', 'version']);
  assert.is(order.status, 2);
  assert.equal(order.stderr.trim(), 'contact-ledger: the command comes first: contact-ledger version [options] (found "version" after --inspect=127.0.0.1:1)');
  const value = run(['--data', 'import', '--bogus']); // `import` is the folder given to --data here
  assert.equal([value.status, value.stderr.trim()], [2, 'contact-ledger serve: unknown option --bogus (see contact-ledger serve --help)']);
  const short = run(['backup', '-h']);
  assert.is(short.status, 0, 'each command takes -h as --help');
  assert.match(short.stdout, /^Usage: contact-ledger backup <file>/);
  // a command's help lists the settings it acts on, not the server's 40 (a tester's "backup --help" listed PORT)
  assert.match(short.stdout, /CONTACT_LEDGER_DATA/);
  assert.not.match(short.stdout, /\bPORT\b|WEBHOOK_ALLOW_HOSTS/);
  assert.match(short.stdout, /the server's other settings, in contact-ledger serve --help, are checked too/);
  const help = run(['--help']);
  assert.is(help.status, 0);
  assert.match(help.stdout, /Commands:/);
  const serveHelp = run(['serve', '--help']);
  assert.is(serveHelp.status, 0);
  assert.match(serveHelp.stdout, /CONTACT_LEDGER_DATA/);
  const version = run(['version']);
  assert.is(version.status, 0);
  assert.match(version.stdout.trim(), /^\d+\.\d+\.\d+$/);
});

C('commands that take no arguments refuse one (serve, version, licenses, init, migrate): "serve extra" started the server', () => {
  const data = tempDir();
  for (const args of [['serve', 'extra'], ['--port', '0', 'extra'], ['version', 'extra'], ['licenses', 'extra'], ['init', 'extra'], ['migrate', 'extra']]) {
    const r = run(args, { CONTACT_LEDGER_DATA: data });
    assert.is(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, /unexpected argument "extra"/, args.join(' '));
  }
  assert.equal(readdirSync(data), [], 'nothing was started');
});

C('output into a pipe its reader closed early (licenses | head) ends the command as usual, with no EPIPE stack trace', async () => {
  for (const args of [['version'], ['--help'], ['serve', '--help']]) {
    const child = spawn(process.execPath, [MAIN, ...args], { env: baseEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy(); // the reader is gone before the program says anything
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const [code] = (await once(child, 'exit')) as [number | null];
    assert.is(code, 0, `${args.join(' ')}: ${stderr}`);
    assert.is(stderr, '', args.join(' '));
  }
});

C('keys rotate adds a signing key', () => {
  const data = tempDir();
  assert.is(run(['init', '--email', 'a@b.test', '--password', 'passphrase 12345'], { CONTACT_LEDGER_DATA: data }).status, 0);
  const r = run(['keys', 'rotate'], { CONTACT_LEDGER_DATA: data });
  assert.is(r.status, 0, r.stderr);
  assert.match(r.stdout, /new signing key k[0-9a-z]{12}/);
  assert.is(run(['keys', 'spin'], { CONTACT_LEDGER_DATA: data }).status, 2);
});

C('commands that work on an installation refuse a folder without one (exit 2) and make nothing there: an operator\'s feed, user add and keys rotate run from another folder made a new installation (migrate and compact said so with exit 1)', () => {
  const data = join(tempDir(), 'not-here');
  const feedFile = join(tempDir(), 'people.jsonl');
  writeFileSync(feedFile, '{"name":"Ann","company":"Acme"}\n');
  const csv = join(tempDir(), 'contacts.csv');
  writeFileSync(csv, 'name,company\nAnn,Acme\n');
  for (const args of [['feed', feedFile], ['user', 'add', '--email', 'b@c.test', '--password', 'passphrase 12345'], ['user', 'passwd', '--email', 'b@c.test', '--password', 'passphrase 12345'], ['keys', 'rotate'], ['import', 'o_x', 'l_x', csv], ['migrate'], ['compact']]) {
    const r = run(args, { CONTACT_LEDGER_DATA: data, CONTACT_LEDGER_ADMIN_EMAIL: 'a@b.test', CONTACT_LEDGER_ADMIN_PASSWORD: 'passphrase 12345' });
    assert.is(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, new RegExp(`there is no database in ${data.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(set CONTACT_LEDGER_DATA or --data\\); a new installation is made by serve or init`), args.join(' '));
    assert.not.match(r.stdout + r.stderr, /password/i, 'no new superuser');
    assert.not.ok(existsSync(data), `${args.join(' ')} made the folder`);
  }
});

C.run();
