import { accessSync, chmodSync, closeSync, constants, existsSync, openSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { nextTurn } from '../event-loop.ts';
import { checkProblems, EMPTY_DATABASE, isEmptyDatabase, readHead } from './db.ts';
import { copyOwnerOnly, fsyncFile } from './durable-files.ts';

/**
 * Online backups through SQLite's backup API (RELIABILITY.md D5). A backup is written beside its
 * destination as `<file>.partial`, turned into a self-contained rollback-journal database (no -wal
 * needed beside it), flushed to disk and then renamed into place, so a file with the final name is
 * always a complete backup.
 */

/** A UTC time stamp for file names that sorts by time: 20261122T103200123Z. */
export const fileStamp = (ms: number) => new Date(ms).toISOString().replace(/[-:.]/g, '');

export class BackupError extends Error {
  override name = 'BackupError';
}

/** A backup stopped by its `interrupted` option (SIGINT, SIGTERM): its partial files are removed, nothing got the final name. */
export class BackupInterrupted extends BackupError {
  override name = 'BackupInterrupted';
  constructor() {
    super('interrupted');
  }
}

/** Where a backup to `dest` is written until it is complete (renamed into place then). */
export const partialOf = (dest: string) => join(dirname(dest), `.${basename(dest)}.partial`);

/**
 * A database file and the files SQLite may write beside it: its rollback journal, and its -wal and
 * -shm while a copy whose header still says WAL is open (backupTo turns it into a journal database).
 */
export const withSideFiles = (file: string) => [file, `${file}-journal`, `${file}-wal`, `${file}-shm`];

/** Removes a database file and its side files (withSideFiles), those that are there. */
export function removeWithSideFiles(file: string): void {
  for (const f of withSideFiles(file)) rmSync(f, { force: true });
}

export interface BackupOptions {
  /**
   * Copy everything in one step. Needed when the source is read by its own connection while
   * another one (the server) writes: between steps such a write would restart the backup, over
   * and over under a steady import. One step reads one consistent snapshot (WAL readers do not
   * block the writer). A backup on the writer's own connection instead copies in small steps and
   * SQLite carries the connection's own writes into it, so the event loop is never held for long
   * (the server's other writer, the bulk thread, waits meanwhile: ops/scheduled-backups.ts).
   */
  oneStep?: boolean;
  /** Run `PRAGMA integrity_check` on the copy before it gets its final name. */
  verify?: boolean;
  /**
   * Asked after each step of the copy and before the check and the rename: true stops the backup
   * with BackupInterrupted, its partial files removed. (A step, and the check, run on the event loop
   * at one go: a signal is seen when the one under way ends.)
   */
  interrupted?: () => boolean;
}

const PAGES_PER_STEP = 1000;

export interface BackupResult {
  /** The backup's size. */
  bytes: number;
  /** How often SQLite started the copy over because another connection wrote between two steps. */
  restarts: number;
}

/**
 * How often an online backup started over, told by the pages copied after each step: more than
 * before is progress, fewer a restart (another connection wrote), as many a step that found the
 * source busy (a checkpoint resetting the -wal) and copied nothing — no restart: counted as one, it
 * failed a test on a busy machine with 2 restarts for 1.
 */
export function copyProgress(): { step(totalPages: number, remainingPages: number): void; readonly restarts: number } {
  let copied = 0;
  let restarts = 0;
  return {
    step(totalPages, remainingPages) {
      const now = totalPages - remainingPages;
      if (now < copied) restarts++;
      copied = now;
    },
    get restarts() {
      return restarts;
    },
  };
}

/** Copies the database `source` into `dest` (which must not exist yet). */
export async function backupTo(source: Database.Database, dest: string, opts: BackupOptions = {}): Promise<BackupResult> {
  if (existsSync(dest)) throw new BackupError(`${dest} already exists; choose a new file name`);
  if (!existsSync(dirname(dest))) throw new BackupError(`the folder ${dirname(dest)} does not exist`);
  const partial = partialOf(dest);
  removeWithSideFiles(partial); // what a killed backup left
  // A signal's listener runs only when the event loop turns, never between the synchronous calls
  // that follow a step (the check, the rename): the loop is let turn once before each look.
  const stopHere = async () => {
    if (!opts.interrupted) return;
    await nextTurn();
    if (opts.interrupted()) throw new BackupInterrupted();
  };
  try {
    // A backup holds password hashes and every contact: readable by its owner only from its first
    // byte (SQLite writes into the file as it is, and gives its journal the same mode), not only
    // once complete; a backup killed halfway leaves no copy for others to read.
    closeSync(openSync(partial, 'wx', 0o600));
    const progress = copyProgress();
    await source.backup(partial, {
      progress: ({ totalPages, remainingPages }) => {
        progress.step(totalPages, remainingPages);
        if (opts.interrupted?.()) throw new BackupInterrupted(); // the loop turned since the last step
        return opts.oneStep ? 0x7fffffff : PAGES_PER_STEP;
      },
    });
    const { restarts } = progress;
    await stopHere();
    const copy = new Database(partial);
    try {
      // The source is in WAL mode and so is the copy's header: make it a plain rollback-journal
      // database, so that the file alone is the whole backup.
      copy.pragma('journal_mode = DELETE');
      if (opts.verify) {
        const found = checkProblems(copy, 'integrity_check');
        if (found) throw new BackupError(`the copy failed its integrity check: ${found}`);
      }
    } finally {
      copy.close();
    }
    await stopHere();
    chmodSync(partial, 0o600); // whatever the umask did to the mode asked for at creation
    fsyncFile(partial);
    renameSync(partial, dest);
    fsyncFile(dirname(dest));
    return { bytes: statSync(dest).size, restarts };
  } catch (err) {
    removeWithSideFiles(partial);
    if (err instanceof BackupError) throw err;
    throw new BackupError(`backup to ${dest} failed: ${(err as Error).message}`);
  }
}

/**
 * Opens the live database of a data folder as the source of an online backup, whether or not a
 * server holds it: a connection of its own that only reads — read-only, so that closing it never
 * folds the -wal into the file and drops it, as the last connection that may write does (a
 * tester's backup of a damaged database, the server stopped, took its -wal with it). Throws
 * BackupError when the file is not a contact-ledger database.
 */
export function openBackupSource(file: string): Database.Database {
  if (isEmptyDatabase(file)) throw new BackupError(`${file} ${EMPTY_DATABASE}: there is nothing to back up. Restore a backup (\`contact-ledger restore <backup file>\`)`);
  let raw: Database.Database | undefined;
  try {
    raw = new Database(file, { readonly: true, fileMustExist: true });
    raw.pragma('busy_timeout = 5000');
    const tables = raw.prepare("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN ('schema_migrations', 'users')").pluck().get();
    if (tables !== 2) throw new Error('it is not a contact-ledger database');
    return raw;
  } catch (err) {
    raw?.close();
    throw new BackupError(`cannot read ${file}: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * Whether the database file's header says WAL mode (bytes 18 and 19 are 2). An unreadable file is
 * not: the check that opens it says so, as a refusal (a review's case: a raw EACCES).
 */
function inWalMode(file: string): boolean {
  const header = readHead(file, 20);
  return header !== undefined && header[18] === 2 && header[19] === 2;
}

/**
 * Whether SQLite can read the database `file` only from a private copy: a database in WAL mode is
 * read with its -shm (the -wal's index), which SQLite must create beside it — impossible in a folder
 * on read-only media (EROFS, also for root), or one this user may not write (a tester's backup on a
 * read-only mount was refused as "not a contact-ledger database (unable to open database file)").
 * A rollback-journal database (what `backup` writes) is read where it is.
 */
export function needsPrivateCopy(file: string): boolean {
  if (!inWalMode(file)) return false;
  try {
    accessSync(dirname(file), constants.W_OK);
    return false;
  } catch {
    return true;
  }
}

/**
 * Copies the database `source` and its -wal (if it has one), as they are, to `copy` and its -wal,
 * for a source needsPrivateCopy says SQLite cannot read in place: SQLite then reads the copy as it
 * would have read the source, the -wal's transactions included. Only reads `source`. The copy is
 * the caller's to remove (removeWithSideFiles).
 */
export function privateCopy(source: string, copy: string): void {
  removeWithSideFiles(copy);
  const files: [string, string][] = [[source, copy]];
  if (existsSync(`${source}-wal`)) files.push([`${source}-wal`, `${copy}-wal`]);
  try {
    for (const [from, to] of files) copyOwnerOnly(from, to); // owner-only from its first byte, as a backup is
  } catch (err) {
    removeWithSideFiles(copy);
    throw new BackupError(`cannot copy ${source} (a database in WAL mode in a folder SQLite cannot write its -shm in, read from a copy) to ${dirname(copy)}: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * Copies the database file `source` into `dest` (which must not exist) as SQLite reads it: with
 * the committed transactions of a -wal beside it, which a plain file copy would leave behind (a
 * database copied from a server that was killed, or copied together with its -wal while it ran).
 * Reads `source` without changing it; the copy is self-contained, mode 0600 and flushed to disk.
 */
export async function copyDatabaseFile(source: string, dest: string, opts: Pick<BackupOptions, 'interrupted'> = {}): Promise<BackupResult> {
  let raw: Database.Database;
  try {
    raw = new Database(source, { readonly: true, fileMustExist: true });
  } catch (err) {
    throw new BackupError(`cannot read ${source}: ${(err as Error).message}`);
  }
  try {
    return await backupTo(raw, dest, { oneStep: true, ...opts });
  } finally {
    raw.close();
  }
}

const damagedFile = (file: string, why: string) => `${file} is a damaged database file (${why}): likely a truncated or corrupted copy; use another backup`;

/** The 16 bytes every SQLite database file begins with. */
const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1');

/**
 * Whether SQLite's `err` reading `path` says the file is an SQLite database that is damaged — a
 * truncated or corrupted copy, to be told apart from a file that never was one (a tester's half
 * backup was called "not a contact-ledger database (database disk image is malformed)"):
 * SQLITE_CORRUPT, or "file is not a database" (SQLITE_NOTADB) for a file that begins with SQLite's
 * header, whose first page is cut short or overwritten.
 */
function isDamagedSqliteFile(path: string, err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  if (typeof code !== 'string') return false;
  if (code.startsWith('SQLITE_CORRUPT')) return true;
  if (!code.startsWith('SQLITE_NOTADB')) return false;
  return readHead(path, SQLITE_HEADER.length)?.equals(SQLITE_HEADER) ?? false;
}

/** The tables every contact-ledger database has, whatever its schema version. */
const REQUIRED_TABLES = ['schema_migrations', 'users', 'orgs'];

/**
 * Checks that `path` is a complete contact-ledger database this program can use: SQLite, passes
 * integrity_check, has our tables, and a schema version from 1 to `latest`. Opens it read-only
 * and changes nothing. Throws BackupError saying what is wrong (naming the file `opts.name`, for a
 * private copy its source's name); returns the schema version.
 */
export function checkDatabaseFile(path: string, latest: number, opts: { name?: string } = {}): number {
  const file = opts.name ?? path; // what messages call it: a private copy is named as its source
  let raw: Database.Database;
  try {
    if (!statSync(path).isFile()) throw new Error('not a file');
    raw = new Database(path, { readonly: true, fileMustExist: true });
  } catch (err) {
    throw new BackupError(`cannot read ${file}: ${(err as Error).message}`);
  }
  try {
    let version: number;
    try {
      const found = checkProblems(raw, 'integrity_check');
      if (found) throw new BackupError(damagedFile(file, `integrity_check: ${found}`));
      const tables = new Set(raw.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").pluck().all() as string[]);
      const missing = REQUIRED_TABLES.filter((t) => !tables.has(t));
      if (missing.length) throw new BackupError(`${file} is an SQLite database but not a contact-ledger one (no ${missing.join(', ')} table)`);
      version = Number(raw.pragma('user_version', { simple: true }));
    } catch (err) {
      if (err instanceof BackupError) throw err;
      if (isDamagedSqliteFile(path, err)) throw new BackupError(damagedFile(file, (err as Error).message));
      throw new BackupError(`${file} is not a contact-ledger database (${(err as Error).message})`);
    }
    if (version < 1) throw new BackupError(`${file} has no schema version; it is not a contact-ledger database`);
    if (version > latest) throw new BackupError(`${file} has schema version ${version}, written by a newer contact-ledger (this one knows up to ${latest})`);
    return version;
  } finally {
    raw.close();
  }
}

/** Deletes the oldest files of `dir` whose names match `pattern` until `keep` remain; `written` is the newest, just written. Returns what it deleted. */
export function pruneBackups(dir: string, pattern: RegExp, keep: number, written: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => pattern.test(n));
  } catch {
    return [];
  }
  // The names carry a sortable UTC time stamp: newest last. A name after the one just written was
  // written while the clock was ahead, so it is older than that one: it goes first. Sorted by name
  // alone, a backup named a year ahead stayed the newest, and with BACKUP_KEEP=1 each new backup
  // was deleted as soon as it was written (an operator tester's case).
  const ahead = names.filter((n) => n > written).sort();
  const inOrder = [...ahead, ...names.filter((n) => n <= written).sort()];
  const doomed = inOrder.slice(0, Math.max(0, inOrder.length - keep));
  for (const n of doomed) rmSync(join(dir, n), { force: true });
  return doomed;
}

/** Writes a database file's -wal into it and empties the -wal (the file must not be in use). */
export function checkpointDatabaseFile(file: string): void {
  const db = new Database(file);
  try {
    db.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
}

/** Leftovers of backups interrupted by a crash: `.<name>.partial` and its side files (withSideFiles). */
export function removePartialBackups(dir: string): void {
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const n of names) if (/^\..*\.partial(-journal|-wal|-shm)?$/.test(n)) rmSync(join(dir, n), { force: true });
}
