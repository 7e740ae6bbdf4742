import { AppError, type FieldError } from '../errors.ts';
import { paths } from '../paths.ts';
import { workerCalls } from '../worker-calls.ts';

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
  const calls = workerCalls<Omit<JsonParserTask, 'id'>, JsonParserReply>(paths.jsonParserWorker, 'the JSON parser thread');
  let count = 0;
  return {
    async parse(bytes, exactIntegers) {
      count++;
      // A body read in one piece owns its memory, which then moves to the thread instead of being copied.
      const owned = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
      const m = await calls.call({ bytes, exactIntegers }, owned ? [bytes.buffer as ArrayBuffer] : []);
      if ('value' in m) return { value: m.value };
      if ('text' in m) return { text: m.text };
      if ('problem' in m) throw new AppError(m.problem.status, m.problem.code, m.problem.message, { errors: m.problem.errors });
      throw new Error(`the JSON parser thread failed: ${m.failure}`);
    },
    parsed: () => count,
    close: () => calls.close(),
  };
}
