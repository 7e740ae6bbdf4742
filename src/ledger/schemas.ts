import { z } from 'zod';
import { cursorParam, documentAs, limitParam, noNul, text, timestampParam } from '../http/common-schemas.ts';
import { MAX_LENGTH } from './contact-input.ts';
import { MAX_BULK_DELETE } from './contact-service.ts';
import { isId } from '../ids.ts';
import type { ContactFilter, ContactSort } from './contacts-list-repo.ts';
import { canonicalLinkedin, emailProblem } from '../normalize.ts';

/** Request schemas of the ledger service; they validate requests and generate its OpenAPI document. */

/** A description of null is none, as "" is (at creation, and to clear one). */
export const NewLedger = z.strictObject({
  name: text(200),
  description: noNul(z.string().trim().max(2000, 'must be at most 2000 characters')).nullable().optional(),
});

export const LedgerPatch = NewLedger.partial().refine((p) => p.name !== undefined || p.description !== undefined, 'give name or description');

const optionalText = (max: number, description?: string) => z.string().max(max).nullable().optional().meta(description ? { description } : {});

/**
 * What the OpenAPI document shows of a submitted contact (SPEC §4.1). Contacts are validated by
 * src/ledger/contact-input.ts validateContact, not by this schema: keep the two alike (MAX_LENGTH).
 */
const NewContactDoc = z
  .strictObject({
    name: z.string().max(MAX_LENGTH.name).meta({ description: 'Required; kept as given, never modified' }),
    company: z.string().max(MAX_LENGTH.company).meta({ description: 'Required' }),
    title: optionalText(MAX_LENGTH.title),
    location: optionalText(MAX_LENGTH.location),
    email: optionalText(MAX_LENGTH.email, 'Or contactInfo.email (the two must agree)'),
    contactInfo: z
      .strictObject({
        email: optionalText(MAX_LENGTH.email),
        emailStatus: z.null().optional().meta({ description: 'Set by the person-data feed only: leave it out or send null' }),
      })
      .nullable()
      .optional()
      .meta({ description: 'As a contact is answered (GET)' }),
    linkedin: optionalText(MAX_LENGTH.linkedin, 'A LinkedIn profile URL, stored canonically (https://www.linkedin.com/in/<slug>)'),
    referenceId: z
      .union([z.string().max(MAX_LENGTH.referenceId), z.int(), z.null()])
      .optional()
      .meta({ description: "The client's own id, unique within the ledger: a string, or a whole number within ±(2^53−1), stored as text" }),
  })
  .meta({ id: 'NewContact', description: 'One contact. Text fields are trimmed (name and company are kept as given); an empty string or null is an absent value.' });

/**
 * `{contacts:[…]}` or one contact. Batch rows are validated one by one by the import job (bad rows
 * are rejected with a reason, the rest imported); a single contact is validated at once (422).
 */
export const ContactsBody = z.union([
  z.strictObject({ contacts: z.array(documentAs(z.unknown(), NewContactDoc)).meta({ description: 'Contacts to add (each like the single-contact form); at most MAX_API_CONTACTS. Each row is validated by the import job: a bad row is rejected with a reason, the others are imported.' }) }),
  documentAs(z.record(z.string(), z.unknown()), NewContactDoc),
], { error: 'send one contact object or {"contacts":[…]}' });

export const BulkDelete = z.strictObject({
  // no bounds here: an empty list deletes nothing (200), a list over MAX_BULK_DELETE is 413 like an oversized batch (contact-service.ts)
  contactIds: z.array(z.string().max(64)).meta({ maxItems: MAX_BULK_DELETE, description: `At most ${MAX_BULK_DELETE} ids a call (413 beyond)` }),
});

/** A text filter: a NUL would end SQLite's LIKE pattern (and no stored text holds one). */
const filterText = (max: number) => noNul(z.string().min(1, 'must not be empty').max(max, `must be at most ${max} characters`));
const substring = filterText(256).optional();
const bool = z.enum(['true', 'false'], { error: 'must be true or false' }).transform((v) => v === 'true').optional();

export const SORTS = ['+createdAt', '-createdAt', '+name', '-name', '-lastJobChangedAt', '-lastInfoChangedAt'] as const;

const sortBy = z
  .string()
  .transform((s) => (s.startsWith(' ') ? `+${s.slice(1)}` : /^[A-Za-z]/.test(s) ? `+${s}` : s)) // a raw "+" arrives as a space
  .pipe(z.enum(SORTS, { error: `must be one of ${SORTS.join(', ')}` }))
  .optional()
  // the JSON Schema of a transform's input is just a string: the document states the values
  .meta({ enum: [...SORTS], description: 'The order (default +createdAt); a field name alone, or with a "+" that arrived as a space, is read as +<field>' });

const filters = {
  lastJobChangedAt: timestampParam.meta({ description: 'Contacts whose last job change is at or after this time.' }),
  lastJobChangedAtBefore: timestampParam,
  lastInfoChangedAt: timestampParam.meta({ description: 'Contacts whose last information change is at or after this time.' }),
  lastInfoChangedAtBefore: timestampParam,
  referenceId: z.string().trim().transform((s) => s.normalize('NFC')).pipe(filterText(128)).optional(), // trimmed and in NFC, as imports store it
  linkedin: z
    .string()
    .transform((s, ctx) => {
      const c = canonicalLinkedin(s);
      if (!c) {
        ctx.addIssue({ code: 'custom', message: 'must be a LinkedIn profile URL' });
        return z.NEVER;
      }
      return c;
    })
    .optional(),
  email: z
    .string()
    .trim()
    .pipe(filterText(320))
    .transform((s, ctx) => {
      // a `+` sent unencoded (ann+crm@…) arrives as a space, which no address holds
      const email = s.replace(/ /g, '+');
      const problem = emailProblem(email, 'email', true);
      if (problem) {
        ctx.addIssue({ code: 'custom', message: problem });
        return z.NEVER;
      }
      return email;
    })
    .optional(),
  name: substring,
  company: substring,
  title: substring,
  isVerified: bool,
  importId: z.string().refine((s) => isId('imp', s), 'must be an import id as its import was answered with: imp_ and 26 lower-case letters or digits').optional(),
  createdAfter: timestampParam,
  createdBefore: timestampParam,
  sortBy,
};

export const ContactListQuery = z.strictObject({
  ...filters,
  limit: limitParam,
  cursor: cursorParam,
  view: z.enum(['count'], { error: 'must be count' }).optional(),
});

/** Field delimiters a download may use, by name (a `;` or a tab would have to be percent-encoded). */
export const DOWNLOAD_DELIMITERS = { comma: ',', semicolon: ';', tab: '\t' } as const;

/** How a CSV file we write is shaped for a spreadsheet: downloads and rejected-rows CSVs alike. */
const csvFileOptions = {
  escapeFormulas: bool,
  bom: bool.meta({ description: 'true: start the file with a UTF-8 byte order mark, which Excel needs to read the file as UTF-8 (default false)' }),
  delimiter: z
    .enum(Object.keys(DOWNLOAD_DELIMITERS) as [keyof typeof DOWNLOAD_DELIMITERS, ...(keyof typeof DOWNLOAD_DELIMITERS)[]], { error: 'must be comma, semicolon or tab' })
    .optional()
    .meta({ description: 'The field delimiter: comma (default), or semicolon for spreadsheets whose list separator is ";", or tab' }),
};

/** The most contacts a download's `limit` may ask for (a whole ledger is downloaded without one). */
export const MAX_DOWNLOAD_LIMIT = 1_000_000_000;

export const DownloadQuery = z.strictObject({
  ...filters,
  ...csvFileOptions,
  limit: z
    .string()
    .regex(/^\d{1,10}$/, `must be a whole number from 1 to ${MAX_DOWNLOAD_LIMIT}`)
    .transform(Number)
    .pipe(z.number().int().min(1, 'must be at least 1').max(MAX_DOWNLOAD_LIMIT, `must be at most ${MAX_DOWNLOAD_LIMIT}`))
    .optional()
    .meta({ description: 'At most this many contacts in the file (default: every matching one).' }),
  cursor: cursorParam.meta({ description: "A list page's nextCursor (the same filters and sort): the file starts where that page would." }),
});

/** The rejected-rows CSV: formula escaping (on unless `escapeFormulas=false`), BOM and delimiter as for downloads — the delimiter the upload's by default. */
export const RejectedRowsQuery = z.strictObject({
  ...csvFileOptions,
  delimiter: csvFileOptions.delimiter.meta({ description: "The field delimiter: comma, semicolon or tab; by default the uploaded file's own (`,` `;` or tab; comma for an API batch or any other)" }),
});

export type ListInput = z.output<typeof ContactListQuery> | z.output<typeof DownloadQuery>;

/** Splits validated query values into the repository's filter and sort. */
export function filterOf(q: ListInput): { filter: ContactFilter; sort: ContactSort } {
  const { sortBy: sort, ...rest } = q as Record<string, unknown>;
  const filter: ContactFilter = {};
  for (const key of Object.keys(filters)) {
    if (key !== 'sortBy' && rest[key] !== undefined) (filter as Record<string, unknown>)[key] = rest[key];
  }
  return { filter, sort: (sort as ContactSort | undefined) ?? '+createdAt' };
}
