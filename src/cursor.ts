import { badRequest } from './errors.ts';
import { MAX_LENGTH } from './ledger/contact-input.ts';

/** The longest text in a cursor's key: a contact's name (sortBy=±name). Other text keys are ids. */
export const MAX_CURSOR_TEXT = MAX_LENGTH.name;

/**
 * The longest cursor the server issues, so every cursor it hands out is accepted back (by
 * decodeCursor and the `cursor` query schema) while a forged giant one is still refused. The
 * longest is a contact list's under sortBy=±name, `["contacts+name","<name>",<seq>,<0|1>]`: JSON
 * escapes one UTF-16 unit of the name to at most 6 bytes (`\u0001`, a lone surrogate), a safe
 * integer takes at most 17 characters (`-9007199254740991`), and the label gets room for 32
 * characters (the longest contact sort label, `contacts-lastInfoChangedAt`, has 26). Every other
 * cursor holds numbers and at most an id (under 40 characters), far less. base64url makes 4
 * characters of every 3 bytes: 2,148 characters.
 */
const MAX_CURSOR_JSON = 2 + (32 + 2) + 1 + (MAX_CURSOR_TEXT * 6 + 2) + 2 * (1 + 17);
export const MAX_CURSOR_LENGTH = Math.ceil((MAX_CURSOR_JSON * 4) / 3);
const CURSOR_SHAPE = new RegExp(`^[A-Za-z0-9_-]{1,${MAX_CURSOR_LENGTH}}$`);

/**
 * Opaque keyset cursors: base64url JSON of the last row's sort key plus the sort it belongs to.
 * Decoding validates the shape strictly, so a cursor never reaches SQL as text.
 */
export function encodeCursor(sort: string, key: (string | number | null)[]): string {
  return Buffer.from(JSON.stringify([sort, ...key]), 'utf8').toString('base64url');
}

/**
 * Returns the key values of a cursor made for `sort`, checked against `kinds` ('s' string,
 * 'n' number, 'n?' number or null); throws 400 invalid_cursor otherwise.
 */
export function decodeCursor(text: string, sort: string, kinds: ('s' | 'n' | 'n?')[]): (string | number | null)[] {
  const bad = () => badRequest('invalid_cursor', 'cursor is not valid for this list; start again without it.', [{ path: 'cursor', message: 'invalid cursor' }]);
  if (!CURSOR_SHAPE.test(text)) throw bad();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  if (!Array.isArray(parsed) || parsed.length !== kinds.length + 1 || parsed[0] !== sort) throw bad();
  const values = parsed.slice(1) as unknown[];
  values.forEach((v, i) => {
    const k = kinds[i];
    const ok = k === 's' ? typeof v === 'string' && v.length <= MAX_CURSOR_TEXT : k === 'n' ? Number.isSafeInteger(v) : v === null || Number.isSafeInteger(v);
    if (!ok) throw bad();
  });
  return values as (string | number | null)[];
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/** Cuts a `limit + 1` query result into a page and the cursor after its last item. */
export function toPage<T>(rows: T[], limit: number, sort: string, keyOf: (row: T) => (string | number | null)[]): Page<T> {
  if (rows.length <= limit) return { items: rows, nextCursor: null };
  const items = rows.slice(0, limit);
  return { items, nextCursor: encodeCursor(sort, keyOf(items[items.length - 1]!)) };
}

/** A keyset position on (time, id): the common sort of lists in creation order. */
export interface Keyset {
  at: number;
  id: string;
}

/** Decodes an optional (time, id) cursor made for `sort`. */
export function decodeKeyset(cursor: string | undefined, sort: string): Keyset | undefined {
  if (cursor === undefined) return undefined;
  const [at, id] = decodeCursor(cursor, sort, ['n', 's']);
  return { at: at as number, id: id as string };
}
