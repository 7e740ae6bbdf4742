// The SQLite library (better-sqlite3's native addon) of the executable. A shared library cannot be
// loaded from inside the executable's snapshot: it has to be a file on disk. pkg's own loader
// wrote it into `$HOME/.cache/pkg/<hash>/`, in place: processes starting at the same moment on a
// fresh machine loaded a half-written file (a tester: SIGSEGV in 2 of 25 rounds of four commands),
// one rewriting a file another had loaded killed that one (SIGBUS), and a service user without a
// home (HOME=/nonexistent) could not start at all, with a message about the database. The build
// (scripts/build.ts) therefore hands better-sqlite3 the addon loaded here instead: placed in the
// data folder, which every process of an installation can write, under a name holding its digest,
// written under a temporary name and renamed into place — never rewritten where it stands — and
// loaded from there. From source (paths.sqliteAddon undefined) better-sqlite3 loads its own.
import { createHash } from 'node:crypto';
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { threadId } from 'node:worker_threads';
import { ConfigError } from '../config.ts';
import { paths } from '../paths.ts';

/** The data folder's subfolder that holds the placed library. */
export const NATIVE_DIR = 'native';

/** Errors of a folder the program may not write into (a restart cannot help: exit 2). */
const NOT_WRITABLE = new Set(['EACCES', 'EPERM', 'EROFS', 'ENOTDIR', 'EEXIST']);

let loaded: unknown;

/**
 * Places the library file `source` in `<dataDir>/native/` as `<name>-<first 16 hex of its
 * SHA-256>.node` and returns that path. A file already there with the same bytes is used as it is
 * (its inode unchanged); anything else there (a half-written file of a killed process, another
 * build's) is replaced by a rename, never written in place, so a process that has the old one
 * loaded keeps it whole.
 */
export function placeLibrary(source: string, dataDir: string, name: string): string {
  const bytes = readFileSync(source);
  const digest = createHash('sha256').update(bytes).digest('hex').slice(0, 16);
  const dir = join(dataDir, NATIVE_DIR);
  const file = join(dir, `${name}-${digest}.node`);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (holds(file, bytes)) return file;
    const partial = join(dir, `.${name}-${digest}.${process.pid}-${threadId}.partial`);
    try {
      const fd = openSync(partial, 'w', 0o700);
      try {
        for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(partial, file);
    } finally {
      rmSync(partial, { force: true });
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? '';
    const message = `the SQLite library cannot be placed in ${dir} (${code || (err as Error).message}); the data folder must be writable by the user the program runs as`;
    throw NOT_WRITABLE.has(code) ? new ConfigError(message) : new Error(message);
  }
  return file;
}

function holds(file: string, bytes: Buffer): boolean {
  try {
    return statSync(file).size === bytes.length && readFileSync(file).equals(bytes);
  } catch {
    return false;
  }
}

/**
 * In the executable: places its SQLite library in the data folder and loads it, once per thread;
 * every thread that opens a database calls this first (prepareDataDir on the main thread, the bulk
 * thread and the checkpointer with their database's folder). From source: nothing.
 */
export function loadSqliteLibrary(dataDir: string): void {
  if (loaded !== undefined || paths.sqliteAddon === undefined) return;
  const file = placeLibrary(paths.sqliteAddon, dataDir, 'better-sqlite3');
  const module = { exports: {} as unknown };
  try {
    process.dlopen(module, file);
  } catch (err) {
    // "failed to map segment from shared object": the data folder is on a file system mounted noexec
    throw new ConfigError(`the SQLite library ${file} cannot be loaded (${(err as Error).message.split('\n')[0]}); the data folder must not be on a file system mounted noexec`);
  }
  loaded = module.exports;
}

/** What the executable's better-sqlite3 loads as its addon (scripts/build.ts): the library loadSqliteLibrary loaded. */
export function sqliteLibrary(): unknown {
  if (loaded === undefined) throw new Error('the SQLite library is loaded by loadSqliteLibrary(<data folder>) before the first database is opened');
  return loaded;
}
