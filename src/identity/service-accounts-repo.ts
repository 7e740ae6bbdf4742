import type { Keyset } from '../cursor.ts';
import type { Db } from '../storage/db.ts';
import type { Permission, Role, ServiceAccount } from './model.ts';

interface ServiceAccountRow {
  id: string;
  org_id: string | null;
  name: string;
  role: Role | null;
  permissions: string;
  secret_hash: Buffer;
  created_by: string | null;
  created_at: number;
  rotated_at: number | null;
  last_used_at: number | null;
}

const COLS = 'id, org_id, name, role, permissions, secret_hash, created_by, created_at, rotated_at, last_used_at';

const toServiceAccount = (r: ServiceAccountRow): ServiceAccount => ({
  id: r.id,
  orgId: r.org_id,
  name: r.name,
  role: r.role,
  permissions: JSON.parse(r.permissions) as Permission[],
  secretHash: r.secret_hash,
  createdBy: r.created_by,
  createdAt: r.created_at,
  rotatedAt: r.rotated_at,
  lastUsedAt: r.last_used_at,
});

export type ServiceAccountsRepo = ReturnType<typeof createServiceAccountsRepo>;

export function createServiceAccountsRepo(db: Db) {
  const q = {
    byId: db.raw.prepare<[string], ServiceAccountRow>(`SELECT ${COLS} FROM service_accounts WHERE id = ?`),
    insert: db.raw.prepare(
      `INSERT INTO service_accounts (${COLS}) VALUES (@id, @orgId, @name, @role, @permissions, @secretHash, @createdBy, @createdAt, @rotatedAt, @lastUsedAt)`,
    ),
    setSecret: db.raw.prepare<[Buffer, number, string]>('UPDATE service_accounts SET secret_hash = ?, rotated_at = ? WHERE id = ?'),
    touch: db.raw.prepare<[number, string]>('UPDATE service_accounts SET last_used_at = ? WHERE id = ?'),
    delete: db.raw.prepare<[string]>('DELETE FROM service_accounts WHERE id = ?'),
    orgFirst: db.raw.prepare<[string, number], ServiceAccountRow>(`SELECT ${COLS} FROM service_accounts WHERE org_id = ? ORDER BY created_at, id LIMIT ?`),
    orgAfter: db.raw.prepare<[string, number, number, string, number], ServiceAccountRow>(
      `SELECT ${COLS} FROM service_accounts WHERE org_id = ? AND (created_at > ? OR (created_at = ? AND id > ?)) ORDER BY created_at, id LIMIT ?`,
    ),
    instFirst: db.raw.prepare<[number], ServiceAccountRow>(`SELECT ${COLS} FROM service_accounts WHERE org_id IS NULL ORDER BY created_at, id LIMIT ?`),
    instAfter: db.raw.prepare<[number, number, string, number], ServiceAccountRow>(
      `SELECT ${COLS} FROM service_accounts WHERE org_id IS NULL AND (created_at > ? OR (created_at = ? AND id > ?)) ORDER BY created_at, id LIMIT ?`,
    ),
  };
  return {
    /** Returns undefined if there is no such service account. */
    findServiceAccountById: (id: string): ServiceAccount | undefined => {
      const r = q.byId.get(id);
      return r && toServiceAccount(r);
    },
    insertServiceAccount: (sa: ServiceAccount): void =>
      void q.insert.run({ ...sa, permissions: JSON.stringify(sa.permissions) }),
    updateServiceAccountSecret: (id: string, secretHash: Buffer, rotatedAt: number): void => void q.setSecret.run(secretHash, rotatedAt, id),
    touchServiceAccount: (id: string, at: number): void => void q.touch.run(at, id),
    deleteServiceAccount: (id: string): void => void q.delete.run(id),
    /** Service accounts of an organization (or the installation's, for null), `limit + 1` rows. */
    listServiceAccounts: (orgId: string | null, limit: number, from?: Keyset): ServiceAccount[] => {
      const rows =
        orgId === null
          ? from
            ? q.instAfter.all(from.at, from.at, from.id, limit + 1)
            : q.instFirst.all(limit + 1)
          : from
            ? q.orgAfter.all(orgId, from.at, from.at, from.id, limit + 1)
            : q.orgFirst.all(orgId, limit + 1);
      return rows.map(toServiceAccount);
    },
  };
}
