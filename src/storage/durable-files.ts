import { closeSync, fsyncSync, mkdirSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import { dirname } from 'node:path';

/*
 * Files the database refers to (an upload its import job reads, a feed file, a daily change set)
 * must be on disk before the row that refers to them commits: a commit is durable
 * (synchronous=FULL), a file written or renamed a moment before it is not until it is flushed, and
 * after a power loss the job would find its file empty or gone. A rename is made durable by
 * flushing the folder it happened in.
 */

/** Flushes a file (or a folder, after a rename in it) to disk. Blocks: for small files and commands. */
export function fsyncFile(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The same on libuv's thread pool, so that flushing a large upload never holds up the event loop. */
export async function syncToDisk(path: string): Promise<void> {
  const fh = await open(path, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/**
 * Moves a file (within one file system) so that once this resolves it is whole at `to`, also after
 * a power loss: its bytes are flushed first, then the rename, through both folders.
 */
export async function moveDurably(from: string, to: string): Promise<void> {
  await syncToDisk(from);
  await rename(from, to);
  await syncToDisk(dirname(to));
  if (dirname(from) !== dirname(to)) await syncToDisk(dirname(from));
}

/** `mkdir -p` (owner only) whose new folders survive a power loss: each one's parent is flushed. */
export async function makeDirDurably(dir: string): Promise<void> {
  const first = mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (first === undefined) return; // there already
  for (let made = dir; ; made = dirname(made)) {
    await syncToDisk(dirname(made));
    if (made === first) break;
  }
}

/**
 * Copies `from` into the new file `to` (never through an existing name or link), readable and
 * writable by its owner alone (0600) from its first byte whatever the umask — as every file the
 * program writes into the data folder — and never with the source's mode, which copyFile keeps
 * (an operator's 0644 feed file stayed 0644 in the data folder). A failed copy leaves no `to`.
 */
export function copyOwnerOnly(from: string, to: string): void {
  const src = openSync(from, 'r');
  try {
    const dst = openSync(to, 'wx', 0o600);
    try {
      const buf = Buffer.allocUnsafe(1024 * 1024);
      for (let n: number; (n = readSync(src, buf, 0, buf.length, null)) > 0; ) {
        for (let at = 0; at < n; ) at += writeSync(dst, buf, at, n - at);
      }
    } catch (err) {
      closeSync(dst);
      rmSync(to, { force: true });
      throw err;
    }
    closeSync(dst);
  } finally {
    closeSync(src);
  }
}
