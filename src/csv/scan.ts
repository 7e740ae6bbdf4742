import { createReadStream } from 'node:fs';
import { parse as parseSync } from 'csv-parse/sync';
import { Utf8Check } from '../utf8.ts';
import { suggestMapping } from './columns.ts';
import { holdsOnlySpaces, isBlankRecord, MAX_RECORD_BYTES } from './read-rows.ts';
import { RecordLimiter } from './record-limit.ts';

/**
 * One pass over an uploaded file before it is accepted (runs in the CSV worker thread): proves
 * it is UTF-8 text, counts its records exactly (quote-aware), finds an unterminated quote, and
 * reads the header and the first rows. Everything that makes a file unusable as a whole is found
 * here, before anything is imported: an upload is refused at once (415, 422), or — a text that
 * cannot be read as CSV (ScanFailure.unreadable) — its import job fails naming the line.
 */

export interface ScanResult {
  ok: true;
  delimiter: string;
  columns: string[];
  /** Byte offset of the first data row. */
  dataStart: number;
  /** Lines taken by the BOM-less header row. */
  headerLines: number;
  /**
   * Data records (blank records — empty lines, `,,,` — do not count; a record longer than
   * MAX_RECORD_BYTES does, whatever it holds: the reader rejects it).
   */
  rows: number;
  /** The first data rows, as cells; a row longer than MAX_RECORD_BYTES is left out (its cells are not kept). */
  head: string[][];
  /**
   * Every data record's last cell is a line number as the `line` column of a rejected-rows CSV of
   * ours holds it: digits only, unquoted, no leading zero, 2 or more, at most 15 digits. A file
   * whose last column holds anything else is not one of ours.
   */
  lastCellsNumbers: boolean;
  /**
   * Another delimiter that separates the header's cells as often as the one chosen (the vote
   * tied, and went to `,` before `;` before a tab); undefined when it did not tie or a `sep=`
   * line named the delimiter.
   */
  tiedWith?: string;
  /**
   * A data cell begins with = + - or @ (no `'` in front): the file is not a download of ours, which
   * escapes every such cell (src/ledger/import-service.ts isOwnDownload).
   */
  formulaCells: boolean;
}

export interface ScanFailure {
  ok: false;
  status: 415 | 422;
  /**
   * The file's text cannot be read as CSV (not UTF-8, NUL bytes, a quote never closed, a header
   * over its limit): an upload makes an import job that fails naming the line (SPEC §4.3).
   * Otherwise (a binary format, no header, no rows) the upload is refused at once.
   */
  unreadable: boolean;
  message: string;
  line?: number;
}

const PREVIEW_ROWS = 10;
/** One-cell lines above the header passed over as notes at most (headerAfterNotes: LinkedIn's export has two). */
const NOTE_ROWS = 10;
/** The records read from the head: notes, the header and the preview's rows. */
const HEAD_RECORDS = NOTE_ROWS + 1 + PREVIEW_ROWS;
/** Cells that hold something. */
const filledCells = (record: string[]) => record.filter((c) => c.trim() !== '').length;

/**
 * Where the header is when the file opens with notes: lines of one cell each (`Notes:`, a quoted
 * paragraph) above a row that names a name and a company column — the layout of LinkedIn's own
 * connections export (a tester's file: its "Notes:" was taken for the header, and no mapping could
 * help). The first record that is not blank otherwise, as before: a first row of two or more cells
 * is the header whatever it names.
 */
function headerAfterNotes(records: string[][], first: number): number {
  for (let i = first; i < Math.min(records.length, first + NOTE_ROWS + 1); i++) {
    const r = records[i]!;
    if (isBlankRecord(r) || holdsOnlySpaces(r)) continue;
    if (filledCells(r) <= 1) continue;
    if (i === first) return first;
    const { fields } = suggestMapping(r);
    return fields.name !== undefined && fields.company !== undefined ? i : first;
  }
  return first;
}

/** The longest header row an upload may have. */
const HEADER_BYTES = 256 * 1024;
/**
 * The most of a file's start kept for its header and the preview's first rows: enough for ten
 * rows as long as a row may be, so one long cell (a note pasted into a CRM field) does not hide the
 * rows after it; a row longer than that is kept as a marker (RecordLimiter), not at all. Only as
 * much as those rows take is kept (usually a few KiB).
 */
const HEAD_BYTES = HEADER_BYTES + PREVIEW_ROWS * (MAX_RECORD_BYTES + 2) + NOTE_ROWS * 4096 + 4096; // + line ends, a BOM, a sep= line, blank lines

const MAGIC: [string, number[]][] = [
  ['a ZIP archive (an Excel .xlsx file?)', [0x50, 0x4b, 0x03, 0x04]],
  ['a PNG image', [0x89, 0x50, 0x4e, 0x47]],
  ['a PDF document', [0x25, 0x50, 0x44, 0x46]],
  ['a gzip archive', [0x1f, 0x8b]],
  ['a JPEG image', [0xff, 0xd8, 0xff]],
  ['a GIF image', [0x47, 0x49, 0x46, 0x38]],
  ['an old Excel .xls file', [0xd0, 0xcf, 0x11, 0xe0]],
];

const fail = (status: 415 | 422, message: string, line?: number): ScanFailure => ({ ok: false, status, unreadable: false, message, ...(line ? { line } : {}) });
const unreadable = (message: string, line?: number): ScanFailure => ({ ...fail(422, message, line), unreadable: true });

/**
 * The delimiter of the header, the record `text` starts with: the most frequent of `,` `;` tab
 * outside quotes (`,` on a tie), up to the first line break outside quotes — a header cell may
 * hold one (Alt+Enter in a spreadsheet). A quote opens a quoted cell only at the start of a cell
 * (after any of the candidates), as the scanner and the reader read quotes.
 */
export function detectDelimiter(text: string): string {
  const counts = delimiterVotes(text);
  let best = ',';
  for (const d of [';', '\t']) if (counts[d]! > counts[best]!) best = d;
  return best;
}

/** How often each delimiter separates the cells of the text's first record (detectDelimiter's vote). */
function delimiterVotes(text: string): Record<string, number> {
  const counts: Record<string, number> = { ',': 0, ';': 0, '\t': 0 };
  let quoted = false;
  let cellStart = true;
  let justClosed = false;
  for (const ch of text) {
    if (!quoted && (ch === '\n' || ch === '\r')) break;
    if (ch === '"') {
      const opens: boolean = !quoted && (cellStart || justClosed); // a cell's start, or a doubled quote
      justClosed = quoted;
      quoted = opens;
      cellStart = false;
      continue;
    }
    justClosed = false;
    cellStart = !quoted && ch in counts;
    if (cellStart) counts[ch]!++;
  }
  return counts;
}

/**
 * The encoding of a text in UTF-16 or UTF-32, with its byte order ("UTF-16 (little endian)"), told
 * by its byte order mark or, without one, by NUL bytes in the places of its first bytes where ASCII
 * characters have them (every other byte; three of every four): Windows tools save "Unicode" text
 * so. Undefined for anything else. An upload or feed in such an encoding is refused as such (it
 * used to be "contains NUL bytes" without a mark, and "not valid UTF-8" for a feed; UTF-32 was
 * called UTF-16 — forty-fifth session, a tester's case).
 */
export function wideTextEncoding(first: Buffer): string | undefined {
  // UTF-32's marks first: FF FE 00 00 begins like UTF-16's little-endian one
  if (first[0] === 0xff && first[1] === 0xfe && first[2] === 0 && first[3] === 0) return 'UTF-32 (little endian)';
  if (first[0] === 0 && first[1] === 0 && first[2] === 0xfe && first[3] === 0xff) return 'UTF-32 (big endian)';
  if (first[0] === 0xff && first[1] === 0xfe) return 'UTF-16 (little endian)';
  if (first[0] === 0xfe && first[1] === 0xff) return 'UTF-16 (big endian)';
  const bytes = Math.min(first.length, 512);
  const quads = bytes >> 2;
  if (quads >= 2) {
    // a NUL at each place of a quad (UTF-32: ASCII has three, where its byte order puts them)
    const nul = [0, 0, 0, 0];
    for (let i = 0; i < quads * 4; i++) if (first[i] === 0) nul[i & 3]!++;
    const all = (places: number[]) => places.every((p) => nul[p]! >= quads * 0.9);
    if (all([1, 2, 3]) && nul[0] === 0) return 'UTF-32 (little endian)';
    if (all([0, 1, 2]) && nul[3] === 0) return 'UTF-32 (big endian)';
  }
  const pairs = bytes >> 1;
  if (pairs < 2) return undefined;
  let evenNul = 0;
  let oddNul = 0;
  for (let i = 0; i < pairs; i++) {
    if (first[2 * i] === 0) evenNul++;
    if (first[2 * i + 1] === 0) oddNul++;
  }
  if (oddNul >= pairs * 0.6 && evenNul === 0) return 'UTF-16 (little endian)';
  if (evenNul >= pairs * 0.6 && oddNul === 0) return 'UTF-16 (big endian)';
  return undefined;
}

/** The bytes of a UTF-8 byte order mark at the start of `b` (3), or 0. */
const bomLength = (b: Buffer) => (b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf ? 3 : 0);

/**
 * A line that is a blank row whatever the delimiter: nothing, white space (no-break spaces too:
 * the readers trim cells as String.trim does), quoted cells of it, the Ctrl-Z end-of-file mark and
 * separators alone. Such rows above the header are passed over
 * (decisions.md), so the delimiter is not voted on them.
 */
const BLANK_LINE = /^(?:[^\S\r\n]|[,;\x1a]|"[^\S\r\n"]*"|"\x1a")*(?:\r\n|\n|\r)/;

/**
 * The delimiter of a file's header — its first record after any blank rows (they are skipped
 * everywhere, also before the header) — from its first bytes (BOM or not). Until the thirty-first
 * session only empty lines were passed over: a `""` or spaces-only row above a `;` header voted
 * for `,`, and the file was refused as having no name column (a tester's case).
 */
export function headerDelimiter(first: Buffer): string {
  let text = first.subarray(bomLength(first)).toString('utf8');
  for (let m = BLANK_LINE.exec(text); m; m = BLANK_LINE.exec(text)) text = text.slice(m[0].length);
  return detectDelimiter(text);
}

/**
 * Excel's `sep=;` line: a first line (after a BOM) naming the delimiter, written by programs that
 * export for Excel so it splits the columns whatever the locale's list separator. It is not the
 * header; the delimiter it names is used instead of the detected one.
 */
const SEP_LINE = /^sep=([,;\t|])(?:\r\n|\n|\r)/i;

/** The delimiter a `sep=` first line names, and the bytes up to the header (BOM and that line); undefined without one. */
export function sepLine(first: Buffer): { delimiter: string; bytes: number } | undefined {
  const bom = bomLength(first);
  const sep = SEP_LINE.exec(first.subarray(bom, bom + 8).toString('latin1'));
  return sep ? { delimiter: sep[1]!, bytes: bom + sep[0].length } : undefined;
}

/** Scans the whole file; see the module comment. `recordLimit` is the row reader's (readRows'; tests give a small one). */
export async function scanCsv(path: string, recordLimit = MAX_RECORD_BYTES): Promise<ScanResult | ScanFailure> {
  // The file's start, through a RecordLimiter: the header and the preview's rows, each record
  // whole (a record longer than the reader's limit as its marker), until they have ended.
  const headParts: Buffer[] = [];
  let headLength = 0;
  let headLimiter: RecordLimiter | undefined;
  let headOpen = true;
  // records longer than the limit among those kept (the preview leaves them out and shows the next)
  let headLong = 0;
  let offset = 0;
  let line = 1;
  let records = 0;
  let quoted = false;
  let quoteLine = 0;
  // Quotes follow csv-parse's relax_quotes rule, as the row reader does (read-rows.ts): a quote
  // opens a quoted field only at the start of a field (or right after the quote that closed one:
  // a doubled quote); anywhere else it is a literal character.
  let delimiterByte = 0x2c;
  // bytes before the header: a BOM and a `sep=` line (SEP_LINE)
  let preamble = 0;
  let sepLines = 0;
  let fieldStart = true;
  let justClosed = false;
  // A record none of whose cells has a character — an empty line, `""`, `,,,` (what spreadsheets
  // write for formatted rows left empty) — is skipped by the row reader (read-rows.ts), so it is not
  // counted either. Set by every byte that is part of a cell's value: not a line break, delimiter
  // or quote outside quotes, nor a quote that opens or closes a field (a doubled quote is a value).
  let blank = true;
  // the record so far is one Ctrl-Z (U+001A) and nothing else, bare or quoted — a DOS end-of-file
  // mark, blank too (the reader sees one cell "\x1a" either way): 0 no, 1 `\x1a`, 2 `"\x1a`, 3 `"\x1a"`
  let eofMark = 0;
  let recStart = 0;
  // the current cell: digits in it, and whether anything else is (lastCellsNumbers)
  let cellDigits = 0;
  let cellOther = false;
  let cellValue = 0;
  let lastCellsNumbers = true;
  // no value byte of the current cell yet (formulaCells: the first one decides)
  let cellStart = true;
  let formulaCells = false;
  // as we write a line number: no leading zero, a line after the header (2 or more), at most 15 digits
  const lineNumberCell = () => !cellOther && cellDigits > 0 && cellDigits <= 15 && cellValue >= 2 && cellValue >= 10 ** (cellDigits - 1);
  // A record longer than the row reader's limit is counted whatever it holds (a blank one too):
  // the reader rejects it as too long (read-rows.ts LONG_ROW); the header has its own, lower limit below.
  const tooLong = (end: number) => end - recStart > recordLimit;
  let prevCR = false;
  const utf8 = new Utf8Check();
  const notUtf8 = () => unreadable(`the file is not valid UTF-8 (line ${line}); save it as UTF-8 CSV`, line);

  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
    if (offset === 0) {
      const wide = wideTextEncoding(chunk);
      if (wide) return unreadable(`the file is ${wide}; save it as UTF-8 CSV`);
      for (const [what, bytes] of MAGIC) if (bytes.every((b, i) => chunk[i] === b)) return fail(415, `the file is ${what}, not a CSV text file`);
      const sep = sepLine(chunk);
      delimiterByte = (sep?.delimiter ?? headerDelimiter(chunk)).charCodeAt(0);
      sepLines = sep ? 1 : 0;
      preamble = sep ? sep.bytes : bomLength(chunk);
      line += sepLines;
      headLimiter = new RecordLimiter(delimiterByte, recordLimit);
    }
    const start = offset === 0 ? preamble : 0;
    if (start) recStart = start;
    if (headOpen) {
      for (const part of headLimiter!.passOn(chunk.subarray(start))) {
        headParts.push(part);
        headLength += part.length;
      }
    }
    for (let i = start; i < chunk.length; i++) {
      const b = chunk[i]!;
      if (b >= 0x80 || utf8.need > 0) {
        if (!utf8.take(b)) return notUtf8();
        // a non-ASCII byte (a lead or continuation byte): text, and not a quote, delimiter or line break
        blank = false;
        cellOther = true;
        cellStart = false;
        prevCR = false;
        fieldStart = false;
        justClosed = false;
        continue;
      }
      if (b === 0x0a || b === 0x0d) {
        const lineEnd = b === 0x0d || !prevCR; // not the LF of a CRLF
        justClosed = false;
        if (!quoted) {
          fieldStart = true;
          cellStart = true;
          if (lineEnd) {
            const long = tooLong(offset + i);
            if (!blank || long) {
              if (records > 0) lastCellsNumbers &&= lineNumberCell();
              records++;
              if (long && headOpen) headLong++;
              if (records - headLong === HEAD_RECORDS) headOpen = false;
            }
            blank = true;
            eofMark = 0;
            cellDigits = 0;
            cellValue = 0;
            cellOther = false;
          }
          recStart = offset + i + 1;
        } else {
          blank = false; // a line break inside a quoted field
          cellOther = true;
          cellStart = false;
        }
        if (lineEnd) line++;
        prevCR = b === 0x0d;
        continue;
      }
      prevCR = false;
      if (b === 0x1a && blank && eofMark === 0 && offset + i === recStart + (quoted ? 1 : 0)) {
        eofMark = quoted ? 2 : 1;
        fieldStart = false;
        cellOther = true;
        continue;
      }
      if (eofMark === 2 && b === 0x22) {
        quoted = false; // the quote closing `"\x1a`
        justClosed = true;
        eofMark = 3;
        continue;
      }
      if (eofMark) {
        eofMark = 0;
        blank = false;
      }
      if (b === 0) return unreadable(`the file contains NUL bytes (line ${line}); it is not a text CSV file`, line);
      if (b === 0x22) {
        // a quoted cell is never our line number (written bare), whatever it holds
        cellOther = true;
        if (quoted) {
          quoted = false;
          justClosed = true;
        } else if (fieldStart || justClosed) {
          if (justClosed) blank = cellStart = false; // `""` inside a quoted field: a quote character
          quoted = true;
          justClosed = false;
          quoteLine = line;
        } else {
          blank = cellStart = false; // a literal quote
          justClosed = false;
        }
        fieldStart = false;
        continue;
      }
      justClosed = false;
      fieldStart = !quoted && b === delimiterByte;
      if (fieldStart) {
        cellDigits = 0;
        cellValue = 0;
        cellOther = false;
        cellStart = true;
      } else {
        blank = false;
        if (cellStart && records > 0 && (b === 0x3d || b === 0x2b || b === 0x2d || b === 0x40)) formulaCells = true;
        cellStart = false;
        if (b >= 0x30 && b <= 0x39) {
          cellDigits++;
          if (cellDigits <= 15) cellValue = cellValue * 10 + (b - 0x30);
        } else cellOther = true;
      }
    }
    offset += chunk.length;
    if (headLength >= HEAD_BYTES) headOpen = false;
  }
  if (utf8.need > 0) return notUtf8();
  if (quoted) return unreadable(`a quoted field opened on line ${quoteLine} is never closed`, quoteLine);
  const lastLong = tooLong(offset);
  if (!blank || lastLong) {
    if (records > 0) lastCellsNumbers &&= lineNumberCell();
    records++;
    if (lastLong && headOpen) headLong++;
  }
  if (records === 0) return fail(422, 'the file is empty; it needs a header row and at least one contact');

  // The header and the first rows, from the head of the file: whole records (every quote is closed,
  // the pass above proved it), so the file's last one too when the head holds it.
  if (headOpen) for (const part of headLimiter!.passRest()) headParts.push(part);
  const text = Buffer.concat(headParts);
  const headerTooLong = () => unreadable(`the header row is longer than ${HEADER_BYTES} bytes`, 1);
  const delimiter = String.fromCharCode(delimiterByte);
  let parsed: { record: string[]; info: { bytes: number; lines: number } }[];
  try {
    parsed = parseSync(text, { delimiter, info: true, relax_column_count: true, relax_quotes: true, skip_empty_lines: true, to: HEAD_RECORDS + headLong, record_delimiter: ['\r\n', '\n', '\r'] }) as never;
  } catch (err) {
    const e = err as { message: string; lines?: number };
    return unreadable(e.lines ? `line ${e.lines}: ${e.message}` : e.message, e.lines);
  }
  // rows with nothing but spaces before the header (`,,,`, as a sheet with blank rows at its top
  // exports it) are passed over, as empty lines are; those that hold spaces were counted as records
  const first = parsed.findIndex((p) => !holdsOnlySpaces(p.record) && !isBlankRecord(p.record));
  const at = first < 0 ? first : headerAfterNotes(parsed.map((p) => p.record), first);
  const header = parsed[at];
  if (!header) return fail(422, 'the first line must be a header row naming the columns');
  const dataRecords = records - parsed.slice(0, at + 1).filter((p) => !isBlankRecord(p.record)).length;
  // (a record over the reader's limit up to the header: the header's offset would be the marker's)
  if (header.info.bytes > HEADER_BYTES || parsed.slice(0, at + 1).some((p) => headLimiter!.skipped(p.record))) return headerTooLong();
  if (dataRecords === 0) return fail(422, 'the file has a header row but no contacts');
  const headerText = text.subarray(0, header.info.bytes).toString('utf8');
  // the vote on the delimiter reads the header row alone, not rows passed over above it (notes: a reviewer's case)
  const votes = sepLines ? undefined : delimiterVotes(text.subarray(at > 0 ? parsed[at - 1]!.info.bytes : 0, header.info.bytes).toString('utf8').replace(/^[\r\n]+/, ''));
  const tiedWith = votes && Object.keys(votes).find((d) => d !== delimiter && votes[d]! > 0 && votes[d] === votes[delimiter]);
  const headerLines = sepLines + 1 + (headerText.replace(/\r\n/g, '\n').replace(/[\r\n]$/, '').match(/[\r\n]/g)?.length ?? 0);
  return {
    ok: true,
    delimiter,
    columns: header.record,
    dataStart: preamble + header.info.bytes,
    headerLines,
    rows: dataRecords,
    lastCellsNumbers,
    formulaCells,
    ...(tiedWith ? { tiedWith } : {}),
    head: parsed
      .slice(at + 1)
      .map((p) => p.record)
      .filter((r) => !isBlankRecord(r) && !headLimiter!.skipped(r))
      .slice(0, PREVIEW_ROWS),
  };
}
