import { existsSync } from 'node:fs';
import type { Clock } from '../clock.ts';
import { betweenChunks, CHUNK_BUDGET_MS, ChunkSizer } from '../jobs/chunk-pacing.ts';
import { beginWork, RENEW_LEASE_AFTER_MS, renewBetweenChunks } from '../jobs/queue.ts';
import { RejectionCap } from '../jobs/rejections.ts';
import type { Runner } from '../jobs/scheduler.ts';
import { isConstraintError, type Db } from '../storage/db.ts';
import { nameInDataFolder } from '../storage/data-files.ts';
import { changedSinceTaken, settleFeedFile, type FeedLog } from './feed-files.ts';
import { FeedListing } from './feed-listing.ts';
import { validateFeedRecord } from './feed-input.ts';
import { FeedReadError, readFeed, TakenFileCutError, type FeedItem } from './feed-reader.ts';
import type { FeedJob, FeedProgress, FeedsRepo } from './feeds-repo.ts';
import { zeroCounts, type FeedRecord, type TrackingCounts } from './model.ts';
import { FeedRun } from './replays-repo.ts';
import type { Tracker } from './tracker.ts';

export const FEED_JOB = 'feed';
/** Records in the first chunk of a feed; later chunks are sized by their cost (jobs/chunk-pacing.ts). */
const FIRST_CHUNK = 200;
/**
 * A feed chunk stops taking records once it has run this long (twice what chunks are sized for),
 * and commits; the rest go into the next chunk.
 */
const CHUNK_DEADLINE_MS = 2 * CHUNK_BUDGET_MS;
/** While a resumed feed passes over its applied records: how often it looks at shutdown and its lease (~30 ms of reading). */
const SKIP_CHECK_EVERY = 10_000;

export interface FeedRunnerDeps {
  db: Db;
  clock: Clock;
  log: FeedLog;
  feeds: FeedsRepo;
  tracker: Tracker;
  dataDir: string;
  /** Told after each chunk committed (the feed metrics). */
  onChunk: (p: FeedProgress) => void;
  /** Rejected records kept for the errors CSV (default MAX_STORED_REJECTIONS). */
  maxStoredRejections?: number;
  /** How long a chunk takes records (default CHUNK_DEADLINE_MS; tests set 0: one record a chunk). */
  chunkDeadlineMs?: number;
}

/**
 * The feed job runner (SPEC §5): the file's records are applied in chunks, each chunk one
 * transaction that re-checks the lease (fencing), applies its records through the tracker, records
 * the rejected ones and moves the feed's cursor past them. A crash loses at most the chunk in
 * flight; a resumed feed passes over the records of the committed chunks and goes on after them.
 * Runs on the bulk thread in the server (src/bulk-thread); `failed` runs on the main thread
 * (feedRunnerOnMain).
 */
export function createFeedRunner(d: FeedRunnerDeps): Runner {
  const settle = (feed: FeedJob, failure: string | null) => settleFeedFile(d.dataDir, d.log, feed, failure);

  /** `note`: the message of a feed that completed (null: none). */
  function finish(lease: { complete(): void; fail(m: string): void }, feed: FeedJob, failure: string | null, note: string | null = null): void {
    d.db.tx(() => {
      d.feeds.markFinished(feed.id, failure ?? note, d.clock.now());
      if (failure) lease.fail(failure);
      else lease.complete();
    });
    // the finished record has its counts and status, and no file any more: the file is where it was
    settle({ ...(d.feeds.findFeed(feed.id, d.clock.now()) ?? feed), filePath: feed.filePath }, failure);
  }

  return {
    ...feedRunnerOnMain(d),
    async run(lease, ctl) {
      const feed = d.feeds.findFeed(lease.job.id, d.clock.now());
      if (!feed) {
        d.db.tx(() => lease.complete());
        return 'done';
      }
      if (!existsSync(feed.filePath!)) {
        // e.g. a database restored without its feeds/ folder: retrying cannot bring the file back.
        finish(lease, feed, `the feed file is no longer there (${nameInDataFolder(d.dataDir, feed.filePath!)} in the data folder)${feed.cursorRecords ? `; records 1–${feed.cursorRecords} were applied` : ''}`);
        return 'done';
      }
      d.db.tx(() => {
        lease.renew();
        d.feeds.markStarted(feed.id, d.clock.now());
      });
      let recordNo = feed.cursorRecords;
      // whom the committed chunks listed: a person listed again is a repeat, also after a restart
      const listing = FeedListing.fromStored(d.feeds.listedPeople(feed.id));
      const run = new FeedRun(feed.id);
      /**
       * One record in a savepoint of the chunk: a record that breaks a constraint of the people
       * store (a case the tracker's own checks missed) is rejected with a reason and takes nothing
       * else with it; any other error fails the chunk as before (RELIABILITY.md D3).
       */
      const applyOne = (record: FeedRecord, counts: TrackingCounts, no: number): string | undefined => {
        const before = { ...counts };
        try {
          return d.db.tx(() => d.tracker.applyRecord(record, counts, listing, run));
        } catch (err) {
          if (!isConstraintError(err)) throw err;
          Object.assign(counts, before);
          d.log.warn({ err, feed: feed.id, record: no }, 'a feed record conflicts with stored data; rejected');
          return 'the record conflicts with what is already known about another person; it was not applied';
        }
      };
      const cap = new RejectionCap(feed.invalid, d.maxStoredRejections);
      /**
       * Applies the first of `items` in one transaction, and returns how many: all of them, unless
       * the chunk outlasts CHUNK_DEADLINE_MS first (records are not alike: one about a person with a
       * thousand contacts costs as much as a thousand others, and a chunk sized by the cheap ones
       * held the write lock for seconds — every request's write waited, a poll's read too). At
       * least one record a chunk.
       */
      const apply = (items: FeedItem[]): number => {
        const chunkStart = recordNo;
        const began = performance.now();
        const deadline = d.chunkDeadlineMs ?? CHUNK_DEADLINE_MS;
        const p = listing.chunk(() => cap.chunk(() =>
          d.db.bulkTx(() => {
            lease.checkpoint();
            const counts = zeroCounts();
            const p: FeedProgress = { records: 0, received: 0, invalid: 0, stale: 0, repeated: 0, personsUpdated: 0, contactsMatched: 0, jobChanges: 0, infoChanges: 0 };
            const reject = (no: number, line: number, reason: string) => {
              p.invalid++;
              cap.reject(() => d.feeds.insertRejection(feed.id, no, line, reason));
            };
            for (const item of items) {
              if (p.records > 0 && performance.now() - began >= deadline) break;
              p.records++;
              recordNo++;
              if ('error' in item) {
                reject(recordNo, item.line, item.error);
                continue;
              }
              const v = validateFeedRecord(item.value, d.clock.now());
              if (!v.ok) {
                reject(recordNo, item.line, v.reason);
                continue;
              }
              const reason = applyOne(v.record, counts, recordNo);
              if (reason) reject(recordNo, item.line, reason);
            }
            Object.assign(p, { received: p.records, stale: counts.stale, repeated: counts.repeated, personsUpdated: counts.personsUpdated, contactsMatched: counts.contactsMatched, jobChanges: counts.jobChanges, infoChanges: counts.infoChanges });
            d.feeds.addProgress(feed.id, p);
            const listed = listing.chunkPeople();
            if (listed) d.feeds.insertListed(feed.id, chunkStart, listed);
            return p;
          }),
        ));
        d.onChunk(p); // counted once committed
        return p.records;
      };
      const items = readFeed(feed.filePath!, feed.format, feed.gzip, feed.takenSize);
      const sizer = new ChunkSizer(FIRST_CHUNK);
      /** One chunk, its cost recorded for the next one's size; what the deadline left over goes on to the next chunk. */
      const applyTimed = (chunk: FeedItem[]): FeedItem[] => {
        const t0 = performance.now();
        const done = apply(chunk);
        sizer.record(done, performance.now() - t0);
        return done === chunk.length ? [] : chunk.slice(done);
      };
      let chunk: FeedItem[] = [];
      // Resuming: the records of the committed chunks are read again and passed over (a gzip
      // cannot be sought into), ~300,000 a second. On a big file that outlasts the lease, so the
      // lease is renewed meanwhile (or the scheduler would take the job for abandoned and run it
      // again), and a shutdown does not wait for the rest of the skip.
      let toSkip = feed.cursorRecords;
      let renewedAt = d.clock.now();
      // At work (a process killed from here on counts as an attempt) before the first record not
      // applied yet is read: passing over the applied ones, as loading before, is not (0037).
      if (toSkip === 0) beginWork(d.db, lease);
      try {
        for await (const item of items) {
          if (toSkip > 0) {
            if (--toSkip % SKIP_CHECK_EVERY === 0) {
              if (ctl.stopping) {
                await items.return(undefined);
                return 'stopped';
              }
              if (d.clock.now() - renewedAt >= RENEW_LEASE_AFTER_MS) {
                await renewBetweenChunks(d.db, lease);
                renewedAt = d.clock.now();
              }
            }
            if (toSkip === 0) beginWork(d.db, lease);
            continue;
          }
          chunk.push(item);
          if (chunk.length < sizer.next()) continue;
          chunk = applyTimed(chunk);
          await betweenChunks(d.db);
          if (ctl.stopping) {
            await items.return(undefined);
            return 'stopped';
          }
        }
        while (chunk.length) {
          chunk = applyTimed(chunk);
          if (chunk.length) await betweenChunks(d.db);
        }
      } catch (err) {
        if (!(err instanceof FeedReadError)) throw err;
        const applied = recordNo; // the records of committed chunks; the chunk being read was not applied
        // an inbox file that changed after it was taken, read as it was then: its gzip or array
        // ends inside what was taken (a tester's case: "the gzip file is truncated" of a whole file)
        const changed = changedSinceTaken(feed);
        const why = changed ? (err instanceof TakenFileCutError ? changed : `${changed} (reading those bytes: ${err.message})`) : err.message;
        finish(lease, feed, `${why}; ${applied ? `records 1–${applied} were applied, nothing after them` : 'nothing was applied'}`);
        return 'done';
      }
      finish(lease, feed, nothingApplied(d.feeds, feed.id, d.clock.now()), cap.note('records'));
      return 'done';
    },
  };
}

/**
 * Why a feed that was read to its end still failed: it held no record, or not one of its records
 * could be applied (a wrong file, a CSV without the columns a record needs) — such a file goes to
 * the inbox's failed/ and the command line ends with 1, instead of being reported done.
 */
function nothingApplied(feeds: FeedsRepo, id: string, now: number): string | null {
  const f = feeds.findFeed(id, now)!;
  if (f.received === 0) return 'the file holds no records';
  if (f.invalid < f.received) return null;
  const first = feeds.listRejections(id, 0, 1)[0];
  const example = first ? ` (the first, line ${first.line ?? '?'}: ${first.reason})` : '';
  return `not one of its ${f.received} records could be applied${example}; every reason is in GET /api/ledger/v1/feed/${id}/errors`;
}

/**
 * What the scheduler on the main thread needs of the feed job runner besides `run` (the bulk
 * thread's): how long a finished job stays, and `failed`, the last word on a feed that kept failing.
 */
export function feedRunnerOnMain(d: Pick<FeedRunnerDeps, 'clock' | 'feeds' | 'dataDir' | 'log'>): Omit<Runner, 'run'> {
  return {
    pruneFinishedAfterMs: null, // the feed's record (GET /feed/:id) lives in feed_jobs, which goes with the job row
    marksWork: true, // before its first record not applied yet is read (run)
    failed(jobId, message) {
      const filePath = d.feeds.findFeed(jobId, d.clock.now())?.filePath ?? null; // finishing forgets it
      d.feeds.markFinished(jobId, `processing kept failing: ${message}`, d.clock.now());
      const feed = d.feeds.findFeed(jobId, d.clock.now());
      if (feed) setImmediate(() => settleFeedFile(d.dataDir, d.log, { ...feed, filePath }, `processing kept failing: ${message}`));
    },
  };
}
