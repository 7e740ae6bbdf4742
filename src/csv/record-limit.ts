import { randomBytes } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { Utf8Check } from '../utf8.ts';

/**
 * Passes a CSV byte stream through unchanged, except that a record longer than `limit` bytes (its
 * bytes are dropped as they arrive, never held whole) or one that is not valid UTF-8 is replaced by
 * a one-cell marker record, so that the CSV parser after it reads on past such a record instead of
 * failing the file, or reading it with U+FFFD in place of the bad bytes (csv-parse decodes with
 * replacement). `skipped(record)` tells a marker apart from data — the marker carries a random
 * nonce no file can guess — and says why the record was dropped, how many line breaks it held, so
 * line numbers stay right, and how many bytes of the input it stood for, so offsets into the input
 * can be worked out from the parser's (`shift`). The feed reader and the import's row reader
 * (src/csv/read-rows.ts) read through it as a stream; the upload scanner keeps the head of a file
 * through it (`passOn`, `passRest`), so that a long row among the first ones is not held either.
 *
 * Records end at a line break (LF, CR or CRLF) outside quotes; quotes follow csv-parse's
 * `relax_quotes` rule as the upload scanner reads them (src/csv/scan.ts): a quote opens a quoted
 * field only at the start of a field, or right after the quote that closed one (a doubled quote).
 */
export interface SkippedRecord {
  why: 'long' | 'utf8';
  /** Line breaks inside its quoted fields (a CRLF counts once). */
  breaks: number;
  /** Its bytes in the input, without the line break that ends it. */
  bytes: number;
  /** How many more bytes of the input it took than its marker does in the output. */
  shift: number;
}

export class RecordLimiter extends Transform {
  private readonly nonce = `record-limit-${randomBytes(12).toString('hex')}:`;
  private quoted = false;
  private fieldStart = true;
  private justClosed = false;
  private prevCR = false;
  /** Line breaks inside quotes in the current record. */
  private breaks = 0;
  /** The line the current record starts on (a CRLF, inside quotes or not, is one line break). */
  private recordLine = 1;
  /** The current record's bytes from earlier chunks, not passed on yet (none once it is skipped). */
  private held: Buffer[] = [];
  /** The current record's bytes in earlier chunks (held or dropped). */
  private size = 0;
  /** The current record is longer than the limit: its bytes are being dropped. */
  private skipping = false;
  /** The current record has bytes that are not UTF-8 (RFC 3629). */
  private badUtf8 = false;
  /** UTF-8 of the current record (RFC 3629). */
  private readonly utf8 = new Utf8Check();

  private readonly delimiter: number;
  private readonly limit: number;

  /** `delimiter` is the field delimiter's byte; `limit` the longest record passed on, in bytes. */
  constructor(delimiter: number, limit: number) {
    super();
    this.delimiter = delimiter;
    this.limit = limit;
  }

  /**
   * Once the input ended inside a quoted field (csv-parse then fails with CSV_QUOTE_NOT_CLOSED):
   * the line its record starts on. csv-parse's own count (`lines`) counts a CRLF inside quotes twice.
   */
  get unclosedQuoteLine(): number | undefined {
    return this.quoted ? this.recordLine : undefined;
  }

  /** For a marker record (as the parser read it: one cell), what its record was; undefined for data. */
  skipped(record: string[]): SkippedRecord | undefined {
    const cell = record.length === 1 ? record[0]! : '';
    if (!cell.startsWith(this.nonce)) return undefined;
    const [why, breaks, bytes] = cell.slice(this.nonce.length).split(':');
    // the marker is ASCII, in quotes (marker())
    return { why: why === 'utf8' ? 'utf8' : 'long', breaks: Number(breaks), bytes: Number(bytes), shift: Number(bytes) - (cell.length + 2) };
  }

  private marker(why: SkippedRecord['why'], bytes: number): Buffer {
    return Buffer.from(`"${this.nonce}${why}:${this.breaks}:${bytes}"`);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    for (const b of this.passOn(chunk)) this.push(b);
    done();
  }

  override _flush(done: TransformCallback): void {
    for (const b of this.passRest()) this.push(b);
    done();
  }

  /**
   * The bytes to pass on for the next chunk of the input: every record that ends in it, long
   * ones as their markers (the record it ends inside is held back, or dropped once too long).
   */
  passOn(chunk: Buffer): Buffer[] {
    const out: Buffer[] = [];
    let emitFrom = 0; // bytes before this are passed on (or dropped)
    let recStart = 0; // where the current record starts in this chunk (0: in an earlier chunk)
    const delimiter = this.delimiter;
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i]!;
      if (this.utf8.wants(b)) {
        if (!this.utf8.take(b)) {
          this.badUtf8 = true;
          // a sequence cut off by `b`: `b` was not taken and is read again on its own
          if (this.utf8.wants(b)) this.utf8.take(b);
        }
        if (b >= 0x80) {
          this.prevCR = false;
          this.justClosed = false;
          this.fieldStart = false;
          continue;
        }
      }
      if (b === 0x22) {
        if (this.quoted) {
          this.quoted = false;
          this.justClosed = true;
        } else if (this.fieldStart || this.justClosed) {
          this.quoted = true;
          this.justClosed = false;
        } else this.justClosed = false;
        this.fieldStart = false;
        this.prevCR = false;
        continue;
      }
      if (b === 0x0a || b === 0x0d) {
        this.justClosed = false;
        if (this.quoted) {
          if (b === 0x0d || !this.prevCR) this.breaks++; // a CRLF counts once
          this.prevCR = b === 0x0d;
          continue;
        }
        // the end of a record (the LF of a CRLF ends an empty one: not another line)
        if (!(b === 0x0a && this.prevCR)) this.recordLine += 1 + this.breaks;
        const bytes = this.size + (i - recStart);
        const tooLong = this.skipping || bytes > this.limit;
        if (tooLong || this.badUtf8) {
          if (recStart > emitFrom) out.push(chunk.subarray(emitFrom, recStart));
          out.push(this.marker(tooLong ? 'long' : 'utf8', bytes));
          emitFrom = i; // the line break goes on with what follows
        } else if (this.size) out.push(...this.held); // emitFrom is 0: nothing of this chunk passed on yet
        this.held = [];
        this.size = 0;
        this.skipping = false;
        this.badUtf8 = false;
        this.breaks = 0;
        this.fieldStart = true;
        this.prevCR = b === 0x0d;
        recStart = i + 1;
        continue;
      }
      this.prevCR = false;
      this.justClosed = false;
      this.fieldStart = !this.quoted && b === delimiter;
    }
    if (recStart > emitFrom) out.push(chunk.subarray(emitFrom, recStart));
    this.size += chunk.length - recStart;
    if (!this.skipping) {
      if (this.size > this.limit) {
        this.skipping = true;
        this.held = [];
      } else if (recStart < chunk.length) this.held.push(chunk.subarray(recStart));
    }
    return out;
  }

  /** The bytes to pass on once the input has ended: its last record, if no line break ended it. */
  passRest(): Buffer[] {
    const held = this.held;
    this.held = [];
    // The input ended inside a quoted field: the parser is to fail so, on the record's bytes, or on
    // a quote standing for the record dropped (a marker would read as a whole record).
    if (this.quoted) return this.skipping ? [Buffer.from('"')] : held;
    if (this.skipping) return [this.marker('long', this.size)];
    if (this.badUtf8 || this.utf8.need > 0) return [this.marker('utf8', this.size)];
    return held;
  }
}
