/**
 * How many rejected rows (imports) or records (feeds) a job keeps for its errors CSV: RELIABILITY.md
 * I3, row errors "capped at N". Past it the job goes on counting (its counts stay exact) but stores
 * no more reasons, so a file of endless bad lines — a gzip feed expands about a thousandfold —
 * cannot fill the disk with rejections. As large as the largest import we measure (docs/benchmarks.md):
 * a real file's rejections all fit.
 */
export const MAX_STORED_REJECTIONS = 1_000_000;

/**
 * Keeps a job's rejections up to MAX_STORED_REJECTIONS. `rejected`: how many the job rejected in
 * the chunks committed before this run.
 */
export class RejectionCap {
  private inChunk = 0;
  private rejected: number;
  private readonly max: number;
  constructor(rejected: number, max = MAX_STORED_REJECTIONS) {
    this.rejected = rejected;
    this.max = max;
  }
  /** Runs a chunk's transaction; its rejections count once it committed (a chunk rolled back is processed again). */
  chunk<T>(tx: () => T): T {
    this.inChunk = 0;
    const result = tx();
    this.rejected += this.inChunk;
    this.inChunk = 0;
    return result;
  }
  /** Counts one rejection of the chunk; `store` keeps it while under the cap. */
  reject(store: () => void): void {
    if (this.rejected + this.inChunk < this.max) store();
    this.inChunk++;
  }
  /** For the job's message when it ends: null while every rejection was kept. */
  note(what: 'rows' | 'records'): string | null {
    return this.rejected > this.max ? `${this.rejected} ${what} were rejected; the errors CSV lists the first ${this.max}` : null;
  }
}
