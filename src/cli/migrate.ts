import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.ts';
import { systemClock } from '../clock.ts';
import { DB_FILE, openStorage, restoringFile } from '../storage/storage.ts';
import { DataDirLockedError } from '../storage/lock.ts';
import { schemaVersion } from '../storage/migrate.ts';
import { EXIT_FAILURE, EXIT_OK, refuseArguments, type Io, type ParsedArgs } from './command.ts';
import { commandLogger } from './common.ts';

/**
 * `contact-ledger migrate`: brings the database to this version's schema now, after backing it up
 * (what `serve` does at start anyway), so an upgrade can be done and checked before serving.
 */
export async function run(args: ParsedArgs, io: Io, config: Config): Promise<number> {
  refuseArguments(args);
  // migrate upgrades a database; a data folder without one is a wrong path, not a new
  // installation (a tester's mistyped folder got an empty database, and the next start a new
  // superuser): `serve` or `init` make one
  const file = join(config.dataDir, DB_FILE);
  // (a -wal alone, or an interrupted restore's copy: the start's own check says what to do)
  if (!existsSync(file) && !existsSync(`${file}-wal`) && !existsSync(restoringFile(config.dataDir))) {
    io.err(`contact-ledger migrate: there is no database in ${config.dataDir} (set CONTACT_LEDGER_DATA or --data); a new installation is made by serve or init`);
    return EXIT_FAILURE;
  }
  let storage;
  try {
    storage = await openStorage(config, commandLogger(io, config), systemClock);
  } catch (err) {
    if (err instanceof DataDirLockedError) throw new DataDirLockedError(`a contact-ledger server or command (pid ${err.pid}) is using the data folder ${config.dataDir}; it migrated the database when it started`, err.pid);
    throw err;
  }
  try {
    const version = schemaVersion(storage.db);
    if (!storage.applied.length) io.out(`the database is up to date (schema version ${version})`);
    else {
      io.out(`applied ${storage.applied.length} migration${storage.applied.length === 1 ? '' : 's'} (${storage.applied.join(', ')}); schema version ${version}`);
      if (storage.preMigrationBackup) io.out(`the database as it was is in ${storage.preMigrationBackup}`);
    }
    return EXIT_OK;
  } finally {
    storage.close();
  }
}
