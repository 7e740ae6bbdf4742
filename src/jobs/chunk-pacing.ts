import { isMainThread } from 'node:worker_threads';
import type { Db } from '../storage/db.ts';

/**
 * Pacing of bulk jobs (imports, feeds, purges, retention) that work in chunks, one transaction
 * each: how many items a chunk takes, and what happens between two chunks. A request's write waits
 * for the chunk in flight (on the event loop for purges and retention; for imports and feeds on the
 * bulk thread, through the process's write lock), so the chunk's duration bounds its added latency.
 */

/**
 * What one chunk transaction may cost the event loop. The cost of an item grows with the size of
 * the indexes it writes into (from ~0.05 ms per contact into an empty table to several times that
 * at a million), so the number of items per chunk is measured, not fixed.
 */
export const CHUNK_BUDGET_MS = 30;
const MIN_CHUNK_ITEMS = 20;
const MAX_CHUNK_ITEMS = 5000;

/** Sizes chunks so that each transaction takes about CHUNK_BUDGET_MS, from the cost of the last ones. */
export class ChunkSizer {
  private msPerItem = 0;
  private items: number;

  constructor(first = 100) {
    this.items = first;
  }

  next(): number {
    return this.items;
  }

  /**
   * Records that `items` items took `ms` milliseconds. The cost per item is averaged (some
   * commits cost more than others); the size grows at most 2× a chunk.
   */
  record(items: number, ms: number): void {
    if (items < MIN_CHUNK_ITEMS) return; // the tail of an input says little about the cost per item
    const sample = ms / items;
    this.msPerItem = this.msPerItem === 0 ? sample : 0.7 * this.msPerItem + 0.3 * sample;
    const fit = Math.floor(CHUNK_BUDGET_MS / Math.max(this.msPerItem, 1e-6));
    this.items = Math.max(MIN_CHUNK_ITEMS, Math.min(MAX_CHUNK_ITEMS, fit, this.items * 2));
  }

  /** Runs one chunk of `items` items and records its cost. */
  timed<T>(items: number, fn: () => T): T {
    const t0 = performance.now();
    const out = fn();
    this.record(items, performance.now() - t0);
    return out;
  }
}

/**
 * What one chunk's rows may weigh beyond its first row. ChunkSizer counts rows, and its smallest
 * chunk (MIN_CHUNK_ITEMS) of rows near the 1 MiB record limit was a 20 MiB transaction (every
 * rejected row keeps its cells for the rejected-rows CSV); ordinary rows (~150 bytes) never reach
 * this, even in the largest chunk.
 */
export const CHUNK_MAX_BYTES = 1 << 20;

/**
 * Where a chunk of at most `n` rows starting at `rows[at]` ends (exclusive) so that the rows after
 * its first weigh at most CHUNK_MAX_BYTES; `endBytes` is each row's end offset in its input. A chunk
 * always takes its first row.
 */
export function byteBoundedEnd(rows: readonly { endBytes: number }[], at: number, n: number, maxBytes = CHUNK_MAX_BYTES): number {
  const last = Math.min(rows.length, at + n);
  let end = Math.min(at + 1, last);
  while (end < last && rows[end]!.endBytes - rows[at]!.endBytes <= maxBytes) end++;
  return end;
}

/** The longest pause between two chunks while HTTP requests keep the event loop busy. */
const MAX_PAUSE_MS = 50;
const tick = () => new Promise<void>((resolve) => setTimeout(resolve, 1));

/**
 * Lets the event loop serve I/O between two chunks. A request takes several turns of the loop
 * (its token is verified on the thread pool, then it runs its query and writes its answer), so
 * one turn is not enough: the pause goes on in 1 ms steps for as long as other callbacks ran
 * during the last step (up to MAX_PAUSE_MS), so requests that arrived during a chunk finish
 * before the next one starts. On an idle server the pause is one 1 ms step.
 */
export async function yieldToEventLoop(): Promise<void> {
  const start = performance.now();
  for (;;) {
    const before = performance.eventLoopUtilization();
    await tick();
    if (performance.eventLoopUtilization(before).active < 0.5 || performance.now() - start >= MAX_PAUSE_MS) return;
  }
}

/**
 * Between two chunks: room in the -wal (a checkpoint may be due), then the event loop's turn. On
 * the bulk thread (src/bulk-thread) no request shares the loop: one turn lets its messages in
 * (stop, the CSV reader's rows), without the 1 ms timer steps.
 */
export async function betweenChunks(db: Db): Promise<void> {
  await db.relieve();
  if (isMainThread) await yieldToEventLoop();
  else await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Rows in the first chunk of a chunked delete, until their cost is measured. */
export const FIRST_DELETE_CHUNK = 100;

/**
 * Deletes up to `n` rows of one kind, inside a chunk's transaction; returns how many went — or, for
 * a step that walks rows to find those to delete, how many it walked (0: nothing left to walk).
 */
export type DeleteStep = (n: number) => number;

export interface ChunkedDeleteOptions {
  /** Runs first in every chunk's transaction (a job's `lease.checkpoint()`, which fences it off). */
  inTx?: () => void;
  /** Looked at before every chunk: true ends the delete there (shutdown). */
  stopping?: () => boolean;
}

/**
 * Deletes rows (purges, retention) the way imports and feeds write them: one bulk transaction a
 * chunk, sized by a ChunkSizer to take about CHUNK_BUDGET_MS, and betweenChunks() between two.
 * Deleting costs per index entry: a contact has a dozen, a change three, so each step has a sizer
 * of its own. A chunk runs the first step that still finds rows, so the steps go in order and rows
 * that reach an earlier step meanwhile (an import still adding contacts) go first. Ends after a
 * chunk that found nothing left (`done`) or when `stopping`; each chunk commits on its own, so a
 * run that is stopped or killed is taken up again by running it again.
 */
export async function deleteInChunks(db: Db, steps: DeleteStep[], opts: ChunkedDeleteOptions = {}): Promise<{ deleted: number; done: boolean }> {
  const sizers = steps.map(() => new ChunkSizer(FIRST_DELETE_CHUNK));
  let deleted = 0;
  for (;;) {
    if (opts.stopping?.()) return { deleted, done: false };
    const t0 = performance.now();
    const [step, n] = db.bulkTx((): [number, number] => {
      opts.inTx?.();
      for (let i = 0; i < steps.length; i++) {
        const n = steps[i]!(sizers[i]!.next());
        if (n > 0) return [i, n];
      }
      return [-1, 0];
    });
    if (step < 0) return { deleted, done: true };
    sizers[step]!.record(n, performance.now() - t0);
    deleted += n;
    await betweenChunks(db);
  }
}
