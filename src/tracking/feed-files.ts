import { randomBytes } from 'node:crypto';
import { closeSync, type Dirent, existsSync, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { FeedFormat } from './feed-reader.ts';
import { unchangedRecords, type FeedJob } from './feeds-repo.ts';

/** Where feed files live, and where a finished feed's file goes (operations.md, data layout). */

export const feedsDir = (dataDir: string) => join(dataDir, 'feeds');
export const inboxDir = (dataDir: string) => join(dataDir, 'inbox');
/**
 * One of the inbox's own folders, made when missing (owner only). Anything but a real folder is
 * refused: where others may drop files into the inbox, a link planted as `failed` or `processing`
 * would send the server's moves and reason files elsewhere in the data folder.
 */
export function inboxFolder(dataDir: string, name: 'processing' | 'done' | 'failed'): string {
  const dir = join(inboxDir(dataDir), name);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (!lstatSync(dir).isDirectory()) throw new InboxFolderError(`${dir} is not a folder (a link?): remove it, the server makes its own`);
  return dir;
}

/** One of the inbox's own folders cannot be used: no file can be taken (not one file's trouble). */
export class InboxFolderError extends Error {
  override name = 'InboxFolderError';
}

/** An inbox entry the poll takes as a feed file: a plain file, not hidden (a copy in progress may be `.name.part`). */
export const isInboxFile = (e: Dirent): boolean => e.isFile() && !e.name.startsWith('.');

/** The feed files waiting in the inbox to be taken (not yet feed jobs), at most `max` names. */
export function waitingInInbox(dataDir: string, max: number): string[] {
  try {
    return readdirSync(inboxDir(dataDir), { withFileTypes: true })
      .filter(isInboxFile)
      .slice(0, max)
      .map((e) => e.name);
  } catch {
    return []; // no inbox yet
  }
}

/**
 * Feed bodies being received through the API (not yet feed jobs): counted while they arrive, so
 * that forgetting a person can wait for them (people-service.ts).
 */
export class ArrivingFeeds {
  private n = 0;

  get count(): number {
    return this.n;
  }

  /** A body begins to arrive; call the function returned once it is a feed job or refused. */
  begin(): () => void {
    this.n++;
    let ended = false;
    return () => {
      if (!ended) this.n--;
      ended = true;
    };
  }
}

/** The scheduler's task that polls the inbox. */
export const INBOX_TASK = 'inbox';

/** The feed format a file name says (`.jsonl`, `.ndjson`, `.csv`, `.json`, each optionally `.gz`). */
export function formatOfName(name: string): FeedFormat | undefined {
  const n = name.toLowerCase().replace(/\.gz$/, '');
  if (n.endsWith('.jsonl') || n.endsWith('.ndjson')) return 'ndjson';
  if (n.endsWith('.csv')) return 'csv';
  if (n.endsWith('.json')) return 'json';
  return undefined;
}

/**
 * The longest name, in bytes, an inbox file keeps: the server puts its feed id before it in
 * processing/ (`feed_<26>-`, and in done/ or failed/ when the name is taken) and a `.reason.txt`
 * or `.result.txt` beside it, and a file name has at most 255 bytes.
 */
const MAX_INBOX_NAME = 255 - 32 - 11;

/**
 * An inbox file's name as the server files it: the name itself, or one cut to MAX_INBOX_NAME
 * bytes — at a character, its extension kept (it says the format), `~` where it was cut. A longer
 * name could not be moved to processing/, and the file stayed in the inbox for good. The CLI
 * names its copy with this too, so it looks for the name the server gives the file.
 */
/** Control and format characters (a line break, a tab, U+202E): never kept in an inbox file's name. */
export const UNSAFE_NAME_CHARS = /[\p{Cc}\p{Cf}]/u;

/**
 * A file name as the inbox keeps it: `_` for each control or format character, which break every
 * line-based tool and list that shows the name (the feed's fileName, the `.result.txt` beside it)
 * or turn it around on screen (U+202E). The inbox renames such files; the `feed` command names its
 * copy so, and its feed, from the start (it waited for ever for the name it had handed over).
 */
export const inboxSafeName = (name: string): string => name.replace(new RegExp(UNSAFE_NAME_CHARS.source, 'gu'), '_');

export function inboxName(name: string): string {
  if (Buffer.byteLength(name) <= MAX_INBOX_NAME) return name;
  const ext = /(\.[A-Za-z0-9]{1,8}){0,2}$/.exec(name)![0];
  let stem = name.slice(0, name.length - ext.length);
  while (Buffer.byteLength(`${stem}~${ext}`) > MAX_INBOX_NAME) stem = stem.slice(0, -1);
  // not half a surrogate pair
  if (/[\uD800-\uDBFF]$/.test(stem)) stem = stem.slice(0, -1);
  return `${stem}~${ext}`;
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

/** True when a plain-text file's last byte is not a line break (a gzip file or an empty one: false). */
export function endsInsideALine(path: string): boolean {
  if (isGzip(path)) return false;
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    if (size === 0) return false;
    const b = Buffer.alloc(1);
    readSync(fd, b, 0, 1, size - 1);
    return b[0] !== 0x0a && b[0] !== 0x0d;
  } finally {
    closeSync(fd);
  }
}

/** A finished feed's counts in one line (the CLI prints it; the inbox writes it beside the file). */
export const feedSummary = (f: FeedJob): string =>
  `${f.id} ${f.status}: ${f.received} records, ${f.invalid} invalid, ${f.stale} older than known, ${f.repeated} repeated, ${f.personsUpdated} persons updated, ${unchangedRecords(f)} unchanged, ${f.contactsMatched} contacts matched, ${f.jobChanges} job changes, ${f.infoChanges} info changes`;

/** The files written beside an inbox file in failed/ (its reason) and done/ (its counts). */
const SIDECARS = { reason: '.reason.txt', result: '.result.txt' } as const;
export const sidecarOf = (target: string, kind: keyof typeof SIDECARS) => `${target}${SIDECARS[kind]}`;

/**
 * The reason beside a file in failed/, or its counts beside it in done/, written before the file
 * moves there (whoever sees the file finds them). Never through an existing name or link ('wx':
 * the file must be new); for its owner alone (0600) whatever the umask, as every file the program
 * writes into the data folder.
 */
export function writeSidecar(target: string, kind: keyof typeof SIDECARS, text: string): void {
  writeFileSync(sidecarOf(target, kind), `${text}\n`, { flag: 'wx', mode: 0o600 });
}

/**
 * The nightly retention of inbox/done/ (INBOX_DONE_KEEP_DAYS): a feed file whose counts beside it
 * (`<name>.result.txt`, written as its feed ended) are older than `endedBefore` goes, then its
 * counts (a run stopped between the two finds the counts alone the next night, and removes them).
 * Only plain files, and only those the server filed (with their counts): anything else an operator
 * keeps there stays. Returns the feed files removed.
 */
export function pruneInboxDone(dataDir: string, endedBefore: number, log: FeedLog, stopping: () => boolean = () => false): string[] {
  const dir = join(inboxDir(dataDir), 'done');
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return []; // no done/ yet
  }
  const removed: string[] = [];
  for (const e of entries) {
    if (stopping()) break;
    if (!e.isFile() || !e.name.endsWith(SIDECARS.result)) continue;
    const counts = join(dir, e.name);
    const file = counts.slice(0, -SIDECARS.result.length);
    try {
      if (lstatSync(counts).mtimeMs >= endedBefore) continue;
      const st = lstatSync(file, { throwIfNoEntry: false });
      if (st && !st.isFile()) continue; // not what the server filed
      if (st) {
        unlinkSync(file);
        removed.push(basename(file));
      }
      unlinkSync(counts);
    } catch (err) {
      // one that cannot go (removed meanwhile, permissions) does not keep the others
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') log.warn({ err, file }, 'could not remove an old feed file from inbox/done/');
    }
  }
  return removed;
}

/**
 * `dir/name`, or `dir/<prefix>-name` when a file of that name (or one beside it) is already there
 * (never overwritten). The prefix is the feed job's id for a file that is one; any other file gets
 * `copy-<8 hex digits>` (copyPrefix): an id of no feed job was looked up, and not found, by an
 * operator (a feed tester's case).
 */
export function freeName(dir: string, name: string, prefix: string = copyPrefix()): string {
  const taken = [name, ...Object.values(SIDECARS).map((s) => `${name}${s}`)].some((n) => existsSync(join(dir, n)));
  return taken ? join(dir, `${prefix}-${name}`) : join(dir, name);
}

/** The prefix of a file that is no feed job's, when its name is taken: `copy-` and 32 random bits. */
const copyPrefix = () => `copy-${randomBytes(4).toString('hex')}`;

/** What feed code logs (the server's logger; on the bulk thread, messages to it). */
export interface FeedLog {
  warn(fields: object, msg: string): void;
  error(fields: object, msg: string): void;
}

/**
 * Why an inbox file is not done: it has another size than when it was taken (it was read as it
 * was then: feed-reader.ts). Null when not, when nothing was kept, or when the file is gone.
 */
export function changedSinceTaken(feed: FeedJob): string | null {
  if (feed.takenSize === null || !feed.filePath) return null;
  const size = statSync(feed.filePath, { throwIfNoEntry: false })?.size;
  if (size === undefined || size === feed.takenSize) return null;
  const what =
    size > feed.takenSize
      ? `the file grew after it was taken from the inbox (${feed.takenSize} bytes then, ${size} now): its writer went on after a pause of more than 2 seconds, and only its first ${feed.takenSize} bytes were read`
      : `the file was cut after it was taken from the inbox (${feed.takenSize} bytes then, ${size} now): it was read up to its last whole record, not past it`;
  return `${what}. Put the whole file into the inbox again (records already applied change nothing), and copy files in under a hidden name (.name) and rename them once written`;
}

/**
 * Where a finished feed's file goes: deleted, or (inbox) moved to done/ with its counts beside it
 * (`<name>.result.txt`) or to failed/ with the reason, then the counts (`<name>.reason.txt`).
 * `feed` is the finished record. A file that cannot be moved is logged and left; the feed's record
 * stands.
 */
export function settleFeedFile(dataDir: string, log: FeedLog, feed: FeedJob, failure: string | null): void {
  if (!feed.filePath) return;
  if (!existsSync(feed.filePath)) {
    // removed from processing/ by hand while its feed ran: nothing to file its counts beside (a tester found no trace of it)
    if (feed.source === 'inbox') log.warn({ feed: feed.id, file: feed.filePath, status: feed.status }, 'an inbox file was removed from processing/ before its feed ended; its counts are in the feed job only');
    return;
  }
  try {
    if (feed.source !== 'inbox') {
      unlinkSync(feed.filePath);
      return;
    }
    // a writer that went on after the file was taken (it paused longer than the inbox waits): what
    // it wrote since may not have been read, so the file is not done
    failure ??= changedSinceTaken(feed);
    const dir = inboxFolder(dataDir, failure ? 'failed' : 'done');
    const target = freeName(dir, basename(feed.filePath).replace(/^feed_[0-9a-z]+-/, ''), feed.id);
    if (failure) writeSidecar(target, 'reason', `${failure}\n${feedSummary(feed)}`);
    else writeSidecar(target, 'result', feed.message ? `${feedSummary(feed)}. ${feed.message}` : feedSummary(feed));
    renameSync(feed.filePath, target);
  } catch (err) {
    log.error({ err, feed: feed.id }, 'could not move a finished feed file');
  }
}
