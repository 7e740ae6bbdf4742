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

/**
 * The contacts of a ledger changed on one day: `collect` reads the day's changes in the order they
 * were detected, `limit` at a time, and keeps each contact id once; `page` lists the ids kept, in
 * id order, after `afterId`; `close` lets go of them. Every change row of the day is read once.
 */
export interface ChangedContactsWalk {
  /** Reads the next `limit` changes of the day; returns how many it read (0: the day is done). */
  collect(limit: number): number;
  page(afterId: string, limit: number): string[];
  close(): void;
}

/** Which (ledger, day) change sets were written, and the contacts they hold. */
export function createDailySetsRepo(db: Db) {
  let walks = 0;
  const q = {
    // per live ledger, one probe of changes_by_ledger_time (a scan of all changes per day would not scale)
    ledgersWithChanges: db.raw.prepare<[number, number], string>(
      'SELECT l.id FROM ledgers l WHERE l.deleted_at IS NULL AND EXISTS (SELECT 1 FROM changes c WHERE c.ledger_id = l.id AND c.detected_at >= ? AND c.detected_at < ?)',
    ).pluck(),
    exists: db.raw.prepare<[string, string], number>('SELECT 1 FROM daily_change_sets WHERE ledger_id = ? AND day = ?').pluck(),
    hasChanges: db.raw.prepare<[string, number, number], number>('SELECT EXISTS (SELECT 1 FROM changes WHERE ledger_id = ? AND detected_at >= ? AND detected_at < ?)').pluck(),
    // the day's changes from a keyset position (detected_at, seq) on, in that order: a range of
    // changes_by_ledger_time (whose entries end in the rowid, seq), no sort
    dayChanges: db.raw.prepare<[string, number, number, number, number], [string, number, number]>(
      'SELECT contact_id, detected_at, seq FROM changes INDEXED BY changes_by_ledger_time WHERE ledger_id = ? AND detected_at < ? AND (detected_at, seq) > (?, ?) ORDER BY detected_at, seq LIMIT ?',
    ).raw(),
    insert: db.raw.prepare<[string, string, string, number]>('INSERT OR REPLACE INTO daily_change_sets (ledger_id, day, files, created_at) VALUES (?, ?, ?, ?)'),
    list: db.raw.prepare<[string, string, number], { ledger_id: string; day: string; files: string; created_at: number }>(
      'SELECT * FROM daily_change_sets WHERE ledger_id = ? AND day < ? ORDER BY day DESC LIMIT ?',
    ),
    one: db.raw.prepare<[string, string], { ledger_id: string; day: string; files: string; created_at: number }>('SELECT * FROM daily_change_sets WHERE ledger_id = ? AND day = ?'),
    // the sets of days before one (the retention; a row per ledger and day kept: a short scan)
    older: db.raw.prepare<[string, number], { ledger_id: string; day: string }>('SELECT ledger_id, day FROM daily_change_sets WHERE day < ? LIMIT ?'),
    remove: db.raw.prepare<[string, string]>('DELETE FROM daily_change_sets WHERE ledger_id = ? AND day = ?'),
  };
  const toSet = (r: { ledger_id: string; day: string; files: string; created_at: number }): DailySet => ({ ledgerId: r.ledger_id, day: r.day, files: JSON.parse(r.files) as DailySetFile[], createdAt: r.created_at });
  return {
    listLedgersWithChanges: (from: number, to: number): string[] => q.ledgersWithChanges.all(from, to),
    hasSet: (ledgerId: string, day: string): boolean => q.exists.get(ledgerId, day) === 1,
    /** Whether the ledger has a change detected in [from, to): one probe of changes_by_ledger_time. */
    hasChanges: (ledgerId: string, from: number, to: number): boolean => q.hasChanges.get(ledgerId, from, to) === 1,
    /**
     * The contacts of the ledger changed in [from, to) (ChangedContactsWalk). Without an index of
     * their own: one in (ledger_id, day, contact_id) cost every feed about 12 % of its throughput
     * (docs/decisions.md). The ids are kept in a temporary table keyed by contact id, which
     * better-sqlite3 holds in memory (temp_store=2): each id once, read back in id order, sorted a
     * step at a time as they arrive; only the database connection's own temp schema is written.
     */
    openChangedContacts(ledgerId: string, from: number, to: number): ChangedContactsWalk {
      const table = `temp.daily_set_ids_${++walks}`; // a counter: several walks may be open at once
      db.raw.exec(`CREATE TABLE ${table} (contact_id TEXT PRIMARY KEY) WITHOUT ROWID`);
      const keep = db.raw.prepare<[string]>(`INSERT OR IGNORE INTO ${table} (contact_id) VALUES (?)`);
      const page = db.raw.prepare<[string, number], string>(`SELECT contact_id FROM ${table} WHERE contact_id > ? ORDER BY contact_id LIMIT ?`).pluck();
      const keepAll = db.raw.transaction((rows: [string, number, number][]) => {
        for (const r of rows) keep.run(r[0]);
      });
      let at: [number, number] = [from, 0]; // before the day's first change: seqs start at 1
      let closed = false;
      return {
        collect(limit) {
          const rows = q.dayChanges.all(ledgerId, to, at[0], at[1], limit);
          if (rows.length) {
            keepAll(rows);
            const last = rows[rows.length - 1]!;
            at = [last[1], last[2]];
          }
          return rows.length;
        },
        page: (afterId, limit) => page.all(afterId, limit),
        close() {
          if (closed) return;
          closed = true;
          db.raw.exec(`DROP TABLE ${table}`);
        },
      };
    },
    /** The query plan of a collect step (tests: a range of changes_by_ledger_time, no sort). */
    explainCollect: (ledgerId: string, from: number, to: number): string[] =>
      db.queryPlan(q.dayChanges.source, ledgerId, to, from, 0, 2000),
    /** A transaction of its own: every write takes the process's write lock (storage/write-lock.ts). */
    recordSet: (s: DailySet): void => db.tx(() => void q.insert.run(s.ledgerId, s.day, JSON.stringify(s.files), s.createdAt)),
    /** Sets of a ledger, newest day first, before `beforeDay` (exclusive), `limit` rows. */
    listSets: (ledgerId: string, beforeDay: string, limit: number): DailySet[] => q.list.all(ledgerId, beforeDay, limit).map(toSet),
    /** Up to `limit` sets of days before `day` (YYYYMMDD), any ledger. */
    listSetsBefore: (day: string, limit: number): { ledgerId: string; day: string }[] => q.older.all(day, limit).map((r) => ({ ledgerId: r.ledger_id, day: r.day })),
    /** Forgets a set (its files go after: a set listed is one whose files are there). */
    removeSet: (ledgerId: string, day: string): void => db.tx(() => void q.remove.run(ledgerId, day)),
    findSet: (ledgerId: string, day: string): DailySet | undefined => {
      const r = q.one.get(ledgerId, day);
      return r && toSet(r);
    },
  };
}
