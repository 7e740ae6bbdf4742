// The SQLite library (better-sqlite3's native addon) of the executable. A shared library cannot be
// loaded from inside the executable's snapshot: it has to be a file on disk. pkg's own loader
// wrote it into `$HOME/.cache/pkg/<hash>/`, in place: processes starting at the same moment on a
// fresh machine loaded a half-written file (a tester: SIGSEGV in 2 of 25 rounds of four commands),
// one rewriting a file another had loaded killed that one (SIGBUS), and a service user without a
// home (HOME=/nonexistent) could not start at all, with a message about the database. The build
// (scripts/build.ts) therefore hands better-sqlite3 the addon loaded here instead: placed by the
// data folder's owner (the service user) in the data folder, under a name holding its digest,
// written under a temporary name and renamed into place — never rewritten where it stands — and
// loaded from there; another user loads a private copy (loadSqliteLibrary). From source
// (paths.sqliteAddon undefined) better-sqlite3 loads its own.
import { createHash } from 'node:crypto';
import { closeSync, constants, fsyncSync, lstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { threadId } from 'node:worker_threads';
import { ConfigError } from '../config.ts';
import { paths } from '../paths.ts';

/** The data folder's subfolder that holds the placed library. */
export const NATIVE_DIR = 'native';

/** Errors of a folder the program may not write into (a restart cannot help: exit 2). */
const NOT_WRITABLE = new Set(['EACCES', 'EPERM', 'EROFS', 'ENOTDIR', 'EEXIST']);

/** A temporary file of a process killed while it wrote one is removed after this long. */
const STALE_PARTIAL_MS = 10 * 60_000;

let loaded: unknown;

/**
 * Places the library file `source` in `<dataDir>/native/` as `<name>-<first 16 hex of its
 * SHA-256>.node` and returns that path. A file already there with the same bytes is used as it is
 * (its inode unchanged); anything else there (a half-written file of a killed process, another
 * build's) is replaced by a rename, never written in place, so a process that has the old one
 * loaded keeps it whole. Temporary files that killed processes left are removed.
 */
export function placeLibrary(source: string, dataDir: string, name: string): string {
  const bytes = readFileSync(source);
  const digest = createHash('sha256').update(bytes).digest('hex').slice(0, 16);
  const dir = join(dataDir, NATIVE_DIR);
  const file = join(dir, `${name}-${digest}.node`);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    removeStalePartials(dir);
    if (!holds(file, bytes)) writeThenRename(join(dir, `.${name}-${digest}.${process.pid}-${threadId}.partial`), file, bytes);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? '';
    const why = `the SQLite library cannot be placed in ${dir} (${code || (err as Error).message})`;
    // permissions, a file in the way, a read-only file system: exit 2; a full disk may pass (exit 1)
    throw NOT_WRITABLE.has(code) ? new ConfigError(`${why}; the data folder must be writable by the user the program runs as`) : new Error(why);
  }
  return file;
}

/** Writes `bytes` to `partial` (no link followed), syncs it, and renames it to `file`. */
function writeThenRename(partial: string, file: string, bytes: Buffer): void {
  try {
    const fd = openSync(partial, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, 0o700);
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
}

function removeStalePartials(dir: string): void {
  for (const entry of readdirSync(dir)) {
    if (!entry.endsWith('.partial')) continue;
    try {
      if (Date.now() - lstatSync(join(dir, entry)).mtimeMs > STALE_PARTIAL_MS) rmSync(join(dir, entry), { force: true });
    } catch {
      // gone meanwhile
    }
  }
}

function holds(file: string, bytes: Buffer): boolean {
  try {
    return statSync(file).size === bytes.length && readFileSync(file).equals(bytes);
  } catch {
    return false;
  }
}

/**
 * In the executable: places its SQLite library and loads it, once per thread; every thread that
 * opens a database calls this first (prepareDataDir on the main thread, the bulk thread and the
 * checkpointer with their database's folder). The data folder's owner (the service user) places it
 * in the data folder (placeLibrary). Another user — root's cron job or a backup operator with read
 * access — does not write there, nor load code from a folder another user may write: it loads a
 * private copy from a fresh folder of its own under TMPDIR, removed once loaded. From source: nothing.
 */
export function loadSqliteLibrary(dataDir: string): void {
  if (loaded !== undefined || paths.sqliteAddon === undefined) return;
  const own = ownedByMe(dataDir);
  const dir = own ? undefined : privateFolder();
  try {
    const file = own ? placeLibrary(paths.sqliteAddon, dataDir, 'better-sqlite3') : join(dir!, 'better-sqlite3.node');
    if (dir) writeFileSync(file, readFileSync(paths.sqliteAddon), { mode: 0o700, flag: 'wx' });
    const module = { exports: {} as unknown };
    try {
      process.dlopen(module, file);
    } catch (err) {
      const first = (err as Error).message.split('\n')[0]!;
      // "failed to map segment from shared object": a file system mounted noexec
      if (!/failed to map segment/.test(first)) throw new Error(`the SQLite library ${file} cannot be loaded: ${first}`);
      throw new ConfigError(`the SQLite library ${file} cannot be loaded (${first}); ${own ? 'the data folder' : 'TMPDIR'} must not be on a file system mounted noexec`);
    }
    loaded = module.exports;
  } finally {
    if (dir) rmSync(dir, { recursive: true, force: true }); // loaded: the file is no longer needed
  }
}

function ownedByMe(dataDir: string): boolean {
  try {
    return statSync(dataDir).uid === process.getuid?.();
  } catch {
    return false;
  }
}

function privateFolder(): string {
  try {
    return mkdtempSync(join(tmpdir(), 'contact-ledger-sqlite-'));
  } catch (err) {
    throw new ConfigError(`the SQLite library cannot be placed in ${tmpdir()} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); set TMPDIR to a folder this user may write`);
  }
}

/** What the executable's better-sqlite3 loads as its addon (scripts/build.ts): the library loadSqliteLibrary loaded. */
export function sqliteLibrary(): unknown {
  if (loaded === undefined) throw new Error('the SQLite library is loaded by loadSqliteLibrary(<data folder>) before the first database is opened');
  return loaded;
}
