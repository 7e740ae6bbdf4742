import type { z } from 'zod';
import { accessSync, constants, existsSync, readFileSync, statSync, type Stats } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { ConfigError, type Config } from '../config.ts';
import type { Caller } from '../identity/model.ts';
import { createLogger, logDestination, type Logger } from '../log.ts';
import { openRuntime, type Runtime } from '../runtime.ts';
import { DataDirLockedError } from '../storage/lock.ts';
import { systemClock } from '../clock.ts';
import { DB_FILE, openStorage, restoringFile, secretsDir, type Migrated, type Storage } from '../storage/storage.ts';
import { UsageError, type Io } from './command.ts';
import { shellWord } from './shell-word.ts';

/**
 * Who the audit log and `createdBy` name for work done from the command line: the operator at the
 * machine, who holds the data folder and so acts with a superuser's reach.
 */
export function cliCaller(): Caller {
  return {
    actor: { type: 'user', id: 'cli', email: 'cli', name: 'command line', superuser: true, sessionId: '' },
    requestId: `cli-${process.pid}`,
    ip: 'local',
  };
}

/** A flag's value checked by the schema the API checks the same field with; a usage error (2) naming the flag. */
export function flagValue<T>(schema: z.ZodType<T>, value: string, flag: string): T {
  const r = schema.safeParse(value);
  if (!r.success) throw new UsageError(`--${flag} ${r.error.issues[0]?.message ?? 'is not valid'}`);
  return r.data;
}

/** Whether this user may access `path` as `mode` asks (constants.R_OK, W_OK, X_OK). */
export function mayAccess(path: string, mode: number): boolean {
  try {
    accessSync(path, mode);
    return true;
  } catch {
    return false;
  }
}

/** The outermost folder above `file` that this user may not enter (search permission), if any. */
export function firstClosedFolder(file: string): string | undefined {
  const folders: string[] = [];
  for (let d = dirname(resolve(file)); ; d = dirname(d)) {
    folders.unshift(d);
    if (dirname(d) === d) break;
  }
  return folders.find((d) => !mayAccess(d, constants.X_OK));
}

/**
 * A file behind a folder this user may not enter, or one it may not read: a usage error (2) naming
 * the folder that is closed (or the file), never "does not exist".
 */
export const permissionDenied = (file: string) => new UsageError(`${firstClosedFolder(file) ?? file}: permission denied: run the command as a user who may read it, or give this user access`);

/**
 * Refuses (usage error, exit 2) a path that is not a readable plain file, saying why. A name
 * that is not UTF-8 reaches the program with U+FFFD in its place (Node decodes arguments as
 * UTF-8), and no such file can be opened by that name: the message says to rename it.
 */
export function requireFile(file: string): void {
  let stat: Stats | undefined;
  try {
    stat = statSync(file);
  } catch (err) {
    // a folder on the way this user may not enter: not "does not exist" (a review's case)
    if ((err as NodeJS.ErrnoException).code === 'EACCES') throw permissionDenied(file);
  }
  // a file this user may not read (root's 0600 backup, restored as the service user): the same
  // usage error, not "unable to open database file" or a raw EACCES with exit 1 (an operator tester's case)
  if (stat?.isFile()) {
    if (!mayAccess(file, constants.R_OK)) throw permissionDenied(file);
    return;
  }
  if (file.includes('\uFFFD')) throw new UsageError(`${file}: the file name is not UTF-8, and this program can only open files by UTF-8 names; rename the file (e.g. with convmv) and try again`);
  throw new UsageError(existsSync(file) ? `${file} is not a file` : `${file} does not exist`);
}

/** Commands other than `serve` log JSON to stderr, warnings and worse unless LOG_LEVEL is set. */
export function commandLogger(io: Io, config: Readonly<Config>): Logger {
  return createLogger(io.env.LOG_LEVEL ? config.logLevel : 'warn', logDestination(2, true));
}

/**
 * Opens the data folder for a command that writes to it. While a server holds the folder the
 * command fails with a message saying what to do instead (`instead`).
 */
export async function openForCommand(io: Io, config: Readonly<Config>, instead: string, opts: { bootstrap?: boolean } = {}): Promise<Runtime> {
  if (!opts.bootstrap) requireInstallation(config);
  else refuseInsideInstallation(config);
  try {
    return await openRuntime(config, { log: commandLogger(io, config), bootstrap: opts.bootstrap ?? false, onMigrated: sayMigrated(io) });
  } catch (err) {
    if (err instanceof DataDirLockedError) {
      throw new DataDirLockedError(`a contact-ledger server or command (${err.holder}) is using the data folder ${config.dataDir}; ${instead}`, err.pid, err.holder);
    }
    throw err;
  }
}

/**
 * Any command that opens the database migrates it: said on stderr as `migrate` says it, with the
 * copy to go back to, as soon as it is done — also when the command then refuses or its start
 * fails after (an upgrade tester's database was at the new schema unsaid, and the old executable
 * refused it). The `onMigrated` of openRuntime / openStorage.
 */
export const sayMigrated =
  (io: Io) =>
  (m: Migrated): void => {
    for (const line of migrationLines(m.applied, m.version, m.backup)) io.err(`contact-ledger: ${line}`);
  };

/** What a command says of the migrations its open applied (`migrate` and every other command). */
export function migrationLines(applied: string[], version: number, backup: string | undefined): string[] {
  return [
    `applied ${applied.length} migration${applied.length === 1 ? '' : 's'} (${applied.join(', ')}); schema version ${version}`,
    ...(backup ? [`the database as it was is in ${backup}`] : []),
  ];
}

/** A password from a flag, or from standard input when the flag is "-" (keeps it out of `ps`). */
export function passwordArg(value: string | boolean | undefined, flag = '--password'): string | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) throw new UsageError(`${flag} needs a value`);
  if (value !== '-') return value;
  const text = readFileSync(0, 'utf8').replace(/\r?\n$/, '');
  if (!text) throw new UsageError(`${flag} -: standard input was empty`);
  return text;
}

/** A required string flag. */
export function requireFlag(flags: Record<string, string | boolean | undefined>, name: string, usage: string): string {
  const v = flags[name];
  if (typeof v !== 'string' || v.trim() === '') throw new UsageError(`--${name} is required (${usage})`);
  return v;
}

/**
 * Whether the data folder holds a database (or a -wal alone, or an interrupted restore's copy: the
 * start's own check says what to do with those). A folder this user may not look into counts as
 * holding one: opening it then says "permission denied", not "no database" (a reviewer's case).
 */
export function hasInstallation(dataDir: string): boolean {
  const file = join(dataDir, DB_FILE);
  const present = (path: string) => {
    try {
      statSync(path);
      return true;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      return code !== 'ENOENT' && code !== 'ENOTDIR';
    }
  };
  return present(file) || present(`${file}-wal`) || present(restoringFile(dataDir));
}

/**
 * The installation whose folder `dataDir` is inside, if any: the nearest folder above it holding a
 * database and the installation's `secrets/` beside it — a file of that name alone may be a backup
 * (a reviewer's `backup fp/contact-ledger.db`); one that cannot be seen (a folder this user may not
 * look into) is passed over.
 */
function enclosingInstallation(dataDir: string): string | undefined {
  for (let dir = dirname(resolve(dataDir)); ; dir = dirname(dir)) {
    if (existsSync(join(dir, DB_FILE)) && existsSync(secretsDir(dir))) return dir;
    if (dirname(dir) === dir) return undefined;
  }
}

/**
 * Refuses (exit 2) to make a new installation inside another installation's folder — never meant:
 * a command run from inside a data folder without CONTACT_LEDGER_DATA or --data (sudo clears the
 * environment) works on `./data` there. An executable tester's rollback, run from the data folder
 * as docs/operations.md then wrote it, restored into a new `data/data` and said it had.
 * For the commands that make one (serve, init, restore); a folder with an installation passes.
 */
export function refuseInsideInstallation(config: Readonly<Config>): void {
  if (hasInstallation(config.dataDir)) return;
  const outer = enclosingInstallation(config.dataDir);
  if (outer === undefined) return;
  throw new ConfigError(
    `the data folder ${config.dataDir} has no installation and is inside the installation in ${outer}; name the folder meant (CONTACT_LEDGER_DATA=${shellWord(outer)} or --data ${shellWord(outer)}: ` +
      'sudo clears the environment), or use a folder outside it for a new installation',
  );
}

const noInstallation = (dataDir: string) => `there is no database in ${dataDir} (set CONTACT_LEDGER_DATA or --data); a new installation is made by serve or init`;

/**
 * Refuses (exit 2) a command that works on an installation — adds a user, imports, ingests a feed,
 * rotates keys — where there is none: a wrong path, not a new installation (an operator's `feed`,
 * `user add` and `keys rotate` run from another folder made a new installation there, printed its
 * new superuser's password and reported success; forty-third session).
 */
export function requireInstallation(config: Readonly<Config>): void {
  if (!hasInstallation(config.dataDir)) throw new ConfigError(noInstallation(config.dataDir));
}

/**
 * The data folder's database for a command that works on an existing one with the server stopped
 * (migrate, compact): refused (exit 2) when there is none — a wrong path, not a new
 * installation (a tester's mistyped folder got an empty database, and the next start a new
 * superuser): `serve` or `init` make one. `whileLocked` ends the message when a server or another
 * command holds the folder.
 */
export async function openExistingStorage(io: Io, config: Readonly<Config>, command: string, whileLocked: string): Promise<Storage> {
  // exit 2 like the other commands given a folder without an installation (it was 1, which a unit
  // with Restart=on-failure retries)
  requireInstallation(config);
  try {
    // `migrate` says it on stdout, as its result; another command (compact) beside its own
    return await openStorage(config, commandLogger(io, config), systemClock, command === 'migrate' ? undefined : sayMigrated(io));
  } catch (err) {
    if (err instanceof DataDirLockedError) throw new DataDirLockedError(`a contact-ledger server or command (${err.holder}) is using the data folder ${config.dataDir}; ${whileLocked}`, err.pid, err.holder);
    throw err;
  }
}
