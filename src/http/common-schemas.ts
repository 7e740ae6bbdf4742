import { z } from 'zod';
import { parseTimestamp, TIMESTAMP_RULE } from '../clock.ts';
import { MAX_CURSOR_LENGTH } from '../cursor.ts';
import type { IdPrefix } from '../ids.ts';
import { emailProblem, INVISIBLE_ALL } from '../normalize.ts';

/** Schemas shared by every service's route declarations. */

const documented = new WeakMap<object, z.ZodType>();

/**
 * Says what the OpenAPI document shows for `schema`, when its own JSON Schema would say too
 * little: a request schema that lets anything through to code of its own (the single contact of
 * POST …/contacts, checked by validateContact). Only the document changes; requests are validated
 * by `schema` as before.
 */
export function documentAs<S extends z.ZodType>(schema: S, doc: z.ZodType): S {
  documented.set(schema, doc);
  return schema;
}

/** The schema documentAs gave `schema`, if any (src/http/openapi.ts). */
export const documentedAs = (schema: object): z.ZodType | undefined => documented.get(schema);

/** `limit` query parameter: 1–1000, default 100 (SPEC §2). */
export const limitParam = z
  .string()
  .regex(/^\d{1,7}$/, 'must be a whole number from 1 to 1000')
  .transform(Number)
  .pipe(z.number().int().min(1, 'must be at least 1').max(1000, 'must be at most 1000'))
  .optional()
  .meta({ description: 'Items per page, 1–1000 (default 100).' });

export const cursorParam = z.string().min(1).max(MAX_CURSOR_LENGTH).optional().meta({ description: 'Opaque cursor from the previous page\'s nextCursor.' });

export const pageQuery = z.strictObject({ limit: limitParam, cursor: cursorParam });

/** A time of day (`hh:mm`, seconds and a fraction optional), a space, and an offset of `hh`, `hhmm` or `hh:mm`. */
const UNENCODED_PLUS_OFFSET = /(\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?) (\d{2}(?::?\d{2})?)$/;

/**
 * A timestamp query parameter (SPEC §2), as epoch milliseconds. A `+` of a zone offset sent
 * unencoded arrives as a space (`…T09:00:00 02:00`); a space right before the offset of a time
 * can mean nothing else, so it is read as the `+` it was (as `sortBy` reads ` name`).
 */
export const timestampParam = z
  .string()
  .transform((s, ctx) => {
    const t = parseTimestamp(s) ?? parseTimestamp(s.replace(UNENCODED_PLUS_OFFSET, '$1+$2'));
    if (t === undefined) {
      ctx.addIssue({ code: 'custom', message: `must be ${TIMESTAMP_RULE}` });
      return z.NEVER;
    }
    return t;
  })
  .optional();

/** Refuses a NUL: C-string tools and exports cut text at it, SQLite's LIKE pattern ends at it, and contact fields refuse it. */
export const noNul = <S extends z.ZodType<string>>(schema: S) => schema.refine((s) => !s.includes('\0'), 'must not contain a NUL character');

/**
 * Refuses the other control characters (C0, DEL, C1: tabs, line breaks, ESC): a name is one line,
 * shown in lists, logs and terminals, where an escape sequence would act rather than show.
 */
export const noControl = <S extends z.ZodType<string>>(schema: S) => schema.refine((s) => !/[\x01-\x1f\x7f-\x9f]/.test(s), 'must not contain control characters (tabs, line breaks, escape sequences)');

/**
 * Whether a name shows anything: a character other than white space and the characters that show
 * nothing (INVISIBLE: a zero-width space, a Hangul filler, a byte order mark…; and the blank
 * braille pattern). A name made only of those passed as not empty and listed as a blank line.
 */
const showsSomething = (s: string) => s.replace(INVISIBLE_ALL, '').replace(/[\p{White_Space}\p{Cf}\u2800]/gu, '') !== '';
const VISIBLE_RULE = 'must show at least one character (not only spaces or invisible characters)';

/** A person's display name: trimmed, at most 256 characters, may be empty (not only invisible characters); no NUL, no control character. */
export const personName = noControl(noNul(z.string().trim().max(256, 'must be at most 256 characters'))).refine((s) => s === '' || showsSomething(s), `${VISIBLE_RULE}, or be empty`);

/** A name or label: trimmed, 1 to `max` characters, at least one that shows; no NUL, no control character. */
export const text = (max: number) => noControl(noNul(z.string().trim().min(1, 'must not be empty').max(max, `must be at most ${max} characters`))).refine((s) => s === '' || showsSomething(s), VISIBLE_RULE);

/** A user account's e-mail address: trimmed, at most 320 characters, in the shape a contact's must have, with no invisible or control character. */
export const emailField = z
  .string()
  .trim()
  .max(320, 'must be at most 320 characters')
  .superRefine((email, ctx) => {
    // the rules of a contact's e-mail: an account "adminb@x.org" + a zero-width space or a NUL
    // was a second account that looked like the first in every list (a tester's case)
    const problem = emailProblem(email);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

/** A page in the `{ <items>: [...], nextCursor }` envelope of SPEC §2. */
export function pageOf<T, O>(key: string, page: { items: T[]; nextCursor: string | null }, present: (t: T) => O): Record<string, unknown> {
  return { [key]: page.items.map(present), nextCursor: page.nextCursor };
}

// ── answers ───────────────────────────────────────────────────────────────
// Building blocks of the answer schemas (each service's presenters.ts): what the OpenAPI documents
// say of the JSON bodies, checked against every answer under the tests (route.ts checkAnswer).

/** A time in an answer: UTC ISO 8601 with milliseconds and a Z, as isoZ writes it (SPEC §2). */
export const isoTime = z.iso.datetime({ precision: 3 }).meta({ description: 'UTC, ISO 8601 with milliseconds and Z (2026-11-22T10:32:00.123Z)' });

/**
 * An id with its type prefix (SPEC §2: `c_…`, `l_…`). A pattern, not zod's startsWith, whose JSON Schema carries
 * `"format": "starts_with"` — no format of JSON Schema, which OpenAPI code generators trip on (a
 * tester's case).
 */
export const idOf = (prefix: IdPrefix) => z.string().regex(new RegExp(`^${prefix}_`), `must start with "${prefix}_"`);

/** A count of rows, records or items. */
export const countOf = z.int().min(0);

/** A page of `items` in the `{ <key>: [...], nextCursor }` envelope of SPEC §2 (pageOf). */
export function pageSchema<K extends string, T extends z.ZodType>(key: K, item: T) {
  return z.strictObject({
    [key]: z.array(item),
    nextCursor: z.string().nullable().meta({ description: 'The cursor of the next page; null on the last page' }),
  } as { [P in K]: z.ZodArray<T> } & { nextCursor: z.ZodNullable<z.ZodString> });
}
