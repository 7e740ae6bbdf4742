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
    insert: db.raw.prepare(
      'INSERT INTO changes (id, ledger_id, contact_id, type, field, from_value, to_value, detected_at, observed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq',
    ),
    ofContactFirst: db.raw.prepare<[string, number], ChangeRow>('SELECT * FROM changes WHERE contact_id = ? ORDER BY seq DESC LIMIT ?'),
    ofContactAfter: db.raw.prepare<[string, number, number], ChangeRow>('SELECT * FROM changes WHERE contact_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?'),
    firstSince: db.raw.prepare<[string, number], number | null>('SELECT min(seq) FROM changes WHERE ledger_id = ? AND detected_at >= ?').pluck(),
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
    insertChange: (c: Omit<Change, 'seq'>): number =>
      (q.insert.get(c.id, c.ledgerId, c.contactId, c.type, c.field, JSON.stringify(c.from), JSON.stringify(c.to), c.detectedAt, c.observedAt) as { seq: number }).seq,
    /** A contact's changes, newest first, `limit` rows before `beforeSeq`. */
    listOfContact: (contactId: string, limit: number, beforeSeq?: number): Change[] =>
      (beforeSeq === undefined ? q.ofContactFirst.all(contactId, limit) : q.ofContactAfter.all(contactId, beforeSeq, limit)).map(toChange),
    /** A ledger's changes in the order they were recorded, after `afterSeq`. */
    listOfLedger: (ledgerId: string, opts: { since?: number; type?: ChangeType; afterSeq: number; limit: number }): Change[] => feedQuery(ledgerId, opts).map(toChange),
    /** The query plan of listOfLedger (tests: every feed query walks an index in seq order). */
    explainListOfLedger: (ledgerId: string, opts: { since?: number; type?: ChangeType; afterSeq: number; limit: number }): string[] =>
      (feedQuery(ledgerId, opts, true) as unknown as { detail: string }[]).map((r) => r.detail),
    /** The first change of the ledger detected at or after `since` (where a `since` feed starts). */
    firstSeqSince: (ledgerId: string, since: number): number | null => q.firstSince.get(ledgerId, since) ?? null,
    purgeChanges: (ledgerId: string, n: number): number => q.purge.run(ledgerId, n).changes,
    deleteChangesOfContact: (contactId: string): void => void q.deleteOfContact.run(contactId),
  };
}
