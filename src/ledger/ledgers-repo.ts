import type { Keyset } from '../cursor.ts';
import type { Db } from '../storage/db.ts';
import type { Ledger } from './model.ts';

interface LedgerRow {
  id: string;
  org_id: string;
  name: string;
  description: string;
  contact_count: number;
  created_at: number;
  updated_at: number;
}

const COLUMNS = 'id, org_id, name, description, contact_count, created_at, updated_at';

const toLedger = (r: LedgerRow): Ledger => ({
  id: r.id,
  orgId: r.org_id,
  name: r.name,
  description: r.description,
  contactCount: r.contact_count,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export type LedgersRepo = ReturnType<typeof createLedgersRepo>;

/** Ledgers. A deleted ledger is hidden at once (deleted_at) and purged by a background job. */
export function createLedgersRepo(db: Db) {
  const q = {
    byId: db.raw.prepare<[string, string], LedgerRow>(`SELECT ${COLUMNS} FROM ledgers WHERE id = ? AND org_id = ? AND deleted_at IS NULL`),
    first: db.raw.prepare<[string, number], LedgerRow>(`SELECT ${COLUMNS} FROM ledgers WHERE org_id = ? AND deleted_at IS NULL ORDER BY created_at, id LIMIT ?`),
    after: db.raw.prepare<[string, number, number, string, number], LedgerRow>(
      `SELECT ${COLUMNS} FROM ledgers WHERE org_id = ? AND deleted_at IS NULL AND (created_at > ? OR (created_at = ? AND id > ?)) ORDER BY created_at, id LIMIT ?`,
    ),
    insert: db.raw.prepare('INSERT INTO ledgers (id, org_id, name, description, created_at, updated_at) VALUES (@id, @orgId, @name, @description, @createdAt, @updatedAt)'),
    update: db.raw.prepare('UPDATE ledgers SET name = @name, description = @description, updated_at = @updatedAt WHERE id = @id'),
    markDeleted: db.raw.prepare<[number, string]>('UPDATE ledgers SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL'),
    markOrgDeleted: db.raw.prepare<[number, string]>('UPDATE ledgers SET deleted_at = ? WHERE org_id = ? AND deleted_at IS NULL RETURNING id'),
    ofOrgAll: db.raw.prepare<[string], string>('SELECT id FROM ledgers WHERE org_id = ?').pluck(),
    addCount: db.raw.prepare<[number, string]>('UPDATE ledgers SET contact_count = contact_count + ? WHERE id = ?'),
    purge: db.raw.prepare<[string]>('DELETE FROM ledgers WHERE id = ? AND deleted_at IS NOT NULL'),
    orgOf: db.raw.prepare<[string], string>('SELECT org_id FROM ledgers WHERE id = ?').pluck(),
    exists: db.raw.prepare<[string], number>('SELECT 1 FROM ledgers WHERE id = ? AND deleted_at IS NULL').pluck(),
  };
  return {
    /** The ledger when it exists, is not deleted and belongs to the organization. */
    findLedger: (orgId: string, id: string): Ledger | undefined => {
      const r = q.byId.get(id, orgId);
      return r && toLedger(r);
    },
    /** True while the ledger exists and is not being deleted. */
    isLive: (id: string): boolean => q.exists.get(id) === 1,
    /** Ledgers of an organization in creation order, `limit + 1` rows. */
    listLedgers: (orgId: string, limit: number, from?: Keyset): Ledger[] =>
      (from ? q.after.all(orgId, from.at, from.at, from.id, limit + 1) : q.first.all(orgId, limit + 1)).map(toLedger),
    insertLedger: (l: Omit<Ledger, 'contactCount'>): void => void q.insert.run(l),
    updateLedger: (l: Ledger): void => void q.update.run({ id: l.id, name: l.name, description: l.description, updatedAt: l.updatedAt }),
    markLedgerDeleted: (id: string, now: number): void => void q.markDeleted.run(now, id),
    /** Hides every ledger of the organization; returns their ids. */
    markOrgLedgersDeleted: (orgId: string, now: number): string[] => (q.markOrgDeleted.all(now, orgId) as { id: string }[]).map((r) => r.id),
    /** Every ledger row of the organization, deleted or not (for the purge). */
    listAllLedgerIdsOfOrg: (orgId: string): string[] => q.ofOrgAll.all(orgId),
    /** Keeps contactCount exact: called in the transaction that adds or removes contacts. */
    addContactCount: (id: string, delta: number): void => void q.addCount.run(delta, id),
    /** Removes a deleted ledger's row once its contacts are gone (cascades the rest). */
    purgeLedger: (id: string): void => void q.purge.run(id),
    orgOfLedger: (id: string): string | undefined => q.orgOf.get(id),
  };
}
