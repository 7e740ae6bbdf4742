import { accessSync, constants, lstatSync, mkdirSync, readdirSync, renameSync, statSync, unlinkSync, type Dirent } from 'node:fs';
import { basename, join } from 'node:path';
import type { Clock } from '../clock.ts';
import type { Cursors, Page } from '../cursor.ts';
import { conflict, idempotencyKeyReused, notFound } from '../errors.ts';
import type { Audit } from '../identity/audit.ts';
import type { Caller } from '../identity/model.ts';
import { deleteInChunks } from '../jobs/chunk-pacing.ts';
import { sha256FileHex } from '../crypto.ts';
import { newId } from '../ids.ts';
import type { Queue } from '../jobs/queue.ts';
import type { Runner } from '../jobs/scheduler.ts';
import type { Logger } from '../log.ts';
import { everySeries, type MetricsRegistry } from '../ops/metrics.ts';
import type { Db } from '../storage/db.ts';
import { makeDirDurably, moveDurably } from '../storage/durable-files.ts';
import { endsInsideALine, feedsDir, formatOfName, freeName, InboxFolderError, inboxDir, inboxFolder, inboxName, inboxSafeName, isGzip, isInboxFile, settleFeedFile, UNSAFE_NAME_CHARS, writeSidecar } from './feed-files.ts';
import type { FeedFormat } from './feed-reader.ts';
import { FEED_JOB, feedRunnerOnMain } from './feed-runner.ts';
import { unchangedRecords, type FeedJob, type FeedProgress, type FeedsRepo, type FeedSource, type Idempotency } from './feeds-repo.ts';

/** An inbox file is taken once its size and time have not changed for this long. */
export const INBOX_SETTLE_MS = 2000;
/** What an inbox entry that is no plain file is, in words (a named pipe was called "a link or a folder"). */
const kindOf = (e: Dirent): string =>
  e.isSymbolicLink() ? 'a link' : e.isDirectory() ? 'a folder' : e.isFIFO() ? 'a named pipe' : e.isSocket() ? 'a socket' : e.isBlockDevice() || e.isCharacterDevice() ? 'a device' : 'not a file';

/**
 * … or for this long when its last line has no line break (CSV and NDJSON, not gzip): the writer
 * may only have paused in the middle of a record, and a CSV cut after "Hoo" of "Hooli" reads as a
 * record of its own (a false job change). A finished file without a final line break waits this
 * long, then is taken as it is.
 */
export const INBOX_UNTERMINATED_SETTLE_MS = 60_000;

/** The inbox's own folders (feed-files.ts inboxFolder). */
const INBOX_FOLDERS = new Set(['processing', 'done', 'failed']);

export type FeedService = ReturnType<typeof createFeedService>;

/**
 * Feed jobs: created from an upload, the CLI or the inbox; run by the scheduler (SPEC §5) on the
 * bulk thread (`runFeed`, src/bulk-thread), which reports each chunk through `countChunk`.
 */
export function createFeedService(d: {
  db: Db;
  clock: Clock;
  log: Logger;
  queue: Queue;
  feeds: FeedsRepo;
  dataDir: string;
  kick: () => void;
  metrics: MetricsRegistry;
  runFeed: Runner['run'];
  cursors: Cursors;
  audit: Audit;
}) {
  const inbox = inboxDir(d.dataDir);
  const records = everySeries(
    d.metrics.counter({
      name: 'contact_ledger_feed_records_total',
      help: 'Person-feed records processed, by outcome (applied: a person updated; unchanged: what was known already; stale, repeated, invalid), as the feed job counts them.',
      labelNames: ['outcome'],
    }),
    'outcome',
    ['applied', 'unchanged', 'stale', 'repeated', 'invalid'],
  );
  const changes = everySeries(d.metrics.counter({ name: 'contact_ledger_changes_total', help: 'Contact changes detected from the feed, by type (job, info).', labelNames: ['type'] }), 'type', ['job', 'info']);

  /** A feed chunk committed (here or on the bulk thread): the metrics. */
  function countChunk(p: FeedProgress): void {
    records.inc({ outcome: 'invalid' }, p.invalid);
    records.inc({ outcome: 'stale' }, p.stale);
    records.inc({ outcome: 'repeated' }, p.repeated);
    // as the job's personsUpdated and unchanged: a replay updates nobody, and counted as applied it
    // showed activity on a dashboard while nothing changed (a feed tester's case)
    records.inc({ outcome: 'applied' }, p.personsUpdated);
    records.inc({ outcome: 'unchanged' }, unchangedRecords(p));
    changes.inc({ type: 'job' }, p.jobChanges);
    changes.inc({ type: 'info' }, p.infoChanges);
  }

  /**
   * The feed an earlier request of `createdBy` created under this Idempotency-Key (a replay), or
   * undefined when the key is new; 422 when it came with another request.
   */
  function earlierFeed(createdBy: string, idempotency: Idempotency, now: number): FeedJob | undefined {
    const earlier = d.feeds.findByIdempotencyKey(createdBy, idempotency.key);
    if (!earlier) return undefined;
    if (earlier.requestHash !== idempotency.requestHash) throw idempotencyKeyReused();
    return d.feeds.findFeed(earlier.id, now);
  }

  /**
   * Registers a feed whose file is already in place; the job owns the file from now on — unless
   * an earlier request under the same Idempotency-Key created one (`replayed`: nothing new).
   */
  function createFeed(
    source: FeedSource,
    filePath: string,
    fileName: string | null,
    format: FeedFormat,
    by: Caller | null,
    id = newId('feed'),
    idempotency?: Idempotency,
    takenSize?: number,
  ): { feed: FeedJob; replayed: boolean } {
    const createdBy = by?.actor.id ?? null;
    const created = d.db.tx(() => {
      const now = d.clock.now();
      const earlier = idempotency && createdBy !== null ? earlierFeed(createdBy, idempotency, now) : undefined;
      if (earlier) return { feed: earlier, replayed: true };
      d.queue.enqueue(id, FEED_JOB, { maxAttempts: 5, sequence: FEED_JOB }); // feeds apply in the order they came: a later one wins
      const gzip = isGzip(filePath);
      d.feeds.insertFeed({ id, source, fileName, filePath, format, gzip, createdBy, createdAt: now, idempotency, takenSize });
      // A feed rewrites contacts of every organization: audited installation-wide like an import in
      // its organization (a security tester found it was not); a file of the inbox or the feed
      // command is the system's, which has no caller to name.
      const entry = { orgId: null, action: 'feed.created', target: { type: 'feed', id }, data: { source, format, gzip, ...(fileName ? { fileName } : {}) } };
      if (by) d.audit.record(by, entry);
      else d.audit.recordAnonymous(null, { ...entry, actor: { type: 'system', id: null, label: source === 'cli' ? 'feed command' : 'inbox' } });
      return { feed: d.feeds.findFeed(id, now)!, replayed: false };
    });
    if (!created.replayed) d.kick();
    return created;
  }

  // Feeds run on the bulk thread; this runner's own `failed` records a final failure, on this thread.
  const runner: Runner = { ...feedRunnerOnMain(d), run: d.runFeed };

  // Inbox: files are taken once they stopped changing (or arrive by rename, which is atomic).
  // `since`: the look that first saw the file at this size and date
  const seen = new Map<string, { size: number; mtimeMs: number; since: number }>();
  // Links and folders are never followed or moved (a link could reach any file the server may
  // read); each is named once in the log, so that a file dropped as a link is not left unexplained.
  const warned = new Set<string>();
  // names that are not UTF-8 and could not be renamed, said once each
  const unrenamable = new Set<string>();
  /**
   * Files whose names are not UTF-8 (copied from a system with another encoding) cannot be named
   * in a string, so nothing could open them; names with control characters (a line break, a tab)
   * break every line-based tool and list that shows them — the feed's fileName, the `.result.txt`
   * beside it (a feed tester's `new\nline.jsonl`). Each is renamed in place to its readable form,
   * with `_` for what is not UTF-8 or a control character, and said so in the log; a later look
   * takes it like any other file.
   */
  function renameUndecodable(): void {
    for (const raw of readdirSync(inbox, { encoding: 'buffer' })) {
      const name = raw.toString('utf8');
      const undecodable = !Buffer.from(name, 'utf8').equals(raw);
      if ((!undecodable && !UNSAFE_NAME_CHARS.test(name)) || name.startsWith('.')) continue;
      const what = undecodable ? 'that is not UTF-8' : 'with control characters';
      const path = Buffer.concat([Buffer.from(`${inbox}/`), raw]);
      try {
        // links and folders are left where they are, as any other (the scan names them once)
        if (!lstatSync(path).isFile()) continue;
        const target = freeName(inbox, inboxSafeName(name.replace(/\uFFFD/g, '_')));
        renameSync(path, target);
        d.log.warn({ file: basename(target) }, `inbox: a file name ${what} was renamed to ${basename(target)}`);
      } catch (err) {
        if (unrenamable.has(name)) continue;
        unrenamable.add(name);
        d.log.error({ err, file: name }, `inbox: a file name ${what} could not be renamed; rename the file`);
      }
    }
  }

  /** Inbox files whose taking failed, said once each (each look tries them again). */
  const untakeable = new Set<string>();

  /**
   * Moves a file the server may not read to failed/ with the reason and what to do (an operator's
   * file copied in as root, owner-only: it stayed in the inbox for good, the scan failed at it every
   * look, and every file after it in name order waited behind it; forty-third session). Moving it
   * takes the folders' permissions only, which are the server's.
   */
  function failUnreadable(path: string, name: string, st: { uid: number; mode: number }): void {
    const owner = statSync(inbox).uid;
    const target = toFailed(
      path,
      name,
      `the server (uid ${process.getuid?.() ?? '?'}) may not read this file (it belongs to uid ${st.uid}, mode ${(st.mode & 0o777).toString(8).padStart(3, '0')}); ` +
        `copy feed files in as the data folder's owner under a hidden name, then rename them, e.g. install -m 0600 -o ${owner} <file> ${inbox}/.incoming && mv ${inbox}/.incoming ${inbox}/<file's name>, or give this file to that user and move it back into the inbox`,
    );
    d.log.warn({ file: name, moved: basename(target) }, 'inbox: a file the server may not read was moved to failed/ with the reason');
  }

  /** Moves an inbox file that never became a feed job to failed/, its reason beside it; returns where it went. */
  function toFailed(path: string, name: string, reason: string): string {
    const target = freeName(inboxFolder(d.dataDir, 'failed'), inboxName(name));
    writeSidecar(target, 'reason', reason);
    renameSync(path, target);
    return target;
  }

  /** Whether the server may read a file (false: not permitted; other errors are thrown). */
  function readable(path: string): boolean {
    try {
      accessSync(path, constants.R_OK);
      return true;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EACCES' || code === 'EPERM') return false;
      throw err;
    }
  }

  /** One look at the inbox (`now`: the time of the look, which tests move). Returns how many files became jobs. */
  async function scanInbox(now = Date.now()): Promise<number> {
    let names: string[];
    try {
      renameUndecodable();
      const entries = readdirSync(inbox, { withFileTypes: true }).filter((e) => !e.name.startsWith('.'));
      names = entries.filter(isInboxFile).map((e) => e.name);
      const otherEntries = entries.filter((e) => !e.isFile() && !(e.isDirectory() && INBOX_FOLDERS.has(e.name)));
      const others = otherEntries.map((e) => e.name);
      for (const e of otherEntries) {
        if (warned.has(e.name)) continue;
        warned.add(e.name);
        d.log.warn({ file: e.name }, `inbox: ${e.name} is not a plain file (${kindOf(e)}) and is left where it is; copy or move the file itself into the inbox`);
      }
      for (const name of warned) if (!others.includes(name)) warned.delete(name);
    } catch {
      return 0;
    }
    let taken = 0;
    for (const name of names) {
      const path = join(inbox, name);
      let st;
      try {
        st = statSync(path);
      } catch {
        continue;
      }
      const before = seen.get(name);
      const unchanged = before !== undefined && before.size === st.size && before.mtimeMs === st.mtimeMs;
      const since = unchanged ? before.since : now;
      seen.set(name, { size: st.size, mtimeMs: st.mtimeMs, since });
      // How long the file has not changed: since its date, or since the first look that saw it so
      // when it is dated later than that — a file dated in the future (copied with its date from a
      // machine whose clock is ahead: cp -p, tar, unzip) waited silently until that date came.
      const age = now - Math.min(st.mtimeMs, since);
      if (!unchanged || age < INBOX_SETTLE_MS) continue;
      const format = formatOfName(name);
      try {
        if (!readable(path)) {
          seen.delete(name);
          failUnreadable(path, name, st);
          continue;
        }
        if (format && format !== 'json' && age < INBOX_UNTERMINATED_SETTLE_MS && endsInsideALine(path)) continue;
        seen.delete(name);
        taken += await take(path, name, format);
        untakeable.delete(name);
      } catch (err) {
        // the inbox's own folder unusable: no file can be taken (the periodic task's failure says it)
        if (err instanceof InboxFolderError) throw err;
        // gone since the look (moved out by hand): nothing to say
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        // one file's trouble holds up no other: said once, tried again at the next look
        if (!untakeable.has(name)) d.log.error({ err, file: name }, 'inbox: a file could not be taken; it stays in the inbox, and the other files are taken');
        untakeable.add(name);
      }
    }
    for (const name of seen.keys()) if (!names.includes(name)) seen.delete(name);
    for (const name of untakeable) if (!names.includes(name)) untakeable.delete(name);
    return taken;
  }

  /** Takes one settled inbox file: to failed/ when it is no feed file, else to processing/ as a feed job. Returns 1 when it became a job. */
  async function take(path: string, name: string, format: FeedFormat | undefined): Promise<number> {
    if (!format) {
      toFailed(path, name, 'not a feed file: use .jsonl, .ndjson, .csv or .json, optionally .gz');
      return 0;
    }
    const id = newId('feed');
    const target = join(inboxFolder(d.dataDir, 'processing'), `${id}-${inboxName(name)}`);
    await moveDurably(path, target); // the file whole on disk before its job commits
    try {
      // the size of the file moved (replaced by rename since the look, it is another file)
      createFeed('inbox', target, name, format, null, id, undefined, statSync(target).size);
    } catch (err) {
      renameSync(target, path); // taken again at a later look
      d.log.error({ err, file: name }, 'could not register an inbox file; it stays in the inbox');
      return 0;
    }
    return 1;
  }

  /**
   * At start: files a crash left in inbox/processing/. A file its feed job still refers to is that
   * job's (it runs again); a file of a job that finished is moved where it would have gone; a file
   * without a job (the process died between taking it and registering it) goes back to the inbox.
   */
  function recoverInbox(): number {
    mkdirSync(inbox, { recursive: true, mode: 0o700 }); // there from the start, as operations.md's data layout says
    let dir: string;
    let names: string[];
    try {
      // the inbox's own folders too, before anyone else can make them (inboxFolder)
      for (const name of ['done', 'failed'] as const) inboxFolder(d.dataDir, name);
      dir = inboxFolder(d.dataDir, 'processing');
      names = readdirSync(dir);
    } catch (err) {
      d.log.error({ err }, 'the inbox cannot be used');
      return 0;
    }
    const referenced = new Set(d.feeds.listReferencedFiles());
    let moved = 0;
    for (const name of names) {
      const path = join(dir, name);
      if (referenced.has(path)) continue;
      const id = /^(feed_[0-9a-z]+)-/.exec(name)?.[1];
      const feed = id ? d.feeds.findFeed(id, d.clock.now()) : undefined;
      if (feed) settleFeedFile(d.dataDir, d.log, { ...feed, filePath: path }, feed.status === 'failed' ? (feed.message ?? 'failed') : null);
      else {
        renameSync(path, freeName(inbox, id ? name.slice(id.length + 1) : name));
      }
      moved++;
    }
    if (moved) d.log.warn({ files: moved }, 'inbox files left in processing/ by an interrupted run were put back or settled');
    return moved;
  }


  /** A feed job (404 otherwise). */
  function feedOf(id: string): FeedJob {
    const f = d.feeds.findFeed(id, d.clock.now());
    if (!f) throw notFound('feed job', id);
    return f;
  }

  return {
    runner,
    countChunk,
    createFeed,
    scanInbox,
    recoverInbox,
    /**
     * A feed uploaded through the API: the file is moved into the feeds folder and registered. With an Idempotency-Key, a retry of the same upload (the same
     * bytes and format) gets the feed job of the first one (`replayed`), another upload under the
     * key 422; keys are the caller's own. The upload is removed when nothing new is created.
     */
    async createFromUpload(by: Caller, tmpPath: string, fileName: string | null, format: FeedFormat, idempotencyKey?: string): Promise<{ feed: FeedJob; replayed: boolean }> {
      const idempotency = idempotencyKey === undefined ? undefined : { key: idempotencyKey, requestHash: await sha256FileHex(tmpPath, 'format', format) };
      let earlier: FeedJob | undefined;
      try {
        earlier = idempotency && earlierFeed(by.actor.id, idempotency, d.clock.now());
      } catch (err) {
        unlinkSync(tmpPath); // the key came with another upload (422)
        throw err;
      }
      if (earlier) {
        unlinkSync(tmpPath);
        return { feed: earlier, replayed: true };
      }
      const id = newId('feed');
      await makeDirDurably(feedsDir(d.dataDir));
      const stored = join(feedsDir(d.dataDir), `${id}.${format}`);
      await moveDurably(tmpPath, stored); // on disk before the job that reads it commits
      try {
        const created = createFeed('api', stored, fileName, format, by, id, idempotency);
        if (created.replayed) unlinkSync(stored); // another request with the key won meanwhile
        return created;
      } catch (err) {
        unlinkSync(stored);
        throw err;
      }
    },
    get: feedOf,
    list(limit: number, cursor?: string): Page<FeedJob> {
      return d.cursors.toPage(d.feeds.listFeeds(limit, d.clock.now(), d.cursors.decodeKeyset(cursor, 'feeds')), limit, 'feeds', (f) => [f.createdAt, f.id]);
    },
    /**
     * Deletes an ended feed's rejected records (their reasons quote the refused values: an erasure
     * request), in short chunks; the job keeps its counts. A feed not yet ended is refused (409).
     */
    async deleteRejections(by: Caller, id: string): Promise<number> {
      const feed = feedOf(id);
      if (feed.status === 'pending' || feed.status === 'processing') throw conflict('feed_in_progress', 'The feed is still being applied; its rejected records can be deleted once it has ended.');
      const { deleted } = await deleteInChunks(d.db, [(n) => d.feeds.deleteRejections(id, n)]);
      // nothing deleted (none left, or deleted before): nothing to audit
      if (deleted) d.db.tx(() => d.audit.record(by, { orgId: null, action: 'feed.rejections_deleted', target: { type: 'feed', id }, data: { deleted } }));
      return deleted;
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
