import { closeSync, existsSync, openSync, readSync, rmSync, statSync } from 'node:fs';
import Database from 'better-sqlite3';
import { AppError, StartupError } from '../errors.ts';
import { WriteLock, type LockSide } from './write-lock.ts';

/** The oldest SQLite we accept: 3.51.3 fixes the WAL-reset corruption bug (RELIABILITY.md D1). */
const MIN_SQLITE = [3, 51, 3] as const;
/** How long a write waits for the lock (SQLite's, and the process's own: storage/write-lock.ts) before SQLITE_BUSY. */
export const BUSY_TIMEOUT_MS = 5000;
/** The -wal is cut back to this size when SQLite starts it over (bigger ones: storage/checkpointer.ts). */
export const JOURNAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;

/** The size of a database file's -wal in bytes (0 when there is none). */
export function walSize(dbFile: string): number {
  try {
    return statSync(`${dbFile}-wal`).size;
  } catch {
    return 0;
  }
}

/**
 * SQLITE_FULL or an I/O error, or a file write that found the disk full (ENOSPC, EDQUOT: a feed's
 * body stored to a file): the disk is full (or failing); reads keep working (RELIABILITY.md D3).
 */
export const isStorageFullError = (err: unknown): boolean => {
  const code = (err as { code?: unknown })?.code;
  return code === 'SQLITE_FULL' || code === 'ENOSPC' || code === 'EDQUOT' || (typeof code === 'string' && code.startsWith('SQLITE_IOERR'));
};

/** True for an error SQLite raised because a statement broke a constraint (UNIQUE, CHECK, NOT NULL…): only that statement failed. */
export const isConstraintError = (err: unknown): boolean => {
  const code = (err as { code?: unknown })?.code;
  return err instanceof Database.SqliteError && typeof code === 'string' && code.startsWith('SQLITE_CONSTRAINT');
};

export { StartupError };

/**
 * A database connection: the process's writer on the main thread, the bulk thread's own
 * (src/bulk-thread), or a read-only one. `tx` is the only way to write more than one statement
 * atomically.
 */
export class Db {
  readonly raw: Database.Database;
  readonly file: string;
  private readonly runTx: Database.Transaction<(fn: () => unknown) => unknown>;
  private relief: (() => Promise<void>) | undefined;
  /** Transactions committed (or rolled back) so far, and when the last bulk chunk was: for the checkpointer. */
  writes = 0;
  /** The error code of the last write transaction when it failed for lack of disk space (or I/O); null once one commits. */
  writeFailure: string | null = null;
  lastBulkAt = 0;
  /**
   * Told after every transaction: `failure` is null when it committed, the code when it failed for
   * lack of disk space, undefined when it rolled back for another reason (it says nothing about the
   * disk). The bulk thread reports its transactions through it.
   */
  onWrite: ((bulk: boolean, failure: string | null | undefined) => void) | undefined;
  /** The write lock this connection shares with the process's other writers (storage/write-lock.ts), once there are any. */
  private writeLock: { lock: WriteLock; side: LockSide } | undefined;

  constructor(raw: Database.Database, file: string) {
    this.raw = raw;
    this.file = file;
    this.runTx = raw.transaction((fn: () => unknown) => {
      const out = fn();
      // A better-sqlite3 transaction cannot span an await: reject async callbacks loudly (rolls back).
      if (out && typeof (out as { then?: unknown }).then === 'function') {
        throw new Error('db.tx() callback must be synchronous');
      }
      return out;
    });
  }

  /** The lines of EXPLAIN QUERY PLAN for a statement with these parameters (the repos' plan checks, for the tests). */
  queryPlan(sql: string, ...params: unknown[]): string[] {
    return (this.raw.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map((r) => r.detail);
  }

  /**
   * Runs `fn` in a BEGIN IMMEDIATE transaction (a nested call becomes a savepoint). A throw rolls
   * back everything `fn` wrote. `fn` must be synchronous and short: the event loop waits for it.
   */
  tx<T>(fn: () => T): T {
    return this.inTx(fn, false);
  }

  /**
   * `tx` for a main-thread write that may wait its turn: the bulk thread gives way from now on and
   * the chunk it is in the middle of is awaited without blocking, so the transaction that follows
   * does not hold up the event loop for the rest of a chunk (webhook claims and outcomes during a
   * feed: each such wait kept the loop busy until load shedding refused bulk uploads — a tester's
   * case). As `tx` where no thread shares the write lock.
   */
  async txSoon<T>(fn: () => T): Promise<T> {
    if (this.writeLock?.side !== 'main') return this.tx(fn);
    const done = await this.writeLock.lock.mainComing(BUSY_TIMEOUT_MS);
    try {
      return this.tx(fn);
    } finally {
      done();
    }
  }

  /**
   * A chunk of a bulk job (import, feed): `tx`, durable like every other commit
   * (synchronous=FULL: one WAL fsync, measured at ~0.45 ms, against chunks of ~30 ms), and noted
   * so that the checkpointer knows a bulk job is writing (storage/checkpointer.ts).
   */
  bulkTx<T>(fn: () => T): T {
    return this.inTx(fn, true);
  }

  private inTx<T>(fn: () => T, bulk: boolean): T {
    if (this.raw.inTransaction) return this.runTx(fn) as T;
    this.writeLock?.lock.acquire(this.writeLock.side, BUSY_TIMEOUT_MS);
    this.noteWrite(bulk, undefined);
    let outcome: string | null | undefined;
    try {
      const out = this.runTx.immediate(fn) as T;
      outcome = null;
      return out;
    } catch (err) {
      if (isStorageFullError(err)) outcome = (err as { code: string }).code;
      throw err;
    } finally {
      this.writeLock?.lock.release(this.writeLock.side);
      if (outcome !== undefined) this.writeFailure = outcome;
      this.onWrite?.(bulk, outcome);
    }
  }

  /**
   * Resolves once a write transaction the bulk thread is in the middle of has ended (at once when
   * there is none; a chunk takes ~30 ms). Every time a write stamps (a contact's creation, a
   * change's detection) is read inside its transaction, so a read that waits for this first sees
   * every row stamped before it began: a client that polls "changed since the time of my last
   * request" then misses nothing that was in flight (docs/decisions.md, "Polling for changes").
   * After BUSY_TIMEOUT_MS it throws LockTimeoutError (503, Retry-After), as a write would: an
   * answer that might lack changes is not given.
   */
  async writesInFlightSettled(): Promise<void> {
    if (this.writeLock?.side === 'main') await this.writeLock.lock.threadLetGo(BUSY_TIMEOUT_MS);
  }

  /**
   * Makes every transaction of this connection take `lock` first: a connection of another thread
   * of this process (the bulk thread's) takes the lock the main connection shares with it.
   */
  shareWriteLock(lock: WriteLock, side: LockSide): void {
    this.writeLock = { lock, side };
  }

  /**
   * The process's write lock, for the main thread's writer connection: created at the first call
   * (when the checkpointer or the bulk thread starts, the other connections that write), and taken
   * by every transaction of this connection from then on (storage/write-lock.ts).
   */
  processWriteLock(): WriteLock {
    this.writeLock ??= { lock: new WriteLock(), side: 'main' };
    return this.writeLock.lock;
  }

  /**
   * Counts a transaction: this connection's, as it begins, or one that another connection of this
   * process ran (the bulk thread's, whose Db reports them through `onWrite`), which the
   * checkpointer and /readyz then see as if it were this connection's.
   */
  noteWrite(bulk: boolean, failure: string | null | undefined): void {
    this.writes++;
    if (bulk) this.lastBulkAt = performance.now();
    if (failure !== undefined) this.writeFailure = failure;
  }

  /**
   * Between two chunks of a bulk job: waits while the -wal is too big for another chunk (see
   * storage/checkpointer.ts); resolves at once when no checkpointer is attached.
   */
  relieve(): Promise<void> {
    return this.relief ? this.relief() : Promise.resolve();
  }

  /** SQLite's automatic checkpoint in COMMIT after this many -wal pages; 0: off (storage/checkpointer.ts does them). */
  setAutoCheckpoint(pages: number): void {
    this.raw.pragma(`wal_autocheckpoint = ${Math.floor(pages)}`);
  }

  /** Caps the file's size in pages on this connection: tests simulate a full disk with it (RELIABILITY.md D3). */
  setMaxPageCount(pages: number): void {
    this.raw.pragma(`max_page_count = ${Math.floor(pages)}`);
  }

  /** True while the checkpointer's thread does this file's checkpoints (storage/checkpointer.ts). */
  get checkpointsElsewhere(): boolean {
    return this.relief !== undefined;
  }

  /** The -wal size from which relieve() waits for a checkpoint (the checkpointer's bulk limit), while one is attached. */
  reliefAboveBytes: number | undefined;

  /** Attaches the checkpointer's relieve() and its bulk limit (storage/checkpointer.ts). */
  setRelief(relief: (() => Promise<void>) | undefined, aboveBytes?: number): void {
    this.relief = relief;
    this.reliefAboveBytes = relief ? aboveBytes : undefined;
  }

  /** True when the connection is open and answers a query (readiness). */
  ping(): boolean {
    return this.raw.open && this.raw.prepare('SELECT 1').pluck().get() === 1;
  }

  /**
   * Checkpoints the WAL into the main file and closes the connection. False when there was no room
   * to: the -wal is kept (the caller says so).
   */
  close(): boolean {
    if (!this.raw.open) return true;
    try {
      this.raw.pragma('wal_checkpoint(TRUNCATE)');
      return true;
    } catch (err) {
      // No room to copy the -wal into the database (a full disk): it stays beside it, whole, and
      // the next open reads it. A shutdown on a full disk ended with exit 1 and its lock file left
      // behind (a tester's case).
      if (!isStorageFullError(err)) throw err;
      return false;
    } finally {
      this.raw.close();
    }
  }
}

export interface OpenOptions {
  /** Run `PRAGMA quick_check` and refuse a damaged file (default true). */
  check?: boolean;
  readonly?: boolean;
  /** Page cache size in KiB (default 65536: 64 MiB). */
  cacheKiB?: number;
}

/**
 * Runs `PRAGMA integrity_check` or `quick_check` on `db`: undefined when it says ok, else what it
 * found on one line — SQLite returns its findings as rows that may each hold several lines (the
 * first starts "*** in database main ***"), and a message on stderr is one line
 * (docs/operations.md): the first `max` problems joined with "; ", and how many more there are.
 */
export function checkProblems(db: Database.Database, check: 'integrity_check' | 'quick_check', max = 3): string | undefined {
  const rows = db.prepare(`PRAGMA ${check}`).pluck().all();
  if (rows.length === 1 && rows[0] === 'ok') return undefined;
  const found = rows
    .flatMap((r) => String(r).split('\n'))
    .map((l) => l.trim())
    .filter((l) => l !== '' && !/^\*\*\* in database \S+ \*\*\*$/.test(l));
  if (found.length === 0) return 'no details';
  const more = found.length - max;
  return `${found.slice(0, max).join('; ')}${more > 0 ? `; and ${more} more` : ''}`;
}

/**
 * Why SQLite cannot read the database `file` (its header and schema, with its -wal; with
 * `quickCheck`, every page: PRAGMA quick_check), through a read-only connection that changes
 * nothing on disk; undefined when it can.
 */
export function unreadableDatabase(file: string, opts: { quickCheck?: boolean } = {}): string | undefined {
  let db: Database.Database | undefined;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
    db.prepare('SELECT count(*) FROM sqlite_master').get();
    if (opts.quickCheck) {
      // its first findings, and how many more: a line, not one per damaged page
      const found = checkProblems(db, 'quick_check', 1);
      if (found) return `database disk image is malformed (quick_check: ${found})`;
    }
    return undefined;
  } catch (err) {
    return (err as Error).message;
  } finally {
    db?.close();
  }
}

/**
 * The tables of an SQLite database that has no schema version (`user_version` 0) — one that is not
 * contact-ledger's, whose every version has one — read through a read-only connection that changes
 * nothing on disk; empty for ours, for a new file, and for a file SQLite cannot read (openDb says why).
 */
export function foreignTables(file: string): string[] {
  // the header's user_version (offset 60) first: ours is read without opening it (a read-only
  // connection may leave a -wal behind, which tells a start's backup of the files it is another state)
  if (headerUserVersion(file) !== 0) return [];
  // a database in WAL mode gets a -wal and -shm from a connection that only reads: those it made go
  // again, so that a file refused is left as it was (a reviewer's case)
  const made = [`${file}-wal`, `${file}-shm`].filter((f) => !existsSync(f));
  let db: Database.Database | undefined;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
    if (Number(db.pragma('user_version', { simple: true })) !== 0) return [];
    return db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name").pluck().all() as string[];
  } catch {
    return [];
  } finally {
    db?.close();
    for (const f of made) rmSync(f, { force: true });
  }
}

/** The first `bytes` bytes of a file; undefined when it is shorter or cannot be read. */
export function readHead(file: string, bytes: number): Buffer | undefined {
  const head = Buffer.alloc(bytes);
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    return readSync(fd, head, 0, bytes, 0) === bytes ? head : undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** The user_version in the database file's header (a -wal may hold a newer one); undefined when there is no header. */
const headerUserVersion = (file: string): number | undefined => readHead(file, 64)?.readUInt32BE(60);

/**
 * A database file of 0 bytes with no -wal to rebuild it from: cut short, or a copy that never got
 * its content. contact-ledger never leaves one (a first start renames its database in whole).
 */
export function isEmptyDatabase(file: string): boolean {
  const size = (f: string) => statSync(f, { throwIfNoEntry: false })?.size;
  return size(file) === 0 && !size(`${file}-wal`);
}
export const EMPTY_DATABASE = 'is empty (0 bytes): a database cut short, or a copy that never got its content (contact-ledger never leaves one)';

const DAMAGED = /not a database|file is encrypted|malformed/i;
const damagedMessage = (file: string, why: string) => `${file} is not a contact-ledger database or is damaged (${why}); restore a backup`;

/**
 * Opens the SQLite file with every pragma in one place (P7) and verifies the durability settings
 * actually took effect (RELIABILITY.md D1, D7); throws StartupError with a clear message otherwise.
 */
export function openDb(file: string, opts: OpenOptions = {}): Db {
  // A damaged database is refused before a connection that may write opens it, quick_check
  // included: closing such a connection writes the -wal into the damaged file and drops it, and the
  // -wal is part of what the operator may want to recover (D7).
  const probed = !opts.readonly && file !== ':memory:' && existsSync(file);
  if (probed) {
    const why = unreadableDatabase(file, { quickCheck: opts.check ?? true });
    if (why !== undefined && DAMAGED.test(why)) throw new StartupError(damagedMessage(file, why));
  }
  let raw: Database.Database;
  try {
    // Create the file readable by its owner only; SQLite gives -wal and -shm the same mode.
    if (!opts.readonly && file !== ':memory:' && !existsSync(file)) closeSync(openSync(file, 'a', 0o600));
    raw = new Database(file, { readonly: opts.readonly ?? false, fileMustExist: opts.readonly ?? false });
  } catch (err) {
    throw new StartupError(`cannot open database ${file}: ${(err as Error).message}`);
  }
  try {
    // busy_timeout first: switching to WAL may itself need to wait for a lock.
    raw.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    if (!opts.readonly) {
      const mode = raw.pragma('journal_mode = WAL', { simple: true });
      if (mode !== 'wal') throw new StartupError(`database ${file}: journal_mode is ${String(mode)}, expected wal`);
    }
    // FULL: an acknowledged write survives power loss. Set on every open because the library
    // default differs between a fresh file and a reopened WAL file (RELIABILITY.md M3).
    raw.pragma('synchronous = FULL');
    raw.pragma('foreign_keys = ON');
    // Deleted rows are overwritten with zeros, also on the pages that become free: a deleted
    // contact (an erasure request) is not left readable in the file, nor in the backups, which
    // copy every page (docs/operations.md, Erasure requests). As Android, Chromium and Firefox
    // set it; it costs writes only where pages are freed (a purge), measured in docs/benchmarks.md.
    raw.pragma('secure_delete = ON');
    raw.pragma(`cache_size = -${Math.floor(opts.cacheKiB ?? 65_536)}`); // 64 MiB page cache unless asked otherwise
    raw.pragma('temp_store = MEMORY');
    raw.pragma(`journal_size_limit = ${JOURNAL_SIZE_LIMIT_BYTES}`); // truncate the -wal back to 64 MiB after checkpoints
    verifySettings(raw, file, opts.readonly ?? false);
    if ((opts.check ?? true) && !probed) {
      const found = checkProblems(raw, 'quick_check');
      if (found) throw new StartupError(`database ${file} is damaged (quick_check: ${found}); restore a backup`);
    }
  } catch (err) {
    raw.close();
    if (err instanceof StartupError) throw err;
    const msg = (err as Error).message;
    if (DAMAGED.test(msg)) throw new StartupError(damagedMessage(file, msg));
    throw new StartupError(`cannot open database ${file}: ${msg}`);
  }
  return new Db(raw, file);
}

/** The boot self-check of D1: throws StartupError unless the connection runs what openDb asked for. */
export function verifySettings(raw: Database.Database, file: string, readonly: boolean): void {
  const version = String(raw.prepare('SELECT sqlite_version() AS v').pluck().get());
  const parts = version.split('.').map(Number);
  for (let i = 0; i < 3; i++) {
    const a = parts[i] ?? 0;
    if (a > MIN_SQLITE[i]!) break;
    if (a < MIN_SQLITE[i]!) throw new StartupError(`SQLite ${version} is too old; ${MIN_SQLITE.join('.')} or newer is required`);
  }
  const checks: [string, unknown, unknown][] = [
    ['synchronous', raw.pragma('synchronous', { simple: true }), 2],
    ['foreign_keys', raw.pragma('foreign_keys', { simple: true }), 1],
    ['secure_delete', raw.pragma('secure_delete', { simple: true }), 1],
  ];
  if (!readonly) checks.push(['journal_mode', raw.pragma('journal_mode', { simple: true }), 'wal']);
  for (const [name, got, want] of checks) {
    if (got !== want) throw new StartupError(`database ${file}: ${name} is ${String(got)}, expected ${String(want)}`);
  }
}

/** SQLITE_BUSY or SQLITE_LOCKED (with extended codes): the lock was not had in time (D2). */
export function isBusyError(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'));
}

/** Maps storage failures that are the caller's to retry (a busy database, a full disk) into HTTP-meaningful errors (D2, D3). */
export function storageError(err: unknown): AppError | undefined {
  if (isBusyError(err)) {
    return new AppError(503, 'database_busy', 'The database is busy; retry shortly.', { headers: { 'Retry-After': '1' }, cause: err });
  }
  if (isStorageFullError(err)) {
    return new AppError(507, 'insufficient_storage', 'The server could not store the data (disk full or I/O error); nothing was written.', { cause: err });
  }
  return undefined;
}
