import type { Db } from '../storage/db.ts';

export interface AuditEntry {
  id: string;
  orgId: string | null;
  actorType: 'user' | 'service_account' | 'system' | 'anonymous';
  actorId: string | null;
  actorLabel: string | null;
  action: string;
  targetType: string | null;
  targetId: string | null;
  data: Record<string, unknown> | null;
  requestId: string | null;
  ip: string | null;
  at: number;
}

interface AuditRow {
  seq: number;
  id: string;
  org_id: string | null;
  actor_type: AuditEntry['actorType'];
  actor_id: string | null;
  actor_label: string | null;
  action: string;
  target_type: string | null;
  target_id: string | null;
  data: string | null;
  request_id: string | null;
  ip: string | null;
  at: number;
}

const COLS = 'seq, id, org_id, actor_type, actor_id, actor_label, action, target_type, target_id, data, request_id, ip, at';

const toEntry = (r: AuditRow): AuditEntry & { seq: number } => ({
  seq: r.seq,
  id: r.id,
  orgId: r.org_id,
  actorType: r.actor_type,
  actorId: r.actor_id,
  actorLabel: r.actor_label,
  action: r.action,
  targetType: r.target_type,
  targetId: r.target_id,
  data: r.data === null ? null : (JSON.parse(r.data) as Record<string, unknown>),
  requestId: r.request_id,
  ip: r.ip,
  at: r.at,
});

export type AuditRepo = ReturnType<typeof createAuditRepo>;

/** The append-only audit log (SPEC §3.4). */
export function createAuditRepo(db: Db) {
  const insert = db.raw.prepare(
    'INSERT INTO audit_log (id, org_id, actor_type, actor_id, actor_label, action, target_type, target_id, data, request_id, ip, at) ' +
      'VALUES (@id, @orgId, @actorType, @actorId, @actorLabel, @action, @targetType, @targetId, @data, @requestId, @ip, @at)',
  );
  const orgFirst = db.raw.prepare<[string, number], AuditRow>(`SELECT ${COLS} FROM audit_log WHERE org_id = ? ORDER BY seq DESC LIMIT ?`);
  const orgBefore = db.raw.prepare<[string, number, number], AuditRow>(`SELECT ${COLS} FROM audit_log WHERE org_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?`);
  const allFirst = db.raw.prepare<[number], AuditRow>(`SELECT ${COLS} FROM audit_log ORDER BY seq DESC LIMIT ?`);
  const allBefore = db.raw.prepare<[number, number], AuditRow>(`SELECT ${COLS} FROM audit_log WHERE seq < ? ORDER BY seq DESC LIMIT ?`);
  const purgeOfOrg = db.raw.prepare<[string, number]>('DELETE FROM audit_log WHERE seq IN (SELECT seq FROM audit_log WHERE org_id = ? LIMIT ?)');
  return {
    /** Appends an entry; call it inside the transaction of the change it describes. */
    insertAuditEntry: (e: AuditEntry): void => void insert.run({ ...e, data: e.data === null ? null : JSON.stringify(e.data) }),
    /** Deletes up to `n` entries of a deleted organization (its purge); returns how many went. */
    purgeOrgEntries: (orgId: string, n: number): number => purgeOfOrg.run(orgId, n).changes,
    /** Newest first; `orgId` undefined lists the whole installation. `limit + 1` rows. */
    listAuditEntries: (orgId: string | undefined, limit: number, beforeSeq?: number): (AuditEntry & { seq: number })[] => {
      const rows =
        orgId === undefined
          ? beforeSeq === undefined
            ? allFirst.all(limit + 1)
            : allBefore.all(beforeSeq, limit + 1)
          : beforeSeq === undefined
            ? orgFirst.all(orgId, limit + 1)
            : orgBefore.all(orgId, beforeSeq, limit + 1);
      return rows.map(toEntry);
    },
  };
}
