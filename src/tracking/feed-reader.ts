import { createReadStream } from 'node:fs';
import { createGunzip } from 'node:zlib';
import { CsvError, parse } from 'csv-parse';
import { fitToHeader, holdsOnlySpaces, isBlankRecord, lineBreaksIn, namedWidth, wrongWidth } from '../csv/read-rows.ts';
import { RecordLimiter } from '../csv/record-limit.ts';
import { headerDelimiter, sepLine, wideTextEncoding } from '../csv/scan.ts';
import { ADDRESS_BOOK_ALIASES, ALIASES, headerKey } from '../csv/columns.ts';
import { firstDuplicateKey, hasLoneSurrogate } from '../exact-json.ts';
import { invalidUtf8At, utf8OrUndefined } from '../utf8.ts';
import { pipeline, Readable, Transform } from 'node:stream';

/**
 * Streams the records of a feed file (NDJSON, CSV with a header, or a JSON array; optionally
 * gzip), never holding the file in memory. Each item is a parsed value or a parse error with its
 * line. A damaged file (truncated gzip, unclosed array) throws FeedReadError.
 */

export const FEED_FORMATS = ['ndjson', 'csv', 'json'] as const;
export type FeedFormat = (typeof FEED_FORMATS)[number];

export type FeedItem = { line: number; value: unknown } | { line: number; error: string };

export class FeedReadError extends Error {
  override name = 'FeedReadError';
}

/** A taken inbox file that ends before the size it had when taken: cut since (feed-files.ts says how). */
export class TakenFileCutError extends FeedReadError {}

/**
 * The bytes of `input`, failing at their end when there are fewer than `size`: the file was cut
 * after it was taken, and its last line, now without its line break, is never read as a record
 * (a record cut after "Hoo" of "Hooli" would be a false job change).
 */
function atLeast(input: Readable, size: number): Readable {
  let seen = 0;
  const counted = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      seen += chunk.length;
      cb(null, chunk);
    },
    flush(cb) {
      cb(seen < size ? new TakenFileCutError(`the file has ${seen} bytes, fewer than the ${size} it had when taken`) : null);
    },
  });
  input.on('error', (e: Error) => counted.destroy(e));
  return input.pipe(counted);
}

/** The file's bytes (its first `size` only, when given: the file as it was taken), unzipped when `gzip`. */
function open(path: string, gzip: boolean, size: number | null): Readable {
  const file = size === null ? createReadStream(path, { highWaterMark: 1 << 20 }) : atLeast(size === 0 ? Readable.from([]) : createReadStream(path, { highWaterMark: 1 << 20, end: size - 1 }), size);
  if (!gzip) return file;
  const gunzip = createGunzip();
  file.on('error', (e: Error) => gunzip.destroy(e));
  return file.pipe(gunzip);
}

const readError = (err: unknown) => {
  const e = err as NodeJS.ErrnoException;
  if (e.code === 'Z_BUF_ERROR' || /unexpected end of file/i.test(e.message)) return new FeedReadError('the gzip file is truncated');
  if (e.code?.startsWith('Z_')) return new FeedReadError(`the gzip file is damaged (${e.message})`);
  if (err instanceof CsvError) return new FeedReadError(`line ${(err as { lines?: number }).lines ?? '?'}: the CSV cannot be read (${e.code})`);
  return err;
};

/** The longest record a feed may hold (a line of NDJSON, an element of a JSON array, a CSV record). */
export const MAX_FEED_RECORD_BYTES = 1 << 20;

/**
 * Lines of a byte stream (LF, CRLF or a lone CR) with their line numbers, as text or as the reason
 * they cannot be read: a line longer than MAX_FEED_RECORD_BYTES (its bytes are skipped, never
 * held, so that one endless line can neither exhaust memory nor hide the records after it), or
 * one that is not valid UTF-8 (never read with U+FFFD put in: a name is stored as sent or not at all).
 */
async function* lines(input: Readable): AsyncGenerator<{ line: number; text: string } | { line: number; error: string }> {
  let line = 0;
  let parts: Buffer[] = [];
  let size = 0;
  let tooLong = false;
  let prevCR = false;
  const take = (): { line: number; text: string } | { line: number; error: string } => {
    line++;
    let item: { line: number; text: string } | { line: number; error: string };
    if (tooLong) item = { line, error: `the line is longer than ${MAX_FEED_RECORD_BYTES} bytes` };
    else {
      const bytes = parts.length === 1 ? parts[0]! : Buffer.concat(parts, size);
      let text = utf8OrUndefined(bytes, true);
      if (text === undefined) item = { line, error: `the line is not valid UTF-8 (byte ${invalidUtf8At(bytes) + 1} of the line)` };
      else {
        // A UTF-8 byte order mark: the file's, and at the start of any later line that of a file
        // joined on (`cat a.jsonl b.jsonl`, b saved with one) — no JSON record begins with one, and
        // the line was lost as "not valid JSON" (a feed tester's case).
        if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
        item = { line, text };
      }
    }
    parts = [];
    size = 0;
    tooLong = false;
    return item;
  };
  const add = (b: Buffer) => {
    if (tooLong || b.length === 0) return;
    size += b.length;
    if (size > MAX_FEED_RECORD_BYTES) {
      tooLong = true;
      parts = [];
    } else parts.push(b);
  };
  for await (const chunk of input as AsyncIterable<Buffer>) {
    let pos = 0;
    if (prevCR && chunk[0] === 0x0a) pos = 1; // the LF of a CRLF split across chunks
    prevCR = false;
    let cr = chunk.indexOf(0x0d, pos);
    while (pos < chunk.length) {
      if (cr !== -1 && cr < pos) cr = chunk.indexOf(0x0d, pos); // -1 stays -1: no CR left in the chunk
      const lf = chunk.indexOf(0x0a, pos);
      const end = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
      if (end === -1) {
        add(chunk.subarray(pos));
        break;
      }
      add(chunk.subarray(pos, end));
      yield take();
      pos = end + 1;
      if (end === cr) {
        if (pos === chunk.length) prevCR = true;
        else if (chunk[pos] === 0x0a) pos++;
      }
    }
  }
  if (size > 0 || tooLong) yield take();
}

async function* ndjson(input: Readable): AsyncGenerator<FeedItem> {
  for await (const l of lines(input)) {
    if ('error' in l) {
      yield l;
      continue;
    }
    if (!l.text.trim()) continue;
    yield parseRecord(l.text, l.line, 'line');
  }
}

// Feed CSV headers map case- and space-insensitively onto the record's field names, and the fields
// a contact upload knows by other names too (`LinkedIn URL`, `Job Title`, `Email Address`…, src/csv/columns.ts):
// a column of such a name used to be ignored, and with it the key that decides matching. Quotes are
// read as for contact uploads: a stray quote inside an unquoted field is a literal character.
const FEED_FIELDS = ['personId', 'linkedin', 'email', 'emailStatus', 'name', 'company', 'title', 'location', 'jobStartedAt', 'hasMultipleJobs', 'observedAt'];
const FIELD_BY_KEY = new Map([
  ...(['name', 'company', 'title', 'location', 'email', 'linkedin'] as const).flatMap((f) => ALIASES[f].filter((a) => !a.startsWith('import') && !ADDRESS_BOOK_ALIASES.has(a)).map((a) => [a, f] as const)),
  ...FEED_FIELDS.map((f) => [headerKey(f), f] as const),
]);

/** The columns that give the name together when no column gives it whole (not record fields: a record never has them). */
const FIRST_NAME = ' first name';
const LAST_NAME = ' last name';

/** The stream's first bytes, left in the stream (null when it is empty). */
async function peek(input: Readable): Promise<Buffer | null> {
  for (;;) {
    const chunk = input.read() as Buffer | null;
    if (chunk) {
      input.unshift(chunk);
      return chunk;
    }
    if (input.readableEnded || input.destroyed) return null;
    await new Promise<void>((resolve, reject) => {
      const done = () => {
        input.off('readable', done).off('end', done).off('error', fail);
        resolve();
      };
      const fail = (err: Error) => {
        input.off('readable', done).off('end', done).off('error', fail);
        reject(err);
      };
      input.on('readable', done).on('end', done).on('error', fail);
    });
  }
}

/**
 * CSV with a header row; the delimiter (`,` `;` or tab) is voted on the header line, or named by a
 * `sep=` first line, as for contact uploads. Line numbers are where a record starts; a line break inside a quoted field
 * (CRLF, LF or a lone CR) counts once, as in contact uploads.
 */
async function* csv(input: Readable): AsyncGenerator<FeedItem> {
  const head = await peek(input);
  // an Excel `sep=;` first line names the delimiter and is no header, as in contact uploads
  const sep = head ? sepLine(head) : undefined;
  let sepPending = sep !== undefined;
  const delimiter = sep?.delimiter ?? (head ? headerDelimiter(head) : ',');
  const limiter = new RecordLimiter(delimiter.charCodeAt(0), MAX_FEED_RECORD_BYTES);
  const parser = parse({ bom: true, delimiter, relax_column_count: true, relax_quotes: true, max_record_size: MAX_FEED_RECORD_BYTES, record_delimiter: ['\r\n', '\n', '\r'] });
  // pipeline, not pipe: an error of the input (a truncated gzip) must reach the loop below
  pipeline(input, limiter, parser, () => {});
  let header: (string | undefined)[] | undefined;
  let needed = 0;
  let named = 0;
  let nextLine = 1;
  try {
    for await (const record of parser as AsyncIterable<string[]>) {
      const line = nextLine;
      const skipped = limiter.skipped(record);
      if (skipped) {
        nextLine += 1 + skipped.breaks;
        const what = skipped.why === 'long' ? `longer than ${MAX_FEED_RECORD_BYTES} bytes` : 'not valid UTF-8';
        if (!header) throw new FeedReadError(`line ${line}: the header row is ${what}`);
        yield { line, error: `the record is ${what}` };
        continue;
      }
      nextLine += 1 + lineBreaksIn(record);
      if (sepPending) {
        sepPending = false;
        continue;
      }
      if (isBlankRecord(record)) continue; // an empty line, `,,,`
      // cells of spaces alone above the header, as a sheet with blank rows at its top exports them (as in contact uploads)
      if (!header && holdsOnlySpaces(record)) continue;
      if (!header) {
        header = record.map((h) => FIELD_BY_KEY.get(headerKey(h)));
        // two columns for one field ("company" and "employer"): which one holds it is anybody's guess
        const twice = header.findIndex((f, i) => f !== undefined && header!.indexOf(f) < i);
        if (twice >= 0) throw new FeedReadError(`line ${line}: columns "${record[header.indexOf(header[twice])]!.trim()}" and "${record[twice]!.trim()}" both give ${header[twice]}; rename or remove one`);
        // no name column: a first-name and a last-name column give it, as in contact uploads (SPEC §4.3)
        if (!header.includes('name')) {
          const keys = record.map(headerKey);
          const find = (aliases: string[]) => aliases.map((a) => keys.indexOf(a)).find((i) => i >= 0 && header![i] === undefined);
          const [first, last] = [find(ALIASES.firstName), find(ALIASES.lastName)];
          if (first !== undefined && last !== undefined) [header[first], header[last]] = [FIRST_NAME, LAST_NAME];
        }
        needed = namedWidth(header);
        named = namedWidth(record);
        continue;
      }
      // cells may be missing past the last column the feed reads, or empty past the header's named columns (a trailing separator)
      const cells = fitToHeader(record, header.length, needed, named);
      if (!cells) {
        yield { line, error: wrongWidth(record.length, named) };
        continue;
      }
      const value: Record<string, string> = {};
      header.forEach((f, i) => {
        if (f && cells[i] !== '') value[f] = cells[i]!;
      });
      if (FIRST_NAME in value || LAST_NAME in value) {
        // a name made of two cells is ours to join: each part trimmed, one space between
        const name = [value[FIRST_NAME] ?? '', value[LAST_NAME] ?? ''].map((part) => part.trim()).filter(Boolean).join(' ');
        delete value[FIRST_NAME];
        delete value[LAST_NAME];
        if (name) value.name = name;
      }
      yield { line, value };
    }
  } catch (err) {
    // said in words, with the line the record starts on as the limiter counted it (the records the
    // parser had read past are dropped with its error, so `nextLine` is no better)
    if (err instanceof CsvError && err.code === 'CSV_QUOTE_NOT_CLOSED') {
      const line = limiter.unclosedQuoteLine ?? (err as { lines?: number }).lines ?? '?';
      throw new FeedReadError(`a quoted field opened on line ${line} is never closed (the file ends inside it)`);
    }
    throw err;
  }
}

/** JSON's whitespace (RFC 8259 §2): space, tab, LF, CR. */
const isSpace = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
const BOM = [0xef, 0xbb, 0xbf];

/**
 * A JSON array of records, split into its elements while streaming, byte by byte (the characters
 * that shape JSON are all ASCII). An element that is not an object (a string, a number, null…),
 * is longer than MAX_FEED_RECORD_BYTES (its bytes are dropped as they come) or is not valid UTF-8
 * is an error item with its line, like a bad NDJSON line; only a file that is not an array at all,
 * or whose array never closes, fails as a whole. A document that is one object is one record
 * (`POST /feed` of a single person as application/json).
 */
async function* jsonArray(input: Readable): AsyncGenerator<FeedItem> {
  let line = 1;
  let depth = 0; // 1 inside the array, 2+ inside an element
  let single = false; // the document is one object, not an array
  let inString = false;
  let escaped = false;
  let started = false;
  let ended = false;
  let offset = 0; // bytes of the file before the current chunk
  let bom = 0; // bytes of a byte order mark at the start of the file
  let parts: Buffer[] = [];
  let size = 0;
  let tooLong = false;
  let scalar = false; // an element that is not an object or array is being skipped
  // an element must come next (after "[" or a comma); a comma was seen in the array
  let expectElement = true;
  let sawComma = false;
  let missingComma = false; // the element being read came without a comma after the one before
  let startLine = 1;
  const keep = (b: Buffer) => {
    if (tooLong) return;
    size += b.length;
    if (size > MAX_FEED_RECORD_BYTES) {
      tooLong = true;
      parts = [];
    } else parts.push(b);
  };
  const element = (): FeedItem => {
    let item: FeedItem;
    // not applied: where one element ends and the next begins is a guess (the count stays the elements')
    if (missingComma) item = { line: startLine, error: 'a comma is missing before this element' };
    else if (scalar) item = { line: startLine, error: 'a record must be an object' };
    else if (tooLong) item = { line: startLine, error: `the element is longer than ${MAX_FEED_RECORD_BYTES} bytes` };
    else {
      const bytes = parts.length === 1 ? parts[0]! : Buffer.concat(parts, size);
      const text = utf8OrUndefined(bytes, true);
      item = text === undefined ? { line: startLine, error: `the element is not valid UTF-8 (byte ${invalidUtf8At(bytes) + 1} of the element)` } : parseElement(text, startLine);
    }
    parts = [];
    size = 0;
    tooLong = false;
    scalar = false;
    missingComma = false;
    return item;
  };
  for await (const chunk of input as AsyncIterable<Buffer>) {
    let from = 0; // where the current element's bytes begin in this chunk
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i]!;
      if (b === 0x0a) line++;
      if (inString) {
        if (escaped) escaped = false;
        else if (b === 0x5c) escaped = true;
        else if (b === 0x22) inString = false;
        continue;
      }
      if (!started) {
        if (bom < 3 && offset + i === bom && b === BOM[bom]) {
          bom++;
          continue;
        }
        if (isSpace(b)) continue;
        started = true;
        if (b === 0x7b) {
          single = true;
          startLine = line;
          from = i;
          depth = 2;
        } else if (b === 0x5b) depth = 1;
        else throw new FeedReadError('a JSON feed must be an array of records, or one record (an object)');
        continue;
      }
      if (ended) {
        if (!isSpace(b)) throw new FeedReadError(`unexpected text after the end of the ${single ? 'record' : 'array'} (line ${line})`);
        continue;
      }
      if (depth === 1) {
        if (b === 0x2c || b === 0x5d) {
          if (scalar) yield element();
          // a stray comma is damage (a file cut and joined, a line deleted): said, never passed over
          if (expectElement && (b === 0x2c || sawComma)) yield { line, error: b === 0x2c ? 'an empty element: two commas in a row, or a comma right after "["' : 'a comma right before "]"' };
          if (b === 0x5d) {
            ended = true;
            depth = 0;
          }
          expectElement = true;
          sawComma = true;
          continue;
        }
        if (isSpace(b)) continue;
        if (b === 0x7b || b === 0x5b) {
          missingComma = !expectElement;
          expectElement = false;
          startLine = line;
          from = i;
          depth = 2;
          continue;
        }
        if (!scalar) {
          missingComma = !expectElement;
          expectElement = false;
          scalar = true;
          startLine = line;
        }
        if (b === 0x22) inString = true;
        continue;
      }
      if (b === 0x22) inString = true;
      else if (b === 0x7b || b === 0x5b) depth++;
      else if (b === 0x7d || b === 0x5d) {
        depth--;
        if (depth === 1) {
          keep(chunk.subarray(from, i + 1));
          yield element();
          if (single) {
            ended = true;
            depth = 0;
          }
        }
      }
    }
    if (depth >= 2) keep(chunk.subarray(from));
    offset += chunk.length;
  }
  if (!started) throw new FeedReadError('the file is empty');
  if (!ended) throw new FeedReadError(`the JSON ${single ? 'record' : 'array'} is not closed (is the file complete?)`);
}

const parseElement = (text: string, line: number): FeedItem => parseRecord(text, line, 'element');

/** One JSON record of a feed, or an error item: not JSON, or a key given twice (JSON.parse would keep the last silently). */
function parseRecord(text: string, line: number, what: 'line' | 'element'): FeedItem {
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch {
    return { line, error: `the ${what} is not valid JSON` };
  }
  if (hasLoneSurrogate(text, value)) return { line, error: `the ${what} holds half a UTF-16 surrogate pair (a \\ud800–\\udfff escape alone), which is no character` };
  const twice = firstDuplicateKey(text);
  return twice === undefined ? { line, value } : { line, error: `the ${what} gives "${twice.slice(0, 100)}" more than once` };
}

/**
 * The feed's items in order (a resumed feed passes over the ones it applied: feed-service.ts).
 * With `size`, only the file's first `size` bytes are read: an inbox file is read as it was when
 * taken, so that what a writer that went on after a pause adds meanwhile (a CSV record cut after
 * "Hoo" of "Hooli") is never read as a record.
 */
export async function* readFeed(path: string, format: FeedFormat, gzip: boolean, size: number | null = null): AsyncGenerator<FeedItem> {
  const input = open(path, gzip, size);
  try {
    const head = await peek(input);
    const wide = head && wideTextEncoding(head);
    if (wide) throw new FeedReadError(`the file is ${wide}; save it as UTF-8`);
    // still gzip after the one decompression: compressed twice (`gzip` of a .gz), which read as
    // "line 1 is not valid UTF-8" (a feed tester's case)
    if (gzip && head && head[0] === 0x1f && head[1] === 0x8b) throw new FeedReadError('the file is gzip-compressed twice; decompress it once and send it again');
    // a JSON body sent as CSV: its first record was taken for the header, and counted nowhere
    if (format === 'csv' && head && /^(?:\uFEFF)?\s*(?:\{\s*"|\[\s*[{\]])/.test(head.subarray(0, 64).toString('utf8'))) {
      throw new FeedReadError('the file is JSON, not CSV (it begins with {" or [{); send it as NDJSON (application/x-ndjson) or a JSON array (application/json), or name it .jsonl or .json');
    }
    // a JSON array sent or named as NDJSON: its lines read one by one, only an element on a line of
    // its own without a comma after it (the last) was a record, and the job completed (a feed tester's case)
    if (format === 'ndjson' && head && /^(?:\uFEFF)?\s*\[/.test(head.subarray(0, 64).toString('utf8'))) {
      throw new FeedReadError('the file is a JSON array, not NDJSON (it begins with [); send it as a JSON array (application/json) or name it .json, or write one record a line');
    }
    yield* format === 'ndjson' ? ndjson(input) : format === 'csv' ? csv(input) : jsonArray(input);
  } catch (err) {
    throw readError(err);
  } finally {
    input.destroy();
  }
}
