import { parentPort, workerData } from 'node:worker_threads';
import { CsvReadError, readRows, type CsvBatch, type ResumePoint } from './read-rows.ts';
import { scanCsv } from './scan.ts';
import type { CsvFormat } from '../ledger/model.ts';

/**
 * The CSV worker thread: scans uploads and parses + validates rows off the HTTP thread. One
 * worker per operation; messages are the protocol of csv-worker-client.ts.
 */

export type WorkerTask =
  | { op: 'scan'; path: string }
  | { op: 'read'; path: string; format: CsvFormat; from: ResumePoint; batchRows: number; window: number };

export type WorkerMessage =
  | { type: 'scan'; result: Awaited<ReturnType<typeof scanCsv>> }
  | { type: 'batch'; batch: CsvBatch }
  | { type: 'done' }
  | { type: 'read-error'; message: string; line: number }
  | { type: 'error'; message: string };

const port = parentPort!;
const task = workerData as WorkerTask;
const post = (m: WorkerMessage) => port.postMessage(m);

async function main() {
  if (task.op === 'scan') {
    post({ type: 'scan', result: await scanCsv(task.path) });
    return;
  }
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
