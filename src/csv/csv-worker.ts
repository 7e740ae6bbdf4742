import { parentPort, type MessagePort } from 'node:worker_threads';
import { CsvReadError, readRows, type CsvBatch, type ResumePoint } from './read-rows.ts';
import { scanCsv } from './scan.ts';
import { NICE, setThreadNice } from '../thread-priority.ts';
import type { CsvFormat } from '../ledger/model.ts';

/**
 * The CSV worker thread: scans uploads and parses + validates rows off the HTTP thread, one task at
 * a time, kept by the pool of csv-worker-client.ts between tasks (a thread's start costs ~70 ms of
 * CPU, more than a small upload's scan). A task comes as a message on parentPort with the port its
 * messages go through (the protocol of csv-worker-client.ts), to the thread that asked for it: the
 * main thread, or the import thread (only the main thread can start workers in the executable).
 * When the task is done this thread says `free` on parentPort.
 */

export type WorkerTask =
  | { op: 'scan'; path: string }
  | { op: 'read'; path: string; format: CsvFormat; from: ResumePoint; batchRows: number; window: number };

/** What the pool sends a worker: a task, and its end of the task's channel. */
export interface TaskMessage {
  task: WorkerTask;
  port: MessagePort;
}

export type WorkerMessage =
  | { type: 'scan'; result: Awaited<ReturnType<typeof scanCsv>> }
  | { type: 'ready' }
  | { type: 'batch'; batch: CsvBatch }
  | { type: 'done' }
  | { type: 'read-error'; message: string; line: number }
  | { type: 'error'; message: string };

/** Said on parentPort when a task is done: the pool may give this thread the next one. */
export type FreeMessage = 'free';
const FREE: FreeMessage = 'free';

async function perform(task: WorkerTask, port: MessagePort, post: (m: WorkerMessage) => void): Promise<void> {
  if (task.op === 'scan') {
    post({ type: 'scan', result: await scanCsv(task.path) });
    return;
  }
  // Reading an import's rows is background work: this thread yields the CPU to the main thread's
  // requests when the cores are busy (the bulk thread, which holds the write lock that requests may
  // wait for, keeps the normal priority). A scan answers an upload request and keeps it too, so
  // scans and reads have threads of their own (a thread cannot take back a priority it gave up).
  setThreadNice(NICE.csvReading);
  // loaded, about to read the file: the job's run is at work from here (Lease.working)
  post({ type: 'ready' });
  // Credit-based flow control: at most `window` batches ahead of the consumer.
  let credits = task.window;
  let wake: (() => void) | undefined;
  port.on('message', () => {
    credits++;
    wake?.();
  });
  await readRows(task.path, task.format, task.from, task.batchRows, async (batch) => {
    while (credits <= 0) await new Promise<void>((r) => (wake = r));
    credits--;
    post({ type: 'batch', batch });
  });
  post({ type: 'done' });
}

async function run({ task, port }: TaskMessage): Promise<void> {
  let done = false;
  // The thread it reads for went away (stopped early, or died): nothing is left to read for, and
  // the task cannot be stopped halfway and this thread reused; it ends (the pool forgets it).
  port.once('close', () => {
    if (!done) process.exit(0);
  });
  const post = (m: WorkerMessage) => port.postMessage(m);
  try {
    await perform(task, port, post);
  } catch (err) {
    if (err instanceof CsvReadError) post({ type: 'read-error', message: err.message, line: err.line });
    else post({ type: 'error', message: (err as Error).message });
  }
  done = true;
  port.close();
  parentPort!.postMessage(FREE);
}

parentPort!.on('message', (m: TaskMessage) => void run(m));
