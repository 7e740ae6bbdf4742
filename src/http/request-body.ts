import type Koa from 'koa';
import type { Readable } from 'node:stream';
import { createBrotliDecompress, createUnzip } from 'node:zlib';
import { AppError, badRequest, invalid, tooLarge, unsupportedMediaType } from '../errors.ts';
import { firstDuplicateKey, hasLoneSurrogate, outOfRangeNumber, someJsonValue } from '../exact-json.ts';
import { invalidUtf8At, utf8OrUndefined } from '../utf8.ts';

/**
 * Reading JSON and form request bodies (the declared routes of src/http/route.ts). The bytes are
 * decoded as strict UTF-8: a body that is not valid UTF-8 is a 400 naming the byte where it goes
 * wrong, never text with U+FFFD put in (koa-body, which read these bodies before, decodes with
 * replacement, so two different passwords could become the same text). Multipart uploads are
 * not read here (src/http/upload.ts); their CSV is scanned byte by byte (src/csv/scan.ts).
 */

/** Content codings a JSON or form body may come in, as koa-body took them (RFC 9110 §8.4). */
const DECOMPRESSORS: Record<string, () => NodeJS.ReadWriteStream> = {
  gzip: createUnzip,
  'x-gzip': createUnzip,
  deflate: createUnzip,
  br: createBrotliDecompress,
};

/** Whether the request carries a body: a non-zero Content-Length, or a Transfer-Encoding. */
export const hasBody = (ctx: Koa.Context) => (ctx.request.length ?? 0) > 0 || ctx.get('Transfer-Encoding') !== '';

/**
 * The bytes as text; 400 `malformed_body` when they are not valid UTF-8. `what` names them in the
 * message; a leading byte order mark is dropped unless `keepBom`.
 */
export function decodeUtf8(bytes: Uint8Array, what = 'The request body', keepBom = false): string {
  const text = utf8OrUndefined(bytes, keepBom);
  if (text === undefined) {
    const at = invalidUtf8At(bytes);
    throw badRequest('malformed_body', `${what} is not valid UTF-8 (byte ${at + 1} of ${bytes.length}); send the text encoded as UTF-8.`);
  }
  return text;
}

/**
 * The whole body as bytes, decompressed when a Content-Encoding says so, at most `limit` bytes
 * after decompression (413 with `tooLargeMessage` beyond: the rest of the request is read and
 * dropped, so that the client gets the answer instead of a reset connection). The request is not
 * destroyed on failure; a client that goes away ends the read with an error.
 */
export function readBody(ctx: Koa.Context, limit: number, tooLargeMessage: string): Promise<Buffer> {
  const req = ctx.req;
  const coding = ctx.get('Content-Encoding').trim().toLowerCase() || 'identity';
  const decompress = DECOMPRESSORS[coding];
  const drop = () => {
    req.unpipe();
    req.resume();
  };
  if (!decompress && coding !== 'identity') {
    drop();
    return Promise.reject(unsupportedMediaType(`Content-Encoding "${coding}" is not supported; send the body uncompressed or as ${Object.keys(DECOMPRESSORS).join(', ')}.`));
  }
  if (coding === 'identity' && (ctx.request.length ?? 0) > limit) {
    drop();
    return Promise.reject(tooLarge(tooLargeMessage));
  }
  const source: Readable = decompress ? (req.pipe(decompress()) as unknown as Readable) : req;
  return new Promise<Buffer>((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (err: AppError | null) => {
      if (settled) return;
      settled = true;
      source.off('data', onData).off('end', onEnd).off('error', onSourceError);
      req.off('close', onClose).off('error', onError);
      if (!err) return resolve(Buffer.concat(parts, size));
      parts.length = 0;
      if (source !== req) source.destroy();
      drop();
      reject(err);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) settle(tooLarge(tooLargeMessage));
      else parts.push(chunk);
    };
    const onEnd = () => settle(null);
    const onSourceError = () => settle(badRequest('malformed_body', source === req ? 'The request body could not be read to its end.' : `The request body is not valid ${coding} data.`));
    const onError = () => settle(badRequest('malformed_body', 'The request body could not be read to its end.'));
    // the client went away (or the request deadline cut it off) before the body ended
    const onClose = () => {
      if (!req.complete) settle(badRequest('malformed_body', 'The request body could not be read to its end.'));
    };
    source.on('data', onData).on('end', onEnd).on('error', onSourceError);
    if (source !== req) req.on('error', onError);
    req.on('close', onClose);
  });
}

/** A body that is only whitespace (or nothing) is "no body": the schema sees `{}`, as before. */
const BLANK = /^[\x20\x09\x0a\x0d]*$/;

/** A key JSON.parse keeps as an own property that merging code would take for the prototype (bourne's check). */
const SUSPECT_PROTO = /"(?:_|\\u005[Ff])(?:_|\\u005[Ff])(?:p|\\u0070)(?:r|\\u0072)(?:o|\\u006[Ff])(?:t|\\u0074)(?:o|\\u006[Ff])(?:_|\\u005[Ff])(?:_|\\u005[Ff])"\s*:/;

const hasProtoKey = (v: unknown) => someJsonValue(v, (x) => typeof x === 'object' && x !== null && Object.prototype.hasOwnProperty.call(x, '__proto__'));

const forbiddenKey = () => badRequest('malformed_body', 'The request body contains a forbidden key (__proto__).');

/**
 * The deepest nesting of arrays and objects a JSON body may have. The API's own bodies nest four
 * levels at most; deeper ones would only make every later walk over the value (validation,
 * JSON.stringify of stored rows) run out of stack.
 */
export const MAX_JSON_DEPTH = 64;
/** The most members an object of a request body may have (a batch is an array: its objects are small). */
export const MAX_OBJECT_MEMBERS = 1000;
const tooDeep = () => badRequest('malformed_body', `The request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels.`);

/** A JSON body's value (any JSON value; its shape is the schema's business), undefined when it is blank. 400 when it is not JSON. */
export function parseJsonBody(text: string, parse: (text: string) => unknown = JSON.parse): unknown {
  if (BLANK.test(text)) return undefined; // no body, as one of no bytes
  let value: unknown;
  try {
    value = parse(text);
  } catch (err) {
    if (err instanceof RangeError) throw tooDeep(); // a reviver's walk out of stack (src/exact-json.ts)
    // V8 says where ("… in JSON at position 12 (line 1 column 13)"); its snippet of the text is left out
    const where = /at position (\d+)(?: \(line (\d+) column (\d+)\))?/.exec((err as Error).message);
    const at = where ? (where[2] ? ` (line ${where[2]}, column ${where[3]})` : ` (at character ${Number(where[1]) + 1})`) : '';
    throw badRequest('malformed_body', `The request body is not valid JSON${at}.`);
  }
  if (someJsonValue(value, (_, depth) => depth > MAX_JSON_DEPTH)) throw tooDeep();
  // no object of this API has more than a few dozen fields: one with hundreds of thousands (a 4 MB
  // body of short keys) cost seconds of the event loop in validation and a 22 MB list of errors
  if (someJsonValue(value, (v) => typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length > MAX_OBJECT_MEMBERS)) {
    throw badRequest('malformed_body', `The request body holds an object with more than ${MAX_OBJECT_MEMBERS} members; no object of this API has that many.`);
  }
  const far = outOfRangeNumber(text, value);
  if (far !== undefined) {
    const shown = far.text.length > 40 ? `${far.text.slice(0, 37)}...` : far.text;
    throw badRequest('malformed_body', `The request body holds the number ${shown}, which a JSON number cannot carry here (it would be read as ${far.readAs === 0 ? '0' : 'infinity'}: beyond ±1.8e308 or below 5e-324); send it as a string.`);
  }
  if (SUSPECT_PROTO.test(text) && hasProtoKey(value)) throw forbiddenKey();
  if (hasLoneSurrogate(text, value)) throw badRequest('malformed_body', 'The request body holds half a UTF-16 surrogate pair (a \\ud800–\\udfff escape alone), which is no character; escape whole pairs or send the text as UTF-8.');
  const twice = firstDuplicateKey(text);
  if (twice !== undefined) throw invalid(`Invalid request body: ${twice.slice(0, 200)}: is given more than once.`, [{ path: twice.slice(0, 200), message: 'is given more than once' }]);
  return value;
}

/**
 * An application/x-www-form-urlencoded body (WHATWG URL "urlencoded parsing", except that
 * percent-escapes must make UTF-8, else 400): `+` is a space, `%XX` a byte, a `%` not followed by
 * two hex digits stays as it is; pairs without a name are skipped; a repeated name gives an array
 * (which the schemas refuse).
 */
export function parseFormBody(text: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const pair of text.split('&')) {
    if (!pair) continue;
    const eq = pair.indexOf('=');
    const name = formComponent(eq < 0 ? pair : pair.slice(0, eq));
    const value = eq < 0 ? '' : formComponent(pair.slice(eq + 1));
    if (!name) continue;
    if (name === '__proto__') throw forbiddenKey();
    const seen = Object.prototype.hasOwnProperty.call(out, name) ? out[name] : undefined;
    out[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
  }
  return out;
}

function formComponent(s: string): string {
  const text = decodeFormComponent(s);
  if (text === undefined) throw badRequest('malformed_body', 'A percent-encoded form field is not valid UTF-8 once decoded; send the text encoded as UTF-8.');
  return text;
}

/**
 * One name or value of application/x-www-form-urlencoded text, decoded as the WHATWG URL standard
 * (§5.1) does: `+` is a space, `%` not followed by two hex digits stays as it is. Undefined when
 * the bytes it names are not UTF-8, where that standard (and Node's querystring) put U+FFFD.
 */
export function decodeFormComponent(s: string): string | undefined {
  const spaced = s.includes('+') ? s.replace(/\+/g, ' ') : s;
  if (!spaced.includes('%')) return spaced;
  const bytes = Buffer.from(spaced, 'utf8');
  let n = 0;
  for (let i = 0; i < bytes.length; i++) {
    const h = i + 2 < bytes.length ? hexPair(bytes[i + 1]!, bytes[i + 2]!) : -1;
    if (bytes[i] === 0x25 && h >= 0) {
      bytes[n++] = h;
      i += 2;
    } else bytes[n++] = bytes[i]!;
  }
  return utf8OrUndefined(bytes.subarray(0, n), true);
}

function hexPair(a: number, b: number): number {
  const hex = (c: number) => (c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x41 && c <= 0x46 ? c - 0x37 : c >= 0x61 && c <= 0x66 ? c - 0x57 : -1);
  const x = hex(a);
  const y = hex(b);
  return x < 0 || y < 0 ? -1 : x * 16 + y;
}
