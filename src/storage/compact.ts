import { statSync } from 'node:fs';
import type { Db } from './db.ts';

/** What compactDatabase did. */
export interface Compacted {
  bytesBefore: number;
  bytesAfter: number;
  freePages: number;
  pageSize: number;
}

/**
 * Rewrites the database without its free pages (SQLite's VACUUM): no deleted value is left in a
 * free page, and the file shrinks after large deletions. VACUUM builds the new database in a
 * temporary file — on disk, as large as the database; only what the page cache holds (64 MiB) stays
 * in memory — then writes it back through the -wal in one transaction, which the checkpoint empties. For `contact-ledger compact`, with
 * the server stopped (it holds the write lock for as long as it takes).
 */
export function compactDatabase(db: Db): Compacted {
  const raw = db.raw;
  const pageSize = Number(raw.pragma('page_size', { simple: true }));
  const freePages = Number(raw.pragma('freelist_count', { simple: true }));
  raw.pragma('wal_checkpoint(TRUNCATE)');
  const bytesBefore = statSync(db.file).size;
  raw.pragma('temp_store = FILE');
  try {
    raw.exec('VACUUM');
  } finally {
    raw.pragma('temp_store = MEMORY');
  }
  raw.pragma('wal_checkpoint(TRUNCATE)');
  return { bytesBefore, bytesAfter: statSync(db.file).size, freePages, pageSize };
}

/** What the database holds in pages in use: about what VACUUM writes to its temporary file and back. */
export function liveBytes(db: Db): number {
  const raw = db.raw;
  const pages = Number(raw.pragma('page_count', { simple: true })) - Number(raw.pragma('freelist_count', { simple: true }));
  return pages * Number(raw.pragma('page_size', { simple: true }));
}

/** After a VACUUM that failed (rolled back): the -wal it grew cut back to nothing, its space given back to the disk. */
export function giveBackWal(db: Db): void {
  try {
    db.raw.pragma('wal_checkpoint(TRUNCATE)');
  } catch {
    // a disk still too full to checkpoint: the -wal is cut back at the next start's checkpoint
  }
}
