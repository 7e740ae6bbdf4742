import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import type { Config } from '../config.ts';
import { DB_FILE } from '../storage/storage.ts';
import { BackupInterrupted, BackupRefused, backupTo, openBackupSource } from '../storage/backup.ts';
import { loadSqliteLibrary } from '../storage/sqlite-addon.ts';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE, UsageError, type Io, type ParsedArgs } from './command.ts';
import { NICE, setThreadNice } from '../thread-priority.ts';
import { interrupted } from './progress.ts';
import { firstClosedFolder, mayAccess } from './common.ts';
import { mib } from '../storage/free-space.ts';

/**
 * `contact-ledger backup <file>`: an online, consistent copy of the database, whether or not a
 * server is running (RELIABILITY.md D5; decided in docs/operations.md).
 *
 * The command never takes the data folder's lock: it opens its own connection to the database
 * and copies it with SQLite's backup API in ONE step, i.e. inside one read transaction. In WAL mode
 * that snapshot does not block the server's writes, and because nothing happens between steps the
 * server's writes cannot restart the copy. The copy is then checked (integrity_check) and gets its
 * final name only when complete. SIGINT or SIGTERM stops it when the copy or the check under way
 * ends: its partial file is removed, "interrupted" said, exit 1.
 */
/** Whether `path` is `folder` or inside it. */
const isInside = (path: string, folder: string) => !relative(resolve(folder), resolve(path)).startsWith('..');

/** Why this user may not access `path` as `mode` (its error code), or undefined when it may. */
function accessRefusal(path: string, mode: number): string | undefined {
  try {
    accessSync(path, mode);
    return undefined;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code ?? 'EACCES';
  }
}

export async function run(args: ParsedArgs, io: Io, config: Config): Promise<number> {
  if (args.positionals.length !== 1) throw new UsageError('usage: contact-ledger backup <file>');
  const dest = resolve(args.positionals[0]!);
  const file = join(config.dataDir, DB_FILE);
  // what this user may not read is said as such (a tester's user without access to the data
  // folder was told "there is no database"): a permission is a configuration error, exit 2
  const denied = (path: string) => {
    // a folder above the default ./data (a command run from /root by another user, sudo having
    // cleared CONTACT_LEDGER_DATA) is the wrong folder, not a permission to ask for (an operator tester's case)
    const defaulted = io.env.CONTACT_LEDGER_DATA === undefined && args.config.data === undefined;
    if (defaulted && !isInside(path, config.dataDir)) {
      io.err(
        `contact-ledger backup: permission denied on ${path}, above the data folder ${config.dataDir}: CONTACT_LEDGER_DATA is not set, so the data folder is ./data in the working directory; set CONTACT_LEDGER_DATA or --data to the server's data folder (sudo clears the environment)`,
      );
      return EXIT_USAGE;
    }
    io.err(`contact-ledger backup: permission denied on ${path}: run the command as the user the server runs as (e.g. sudo -u contact-ledger), or give this user read access`);
    return EXIT_USAGE;
  };
  const readOnly = () => {
    io.err(
      `contact-ledger backup: the data folder ${config.dataDir} is on a read-only file system, and SQLite cannot read ${DB_FILE} without writing ${DB_FILE}-shm beside it (a running server's folder is never read-only); \`contact-ledger restore\` reads such a copy, or copy ${DB_FILE} (and its -wal) to a writable folder and back that up`,
    );
    return EXIT_USAGE;
  };
  try {
    statSync(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EACCES' || code === 'EPERM') return denied(firstClosedFolder(file) ?? file);
    if (code === 'ENOTDIR' && existsSync(config.dataDir)) {
      // a file in the data folder's place: a configuration error (exit 2), as for serve
      io.err(`contact-ledger backup: data folder ${config.dataDir} is not usable (ENOTDIR: a file, not a folder); set CONTACT_LEDGER_DATA to the server's data folder`);
      return EXIT_USAGE;
    }
    if (code !== 'ENOENT' && code !== 'ENOTDIR') throw err;
    // the same command line fails again until the setting changes: a configuration error, as migrate, compact and feed say it
    io.err(`contact-ledger backup: there is no database in ${config.dataDir} (set CONTACT_LEDGER_DATA or --data)`);
    return EXIT_USAGE;
  }
  // SQLite reads the database with its -wal and writes its -shm (the index of the -wal)
  for (const [path, mode] of [[file, constants.R_OK], [`${file}-wal`, constants.R_OK], [`${file}-shm`, constants.R_OK | constants.W_OK]] as const) {
    if (!existsSync(path)) continue;
    const refused = accessRefusal(path, mode);
    // a -shm left in a copy on a read-only mount (a folder copied off a killed server has one) is
    // the read-only file system's doing, also for root: said as such, not as a permission
    if (refused === 'EROFS') return readOnly();
    if (refused !== undefined) return denied(path);
  }
  // The destination is the command line's: a folder that is missing (or closed), or a file already
  // there, fails the same command every time until the operator changes it, so it is a usage error
  // (2), as a folder this user may not write is — said before anything is read (a tester's missing
  // folder was exit 1). A backup never overwrites a file: it may be the only good copy.
  const destDir = dirname(dest);
  if (existsSync(dest)) {
    // a folder named for the copy: the file's name inside it is what is missing (an operator's `backup bk/`)
    const folder = statSync(dest).isDirectory();
    io.err(
      folder
        ? `contact-ledger backup: ${dest} is a folder; name the backup file in it, e.g. ${join(dest, `contact-ledger-${new Date().toISOString().slice(0, 10)}.db`)}`
        : `contact-ledger backup: ${dest} already exists; choose a new file name (a backup never overwrites a file)`,
    );
    return EXIT_USAGE;
  }
  if (!existsSync(destDir)) {
    const closed = firstClosedFolder(dest); // (a folder that is missing cannot be entered either)
    io.err(closed && existsSync(closed) ? `contact-ledger backup: permission denied on ${closed}: choose a folder this user may write, or run the command as a user who may write it` : `contact-ledger backup: the folder ${destDir} does not exist; create it or choose another`);
    return EXIT_USAGE;
  }
  if (!statSync(destDir).isDirectory()) {
    io.err(`contact-ledger backup: ${destDir} is not a folder; choose a file in a folder`);
    return EXIT_USAGE;
  }
  if (!mayAccess(destDir, constants.W_OK | constants.X_OK)) {
    io.err(`contact-ledger backup: permission denied on ${destDir}: choose a folder this user may write, or run the command as a user who may write it`);
    return EXIT_USAGE;
  }
  loadSqliteLibrary(config.dataDir); // the executable's: placed by the server already, unless it never ran this build
  let source;
  try {
    source = openBackupSource(file);
  } catch (err) {
    // SQLite creates the -shm beside a database in WAL mode to read it: where the folder cannot be
    // written it cannot open it at all, and says only "unable to open database file" (a tester's
    // read-only mount). A server's data folder is never read-only: this says what is wrong.
    if (((err as Error).cause as { code?: string } | undefined)?.code === 'SQLITE_CANTOPEN') {
      const why = writeError(config.dataDir);
      if (why === 'EROFS') return readOnly();
      if (why !== undefined) return denied(config.dataDir);
    }
    io.err(`contact-ledger backup: ${(err as Error).message}`);
    return EXIT_FAILURE;
  }
  const started = Date.now();
  // beside a running server, the copy and its check take the CPU its requests leave over
  setThreadNice(NICE.backupCommand);
  const stop = interrupted();
  try {
    const { bytes } = await backupTo(source, dest, { oneStep: true, verify: true, interrupted: () => stop.fired });
    io.out(`backed up ${file} to ${dest} (${mib(bytes)}, integrity ok) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return EXIT_OK;
  } catch (err) {
    // another backup to the same name, at the same time: the file exists now, or is being written
    // (both failed with "disk I/O error" and none was written: an operator tester's case)
    if (err instanceof BackupRefused) {
      io.err(`contact-ledger backup: ${err.message}`);
      return EXIT_USAGE;
    }
    if (!(err instanceof BackupInterrupted)) throw err;
    io.err(`contact-ledger backup: interrupted: no backup was written (its partial file ${err.partial} was removed)`);
    return EXIT_FAILURE;
  } finally {
    stop.dispose();
    source.close();
  }
}

/** Why this user may not write in `dir` (EROFS: a read-only file system, also for root; EACCES, …), or undefined when it may. */
function writeError(dir: string): string | undefined {
  try {
    accessSync(dir, constants.W_OK);
    return undefined;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code ?? 'EACCES';
  }
}

