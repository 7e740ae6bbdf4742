import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { createGunzip } from 'node:zlib';
import { CsvError, parse } from 'csv-parse';
import type { Readable } from 'node:stream';

/**
 * Streams the records of a feed file (NDJSON, CSV with a header, or a JSON array; optionally
 * gzip), never holding the file in memory. Each item is a parsed value or a parse error with its
 * line. A damaged file (truncated gzip, unclosed array) throws FeedReadError.
 */

export type FeedFormat = 'ndjson' | 'csv' | 'json';

export type FeedItem = { line: number; value: unknown } | { line: number; error: string };

export class FeedReadError extends Error {
  override name = 'FeedReadError';
}

function open(path: string, gzip: boolean): Readable {
  const file = createReadStream(path, { highWaterMark: 1 << 20 });
  if (!gzip) return file;
  const gunzip = createGunzip();
  file.on('error', (e) => gunzip.destroy(e));
  return file.pipe(gunzip);
}

const readError = (err: unknown) => {
  const e = err as NodeJS.ErrnoException;
  if (e.code === 'Z_BUF_ERROR' || /unexpected end of file/i.test(e.message)) return new FeedReadError('the gzip file is truncated');
  if (e.code?.startsWith('Z_')) return new FeedReadError(`the gzip file is damaged (${e.message})`);
  if (err instanceof CsvError) return new FeedReadError(`line ${(err as { lines?: number }).lines ?? '?'}: the CSV cannot be read (${e.code})`);
  return err;
};

async function* ndjson(input: Readable): AsyncGenerator<FeedItem> {
  let line = 0;
  for await (const text of createInterface({ input, crlfDelay: Infinity })) {
    line++;
    if (!text.trim()) continue;
    try {
      yield { line, value: JSON.parse(text) as unknown };
    } catch {
      yield { line, error: 'the line is not valid JSON' };
    }
  }
}

// Feed CSV headers map case- and space-insensitively onto the record's field names. Quotes are read
// as for contact uploads: a stray quote inside an unquoted field is a literal character.
const FEED_FIELDS = ['personId', 'linkedin', 'email', 'emailStatus', 'name', 'company', 'title', 'location', 'jobStartedAt', 'hasMultipleJobs', 'observedAt'];
const FIELD_BY_KEY = new Map(FEED_FIELDS.map((f) => [f.toLowerCase(), f]));

async function* csv(input: Readable): AsyncGenerator<FeedItem> {
  const parser = input.pipe(parse({ bom: true, info: true, relax_column_count: true, relax_quotes: true, skip_empty_lines: true, max_record_size: 1 << 20, record_delimiter: ['\r\n', '\n', '\r'] }));
  let header: (string | undefined)[] | undefined;
  for await (const { record, info } of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
    if (!header) {
      header = record.map((h) => FIELD_BY_KEY.get(h.trim().toLowerCase().replace(/[\s_-]+/g, '')));
      continue;
    }
    if (record.length !== header.length) {
      yield { line: info.lines, error: `the row has ${record.length} columns, the header has ${header.length}` };
      continue;
    }
    const value: Record<string, string> = {};
    header.forEach((f, i) => {
      if (f && record[i] !== '') value[f] = record[i]!;
    });
    yield { line: info.lines, value };
  }
}

/** A JSON array of objects, split into its elements while streaming. */
async function* jsonArray(input: Readable): AsyncGenerator<FeedItem> {
  input.setEncoding('utf8');
  let line = 1;
  let depth = 0;
  let inString = false;
  let escaped = false;
  let started = false;
  let ended = false;
  let buf = '';
  let startLine = 1;
  for await (const chunk of input as AsyncIterable<string>) {
    for (let i = 0; i < chunk.length; i++) {
      const ch = chunk[i]!;
      if (ch === '\n') line++;
      if (inString) {
        if (depth >= 2) buf += ch;
        if (escaped) escaped = false;
        else if (ch === '\\') escaped = true;
        else if (ch === '"') inString = false;
        continue;
      }
      if (!started) {
        if (/\s/.test(ch) || ch === '\ufeff') continue;
        if (ch !== '[') throw new FeedReadError('a JSON feed must be an array of records');
        started = true;
        depth = 1;
        continue;
      }
      if (ended) {
        if (!/\s/.test(ch)) throw new FeedReadError(`unexpected text after the end of the array (line ${line})`);
        continue;
      }
      if (ch === '"') {
        inString = true;
        if (depth >= 2) buf += ch;
        else throw new FeedReadError(`line ${line}: the array must contain objects`);
        continue;
      }
      if (ch === '{' || ch === '[') {
        if (depth === 1) {
          startLine = line;
          buf = '';
        }
        depth++;
        buf += ch;
        continue;
      }
      if (ch === '}' || ch === ']') {
        if (depth === 1 && ch === ']') {
          ended = true;
          depth = 0;
          continue;
        }
        depth--;
        buf += ch;
        if (depth === 1) {
          try {
            yield { line: startLine, value: JSON.parse(buf) as unknown };
          } catch {
            yield { line: startLine, error: 'the element is not valid JSON' };
          }
          buf = '';
        }
        continue;
      }
      if (depth >= 2) buf += ch;
      else if (ch !== ',' && !/\s/.test(ch)) throw new FeedReadError(`line ${line}: the array must contain objects`);
    }
  }
  if (!started) throw new FeedReadError('the file is empty');
  if (!ended) throw new FeedReadError('the JSON array is not closed (is the file complete?)');
}

/** The feed's items in order, after skipping the first `skip` records (resume). */
export async function* readFeed(path: string, format: FeedFormat, gzip: boolean, skip = 0): AsyncGenerator<FeedItem> {
  const input = open(path, gzip);
  const items = format === 'ndjson' ? ndjson(input) : format === 'csv' ? csv(input) : jsonArray(input);
  let n = 0;
  try {
    for await (const item of items) if (n++ >= skip) yield item;
  } catch (err) {
    throw readError(err);
  } finally {
    input.destroy();
  }
}
