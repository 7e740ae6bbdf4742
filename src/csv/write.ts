/**
 * CSV output (downloads, rejected rows): RFC 4180 with CRLF line ends. Every non-empty text cell is
 * quoted, quotes inside doubled (RELIABILITY.md I4): a spreadsheet whose list separator is `;` or
 * a tab splits an unquoted `Bob;=cmd|…` into cells, the second of them a formula. Other values
 * (numbers, booleans, dates, JSON) are quoted when they hold a quote, a comma, a CR or an LF (a lone
 * CR or LF would split the record for other readers).
 *
 * Spreadsheet formula injection (RELIABILITY.md I4): with `escapeFormulas`, a text cell starting
 * with = + - @ tab CR LF NUL (or the full-width = + - @ that spreadsheets also read as operators)
 * gets a `'` in front, and so does one where only blanks come before such a character (` =x`: a
 * spreadsheet told to trim spaces on import, LibreOffice's "Trim spaces", reads `=x`; blanks are
 * the Unicode spaces, NBSP, the zero-width ones and the BOM) and one whose `'`s come before either
 * (`'=x` → `''=x`), so that taking one `'` off (unescapeFormula) gives back every text. Numbers are
 * never escaped (-5 stays a number).
 *
 * Values: strings as they are, null and undefined empty, numbers and bigints in JavaScript's
 * notation, booleans as true/false, dates as epoch milliseconds, other objects as JSON.
 *
 * This is the output of csv-stringify with { escape_formulas, quoted_string, quoted_empty: false,
 * record_delimiter: '\r\n', quote_record_delimiter: true, cast.boolean: true/false } plus the
 * LF/NUL prefix — the library this module used before; test/ledger-download.test.ts checks the two
 * agree on random input.
 * Written out because a 1,000,000-row download spent more time in the library's per-cell
 * option handling than in SQLite (docs/benchmarks.md).
 */

const NEEDS_QUOTES = /[",\r\n]/;
const QUOTES = /"/g;

/** First characters that make a spreadsheet evaluate a cell (the code points, for a switch). */
function formulaStart(c: number): boolean {
  switch (c) {
    case 0x3d: // =
    case 0x2b: // +
    case 0x2d: // -
    case 0x40: // @
    case 0x09: // tab
    case 0x0d: // CR
    case 0x0a: // LF
    case 0x00: // NUL
    case 0xff1d: // full-width =
    case 0xff0b: // full-width +
    case 0xff0d: // full-width -
    case 0xff20: // full-width @
      return true;
    default:
      return false;
  }
}

/** Characters a spreadsheet may strip or show as nothing before a cell's first visible one. */
function blank(c: number): boolean {
  return (
    c === 0x20 || c === 0x0b || c === 0x0c || c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200d) ||
    c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x2060 || c === 0x3000 || c === 0xfeff
  );
}

/** Text a spreadsheet may read as a formula: a formula character first, or after blanks only. */
function formulaText(s: string, from = 0): boolean {
  let i = from;
  while (i < s.length && blank(s.charCodeAt(i))) i++;
  return i < s.length && formulaStart(s.charCodeAt(i));
}

/** Text that looks escaped already: one or more `'` before formula text. */
function escapedLook(s: string): boolean {
  let i = 0;
  while (s.charCodeAt(i) === 0x27) i++;
  return i > 0 && formulaText(s, i);
}

/**
 * A cell as it was before `escapeFormulas` put a `'` in front of it: for a rejected-rows CSV or a
 * download that comes back (src/ledger/import-service.ts). Other cells are returned as they are.
 * Text that looked escaped already (`'=x` as typed) got one `'` more, so it comes back whole.
 */
export function unescapeFormula(cell: string): string {
  return escapedLook(cell) ? cell.slice(1) : cell;
}

/** One cell's text. */
export function csvCell(v: unknown, escapeFormulas: boolean): string {
  let s: string;
  switch (typeof v) {
    case 'string':
      if (v === '') return '';
      s = escapeFormulas && (formulaText(v) || escapedLook(v)) ? `'${v}` : v;
      return `"${s.includes('"') ? s.replace(QUOTES, '""') : s}"`;
    case 'number':
    case 'bigint':
      return String(v);
    case 'boolean':
      return v ? 'true' : 'false';
    case 'undefined':
      return '';
    default:
      if (v === null) return '';
      s = v instanceof Date ? String(v.getTime()) : JSON.stringify(v);
      if (s === undefined || s === '') return '';
  }
  if (escapeFormulas && formulaStart(s.charCodeAt(0))) s = `'${s}`;
  return NEEDS_QUOTES.test(s) ? `"${s.replace(QUOTES, '""')}"` : s;
}

/**
 * Records as CSV text, each ending with CRLF. Any delimiter of `,` `;` tab may join the cells: text
 * cells are always quoted, and numbers, booleans and dates hold none of them.
 */
export function csvLines(rows: unknown[][], escapeFormulas: boolean, delimiter = ','): string {
  let out = '';
  for (const row of rows) {
    for (let i = 0; i < row.length; i++) {
      if (i > 0) out += delimiter;
      out += csvCell(row[i], escapeFormulas);
    }
    out += '\r\n';
  }
  return out;
}

/** A header of our own fixed column names (plain identifiers: nothing to quote or escape). */
export function csvHeader(names: readonly string[], delimiter = ','): string {
  for (const n of names) if (!/^[A-Za-z][A-Za-z0-9]*$/.test(n)) throw new Error(`not a plain column name: ${JSON.stringify(n)}`);
  return `${names.join(delimiter)}\r\n`;
}
