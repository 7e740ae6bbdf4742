// Parses large JSON request bodies off the main thread (src/http/json-parser-thread.ts): the UTF-8
// check, JSON.parse and the checks of parseJsonBody, the same functions the main thread uses for
// small bodies, so both give the same values and the same problems.
import { parentPort } from 'node:worker_threads';
import { AppError } from '../errors.ts';
import { hasUnsafeInteger } from '../exact-json.ts';
import { decodeUtf8, parseJsonBody } from './request-body.ts';
import type { JsonParserReply, JsonParserTask } from './json-parser-thread.ts';
import { NICE, setThreadNice } from '../thread-priority.ts';

// Below the event loop's priority: while the cores are busy, the requests' own work goes first and
// the large body waits (its sender waits anyway); on an idle machine it parses as fast as before.
setThreadNice(NICE.largeBodyParsing);

parentPort!.on('message', ({ id, bytes, exactIntegers }: JsonParserTask) => {
  let reply: JsonParserReply;
  try {
    const text = decodeUtf8(bytes);
    const value = parseJsonBody(text);
    // An integer beyond 2^53−1 is kept as its digits (JSON.rawJSON), which a message cannot carry:
    // the main thread parses such a body itself (rare: no field of the API is such a number).
    reply = exactIntegers && hasUnsafeInteger(value) ? { id, text } : { id, value };
  } catch (err) {
    reply =
      err instanceof AppError
        ? { id, problem: { status: err.status, code: err.code, message: err.message, errors: err.errors } }
        : { id, failure: err instanceof Error ? err.message : String(err) };
  }
  parentPort!.postMessage(reply);
});
