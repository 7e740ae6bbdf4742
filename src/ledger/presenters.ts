import { z } from 'zod';
import { isoZ, isoZOrNull } from '../clock.ts';
import { mappingByName } from '../csv/columns.ts';
import { countOf, idOf, isoTime, pageSchema } from '../http/common-schemas.ts';
import { JOB_STATUSES } from '../jobs/queue-repo.ts';
import { TITLE_DOMAINS, TITLE_LEVELS } from '../title-rules.ts';
import { CONTACT_FIELDS, IMPORT_SOURCES, type Contact, type ImportJob, type Ledger } from './model.ts';

/**
 * Wire shapes of the ledger service (SPEC §4): the presenters, and the zod schemas of what they
 * answer (the OpenAPI document's answer schemas, checked against every answer under the tests).
 */

/** The e-mail statuses the person-data feed gives (src/tracking/feed-input.ts). */
export const EMAIL_STATUSES = ['valid', 'catch-all', 'best-guess'] as const;

export const LedgerAnswer = z
  .strictObject({
    id: idOf('l'),
    orgId: idOf('o'),
    name: z.string(),
    description: z.string().nullable().meta({ description: 'null when the ledger has none' }),
    contactCount: countOf,
    createdAt: isoTime,
    updatedAt: isoTime,
  })
  .meta({ id: 'Ledger' });

const timeOrNull = (description: string) => isoTime.nullable().meta({ description });

export const ContactAnswer = z
  .strictObject({
    id: idOf('c'),
    ledgerId: idOf('l'),
    importId: idOf('imp').nullable().meta({ description: 'The import job that added the contact' }),
    referenceId: z.string().nullable().meta({ description: "The client's own id, unique within the ledger" }),
    name: z.string().meta({ description: 'As submitted; never modified by the service' }),
    company: z.string().meta({ description: 'The current company (updated by tracking)' }),
    importCompany: z.string().meta({ description: 'The company as imported' }),
    importTitle: z.string().nullable().meta({ description: 'The title as imported' }),
    title: z.string().nullable(),
    titleLevel: z.enum(TITLE_LEVELS).nullable().meta({ description: 'Inferred from the title' }),
    titleDomain: z.enum(TITLE_DOMAINS).nullable().meta({ description: 'Inferred from the title' }),
    location: z.string().nullable(),
    contactInfo: z.strictObject({
      email: z.string().nullable(),
      emailStatus: z.enum(EMAIL_STATUSES).nullable().meta({ description: 'From the person-data feed' }),
    }),
    hasMultipleJobs: z.boolean().nullable().meta({ description: 'From the person-data feed; null when not known' }),
    linkedin: z.string().nullable().meta({ description: 'Canonical profile URL (https://www.linkedin.com/in/<slug>)' }),
    isVerified: z.boolean().meta({ description: 'Matched to a tracked person' }),
    jobStartedAt: timeOrNull('When the current job started, when known'),
    lastJobChangedAt: timeOrNull('The last time a new company was recorded; null: none since the import'),
    lastInfoChangedAt: timeOrNull('The last time any field was changed by tracking; null: none'),
    createdAt: isoTime,
    updatedAt: isoTime,
  })
  .meta({ id: 'Contact' });

/** A CSV upload's mapping by column name: contact field → column (name: one column, or first and last name columns). */
export const ColumnMappingAnswer = z
  .partialRecord(z.enum(CONTACT_FIELDS), z.union([z.string(), z.tuple([z.string(), z.string()])]))
  .meta({ id: 'ColumnMapping', description: 'Contact field → the column it is read from; name may be [first name column, last name column]' });

export const ImportJobAnswer = z
  .strictObject({
    id: idOf('imp'),
    ledgerId: idOf('l'),
    source: z.enum(IMPORT_SOURCES),
    fileName: z.string().nullable(),
    status: z.enum(JOB_STATUSES),
    submitted: countOf,
    imported: countOf,
    duplicates: countOf,
    invalid: countOf,
    matched: countOf,
    jobChanges: countOf,
    processed: countOf.meta({ description: 'imported + duplicates + invalid' }),
    createdBy: z.string().nullable().meta({ description: 'The user or service account that started it' }),
    createdAt: isoTime,
    startedAt: isoTime.nullable(),
    finishedAt: isoTime.nullable(),
    message: z.string().nullable().meta({ description: 'Why a job failed' }),
    errorsUrl: z.url().nullable().meta({ description: 'The rejected rows as CSV; null when no row was rejected' }),
    columns: z.array(z.string()).optional().meta({ description: "A CSV upload's columns, once read" }),
    mapping: ColumnMappingAnswer.optional(),
  })
  .meta({ id: 'ImportJob' });

export const LedgerPage = pageSchema('ledgers', LedgerAnswer);
export const ContactPage = pageSchema('contacts', ContactAnswer);
export const ImportJobPage = pageSchema('imports', ImportJobAnswer);
/** GET …/contacts: a page, or with view=count the number of matching contacts. */
export const ContactListAnswer = z.union([ContactPage, z.strictObject({ count: countOf })]);
export const BulkDeleteAnswer = z.strictObject({ countRowsDeleted: countOf });

/** What POST …/imports/preview answers (ImportService.preview). */
export const ImportPreviewAnswer = z.strictObject({
  columns: z.array(z.string()),
  delimiter: z.string().meta({ description: 'The field delimiter detected' }),
  rowCount: countOf.meta({ description: 'Data rows in the file' }),
  rows: z.array(z.array(z.string())).meta({ description: 'The first 10 rows, cells as the import reads them; a row over 1 MiB is left out (the import rejects it), the next shown in its place' }),
  suggestedMapping: ColumnMappingAnswer,
  mapping: ColumnMappingAnswer.meta({ description: 'The mapping the import would use (the one sent, or the suggested one)' }),
  missing: z.array(z.enum(['name', 'company'])).meta({ description: 'Required fields no column is mapped to' }),
  ambiguous: z
    .array(
      z.strictObject({
        field: z.enum(CONTACT_FIELDS),
        columns: z.array(z.int().nonnegative()).min(2).meta({ description: 'The columns that could be the field, by their place in `columns` (0 is the first)' }),
        message: z.string().meta({ description: 'Why, and what a mapping does about it: what the import answers (422) when it is sent without one' }),
      }),
    )
    .meta({
      description:
        'Fields left out of `mapping` and `suggestedMapping` because two columns or more could be them (names alike but for case, spaces and `_ - .`, or the same name twice). An import refuses such a file unless its mapping names the column by its exact text (`{"email": "E-mail"}`) or maps the field to null; columns with the same text cannot be told apart by a mapping: rename one',
    }),
  nameParts: z
    .strictObject({
      first: z.array(z.int().nonnegative()),
      last: z.array(z.int().nonnegative()),
    })
    .meta({
      description:
        'The columns whose header names a first name (`First Name`, `Given name`, …) and those naming a last name, by their place in `columns` (0 is the first), in the header\'s order: what a `name` pair (`{"name": ["Given name", "Last Name"]}`) can be made of. The suggestion takes the first of each, unless a name column is there or the name is ambiguous',
    }),
});

/** Where the ledger API lives, under the service's base URL. */
export const LEDGER_PREFIX = '/api/ledger/v1';

/** The URL of a ledger (the base of its contacts', imports' and changes' URLs). */
export const ledgerUrl = (baseUrl: string, orgId: string, ledgerId: string): string => `${baseUrl}${LEDGER_PREFIX}/orgs/${orgId}/ledgers/${ledgerId}`;

export const presentLedger = (l: Ledger): z.output<typeof LedgerAnswer> => ({
  id: l.id,
  orgId: l.orgId,
  name: l.name,
  description: l.description || null, // none is null, as a contact's absent fields (SPEC §4.1)
  contactCount: l.contactCount,
  createdAt: isoZ(l.createdAt),
  updatedAt: isoZ(l.updatedAt),
});

export const presentContact = (c: Contact) => ({
  id: c.id,
  ledgerId: c.ledgerId,
  importId: c.importId,
  referenceId: c.referenceId,
  name: c.name,
  company: c.company,
  importCompany: c.importCompany,
  importTitle: c.importTitle,
  title: c.title,
  titleLevel: c.titleLevel,
  titleDomain: c.titleDomain,
  location: c.location,
  contactInfo: { email: c.email, emailStatus: c.emailStatus },
  hasMultipleJobs: c.hasMultipleJobs,
  linkedin: c.linkedin,
  isVerified: c.isVerified,
  jobStartedAt: isoZOrNull(c.jobStartedAt),
  lastJobChangedAt: isoZOrNull(c.lastJobChangedAt),
  lastInfoChangedAt: isoZOrNull(c.lastInfoChangedAt),
  createdAt: isoZ(c.createdAt),
  updatedAt: isoZ(c.updatedAt),
});

/** An import job; `base` is the ledger's URL path, for `errorsUrl`. */
export const presentImport = (i: ImportJob, base: string) => ({
  id: i.id,
  ledgerId: i.ledgerId,
  source: i.source,
  fileName: i.fileName,
  status: i.status,
  submitted: i.submitted,
  imported: i.imported,
  duplicates: i.duplicates,
  invalid: i.invalid,
  matched: i.matched,
  jobChanges: i.jobChanges,
  processed: i.imported + i.duplicates + i.invalid,
  createdBy: i.createdBy,
  createdAt: isoZ(i.createdAt),
  startedAt: isoZOrNull(i.startedAt),
  finishedAt: isoZOrNull(i.finishedAt),
  message: i.message,
  errorsUrl: i.duplicates + i.invalid > 0 ? `${base}/imports/${i.id}/errors` : null,
  ...(i.format ? { columns: i.format.columns, mapping: mappingByName(i.format.columns, i.format.mapping) } : {}),
});
