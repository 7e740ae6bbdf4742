import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { CsvReadError, readRows, type CsvBatch, type ResumePoint } from './read-rows.ts';
import { scanCsv } from './scan.ts';
import { NICE, setThreadNice } from '../thread-priority.ts';
import type { CsvFormat } from '../ledger/model.ts';

/**
 * The CSV worker thread: scans uploads and parses + validates rows off the HTTP thread. One
 * worker per operation; messages are the protocol of csv-worker-client.ts. It talks to the thread
 * that started it, or through `port` to the thread the main thread started it for (the import
 * thread: only the main thread can start workers in the executable).
 */

export type WorkerTask =
  | { op: 'scan'; path: string }
  | { op: 'read'; path: string; format: CsvFormat; from: ResumePoint; batchRows: number; window: number };

export type WorkerMessage =
  | { type: 'scan'; result: Awaited<ReturnType<typeof scanCsv>> }
  | { type: 'ready' }
  | { type: 'batch'; batch: CsvBatch }
  | { type: 'done' }
  | { type: 'read-error'; message: string; line: number }
  | { type: 'error'; message: string };

const { port: given, ...rest } = workerData as WorkerTask & { port?: MessagePort };
const task = rest as WorkerTask;
const port = given ?? parentPort!;
// The reading thread went away (stopped early, or died): nothing is left to read for.
given?.once('close', () => process.exit(0));
const post = (m: WorkerMessage) => port.postMessage(m);

async function main() {
  if (task.op === 'scan') {
    post({ type: 'scan', result: await scanCsv(task.path) });
    return;
  }
  // Reading an import's rows is background work: this thread yields the CPU to the main thread's
  // requests when the cores are busy (the bulk thread, which holds the write lock that requests may
  // wait for, keeps the normal priority). A scan answers an upload request and keeps it too.
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

main().then(
  () => port.close(),
  (err: unknown) => {
    if (err instanceof CsvReadError) post({ type: 'read-error', message: err.message, line: err.line });
    else post({ type: 'error', message: (err as Error).message });
    port.close();
  },
);
