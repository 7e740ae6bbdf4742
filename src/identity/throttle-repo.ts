import type { Db } from '../storage/db.ts';

export interface ThrottleBucket {
  failures: number;
  windowStartedAt: number;
}

export type ThrottleRepo = ReturnType<typeof createThrottleRepo>;

/** Failed-sign-in counters, in SQLite so that a restart does not reset them. */
export function createThrottleRepo(db: Db) {
  const get = db.raw.prepare<[string], { failures: number; window_started_at: number }>('SELECT failures, window_started_at FROM auth_throttle WHERE key = ?');
  const put = db.raw.prepare<[string, number, number]>(
    'INSERT INTO auth_throttle (key, failures, window_started_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET failures = excluded.failures, window_started_at = excluded.window_started_at',
  );
  const del = db.raw.prepare<[string]>('DELETE FROM auth_throttle WHERE key = ?');
  const prune = db.raw.prepare<[number, number]>('DELETE FROM auth_throttle WHERE key IN (SELECT key FROM auth_throttle WHERE window_started_at < ? LIMIT ?)');
  return {
    findBucket: (key: string): ThrottleBucket | undefined => {
      const r = get.get(key);
      return r && { failures: r.failures, windowStartedAt: r.window_started_at };
    },
    saveBucket: (key: string, b: ThrottleBucket): void => void put.run(key, b.failures, b.windowStartedAt),
    deleteBucket: (key: string): void => void del.run(key),
    /** Removes up to `n` buckets whose window began before `before`; returns how many went. */
    pruneBuckets: (before: number, n: number): number => prune.run(before, n).changes,
  };
}
