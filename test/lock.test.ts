// One process per data folder (src/storage/lock.ts): a live owner keeps the folder, a dead one or a
// pid reused by another program since does not.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import Database from 'better-sqlite3';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DataDirLockedError, KERNEL_LOCK_FILE, lockDataDir } from '../src/storage/lock.ts';
import { StartupError } from '../src/storage/db.ts';
import { tempDir, until } from './helpers.ts';

const K = suite('data folder lock');
const lockFile = (dir: string) => join(dir, 'contact-ledger.lock');
const startOf = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!;
};
const hasProc = existsSync('/proc/self/stat');
/** lock.ts as a child process imports it. */
const lockModule = pathToFileURL(join(import.meta.dirname, '..', 'src', 'storage', 'lock.ts')).href;

K('the lock holds the pid (and its start time), refuses a second holder, and goes away on release', () => {
  const dir = tempDir();
  const lock = lockDataDir(dir);
  const [pid, started] = readFileSync(lockFile(dir), 'utf8').trim().split(' ');
  assert.is(Number(pid), process.pid);
  if (hasProc) assert.is(started, startOf(process.pid));
  assert.throws(() => lockDataDir(dir), /already open in this process/);
  lock.release();
  assert.not.ok(existsSync(lockFile(dir)));
});

K('a folder, a symbolic link or a FIFO where the lock file should be is refused, saying what it is, and left as it is', () => {
  const cases: [string, (file: string) => void, string][] = [
    ['a folder', (f) => mkdirSync(f), 'a folder'],
    ['a dangling link', (f) => symlinkSync('/nonexistent/contact-ledger.lock', f), 'a symbolic link'],
    ['a link to a stale lock', (f) => {
      writeFileSync(`${f}.elsewhere`, '999999999\n');
      symlinkSync(`${f}.elsewhere`, f);
    }, 'a symbolic link'],
    ['a FIFO', (f) => assert.is(spawnSync('mkfifo', [f]).status, 0), 'a FIFO'],
  ];
  for (const [what, plant, said] of cases) {
    const dir = tempDir();
    plant(lockFile(dir));
    const err = (() => {
      try {
        lockDataDir(dir).release();
        return undefined;
      } catch (e) {
        return e as Error;
      }
    })();
    assert.instance(err, StartupError, what);
    assert.is(err!.message, `cannot read ${lockFile(dir)}: it is ${said}, not a lock file; remove it while no contact-ledger runs`, what);
    assert.not.ok(lstatSync(lockFile(dir)).isFile(), `${what}: left as it is`);
    // (but the file whose lock the kernel keeps, which stays: removed, a process waiting to lock it would lock a file gone)
    assert.equal(readdirSync(dir).filter((n) => n.startsWith('contact-ledger.lock.') && !n.endsWith('.elsewhere') && n !== KERNEL_LOCK_FILE), [], `${what}: nothing of this process's left behind`);
  }
});

K('a FIFO where the lock file should be holds nobody up: dataDirHolder (the keys command asks it) says no server holds the folder', () => {
  const dir = tempDir();
  assert.is(spawnSync('mkfifo', [lockFile(dir)]).status, 0);
  // in a child process: reading the FIFO as a file would wait for a writer that never comes
  const run = spawnSync(process.execPath, [...process.execArgv, '--input-type=module', '-e', `const { dataDirHolder } = await import(${JSON.stringify(lockModule)}); process.stdout.write(JSON.stringify(dataDirHolder(${JSON.stringify(dir)}) ?? null))`], { encoding: 'utf8', timeout: 10_000 });
  assert.is(run.error, undefined, 'the child finished');
  assert.is(run.stdout, 'null', run.stderr);
  assert.ok(lstatSync(lockFile(dir)).isFIFO(), 'left as it is');
});

K("the kernel's lock is held as long as the folder is, also by a holder that keeps no handle of it: the garbage collector closed its connection, and the lock went with it (a test's holder lost it)", async () => {
  const dir = tempDir();
  const child = spawn(process.execPath, [...process.execArgv, '--expose-gc', '--input-type=module', '-e', `const { lockDataDir } = await import(${JSON.stringify(lockModule)}); lockDataDir(${JSON.stringify(dir)}); for (let i = 0; i < 5; i++) { globalThis.gc(); await new Promise((r) => setTimeout(r, 20)); } console.log('collected'); setInterval(() => {}, 1000);`], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    await once(child.stdout!, 'data');
    // asked as dataDirHolder asks it: a read is refused while the holder's exclusive lock stands
    const reader = new Database(join(dir, KERNEL_LOCK_FILE), { readonly: true, fileMustExist: true, timeout: 0 });
    try {
      assert.throws(() => reader.prepare('SELECT count(*) FROM sqlite_master').get(), /database is locked/);
    } finally {
      reader.close();
    }
  } finally {
    child.kill('SIGKILL');
  }
});

K('a live owner keeps the folder: DataDirLockedError naming its pid', () => {
  if (!hasProc) return;
  const dir = tempDir();
  const owner = process.ppid; // the test runner: alive for the whole test
  writeFileSync(lockFile(dir), `${owner} ${startOf(owner)}\n`);
  try {
    lockDataDir(dir);
    assert.unreachable('locked');
  } catch (err) {
    assert.instance(err, DataDirLockedError);
    assert.is((err as DataDirLockedError).pid, owner);
  }
});

K('a lock left by a dead process, or by a pid another program uses now, is taken over', () => {
  const dir = tempDir();
  const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  writeFileSync(lockFile(dir), `${dead.stdout}\n`);
  lockDataDir(dir).release();
  if (!hasProc) return;
  writeFileSync(lockFile(dir), `${process.ppid} 1\n`); // alive, but not the process that wrote the lock
  const lock = lockDataDir(dir);
  assert.is(Number(readFileSync(lockFile(dir), 'utf8').split(' ')[0]), process.pid);
  lock.release();
});

K('a takeover claim left by a process killed halfway through its takeover does not keep the folder locked', () => {
  const dir = tempDir();
  const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout;
  writeFileSync(lockFile(dir), `${dead}\n`);
  const ino = statSync(lockFile(dir), { bigint: true }).ino;
  writeFileSync(`${lockFile(dir)}.takeover-${ino}-0`, `${dead}\n`); // void: its maker is gone
  const lock = lockDataDir(dir);
  assert.is(Number(readFileSync(lockFile(dir), 'utf8').split(' ')[0]), process.pid);
  lock.release();
  assert.not.ok(existsSync(lockFile(dir)));
});

K('a stale lock that many processes take over at the same instant gets exactly one holder, every round', async () => {
  // A tester's case: each process that found the dead owner removed the lock and tried again, and so
  // removed the lock another had just made: 6 rounds of 30 had two holders.
  const ROUNDS = 30;
  const PROCS = 6;
  const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout;
  const dirs = Array.from({ length: ROUNDS }, () => tempDir());
  for (const [i, d] of dirs.entries()) writeFileSync(lockFile(d), i % 2 ? `${dead}\n` : `${dead} 1\n`);
  // each child: ready; then, at the instants the parent gives (one a round), lockDataDir on that
  // round's folder, holding whatever it got (so a late one sees a live owner) until told to end.
  // Between the rounds a child sleeps (Atomics.wait) until 2 ms before the next instant and only
  // then spins to it, so that all of them still try at the same instant; spinning the whole 100 ms
  // of each round, the six took ~18 CPU-seconds and starved whatever test file ran beside this one.
  const script = `const { lockDataDir } = await import(${JSON.stringify(lockModule)});
    const dirs = ${JSON.stringify(dirs)};
    const sleeper = new Int32Array(new SharedArrayBuffer(4));
    console.log('ready');
    process.stdin.once('data', (d) => {
      const t0 = Number(String(d));
      for (const [i, dir] of dirs.entries()) {
        const at = t0 + i * 100;
        const ahead = at - 2 - Date.now();
        if (ahead > 0) Atomics.wait(sleeper, 0, 0, ahead);
        while (Date.now() < at) {}
        try { lockDataDir(dir); console.log(i + ' got'); } catch (err) { console.log(i + ' refused ' + err.name); }
      }
      console.log('end');
    });`;
  const children = Array.from({ length: PROCS }, () => {
    const c = spawn(process.execPath, [...process.execArgv, '--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    c.stdout!.on('data', (d: Buffer) => (out += d));
    return { c, out: () => out };
  });
  try {
    await until('the children ready', () => children.every((ch) => ch.out().includes('ready')));
    const t0 = Date.now() + 200;
    for (const ch of children) ch.c.stdin!.write(String(t0));
    await until('every round done', () => children.every((ch) => ch.out().includes('end')), undefined, 60_000);
    for (let i = 0; i < ROUNDS; i++) {
      const holders = children.filter((ch) => ch.out().includes(`\n${i} got\n`));
      assert.is(holders.length, 1, `round ${i}: ${holders.length} holders`);
      assert.is(Number(readFileSync(lockFile(dirs[i]!), 'utf8').split(' ')[0]), holders[0]!.c.pid, `round ${i}: the lock names its holder`);
      assert.equal(readdirSync(dirs[i]!), ['contact-ledger.lock', KERNEL_LOCK_FILE], 'no claim or own file left behind');
      for (const ch of children) if (ch !== holders[0]) assert.ok(ch.out().includes(`\n${i} refused DataDirLockedError\n`), ch.out());
    }
  } finally {
    for (const ch of children) ch.c.kill('SIGKILL');
  }
});

K.run();
