import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { paths } from '../paths.ts';
import type { CsvFormat } from '../ledger/model.ts';
import type { FreeMessage, TaskMessage, WorkerMessage, WorkerTask } from './csv-worker.ts';
import { CsvReadError, type CsvBatch, type ResumePoint } from './read-rows.ts';
import type { ScanFailure, ScanResult } from './scan.ts';

/** Main-thread side of the CSV worker: a promise for a scan, an async iterator for rows. */

/**
 * The CSV workers kept between tasks, by the task they run (a read's thread runs at a lower
 * priority, which it cannot give back for a scan). A task takes an idle one or starts one; a
 * thread whose task ended waits for the next, up to IDLE_MAX of a kind for IDLE_MS, without
 * keeping the process alive meanwhile. A thread whose reader went away ends (csv-worker.ts).
 */
const IDLE_MAX = 2;
const IDLE_MS = 10_000;
const idle: Record<WorkerTask['op'], Worker[]> = { scan: [], read: [] };
const idleTimers = new Map<Worker, NodeJS.Timeout>();
const FREE: FreeMessage = 'free';

function forget(w: Worker, op: WorkerTask['op']): void {
  const at = idle[op].indexOf(w);
  if (at >= 0) idle[op].splice(at, 1);
  clearTimeout(idleTimers.get(w));
  idleTimers.delete(w);
}

function park(w: Worker, op: WorkerTask['op']): void {
  if (idle[op].length >= IDLE_MAX) {
    void w.terminate();
    return;
  }
  w.unref();
  idle[op].push(w);
  const timer = setTimeout(() => {
    forget(w, op);
    void w.terminate();
  }, IDLE_MS);
  timer.unref();
  idleTimers.set(w, timer);
}

function startWorker(op: WorkerTask['op']): Worker {
  const w = new Worker(paths.csvWorker);
  started++;
  w.on('message', (m: unknown) => {
    if (m === FREE) park(w, op);
  });
  // a thread that fails closes its task's port: the reader learns it from there
  w.on('error', () => forget(w, op));
  w.on('exit', () => forget(w, op));
  return w;
}

let started = 0;
/** How many CSV workers this thread started so far, and how many wait for a task, by kind (the pool's tests). */
export const csvWorkerCounts = (): { started: number; idle: Record<WorkerTask['op'], number> } => ({ started, idle: { scan: idle.scan.length, read: idle.read.length } });

/** Runs `task` on a CSV worker of this thread's pool, its messages through `port`. */
function dispatch(task: WorkerTask, port: MessagePort): void {
  const w = idle[task.op].pop() ?? startWorker(task.op);
  forget(w, task.op);
  w.ref();
  w.postMessage({ task, port } satisfies TaskMessage, [port]);
}

/** A CSV worker's messages, as the reader sees them, through its end of the task's channel. */
export interface CsvLink {
  onMessage(fn: (m: WorkerMessage) => void): void;
  /** The worker is gone (ended, failed or stopped); called after its last message. */
  onGone(fn: (err: Error) => void): void;
  send(m: unknown): void;
  close(): void;
}

/** Starts the CSV worker for a task. */
export type StartCsvWorker = (task: WorkerTask) => CsvLink;

/** The default: a worker of this thread's pool. */
export const startCsvWorker: StartCsvWorker = (task) => {
  const { port1, port2 } = new MessageChannel();
  dispatch(task, port2);
  return csvLinkOver(port1);
};

/**
 * Runs a CSV task for another thread, which reads its messages through `port` (csvLinkOver at
 * its end). A worker that fails closes the port, and the reader learns it is gone.
 */
export function startCsvReaderFor(task: WorkerTask, port: MessagePort): void {
  dispatch(task, port);
}

/** The reader's end of the channel to a CSV worker (csv-worker.ts `port`); closing it stops the task. */
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
    const link = startCsvWorker({ op: 'scan', path });
    link.onMessage((m) => {
      if (m.type === 'scan') resolve(m.result);
      else reject(new Error(m.type === 'error' ? m.message : `unexpected ${m.type}`));
    });
    link.onGone(reject); // after the answer: no effect
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
