import { isoZ, isoZOrNull } from '../clock.ts';
import type { AuditEntry } from './audit-repo.ts';
import type { Member, Org, Role, ServiceAccount, User } from './model.ts';

/** Wire shapes of the identity service: camelCase, ISO timestamps, never a hash or secret. */

export const presentUser = (u: User) => ({
  id: u.id,
  email: u.email,
  name: u.name,
  superuser: u.superuser,
  disabled: u.disabled,
  createdAt: isoZ(u.createdAt),
  updatedAt: isoZ(u.updatedAt),
});

/** The short user object of session responses (SPEC §3.1). */
export const presentSessionUser = (u: { id: string; email: string; name: string; superuser: boolean }) => ({
  id: u.id,
  email: u.email,
  name: u.name,
  superuser: u.superuser,
});

export const presentOrg = (o: Org & { role?: Role | null }) => ({
  id: o.id,
  name: o.name,
  ...(o.role !== undefined ? { role: o.role } : {}),
  createdAt: isoZ(o.createdAt),
  updatedAt: isoZ(o.updatedAt),
});

export const presentMember = (m: Member) => ({
  userId: m.userId,
  email: m.email,
  name: m.name,
  role: m.role,
  addedAt: isoZ(m.addedAt),
});

export const presentServiceAccount = (sa: ServiceAccount) => ({
  id: sa.id,
  clientId: sa.id,
  name: sa.name,
  ...(sa.orgId !== null ? { orgId: sa.orgId, role: sa.role } : { permissions: sa.permissions }),
  createdBy: sa.createdBy,
  createdAt: isoZ(sa.createdAt),
  rotatedAt: isoZOrNull(sa.rotatedAt),
  lastUsedAt: isoZOrNull(sa.lastUsedAt),
});

export const presentAuditEntry = (e: AuditEntry) => ({
  id: e.id,
  at: isoZ(e.at),
  orgId: e.orgId,
  actor: { type: e.actorType, id: e.actorId, label: e.actorLabel },
  action: e.action,
  target: e.targetType === null ? null : { type: e.targetType, id: e.targetId },
  data: e.data,
  requestId: e.requestId,
  ip: e.ip,
});
