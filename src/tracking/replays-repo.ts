import { hash } from 'node:crypto';
import type { Db } from '../storage/db.ts';

/** How a record was counted the first time a feed applied it: its replays are counted so. */
export const REPLAY_OUTCOMES = ['applied', 'stale', 'repeated'] as const;
export type ReplayOutcome = (typeof REPLAY_OUTCOMES)[number];

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
    insert: db.raw.prepare<[number, Buffer, number, number | null, number]>('INSERT OR IGNORE INTO feed_records_applied (observed_day, key, feed, person, outcome) VALUES (?, ?, ?, ?, ?)'),
    prune: db.raw.prepare<[number, number]>(
      'DELETE FROM feed_records_applied WHERE (observed_day, key) IN (SELECT observed_day, key FROM feed_records_applied WHERE observed_day < ? LIMIT ?)',
    ),
  };
  return {
    /** Whether any record observed on `day` is remembered. */
    hasDay: (day: number): boolean => q.anyOfDay.get(day) === 1,
    findApplied(day: number, key: Buffer): AppliedRecord | undefined {
      const r = q.find.get(day, key);
      return r && { feed: r.feed, person: r.person, outcome: REPLAY_OUTCOMES[r.outcome]! };
    },
    /** Records the first application of a record; one already recorded stays as it was. */
    recordApplied(day: number, key: Buffer, a: AppliedRecord): void {
      q.insert.run(day, key, a.feed, a.person, REPLAY_OUTCOMES.indexOf(a.outcome));
    },
    /** Deletes up to `n` records observed before `day` (a chunk of the nightly prune). */
    pruneBefore(day: number, n: number): number {
      return q.prune.run(day, n).changes;
    },
  };
}
