import type { Keyset } from '../cursor.ts';
import type { JobStatus } from '../jobs/queue.ts';
import type { DataFiles } from '../storage/data-files.ts';
import type { Db } from '../storage/db.ts';
import type { FeedFormat } from './feed-reader.ts';

export const FEED_SOURCES = ['api', 'cli', 'inbox'] as const;
export type FeedSource = (typeof FEED_SOURCES)[number];

/** An Idempotency-Key and the fingerprint of the request that came with it. */
export interface Idempotency {
  key: string;
  requestHash: string;
}

export interface FeedJob {
  id: string;
  source: FeedSource;
  fileName: string | null;
  filePath: string | null;
  format: FeedFormat;
  gzip: boolean;
  status: JobStatus;
  received: number;
  invalid: number;
  stale: number;
  repeated: number;
  personsUpdated: number;
  contactsMatched: number;
  jobChanges: number;
  infoChanges: number;
  cursorRecords: number;
  message: string | null;
  createdBy: string | null;
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  /** An inbox file's size when it was taken (settleFeedFile); null otherwise. */
  takenSize: number | null;
}

/**
 * Records that told what was known already (a replay, or a person as they are): each record is
 * counted once — invalid, stale, repeated, a person updated, or this — so the counts add up to
 * `received` (a tester could not check that they did).
 */
export const unchangedRecords = (f: Pick<FeedJob, 'received' | 'invalid' | 'stale' | 'repeated' | 'personsUpdated'>): number => f.received - f.invalid - f.stale - f.repeated - f.personsUpdated;

interface FeedRow {
  id: string;
  source: FeedSource;
  file_name: string | null;
  file_path: string | null;
  format: FeedFormat;
  gzip: number;
  status: JobStatus;
  lease_until: number | null;
  last_error: string | null;
  received: number;
  invalid: number;
  stale: number;
  repeated: number;
  persons_updated: number;
  contacts_matched: number;
  job_changes: number;
  info_changes: number;
  cursor_records: number;
  message: string | null;
  created_by: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  taken_size: number | null;
}

const SELECT = 'SELECT f.*, j.status, j.lease_until, j.last_error FROM feed_jobs f JOIN jobs j ON j.id = f.id';

const toFeed = (r: FeedRow, now: number, files: DataFiles): FeedJob => ({
  id: r.id,
  source: r.source,
  fileName: r.file_name,
  filePath: r.file_path === null ? null : files.fromStored(r.file_path),
  format: r.format,
  gzip: r.gzip === 1,
  // A feed whose holder died is waiting to be reclaimed: it is pending again; so is one claimed
  // whose run has not begun yet (no startedAt): `processing` with startedAt null read as a contradiction to a compatibility tester's client.
  status: r.status === 'processing' && ((r.lease_until !== null && r.lease_until < now) || r.started_at === null) ? 'pending' : r.status,
  received: r.received,
  invalid: r.invalid,
  stale: r.stale,
  repeated: r.repeated,
  personsUpdated: r.persons_updated,
  contactsMatched: r.contacts_matched,
  jobChanges: r.job_changes,
  infoChanges: r.info_changes,
  cursorRecords: r.cursor_records,
  message: r.message ?? (r.status === 'pending' || r.status === 'processing' ? r.last_error : null),
  createdBy: r.created_by,
  createdAt: r.created_at,
  startedAt: r.started_at,
  finishedAt: r.finished_at,
  takenSize: r.taken_size,
});

export interface FeedProgress {
  records: number;
  received: number;
  invalid: number;
  stale: number;
  repeated: number;
  personsUpdated: number;
  contactsMatched: number;
  jobChanges: number;
  infoChanges: number;
}

export type FeedsRepo = ReturnType<typeof createFeedsRepo>;

/** Feed jobs and their rejected records. */
/** `files` maps feed file paths to what the database stores (relative to the data folder). */
export function createFeedsRepo(db: Db, files: DataFiles) {
  const q = {
    insert: db.raw.prepare(
      `INSERT INTO feed_jobs (id, source, file_name, file_path, format, gzip, created_by, created_at, idempotency_key, request_hash, taken_size)
       VALUES (@id, @source, @fileName, @filePath, @format, @gzip, @createdBy, @createdAt, @key, @requestHash, @takenSize)`,
    ),
    byKey: db.raw.prepare<[string, string], { id: string; request_hash: string }>('SELECT id, request_hash FROM feed_jobs WHERE created_by = ? AND idempotency_key = ?'),
    byId: db.raw.prepare<[string], FeedRow>(`${SELECT} WHERE f.id = ?`),
    first: db.raw.prepare<[number], FeedRow>(`${SELECT} ORDER BY f.created_at DESC, f.id DESC LIMIT ?`),
    // the position as one row value, which SQLite seeks by (spelt with OR, every page read from the newest feed)
    after: db.raw.prepare<[number, string, number], FeedRow>(`${SELECT} WHERE (f.created_at, f.id) < (?, ?) ORDER BY f.created_at DESC, f.id DESC LIMIT ?`),
    start: db.raw.prepare<[number, string]>('UPDATE feed_jobs SET started_at = coalesce(started_at, ?) WHERE id = ?'),
    deleteRejections: db.raw.prepare<[string, string, number]>(
      'DELETE FROM feed_rejections WHERE feed_id = ? AND record_no IN (SELECT record_no FROM feed_rejections WHERE feed_id = ? ORDER BY record_no LIMIT ?)',
    ),
    // the next feed with rejected records (the rejections' key, one seek), with when it ended
    nextWithRejections: db.raw.prepare<[string], { id: string; finished_at: number | null }>(
      'SELECT r.feed_id AS id, f.finished_at FROM feed_rejections r JOIN feed_jobs f ON f.id = r.feed_id WHERE r.feed_id > ? ORDER BY r.feed_id LIMIT 1',
    ),
    unfinished: db.raw.prepare<[number], string>("SELECT j.id FROM jobs j WHERE j.status IN ('pending', 'processing') AND j.kind = 'feed' ORDER BY j.created_at, j.id LIMIT ?").pluck(),
    progress: db.raw.prepare(
      `UPDATE feed_jobs SET cursor_records = cursor_records + @records, received = received + @received, invalid = invalid + @invalid, stale = stale + @stale, repeated = repeated + @repeated,
         persons_updated = persons_updated + @personsUpdated, contacts_matched = contacts_matched + @contactsMatched,
         job_changes = job_changes + @jobChanges, info_changes = info_changes + @infoChanges WHERE id = @id`,
    ),
    finish: db.raw.prepare<[string | null, number, string]>('UPDATE feed_jobs SET message = ?, finished_at = ?, file_path = NULL WHERE id = ?'),
    reject: db.raw.prepare<[string, number, number | null, string]>('INSERT OR IGNORE INTO feed_rejections (feed_id, record_no, line, reason) VALUES (?, ?, ?, ?)'),
    rejections: db.raw.prepare<[string, number, number], { record_no: number; line: number | null; reason: string }>(
      'SELECT record_no, line, reason FROM feed_rejections WHERE feed_id = ? AND record_no > ? ORDER BY record_no LIMIT ?',
    ),
    files: db.raw.prepare<[], string>('SELECT file_path FROM feed_jobs WHERE file_path IS NOT NULL').pluck(),
    listed: db.raw.prepare<[string, number, Uint8Array]>('INSERT INTO feed_listed_people (feed_id, chunk, people) VALUES (?, ?, ?)'),
    listedOf: db.raw.prepare<[string], Buffer>('SELECT people FROM feed_listed_people WHERE feed_id = ? ORDER BY chunk').pluck(),
    forgetListed: db.raw.prepare<[string]>('DELETE FROM feed_listed_people WHERE feed_id = ?'),
  };
  return {
    /** The first feed after `afterId` that has rejected records, with when it ended (the nightly retention, jobs/rejections-retention.ts). */
    nextWithRejections: (afterId: string): { id: string; finishedAt: number | null } | undefined => {
      const r = q.nextWithRejections.get(afterId);
      return r && { id: r.id, finishedAt: r.finished_at };
    },
    /** The plan of nextWithRejections (tests: one seek in the rejections' key). */
    explainNextWithRejections: (): string[] => db.queryPlan(q.nextWithRejections.source, ''),
    /** Deletes up to `n` of a feed's rejected records (an erasure: feed-service deleteRejections); returns how many went. */
    deleteRejections: (id: string, n: number): number => q.deleteRejections.run(id, id, n).changes,
    /** The feed jobs not yet ended (waiting or being applied), the oldest first, at most `max`. */
    unfinishedFeeds: (max: number): string[] => q.unfinished.all(max),
    insertFeed: ({ idempotency, takenSize, ...f }: { id: string; source: FeedSource; fileName: string | null; filePath: string; format: FeedFormat; gzip: boolean; createdBy: string | null; createdAt: number; idempotency?: Idempotency; takenSize?: number }): void =>
      void q.insert.run({
        ...f,
        filePath: files.toStored(f.filePath),
        gzip: f.gzip ? 1 : 0,
        key: idempotency?.key ?? null,
        requestHash: idempotency?.requestHash ?? null,
        takenSize: takenSize ?? null,
      }),
    /** The feed `createdBy` created with this Idempotency-Key, with the hash of its request. */
    findByIdempotencyKey: (createdBy: string, key: string): { id: string; requestHash: string } | undefined => {
      const r = q.byKey.get(createdBy, key);
      return r && { id: r.id, requestHash: r.request_hash };
    },
    findFeed: (id: string, now: number): FeedJob | undefined => {
      const r = q.byId.get(id);
      return r && toFeed(r, now, files);
    },
    listFeeds: (limit: number, now: number, before?: Keyset): FeedJob[] =>
      (before ? q.after.all(before.at, before.id, limit + 1) : q.first.all(limit + 1)).map((r) => toFeed(r, now, files)),
    /** The query plan of a later page of listFeeds (tests: the cursor is where the index is entered). */
    explainFeedsAfter: (): string[] => db.queryPlan(q.after.source, 1, 'feed_x', 101),
    markStarted: (id: string, now: number): void => void q.start.run(now, id),
    addProgress: (id: string, p: FeedProgress): void => void q.progress.run({ id, ...p }),
    /** Ends the feed's record: its message and end time; its file and whom it listed are forgotten. */
    markFinished: (id: string, message: string | null, now: number): void => {
      q.finish.run(message, now, id);
      q.forgetListed.run(id);
    },
    /** Stores whom a chunk listed first (FeedListing.takeChunk), in the chunk's transaction; `chunk`: the cursor before it. */
    insertListed: (id: string, chunk: number, people: Uint8Array): void => void q.listed.run(id, chunk, people),
    /** What the feed's committed chunks listed (FeedListing.fromStored). */
    listedPeople: (id: string): Buffer[] => q.listedOf.all(id),
    insertRejection: (id: string, recordNo: number, line: number | null, reason: string): void => void q.reject.run(id, recordNo, line, reason),
    listRejections: (id: string, afterRecord: number, limit: number) => q.rejections.all(id, afterRecord, limit).map((r) => ({ recordNo: r.record_no, line: r.line, reason: r.reason })),
    listReferencedFiles: (): string[] => q.files.all().map(files.fromStored),
  };
}
