import { Worker } from 'node:worker_threads';
import { AppError, type FieldError } from '../errors.ts';
import { paths } from '../paths.ts';

/**
 * Large JSON request bodies are parsed on a thread of their own (src/http/json-parser-worker.ts).
 * The largest body the API takes (MAX_JSON_BYTES, 4 MiB) held the event loop for ~14 ms on its
 * UTF-8 check, parse and checks, while every other request waited (RELIABILITY.md L2, "body
 * parsing cost"); on the thread it costs the main thread handing the bytes over and the copy of the
 * parsed value back (~3 ms). Bodies under OFF_THREAD_BYTES are parsed in place: the round trip would cost
 * more than the parse.
 */
export const OFF_THREAD_BYTES = 128 * 1024;

export interface JsonParserTask {
  id: number;
  bytes: Uint8Array;
  /** The route keeps integers beyond 2^53−1 as their digits (src/exact-json.ts). */
  exactIntegers: boolean;
}

export type JsonParserReply =
  | { id: number; value: unknown }
  /** The body holds an integer beyond 2^53−1 and the route keeps its digits: the text, for the main thread to parse. */
  | { id: number; text: string }
  | { id: number; problem: { status: number; code: string; message: string; errors: FieldError[] } }
  | { id: number; failure: string };

/** What the thread made of a body: its value, or the text when the main thread must parse it. */
export type ParsedBody = { value: unknown } | { text: string };

export interface JsonParserThread {
  /** Parses a whole body (bytes as read, given up to the thread); throws the problem parseJsonBody would. */
  parse(bytes: Buffer, exactIntegers: boolean): Promise<ParsedBody>;
  /** Bodies parsed on the thread so far (tests, observability). */
  parsed(): number;
  close(): Promise<void>;
}

/** The thread is started at the first large body and stays (idle, it keeps nothing alive). */
export function createJsonParserThread(): JsonParserThread {
  let worker: Worker | undefined;
  let nextId = 1;
  let count = 0;
  const pending = new Map<number, { resolve: (v: ParsedBody) => void; reject: (e: Error) => void }>();

  const failAll = (err: Error) => {
    for (const p of pending.values()) p.reject(err);
    pending.clear();
    worker = undefined;
  };

  const ensureWorker = (): Worker => {
    if (worker) return worker;
    const w = new Worker(paths.jsonParserWorker);
    w.unref();
    w.on('message', (m: JsonParserReply) => {
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      if ('value' in m) p.resolve({ value: m.value });
      else if ('text' in m) p.resolve({ text: m.text });
      else if ('problem' in m) p.reject(new AppError(m.problem.status, m.problem.code, m.problem.message, { errors: m.problem.errors }));
      else p.reject(new Error(`the JSON parser thread failed: ${m.failure}`));
    });
    w.on('error', failAll);
    w.on('exit', () => {
      if (worker === w) failAll(new Error('the JSON parser thread stopped'));
    });
    worker = w;
    return w;
  };

  return {
    parse(bytes, exactIntegers) {
      const w = ensureWorker();
      const id = nextId++;
      count++;
      // A body read in one piece owns its memory, which then moves to the thread instead of being copied.
      const owned = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
      return new Promise<ParsedBody>((resolve, reject) => {
        pending.set(id, { resolve, reject });
        const task: JsonParserTask = { id, bytes, exactIntegers };
        w.postMessage(task, owned ? [bytes.buffer as ArrayBuffer] : []);
      });
    },
    parsed: () => count,
    async close() {
      const w = worker;
      worker = undefined;
      if (w) await w.terminate();
      failAll(new Error('the JSON parser thread was closed'));
    },
  };
}
