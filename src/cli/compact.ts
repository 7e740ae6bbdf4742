import { statSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Config } from '../config.ts';
import { compactDatabase } from '../storage/compact.ts';
import { isStorageFullError } from '../storage/db.ts';
import { freeBytes } from '../storage/free-space.ts';
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
  try {
    let c;
    try {
      c = compactDatabase(storage.db);
    } catch (err) {
      if (!isStorageFullError(err)) throw err;
      // which of the two places ran out cannot be told apart by SQLite's error: both are named
      const size = statSync(storage.db.file).size;
      const tmp = process.env.SQLITE_TMPDIR || process.env.TMPDIR || '/var/tmp';
      const free = (dir: string) => freeBytes(dir) ?? Number.NaN;
      io.err(
        `contact-ledger compact: not enough disk space; nothing was changed. It needs about ${mib(size)} free in the temporary folder (${tmp}: ${mib(free(tmp))} free; ` +
          `SQLITE_TMPDIR chooses another) and as much beside the database (${dirname(storage.db.file)}: ${mib(free(dirname(storage.db.file)))} free)`,
      );
      return EXIT_FAILURE;
    }
    // rewritten whole: also the unused space inside pages in use, where an old version's deletions may be (a tester read "0 free pages" as nothing cleaned)
    io.out(`compacted ${storage.db.file}: ${mib(c.bytesBefore)} → ${mib(c.bytesAfter)}, rewritten whole (${c.freePages} free page${c.freePages === 1 ? '' : 's'} of ${c.pageSize} bytes dropped; no deleted value is left in unused space)`);
    return EXIT_OK;
  } finally {
    storage.close();
  }
}
