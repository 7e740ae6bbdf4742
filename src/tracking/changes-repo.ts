import type { Statement } from 'better-sqlite3';
import type { Db } from '../storage/db.ts';
import type { Change, ChangeType } from './model.ts';

interface ChangeRow {
  seq: number;
  id: string;
  ledger_id: string;
  contact_id: string;
  type: ChangeType;
  field: string | null;
  from_value: string;
  to_value: string;
  detected_at: number;
  observed_at: number | null;
}

const toChange = (r: ChangeRow): Change => ({
  seq: r.seq,
  id: r.id,
  ledgerId: r.ledger_id,
  contactId: r.contact_id,
  type: r.type,
  field: r.field,
  from: JSON.parse(r.from_value) as Record<string, unknown>,
  to: JSON.parse(r.to_value) as Record<string, unknown>,
  detectedAt: r.detected_at,
  observedAt: r.observed_at,
});

export type ChangesRepo = ReturnType<typeof createChangesRepo>;

/** Change history rows (SPEC §5). */
export function createChangesRepo(db: Db) {
  const q = {
    // detected_max (migration 0013): max(detected_at, the ledger's greatest detected_max so far),
    // read from the end of (ledger_id, detected_max) — one seek — once per ledger and transaction
    // (insertChange). A scalar subquery inside the INSERT cost ~45 µs a row, the seek before each
    // insert ~15 µs; a feed chunk writes many changes of few ledgers.
    ledgerMax: db.raw.prepare<[string], number | null>('SELECT max(detected_max) FROM changes WHERE ledger_id = ?').pluck(),
    insert: db.raw.prepare(
      'INSERT INTO changes (id, ledger_id, contact_id, type, field, from_value, to_value, detected_at, observed_at, detected_max) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq',
    ),
    ofContactFirst: db.raw.prepare<[string, number], ChangeRow>('SELECT * FROM changes WHERE contact_id = ? ORDER BY seq DESC LIMIT ?'),
    ofContactAfter: db.raw.prepare<[string, number, number], ChangeRow>('SELECT * FROM changes WHERE contact_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?'),
    // The first change of the tail of the ledger whose running maximum of detected_at reached
    // `since`: one seek (migration 0013).
    firstSince: db.raw.prepare<[string, number], number>(
      'SELECT seq FROM changes INDEXED BY changes_by_ledger_detected_max WHERE ledger_id = ? AND detected_max >= ? ORDER BY detected_max, seq LIMIT 1',
    ).pluck(),
    lastSeqOfLedger: db.raw.prepare<[string], number | null>('SELECT max(seq) FROM changes WHERE ledger_id = ?').pluck(),
    purge: db.raw.prepare<[string, number]>('DELETE FROM changes WHERE seq IN (SELECT seq FROM changes WHERE ledger_id = ? LIMIT ?)'),
    deleteOfContact: db.raw.prepare<[string]>('DELETE FROM changes WHERE contact_id = ?'),
  };
  // The feed walks one index in seq order from the cursor: (ledger_id, seq), or with a type
  // (ledger_id, type, seq), so a page of a rare type reads only rows of that type instead of every
  // change of the ledger after the cursor (migration 0011). `since` filters the walk; where it
  // starts is firstSeqSince.
  const feedSql = (since: boolean, type: boolean) =>
    `SELECT * FROM changes INDEXED BY ${type ? 'changes_by_ledger_type' : 'changes_by_ledger'} WHERE ledger_id = ?${since ? ' AND detected_at >= ?' : ''}${type ? ' AND type = ?' : ''} AND seq > ? ORDER BY seq LIMIT ?`;
  const feeds = new Map<string, Statement<unknown[], ChangeRow>>();
  /** The greatest detected_max per ledger, valid in the top-level transaction numbered maxOfTx (db.writes). */
  const ledgerMaxes = new Map<string, number>();
  let maxOfTx = -1;
  const feedQuery = (ledgerId: string, opts: { since?: number; type?: ChangeType; afterSeq: number; limit: number }, explain = false) => {
    const sql = `${explain ? 'EXPLAIN QUERY PLAN ' : ''}${feedSql(opts.since !== undefined, opts.type !== undefined)}`;
    let st = feeds.get(sql);
    if (!st) {
      st = db.raw.prepare<unknown[], ChangeRow>(sql);
      feeds.set(sql, st);
    }
    const params: unknown[] = [ledgerId];
    if (opts.since !== undefined) params.push(opts.since);
    if (opts.type !== undefined) params.push(opts.type);
    params.push(opts.afterSeq, opts.limit);
    return st.all(...params);
  };
  return {
    /**
     * Records a change, inside a transaction. Its detected_max continues the ledger's: the ledger's
     * greatest is read once per transaction (no other writer can add a change meanwhile) and kept
     * here for the next changes of the same transaction. A value kept from a rolled-back savepoint
     * or before a deletion is too high, which keeps detected_max ≥ detected_at and non-decreasing
     * in seq — all that firstSeqSince needs.
     */
    insertChange: (c: Omit<Change, 'seq'>): number => {
      if (maxOfTx !== db.writes || !db.raw.inTransaction) {
        ledgerMaxes.clear();
        maxOfTx = db.writes;
      }
      const max = Math.max(c.detectedAt, ledgerMaxes.get(c.ledgerId) ?? q.ledgerMax.get(c.ledgerId) ?? c.detectedAt);
      const seq = (q.insert.get(c.id, c.ledgerId, c.contactId, c.type, c.field, JSON.stringify(c.from), JSON.stringify(c.to), c.detectedAt, c.observedAt, max) as { seq: number }).seq;
      ledgerMaxes.set(c.ledgerId, max);
      return seq;
    },
    /** A contact's changes, newest first, `limit` rows before `beforeSeq`. */
    listOfContact: (contactId: string, limit: number, beforeSeq?: number): Change[] =>
      (beforeSeq === undefined ? q.ofContactFirst.all(contactId, limit) : q.ofContactAfter.all(contactId, beforeSeq, limit)).map(toChange),
    /** A ledger's changes in the order they were recorded, after `afterSeq`. */
    listOfLedger: (ledgerId: string, opts: { since?: number; type?: ChangeType; afterSeq: number; limit: number }): Change[] => feedQuery(ledgerId, opts).map(toChange),
    /** The query plan of listOfLedger (tests: every feed query walks an index in seq order). */
    explainListOfLedger: (ledgerId: string, opts: { since?: number; type?: ChangeType; afterSeq: number; limit: number }): string[] =>
      (feedQuery(ledgerId, opts, true) as unknown as { detail: string }[]).map((r) => r.detail),
    /**
     * Where a `since` feed starts: a seq at or before the first change of the ledger detected at or
     * after `since` — that change itself unless the clock stepped back (migration 0013) — or null
     * when no change of the ledger was detected at or after it.
     */
    firstSeqSince: (ledgerId: string, since: number): number | null => q.firstSince.get(ledgerId, since) ?? null,
    /**
     * The seq of the ledger's newest change (0 without one): every change recorded later has a
     * greater one (seq is AUTOINCREMENT, migration 0011). The ledger's own, not the installation's:
     * it goes into a cursor, which must not show how many changes other organizations get.
     */
    lastSeqOfLedger: (ledgerId: string): number => q.lastSeqOfLedger.get(ledgerId) ?? 0,
    /** The query plans of firstSeqSince and of the running maximum read by insertChange (tests: one seek each). */
    explainSinceStart: (ledgerId: string, since: number): { start: string[]; insert: string[] } => ({
      start: db.queryPlan(q.firstSince.source, ledgerId, since),
      insert: db.queryPlan(q.ledgerMax.source, ledgerId),
    }),
    purgeChanges: (ledgerId: string, n: number): number => q.purge.run(ledgerId, n).changes,
    deleteChangesOfContact: (contactId: string): void => void q.deleteOfContact.run(contactId),
  };
}
