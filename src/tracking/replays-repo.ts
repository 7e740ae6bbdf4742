import { hash } from 'node:crypto';
import type { Db } from '../storage/db.ts';

/** How a record was counted the first time a feed applied it: its replays are counted so. */
export const REPLAY_OUTCOMES = ['applied', 'stale', 'repeated'] as const;
export type ReplayOutcome = (typeof REPLAY_OUTCOMES)[number];

/**
 * How many days feeds remember the records they applied, from the day they applied them: a replay
 * after that is told by the person it matches, as before migration 0043 (tracking.md, Replays are
 * found before matching).
 */
export const FEED_REPLAY_DAYS = 31;

/** The UTC day of a time, as the store counts days (observed_day, applied_day). */
export const utcDay = (ms: number): number => Math.floor(ms / 86_400_000);

/** A record a feed applied (migration 0043): which feed, to whom, and how it was counted. */
export interface AppliedRecord {
  feed: number;
  person: number | null;
  outcome: ReplayOutcome;
}

/**
 * One run of a feed job, as the tracker looks for its replays: `feed`, 48 bits of the job's id (two
 * feeds sharing them: a replay is applied as new, as before 0043); `daysOfOthers`, whether other
 * feeds left records of an observation day, asked once a day a run — a new day's feed (the usual
 * one) then looks nothing up. Feeds run one at a time, so no other feed adds any meanwhile.
 */
export class FeedRun {
  readonly feed: number;
  readonly daysOfOthers = new Map<number, boolean>();
  constructor(feedId: string) {
    this.feed = hash('sha256', feedId, 'buffer').readUIntBE(0, 6);
  }
}

export type ReplaysRepo = ReturnType<typeof createReplaysRepo>;

/** The records feeds applied, by what they say and their observation time (tracking.md, Replays). */
export function createReplaysRepo(db: Db) {
  const q = {
    anyOfDay: db.raw.prepare<[number], number>('SELECT EXISTS (SELECT 1 FROM feed_records_applied WHERE observed_day = ?)').pluck(),
    find: db.raw.prepare<[number, Buffer], { feed: number; person: number | null; outcome: number }>('SELECT feed, person, outcome FROM feed_records_applied WHERE observed_day = ? AND key = ?'),
    insert: db.raw.prepare<[number, Buffer, number, number, number | null, number]>(
      'INSERT OR IGNORE INTO feed_records_applied (observed_day, key, applied_day, feed, person, outcome) VALUES (?, ?, ?, ?, ?, ?)',
    ),
    // rows observed up to a day, in key order after a point (pruner)
    applied: db.raw.prepare<[number, Buffer, number, number], { observed_day: number; key: Buffer; applied_day: number }>(
      'SELECT observed_day, key, applied_day FROM feed_records_applied WHERE (observed_day, key) > (?, ?) AND observed_day <= ? ORDER BY observed_day, key LIMIT ?',
    ),
    delete: db.raw.prepare<[number, Buffer]>('DELETE FROM feed_records_applied WHERE observed_day = ? AND key = ?'),
  };
  return {
    /** The query plan of the prune's walk (tests: it seeks to where it stopped). */
    explainPruneWalk: (): string[] => db.queryPlan(q.applied.source, 0, Buffer.alloc(0), 1, 100),
    /** Whether any record observed on `day` is remembered. */
    hasDay: (day: number): boolean => q.anyOfDay.get(day) === 1,
    findApplied(day: number, key: Buffer): AppliedRecord | undefined {
      const r = q.find.get(day, key);
      return r && { feed: r.feed, person: r.person, outcome: REPLAY_OUTCOMES[r.outcome]! };
    },
    /** Records the first application of a record, on `appliedDay`; one already recorded stays as it was. */
    recordApplied(day: number, key: Buffer, appliedDay: number, a: AppliedRecord): void {
      q.insert.run(day, key, appliedDay, a.feed, a.person, REPLAY_OUTCOMES.indexOf(a.outcome));
    },
    /**
     * The nightly prune, as a step of jobs/chunk-pacing.ts deleteInChunks: the records applied
     * FEED_REPLAY_DAYS before `today` or earlier (before `day`) go, and those applied after `today` (by this machine's clock while it was ahead;
     * kept, they would stay until the real time got past them). Each call walks up to `n` rows in
     * key order from where the last one stopped, deletes those, and returns how many it walked (0:
     * done); `deleted` counts what went. Only two ranges can hold such rows, as a record is observed
     * at most a day after it is applied (OBSERVED_AT_SKEW_MS): observed up to the day after `day`,
     * and observed after the day after `today`. The ones kept there (a backfill, observed long ago
     * and applied lately) are walked once a night, not again for every chunk.
     */
    pruner(today: number): { step: (n: number) => number; deleted: () => number } {
      const day = today - FEED_REPLAY_DAYS;
      const ranges = [
        { from: Number.MIN_SAFE_INTEGER, upTo: day + 1 },
        { from: today + 2, upTo: Number.MAX_SAFE_INTEGER },
      ];
      let range = 0;
      let from: { day: number; key: Buffer } = { day: ranges[0]!.from, key: Buffer.alloc(0) };
      let deleted = 0;
      return {
        step: (n) => {
          while (range < ranges.length) {
            const rows = q.applied.all(from.day, from.key, ranges[range]!.upTo, n);
            if (rows.length) {
              for (const r of rows) if (r.applied_day < day || r.applied_day > today) deleted += q.delete.run(r.observed_day, r.key).changes;
              from = { day: rows.at(-1)!.observed_day, key: rows.at(-1)!.key };
              return rows.length;
            }
            range++;
            if (range < ranges.length) from = { day: ranges[range]!.from, key: Buffer.alloc(0) };
          }
          return 0;
        },
        deleted: () => deleted,
      };
    },
  };
}
