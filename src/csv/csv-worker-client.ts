import { Worker, type MessagePort } from 'node:worker_threads';
import { paths } from '../paths.ts';
import type { CsvFormat } from '../ledger/model.ts';
import type { WorkerMessage, WorkerTask } from './csv-worker.ts';
import { CsvReadError, type CsvBatch, type ResumePoint } from './read-rows.ts';
import type { ScanFailure, ScanResult } from './scan.ts';

/** Main-thread side of the CSV worker: a promise for a scan, an async iterator for rows. */

const start = (task: WorkerTask) => new Worker(paths.csvWorker, { workerData: task });

/** A CSV worker's messages, as the reader sees them: from a worker it started, or through a port. */
export interface CsvLink {
  onMessage(fn: (m: WorkerMessage) => void): void;
  /** The worker is gone (ended, failed or stopped); called after its last message. */
  onGone(fn: (err: Error) => void): void;
  send(m: unknown): void;
  close(): void;
}

/** Starts the CSV worker for a task. */
export type StartCsvWorker = (task: WorkerTask) => CsvLink;

/** The default: a worker started by this thread. */
export const startCsvWorker: StartCsvWorker = (task) => {
  const w = start(task);
  return {
    onMessage: (fn) => void w.on('message', fn),
    onGone: (fn) => {
      w.on('error', fn);
      w.on('exit', () => fn(new Error('the CSV worker stopped unexpectedly')));
    },
    send: (m) => w.postMessage(m),
    close: () => {
      w.removeAllListeners();
      void w.terminate();
    },
  };
};

/**
 * Starts a CSV worker for another thread, which reads its messages through `port` (csvLinkOver at
 * its end). A worker that fails closes the port, and the reader learns it is gone.
 */
export function startCsvReaderFor(task: WorkerTask, port: MessagePort): void {
  new Worker(paths.csvWorker, { workerData: { ...task, port }, transferList: [port] }).on('error', () => undefined);
}

/** The other end of a channel to a CSV worker that another thread started (csv-worker.ts `port`). */
export const csvLinkOver = (port: MessagePort): CsvLink => ({
  onMessage: (fn) => void port.on('message', fn),
  onGone: (fn) => void port.on('close', () => fn(new Error('the CSV worker stopped unexpectedly'))),
  send: (m) => port.postMessage(m),
  close: () => {
    port.removeAllListeners();
    port.close();
  },
});

/** Scans an uploaded file on a worker thread (see scan.ts). */
export function scanUpload(path: string): Promise<ScanResult | ScanFailure> {
  return new Promise((resolve, reject) => {
    const w = start({ op: 'scan', path });
    w.once('message', (m: WorkerMessage) => {
      if (m.type === 'scan') resolve(m.result);
      else reject(new Error(m.type === 'error' ? m.message : `unexpected ${m.type}`));
    });
    w.once('error', reject);
    w.once('exit', (code) => reject(new Error(`the CSV worker exited with ${code}`)));
  });
}

/**
 * Rows of a stored upload from a resume point, in batches; at most `window` batches are parsed
 * ahead of the consumer. Breaking out of the loop stops the worker. Throws CsvReadError.
 * `onReading` is called when the worker, loaded, begins to read the file (before any row).
 */
export async function* readUpload(
  path: string,
  format: CsvFormat,
  from: ResumePoint,
  batchRows: number,
  opts: { window?: number; startWorker?: StartCsvWorker; onReading?: () => void } = {},
): AsyncGenerator<CsvBatch> {
  const w = (opts.startWorker ?? startCsvWorker)({ op: 'read', path, format, from, batchRows, window: opts.window ?? 2 });
  const queue: WorkerMessage[] = [];
  let wake: (() => void) | undefined;
  let failure: Error | undefined;
  w.onMessage((m) => {
    queue.push(m);
    wake?.();
  });
  w.onGone((err) => {
    failure ??= err;
    wake?.();
  });
  try {
    for (;;) {
      const m = queue.shift();
      if (!m) {
        if (failure) throw failure;
        await new Promise<void>((r) => (wake = r));
        wake = undefined;
        continue;
      }
      if (m.type === 'ready') opts.onReading?.();
      else if (m.type === 'batch') {
        yield m.batch;
        w.send('more');
      } else if (m.type === 'done') return;
      else if (m.type === 'read-error') throw new CsvReadError(m.message, m.line);
      else if (m.type === 'error') throw new Error(m.message);
    }
  } finally {
    w.close();
  }
}
