import { Worker } from 'node:worker_threads';
import { paths } from '../paths.ts';
import type { CsvFormat } from '../ledger/model.ts';
import type { WorkerMessage, WorkerTask } from './csv-worker.ts';
import { CsvReadError, type CsvBatch, type ResumePoint } from './read-rows.ts';
import type { ScanFailure, ScanResult } from './scan.ts';

/** Main-thread side of the CSV worker: a promise for a scan, an async iterator for rows. */

const start = (task: WorkerTask) => new Worker(paths.csvWorker, { workerData: task });

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
 */
export async function* readUpload(path: string, format: CsvFormat, from: ResumePoint, batchRows: number, window = 2): AsyncGenerator<CsvBatch> {
  const w = start({ op: 'read', path, format, from, batchRows, window });
  const queue: WorkerMessage[] = [];
  let wake: (() => void) | undefined;
  let failure: Error | undefined;
  w.on('message', (m: WorkerMessage) => {
    queue.push(m);
    wake?.();
  });
  w.on('error', (err) => {
    failure = err;
    wake?.();
  });
  w.on('exit', () => {
    failure ??= new Error('the CSV worker stopped unexpectedly');
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
      if (m.type === 'batch') {
        yield m.batch;
        w.postMessage('more');
      } else if (m.type === 'done') return;
      else if (m.type === 'read-error') throw new CsvReadError(m.message, m.line);
      else if (m.type === 'error') throw new Error(m.message);
    }
  } finally {
    w.removeAllListeners();
    void w.terminate();
  }
}
