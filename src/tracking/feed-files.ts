import { closeSync, existsSync, mkdirSync, openSync, readSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { FeedFormat } from './feed-reader.ts';
import type { FeedJob } from './feeds-repo.ts';

/** Where feed files live, and where a finished feed's file goes (operations.md, data layout). */

export const feedsDir = (dataDir: string) => join(dataDir, 'feeds');
export const inboxDir = (dataDir: string) => join(dataDir, 'inbox');
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

/** `dir/name`, or `dir/<prefix>-name` when a file of that name is already there (never overwritten). */
export function freeName(dir: string, name: string, prefix: string): string {
  return existsSync(join(dir, name)) ? join(dir, `${prefix}-${name}`) : join(dir, name);
}

/** What feed code logs (the server's logger; on the bulk thread, messages to it). */
export interface FeedLog {
  warn(fields: object, msg: string): void;
  error(fields: object, msg: string): void;
}

/**
 * Where a finished feed's file goes: deleted, or (inbox) moved to done/ or failed/ with the reason
 * beside it. A file that cannot be moved is logged and left; the feed's record stands.
 */
export function settleFeedFile(dataDir: string, log: FeedLog, feed: FeedJob, failure: string | null): void {
  if (!feed.filePath || !existsSync(feed.filePath)) return;
  try {
    if (feed.source !== 'inbox') {
      unlinkSync(feed.filePath);
      return;
    }
    const dir = join(inboxDir(dataDir), failure ? 'failed' : 'done');
    mkdirSync(dir, { recursive: true });
    const target = freeName(dir, basename(feed.filePath).replace(/^feed_[0-9a-z]+-/, ''), feed.id);
    renameSync(feed.filePath, target);
    if (failure) writeFileSync(`${target}.reason.txt`, `${failure}\n`);
  } catch (err) {
    log.error({ err, feed: feed.id }, 'could not move a finished feed file');
  }
}
