import { randomBytes } from 'node:crypto';
import { accessSync, chmodSync, closeSync, constants, existsSync, linkSync, openSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { nextTurn } from '../event-loop.ts';
import { checkProblems, EMPTY_DATABASE, isEmptyDatabase, readHead } from './db.ts';
import { freeBytes, mib } from './free-space.ts';
import { copyOwnerOnly, fsyncFile } from './durable-files.ts';
import { processAlive } from './lock.ts';

/**
 * Online backups through SQLite's backup API (RELIABILITY.md D5). A backup is written beside its
 * destination as a partial file of its own (partialOf), turned into a self-contained
 * rollback-journal database (no -wal needed beside it), flushed to disk and then linked to its name
 * (never replacing a file there), so a file with the final name is always a complete backup.
 */

/** A UTC time stamp for file names that sorts by time: 20261122T103200123Z. */
export const fileStamp = (ms: number) => new Date(ms).toISOString().replace(/[-:.]/g, '');

export class BackupError extends Error {
  override name = 'BackupError';
}

/**
 * A backup refused because its destination is taken: the file exists (before the copy began, or
 * written meanwhile by another backup to the same name), or another live process is writing a
 * backup to that name. The same command line fails again: the caller says so as a usage error.
 */
export class BackupRefused extends BackupError {
  override name = 'BackupRefused';
}

/** A backup stopped by its `interrupted` option (SIGINT, SIGTERM): its partial files are removed, nothing got the final name. */
export class BackupInterrupted extends BackupError {
  override name = 'BackupInterrupted';
  /** The partial file it was writing (removed). */
  readonly partial: string;
  constructor(partial: string) {
    super('interrupted');
    this.partial = partial;
  }
}

/**
 * Where a backup to `dest` is written until it is complete (linked into place then):
 * `.<name>.<pid>-<8 hex>.partial` beside it, a name of this process's and this backup's own. With one
 * fixed name (`.<name>.partial`, until the forty-ninth session), two backups to one file at once each
 * removed or wrote into the other's file, and both failed with "disk I/O error" (an operator
 * tester's case). The pid tells the partial file of a live process from one a killed backup left
 * (removeStalePartials).
 */
export const partialOf = (dest: string) => join(dirname(dest), `.${basename(dest)}.${process.pid}-${randomBytes(4).toString('hex')}.partial`);

/** A partial file's name (or its side files'): the destination's name and the writer's pid (none in the names before pids). */
const PARTIAL_NAME = /^\.(.+?)(?:\.(\d+)-[0-9a-f]{8})?\.partial(?:-journal|-wal|-shm)?$/;

/** The partial files this process is writing (backupTo), which are never stale whatever their pid. */
const writing = new Set<string>();

/**
 * Removes the partial files (with their side files) in `dir` that no live process writes: those of
 * a pid that no longer runs, of this process but no backup under way in it (a killed server's,
 * whose pid the restarted one got again, as pid 1 in a container), and those of the names before
 * pids; only those of the destination name `dest` when given, and, with `all`, also those of live
 * processes (for a caller that holds the data folder, inside which nobody else writes one).
 * Returns the pids of the other live processes writing one (to `dest`, when given) that it kept.
 */
export function removeStalePartials(dir: string, opts: { dest?: string; all?: boolean } = {}): number[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const live = new Set<number>();
  for (const n of names) {
    const m = PARTIAL_NAME.exec(n);
    if (!m || (opts.dest !== undefined && m[1] !== opts.dest)) continue;
    const pid = m[2] === undefined ? undefined : Number(m[2]);
    const file = join(dir, n);
    if (writing.has(resolve(file.replace(/-(journal|wal|shm)$/, '')))) continue;
    if (!opts.all && pid !== undefined && pid !== process.pid && processAlive(pid)) {
      live.add(pid);
      continue;
    }
    rmSync(file, { force: true });
  }
  return [...live];
}

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
   * Asked after each step of the copy and before the check and the link into place: true stops the backup
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

/** Why a backup to `dest` may not be written: the file is there. */
const destinationExists = (dest: string, meanwhile = false) =>
  new BackupRefused(`${dest} already exists${meanwhile ? ' (written by another backup meanwhile)' : ''}; choose a new file name (a backup never overwrites a file)`);

/** Errors of link(2) on a file system without hard links (vfat, exFAT, some network ones). */
const NO_HARD_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EMLINK']);

/**
 * Gives the complete `partial` the name `dest`, never replacing a file there: link(2) fails with
 * EEXIST where `dest` appeared meanwhile (another backup to the same name finished first), where a
 * rename would have replaced it. Where the file system has no hard links, a rename after a last
 * look (another backup finishing between the two would be replaced by this one, as complete).
 */
function linkIntoPlace(partial: string, dest: string): void {
  try {
    linkSync(partial, dest);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? '';
    if (code === 'EEXIST') throw destinationExists(dest, true);
    if (!NO_HARD_LINKS.has(code)) throw err;
    if (existsSync(dest)) throw destinationExists(dest, true);
    renameSync(partial, dest);
    return;
  }
  rmSync(partial, { force: true });
}

/**
 * Copies the database `source` into `dest` (which must not exist yet). Refuses (BackupRefused) when
 * it exists, or when another live process is writing a backup to that name — or wrote it
 * meanwhile: of backups to one name at once, one is written and the others are refused.
 */
export async function backupTo(source: Database.Database, dest: string, opts: BackupOptions = {}): Promise<BackupResult> {
  if (existsSync(dest)) throw destinationExists(dest);
  if (!existsSync(dirname(dest))) throw new BackupError(`the folder ${dirname(dest)} does not exist`);
  // what killed backups to this name left goes; one another process is writing stays, and refuses this one
  const others = removeStalePartials(dirname(dest), { dest: basename(dest) });
  if (others.length)
    throw new BackupRefused(`${dest} is being written by another backup (pid ${others.join(', pid ')}); choose a new file name, or wait for it to end (it then exists)`);
  const partial = partialOf(dest);
  // for a copy the disk has no room for: what it needed, and had
  const size = Number(source.pragma('page_count', { simple: true })) * Number(source.pragma('page_size', { simple: true }));
  const room = freeBytes(dirname(dest));
  writing.add(resolve(partial));
  // A signal's listener runs only when the event loop turns, never between the synchronous calls
  // that follow a step (the check, the link into place): the loop is let turn once before each look.
  const stopHere = async () => {
    if (!opts.interrupted) return;
    await nextTurn();
    if (opts.interrupted()) throw new BackupInterrupted(partial);
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
        if (opts.interrupted?.()) throw new BackupInterrupted(partial); // the loop turned since the last step
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
    linkIntoPlace(partial, dest);
    fsyncFile(dirname(dest));
    return { bytes: statSync(dest).size, restarts };
  } catch (err) {
    removeWithSideFiles(partial);
    if (err instanceof BackupError) throw err;
    // the room it needed and had, not SQLite's "database or disk is full" alone (an operator tester's
    // restore on a full disk); an I/O error stays SQLite's words (isStorageFullError counts it too)
    const code = (err as { code?: unknown }).code;
    if (code === 'SQLITE_FULL' || code === 'ENOSPC' || code === 'EDQUOT') {
      throw new BackupError(
        `not enough disk space in ${dirname(dest)}: the copy needs about ${mib(size)} there, and ${mib(room)} were free when it began`,
        { cause: err },
      );
    }
    throw new BackupError(`backup to ${dest} failed: ${(err as Error).message}`);
  } finally {
    writing.delete(resolve(partial));
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
