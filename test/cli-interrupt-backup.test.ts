// `backup` and `restore` stopped by SIGINT or SIGTERM (as `import` and `feed` are, in
// cli-interrupt.test.ts: exit 1, a line saying "interrupted", the lock released): their partial
// copies removed; `restore` killed: what it left removed at the next start. As child processes on
// real files.
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { tempDir, until } from './helpers.ts';
import { baseEnv, MAIN } from './child-server.ts';
import { cli, EMAIL, operatorSuite, PASSWORD, sha, start, stop } from './operator-helpers.ts';

const C = operatorSuite('backup and restore interrupted');

let big: Promise<{ data: string; backup: string }> | undefined;
/**
 * A data folder whose database holds about 60 MiB, so that checking and copying it take a moment,
 * and a backup of it (made once, shared by the cases below: they only read them).
 */
function bigDataFolder(): Promise<{ data: string; backup: string }> {
  big ??= (async () => {
    const data = tempDir();
    assert.is((await cli(['init', '--email', EMAIL, '--password', PASSWORD], { CONTACT_LEDGER_DATA: data })).status, 0);
    const db = new Database(join(data, 'contact-ledger.db'));
    db.exec('CREATE TABLE filler (x BLOB); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 60000) INSERT INTO filler SELECT randomblob(1000) FROM n');
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
    const backup = join(tempDir(), 'big-backup.db');
    const b = await cli(['backup', backup], { CONTACT_LEDGER_DATA: data });
    assert.is(b.status, 0, b.stderr);
    return { data, backup };
  })();
  return big;
}

/** The partial file a backup to `<dir>/<name>` is writing (`.<name>.<pid>-<hex>.partial`), if there is one. */
const partialIn = (dir: string, name: string): string | undefined => {
  const found = readdirSync(dir).find((n) => n.startsWith(`.${name}.`) && /\.\d+-[0-9a-f]{8}\.partial$/.test(n));
  return found === undefined ? undefined : join(dir, found);
};

/**
 * Runs the command and sends it `sig` as soon as the file `there` finds exists (its partial copy);
 * returns its exit code (or signal), stderr and that file.
 */
async function stopWhenThere(args: string[], env: Record<string, string>, there: () => string | undefined, sig: NodeJS.Signals): Promise<{ code: number | null; signal: string | null; stderr: string; file: string | undefined }> {
  const child = spawn(process.execPath, [MAIN, ...args], { env: { ...baseEnv, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d));
  const exit = once(child, 'exit');
  let file: string | undefined;
  try {
    await until(`the partial file of ${args.join(' ')} to appear`, () => (file = there()) !== undefined || child.exitCode !== null, undefined, 60_000);
  } finally {
    child.kill(sig);
  }
  const [code, signal] = await exit;
  assert.ok(code !== 0, `${args[0]} was stopped before it ended: ${stderr}`);
  return { code, signal, stderr, file };
}

/** Files in `dir` whose names start with a dot (partial copies and the like). */
const dotFiles = (dir: string) => readdirSync(dir).filter((n) => n.startsWith('.'));

C('backup <file> stopped by SIGINT, SIGTERM or SIGHUP (a closed terminal): exit 1, "interrupted" on one line, and no partial file left beside the target', async () => {
  // A tester's case: SIGINT exited 130 without a word and left .b.db.partial (65 MB) and its -journal, which nothing removes; so did SIGHUP (an operator tester's case)
  const { data } = await bigDataFolder();
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const out = tempDir();
    const dest = join(out, 'b.db');
    const r = await stopWhenThere(['backup', dest], { CONTACT_LEDGER_DATA: data }, () => partialIn(out, 'b.db'), sig);
    assert.is(r.code, 1, `${sig}: ${r.signal} ${r.stderr}`);
    assert.match(r.stderr, /^contact-ledger backup: interrupted: no backup was written \(its partial file .*\.b\.db\.\d+-[0-9a-f]{8}\.partial was removed\)\n$/, sig);
    assert.ok(r.stderr.includes(r.file!), `${sig}: the file it wrote is named`);
    assert.equal(readdirSync(out), [], `${sig}: nothing left beside the target`);
  }
});

C('restore <file> stopped by SIGINT or SIGTERM: exit 1, "interrupted", no partial copy, the lock released and the database unchanged', async () => {
  // A tester's case: exit 130 without a word, the lock and ..contact-ledger.db.restoring.partial (80–156 MB) and its -journal left.
  const { backup } = await bigDataFolder();
  const data = tempDir();
  assert.is((await cli(['init', '--email', EMAIL, '--password', PASSWORD], { CONTACT_LEDGER_DATA: data })).status, 0);
  const live = join(data, 'contact-ledger.db');
  const before = sha(live);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    const r = await stopWhenThere(['restore', backup], { CONTACT_LEDGER_DATA: data }, () => partialIn(data, '.contact-ledger.db.restoring'), sig);
    assert.is(r.code, 1, `${sig}: ${r.signal} ${r.stderr}`);
    assert.match(r.stderr, /^contact-ledger restore: interrupted before the database was replaced; its partial copy was removed\. Nothing was changed\.\n$/, sig);
    assert.equal(dotFiles(data), [], `${sig}: no partial copy left`);
    assert.not.ok(existsSync(join(data, 'contact-ledger.lock')), `${sig}: the lock is released`);
    assert.is(sha(live), before, `${sig}: the database is as it was`);
    assert.not.ok(existsSync(join(data, 'backups')), `${sig}: nothing was moved aside`);
  }
});

C('a restore killed while it copies: the next start (migrate, serve, restore) removes its partial copy by every name it writes', async () => {
  // A tester's case: ..contact-ledger.db.restoring.partial and its -journal survived serve and migrate (the start looked for .restoring only).
  // (Its name is ..contact-ledger.db.restoring.<pid>-<hex>.partial since the fiftieth session.)
  const { backup } = await bigDataFolder();
  const data = tempDir();
  const env = { CONTACT_LEDGER_DATA: data };
  assert.is((await cli(['init', '--email', EMAIL, '--password', PASSWORD], env)).status, 0);
  const killed = async () => {
    const r = await stopWhenThere(['restore', backup], env, () => partialIn(data, '.contact-ledger.db.restoring'), 'SIGKILL');
    assert.is(r.signal, 'SIGKILL');
    const partial = r.file!;
    assert.ok(existsSync(partial), 'the killed restore left its partial copy');
    // and what SQLite may write beside it while it is open, and the private copy of a source on
    // read-only media (with its side files) that a restore may be killed while reading
    for (const side of ['-journal', '-wal', '-shm']) writeFileSync(`${partial}${side}`, 'left by a killed restore');
    for (const side of ['', '-journal', '-wal', '-shm']) writeFileSync(join(data, `.contact-ledger.db.restoring.source${side}`), 'left by a killed restore');
  };
  await killed();
  const m = await cli(['migrate'], env);
  assert.is(m.status, 0, m.stderr);
  assert.equal(dotFiles(data), [], 'migrate removed them');
  await killed();
  await stop(await start(env));
  assert.equal(dotFiles(data), [], 'serve removed them');
  await killed();
  const small = join(tempDir(), 'small.db');
  assert.is((await cli(['backup', small], env)).status, 0);
  const r = await cli(['restore', small], env);
  assert.is(r.status, 0, r.stderr);
  assert.equal(dotFiles(data), [], 'restore removed them');
});

C.run();
