import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { StartupError } from './db.ts';

/**
 * One process per data folder: `<data>/contact-ledger.lock` holds the owner's pid. It lets the
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

export interface DataLock {
  release(): void;
}

export function lockDataDir(dataDir: string): DataLock {
  const file = join(dataDir, 'contact-ledger.lock');
  if (held.has(file)) throw new StartupError(`the data folder ${dataDir} is already open in this process`);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      writeSync(fd, `${process.pid}\n`);
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
      let pid = NaN;
      try {
        pid = Number.parseInt(readFileSync(file, 'utf8'), 10);
      } catch {
        /* vanished meanwhile */
      }
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid))
        throw new DataDirLockedError(`another contact-ledger (pid ${pid}) is using the data folder ${dataDir}; stop it first`, pid);
      rmSync(file, { force: true }); // left by a process that is gone
    }
  }
  throw new StartupError(`cannot lock the data folder ${dataDir}`);
}
