// The checkpointer's thread: its own connection to the database, used for nothing but
// `PRAGMA wal_checkpoint(PASSIVE)` (and TRUNCATE to cut a big -wal, below). A checkpoint copies
// committed pages from the -wal into the main file and fsyncs it; done here, that I/O never stalls
// the event loop (see checkpointer.ts). PASSIVE never blocks the writer or readers and never waits
// for them.
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { walSize } from './db.ts';

export interface CheckpointResult {
  /** Frames in the -wal, and how many of them are now in the main file. */
  log: number;
  checkpointed: number;
  ms: number;
}

export type CheckpointReply = { id: number; result: CheckpointResult } | { id: number; error: string };

const { file, truncateAboveBytes } = workerData as { file: string; truncateAboveBytes: number };
const db = new Database(file, { fileMustExist: true });
db.pragma('busy_timeout = 5000');

parentPort!.on('message', (msg: { id: number; op: 'checkpoint' } | { op: 'close' }) => {
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
    if (r!.log > 0 && r!.checkpointed === r!.log && walSize(file) > truncateAboveBytes) db.pragma('wal_checkpoint(TRUNCATE)');
    parentPort!.postMessage({ id: msg.id, result: { log: r!.log, checkpointed: r!.checkpointed, ms: performance.now() - t0 } } satisfies CheckpointReply);
  } catch (err) {
    parentPort!.postMessage({ id: msg.id, error: (err as Error).message } satisfies CheckpointReply);
  }
});
