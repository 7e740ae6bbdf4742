import type { Db } from '../storage/db.ts';

export interface DailySetFile {
  name: string;
  bytes: number;
  contacts: number;
}

export interface DailySet {
  ledgerId: string;
  day: string;
  files: DailySetFile[];
  createdAt: number;
}

export type DailySetsRepo = ReturnType<typeof createDailySetsRepo>;

/** A UTC day in epoch milliseconds; the index changes_by_ledger_day keys changes by detected_at / DAY_MS. */
const DAY_MS = 86_400_000;
const dayNumber = (dayStart: number): number => {
  if (dayStart % DAY_MS !== 0) throw new Error(`${dayStart} is not the start of a UTC day`);
  return dayStart / DAY_MS;
};

/** Which (ledger, day) change sets were written, and the contacts they hold. */
export function createDailySetsRepo(db: Db) {
  const q = {
    // per live ledger, one probe of changes_by_ledger_time (a scan of all changes per day would not scale)
    ledgersWithChanges: db.raw.prepare<[number, number], string>(
      'SELECT l.id FROM ledgers l WHERE l.deleted_at IS NULL AND EXISTS (SELECT 1 FROM changes c WHERE c.ledger_id = l.id AND c.detected_at >= ? AND c.detected_at < ?)',
    ).pluck(),
    exists: db.raw.prepare<[string, string], number>('SELECT 1 FROM daily_change_sets WHERE ledger_id = ? AND day = ?').pluck(),
    // one seek into (ledger_id, day, contact_id) and the next entries in order: no sort, and the
    // day's other contacts are not read (the expression must be the index's own, migration 0011)
    changedContacts: db.raw.prepare<[string, number, string, number], string>(
      `SELECT DISTINCT contact_id FROM changes INDEXED BY changes_by_ledger_day WHERE ledger_id = ? AND detected_at / ${DAY_MS} = ? AND contact_id > ? ORDER BY contact_id LIMIT ?`,
    ).pluck(),
    insert: db.raw.prepare<[string, string, string, number]>('INSERT OR REPLACE INTO daily_change_sets (ledger_id, day, files, created_at) VALUES (?, ?, ?, ?)'),
    list: db.raw.prepare<[string, string, number], { ledger_id: string; day: string; files: string; created_at: number }>(
      'SELECT * FROM daily_change_sets WHERE ledger_id = ? AND day < ? ORDER BY day DESC LIMIT ?',
    ),
    one: db.raw.prepare<[string, string], { ledger_id: string; day: string; files: string; created_at: number }>('SELECT * FROM daily_change_sets WHERE ledger_id = ? AND day = ?'),
  };
  const toSet = (r: { ledger_id: string; day: string; files: string; created_at: number }): DailySet => ({ ledgerId: r.ledger_id, day: r.day, files: JSON.parse(r.files) as DailySetFile[], createdAt: r.created_at });
  return {
    listLedgersWithChanges: (from: number, to: number): string[] => q.ledgersWithChanges.all(from, to),
    hasSet: (ledgerId: string, day: string): boolean => q.exists.get(ledgerId, day) === 1,
    /**
     * Ids of contacts of the ledger changed on the UTC day that starts at `dayStart` (ms), after
     * `afterId`, in id order, each once: a page costs its own entries, whatever the size of the day.
     */
    listChangedContactIds: (ledgerId: string, dayStart: number, afterId: string, limit: number): string[] =>
      q.changedContacts.all(ledgerId, dayNumber(dayStart), afterId, limit),
    /** The query plan of listChangedContactIds (tests). */
    explainChangedContactIds: (ledgerId: string, dayStart: number): string[] =>
      (db.raw.prepare(`EXPLAIN QUERY PLAN ${q.changedContacts.source}`).all(ledgerId, dayNumber(dayStart), '', 500) as { detail: string }[]).map((r) => r.detail),
    recordSet: (s: DailySet): void => void q.insert.run(s.ledgerId, s.day, JSON.stringify(s.files), s.createdAt),
    /** Sets of a ledger, newest day first, before `beforeDay` (exclusive), `limit` rows. */
    listSets: (ledgerId: string, beforeDay: string, limit: number): DailySet[] => q.list.all(ledgerId, beforeDay, limit).map(toSet),
    findSet: (ledgerId: string, day: string): DailySet | undefined => {
      const r = q.one.get(ledgerId, day);
      return r && toSet(r);
    },
  };
}
