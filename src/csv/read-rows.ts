import { createReadStream } from 'node:fs';
import { pipeline } from 'node:stream';
import { CsvError, parse } from 'csv-parse';
import { mappedColumns, REJECTION_COLUMNS, repeatsHeader, rowToInput } from './columns.ts';
import { RecordLimiter } from './record-limit.ts';
import { unescapeFormula } from './write.ts';
import { isId } from '../ids.ts';
import { validateContact, type ContactDraft } from '../ledger/contact-input.ts';
import type { CsvFormat } from '../ledger/model.ts';

/**
 * Parses data rows of a stored upload from a resume point and validates them (runs in the CSV
 * worker thread, so the HTTP thread only stores rows). Rows come out in batches that each end on
 * a record boundary: the batch's `endBytes`/`endLine` is where a resumed job starts reading.
 */

/** The longest data row read, in bytes (without its line break); a longer one is rejected alone (LONG_ROW). */
export const MAX_RECORD_BYTES = 1 << 20;

/**
 * The reason of a row longer than MAX_RECORD_BYTES. Its bytes are dropped as they are read, never
 * held (src/csv/record-limit.ts), so its cells are not kept: the rejected-rows CSV gives it as
 * empty cells, as many as the file's columns, and the file has it at the row's line.
 */
export const LONG_ROW = `the row is longer than ${MAX_RECORD_BYTES} bytes (1 MiB); it is not imported, and its cells are not kept (shorten it in the file, at its line)`;

/** The reason of a row that repeats the header (columns.ts repeatsHeader). */
export const HEADER_AGAIN = 'the row repeats the header (two files joined into one?); it is not a contact';

export interface ResumePoint {
  /** Byte offset of the next unread record. */
  bytes: number;
  /** Line number of the last line already consumed. */
  lines: number;
}

/**
 * One data row: `line` is where it starts; `downloadedAs`, a contact id in its `id` column (a row
 * of a download of ours, however edited: the import takes a contact still in the ledger for a duplicate); `endBytes`/`endLine` is the resume point just after
 * it, so the runner may commit any prefix of a batch and record an exact resume point.
 */
export type CsvRow = ({ line: number; draft: ContactDraft; downloadedAs?: string } | { line: number; reason: string }) & { raw: string[]; endBytes: number; endLine: number };

export interface CsvBatch {
  rows: CsvRow[];
  endBytes: number;
  endLine: number;
}

export class CsvReadError extends Error {
  override name = 'CsvReadError';
  readonly line: number;
  constructor(message: string, line: number) {
    super(message);
    this.line = line;
  }
}

// Quotes are read with `relax_quotes` (a quote inside an unquoted field, or right after a closing
// quote, is a literal character, as spreadsheets read it), so what is left is a quote never closed;
// a row too long never reaches the parser (RecordLimiter), its limit is a backstop.
const REASONS: Record<string, string> = {
  CSV_QUOTE_NOT_CLOSED: 'a quoted field is never closed',
  CSV_MAX_RECORD_SIZE: `a row is longer than ${MAX_RECORD_BYTES} bytes`,
};

/**
 * A record none of whose cells holds a character: an empty line, `""`, or `,,,` — what spreadsheets
 * write for rows that are formatted but empty — or a line holding only Ctrl-Z (U+001A), the
 * end-of-file mark DOS-era tools still append. Skipped like an empty line, by the upload's scanner
 * (which counts exactly the records read here), the preview and the feed's CSV reader; a cell of
 * spaces is a value, so its row is read (and rejected for what it lacks).
 */
export const isBlankRecord = (record: readonly string[]): boolean =>
  record.every((cell) => cell === '') || (record.length === 1 && record[0] === '\x1a');

/**
 * A record whose cells hold white space alone (` , `): above the header such rows are passed over,
 * as a sheet with blank rows at its top exports them (scan.ts for uploads, feed-reader.ts for feeds).
 */
export const holdsOnlySpaces = (record: readonly string[]): boolean => record.every((cell) => cell.trim() === '');

/** Why a row with another number of cells than the header is rejected. */
export const wrongWidth = (cells: number, width: number): string => `the row has ${cells} column${cells === 1 ? '' : 's'}, the header has ${width}`;

/** How many leading columns of a header have a name: cells past them hold nothing anyone named. */
export const namedWidth = (header: readonly (string | undefined)[]): number => {
  let n = header.length;
  while (n > 0 && !header[n - 1]?.trim()) n--;
  return n;
};

/**
 * The record as wide as the header (`width` cells), or undefined when it cannot be without losing
 * or inventing data. A trailing separator is the usual difference, on the header (`Name;Company;`
 * over `A;B`) or on rows (`A;B;` under `Name;Company`): cells may be missing past the first
 * `needed` columns (those with a name, or that the reader uses), and cells past the header's
 * `named` columns (its trailing separators) or past its width may be there if they are empty. Any
 * other difference is a sign of a broken row: `Eve,Umbrella, Inc,CFO` under `Name,Company,Title,`
 * was imported as company "Umbrella", title "Inc", its CFO dropped (a tester's case).
 */
export function fitToHeader(record: string[], width: number, needed: number, named = needed): string[] | undefined {
  // (a cell of spaces holds no text: fields are trimmed, and "" is absent)
  for (let i = Math.max(named, needed); i < record.length; i++) if (record[i]!.trim() !== '') return undefined;
  if (record.length === width) return record;
  if (record.length < width) return record.length >= needed ? [...record, ...Array<string>(width - record.length).fill('')] : undefined;
  return record.slice(0, width);
}

/** Line breaks inside the fields of a record (quoted newlines): \r\n, \n and a lone \r each count once. */
export function lineBreaksIn(record: string[]): number {
  let n = 0;
  for (const field of record) {
    if (!field.length || (!field.includes('\n') && !field.includes('\r'))) continue;
    for (let i = 0; i < field.length; i++) {
      const c = field.charCodeAt(i);
      if (c === 10) n++;
      else if (c === 13 && field.charCodeAt(i + 1) !== 10) n++;
    }
  }
  return n;
}

/**
 * Reads batches of up to `batchRows` rows; `send` may wait (back-pressure). A row longer than
 * `recordLimit` (MAX_RECORD_BYTES; tests give a small one) is a rejected row (LONG_ROW). Throws CsvReadError.
 */
export async function readRows(path: string, format: CsvFormat, from: ResumePoint, batchRows: number, send: (b: CsvBatch) => Promise<void>, recordLimit = MAX_RECORD_BYTES): Promise<void> {
  const parser = parse({ delimiter: format.delimiter, record_delimiter: ['\r\n', '\n', '\r'], info: true, relax_column_count: true, relax_quotes: true, max_record_size: MAX_RECORD_BYTES, bom: false });
  // A row longer than the limit reaches the parser as a marker record (its bytes dropped as they
  // come): the parser's byte count (`info.bytes`) then falls short of the file's by `shift`, the
  // bytes of such rows less their markers', added back so that resume points stay file offsets.
  const limiter = new RecordLimiter(format.delimiter.charCodeAt(0), recordLimit);
  let shift = 0;
  // pipeline, not pipe: a read error of the file must reach the loop below, not end the process
  pipeline(createReadStream(path, { start: from.bytes, highWaterMark: 1 << 20 }), limiter, parser, () => {});
  const escaped = format.formulasEscaped === true || format.download === true;
  // In a rejected-rows CSV of ours the last two columns are our reason and line, and every row
  // ends in them: a row's own cells are the ones before, fitted to the file's own columns as in the
  // round before (it said 4 of 6 for a row of 2 in 4 columns; and a file whose header ended in
  // unnamed columns, `Name,Company,Title,Email,,`, took a row that stops at Email, but its
  // rejected-rows CSV then wanted those unnamed cells too — "the header has 6": a tester's case)
  const annotation = format.formulasEscaped === true ? REJECTION_COLUMNS.length : 0;
  const width = format.columns.length - annotation;
  const namedColumns = namedWidth(format.columns.slice(0, width));
  // where text past the header is a broken row: past its named columns, or past all of them when its unnamed ones are columns
  const named = format.unnamedColumns === true ? width : namedColumns;
  // a column named `id`, as downloads name it: a row whose cell there is a contact id (c_…) came from a download
  const idColumn = format.columns.indexOf('id');
  const needed = Math.max(namedColumns, ...mappedColumns(format.mapping).map((i) => i + 1));
  // a long row's cells in the rejected-rows CSV: empty, as many as the file's columns (our annotation too, in a file of ours)
  const longRowCells = Array<string>(format.columns.length).fill('');
  const widthReason = (cells: number) => (annotation && cells >= annotation ? `${wrongWidth(cells - annotation, needed)} (besides ${REJECTION_COLUMNS.join(' and ')})` : wrongWidth(cells, needed));
  let nextLine = from.lines + 1;
  let rows: CsvRow[] = [];
  let endBytes = from.bytes;
  try {
    for await (const { record, info } of parser as AsyncIterable<{ record: string[]; info: { bytes: number } }>) {
      const line = nextLine;
      const skipped = limiter.skipped(record);
      if (skipped?.why === 'utf8') {
        // the scan found the file to be UTF-8: it changed on disk since, and fails as a file that is not
        if (rows.length) await send({ rows, endBytes, endLine: line - 1 });
        throw new CsvReadError(`line ${line}: the row is not valid UTF-8`, line);
      }
      nextLine = line + (skipped ? skipped.breaks : lineBreaksIn(record)) + 1;
      shift += skipped?.shift ?? 0;
      endBytes = from.bytes + info.bytes + shift;
      const endLine = nextLine - 1;
      if (skipped) rows.push({ line, endBytes, endLine, reason: LONG_ROW, raw: longRowCells });
      else if (isBlankRecord(record)) continue;
      else {
        // a file of ours (a rejected-rows CSV, a download) has our formula escaping to take off: its
        // cells are read, and kept for a rejected row, as they were before it
        const read = escaped ? record.map(unescapeFormula) : record;
        const noted = annotation && read.length >= annotation;
        const cells = fitToHeader(noted ? read.slice(0, -annotation) : read, width, needed, named);
        if (!cells) rows.push({ line, endBytes, endLine, reason: widthReason(record.length), raw: read });
        else if (repeatsHeader(cells, format.columns, format.mapping)) rows.push({ line, endBytes, endLine, reason: HEADER_AGAIN, raw: noted ? [...cells, ...read.slice(-annotation)] : cells });
        else {
          const res = validateContact(rowToInput(cells, format.mapping));
          // the cells go along with a valid row too: it may still be rejected as a duplicate, and the
          // rejected-rows CSV gives rows back as they were — as wide as the header, annotation and all
          const raw = noted ? [...cells, ...read.slice(-annotation)] : cells;
          if (!res.ok) rows.push({ line, endBytes, endLine, reason: res.reason, raw });
          else {
            const id = idColumn >= 0 ? cells[idColumn]!.trim() : '';
            rows.push({ line, endBytes, endLine, draft: res.draft, raw, ...(isId('c', id) ? { downloadedAs: id } : {}) });
          }
        }
      }
      if (rows.length >= batchRows) {
        await send({ rows, endBytes, endLine: nextLine - 1 });
        rows = [];
      }
    }
  } catch (err) {
    // Every parser error is about the file (a quote never closed…): the job fails with the line, at
    // once; anything else (an I/O error) is retried by the scheduler.
    if (!(err instanceof CsvError)) throw err;
    // where the quote opened as the limiter counted it: the parser's count misses the line breaks
    // of long rows it got as markers, and counts a CRLF inside quotes twice
    const at = from.lines + (limiter.unclosedQuoteLine ?? (err as CsvError & { lines?: number }).lines ?? 1);
    // the rows read before the bad one are still imported; the job then fails at the bad one
    if (rows.length) await send({ rows, endBytes, endLine: nextLine - 1 });
    throw new CsvReadError(`line ${at}: ${REASONS[err.code] ?? err.message}`, at);
  }
  await send({ rows, endBytes, endLine: nextLine - 1 });
}
