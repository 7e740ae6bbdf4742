import { z } from 'zod';
import { isoZ, isoZOrNull } from '../clock.ts';
import { countOf, idOf, isoTime, pageSchema } from '../http/common-schemas.ts';
import type { AuditEntry } from './audit-repo.ts';
import { PERMISSIONS, ROLES, type Member, type Org, type Role, type ServiceAccount, type User } from './model.ts';

/**
 * Wire shapes of the identity service: camelCase, ISO timestamps, never a hash or secret. The
 * presenters, and the zod schemas of what they answer (the OpenAPI document's answer schemas,
 * checked against every answer under the tests).
 */

const role = z.enum(ROLES);

export const UserAnswer = z
  .strictObject({
    id: idOf('u'),
    email: z.string(),
    name: z.string(),
    superuser: z.boolean(),
    disabled: z.boolean(),
    createdAt: isoTime,
    updatedAt: isoTime,
  })
  .meta({ id: 'User' });

export const OrgAnswer = z
  .strictObject({
    id: idOf('o'),
    name: z.string(),
    role: role.nullable().optional().meta({ description: "The caller's role on the organization (null: none, a superuser's view)" }),
    createdAt: isoTime,
    updatedAt: isoTime,
  })
  .meta({ id: 'Organization' });

export const MemberAnswer = z
  .strictObject({ userId: idOf('u'), email: z.string(), name: z.string(), role, disabled: z.boolean().meta({ description: "The user's account is disabled (by a superuser): they reach nothing, and as an admin they do not count against the last-admin rule" }), addedAt: isoTime })
  .meta({ id: 'Member' });

const serviceAccountBase = {
  id: idOf('sa'),
  clientId: idOf('sa').meta({ description: 'The same as id: the clientId of the clientCredentials grant' }),
  name: z.string(),
  createdBy: z.string().nullable(),
  createdAt: isoTime,
  rotatedAt: isoTime.nullable(),
  lastUsedAt: isoTime.nullable(),
};
/** A service account of an organization (never its secret). */
export const OrgServiceAccountAnswer = z.strictObject({ ...serviceAccountBase, orgId: idOf('o'), role }).meta({ id: 'OrgServiceAccount' });
/** An installation service account (never its secret). */
export const InstallationServiceAccountAnswer = z.strictObject({ ...serviceAccountBase, permissions: z.array(z.enum(PERMISSIONS)) }).meta({ id: 'InstallationServiceAccount' });
const clientSecret = { clientSecret: z.string().meta({ description: 'Shown only in this answer' }) };
export const OrgServiceAccountWithSecretAnswer = OrgServiceAccountAnswer.extend(clientSecret).meta({ id: 'OrgServiceAccountWithSecret' });
export const InstallationServiceAccountWithSecretAnswer = InstallationServiceAccountAnswer.extend(clientSecret).meta({ id: 'InstallationServiceAccountWithSecret' });

export const AuditEntryAnswer = z
  .strictObject({
    id: z.string(),
    at: isoTime,
    orgId: idOf('o').nullable().meta({ description: 'null: an installation-wide event' }),
    actor: z.strictObject({ type: z.enum(['user', 'service_account', 'system', 'anonymous']), id: z.string().nullable(), label: z.string().nullable() }),
    action: z.string().meta({ description: 'What was done (member.added, ledger.created…)' }),
    target: z.strictObject({ type: z.string(), id: z.string().nullable() }).nullable(),
    data: z.record(z.string(), z.unknown()).nullable().meta({ description: 'Details of the event' }),
    requestId: z.string().nullable(),
    ip: z.string().nullable(),
  })
  .meta({ id: 'AuditEntry' });

export const OrgPage = pageSchema('orgs', OrgAnswer);
export const MemberPage = pageSchema('members', MemberAnswer);
export const UserPage = pageSchema('users', UserAnswer);
export const OrgServiceAccountPage = pageSchema('serviceAccounts', OrgServiceAccountAnswer);
export const InstallationServiceAccountPage = pageSchema('serviceAccounts', InstallationServiceAccountAnswer);
export const AuditPage = pageSchema('events', AuditEntryAnswer);
export const RevokedSessionsAnswer = z.strictObject({ revokedSessions: countOf });

/** The session's access-token expiry: ISO 8601 without zone, six fractional digits, UTC (SPEC §2, sessionExpiry). */
const sessionExpiresAt = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}$/)
  .meta({ description: 'When the access token expires: UTC, ISO 8601 without zone, six fractional digits (2026-11-22T11:32:00.123456)' });

/** Who a session is: the user or the service account, and the organizations it reaches. */
const sessionPrincipal = {
  user: z.strictObject({ id: idOf('u'), email: z.string(), name: z.string(), superuser: z.boolean() }).nullable(),
  serviceAccount: z
    .strictObject({
      id: idOf('sa'),
      name: z.string(),
      orgId: idOf('o').nullable().meta({ description: 'null: an installation service account' }),
      role: role.nullable(),
      permissions: z.array(z.enum(PERMISSIONS)).optional().meta({ description: "An installation service account's permissions" }),
    })
    .nullable(),
  orgs: z.array(z.strictObject({ id: idOf('o'), name: z.string(), role })),
};

/** GET /session: the shape of POST /session's answer without its tokens (SPEC §3.1). */
export const SessionAnswer = z
  .strictObject({
    expiresAt: sessionExpiresAt,
    tokenType: z.literal('Bearer'),
    expiresIn: countOf.meta({ description: 'Seconds until the access token expires' }),
    refreshExpiresAt: isoTime,
    ...sessionPrincipal,
  })
  .meta({ id: 'Session' });

/** POST /session (SPEC §3.1). */
export const IssuedSessionAnswer = SessionAnswer.extend({
  accessToken: z.string().meta({ description: 'A JWT' }),
  refreshToken: z.string().nullable().meta({ description: 'Opaque, rotated on every use; null in cookie mode (X-Session-Cookie: 1), where it is set as a cookie' }),
}).meta({ id: 'IssuedSession' });

/** POST {auth_url}/v1/session: the hosted service's snake_case answer (SPEC §3.1). */
export const AuthAliasSessionAnswer = z.strictObject({
  access_token: z.string(),
  token_type: z.literal('Bearer'),
  expires_in: countOf,
  expires_at: sessionExpiresAt,
  refresh_token: z.string(),
});

export const presentUser = (u: User): z.output<typeof UserAnswer> => ({
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

export const presentMember = (m: Member): z.output<typeof MemberAnswer> => ({
  userId: m.userId,
  email: m.email,
  name: m.name,
  role: m.role,
  disabled: m.disabled,
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
