// The executable alone, as an operator runs it (issue 5 "Done when"): copies dist/contact-ledger
// into an empty folder, runs it there with a PATH that has no node and no node_modules anywhere
// near, and drives the appliance over HTTP: sign in, create a ledger, import contacts, list and
// download them, take a backup while it serves, restore that backup into a fresh folder, serve it
// with a second instance and see the same contacts. Usage: node scripts/smoke.ts [dist/contact-ledger]
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { OFF_THREAD_BYTES } from '../src/http/json-parser-thread.ts';

const exe = resolve(process.argv[2] ?? 'dist/contact-ledger');
const EMAIL = 'smoke@example.com';
const PASSWORD = 'smoke test passphrase';
const METRICS_TOKEN = 'smoke-metrics-token-0123456789';
const ROWS = 2500;

function fail(message: string): never {
  throw new Error(message);
}
function check(ok: unknown, message: string): void {
  if (!ok) fail(message);
}
function step(text: string): void {
  process.stdout.write(`smoke: ${text}\n`);
}

const dir = mkdtempSync(join(tmpdir(), 'contact-ledger-smoke-'));
const bin = join(dir, 'contact-ledger');
const emptyPath = join(dir, 'no-tools'); // the whole PATH: an empty folder
// a HOME that cannot exist (beneath a file), as a service user's /nonexistent: the executable needs
// none (pkg's own loader put the SQLite library in ~/.cache: no home, no start)
const home = join(bin, 'home');
const children = new Set<ChildProcess>();

function env(data: string, port: number): NodeJS.ProcessEnv {
  return { PATH: emptyPath, HOME: home, CONTACT_LEDGER_DATA: data, PORT: String(port), CONTACT_LEDGER_ADMIN_EMAIL: EMAIL, CONTACT_LEDGER_ADMIN_PASSWORD: PASSWORD, METRICS_TOKEN, LOG_LEVEL: 'warn' };
}

/** Runs a command of the executable to its end. */
function command(args: string[], data: string): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(bin, args, { cwd: dir, env: env(data, 0), encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** Starts `contact-ledger` (serve is the default command) and waits until /readyz answers 200. */
async function startServer(data: string): Promise<{ base: string; child: ChildProcess; exit: Promise<number | null>; stderr: () => string }> {
  const port = await freePort();
  const child = spawn(bin, [], { cwd: dir, env: env(data, port), stdio: ['ignore', 'ignore', 'pipe'] });
  children.add(child);
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exit = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    const status = await fetch(`${base}/readyz`).then((r) => r.status, () => 0);
    if (status === 200) break;
    if (child.exitCode !== null) fail(`the server exited with ${child.exitCode}: ${stderr}`);
    if (Date.now() > deadline) fail(`the server did not become ready: ${stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { base, child, exit, stderr: () => stderr };
}

async function stopServer(s: { child: ChildProcess; exit: Promise<number | null>; stderr: () => string }): Promise<void> {
  s.child.kill('SIGTERM');
  const code = await s.exit;
  children.delete(s.child);
  check(code === 0, `the server exited with ${code} on SIGTERM: ${s.stderr()}`);
}

async function api(base: string, method: string, path: string, opts: { token?: string; json?: unknown; padTo?: number; form?: FormData; ndjson?: string } = {}) {
  const headers: Record<string, string> = {};
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let body: string | FormData | undefined;
  if (opts.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(opts.json);
    // whitespace after the value: a body of that size is parsed on the JSON thread (src/http/json-parser-thread.ts)
    if (opts.padTo) body = body.padEnd(opts.padTo, ' ');
  } else if (opts.ndjson !== undefined) {
    headers['content-type'] = 'application/x-ndjson';
    body = opts.ndjson;
  } else if (opts.form) body = opts.form;
  const r = await fetch(`${base}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await r.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: r.status, json, text, headers: r.headers };
}

async function signIn(base: string): Promise<string> {
  const r = await api(base, 'POST', '/api/identity/v1/session', { json: { grantType: 'password', email: EMAIL, password: PASSWORD } });
  check(r.status === 200, `sign-in failed: ${r.status} ${r.text}`);
  return r.json.accessToken;
}

/** Every contact of a ledger, page by page. */
async function listAll(base: string, token: string, ledgerPath: string): Promise<{ id: string; name: string; referenceId: string }[]> {
  const all: { id: string; name: string; referenceId: string }[] = [];
  let cursor: string | null = null;
  do {
    const r = await api(base, 'GET', `${ledgerPath}/contacts?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { token });
    check(r.status === 200, `list failed: ${r.status} ${r.text}`);
    all.push(...r.json.contacts);
    cursor = r.json.nextCursor;
  } while (cursor);
  return all;
}

async function main(): Promise<void> {
  check(existsSync(exe), `${exe} does not exist: run npm run build first`);
  mkdirSync(emptyPath);
  copyFileSync(exe, bin);
  spawnSync('chmod', ['755', bin]);
  check(readdirSync(dir).sort().join(',') === 'contact-ledger,no-tools', 'the folder holds the executable alone');
  check(spawnSync('sh', ['-c', 'command -v node'], { env: { PATH: emptyPath } }).status !== 0, 'node must not be on the PATH');
  step(`${bin} (${(statSync(bin).size / 1024 ** 2).toFixed(1)} MiB), PATH=${emptyPath} (empty)`);

  const version = command(['version'], join(dir, 'unused'));
  // the version, and the commit it was built from (a build outside a git checkout names none)
  const head = spawnSync('git', ['rev-parse', '--verify', 'HEAD'], { cwd: join(import.meta.dirname, '..'), encoding: 'utf8' });
  const built = head.status === 0 ? new RegExp(`^\\d+\\.\\d+\\.\\d+ \\(commit ${head.stdout.trim()}(?:-modified)?\\)\n$`) : /^\d+\.\d+\.\d+\n$/;
  check(version.status === 0 && built.test(version.stdout), `version: ${version.status} ${version.stdout}${version.stderr} (expected ${built})`);
  // the licenses of what the executable holds, from inside it
  const licenses = command(['licenses'], join(dir, 'unused'));
  check(licenses.status === 0, `licenses: ${licenses.status} ${licenses.stderr}`);
  for (const want of [/^koa \d+\.\d+\.\d+ — MIT$/m, /^better-sqlite3 \d+\.\d+\.\d+ — MIT$/m, /^preact \d+\.\d+\.\d+ — MIT$/m, /^bcryptjs /m, /Permission is hereby granted/, /SQLite/, /^Node\.js is licensed for use as follows:$/m, /Copyright Node\.js contributors/, /- OpenSSL, located at deps\/openssl/]) {
    check(want.test(licenses.stdout), `licenses: ${want} not in the notices`);
  }
  check(command(['--help'], join(dir, 'unused')).stdout.includes('Commands:'), '--help lists the commands');
  check(command(['frobnicate'], join(dir, 'unused')).status === 2, 'an unknown command exits 2');

  // Commands starting at the same moment on a fresh data folder each place or find the SQLite
  // library whole (src/storage/sqlite-addon.ts; pkg's own loader rewrote it in place in ~/.cache:
  // a tester's SIGSEGV in 2 of 25 rounds like these): one sets the folder up, the others are
  // refused (it is in use) or find it set up. (`migrate` served here until it refused a folder
  // without a database: it no longer loads the library there.)
  for (let round = 0; round < 3; round++) {
    const data = join(dir, `at-once-${round}`);
    const runs = await Promise.all(
      Array.from({ length: 4 }, () => {
        const c = spawn(bin, ['init', '--email', 'at-once@example.com', '--password', 'at once passphrase'], { cwd: dir, env: env(data, 0), stdio: ['ignore', 'ignore', 'pipe'] });
        let stderr = '';
        c.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
        return new Promise<string>((r) => c.on('exit', (code, signal) => r(signal ?? (code === 1 && /is using the data folder|is already set up/.test(stderr) ? 'refused' : `${code} ${stderr}`))));
      }),
    );
    check(runs.every((r) => r === '0 ' || r === 'refused') && runs.includes('0 '), `init four at once, round ${round}: ${runs.join(' | ')}`);
    check(readdirSync(join(data, 'native')).length === 1, `round ${round}: one library in ${data}/native`);
  }
  step('four commands at once on a fresh data folder: the SQLite library placed whole, no crash');

  const dataA = join(dir, 'data-a');
  const a = await startServer(dataA);
  step(`instance A serves ${dataA} at ${a.base}`);
  const token = await signIn(a.base);
  const org = await api(a.base, 'POST', '/api/identity/v1/orgs', { token, json: { name: 'Smoke' }, padTo: OFF_THREAD_BYTES });
  check(org.status === 201 && org.json.name === 'Smoke', `create organization (its body parsed on the JSON thread): ${org.status} ${org.text}`);
  const ledger = await api(a.base, 'POST', `/api/ledger/v1/orgs/${org.json.id}/ledgers`, { token, json: { name: 'Smoke ledger' } });
  check(ledger.status === 201, `create ledger: ${ledger.status} ${ledger.text}`);
  const ledgerPath = `/api/ledger/v1/orgs/${org.json.id}/ledgers/${ledger.json.id}`;

  // Import a CSV (parsed on the executable's worker thread) and wait for the job.
  const lines = ['name,company,title,referenceId,email'];
  for (let i = 1; i <= ROWS; i++) lines.push(`Person ${i},Company ${i % 40},${i % 7 ? 'Engineer' : 'VP Sales'},ref-${i},p${i}@example.test`);
  const form = new FormData();
  form.append('file', new Blob([`${lines.join('\n')}\n`], { type: 'text/csv' }), 'contacts.csv');
  const up = await api(a.base, 'POST', `${ledgerPath}/imports`, { token, form });
  check(up.status === 202, `import: ${up.status} ${up.text}`);
  // Polls a job until it completed or failed (a minute at most).
  const ended = async (what: string, path: string, first: any) => {
    const deadline = Date.now() + 60_000;
    let j = first;
    while (j.status !== 'completed' && j.status !== 'failed') {
      check(Date.now() < deadline, `the ${what} did not finish in time`);
      await new Promise((r) => setTimeout(r, 100));
      j = (await api(a.base, 'GET', path, { token })).json;
    }
    return j;
  };
  const job = await ended('import', `${ledgerPath}/imports/${up.json.id}`, up.json);
  check(job.status === 'completed' && job.imported === ROWS, `import ended ${job.status}: ${JSON.stringify(job)}`);
  step(`imported ${job.imported} contacts`);

  // A person feed (applied on the executable's bulk thread): the first 50 people at a new company.
  const moved = 50;
  const records = Array.from({ length: moved }, (_, k) => JSON.stringify({ email: `p${k + 1}@example.test`, name: `Person ${k + 1}`, company: `New Co ${k + 1}` }));
  const fed = await api(a.base, 'POST', '/api/ledger/v1/feed', { token, ndjson: `${records.join('\n')}\n` });
  check(fed.status === 202, `feed: ${fed.status} ${fed.text}`);
  const feedJob = await ended('feed', `/api/ledger/v1/feed/${fed.json.id}`, fed.json);
  check(feedJob.status === 'completed' && feedJob.jobChanges === moved, `feed ended ${feedJob.status}: ${JSON.stringify(feedJob)}`);
  step(`fed ${moved} records: ${feedJob.jobChanges} job changes`);

  const listed = await listAll(a.base, token, ledgerPath);
  check(listed.length === ROWS, `listed ${listed.length} contacts, expected ${ROWS}`);
  const download = await api(a.base, 'GET', `${ledgerPath}/contacts/download`, { token });
  check(download.status === 200 && /^text\/csv/.test(download.headers.get('content-type') ?? ''), `download: ${download.status}`);
  const csvRows = download.text.trim().split('\n');
  check(csvRows.length === ROWS + 1 && csvRows[0]!.startsWith('id,referenceId,name'), `download has ${csvRows.length - 1} rows`);
  step(`listed and downloaded ${ROWS} contacts`);

  const metrics = await api(a.base, 'GET', '/metrics', { token: METRICS_TOKEN });
  check(metrics.status === 200 && metrics.text.includes(`contact_ledger_import_rows_total{outcome="imported"} ${ROWS}`), `metrics: ${metrics.status}`);
  check(metrics.text.includes(`contact_ledger_changes_total{type="job"} ${moved}`), 'metrics: the feed\'s job changes');

  // An online backup while A serves (and keeps answering).
  const backupFile = join(dir, 'smoke-backup.db');
  const pending = new Promise<{ status: number | null; out: string }>((resolve) => {
    const c = spawn(bin, ['backup', backupFile], { cwd: dir, env: env(dataA, 0), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    c.stdout!.on('data', (d: Buffer) => (out += d));
    c.stderr!.on('data', (d: Buffer) => (out += d));
    c.on('exit', (status) => resolve({ status, out }));
  });
  check((await api(a.base, 'GET', '/readyz')).status === 200, 'A answers while the backup runs');
  const backup = await pending;
  check(backup.status === 0, `backup: ${backup.status} ${backup.out}`);
  step(backup.out.trim());

  // Restore into a fresh folder and serve it with a second instance (A keeps running).
  const dataB = join(dir, 'data-b');
  const restored = command(['restore', backupFile], dataB);
  check(restored.status === 0, `restore: ${restored.status} ${restored.stdout}${restored.stderr}`);
  const b = await startServer(dataB);
  step(`instance B serves the restored ${dataB} at ${b.base}`);
  const tokenB = await signIn(b.base);
  const listedB = await listAll(b.base, tokenB, ledgerPath);
  const ids = (l: { id: string }[]) => l.map((c) => c.id).sort().join(',');
  check(ids(listedB) === ids(listed), 'B has the same contacts as A');
  const downloadB = await api(b.base, 'GET', `${ledgerPath}/contacts/download`, { token: tokenB });
  check(downloadB.text === download.text, 'B downloads the same CSV as A');
  step(`instance B has the same ${listedB.length} contacts`);

  await stopServer(b);
  await stopServer(a);
  step('both instances stopped cleanly (SIGTERM, exit 0)');
}

try {
  await main();
  step('ok');
} catch (err) {
  process.stderr.write(`smoke: FAILED: ${(err as Error).message}\n`);
  process.exitCode = 1;
} finally {
  for (const c of children) c.kill('SIGKILL');
  if (!process.env.SMOKE_KEEP) rmSync(dir, { recursive: true, force: true });
}
