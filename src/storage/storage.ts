import { accessSync, chmodSync, constants, existsSync, renameSync, type Stats, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type { Clock } from '../clock.ts';
import { ConfigError, type Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { paths } from '../paths.ts';
import { backupTo, fileStamp, removeStalePartials, removeWithSideFiles } from './backup.ts';
import { EMPTY_DATABASE, foreignTables, isEmptyDatabase, openDb, StartupError, type Db } from './db.ts';
import { loadSqliteLibrary } from './sqlite-addon.ts';
import { lockDataDir } from './lock.ts';
import { loadMigrations, migrate, pendingMigrations, schemaVersion, type Migration } from './migrate.ts';
import { notPermitted, notPermittedCode } from './access-errors.ts';
import { fsyncFile } from './durable-files.ts';
import { planSchemaRepair } from './schema-reconcile.ts';

/**
 * The data folder's database as a process opens it to write: the folder's lock, the checked
 * connection, the migrations. Kept apart from runtime.ts (which wires every service) so that
 * commands and tests that need only the database load only the storage layer.
 */

export const DB_FILE = 'contact-ledger.db';

const NOT_USABLE_FOLDER = new Set(['EACCES', 'EPERM', 'ENOTDIR', 'EEXIST', 'EROFS']);

/** Creates the data folder (0700) and proves it is writable, with a clear message otherwise. */
export function prepareDataDir(dataDir: string): void {
  try {
    makeFolders(dataDir);
    // a file in the way is a folder the program may not use (exit 2), however writable the file
    if (!statSync(dataDir).isDirectory()) throw Object.assign(new Error(`${dataDir} is a file, not a folder`), { code: 'ENOTDIR' });
    accessSync(dataDir, constants.W_OK | constants.R_OK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const message = `data folder ${dataDir} is not usable (${code ?? (err as Error).message}); set CONTACT_LEDGER_DATA to a writable folder`;
    // permissions, a file in the way, a read-only file system: a configuration error (exit 2) that
    // a restart cannot fix; anything else (a disk error, a mount not there yet) may pass
    throw NOT_USABLE_FOLDER.has(code ?? '') ? new ConfigError(message) : new StartupError(message);
  }
  loadSqliteLibrary(dataDir);
}

/**
 * `mkdir -p`, a level at a time from the nearest folder that exists: Node's recursive mkdir spins
 * for ever where a parent exists but a child cannot be made in it (`/proc/x`: EEXIST for /proc,
 * ENOENT for /proc/x, again and again — a tester's server ran at 100 % CPU, deaf to SIGTERM).
 */
function makeFolders(dir: string): void {
  const missing: string[] = [];
  for (let d = resolve(dir); !existsSync(d); d = dirname(d)) {
    missing.push(d);
    if (dirname(d) === d) break;
  }
  for (const d of missing.reverse()) {
    try {
      mkdirSync(d, { mode: 0o700 });
    } catch (err) {
      // made by another process starting at the same moment: as good as made here
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || !statSync(d).isDirectory()) throw err;
    }
  }
}

export const backupsDir = (dataDir: string) => join(dataDir, 'backups');

/** Where the access-token signing keys are kept (identity/signing-keys.ts). */
export const secretsDir = (dataDir: string) => join(dataDir, 'secrets');

/** Where `restore` copies a backup before renaming it into place (src/cli/restore.ts). */
export const restoringFile = (dataDir: string) => join(dataDir, `.${DB_FILE}.restoring`);

/**
 * Where `restore` puts a private copy of a file SQLite cannot read in place (a database in WAL mode
 * on read-only media: storage/backup.ts needsPrivateCopy), with its -wal, to read it from.
 */
export const restoreSourceCopy = (dataDir: string) => `${restoringFile(dataDir)}.source`;

/**
 * Removes every file a restore writes in the data folder before its copy is complete: the copy being
 * written (`..contact-ledger.db.restoring.<pid>-<hex>.partial`, backupTo's name for a copy to the
 * restoring file: any such file, as no other process writes one in a folder this one holds), the private copy of its source (restoreSourceCopy), and their side files. None is ever a
 * whole database of the folder: a restore removes them when it ends or is stopped by a signal, and
 * the next start, or restore, removes what a killed one left. The caller holds the data folder's lock.
 */
export function removeRestoreScratch(dataDir: string): void {
  removeStalePartials(dataDir, { dest: basename(restoringFile(dataDir)), all: true });
  removeWithSideFiles(restoreSourceCopy(dataDir));
}

/**
 * Before the database is opened — which makes an empty one where there is none — what an
 * interrupted restore left: a copy it was still writing is removed (restoreScratchFiles); a
 * complete copy without a database beside it may be the only one (refused, kept), one beside the
 * database is a restore that never replaced it (removed); a -wal without its database is another
 * database's, whose pages SQLite would read into a new one (refused).
 */
function checkLeftovers(dataDir: string, file: string): void {
  removeRestoreScratch(dataDir);
  const restoring = restoringFile(dataDir);
  const hasDb = existsSync(file);
  if (existsSync(restoring)) {
    if (!hasDb)
      throw new StartupError(
        `a restore was interrupted: the data folder ${dataDir} has no database, and ${restoring} is the restore's copy or part of it. Run \`contact-ledger restore <backup file>\` again (a database it replaced is kept as ${backupsDir(dataDir)}/pre-restore-<time>.db)`,
      );
    rmSync(restoring, { force: true });
  }
  if (!hasDb && existsSync(`${file}-wal`))
    throw new StartupError(
      `the data folder ${dataDir} has ${DB_FILE}-wal but no ${DB_FILE}: put the database back beside it, or restore a backup (\`contact-ledger restore <backup file>\` keeps the -wal aside)`,
    );
}

/**
 * Before the database is opened, what SQLite would take in silence or answer with its own words
 * (forty-first session, an operator tester's cases), refused before anything is changed:
 * - a database, -wal or -shm this user may not read and write (put there by root, a read-only
 *   mount): a configuration error (exit 2), naming the file, where SQLite said "attempt to write a
 *   readonly database" and the start exited 1, which the systemd unit restarted for ever;
 * - a database file of 0 bytes with no -wal to recover it from: cut short, or a copy that never
 *   got its content. A start never leaves one (a new database appears under its name complete:
 *   createDatabase), and SQLite would have made it a new, empty installation with a new superuser;
 * - an SQLite database that is not contact-ledger's (tables and no schema version): it was
 *   migrated in place, our tables beside its own, with no backup taken.
 * Then, since the files are the users' data and their owner's alone (docs/operations.md, "The data
 * folder"): a database file open to others (copied in by hand, 0644) is made 0600 with its
 * -wal/-shm, which SQLite creates in the database's mode. Returns the files whose mode it narrowed.
 */
function checkDatabaseFiles(file: string): string[] {
  const present: [string, Stats][] = [];
  for (const f of [file, `${file}-wal`, `${file}-shm`]) {
    const st = statSync(f, { throwIfNoEntry: false });
    if (!st) continue;
    try {
      accessSync(f, constants.R_OK | constants.W_OK);
    } catch (err) {
      const code = notPermittedCode(err);
      if (!code) throw err;
      throw notPermitted('cannot read and write', f, code, `; it belongs to uid ${st.uid}, mode ${(st.mode & 0o777).toString(8)}`);
    }
    present.push([f, st]);
  }
  if (isEmptyDatabase(file))
    throw new StartupError(`${file} ${EMPTY_DATABASE}. Restore a backup (\`contact-ledger restore <backup file>\`); to start a new installation here instead, delete the empty file`);
  const foreign = present.some(([f, st]) => f === file && st.size > 0) ? foreignTables(file) : [];
  if (foreign.length) {
    const what = foreign.includes('schema_migrations')
      ? "has contact-ledger's tables but no schema version (a copy rebuilt with sqlite3's .dump loses it)"
      : `is an SQLite database but not a contact-ledger one (no schema version; it has the table${foreign.length > 1 ? 's' : ''} ${foreign.slice(0, 5).join(', ')}${foreign.length > 5 ? ', …' : ''})`;
    throw new StartupError(`${file} ${what}; nothing was changed. Point CONTACT_LEDGER_DATA at a contact-ledger data folder, or restore a backup`);
  }
  const uid = process.getuid?.();
  const narrowed = present.filter(([, st]) => (st.mode & 0o077) !== 0 && st.uid === uid).map(([f]) => f);
  for (const f of narrowed) chmodSync(f, 0o600);
  return narrowed;
}

/** Where a new database is made before it takes its name (createDatabase). */
const newDatabaseFile = (dataDir: string) => join(dataDir, `.${DB_FILE}.new`);

/**
 * A data folder's first database: made and migrated under another name, folded into one file and
 * renamed into place, so that `contact-ledger.db` appears complete — a first start stopped before
 * its first write left a 0-byte file, which a start could not tell from a database cut short.
 * What a stopped one leaves under the other name is removed by the next start.
 */
function createDatabase(dataDir: string, file: string, migrations: Migration[], now: number): void {
  const partial = newDatabaseFile(dataDir);
  removeWithSideFiles(partial);
  const db = openDb(partial);
  let whole = false;
  try {
    migrate(db, migrations, now);
  } finally {
    whole = db.close();
  }
  // its -wal not folded in for lack of room, the file alone is not the database: it is not renamed
  // in (a reviewer's case: a damaged database in place, its -wal removed by the next start)
  if (!whole) throw new StartupError(`no room on the disk to make the database in ${dataDir}; free some space and start again`);
  fsyncFile(partial);
  renameSync(partial, file);
  fsyncFile(dataDir);
}

/** The database of a data folder, held by this process, migrated to this program's schema. */
export interface Storage {
  db: Db;
  /** Schema version of the newest migration this program has. */
  latest: number;
  /** Migrations this open applied, and the backup taken before them. */
  applied: string[];
  preMigrationBackup?: string;
  close(): void;
}

/**
 * The database's files as they are before a start opens them (inode, size and modification time of
 * the file and of its -wal): a start that changes nothing leaves them so, and a database put in
 * place (restored, moved, copied with its times) is another inode.
 */
function filesIdentity(file: string): string {
  return [file, `${file}-wal`]
    .map((f) => {
      const st = statSync(f, { throwIfNoEntry: false });
      return st ? `${st.ino}:${st.size}:${st.mtimeMs}` : '-';
    })
    .join(' ');
}

/**
 * Backs the database up into `<dir>/<prefix><time>.db` before a step that may fail at start (a
 * migration, a schema repair), once for the state it is in: a start that fails the step (exit 1,
 * restarted by systemd every few seconds) reuses the copy its first try took instead of adding a
 * whole database's copy at every try until the disk is full. A copy is reused when the database's
 * files are as they were when it was taken (`identity`, kept beside it in a hidden
 * `.<copy>.source`); otherwise (the old version ran meanwhile, another database was put in place)
 * a new one is taken. Returns the copy's path.
 */
async function backUpOnce(db: Db, dir: string, prefix: string, identity: string, clock: Clock, log: Logger, before: string): Promise<string> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const sourceOf = (name: string) => join(dir, `.${name}.source`);
  const names = readdirSync(dir);
  // the records of copies deleted since go too
  for (const n of names) if (/^\..+\.db\.source$/.test(n) && !names.includes(n.slice(1, -'.source'.length))) rmSync(join(dir, n), { force: true });
  const taken = names.find((n) => n.startsWith(prefix) && n.endsWith('.db') && readText(sourceOf(n)) === identity);
  if (taken) {
    log.info({ file: join(dir, taken) }, `the database was backed up before ${before} was first tried`);
    return join(dir, taken);
  }
  const name = `${prefix}${fileStamp(clock.now())}.db`;
  await backupTo(db.raw, join(dir, name));
  writeFileSync(sourceOf(name), identity, { mode: 0o600 });
  log.info({ file: join(dir, name) }, `backed up the database before ${before}`);
  return join(dir, name);
}

const readText = (file: string): string | undefined => {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
};

/** What a start's migrations applied, and the copy taken before them (for a command to say). */
export interface Migrated {
  applied: string[];
  version: number;
  backup?: string;
}

/**
 * Locks the data folder, opens (and checks) the database and, when its schema is behind, backs it
 * up into `<data>/backups/pre-migrate-v<N>-<time>.db` and migrates it (SPEC §8), telling
 * `onMigrated` as soon as it has. Throws StartupError (DataDirLockedError when another process
 * uses the folder).
 */
export async function openStorage(config: Readonly<Config>, log: Logger, clock: Clock, onMigrated?: (m: Migrated) => void): Promise<Storage> {
  prepareDataDir(config.dataDir);
  const lock = lockDataDir(config.dataDir);
  const migrations = loadMigrations(paths.migrations);
  let db: Db;
  // the database's files before this open: a backup taken of them by a failed start before is theirs
  let identity: string;
  try {
    const file = join(config.dataDir, DB_FILE);
    checkLeftovers(config.dataDir, file);
    removeWithSideFiles(newDatabaseFile(config.dataDir)); // what a first start stopped halfway left
    identity = filesIdentity(file);
    if (existsSync(file)) {
      const narrowed = checkDatabaseFiles(file);
      if (narrowed.length) log.warn({ files: narrowed }, 'the database files were open to other users; they are now 0600 (its owner only)');
    } else {
      createDatabase(config.dataDir, file, migrations, clock.now());
    }
    db = openDb(file);
  } catch (err) {
    lock.release();
    throw err;
  }
  try {
    const pending = pendingMigrations(db, migrations);
    const from = schemaVersion(db);
    const latest = migrations.at(-1)!.version;
    removeStalePartials(backupsDir(config.dataDir)); // killed backups' leftovers; one a running `backup` command writes stays
    let preMigrationBackup: string | undefined;
    if (pending.length && from > 0) {
      // Forward-only upgrades: keep the way back (SPEC §8).
      preMigrationBackup = await backUpOnce(db, backupsDir(config.dataDir), `pre-migrate-v${from}-`, identity, clock, log, 'migrating');
    }
    const applied = migrate(db, migrations, clock.now());
    if (applied.length) {
      log.info({ applied }, 'migrations applied');
      // said at once: what the open does after may fail, and the database stays migrated (an upgrade tester's case)
      onMigrated?.({ applied, version: latest, ...(preMigrationBackup ? { backup: preMigrationBackup } : {}) });
    }
    // migrated by a build whose migrations said something else: brought to this version's shape (schema-reconcile.ts)
    const repair = planSchemaRepair(db, migrations);
    if (repair.steps.length) {
      await backUpOnce(db, backupsDir(config.dataDir), `pre-repair-v${schemaVersion(db)}-${repair.id}-`, identity, clock, log, 'repairing its schema');
      repair.apply();
      log.warn({ repaired: repair.steps }, "the database's schema was repaired to this version's");
    }
    return {
      db,
      latest,
      applied,
      ...(preMigrationBackup ? { preMigrationBackup } : {}),
      close() {
        // a shutdown on a full disk said only "stopped" (an operator tester's case): the -wal is
        // whole and read by the next start, which needs room of its own to begin
        if (!db.close()) log.warn({ file: db.file }, `no room on the disk to fold ${DB_FILE}-wal into the database: it is kept beside it, whole, and read at the next start; free some space before starting again`);
        lock.release();
      },
    };
  } catch (err) {
    db.close();
    lock.release();
    throw err;
  }
}
