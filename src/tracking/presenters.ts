import { z } from 'zod';
import { isoZ, isoZOrNull } from '../clock.ts';
import { countOf, idOf, isoTime, pageSchema } from '../http/common-schemas.ts';
import { JOB_STATUSES } from '../jobs/queue-repo.ts';
import { FEED_FORMATS } from './feed-reader.ts';
import { FEED_SOURCES, unchangedRecords, type FeedJob } from './feeds-repo.ts';
import { ContactAnswer, EMAIL_STATUSES } from '../ledger/presenters.ts';
import { INFO_FIELDS, type Change } from './model.ts';
import type { StoredPerson } from './people-service.ts';

/**
 * Wire shapes of change tracking (SPEC §5): the presenters, and the zod schemas of what they
 * answer (the OpenAPI document's answer schemas, checked against every answer under the tests).
 */

const changeBase = {
  id: idOf('chg'),
  contactId: idOf('c'),
  ledgerId: idOf('l'),
  detectedAt: isoTime.meta({ description: 'When the service recorded the change' }),
  observedAt: isoTime.nullable().meta({ description: 'When the feed observed the new value, when it said' }),
};
const jobSide = z.strictObject({ company: z.string(), title: z.string().nullable() });
/** An information change's one field: text, an e-mail status, a boolean (hasMultipleJobs) or a time (jobStartedAt); null when not known. */
const infoSide = z.partialRecord(z.enum(INFO_FIELDS), z.union([z.string(), z.boolean(), z.null()]));

export const ChangeAnswer = z
  .discriminatedUnion('type', [
    z.strictObject({ ...changeBase, type: z.literal('job').meta({ description: 'A new company' }), from: jobSide, to: jobSide }),
    z.strictObject({
      ...changeBase,
      type: z.literal('info').meta({ description: 'Another field changed' }),
      field: z.enum(INFO_FIELDS),
      from: infoSide.meta({ description: '{<field>: the value before}' }),
      to: infoSide.meta({ description: '{<field>: the value after}' }),
    }),
  ])
  .meta({ id: 'Change' });

export const ChangePage = pageSchema('changes', ChangeAnswer);

/** `include=contact`: each change of the feed with its contact as it is now (null: deleted since the change was read). */
const withContact = { contact: ContactAnswer.nullable().optional().meta({ description: 'With include=contact: the contact as it is now; null when it was deleted as the page was read' }) };
const ChangeFeedItem = z
  .discriminatedUnion('type', [ChangeAnswer.options[0].extend(withContact), ChangeAnswer.options[1].extend(withContact)])
  .meta({ id: 'ChangeFeedItem' });
/** The ledger-wide change feed: a page, and where to go on from later (resumeCursor, always set). */
export const ChangeFeedAnswer = pageSchema('changes', ChangeFeedItem).extend({ resumeCursor: z.string().meta({ description: 'Continues after this page, also later, when more changes were recorded' }) });

export const FeedJobAnswer = z
  .strictObject({
    id: idOf('feed'),
    source: z.enum(FEED_SOURCES),
    fileName: z.string().nullable(),
    format: z.enum(FEED_FORMATS),
    gzip: z.boolean(),
    status: z.enum(JOB_STATUSES),
    received: countOf,
    invalid: countOf,
    stale: countOf,
    repeated: countOf,
    personsUpdated: countOf,
    unchanged: countOf.meta({ description: 'Records that told what was known already; received = invalid + stale + repeated + personsUpdated + unchanged' }),
    contactsMatched: countOf,
    jobChanges: countOf,
    infoChanges: countOf,
    createdBy: z.string().nullable(),
    createdAt: isoTime,
    startedAt: isoTime.nullable(),
    finishedAt: isoTime.nullable(),
    message: z.string().nullable().meta({ description: 'Why a job failed' }),
    errorsUrl: z.url().nullable().meta({ description: 'The rejected records as CSV; null when none was rejected' }),
  })
  .meta({ id: 'FeedJob' });

export const FeedJobPage = pageSchema('feeds', FeedJobAnswer);

const utcDay = z.string().regex(/^\d{8}$/).meta({ description: 'A UTC day, YYYYMMDD' });

/** GET …/streams/daily: the daily change sets, newest day first. */
export const DailySetPage = pageSchema(
  'streams',
  z
    .strictObject({
      date: utcDay,
      createdAt: isoTime,
      files: z.array(z.strictObject({ name: z.string(), bytes: countOf, contacts: countOf.meta({ description: 'Contacts (lines) in the file' }), url: z.url() })),
    })
    .meta({ id: 'DailyChangeSet' }),
).extend({ writtenThrough: utcDay.meta({ description: 'Every day up to this one (of the last 31) with changes has its set' }) });

export const presentChange = (c: Change) => ({
  id: c.id,
  contactId: c.contactId,
  ledgerId: c.ledgerId,
  type: c.type,
  ...(c.field ? { field: c.field } : {}),
  from: c.from,
  to: c.to,
  detectedAt: isoZ(c.detectedAt),
  observedAt: isoZOrNull(c.observedAt),
});

export const presentFeed = (f: FeedJob, base: string): z.output<typeof FeedJobAnswer> => ({
  id: f.id,
  source: f.source,
  fileName: f.fileName,
  format: f.format,
  gzip: f.gzip,
  status: f.status,
  received: f.received,
  invalid: f.invalid,
  stale: f.stale,
  repeated: f.repeated,
  personsUpdated: f.personsUpdated,
  unchanged: unchangedRecords(f),
  contactsMatched: f.contactsMatched,
  jobChanges: f.jobChanges,
  infoChanges: f.infoChanges,
  createdBy: f.createdBy,
  createdAt: isoZ(f.createdAt),
  startedAt: isoZOrNull(f.startedAt),
  finishedAt: isoZOrNull(f.finishedAt),
  message: f.message,
  errorsUrl: f.invalid > 0 ? `${base}/feed/${f.id}/errors` : null,
});

/** What the people store holds about a person (an access request; docs/operations.md, Erasure requests). */
export const StoredPersonAnswer = z
  .strictObject({
    id: z.string().meta({ description: "The store's own id of the person (p_…, opaque): forgets this one alone (DELETE /people?id=…) among several a shared key finds" }),
    personId: z.string().nullable().meta({ description: "The feed's personId the person was first known by" }),
    otherPersonIds: z.array(z.string()).meta({ description: 'Further personIds that find the person: each came in a record with their LinkedIn URL' }),
    linkedin: z.string().nullable(),
    email: z.string().nullable(),
    emailStatus: z.enum(EMAIL_STATUSES).nullable(),
    name: z.string(),
    company: z.string(),
    title: z.string().nullable(),
    location: z.string().nullable(),
    jobStartedAt: isoTime.nullable(),
    hasMultipleJobs: z.boolean().nullable(),
    observedAt: isoTime.meta({ description: 'When the feed last observed the person' }),
    updatedAt: isoTime.meta({ description: 'When the store last changed what it holds about them' }),
    contactsMatched: countOf.meta({ description: "Contacts matched to the person, in every organization's ledgers" }),
  })
  .meta({ id: 'StoredPerson' });
export const StoredPeopleAnswer = z.strictObject({ people: z.array(StoredPersonAnswer) });
export const PeopleForgottenAnswer = z.strictObject({
  peopleForgotten: countOf,
  contactsUnmatched: countOf.meta({ description: 'Contacts that were matched to them: unmatched, their fields as they were' }),
});

export const presentStoredPerson = ({ id, person: p, contacts, otherPersonIds }: StoredPerson): z.infer<typeof StoredPersonAnswer> => ({
  id,
  personId: p.externalId,
  otherPersonIds,
  linkedin: p.linkedinSlug === null ? null : `https://www.linkedin.com/in/${p.linkedinSlug}`,
  email: p.email,
  emailStatus: p.emailStatus as z.infer<typeof StoredPersonAnswer>['emailStatus'],
  name: p.name,
  company: p.company,
  title: p.title,
  location: p.location,
  jobStartedAt: isoZOrNull(p.jobStartedAt),
  hasMultipleJobs: p.hasMultipleJobs,
  observedAt: isoZ(p.observedAt),
  updatedAt: isoZ(p.updatedAt),
  contactsMatched: contacts,
});
