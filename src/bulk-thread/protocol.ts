import type { MessagePort } from 'node:worker_threads';
import type { WorkerTask } from '../csv/csv-worker.ts';
import type { ClaimedJob } from '../jobs/queue.ts';
import type { ChunkCounts } from '../ledger/import-runner.ts';
import type { FeedProgress } from '../tracking/feeds-repo.ts';

/** Messages between the main thread (client.ts) and the bulk thread (worker.ts). */

/** What the thread starts with. */
export interface ThreadData {
  file: string;
  dataDir: string;
  baseUrl: string;
  /** The main thread's ManualClock's time in tests (clock.ts sharedTime), else null. */
  time: Float64Array | null;
  /** The process's write lock (storage/write-lock.ts). */
  lock: Int32Array;
  /** [PAUSED]: above 0 while the main thread wants the thread's writes to wait (a backup runs). */
  control: Int32Array;
  /** The -wal size from which the thread asks for a checkpoint between chunks: the checkpointer's bulk limit. */
  walLimitBytes: number;
  /** Rejections a job keeps (config maxStoredRejections). */
  maxStoredRejections: number;
  /** How long a feed chunk takes records (tests; undefined: the runner's own). */
  feedChunkDeadlineMs?: number;
}

export type ToThread =
  | { type: 'run'; job: ClaimedJob }
  /** Shutdown: every run stops after its chunk in flight. */
  | { type: 'stop' }
  /** The answer to `relieve`; `selfCheckpoint`: the checkpointer is gone, the thread's COMMITs checkpoint again. */
  | { type: 'relieved'; id: number; selfCheckpoint: boolean }
  /** A full disk for tests (RELIABILITY.md D3): the thread's connection gets the writer's page limit. */
  | { type: 'max-page-count'; pages: number }
  | { type: 'close' };

/** An error sent between the threads: what the log and the scheduler need of it (its kind, SQLite code). */
export interface SentError {
  name: string;
  message: string;
  stack?: string;
  code?: string;
}

/** An error of a run: also whether the run lost its lease. */
export interface RunError extends SentError {
  leaseLost: boolean;
}

/** `err` as it can be sent (a thrown value need not be an Error). */
export function sendable(err: unknown): SentError {
  const e = err as Partial<Error> & { code?: unknown };
  return { name: typeof e?.name === 'string' ? e.name : 'Error', message: (typeof e?.message === 'string' && e.message) || String(err), stack: typeof e?.stack === 'string' ? e.stack : undefined, code: typeof e?.code === 'string' ? e.code : undefined };
}

export type FromThread =
  | { type: 'ready' }
  | { type: 'ended'; key: string; outcome: 'done' | 'stopped' }
  | { type: 'failed'; key: string; error: RunError }
  | { type: 'import-chunk'; importId: string; counts: ChunkCounts }
  | { type: 'feed-chunk'; progress: FeedProgress }
  /** A line for the server's log; `err` becomes an Error again there. */
  | { type: 'log'; level: 'warn' | 'error'; msg: string; fields: object; err?: SentError }
  /** A transaction ended on the thread's connection (the checkpointer counts writes, /readyz the disk). */
  | { type: 'wrote'; bulk: boolean; failure: string | null | undefined }
  /** The webhook outbox has new deliveries. */
  | { type: 'kick-webhooks' }
  /**
   * Between two chunks, when a backup runs or the -wal passed the bulk limit: wait for the backup,
   * and for a checkpoint (storage/checkpointer.ts). Otherwise the thread goes on without asking.
   */
  | { type: 'relieve'; id: number }
  /**
   * Start the CSV reader for an upload, talking through `port`: in the executable only the main
   * thread can start worker threads (pkg loads their scripts from its snapshot there alone).
   */
  | { type: 'read-csv'; task: WorkerTask; port: MessagePort };

/** Index of `ThreadData.control`. */
export const PAUSED = 0;

/** How a run is named in messages: a job this process claims again is another run. */
export const runKey = (job: ClaimedJob): string => `${job.id}#${job.token}`;
