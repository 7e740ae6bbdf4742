import { dirname } from 'node:path';
import type { Config } from '../config.ts';
import { compactDatabase, giveBackWal, liveBytes } from '../storage/compact.ts';
import { isStorageFullError } from '../storage/db.ts';
import { freeBytes, mib } from '../storage/free-space.ts';
import { EXIT_FAILURE, EXIT_OK, refuseArguments, type Io, type ParsedArgs } from './command.ts';
import { openExistingStorage } from './common.ts';

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
    const tmp = process.env.SQLITE_TMPDIR || process.env.TMPDIR || '/var/tmp';
    const beside = dirname(storage.db.file);
    // the room there is now, before the attempt: a failed one leaves the -wal grown by what it wrote
    // back, so measured after it the message understated what the disk had (an operator tester's case)
    const room = { tmp: freeBytes(tmp), beside: freeBytes(beside) };
    const needed = liveBytes(storage.db);
    const noRoom = () => {
      io.err(
        `contact-ledger compact: not enough disk space; nothing was changed. It needs about ${mib(needed)} free in the temporary folder (${tmp}: ${mib(room.tmp)} free; ` +
          `SQLITE_TMPDIR chooses another) and as much beside the database (${beside}: ${mib(room.beside)} free)`,
      );
      return EXIT_FAILURE;
    };
    // too little where it is known: said before anything is written
    if ((room.tmp ?? Infinity) < needed || (room.beside ?? Infinity) < needed) return noRoom();
    let c;
    try {
      c = compactDatabase(storage.db);
    } catch (err) {
      if (!isStorageFullError(err)) throw err;
      // which of the two places ran out cannot be told apart by SQLite's error: both are named
      giveBackWal(storage.db);
      return noRoom();
    }
    // rewritten whole: also the unused space inside pages in use, where an old version's deletions may be (a tester read "0 free pages" as nothing cleaned);
    // the shrink is the free pages and the pages in use packed fuller, each said (an operator tester read "3 free pages dropped" beside a shrink of 40 MiB as wrong)
    const dropped = c.freePages * c.pageSize;
    const packed = Math.max(0, c.bytesBefore - c.bytesAfter - dropped);
    io.out(
      `compacted ${storage.db.file}: ${mib(c.bytesBefore)} → ${mib(c.bytesAfter)}, rewritten whole (${c.freePages} free page${c.freePages === 1 ? '' : 's'} dropped, ${mib(dropped)}; ` +
        `pages in use packed, ${mib(packed)}; no deleted value is left in unused space)`,
    );
    return EXIT_OK;
  } finally {
    storage.close();
  }
}
