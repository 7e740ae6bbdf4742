import type { Config } from '../config.ts';
import { compactDatabase } from '../storage/compact.ts';
import { EXIT_FAILURE, EXIT_OK, refuseArguments, type Io, type ParsedArgs } from './command.ts';
import { openExistingStorage } from './common.ts';

const MIB = 1024 * 1024;
const mib = (bytes: number) => `${(bytes / MIB).toFixed(1)} MiB`;

/**
 * `contact-ledger compact`: rewrites the database without its free pages (SQLite's VACUUM), with
 * the server stopped. The file shrinks after large deletions (a ledger or an organization purged),
 * and no deleted value stays behind in a free page: this version overwrites what it deletes
 * (secure_delete), but a database written by an earlier one may still hold deleted values there,
 * and every backup copies them (docs/operations.md, Erasure requests). The new database is built in
 * a temporary file (SQLite's: $SQLITE_TMPDIR, else $TMPDIR, else /var/tmp or /tmp) and written
 * back in one transaction: a crash or a full disk on the way leaves the database as it was.
 */
export async function run(args: ParsedArgs, io: Io, config: Config): Promise<number> {
  refuseArguments(args);
  const storage = await openExistingStorage(io, config, 'compact', 'stop it before compacting');
  if (!storage) return EXIT_FAILURE;
  try {
    const c = compactDatabase(storage.db);
    io.out(`compacted ${storage.db.file}: ${mib(c.bytesBefore)} → ${mib(c.bytesAfter)} (${c.freePages} free page${c.freePages === 1 ? '' : 's'} of ${c.pageSize} bytes removed)`);
    return EXIT_OK;
  } finally {
    storage.close();
  }
}
