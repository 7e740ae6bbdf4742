import type { Clock } from '../clock.ts';
import type { Cursors, Page } from '../cursor.ts';
import { newId } from '../ids.ts';
import type { AuditEntry, AuditRepo } from './audit-repo.ts';
import type { Caller, RequestMeta } from './model.ts';

export type Audit = ReturnType<typeof createAudit>;

export interface AuditEvent {
  orgId: string | null;
  action: string;
  target?: { type: string; id: string };
  data?: Record<string, unknown>;
}

/** Records who did what (SPEC §3.4). `record` must run inside the transaction of the change. */
export function createAudit(repo: AuditRepo, clock: Clock, cursors: Cursors) {
  const base = (e: AuditEvent) => ({
    id: newId('evt'),
    orgId: e.orgId,
    action: e.action,
    targetType: e.target?.type ?? null,
    targetId: e.target?.id ?? null,
    data: e.data ?? null,
    at: clock.now(),
  });
  return {
    /** An event caused by an authenticated caller. */
    record(by: Caller, e: AuditEvent): void {
      const a = by.actor;
      repo.insertAuditEntry({
        ...base(e),
        actorType: a.type,
        actorId: a.id,
        actorLabel: a.type === 'user' ? a.email : a.name,
        requestId: by.requestId,
        ip: by.ip,
      });
    },
    /** An event without an authenticated caller (sign-in attempts) or by the system itself. */
    recordAnonymous(meta: RequestMeta | null, e: AuditEvent & { actor?: { type: 'user' | 'service_account' | 'system'; id: string | null; label: string | null } }): void {
      repo.insertAuditEntry({
        ...base(e),
        actorType: e.actor?.type ?? 'anonymous',
        actorId: e.actor?.id ?? null,
        actorLabel: e.actor?.label ?? null,
        requestId: meta?.requestId ?? null,
        ip: meta?.ip ?? null,
      });
    },
    /** Newest first; orgId undefined = the whole installation. */
    list(orgId: string | undefined, limit: number, cursor?: string): Page<AuditEntry> {
      const list = `audit:${orgId ?? ''}`;
      const before = cursor === undefined ? undefined : (cursors.decode(cursor, list, ['n'])[0] as number);
      return cursors.toPage(repo.listAuditEntries(orgId, limit, before), limit, list, (e) => [e.seq]);
    },
  };
}
