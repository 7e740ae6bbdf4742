import contentDisposition from 'content-disposition';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { isoZ } from '../clock.ts';
import { Readable } from 'node:stream';
import { z } from 'zod';
import { csvHeader, csvLines } from '../csv/write.ts';
import { notFound, unsupportedMediaType } from '../errors.ts';
import { cursorParam, limitParam, pageOf, pageQuery, timestampParam } from '../http/common-schemas.ts';
import { answerJob, idempotencyKeyHeader, jobAnswers } from '../http/idempotency.ts';
import { readableAsUtf8, SINCE_READ_503, type ApiRouter, type HeaderSpec } from '../http/route.ts';
import { receiveBodyToFile, uploadedFileName } from '../http/upload.ts';
import { newId } from '../ids.ts';
import type { FileSpace } from '../storage/free-space.ts';
import type { ChangeService } from './change-service.ts';
import type { Change } from './model.ts';
import { presentContact } from '../ledger/presenters.ts';
import type { DailySets } from './daily-sets.ts';
import type { FeedFormat } from './feed-reader.ts';
import type { ArrivingFeeds } from './feed-files.ts';
import type { FeedService } from './feed-service.ts';
import type { PeopleService } from './people-service.ts';
import { canonicalLinkedin, emailProblem } from '../normalize.ts';
import { ChangeFeedAnswer, ChangePage, DailySetPage, FeedJobAnswer, FeedJobPage, PeopleForgottenAnswer, presentChange, presentFeed, presentStoredPerson, StoredPeopleAnswer } from './presenters.ts';

export interface TrackingRouteOptions {
  baseUrl: string;
  prefix: string;
  tmpDir: string;
  maxUploadBytes: number;
  /** Told when a feed body is refused for lack of space and when one is stored whole (/readyz's diskSpace). */
  uploadSpace?: FileSpace;
}

const FORMATS: Record<string, FeedFormat> = {
  'application/x-ndjson': 'ndjson',
  'application/ndjson': 'ndjson', // without the x-, as many clients send it (a tester's 415)
  'application/jsonl': 'ndjson',
  'application/x-jsonlines': 'ndjson',
  'text/csv': 'csv',
  'application/json': 'json',
};

/** Content codings a feed body may declare: the stored file is read as gzip when its content is gzip (feed-files.ts isGzip). */
const FEED_CODINGS = new Set(['identity', 'gzip', 'x-gzip']);

const ChangesQuery = z.strictObject({
  since: timestampParam,
  type: z.enum(['job', 'info'], { error: 'must be job or info' }).optional(),
  limit: limitParam,
  cursor: cursorParam,
  include: z.enum(['contact'], { error: 'must be contact' }).optional().meta({ description: 'contact: each change carries its contact as it is now (`contact`), saving a request a contact' }),
});

const personKey = z.string().trim().min(1, 'must not be empty').max(1000);
/**
 * How an access or erasure request names a person in the people store: any of their keys, name
 * and company together (people-service.ts).
 */
const PeopleQuery = z
  .strictObject({
    id: z
      .string()
      .refine((id) => !/^\d+$/.test(id), "must be a stored person's id (p_…, as GET /people answers it since the forty-first session: the numbers it showed before are no ids any more)")
      .refine((id) => /^\d+$/.test(id) || /^p_[0-9a-z]{26}$/.test(id), "must be a stored person's id (GET /people answers it)")
      .optional(),
    personId: personKey.optional(),
    linkedin: personKey.refine((u) => canonicalLinkedin(u) !== undefined, 'must be a LinkedIn profile URL (linkedin.com/in/…)').optional(),
    // as a LinkedIn URL is: a mistyped address found nobody, and a forget answered 0 and 0 (a tester's case)
    email: personKey.refine((e) => emailProblem(e, 'email', true) === undefined, 'must be an e-mail address').optional(),
    name: personKey.optional(),
    company: personKey.optional(),
  })
  .superRefine((q, ctx) => {
    if (q.id === undefined && q.personId === undefined && q.linkedin === undefined && q.email === undefined && q.name === undefined && q.company === undefined) {
      ctx.addIssue({ code: 'custom', path: ['personId'], message: 'name the person: id, personId, linkedin, email, or name and company' });
    }
    if ((q.name === undefined) !== (q.company === undefined)) {
      ctx.addIssue({ code: 'custom', path: [q.name === undefined ? 'name' : 'company'], message: 'name and company go together' });
    }
  });

/**
 * The header with `( ) ' * !` percent-encoded in a `filename*` value: RFC 8187 leaves them out of
 * its characters, but JavaScript's encodeURIComponent (what pages and scripts use to write the
 * value) keeps them, and a feed file named `people (1).jsonl` was refused (a tester's case). Only
 * a parameter of its own (after `;`), not text inside a quoted `filename="…"`.
 */
const extValueEncoded = (raw: string): string =>
  raw.replace(/(;\s*filename\*\s*=\s*[^';"]*'[^';"]*')([^;"]*)(?=;|$)/i, (_, head: string, value: string) => head + value.replace(/[()'*!]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`));

/** Whether percent-encoded text names UTF-8 bytes (decodeURIComponent refuses any that are not). */
function decodesAsUtf8(encoded: string): boolean {
  try {
    decodeURIComponent(encoded);
    return true;
  } catch {
    return false;
  }
}

/**
 * The file name of a feed sent as the request body, in a Content-Disposition header as a response
 * would give it (RFC 6266: `attachment; filename="…"` or `filename*=UTF-8''…`), kept as the feed
 * job's `fileName` — as a multipart CSV import keeps its part's: the feeds list said nothing of
 * which file a feed was (a tester's case).
 */
const FEED_FILE_NAME: HeaderSpec = {
  schema: z.string().transform((raw, ctx) => {
    let name: string | undefined;
    const header = extValueEncoded(raw);
    // bytes that are not UTF-8 in a UTF-8 filename*: refused, as a name is stored as sent or not at
    // all; the parser put U+FFFD in their place and the feed was kept as "��.jsonl" (a feed tester's case)
    const utf8 = /;\s*filename\*\s*=\s*utf-?8'[^';"]*'([^;"]*)/i.exec(header)?.[1];
    if (utf8 !== undefined && !decodesAsUtf8(utf8)) {
      ctx.addIssue({ code: 'custom', message: `its filename* is not UTF-8 once percent-decoded; encode the name's UTF-8 bytes, got "${raw.slice(0, 100)}"` });
      return z.NEVER;
    }
    try {
      name = uploadedFileName(contentDisposition.parse(header).parameters.filename ?? '');
    } catch {
      // reported below
    }
    if (name === undefined) {
      ctx.addIssue({ code: 'custom', message: `must be attachment; filename="…" (RFC 6266), got "${raw.slice(0, 100)}"` });
      return z.NEVER;
    }
    return name;
  }),
  code: 'invalid_content_disposition',
  description: 'The name of the file sent, kept as the feed job\'s fileName: `attachment; filename="records.ndjson"`, or `filename*=UTF-8\'\'…` for other characters (RFC 6266)',
};

/** Feed ingestion (installation-wide) and change history (per ledger), SPEC §5. */
export function registerTrackingRoutes(r: ApiRouter, svc: { feeds: FeedService; changes: ChangeService; dailySets: DailySets; people: PeopleService; arrivingFeeds: ArrivingFeeds }, opts: TrackingRouteOptions): void {
  const base = `${opts.baseUrl}${opts.prefix}`;
  r.add(
    {
      method: 'post',
      path: '/feed',
      access: { permission: 'feed' },
      bulk: true,
      summary: 'Ingest person records (NDJSON, CSV or a JSON array; optionally gzip) as a feed job',
      rawBody: {
        contentTypes: Object.keys(FORMATS),
        description: 'The records, plain or gzip-compressed: gzip is recognised by its content, with or without Content-Encoding: gzip. Any other Content-Encoding → 415.',
      },
      headers: { ...idempotencyKeyHeader("the caller's own"), 'Content-Disposition': FEED_FILE_NAME },
      responses: { ...jobAnswers('feed job', FeedJobAnswer), 413: { description: 'Over the upload limit' }, 415: { description: 'Not a feed format, or a Content-Encoding other than gzip' } },
    },
    async (ctx, { caller, headers, recheckAccess }) => {
      const type = (ctx.get('Content-Type').split(';')[0] ?? '').trim().toLowerCase();
      const format = FORMATS[type];
      if (!format) throw unsupportedMediaType(`Send the records as ${Object.keys(FORMATS).join(', ')} (gzip allowed), not ${type || 'without a Content-Type'}.`);
      // records are read as UTF-8 (a record that is not is rejected alone): a body declared in
      // another charset would lose every record with a non-ASCII letter, so it is refused whole
      const charset = ctx.request.charset;
      if (!readableAsUtf8(charset)) {
        throw unsupportedMediaType(`Send the records in UTF-8; charset=${charset} is not supported.`);
      }
      const coding = ctx.get('Content-Encoding').trim().toLowerCase();
      if (coding && !FEED_CODINGS.has(coding)) {
        // refused before the body is read: problems() closes the connection after the answer
        throw unsupportedMediaType(`Content-Encoding "${coding}" is not supported for feeds; send the records uncompressed or gzip-compressed (Content-Encoding: gzip, or none: gzip is recognised by its content).`);
      }
      mkdirSync(opts.tmpDir, { recursive: true, mode: 0o700 });
      const tmp = join(opts.tmpDir, `${newId('feed')}.upload`);
      // counted until it is a feed job or refused: a person forgotten meanwhile would come back with it
      const arrived = svc.arrivingFeeds.begin();
      try {
        await receiveBodyToFile(ctx, tmp, opts.maxUploadBytes, opts.uploadSpace);
        try {
          await recheckAccess(); // the upload may have taken minutes
        } catch (err) {
          rmSync(tmp, { force: true });
          throw err;
        }
        const fileName = (headers['Content-Disposition'] as string | undefined) ?? null;
        const { feed, replayed } = await svc.feeds.createFromUpload(caller, tmp, fileName, format, headers['Idempotency-Key'] as string | undefined);
        answerJob(ctx, replayed, `${base}/feed/${feed.id}`, presentFeed(feed, base));
      } finally {
        arrived();
      }
    },
  );
  r.add({ method: 'get', path: '/feed', access: { permission: 'feed' }, query: pageQuery, summary: 'Feed jobs, newest first', responses: { 200: { description: 'A page of feed jobs', schema: FeedJobPage } } }, (ctx, { query }) => {
    ctx.body = pageOf('feeds', svc.feeds.list(query.limit ?? 100, query.cursor), (f) => presentFeed(f, base));
  });
  r.add({ method: 'get', path: '/feed/:feedId', access: { permission: 'feed' }, summary: "A feed job's status and counts", responses: { 200: { description: 'The feed job', schema: FeedJobAnswer } } }, (ctx, { params }) => {
    ctx.body = presentFeed(svc.feeds.get(params.feedId!), base);
  });
  r.add({ method: 'get', path: '/feed/:feedId/errors', access: { permission: 'feed' }, summary: 'Rejected records as CSV (record, line, reason)', responses: { 200: { description: 'text/csv', contentType: 'text/csv' } } }, (ctx, { params }) => {
    const feed = svc.feeds.get(params.feedId!);
    ctx.type = 'text/csv; charset=utf-8';
    ctx.set('Content-Disposition', `attachment; filename="feed-${feed.id}-errors.csv"`);
    const pages = svc.feeds.rejections(feed.id);
    ctx.body = Readable.from(
      (function* () {
        yield csvHeader(['record', 'line', 'reason']);
        for (const page of pages) yield csvLines(page.map((p) => [p.recordNo, p.line, p.reason]), true);
      })(),
      { objectMode: false },
    );
  });

  // the people store answering for one person: an access request, an erasure request (docs/operations.md)
  r.add({ method: 'get', path: '/people', access: 'superuser', query: PeopleQuery, summary: 'What the people store holds about a person (every person known by any of the keys given)', responses: { 200: { description: '{people}: none when the store knows nobody by them', schema: StoredPeopleAnswer }, 409: { description: 'More than 100 people are known by these keys (name the person by a key of their own)' } } }, async (ctx, { caller, query }) => {
    ctx.body = { people: (await svc.people.find(caller, query)).map(presentStoredPerson) };
  });
  r.add({ method: 'delete', path: '/people', access: 'superuser', query: PeopleQuery, summary: 'Forget a person: every person the store knows by any of the keys given goes; contacts matched to them are unmatched', responses: { 200: { description: 'How many people were forgotten and contacts unmatched (0 and 0: nobody known by them)', schema: PeopleForgottenAnswer }, 409: { description: 'An e-mail address or a name and company that several people have (forget the one meant by its id), or feeds not yet applied' } } }, async (ctx, { caller, query }) => {
    ctx.body = await svc.people.forget(caller, query);
  });
  // the reasons quote refused values (an erasure request: docs/operations.md)
  r.add({ method: 'delete', path: '/feed/:feedId/errors', access: { permission: 'feed' }, summary: "Delete an ended feed's rejected records (its counts stay)", responses: { 204: { description: 'Deleted' }, 409: { description: 'The feed is still being applied' } } }, async (ctx, { caller, params }) => {
    await svc.feeds.deleteRejections(caller, params.feedId!);
    ctx.status = 204;
  });

  const ONE = '/orgs/:orgId/ledgers/:ledgerId';
  r.add({ method: 'get', path: `${ONE}/contacts/:contactId/changes`, access: { org: 'viewer' }, query: pageQuery, summary: "A contact's change history, newest first", responses: { 200: { description: 'A page of changes', schema: ChangePage } } }, (ctx, { params, query }) => {
    ctx.body = pageOf('changes', svc.changes.ofContact(params.orgId!, params.ledgerId!, params.contactId!, query.limit ?? 100, query.cursor), presentChange);
  });
  r.add({ method: 'get', path: `${ONE}/changes`, access: { org: 'viewer' }, query: ChangesQuery, summary: 'The ledger-wide change feed, in the order changes were detected', responses: { 200: { schema: ChangeFeedAnswer, description: '{changes, nextCursor, resumeCursor}: nextCursor is null on the last page; resumeCursor (always set) continues after this page, also later, when more changes were recorded' }, 503: SINCE_READ_503 } }, async (ctx, { params, query }) => {
    const feed = await svc.changes.ofLedger(params.orgId!, params.ledgerId!, { since: query.since, type: query.type, limit: query.limit ?? 100, cursor: query.cursor, withContacts: query.include === 'contact' });
    const { contacts } = feed;
    const present = (c: Change) => {
      if (!contacts) return presentChange(c);
      const contact = contacts.get(c.contactId);
      return { ...presentChange(c), contact: contact ? presentContact(contact) : null };
    };
    ctx.body = { ...pageOf('changes', feed, present), resumeCursor: feed.resumeCursor };
  });

  r.add({ method: 'get', path: `${ONE}/streams/daily`, access: { org: 'viewer' }, query: pageQuery, summary: 'Daily change sets of the ledger, newest day first', description: 'writtenThrough is the last UTC day (YYYYMMDD) up to which every day of the last 31 (the catch-up window) with changes has its set: such a day up to it that is not listed had no changes; a later one may still get its set; an older one is never written any more.', responses: { 200: { description: 'A page of daily change sets {streams, nextCursor, writtenThrough}', schema: DailySetPage }, 503: SINCE_READ_503 } }, async (ctx, { params, query }) => {
    // before the list: a set recorded in between is then listed, never missing from a day said written
    const writtenThrough = await svc.dailySets.writtenThrough(params.orgId!, params.ledgerId!);
    const page = svc.dailySets.list(params.orgId!, params.ledgerId!, query.limit ?? 100, query.cursor);
    const url = (day: string, name: string) => `${base}/orgs/${params.orgId}/ledgers/${params.ledgerId}/streams/daily/${day}/${name}`;
    ctx.body = {
      streams: page.items.map((s) => ({ date: s.day, createdAt: isoZ(s.createdAt), files: s.files.map((f) => ({ ...f, url: url(s.day, f.name) })) })),
      nextCursor: page.nextCursor,
      writtenThrough,
    };
  });
  r.add({ method: 'get', path: `${ONE}/streams/daily/:date/:file`, access: { org: 'viewer' }, summary: 'One file of a daily change set (gzipped JSON lines)', responses: { 200: { description: 'application/gzip', contentType: 'application/gzip' } } }, (ctx, { params }) => {
    if (!/^\d{8}$/.test(params.date!) || !/^changes-\d{8}-\d+\.jsonl\.gz$/.test(params.file!)) throw notFound('change set file', `${params.date}/${params.file}`);
    const { entry, stream } = svc.dailySets.open(params.orgId!, params.ledgerId!, params.date!, params.file!);
    ctx.type = 'application/gzip';
    ctx.length = entry.bytes;
    ctx.set('Content-Disposition', `attachment; filename="${entry.name}"`);
    ctx.body = stream;
  });
}
