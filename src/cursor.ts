import { createCipheriv, createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { badRequest } from './errors.ts';
import { MAX_LENGTH } from './ledger/contact-input.ts';
import { longerThan } from './normalize.ts';

/** The longest text in a cursor's key, in characters: a contact's name (sortBy=±name). Other text keys are ids. */
export const MAX_CURSOR_TEXT = MAX_LENGTH.name;

/** Bytes of the synthetic IV, which is also the cursor's authentication tag. */
const TAG_BYTES = 16;

/**
 * The longest cursor the server issues, so every cursor it hands out is accepted back (by
 * `decode` and the `cursor` query schema) while a forged giant one is still refused. The longest
 * sealed key is a contact list's under sortBy=±name, `["<name>",<seq>,<0|1>]`: JSON takes one
 * character (code point) of the name to at most 6 bytes (`\u0001`, a lone surrogate; an emoji,
 * two UTF-16 units, is 4 bytes of UTF-8) and a safe integer
 * takes at most 17 characters (`-9007199254740991`). Every other cursor holds numbers and at most
 * an id (under 40 characters), far less. The tag comes on top, and base64url makes 4 characters
 * of every 3 bytes: 2,123 characters.
 */
const MAX_CURSOR_JSON = 2 + (MAX_CURSOR_TEXT * 6 + 2) + 2 * (1 + 17);
export const MAX_CURSOR_LENGTH = Math.ceil(((TAG_BYTES + MAX_CURSOR_JSON) * 4) / 3);
const CURSOR_SHAPE = new RegExp(`^[A-Za-z0-9_-]{${Math.ceil(((TAG_BYTES + 2) * 4) / 3)},${MAX_CURSOR_LENGTH}}$`);

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/** A keyset position on (time, id): the common sort of lists in creation order. */
export interface Keyset {
  at: number;
  id: string;
}

type Kind = 's' | 'n' | 'n?';
type KeyValue = string | number | null;

export type Cursors = ReturnType<typeof createCursors>;

/**
 * Opaque keyset cursors: the last row's sort key, sealed with the installation's cursor secret
 * (kept in the database, so a restored backup keeps them valid). A plain cursor would show what
 * the server pages by: internal sequence numbers shared by every organization (the gap between
 * two of a ledger's changes tells how many changes other ledgers got), and a contact's name in
 * URLs that proxies keep. Sealed, a cursor shows nothing, and one that was altered, forged or
 * made for another list is a 400: the label a cursor is sealed and opened with names the list
 * and what it belongs to (its sort and ledger, organization, contact or webhook).
 *
 * The seal is deterministic authenticated encryption (the SIV construction of RFC 5297 with
 * HMAC-SHA-256 as its PRF): the tag is a MAC over the sort label and the key, and also the IV of
 * AES-256-CTR over the key. The same position gives the same cursor, and no IV is ever drawn at
 * random, so there is no nonce to repeat however many cursors an installation issues.
 */
export function createCursors(secret: Buffer) {
  const macKey = Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), 'contact-ledger cursor tag', 32));
  const encKey = Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), 'contact-ledger cursor cipher', 32));
  const tagOf = (sort: string, plain: Buffer) => createHmac('sha256', macKey).update(sort, 'utf8').update('\0').update(plain).digest().subarray(0, TAG_BYTES);
  const ctr = (tag: Buffer, data: Buffer) => {
    const cipher = createCipheriv('aes-256-ctr', encKey, tag);
    return Buffer.concat([cipher.update(data), cipher.final()]);
  };

  function encode(sort: string, key: KeyValue[]): string {
    const plain = Buffer.from(JSON.stringify(key), 'utf8');
    const tag = tagOf(sort, plain);
    return Buffer.concat([tag, ctr(tag, plain)]).toString('base64url');
  }

  /**
   * Returns the key values of a cursor made for `sort`, checked against `kinds` ('s' string,
   * 'n' number, 'n?' number or null); throws 400 invalid_cursor otherwise.
   */
  function decode(text: string, sort: string, kinds: Kind[]): KeyValue[] {
    const bad = () => badRequest('invalid_cursor', 'cursor is not valid for this list (a cursor continues the list it came from, with the same filters and sort); start again without it.', [{ path: 'cursor', message: 'invalid cursor' }]);
    if (!CURSOR_SHAPE.test(text)) throw bad();
    const sealed = Buffer.from(text, 'base64url');
    // base64url leaves the last character's low bits unread: only the one spelling the server issues counts
    if (sealed.toString('base64url') !== text) throw bad();
    const tag = sealed.subarray(0, TAG_BYTES);
    const plain = ctr(tag, sealed.subarray(TAG_BYTES));
    if (!timingSafeEqual(tag, tagOf(sort, plain))) throw bad();
    let values: unknown;
    try {
      values = JSON.parse(plain.toString('utf8'));
    } catch {
      throw bad();
    }
    // Only the server seals cursors, but a secret that leaked must not let a cursor reach SQL as anything but its kinds.
    if (!Array.isArray(values) || values.length !== kinds.length) throw bad();
    values.forEach((v: unknown, i) => {
      const k = kinds[i];
      // in characters, as names are limited (a name of 256 emoji is 512 UTF-16 units: its cursor was refused, a tester's case)
      const ok = k === 's' ? typeof v === 'string' && !longerThan(v, MAX_CURSOR_TEXT) : k === 'n' ? Number.isSafeInteger(v) : v === null || Number.isSafeInteger(v);
      if (!ok) throw bad();
    });
    return values as KeyValue[];
  }

  return {
    encode,
    decode,
    /** Cuts a `limit + 1` query result into a page and the cursor after its last item. */
    toPage<T>(rows: T[], limit: number, sort: string, keyOf: (row: T) => KeyValue[]): Page<T> {
      if (rows.length <= limit) return { items: rows, nextCursor: null };
      const items = rows.slice(0, limit);
      return { items, nextCursor: encode(sort, keyOf(items[items.length - 1]!)) };
    },
    /** Decodes an optional (time, id) cursor made for `sort`. */
    decodeKeyset(cursor: string | undefined, sort: string): Keyset | undefined {
      if (cursor === undefined) return undefined;
      const [at, id] = decode(cursor, sort, ['n', 's']);
      return { at: at as number, id: id as string };
    },
  };
}
