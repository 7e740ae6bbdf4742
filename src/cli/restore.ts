import { existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Config } from '../config.ts';
import { nextTurn } from '../event-loop.ts';
import { paths } from '../paths.ts';
import { BackupError, BackupInterrupted, checkDatabaseFile, checkpointDatabaseFile, copyDatabaseFile, fileStamp, needsPrivateCopy, privateCopy } from '../storage/backup.ts';
import { unreadableDatabase } from '../storage/db.ts';
import { fsyncFile } from '../storage/durable-files.ts';
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
 * the database it replaces in `<data>/backups/pre-restore-<time>.db` (with its -wal, if any).
 * The file is copied through SQLite's backup API, so a -wal beside it (a database copied from a
 * server that was killed) comes along with the transactions the check saw in it. A database in WAL
 * mode on read-only media (a server's file copied to a DVD or a read-only mount, with or without
 * its -wal) cannot be read in place — SQLite must create its -shm beside it — and is first copied
 * as it is, with its -wal, into the data folder (restoreSourceCopy) and read from there.
 *
 * SIGINT or SIGTERM before the old database is moved aside stops it there (once the check or the
 * copy step under way ends): its partial copy is removed, the lock released, "interrupted" said,
 * exit 1, nothing changed. Once it moves the old database it finishes (a few renames).
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
    // from here on it finishes: a few renames, which a signal does not cut in two
    let kept: string | undefined;
    let unreadable: string | undefined;
    mkdirSync(backupsDir(config.dataDir), { recursive: true, mode: 0o700 });
    if (existsSync(target)) {
      kept = join(backupsDir(config.dataDir), `pre-restore-${fileStamp(Date.now())}.db`);
      // The -wal holds committed transactions of the old database: they are written into it
      // first, so the database moves whole, and a restore killed between the moves below leaves
      // no -wal beside the folder's next database (SQLite would read the old one's pages from it).
      // A damaged database — what the server sends the operator here for — is not checkpointed: a
      // connection that may write would drop a -wal it cannot read on closing. It moves as it is,
      // its -wal first, so that a restore killed between the two moves leaves the damaged database
      // in place without it, never a -wal without its database.
      unreadable = unreadableDatabase(target, { quickCheck: true });
      if (unreadable === undefined) checkpointDatabaseFile(target);
      else if (existsSync(`${target}-wal`)) renameSync(`${target}-wal`, `${kept}-wal`);
      renameSync(target, kept);
      if (existsSync(`${target}-wal`)) renameSync(`${target}-wal`, `${kept}-wal`);
      rmSync(`${target}-shm`, { force: true });
    } else if (existsSync(`${target}-wal`)) {
      // a -wal without its database (a restore killed between its moves, before this version):
      // kept aside, never beside the restored database
      renameSync(`${target}-wal`, join(backupsDir(config.dataDir), `orphan-${fileStamp(Date.now())}.db-wal`));
      rmSync(`${target}-shm`, { force: true });
    }
    renameSync(incoming, target);
    fsyncFile(config.dataDir);
    io.out(`restored ${source} (schema version ${version}) into ${config.dataDir}`);
    if (kept) io.out(`the database it replaced is kept as ${kept}${unreadable ? ` (as it was: it could not be read, ${unreadable})` : ''}`);
    if (version < latest) io.out(`its schema is older than this version's (${latest}): the next start migrates it, after a backup`);
    return EXIT_OK;
  } finally {
    removeRestoreScratch(config.dataDir); // the private copy of the source, if one was made
    lock.release();
    stop.dispose();
  }
}
