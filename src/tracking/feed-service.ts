import { existsSync, mkdirSync, openSync, readSync, closeSync, readdirSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Clock } from '../clock.ts';
import { decodeKeyset, toPage, type Page } from '../cursor.ts';
import { notFound } from '../errors.ts';
import { newId } from '../ids.ts';
import { betweenChunks, ChunkSizer } from '../jobs/chunk-pacing.ts';
import { LEASE_MS, type Queue } from '../jobs/queue.ts';
import type { Runner } from '../jobs/scheduler.ts';
import type { Logger } from '../log.ts';
import type { MetricsRegistry } from '../ops/metrics.ts';
import { isConstraintError, type Db } from '../storage/db.ts';
import { FeedReadError, readFeed, type FeedFormat, type FeedItem } from './feed-reader.ts';
import { validateFeedRecord } from './feed-input.ts';
import type { FeedJob, FeedProgress, FeedsRepo, FeedSource } from './feeds-repo.ts';
import { zeroCounts, type FeedRecord, type TrackingCounts } from './model.ts';
import type { Tracker } from './tracker.ts';

export const FEED_JOB = 'feed';
/** Records in the first chunk of a feed; later chunks are sized by their cost (jobs/chunk-pacing.ts). */
const FIRST_CHUNK = 200;
/** While a resumed feed passes over its applied records: how often it looks at shutdown and its lease (~30 ms of reading). */
const SKIP_CHECK_EVERY = 10_000;
/** …and how old its lease may get before it is renewed. */
const SKIP_RENEW_MS = LEASE_MS / 3;
/** An inbox file is taken once its size and time have not changed for this long. */
export const INBOX_SETTLE_MS = 2000;

export const feedsDir = (dataDir: string) => join(dataDir, 'feeds');
export const inboxDir = (dataDir: string) => join(dataDir, 'inbox');

/** The feed format a file name says (`.jsonl`, `.ndjson`, `.csv`, `.json`, each optionally `.gz`). */
export function formatOfName(name: string): FeedFormat | undefined {
  const n = name.toLowerCase().replace(/\.gz$/, '');
  if (n.endsWith('.jsonl') || n.endsWith('.ndjson')) return 'ndjson';
  if (n.endsWith('.csv')) return 'csv';
  if (n.endsWith('.json')) return 'json';
  return undefined;
}

/** True when the file starts with the gzip magic bytes. */
export function isGzip(path: string): boolean {
  const fd = openSync(path, 'r');
  try {
    const b = Buffer.alloc(2);
    return readSync(fd, b, 0, 2, 0) === 2 && b[0] === 0x1f && b[1] === 0x8b;
  } finally {
    closeSync(fd);
  }
}

export type FeedService = ReturnType<typeof createFeedService>;

/** Feed jobs: created from an upload, the CLI or the inbox; run by the scheduler (SPEC §5). */
export function createFeedService(d: { db: Db; clock: Clock; log: Logger; queue: Queue; feeds: FeedsRepo; tracker: Tracker; dataDir: string; kick: () => void; metrics: MetricsRegistry }) {
  const inbox = inboxDir(d.dataDir);
  const records = d.metrics.counter({ name: 'contact_ledger_feed_records_total', help: 'Person-feed records processed, by outcome (applied, stale, invalid).', labelNames: ['outcome'] });
  const changes = d.metrics.counter({ name: 'contact_ledger_changes_total', help: 'Contact changes detected from the feed, by type (job, info).', labelNames: ['type'] });

  /** Registers a feed whose file is already in place; the job owns the file from now on. */
  function createFeed(source: FeedSource, filePath: string, fileName: string | null, format: FeedFormat, createdBy: string | null, id = newId('feed')): FeedJob {
    const feed = d.db.tx(() => {
      const now = d.clock.now();
      d.queue.enqueue(id, FEED_JOB, { maxAttempts: 5 });
      d.feeds.insertFeed({ id, source, fileName, filePath, format, gzip: isGzip(filePath), createdBy, createdAt: now });
      return d.feeds.findFeed(id, now)!;
    });
    d.kick();
    return feed;
  }

  /** `dir/name`, or `dir/<prefix>-name` when a file of that name is already there (never overwritten). */
  function freeName(dir: string, name: string, prefix: string): string {
    return existsSync(join(dir, name)) ? join(dir, `${prefix}-${name}`) : join(dir, name);
  }

  /** Where a finished feed's file goes: deleted, or (inbox) moved to done/ or failed/ with the reason beside it. */
  function settleFile(feed: FeedJob, failure: string | null): void {
    if (!feed.filePath || !existsSync(feed.filePath)) return;
    try {
      if (feed.source !== 'inbox') {
        unlinkSync(feed.filePath);
        return;
      }
      const dir = join(inbox, failure ? 'failed' : 'done');
      mkdirSync(dir, { recursive: true });
      const target = freeName(dir, basename(feed.filePath).replace(/^feed_[0-9a-z]+-/, ''), feed.id);
      renameSync(feed.filePath, target);
      if (failure) writeFileSync(`${target}.reason.txt`, `${failure}\n`);
    } catch (err) {
      d.log.error({ err, feed: feed.id }, 'could not move a finished feed file');
    }
  }

  function finish(lease: { complete(): void; fail(m: string): void }, feed: FeedJob, failure: string | null): void {
    d.db.tx(() => {
      d.feeds.markFinished(feed.id, failure, d.clock.now());
      if (failure) lease.fail(failure);
      else lease.complete();
    });
    settleFile(feed, failure);
  }

  const runner: Runner = {
    pruneFinishedAfterMs: null, // the feed's record (GET /feed/:id) lives in feed_jobs, which goes with the job row
    async run(lease, ctl) {
      const feed = d.feeds.findFeed(lease.job.id, d.clock.now());
      if (!feed) {
        d.db.tx(() => lease.complete());
        return 'done';
      }
      if (!existsSync(feed.filePath!)) {
        // e.g. a database restored without its feeds/ folder: retrying cannot bring the file back.
        finish(lease, feed, `the feed file is no longer there (${feed.filePath})${feed.cursorRecords ? `; records 1–${feed.cursorRecords} were applied` : ''}`);
        return 'done';
      }
      d.db.tx(() => {
        lease.renew();
        d.feeds.markStarted(feed.id, d.clock.now());
      });
      let recordNo = feed.cursorRecords;
      /**
       * One record in a savepoint of the chunk: a record that breaks a constraint of the people
       * store (a case the tracker's own checks missed) is rejected with a reason and takes nothing
       * else with it; any other error fails the chunk as before (RELIABILITY.md D3).
       */
      const applyOne = (record: FeedRecord, counts: TrackingCounts, no: number): string | undefined => {
        const before = { ...counts };
        try {
          return d.db.tx(() => d.tracker.applyRecord(record, counts));
        } catch (err) {
          if (!isConstraintError(err)) throw err;
          Object.assign(counts, before);
          d.log.warn({ err, feed: feed.id, record: no }, 'a feed record conflicts with stored data; rejected');
          return 'the record conflicts with what is already known about another person; it was not applied';
        }
      };
      const apply = (items: FeedItem[]) => {
        const p = d.db.bulkTx(() => {
          lease.checkpoint();
          const counts = zeroCounts();
          const p: FeedProgress = { records: items.length, received: items.length, invalid: 0, stale: 0, personsUpdated: 0, contactsMatched: 0, jobChanges: 0, infoChanges: 0 };
          for (const item of items) {
            recordNo++;
            if ('error' in item) {
              p.invalid++;
              d.feeds.insertRejection(feed.id, recordNo, item.line, item.error);
              continue;
            }
            const v = validateFeedRecord(item.value, d.clock.now());
            if (!v.ok) {
              p.invalid++;
              d.feeds.insertRejection(feed.id, recordNo, item.line, v.reason);
              continue;
            }
            const reason = applyOne(v.record, counts, recordNo);
            if (reason) {
              p.invalid++;
              d.feeds.insertRejection(feed.id, recordNo, item.line, reason);
            }
          }
          Object.assign(p, { stale: counts.stale, personsUpdated: counts.personsUpdated, contactsMatched: counts.contactsMatched, jobChanges: counts.jobChanges, infoChanges: counts.infoChanges });
          d.feeds.addProgress(feed.id, p);
          return p;
        });
        // Counted once committed.
        records.inc({ outcome: 'invalid' }, p.invalid);
        records.inc({ outcome: 'stale' }, p.stale);
        records.inc({ outcome: 'applied' }, p.received - p.invalid - p.stale);
        changes.inc({ type: 'job' }, p.jobChanges);
        changes.inc({ type: 'info' }, p.infoChanges);
      };
      const items = readFeed(feed.filePath!, feed.format, feed.gzip);
      const sizer = new ChunkSizer(FIRST_CHUNK);
      let chunk: FeedItem[] = [];
      // Resuming: the records of the committed chunks are read again and passed over (a gzip
      // cannot be sought into), ~300,000 a second. On a big file that outlasts the lease, so the
      // lease is renewed meanwhile (or the scheduler would take the job for abandoned and run it
      // again), and a shutdown does not wait for the rest of the skip.
      let toSkip = feed.cursorRecords;
      let renewedAt = d.clock.now();
      try {
        for await (const item of items) {
          if (toSkip > 0) {
            if (--toSkip % SKIP_CHECK_EVERY === 0) {
              if (ctl.stopping) {
                await items.return(undefined);
                return 'stopped';
              }
              if (d.clock.now() - renewedAt >= SKIP_RENEW_MS) {
                d.db.tx(() => lease.renew());
                renewedAt = d.clock.now();
              }
            }
            continue;
          }
          chunk.push(item);
          if (chunk.length < sizer.next()) continue;
          sizer.timed(chunk.length, () => apply(chunk));
          chunk = [];
          await betweenChunks(d.db);
          if (ctl.stopping) {
            await items.return(undefined);
            return 'stopped';
          }
        }
        if (chunk.length) apply(chunk);
      } catch (err) {
        if (!(err instanceof FeedReadError)) throw err;
        const applied = recordNo; // the records of committed chunks; the chunk being read was not applied
        finish(lease, feed, `${err.message}; ${applied ? `records 1–${applied} were applied, nothing after them` : 'nothing was applied'}`);
        return 'done';
      }
      finish(lease, feed, null);
      return 'done';
    },
    failed(jobId, message) {
      const feed = d.feeds.findFeed(jobId, d.clock.now());
      d.feeds.markFinished(jobId, `processing kept failing: ${message}`, d.clock.now());
      if (feed) setImmediate(() => settleFile(feed, `processing kept failing: ${message}`));
    },
  };

  // Inbox: files are taken once they stopped changing (or arrive by rename, which is atomic).
  const seen = new Map<string, { size: number; mtimeMs: number }>();
  function scanInbox(): number {
    let names: string[];
    try {
      names = readdirSync(inbox, { withFileTypes: true }).filter((e) => e.isFile() && !e.name.startsWith('.')).map((e) => e.name);
    } catch {
      return 0;
    }
    let taken = 0;
    const now = Date.now();
    for (const name of names) {
      const path = join(inbox, name);
      let st;
      try {
        st = statSync(path);
      } catch {
        continue;
      }
      const before = seen.get(name);
      seen.set(name, { size: st.size, mtimeMs: st.mtimeMs });
      if (!before || before.size !== st.size || before.mtimeMs !== st.mtimeMs || now - st.mtimeMs < INBOX_SETTLE_MS) continue;
      seen.delete(name);
      const format = formatOfName(name);
      if (!format) {
        mkdirSync(join(inbox, 'failed'), { recursive: true });
        const target = freeName(join(inbox, 'failed'), name, newId('feed'));
        renameSync(path, target);
        writeFileSync(`${target}.reason.txt`, 'not a feed file: use .jsonl, .ndjson, .csv or .json, optionally .gz\n');
        continue;
      }
      const id = newId('feed');
      mkdirSync(join(inbox, 'processing'), { recursive: true });
      const target = join(inbox, 'processing', `${id}-${name}`);
      renameSync(path, target);
      try {
        createFeed('inbox', target, name, format, null, id);
      } catch (err) {
        renameSync(target, path); // taken again at a later look
        d.log.error({ err, file: name }, 'could not register an inbox file; it stays in the inbox');
        continue;
      }
      taken++;
    }
    for (const name of seen.keys()) if (!names.includes(name)) seen.delete(name);
    return taken;
  }

  /**
   * At start: files a crash left in inbox/processing/. A file its feed job still refers to is that
   * job's (it runs again); a file of a job that finished is moved where it would have gone; a file
   * without a job (the process died between taking it and registering it) goes back to the inbox.
   */
  function recoverInbox(): number {
    mkdirSync(inbox, { recursive: true }); // there from the start, as operations.md's data layout says
    const dir = join(inbox, 'processing');
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return 0;
    }
    const referenced = new Set(d.feeds.listReferencedFiles());
    let moved = 0;
    for (const name of names) {
      const path = join(dir, name);
      if (referenced.has(path)) continue;
      const id = /^(feed_[0-9a-z]+)-/.exec(name)?.[1];
      const feed = id ? d.feeds.findFeed(id, d.clock.now()) : undefined;
      if (feed) settleFile({ ...feed, filePath: path }, feed.status === 'failed' ? (feed.message ?? 'failed') : null);
      else {
        renameSync(path, freeName(inbox, id ? name.slice(id.length + 1) : name, id ?? newId('feed')));
      }
      moved++;
    }
    if (moved) d.log.warn({ files: moved }, 'inbox files left in processing/ by an interrupted run were put back or settled');
    return moved;
  }

  return {
    runner,
    createFeed,
    scanInbox,
    recoverInbox,
    /** A file received over HTTP: moved into the feeds folder and registered. */
    createFromUpload(by: string, tmpPath: string, fileName: string | null, format: FeedFormat): FeedJob {
      const id = newId('feed');
      mkdirSync(feedsDir(d.dataDir), { recursive: true, mode: 0o700 });
      const stored = join(feedsDir(d.dataDir), `${id}.${format}`);
      renameSync(tmpPath, stored);
      try {
        return createFeed('api', stored, fileName, format, by, id);
      } catch (err) {
        unlinkSync(stored);
        throw err;
      }
    },
    get(id: string): FeedJob {
      const f = d.feeds.findFeed(id, d.clock.now());
      if (!f) throw notFound('feed job', id);
      return f;
    },
    list(limit: number, cursor?: string): Page<FeedJob> {
      return toPage(d.feeds.listFeeds(limit, d.clock.now(), decodeKeyset(cursor, 'feeds')), limit, 'feeds', (f) => [f.createdAt, f.id]);
    },
    *rejections(id: string) {
      let after = 0;
      for (;;) {
        const page = d.feeds.listRejections(id, after, 1000);
        if (!page.length) return;
        yield page;
        after = page[page.length - 1]!.recordNo;
      }
    },
  };
}
