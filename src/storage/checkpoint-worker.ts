// The checkpointer's thread: its own connection to the database, used for nothing but
// `PRAGMA wal_checkpoint(PASSIVE)` (and TRUNCATE to cut a big -wal, below). A checkpoint copies
// committed pages from the -wal into the main file and fsyncs it; done here, that I/O never stalls
// the event loop (see checkpointer.ts). PASSIVE never blocks the writer or readers and never waits
// for them. A TRUNCATE holds SQLite's write lock, so it takes the process's write lock first
// (storage/write-lock.ts): a main-thread write waiting meanwhile is woken when it ends, instead of
// polling in SQLite's busy handler.
import { dirname } from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { BUSY_TIMEOUT_MS, walSize } from './db.ts';
import { loadSqliteLibrary } from './sqlite-addon.ts';
import { LockTimeoutError, WriteLock } from './write-lock.ts';

/**
 * How long a TRUNCATE waits for the process's write lock. It is housekeeping: when a writer keeps
 * the lock longer, the -wal stays as it is until the next checkpoint tries again.
 */
const TRUNCATE_LOCK_WAIT_MS = 250;

export interface CheckpointResult {
  /** Frames in the -wal, and how many of them are now in the main file. */
  log: number;
  checkpointed: number;
  /** The -wal was cut to zero bytes (a TRUNCATE checkpoint, below). */
  truncated: boolean;
  ms: number;
}

export type CheckpointReply = { id: number; result: CheckpointResult } | { id: number; error: string };

const { file, truncateAboveBytes, lock: shared } = workerData as { file: string; truncateAboveBytes: number; lock: Int32Array };
loadSqliteLibrary(dirname(file)); // the executable's, as the main thread placed it
const db = new Database(file, { fileMustExist: true });
db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
const lock = new WriteLock(shared);

/** A TRUNCATE checkpoint under the process's write lock; false when the lock or a reader kept it from cutting the -wal. */
function truncate(): boolean {
  try {
    lock.acquire('checkpoint', TRUNCATE_LOCK_WAIT_MS);
  } catch (err) {
    if (err instanceof LockTimeoutError) return false;
    throw err;
  }
  try {
    const [r] = db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
    return r!.busy === 0;
  } finally {
    lock.release('checkpoint');
  }
}

/** `truncate`: false while an online backup copies from the writer connection (checkpointer.ts whileBackingUp). */
parentPort!.on('message', (msg: { id: number; op: 'checkpoint'; truncate: boolean } | { op: 'close' }) => {
  if (msg.op === 'close') {
    db.close();
    parentPort!.close();
    return;
  }
  const t0 = performance.now();
  try {
    const [r] = db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[];
    // Every frame is in the main file now and the -wal is big (a bulk job filled it): start it over
    // and cut it to zero here. Otherwise the writer would do it at its next COMMIT — the -wal reset
    // and a truncate of hundreds of MiB down to journal_size_limit, ~150 ms on the event loop. With
    // nothing left to copy this holds the write lock only for the truncate.
    const truncated = msg.truncate && r!.log > 0 && r!.checkpointed === r!.log && walSize(file) > truncateAboveBytes && truncate();
    parentPort!.postMessage({ id: msg.id, result: { log: r!.log, checkpointed: r!.checkpointed, truncated, ms: performance.now() - t0 } } satisfies CheckpointReply);
  } catch (err) {
    parentPort!.postMessage({ id: msg.id, error: (err as Error).message } satisfies CheckpointReply);
  }
});
