import { Worker } from 'node:worker_threads';
import { paths } from '../paths.ts';
import type { CheckpointReply, CheckpointResult } from './checkpoint-worker.ts';
import { JOURNAL_SIZE_LIMIT_BYTES, walSize, type Db } from './db.ts';

/**
 * A bulk writer (import, feed) waits for a checkpoint when the -wal passes this size. Bigger
 * means fewer checkpoints and more pages written once for many commits; the thread cuts the
 * -wal to zero afterwards (see below).
 */
export const BULK_WAL_LIMIT_BYTES = 256 * 1024 * 1024;
const POLL_MS = 500;
/** A bulk job counts as running until this long after its last chunk. */
const BULK_QUIET_MS = 2000;

export type Checkpointer = ReturnType<typeof startCheckpointer>;


/**
 * Moves WAL checkpoints off the event loop (RELIABILITY.md L2, M4). SQLite's automatic checkpoint
 * runs inside the COMMIT that crosses 1000 pages, on the thread that commits: with imports writing
 * random index pages that is a copy of megabytes into the main file and an fsync, every few chunks,
 * stalling every request for tens to hundreds of milliseconds. Instead the writer connection's
 * automatic checkpoints are turned off and a worker thread with a connection of its own runs
 * PASSIVE checkpoints: shortly after writes, and when a bulk writer asks (`relieve()`). It writes
 * no data: the writers are the main connection and the bulk thread's (src/bulk-thread), whose
 * automatic checkpoints are off too and whose writes and relieve() reach this module through the
 * main connection (`Db.noteWrite`, `Db.relieve`).
 *
 * A PASSIVE checkpoint never blocks the writer; SQLite starts the -wal over at the first commit
 * after a checkpoint that copied every frame, so a bulk writer that keeps committing has to pause
 * now and then (`relieve()`) for the -wal to shrink. That first commit would also truncate a -wal
 * of hundreds of MiB down to journal_size_limit (~150 ms on the event loop, once per cycle of a
 * bulk job): the thread does it instead, with a TRUNCATE checkpoint right after a PASSIVE one
 * that left nothing to copy.
 */
export interface CheckpointerOptions {
  bulkLimitBytes?: number;
  pollMs?: number;
  /** Called when the thread is gone or a checkpoint failed (for the log). */
  onFailure?: (err: Error) => void;
  /**
   * A -wal bigger than this is cut to zero by the thread once all of it is checkpointed (default:
   * the writer's journal_size_limit), instead of by the writer's next COMMIT on the event loop.
   */
  truncateAboveBytes?: number;
  /** The thread's script (tests give a broken one). */
  workerFile?: string;
}

export function startCheckpointer(db: Db, opts: CheckpointerOptions = {}) {
  const bulkLimit = opts.bulkLimitBytes ?? BULK_WAL_LIMIT_BYTES;
  const truncateAbove = opts.truncateAboveBytes ?? JOURNAL_SIZE_LIMIT_BYTES;
  const lock = db.processWriteLock();
  const worker = new Worker(opts.workerFile ?? paths.checkpointWorker, { workerData: { file: db.file, truncateAboveBytes: truncateAbove, lock: lock.shared } });
  worker.unref();
  db.setAutoCheckpoint(0);

  let nextId = 1;
  let closed = false;
  let running: Promise<CheckpointResult> | undefined;
  const waiting = new Map<number, { resolve: (r: CheckpointResult) => void; reject: (e: Error) => void }>();
  let failure: Error | undefined;
  /** Online backups copying from the writer connection now (whileBackingUp): no TRUNCATE meanwhile. */
  let backingUp = 0;
  /** Checkpoints done, and the last one's result (metrics, tests). */
  const stats = { checkpoints: 0, last: undefined as CheckpointResult | undefined };
  // Without its thread the writer falls back to SQLite's own checkpoints in COMMIT: slower
  // requests while imports run, but the -wal never grows without bound.
  const failAll = (err: Error) => {
    if (failure || closed) return;
    failure = err;
    lock.releaseAbandoned('checkpoint');
    for (const w of waiting.values()) w.reject(err);
    waiting.clear();
    db.setRelief(undefined);
    if (db.raw.open) db.setAutoCheckpoint(1000);
    opts.onFailure?.(err);
  };
  worker.on('message', (m: CheckpointReply) => {
    const w = waiting.get(m.id);
    waiting.delete(m.id);
    if ('error' in m) return w?.reject(new Error(`checkpoint failed: ${m.error}`));
    stats.checkpoints++;
    stats.last = m.result;
    w?.resolve(m.result);
  });
  worker.on('error', (err) => failAll(err));
  worker.on('exit', (code) => {
    if (!closed) failAll(new Error(`the checkpoint worker exited with code ${code}`));
  });

  const walBytes = () => walSize(db.file);

  /** One checkpoint at a time; callers arriving meanwhile share it. */
  function checkpoint(): Promise<CheckpointResult> {
    if (failure) return Promise.reject(failure);
    if (closed) return Promise.reject(new Error('the checkpointer is closed'));
    running ??= new Promise<CheckpointResult>((resolve, reject) => {
      const id = nextId++;
      waiting.set(id, { resolve, reject });
      worker.ref(); // keep the process alive while a checkpoint is in flight
      worker.postMessage({ id, op: 'checkpoint', truncate: backingUp === 0 });
    }).finally(() => {
      running = undefined;
      worker.unref();
    });
    return running;
  }

  // After any write, a checkpoint follows within POLL_MS — except while a bulk job writes: it
  // checkpoints at its own pace (relieve()), so that a page its chunks rewrite over and over is
  // copied into the main file once per -wal cycle rather than once per poll.
  let seenWrites = db.writes;
  const timer = setInterval(() => {
    if (running || db.writes === seenWrites) return;
    if (performance.now() - db.lastBulkAt < BULK_QUIET_MS && walBytes() < bulkLimit) return;
    seenWrites = db.writes;
    void checkpoint().catch(() => undefined);
  }, opts.pollMs ?? POLL_MS);
  timer.unref();

  const api = {
    checkpoint,
    walBytes,
    stats,
    /**
     * For bulk writers, between two chunks: when the -wal passed the bulk limit, waits for a
     * checkpoint (HTTP requests go on meanwhile; only the caller waits). Resolves at once otherwise.
     */
    async relieve(): Promise<void> {
      if (closed || failure || walBytes() < bulkLimit) return;
      await checkpoint().catch((err: Error) => opts.onFailure?.(err));
    },
    /**
     * Runs `copy`, an online backup from the writer connection (ops/scheduled-backups.ts), with
     * PASSIVE checkpoints only. A TRUNCATE starts the -wal over with a new header, which SQLite's
     * backup takes for another connection's write: it started the copy over from its first page
     * (a 40 MB backup during an import, twice on CI). A PASSIVE checkpoint changes no header and
     * costs the backup nothing. A checkpoint already in flight ends first. A big -wal is cut right
     * after the backup, here, before the writer's next COMMIT would on the event loop.
     */
    async whileBackingUp<T>(copy: () => Promise<T>): Promise<T> {
      backingUp++;
      try {
        await running?.catch(() => undefined);
        return await copy();
      } finally {
        backingUp--;
        if (backingUp === 0 && !closed && !failure && walBytes() > truncateAbove) void checkpoint().catch(() => undefined);
      }
    },
    /** Stops the worker (after a checkpoint in flight); the writer's close() then checkpoints the rest. */
    async close(): Promise<void> {
      if (closed) return;
      db.setRelief(undefined);
      clearInterval(timer);
      await running?.catch(() => undefined);
      closed = true;
      if (failure) {
        await worker.terminate();
      } else {
        const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
        worker.ref(); // an unreferenced worker would let the process end before it closed
        worker.postMessage({ op: 'close' });
        await exited;
      }
      if (db.raw.open) db.setAutoCheckpoint(1000);
    },
  };
  db.setRelief(() => api.relieve(), bulkLimit);
  return api;
}
