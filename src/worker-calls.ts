import { Worker, type Transferable } from 'node:worker_threads';

/**
 * Calls to a worker thread that answers each message with one message carrying the same `id`
 * (the bcrypt thread, the JSON parser thread). The thread is started at the first call and stays;
 * idle, it keeps nothing alive. When it fails or stops, every call waiting on it fails, and the
 * next call starts a new one.
 */
export interface WorkerCalls<Task extends object, Answer extends { id: number }> {
  call(task: Task, transfer?: readonly Transferable[]): Promise<Answer>;
  /** Calls sent and not answered yet. */
  waiting(): number;
  close(): Promise<void>;
}

export function workerCalls<Task extends object, Answer extends { id: number }>(script: string, what: string): WorkerCalls<Task, Answer> {
  let worker: Worker | undefined;
  let nextId = 1;
  const pending = new Map<number, { resolve: (a: Answer) => void; reject: (e: Error) => void }>();

  const failAll = (err: Error) => {
    for (const p of pending.values()) p.reject(err);
    pending.clear();
    worker = undefined;
  };

  const ensureWorker = (): Worker => {
    if (worker) return worker;
    const w = new Worker(script);
    w.unref();
    w.on('message', (m: Answer) => {
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      p.resolve(m);
    });
    w.on('error', failAll);
    w.on('exit', () => {
      if (worker === w) failAll(new Error(`${what} stopped`));
    });
    worker = w;
    return w;
  };

  return {
    call(task, transfer = []) {
      const w = ensureWorker();
      const id = nextId++;
      return new Promise<Answer>((resolve, reject) => {
        pending.set(id, { resolve, reject });
        w.postMessage({ ...task, id }, transfer);
      });
    },
    waiting: () => pending.size,
    async close() {
      const w = worker;
      worker = undefined;
      if (w) await w.terminate();
      failAll(new Error(`${what} was closed`));
    },
  };
}
