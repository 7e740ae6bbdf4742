import { existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Config } from '../config.ts';
import { nextTurn } from '../event-loop.ts';
import { paths } from '../paths.ts';
import { BackupError, BackupInterrupted, checkDatabaseFile, checkpointDatabaseFile, copyDatabaseFile, fileStamp, needsPrivateCopy, partialOf, privateCopy } from '../storage/backup.ts';
import { unreadableDatabase } from '../storage/db.ts';
import { copyOwnerOnly, fsyncFile } from '../storage/durable-files.ts';
import { backupsDir, DB_FILE, prepareDataDir, removeRestoreScratch, restoreSourceCopy, restoringFile } from '../storage/storage.ts';
import { DataDirLockedError, lockDataDir } from '../storage/lock.ts';
import { loadMigrations } from '../storage/migrate.ts';
import { EXIT_FAILURE, EXIT_OK, UsageError, type Io, type ParsedArgs } from './command.ts';
import { refuseInsideInstallation, requireFile } from './common.ts';
import { interrupted } from './progress.ts';

/**
 * `contact-ledger restore <file>`: replaces the database of the data folder with a backup. It
 * refuses while a server uses the folder, checks the file completely before touching anything
 * (SQLite, integrity_check, contact-ledger tables, a schema version this program knows), and keeps
 * the database it replaces in `<data>/backups/pre-restore-<time>.db` (with its -wal, if any): moved,
 * or copied where backups/ is another file system (moveAside, copyAcross).
 * The file is copied through SQLite's backup API, so a -wal beside it (a database copied from a
 * server that was killed) comes along with the transactions the check saw in it. A database in WAL
 * mode on read-only media (a server's file copied to a DVD or a read-only mount, with or without
 * its -wal) cannot be read in place — SQLite must create its -shm beside it — and is first copied
 * as it is, with its -wal, into the data folder (restoreSourceCopy) and read from there.
 *
 * SIGINT or SIGTERM before the old database is moved aside stops it there (once the check or the
 * copy step under way ends): its partial copy is removed, the lock released, "interrupted" said,
 * exit 1, nothing changed. Once it moves the old database it finishes (a few renames, or copies).
 */
export async function run(args: ParsedArgs, io: Io, config: Config): Promise<number> {
  if (args.positionals.length !== 1) throw new UsageError('usage: contact-ledger restore <file>');
  const source = resolve(args.positionals[0]!);
  // missing, closed to this user, or a folder: exit 2, as for backup, import and feed (a folder was
  // "refused: cannot read …: not a file", exit 1: an operator tester's case)
  requireFile(source);
  refuseInsideInstallation(config);
  prepareDataDir(config.dataDir);
  const stop = interrupted();
  // a signal's listener runs only when the event loop turns: it is let turn before each look
  const signalled = async () => {
    await nextTurn();
    return stop.fired;
  };
  const stopped = () => {
    io.err('contact-ledger restore: interrupted before the database was replaced; its partial copy was removed. Nothing was changed.');
    return EXIT_FAILURE;
  };
  let lock;
  try {
    lock = lockDataDir(config.dataDir);
  } catch (err) {
    stop.dispose();
    if (err instanceof DataDirLockedError) throw new DataDirLockedError(`a contact-ledger server or command (${err.holder}) is using the data folder ${config.dataDir}; stop it before restoring`, err.pid, err.holder);
    throw err;
  }
  try {
    removeRestoreScratch(config.dataDir); // what a killed restore left
    const latest = loadMigrations(paths.migrations).at(-1)!.version;
    let readFrom = source;
    let version: number;
    try {
      if (statSync(source).isFile() && needsPrivateCopy(source)) {
        readFrom = restoreSourceCopy(config.dataDir);
        privateCopy(source, readFrom);
        if (await signalled()) return stopped();
      }
      version = checkDatabaseFile(readFrom, latest, { name: source });
    } catch (err) {
      if (!(err instanceof BackupError)) throw err;
      io.err(`contact-ledger restore: refused: ${err.message}. Nothing was changed.`);
      return EXIT_FAILURE;
    }
    if (await signalled()) return stopped();
    const target = join(config.dataDir, DB_FILE);
    const incoming = restoringFile(config.dataDir);
    rmSync(incoming, { force: true });
    try {
      await copyDatabaseFile(readFrom, incoming, { interrupted: () => stop.fired });
    } catch (err) {
      if (err instanceof BackupInterrupted) return stopped();
      if (!(err instanceof BackupError)) throw err;
      io.err(`contact-ledger restore: ${err.message}. Nothing was changed.`);
      return EXIT_FAILURE;
    }
    if (await signalled()) {
      rmSync(incoming, { force: true });
      return stopped();
    }
    // from here on it finishes: a few renames (or copies), which a signal does not cut in two
    let kept: string | undefined;
    let unreadable: string | undefined;
    let copied = false;
    const copies: string[] = []; // the copies made in backups/, removed if one fails
    const backups = backupsDir(config.dataDir);
    mkdirSync(backups, { recursive: true, mode: 0o700 });
    try {
      if (existsSync(target)) {
        kept = join(backups, `pre-restore-${fileStamp(Date.now())}.db`);
        // The -wal holds committed transactions of the old database: they are written into it
        // first, so the database moves whole, and a restore killed between the moves below leaves
        // no -wal beside the folder's next database (SQLite would read the old one's pages from it).
        // A damaged database — what the server sends the operator here for — is not checkpointed: a
        // connection that may write would drop a -wal it cannot read on closing. It moves as it is,
        // its -wal first, so that a restore killed between the two moves leaves the damaged database
        // in place without it, never a -wal without its database.
        unreadable = unreadableDatabase(target, { quickCheck: true });
        if (unreadable === undefined) checkpointDatabaseFile(target);
        const walFirst = unreadable !== undefined && existsSync(`${target}-wal`);
        if (!moveAside(walFirst ? `${target}-wal` : target, walFirst ? `${kept}-wal` : kept)) {
          // backups/ is another file system (a mount, or a link to one: an operator tester's raw
          // EXDEV): nothing was moved. The database and its -wal are copied there, durably, while
          // they stay in place; then the -wal goes (the damaged database without it, as above) and
          // the restored copy replaces the database in one rename. A restore killed on the way
          // leaves the old database in place — never a folder without one — and at most a copy of
          // it in backups/.
          copied = true;
          if (existsSync(`${target}-wal`)) copyAcross(`${target}-wal`, `${kept}-wal`, copies);
          copyAcross(target, kept, copies);
          // gone for good before the next database takes the name, never after
          if (existsSync(`${target}-wal`)) removeDurably(`${target}-wal`);
        } else {
          if (walFirst) moveAside(target, kept);
          if (existsSync(`${target}-wal`)) moveAside(`${target}-wal`, `${kept}-wal`);
        }
        rmSync(`${target}-shm`, { force: true });
      } else if (existsSync(`${target}-wal`)) {
        // a -wal without its database (a restore killed between its moves, before this version):
        // kept aside, never beside the restored database
        const orphan = join(backups, `orphan-${fileStamp(Date.now())}.db-wal`);
        if (!moveAside(`${target}-wal`, orphan)) {
          copyAcross(`${target}-wal`, orphan, copies);
          removeDurably(`${target}-wal`);
        }
        rmSync(`${target}-shm`, { force: true });
      }
    } catch (err) {
      // a copy that failed (no room in backups/ on its own file system): nothing was removed yet
      if (!(err instanceof CopyError)) throw err;
      rmSync(incoming, { force: true });
      for (const f of copies) rmSync(f, { force: true });
      io.err(`contact-ledger restore: the database it would replace cannot be kept in ${backups} (another file system): ${err.cause instanceof Error ? err.cause.message : String(err.cause)}. Nothing was changed.`);
      return EXIT_FAILURE;
    }
    renameSync(incoming, target);
    fsyncFile(config.dataDir);
    io.out(`restored ${source} (schema version ${version}) into ${config.dataDir}`);
    if (kept) io.out(`the database it replaced is kept as ${kept}${unreadable ? ` (as it was: it could not be read, ${unreadable})` : ''}${copied ? ' (copied: backups/ is on another file system)' : ''}`);
    if (version < latest) io.out(`its schema is older than this version's (${latest}): the next start migrates it, after a backup`);
    return EXIT_OK;
  } finally {
    removeRestoreScratch(config.dataDir); // the private copy of the source, if one was made
    lock.release();
    stop.dispose();
  }
}

/**
 * Renames `from` to `to` (in backups/), the move of a file the restore keeps: true when done;
 * false when `to` is on another file system (EXDEV: backups/ a mount, or a link to one), where
 * nothing was moved and the caller copies instead (copyAcross).
 */
function moveAside(from: string, to: string): boolean {
  try {
    renameSync(from, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EXDEV') return false;
    throw err;
  }
  fsyncFile(dirname(to));
  return true;
}

/** Removes a file, and flushes its folder so that it stays removed after a power loss. */
function removeDurably(file: string): void {
  rmSync(file, { force: true });
  fsyncFile(dirname(file));
}

/** A failed copyAcross: its cause is the file system's error. */
class CopyError extends Error {
  override name = 'CopyError';
}

/**
 * Copies `from` to the new file `to` on another file system so that `to` is whole on disk, also
 * after a power loss, once this returns: written as a partial file beside it (partialOf, owner
 * only; what a killed restore leaves there is removed by the next start, as a killed backup's),
 * flushed, renamed to its name and the folder flushed. `from` is left as it is: the caller removes
 * it when its order allows; `to` is added to `made`. A failed copy leaves nothing and throws CopyError.
 */
function copyAcross(from: string, to: string, made: string[]): void {
  const partial = partialOf(to);
  try {
    copyOwnerOnly(from, partial);
    fsyncFile(partial);
    renameSync(partial, to);
    made.push(to);
    fsyncFile(dirname(to));
  } catch (err) {
    rmSync(partial, { force: true });
    throw new CopyError(`cannot copy ${from} to ${to}`, { cause: err });
  }
}
