import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.ts';
import { systemClock } from '../clock.ts';
import { DataDirLockedError } from '../storage/lock.ts';
import { DB_FILE, openStorage, restoringFile } from '../storage/storage.ts';
import { EXIT_FAILURE, EXIT_OK, refuseArguments, type Io, type ParsedArgs } from './command.ts';
import { commandLogger } from './common.ts';

const MIB = 1024 * 1024;
const mib = (bytes: number) => `${(bytes / MIB).toFixed(1)} MiB`;

/**
 * `contact-ledger compact`: rewrites the database without its free pages (SQLite's VACUUM), with
 * the server stopped. The file shrinks after large deletions (a ledger or an organization purged),
 * and no deleted value stays behind in a free page: this version overwrites what it deletes
 * (secure_delete), but a database written by an earlier one may still hold deleted values there,
 * and every backup copies them (docs/operations.md, Erasure requests). VACUUM builds the new
 * database in a temporary file (SQLite's: $SQLITE_TMPDIR, else $TMPDIR, else /var/tmp or /tmp),
 * then writes it back through the -wal in one transaction: a crash or a full disk on the way leaves
 * the database as it was.
 */
export async function run(args: ParsedArgs, io: Io, config: Config): Promise<number> {
  refuseArguments(args);
  const file = join(config.dataDir, DB_FILE);
  if (!existsSync(file) && !existsSync(`${file}-wal`) && !existsSync(restoringFile(config.dataDir))) {
    io.err(`contact-ledger compact: there is no database in ${config.dataDir} (set CONTACT_LEDGER_DATA or --data)`);
    return EXIT_FAILURE;
  }
  let storage;
  try {
    storage = await openStorage(config, commandLogger(io, config), systemClock);
  } catch (err) {
    if (err instanceof DataDirLockedError) throw new DataDirLockedError(`a contact-ledger server or command (pid ${err.pid}) is using the data folder ${config.dataDir}; stop it before compacting`, err.pid);
    throw err;
  }
  try {
    const raw = storage.db.raw;
    const pageSize = Number(raw.pragma('page_size', { simple: true }));
    const freePages = Number(raw.pragma('freelist_count', { simple: true }));
    raw.pragma('wal_checkpoint(TRUNCATE)');
    const before = statSync(file).size;
    // the copy on disk, not in memory: it is as large as the database
    raw.pragma('temp_store = FILE');
    raw.exec('VACUUM');
    raw.pragma('wal_checkpoint(TRUNCATE)');
    const after = statSync(file).size;
    io.out(`compacted ${file}: ${mib(before)} → ${mib(after)} (${freePages} free page${freePages === 1 ? '' : 's'} of ${pageSize} bytes removed)`);
    return EXIT_OK;
  } finally {
    storage.close();
  }
}
