/**
 * The people one feed job has listed so far (SPEC §5: replaying a feed produces no new changes).
 * A feed that lists a person again at the same observation time — one row per job, or a record
 * repeated — has its first listing applied; the others only fill in what it lacked, or are counted
 * as `repeated` (tracker.ts fillIn): applying each one made the last win, and a replay then applied
 * the first again (two job changes every replay).
 *
 * A bit per person seq (a million people: 125 KB), with the seqs first listed in the chunk in
 * flight kept aside: they are stored with the chunk, in its transaction (`chunkPeople`), so that a
 * feed resumed after a crash knows whom its committed chunks listed (`fromStored`); when the chunk
 * rolls back they are unlisted again (`chunk`).
 */
export class FeedListing {
  private bits = new Uint8Array(0);
  /** Seqs beyond what a bitmap should hold (not expected: people seqs are dense from 1). */
  private large = new Set<number>();
  private pending: number[] = [];

  /** Rebuilt from the chunks a feed committed (FeedsRepo.listedPeople). */
  static fromStored(blobs: Uint8Array[]): FeedListing {
    const listing = new FeedListing();
    for (const b of blobs) for (const seq of decode(b)) listing.mark(seq);
    return listing;
  }

  has(seq: number): boolean {
    if (seq >= BITMAP_LIMIT) return this.large.has(seq);
    const byte = seq >>> 3;
    return byte < this.bits.length && (this.bits[byte]! & (1 << (seq & 7))) !== 0;
  }

  /** Marks a person listed by the chunk in flight (`chunk`). */
  add(seq: number): void {
    if (this.has(seq)) return;
    this.mark(seq);
    this.pending.push(seq);
  }

  /** Whom the chunk in flight listed first, encoded for storage (null: nobody). */
  chunkPeople(): Uint8Array | null {
    return this.pending.length ? encode(this.pending) : null;
  }

  /**
   * Runs a chunk's transaction: whom it listed stays listed when it commits, and is unlisted again
   * when it fails (a chunk rolled back is processed again).
   */
  chunk<T>(tx: () => T): T {
    this.pending = [];
    try {
      return tx();
    } catch (err) {
      for (const seq of this.pending) this.unmark(seq);
      throw err;
    } finally {
      this.pending = [];
    }
  }

  private mark(seq: number): void {
    if (seq >= BITMAP_LIMIT) {
      this.large.add(seq);
      return;
    }
    const byte = seq >>> 3;
    if (byte >= this.bits.length) {
      const grown = new Uint8Array(Math.max(byte + 1, this.bits.length * 2, 1024));
      grown.set(this.bits);
      this.bits = grown;
    }
    this.bits[byte]! |= 1 << (seq & 7);
  }

  private unmark(seq: number): void {
    if (seq >= BITMAP_LIMIT) this.large.delete(seq);
    else this.bits[seq >>> 3]! &= ~(1 << (seq & 7));
  }
}

/** 2^31 seqs: a bitmap of up to 256 MiB would be absurd long before that. */
const BITMAP_LIMIT = 2 ** 31;

/** float64 little-endian, 8 bytes a seq (exact up to 2^53), whatever the machine's byte order. */
function encode(seqs: number[]): Uint8Array {
  const bytes = new Uint8Array(seqs.length * 8);
  const view = new DataView(bytes.buffer);
  seqs.forEach((seq, i) => view.setFloat64(i * 8, seq, true));
  return bytes;
}

function decode(b: Uint8Array): number[] {
  if (b.byteLength % 8 !== 0) throw new Error(`a stored feed listing has ${b.byteLength} bytes, not a multiple of 8`);
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  return Array.from({ length: b.byteLength / 8 }, (_, i) => view.getFloat64(i * 8, true));
}
