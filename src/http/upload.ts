import { createWriteStream, mkdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type Koa from 'koa';
import { koaBody } from 'koa-body';
import { AppError, badRequest, tooLarge, unsupportedMediaType } from '../errors.ts';
import { isStorageFullError } from '../storage/db.ts';
import type { FileSpace } from '../storage/free-space.ts';
import { hasBody } from './request-body.ts';

const NOT_STORED = 'The server could not store the upload (disk full or I/O error); nothing was imported.';

/**
 * Multipart upload of one file, streamed to disk by formidable (koa-body runs it only on the
 * routes that call this, RELIABILITY.md I1), into a file only its owner may read (0600). Each request writes into its own temporary folder,
 * removed when `release()` is called, so a rejected or aborted upload leaves nothing behind.
 */

export interface Upload {
  /** Where the file is on disk (inside the request's temporary folder). */
  path: string;
  fileName: string;
  size: number;
  fields: Record<string, string>;
  /** Removes the temporary folder (call when done, whatever happened). */
  release(): void;
}

/** A size as people read it, the exact bytes after it: "512 MiB (536870912 bytes)" (a web tester read 536870912 bytes). */
const sizeText = (bytes: number): string => {
  const [value, unit] = bytes >= 1024 ** 3 ? [bytes / 1024 ** 3, 'GiB'] : bytes >= 1024 ** 2 ? [bytes / 1024 ** 2, 'MiB'] : [bytes / 1024, 'KiB'];
  return `${Number.isInteger(value) ? value : value.toFixed(1)} ${unit} (${bytes} bytes)`;
};

// formidable error codes → answers (formidable/src/FormidableError.js)
const TOO_LARGE: Record<number, (maxBytes: number) => string> = {
  1006: () => 'The form fields are too large.',
  1007: () => 'The form has too many fields.',
  1009: (max) => `The file is larger than the upload limit of ${sizeText(max)}.`,
  1016: (max) => `The file is larger than the upload limit of ${sizeText(max)}.`,
  1015: () => 'Send exactly one file, in the field "file".',
};

// formidable error codes of a body that is not a readable form → what the client should do
const UNREADABLE: Record<number, string> = {
  1012: 'The multipart body ends before its closing boundary: the upload was cut off or the form is malformed. Send the whole form again.',
  1013: 'The Content-Type multipart/form-data names no boundary; let the HTTP client build the form (curl -F "file=@contacts.csv").',
  1014: 'The Transfer-Encoding of the upload is not one this server reads; send the form with Content-Length or chunked.',
};

/** `space`: told when an upload is refused for lack of space and when one is stored whole (/readyz's diskSpace). */
export async function receiveUpload(ctx: Koa.Context, opts: { tmpRoot: string; maxBytes: number; fields: string[]; space?: FileSpace }): Promise<Upload> {
  // type-is answers "not multipart" for a request without a body, whatever its Content-Type says
  if (ctx.request.type === 'multipart/form-data' && !hasBody(ctx)) throw badRequest('missing_file', 'The upload is empty; send the file in the multipart field "file".');
  if (!ctx.is('multipart/form-data')) throw unsupportedMediaType(`Send the file as multipart/form-data (field "file"), not ${ctx.get('Content-Type') || 'without a Content-Type'}.`);
  // the form is read as it comes: a compressed one would be read as a malformed form, and one whose
  // coding is not applied at all as a plain one (RFC 9110 §15.5.16: 415 for a coding not taken)
  const coding = ctx.get('Content-Encoding').trim().toLowerCase();
  if (coding && coding !== 'identity') throw unsupportedMediaType(`An upload is sent without a Content-Encoding (it has "${coding}"); send the form uncompressed.`);
  const dir = join(opts.tmpRoot, `${Date.now()}-${(ctx.state.requestId as string).replace(/[^A-Za-z0-9_-]/g, '').slice(0, 40)}-${Math.random().toString(36).slice(2, 8)}`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const release = () => rmSync(dir, { recursive: true, force: true });
  // files sent in a field of another name than "file": read as text and refused by that name
  const filesInOtherFields: string[] = [];
  let fileSeen = false;
  let namelessPart = false;
  const misplacedFile = (name: string) => badRequest('missing_file', `The file must be sent in the multipart field "file", not "${name.slice(0, 100)}".`, [{ path: name.slice(0, 100), message: 'is not a known field' }]);
  const unknownField = (name: string) => badRequest('invalid_parameter', `"${name.slice(0, 100)}" is not a known form field (known: file, ${opts.fields.join(', ')}).`, [{ path: name.slice(0, 100), message: 'is not a known field' }]);
  // RFC 7578 §4.2: every part names its field (curl -F "=@x.csv" sends none; formidable called it "null")
  const nameless = () => badRequest('malformed_body', 'A part of the form has no name; send the file in the multipart field "file" (curl -F "file=@contacts.csv").');
  /** What a form whose text went over maxFieldsSize is refused with: a file in the wrong field is the trouble, whatever its size. */
  const misfiled = () => (namelessPart ? nameless() : filesInOtherFields.length === 0 ? null : fileSeen ? unknownField(filesInOtherFields[0]!) : misplacedFile(filesInOtherFields[0]!));
  const parse = koaBody({
    multipart: true,
    json: false,
    urlencoded: false,
    text: false,
    formidable: {
      uploadDir: dir,
      maxFiles: 1,
      maxFileSize: opts.maxBytes,
      maxTotalFileSize: opts.maxBytes,
      maxFields: 10,
      maxFieldsSize: 256 * 1024,
      allowEmptyFiles: true,
      minFileSize: 0,
      keepExtensions: false,
      // the file as formidable would write it, but for its owner alone (0600) whatever the umask:
      // formidable's own stream takes the umask's mode (0666 under umask 000), and the import
      // keeps the file, renamed, in the data folder's uploads/ while its job runs
      fileWriteStreamHandler: (file) => createWriteStream((file as unknown as { filepath: string }).filepath, { flags: 'wx', mode: 0o600 }),
      // formidable takes a part for a file only when it has a Content-Type, and for a field
      // otherwise. Read parts by their name instead: "file" is the file even without a type (RFC
      // 7578 §4.4: it defaults to text/plain; some clients leave it out, and `curl -F "file=<x.csv"`
      // sends no filename either), and a known text field is text even when sent as a file
      // (`curl -F mapping=@mapping.json`). A file in a field of any other name is read as text
      // too (at most maxFieldsSize), so that it is refused by its name below (a mistyped
      // `-F Mapping=@mapping.json`), not counted as a second file (413).
      onPart: (part, handle) => {
        if (part.name === 'file') {
          part.mimetype ||= 'text/plain';
          fileSeen = true;
        } else if (part.name === null) {
          namelessPart = true;
          part.mimetype = null; // read as text (bounded), refused below
        } else if (opts.fields.includes(part.name)) part.mimetype = null;
        // a file: a type, or a filename without one (a tester's hand-made part was told the upload had no file)
        else if (part.mimetype || part.originalFilename) {
          filesInOtherFields.push(part.name);
          part.mimetype = null;
        }
        void handle(part);
      },
    },
    onError: (err) => {
      // Do not leave the client writing into a closed socket (koajs/koa-body#253).
      const stopReading = () => {
        ctx.set('Connection', 'close');
        ctx.req.resume();
      };
      // the file could not be written where uploads go (a full disk): the server's trouble, not the
      // request's (a tester's case: 400 "the multipart body cannot be read as a form")
      if (isStorageFullError(err) || isStorageFullError((err as { cause?: unknown }).cause)) {
        stopReading();
        throw new AppError(507, 'insufficient_storage', NOT_STORED);
      }
      const code = (err as { code?: number }).code ?? 0;
      // a file too large for a text field: the trouble is its field, whatever its size
      const misfiledError = code === 1006 ? misfiled() : null;
      if (misfiledError) {
        stopReading();
        throw misfiledError;
      }
      const message = TOO_LARGE[code];
      if (message) {
        stopReading();
        throw tooLarge(message(opts.maxBytes));
      }
      // formidable's own message describes its parser's state, not the client's request
      throw badRequest('malformed_body', UNREADABLE[code] ?? 'The multipart body cannot be read as a form; send the file in the multipart field "file".');
    },
  });
  try {
    await parse(ctx, async () => undefined);
  } catch (err) {
    release();
    if (err instanceof AppError && err.status === 507) opts.space?.refused(opts.tmpRoot);
    throw err;
  }
  const file = (ctx.request.files ?? {}).file;
  if (namelessPart) {
    release();
    throw nameless();
  }
  if (!file && filesInOtherFields.length > 0) {
    release();
    throw misplacedFile(filesInOtherFields[0]!);
  }
  // (a file in any other field was read as text above, and a second one here is formidable's 1015)
  if (!file || Array.isArray(file)) {
    release();
    throw badRequest('missing_file', file ? 'Send exactly one file, in the field "file".' : 'The upload has no file; send it in the multipart field "file".');
  }
  // a write that failed (a full disk) leaves the file shorter than what was received, without an
  // error reaching here: it was read as an empty or cut file (a tester's case: 422 "the file is empty")
  if ((statSync(file.filepath, { throwIfNoEntry: false })?.size ?? -1) !== file.size) {
    release();
    opts.space?.refused(opts.tmpRoot);
    throw new AppError(507, 'insufficient_storage', NOT_STORED);
  }
  opts.space?.stored();
  const body = (ctx.request.body ?? {}) as Record<string, unknown>;
  const fields: Record<string, string> = {};
  for (const [k, v] of Object.entries(body)) {
    if (!opts.fields.includes(k)) {
      release();
      throw unknownField(k);
    }
    if (typeof v !== 'string') {
      release();
      throw badRequest('invalid_parameter', `The form field "${k}" is given more than once.`, [{ path: k, message: 'is given more than once' }]);
    }
    fields[k] = v;
  }
  // the name without the folders a client may send with it (`../../x.csv` as `C:\Users\x.csv`) and
  // without control or format characters (a right-to-left override); none, or only `.` or `..`: upload.csv
  return { path: file.filepath, fileName: uploadedFileName(file.originalFilename ?? '') ?? 'upload.csv', size: file.size, fields, release };
}

/**
 * The name a client gave an uploaded file, as it is kept and shown: its last path segment (a
 * browser on Windows may send C:\fakepath\x.csv), without control or format characters, at most
 * 255 characters; undefined when nothing is left of it (empty, `.` or `..`).
 */
export function uploadedFileName(given: string): string | undefined {
  const name = given.split(/[\\/]/).pop()!.replace(/[\p{Cc}\p{Cf}]/gu, '').trim();
  return /^\.{0,2}$/.test(name) ? undefined : name.slice(0, 255);
}

/**
 * A raw request body streamed to `path`, at most `maxBytes` (413 beyond, and the partial file is
 * removed). Returns the number of bytes written. `space`, as for receiveUpload: told when the body
 * is refused for lack of space and when one is stored whole (/readyz's diskSpace).
 */
export async function receiveBodyToFile(ctx: Koa.Context, path: string, maxBytes: number, space?: FileSpace): Promise<number> {
  const { pipeline } = await import('node:stream/promises');
  const { Transform } = await import('node:stream');
  let bytes = 0;
  const limit = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      bytes += chunk.length;
      if (bytes > maxBytes) cb(tooLarge(`The body is larger than the limit of ${maxBytes} bytes.`));
      else cb(null, chunk);
    },
  });
  try {
    await pipeline(ctx.req, limit, createWriteStream(path, { mode: 0o600 }));
  } catch (err) {
    rmSync(path, { force: true });
    // whatever stopped it (too large, a full disk), the body was not read to its end: the
    // connection closes after the answer. Kept open, a keep-alive client's next request on it
    // could hang behind the rest of this body (a full-disk test's /readyz did, now and then).
    ctx.set('Connection', 'close');
    if (!ctx.req.destroyed) ctx.req.resume();
    if (isStorageFullError(err)) space?.refused(dirname(path));
    throw err;
  }
  space?.stored();
  return bytes;
}
