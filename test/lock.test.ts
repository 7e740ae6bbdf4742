// One process per data folder (src/storage/lock.ts): a live owner keeps the folder, a dead one or a
// pid reused by another program since does not.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DataDirLockedError, lockDataDir } from '../src/storage/lock.ts';
import { tempDir } from './helpers.ts';

const K = suite('data folder lock');
const lockFile = (dir: string) => join(dir, 'contact-ledger.lock');
const startOf = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!;
};
const hasProc = existsSync('/proc/self/stat');

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

K.run();
