import type { Config } from '../config.ts';
import { schemaVersion } from '../storage/migrate.ts';
import { EXIT_FAILURE, EXIT_OK, refuseArguments, type Io, type ParsedArgs } from './command.ts';
import { migrationLines, openExistingStorage } from './common.ts';

/**
 * `contact-ledger migrate`: brings the database to this version's schema now, after backing it up
 * (what `serve` does at start anyway), so an upgrade can be done and checked before serving.
 */
export async function run(args: ParsedArgs, io: Io, config: Config): Promise<number> {
  refuseArguments(args);
  const storage = await openExistingStorage(io, config, 'migrate', 'it migrated the database when it started');
  try {
    const version = schemaVersion(storage.db);
    if (!storage.applied.length) io.out(`the database is up to date (schema version ${version})`);
    else for (const line of migrationLines(storage.applied, version, storage.preMigrationBackup)) io.out(line);
    return EXIT_OK;
  } finally {
    storage.close();
  }
}
