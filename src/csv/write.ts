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
  return stringify(rows, { escape_formulas: escapeFormulas, record_delimiter: '\r\n', cast: { boolean: (b) => (b ? 'true' : 'false') } });
}
