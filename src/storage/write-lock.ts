/**
 * The process's write lock, shared by the main thread's writer connection, the bulk thread's
 * (src/bulk-thread) and the checkpointer's thread, whose TRUNCATE checkpoints hold SQLite's write
 * lock too (storage/checkpoint-worker.ts): whoever writes holds it, so they never meet in SQLite's
 * busy handler. That handler polls with growing sleeps (up to 100 ms), so a main-thread write
 * waiting in it for a thread that commits a chunk every ~30 ms and starts the next one at once
 * could miss every gap and block the event loop until busy_timeout (RELIABILITY.md M5, L2). Here
 * the waiter is woken the moment the holder lets go, and a waiting main thread goes first: the
 * other threads do not take the lock again while the main thread waits for it. A main-thread write
 * therefore waits for at most the rest of one chunk (or one truncate).
 *
 * Every side waits with Atomics.wait, which blocks: the main thread for at most that chunk, the
 * other threads for at most one request's transaction.
 */
const HOLDER = 0;
const MAIN_WAITING = 1;
const FREE = 0;

export type LockSide = 'main' | 'thread' | 'checkpoint';

const ID: Record<LockSide, number> = { main: 1, thread: 2, checkpoint: 3 };

// ES2024's Atomics.waitAsync (Node 16+), which the es2023 lib this project compiles with leaves out
const waitAsync = (Atomics as unknown as {
  waitAsync(a: Int32Array, index: number, value: number, timeoutMs: number): { async: false; value: string } | { async: true; value: Promise<string> };
}).waitAsync;

export class LockTimeoutError extends Error {
  override name = 'LockTimeoutError';
  /** Mapped like SQLite's own busy error: 503 with Retry-After (storage/db.ts storageError). */
  readonly code = 'SQLITE_BUSY';
}

export class WriteLock {
  readonly shared: Int32Array;

  constructor(shared: Int32Array = new Int32Array(new SharedArrayBuffer(8))) {
    this.shared = shared;
  }

  /** Takes the lock, waiting up to `timeoutMs` (then LockTimeoutError, like busy_timeout). */
  acquire(side: LockSide, timeoutMs: number): void {
    const s = this.shared;
    const me = ID[side];
    const deadline = performance.now() + timeoutMs;
    if (side === 'main') Atomics.add(s, MAIN_WAITING, 1);
    try {
      for (;;) {
        // The other threads give way to a waiting main thread (this loop's first condition).
        if ((side === 'main' || Atomics.load(s, MAIN_WAITING) === 0) && Atomics.compareExchange(s, HOLDER, FREE, me) === FREE) return;
        const left = deadline - performance.now();
        if (left <= 0) throw new LockTimeoutError(`the database stayed locked for ${timeoutMs} ms`);
        const holder = Atomics.load(s, HOLDER);
        // Woken by release(); the other threads also re-check every millisecond while the main thread waits.
        if (holder !== FREE) Atomics.wait(s, HOLDER, holder, Math.min(left, side === 'main' ? left : 1));
        else if (side !== 'main') Atomics.wait(s, MAIN_WAITING, Atomics.load(s, MAIN_WAITING), Math.min(left, 1));
      }
    } finally {
      if (side === 'main') Atomics.sub(s, MAIN_WAITING, 1);
    }
  }

  /**
   * Resolves once the bulk thread does not hold the lock (at once when it does not now): the write
   * transaction it is in the middle of has committed or rolled back. Throws LockTimeoutError when
   * it still holds it after `timeoutMs`. Waits without blocking (Atomics.waitAsync): the main
   * thread's reads call it.
   */
  async threadLetGo(timeoutMs: number): Promise<void> {
    if (Atomics.load(this.shared, HOLDER) !== ID.thread) return;
    const waited = waitAsync(this.shared, HOLDER, ID.thread, timeoutMs);
    if ((waited.async ? await waited.value : waited.value) === 'timed-out') throw new LockTimeoutError(`the bulk thread's write went on for more than ${timeoutMs} ms`);
  }

  /**
   * Announces a main-thread write and resolves once no other thread holds the lock, without
   * blocking: the other threads give way from now on, as to a main thread waiting in acquire().
   * Returns the end of the announcement, for once the write has taken the lock (or given up).
   * Throws LockTimeoutError after `timeoutMs`.
   */
  async mainComing(timeoutMs: number): Promise<() => void> {
    const s = this.shared;
    Atomics.add(s, MAIN_WAITING, 1);
    const done = () => void Atomics.sub(s, MAIN_WAITING, 1);
    try {
      const deadline = performance.now() + timeoutMs;
      for (let holder = Atomics.load(s, HOLDER); holder !== FREE && holder !== ID.main; holder = Atomics.load(s, HOLDER)) {
        const left = deadline - performance.now();
        const waited = left > 0 ? waitAsync(s, HOLDER, holder, left) : { async: false, value: 'timed-out' as const };
        if ((waited.async ? await waited.value : waited.value) === 'timed-out') throw new LockTimeoutError(`the database stayed locked for ${timeoutMs} ms`);
      }
      return done;
    } catch (err) {
      done();
      throw err;
    }
  }

  release(side: LockSide): void {
    if (Atomics.compareExchange(this.shared, HOLDER, ID[side], FREE) === ID[side]) Atomics.notify(this.shared, HOLDER);
  }

  /** After a thread died: a lock it held is free again. */
  releaseAbandoned(side: Exclude<LockSide, 'main'>): void {
    this.release(side);
  }
}
