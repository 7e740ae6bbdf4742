import { closeSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { StartupError } from './db.ts';

/**
 * One process per data folder: `<data>/contact-ledger.lock` holds the owner's pid (and, on Linux,
 * when that process started, so a pid reused after a crash does not keep the folder locked). It lets the
 * scheduler treat every lease found at start as left by a dead process (recovery sweep), and
 * stops a second server from writing into the same database.
 */

const held = new Set<string>();

/** The data folder is in use by another live process (usually the server). */
export class DataDirLockedError extends StartupError {
  override name = 'DataDirLockedError';
  readonly pid: number;
  constructor(message: string, pid: number) {
    super(message);
    this.pid = pid;
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * When a process started, in clock ticks since boot (Linux: field 22 of /proc/<pid>/stat), so a
 * pid reused by another program after a crash is not mistaken for the lock's owner; undefined
 * where /proc is not available.
 */
function startTicks(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the command name (field 2) may hold spaces and parentheses: count fields after its last ')'
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/** True when the lock's owner still runs: the pid is alive and, where known, started when the lock says. */
function ownerAlive(pid: number, started: string | undefined): boolean {
  if (!alive(pid)) return false;
  if (started === undefined) return true;
  const now = startTicks(pid);
  return now === undefined || now === started;
}

/** The lock file's owner, as written: its pid and, where known, its start in clock ticks. */
function readLock(file: string): { pid: number; started: string | undefined } | undefined {
  try {
    const [p, s] = readFileSync(file, 'utf8').trim().split(' ');
    const pid = Number.parseInt(p ?? '', 10);
    return Number.isInteger(pid) && pid > 0 ? { pid, started: s } : undefined;
  } catch {
    return undefined; // none, or vanished meanwhile
  }
}

/**
 * The live process holding the data folder (usually the server) and when it took it (the lock
 * file's time), or undefined when none does.
 */
export function dataDirHolder(dataDir: string): { pid: number; since: number } | undefined {
  const file = join(dataDir, 'contact-ledger.lock');
  const owner = readLock(file);
  if (!owner || owner.pid === process.pid || !ownerAlive(owner.pid, owner.started)) return undefined;
  try {
    return { pid: owner.pid, since: statSync(file).mtimeMs };
  } catch {
    return undefined;
  }
}

export interface DataLock {
  release(): void;
}

export function lockDataDir(dataDir: string): DataLock {
  const file = join(dataDir, 'contact-ledger.lock');
  if (held.has(file)) throw new StartupError(`the data folder ${dataDir} is already open in this process`);
  const ownStart = startTicks(process.pid);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      writeSync(fd, `${process.pid}${ownStart ? ` ${ownStart}` : ''}\n`);
      closeSync(fd);
      held.add(file);
      return {
        release() {
          if (!held.delete(file)) return;
          rmSync(file, { force: true });
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new StartupError(`cannot create ${file}: ${(err as Error).message}`);
      const owner = readLock(file);
      if (owner && owner.pid !== process.pid && ownerAlive(owner.pid, owner.started))
        throw new DataDirLockedError(`another contact-ledger (pid ${owner.pid}) is using the data folder ${dataDir}; stop it first`, owner.pid);
      rmSync(file, { force: true }); // left by a process that is gone
    }
  }
  throw new StartupError(`cannot lock the data folder ${dataDir}`);
}
