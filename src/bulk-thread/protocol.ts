import type { MessagePort } from 'node:worker_threads';
import type { WorkerTask } from '../csv/csv-worker.ts';
import type { ClaimedJob } from '../jobs/queue.ts';
import type { ChunkCounts } from '../ledger/import-runner.ts';

/** Messages between the main thread (client.ts) and the import thread (worker.ts). */

/** What the thread starts with. */
export interface ThreadData {
  file: string;
  dataDir: string;
  baseUrl: string;
  /** The main thread's ManualClock's time in tests (clock.ts sharedTime), else null. */
  time: Float64Array | null;
  /** The process's write lock (storage/write-lock.ts). */
  lock: Int32Array;
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

/** An error of a run, as the scheduler needs to see it: its kind and SQLite code. */
export interface RunError {
  message: string;
  stack?: string;
  code?: string;
  leaseLost: boolean;
}

export type FromThread =
  | { type: 'ended'; key: string; outcome: 'done' | 'stopped' }
  | { type: 'failed'; key: string; error: RunError }
  | { type: 'chunk'; importId: string; counts: ChunkCounts }
  /** A transaction ended on the thread's connection (the checkpointer counts writes, /readyz the disk). */
  | { type: 'wrote'; bulk: boolean; failure: string | null | undefined }
  /** The webhook outbox has new deliveries. */
  | { type: 'kick-webhooks' }
  /** Between two chunks: wait for a checkpoint when the -wal is too big (storage/checkpointer.ts). */
  | { type: 'relieve'; id: number }
  /**
   * Start the CSV reader for an upload, talking through `port`: in the executable only the main
   * thread can start worker threads (pkg loads their scripts from its snapshot there alone).
   */
  | { type: 'read-csv'; task: WorkerTask; port: MessagePort };

/** How a run is named in messages: a job this process claims again is another run. */
export const runKey = (job: ClaimedJob): string => `${job.id}#${job.token}`;
