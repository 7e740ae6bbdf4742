import { Worker } from 'node:worker_threads';
import { startCsvReaderFor } from '../csv/csv-worker-client.ts';
import { sharedTime, type Clock } from '../clock.ts';
import { LeaseLostError, RENEW_LEASE_AFTER_MS, type Lease } from '../jobs/queue.ts';
import { MAX_STORED_REJECTIONS } from '../jobs/rejections.ts';
import type { RunControl } from '../jobs/scheduler.ts';
import { IMPORT_JOB, type ChunkCounts } from '../ledger/import-runner.ts';
import { FEED_JOB } from '../tracking/feed-runner.ts';
import type { FeedProgress } from '../tracking/feeds-repo.ts';
import type { Logger } from '../log.ts';
import { paths } from '../paths.ts';
import { BULK_WAL_LIMIT_BYTES } from '../storage/checkpointer.ts';
import type { Db } from '../storage/db.ts';
import { PAUSED, runKey, type FromThread, type SentError, type ThreadData, type ToThread } from './protocol.ts';

/** The kinds of job the thread runs (worker.ts `runners`). */
export const BULK_THREAD_JOBS: readonly string[] = [IMPORT_JOB, FEED_JOB];

export interface BulkThreadOptions {
  /** The main thread's writer: it shares the write lock with the thread and counts its writes. */
  db: Db;
  clock: Clock;
  dataDir: string;
  baseUrl: string;
  /** Rejections a job keeps for its errors CSV (default MAX_STORED_REJECTIONS). */
  maxStoredRejections?: number;
  /** How long a feed chunk takes records (tests; default: feed-runner.ts CHUNK_DEADLINE_MS). */
  feedChunkDeadlineMs?: number;
  log: Logger;
  /** An import chunk committed on the thread (the import-rows metric). */
  onImportChunk: (counts: ChunkCounts, importId: string) => void;
  /** A feed chunk committed on the thread (the feed metrics). */
  onFeedChunk: (progress: FeedProgress) => void;
  /** The thread wrote webhook deliveries: wake the dispatcher. */
  onDeliveries: () => void;
  /** The thread's script (tests give a broken one). */
  workerFile?: string;
}

export type BulkThread = ReturnType<typeof createBulkThread>;

/** How often a pause looks whether the leases of the runs waiting in it are due for renewal (real time; due by the clock: RENEW_LEASE_AFTER_MS). */
const PAUSE_POLL_MS = 250;

/** An error sent by the thread, as an Error again: the log shows its kind, the scheduler tells a lost lease or a full disk. */
function rebuild(e: SentError & { leaseLost?: boolean }): Error {
  const err = e.leaseLost ? new LeaseLostError(e.message) : Object.assign(new Error(e.message), { name: e.name }, e.code ? { code: e.code } : {});
  if (e.stack) err.stack = e.stack;
  return err;
}

/**
 * The main thread's side of the bulk thread (worker.ts): runs import and feed jobs there, as their
 * runners' `run` (the scheduler claims, releases and fails them here as for any job). The thread
 * starts with warm() (the server calls it as it starts) or the first such job, and stays until
 * close(); should it die, the runs in flight fail (the scheduler retries them) and the next job
 * starts a new one.
 */
export function createBulkThread(o: BulkThreadOptions) {
  const lock = o.db.processWriteLock();
  const runs = new Map<string, { lease: Lease; resolve: (outcome: 'done' | 'stopped') => void; reject: (err: Error) => void }>();
  let worker: Worker | undefined;
  let closing = false;
  let maxPageCount: number | undefined;
  /** Work the thread's writes must not run beside (a backup on the main connection): chunks wait for it. */
  let pause: Promise<unknown> = Promise.resolve();
  /** Shared with the thread: it asks before its next chunk while PAUSED is above 0. */
  const control = new Int32Array(new SharedArrayBuffer(4));

  const send = (w: Worker, m: ToThread) => w.postMessage(m);

  /**
   * While a pause lasts, the runs waiting in it renew their leases from here (a runner renews its
   * lease in each chunk, and waits between chunks): a backup longer than the lease (LEASE_MS) would otherwise
   * let the scheduler take a job that is only waiting for abandoned and run it a second time. The
   * renewal is a write on the main connection, which an online backup from that connection takes
   * in its stride. Returns the stop.
   */
  function keepLeasesWhilePaused(): () => void {
    let renewedAt = o.clock.now();
    const timer = setInterval(() => {
      if (o.clock.now() - renewedAt < RENEW_LEASE_AFTER_MS) return;
      renewedAt = o.clock.now();
      for (const r of runs.values()) {
        try {
          o.db.tx(() => r.lease.renew());
        } catch (err) {
          if (!(err instanceof LeaseLostError)) o.log.warn({ err, jobId: r.lease.job.id }, 'could not renew the lease of a job waiting for a pause');
        }
      }
    }, PAUSE_POLL_MS);
    timer.unref();
    return () => clearInterval(timer);
  }

  function lost(w: Worker, err: Error): void {
    if (worker !== w) return;
    worker = undefined;
    lock.releaseAbandoned('thread');
    for (const r of runs.values()) r.reject(err);
    runs.clear();
    if (!closing) o.log.error({ err }, 'the bulk thread stopped');
  }

  /** Resolves once the thread started last is ready for work (or gone). */
  let ready: Promise<void> = Promise.resolve();
  let markReady: (() => void) | undefined;

  function start(): Worker {
    const data: ThreadData = { file: o.db.file, dataDir: o.dataDir, baseUrl: o.baseUrl, time: sharedTime(o.clock), lock: lock.shared, control, walLimitBytes: o.db.reliefAboveBytes ?? BULK_WAL_LIMIT_BYTES, maxStoredRejections: o.maxStoredRejections ?? MAX_STORED_REJECTIONS, feedChunkDeadlineMs: o.feedChunkDeadlineMs };
    const started = performance.now();
    const w = new Worker(o.workerFile ?? paths.bulkThread, { workerData: data });
    w.unref();
    ready = new Promise<void>((resolve) => {
      w.once('exit', () => resolve());
      markReady = resolve;
    });
    if (maxPageCount !== undefined) send(w, { type: 'max-page-count', pages: maxPageCount });
    w.on('message', (m: FromThread) => {
      switch (m.type) {
        case 'ready':
          o.log.debug({ ms: Math.round(performance.now() - started) }, 'the bulk thread is ready');
          markReady?.();
          break;
        case 'ended':
          runs.get(m.key)?.resolve(m.outcome);
          break;
        case 'failed':
          runs.get(m.key)?.reject(rebuild(m.error));
          break;
        case 'import-chunk':
          o.onImportChunk(m.counts, m.importId);
          break;
        case 'feed-chunk':
          o.onFeedChunk(m.progress);
          break;
        case 'log':
          o.log[m.level](m.err ? { ...m.fields, err: rebuild(m.err) } : m.fields, m.msg);
          break;
        case 'wrote':
          o.db.noteWrite(m.bulk, m.failure);
          break;
        case 'kick-webhooks':
          o.onDeliveries();
          break;
        case 'read-csv':
          startCsvReaderFor(m.task, m.port);
          break;
        case 'relieve':
          // Between two chunks: after a pause, and a checkpoint when the -wal is big. The checkpointer
          // runs on the main thread's side; without it the thread's COMMITs checkpoint.
          void pause
            .then(() => o.db.relieve())
            .finally(() => send(w, { type: 'relieved', id: m.id, selfCheckpoint: !o.db.checkpointsElsewhere }));
          break;
      }
    });
    w.on('error', (err) => lost(w, err));
    w.on('exit', (code) => lost(w, new Error(`the bulk thread exited with code ${code}`)));
    return w;
  }

  return {
    /**
     * Starts the thread now, if it is not running, and resolves once it is ready for work. The
     * server calls it before its scheduler claims a job the thread will run (serve.ts): a claim
     * counts an attempt, and the first job after a start used to wait ~1 s for the thread to load,
     * so five restarts in quick succession failed an accepted batch that never got a chance to run
     * (a tester's case).
     */
    warm(): Promise<void> {
      if (closing) return Promise.resolve();
      worker ??= start();
      return ready;
    },
    /** A runner's `run` for import and feed jobs: the job runs on the thread; `ctl` stopping stops it after its chunk. */
    run(lease: Lease, ctl: RunControl): Promise<'done' | 'stopped'> {
      if (closing) return Promise.resolve('stopped');
      const w = (worker ??= start());
      const key = runKey(lease.job);
      const stop = () => send(w, { type: 'stop' });
      return new Promise<'done' | 'stopped'>((resolve, reject) => {
        runs.set(key, { lease, resolve, reject });
        w.ref(); // a run in flight keeps the process alive, as it would on the main thread
        send(w, { type: 'run', job: lease.job });
        if (ctl.stopping) stop();
        else ctl.signal?.addEventListener('abort', stop, { once: true });
      }).finally(() => {
        ctl.signal?.removeEventListener('abort', stop);
        runs.delete(key);
        if (!runs.size) w.unref();
      });
    },
    /**
     * Runs `fn` while imports and feeds wait between their chunks (at most the chunk in flight
     * commits). An online backup on the main connection needs it: SQLite starts such a backup over
     * whenever another connection writes between two of its steps (RELIABILITY.md D5), which a bulk job
     * does every ~30 ms, so the backup would never end.
     */
    pausedWhile<T>(fn: () => Promise<T>): Promise<T> {
      Atomics.add(control, PAUSED, 1);
      const stopRenewing = keepLeasesWhilePaused();
      const p = fn();
      const before = pause;
      pause = Promise.allSettled([before, p]);
      void p
        .catch(() => undefined)
        .finally(() => {
          stopRenewing();
          Atomics.sub(control, PAUSED, 1);
        });
      return p;
    },
    /** A full disk in tests (RELIABILITY.md D3): the thread's connection gets this page limit too. */
    setMaxPageCount(pages: number): void {
      maxPageCount = pages;
      if (worker) send(worker, { type: 'max-page-count', pages });
    },
    /** Ends the thread (after the scheduler stopped: no run is in flight). */
    async close(): Promise<void> {
      closing = true;
      const w = worker;
      if (!w) return;
      const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()));
      w.ref();
      send(w, { type: 'close' });
      await exited;
    },
  };
}
