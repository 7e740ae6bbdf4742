import { stringify } from 'csv-stringify/sync';

/**
 * CSV output (downloads, rejected rows). Spreadsheet formula injection (RELIABILITY.md I4):
 * csv-stringify's escape_formulas prefixes `'` to cells starting with = + - @ tab or CR; cells
 * starting with LF or NUL get the same prefix here, which the library does not do.
 */

const LEADING_UNSAFE = /^[\n\0]/;

export function csvLines(rows: unknown[][], escapeFormulas: boolean): string {
  if (escapeFormulas) {
    for (const row of rows) {
      for (let i = 0; i < row.length; i++) {
        const v = row[i];
        if (typeof v === 'string' && LEADING_UNSAFE.test(v)) row[i] = `'${v}`;
      }
    }
  }
  // quote_record_delimiter: with an explicit record_delimiter csv-stringify only quotes cells that
  // contain "\r\n", so a lone LF or CR inside a cell would split the record for other readers.
  return stringify(rows, { escape_formulas: escapeFormulas, record_delimiter: '\r\n', quote_record_delimiter: true, cast: { boolean: (b) => (b ? 'true' : 'false') } });
}
