import type { Clock } from '../clock.ts';
import { randomToken, sha256 } from '../crypto.ts';
import type { Cursors, Page } from '../cursor.ts';
import { forbidden, notFound } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Db } from '../storage/db.ts';
import type { Access } from './access.ts';
import type { Audit } from './audit.ts';
import { roleAtLeast, type Caller, type Permission, type Role, type ServiceAccount } from './model.ts';
import type { ServiceAccountsRepo } from './service-accounts-repo.ts';
import type { SessionsRepo } from './sessions-repo.ts';
import type { SignInThrottle } from './throttle.ts';

export interface ServiceAccountDeps {
  db: Db;
  clock: Clock;
  serviceAccounts: ServiceAccountsRepo;
  sessions: SessionsRepo;
  throttle: SignInThrottle;
  access: Access;
  audit: Audit;
  cursors: Cursors;
}

/** A service account together with its secret, which exists only in this response. */
export interface ServiceAccountWithSecret {
  serviceAccount: ServiceAccount;
  clientSecret: string;
}

const SECRET_PREFIX = 'cls_';

/** 256 bits from the CSPRNG with a recognisable prefix (secret scanners can spot leaks). */
function newSecret(): { secret: string; hash: Buffer } {
  const secret = SECRET_PREFIX + randomToken(32);
  return { secret, hash: sha256(secret) };
}

export type ServiceAccountService = ReturnType<typeof createServiceAccountService>;

/**
 * Service accounts (SPEC §3.3): API credentials of an organization with a role, or of the
 * installation with permissions. Secrets are shown once and stored only as SHA-256 digests, which
 * is enough for 256-bit random secrets (ASVS 6.5.2) and keeps each token request cheap.
 */
export function createServiceAccountService(d: ServiceAccountDeps) {
  /** `orgId` null = an installation account. 404 when the id is not in that scope. */
  const requireInScope = (orgId: string | null, id: string): ServiceAccount => {
    const sa = d.serviceAccounts.findServiceAccountById(id);
    if (!sa || sa.orgId !== orgId) throw notFound('service account', id);
    return sa;
  };

  const create = (by: Caller, fields: { orgId: string | null; name: string; role: Role | null; permissions: Permission[] }): ServiceAccountWithSecret => {
    const { secret, hash } = newSecret();
    return d.db.tx(() => {
      const sa: ServiceAccount = {
        id: newId('sa'),
        ...fields,
        secretHash: hash,
        createdBy: by.actor.id,
        createdAt: d.clock.now(),
        rotatedAt: null,
        lastUsedAt: null,
      };
      d.serviceAccounts.insertServiceAccount(sa);
      d.audit.record(by, {
        orgId: fields.orgId,
        action: 'service_account.created',
        target: { type: 'service_account', id: sa.id },
        data: { name: sa.name, ...(fields.orgId ? { role: fields.role } : { permissions: fields.permissions }) },
      });
      return { serviceAccount: sa, clientSecret: secret };
    });
  };

  /**
   * New secret; the old one stops working and every session opened with it ends. The client's
   * sign-in throttle is lifted: the failures counted there were guesses at a secret that is gone,
   * and rotation is how an administrator gets a locked-out pipeline going again at once (as a
   * password set by a superuser does for a user).
   */
  const rotate = (by: Caller, orgId: string | null, id: string): ServiceAccountWithSecret => {
    const { secret, hash } = newSecret();
    return d.db.tx(() => {
      requireInScope(orgId, id);
      const now = d.clock.now();
      d.serviceAccounts.updateServiceAccountSecret(id, hash, now);
      const ended = d.sessions.revokeSessionsOfServiceAccount(id, now, 'secret_rotated');
      d.throttle.recordSuccess(d.throttle.clientKey(id));
      d.audit.record(by, { orgId, action: 'service_account.rotated', target: { type: 'service_account', id }, data: { sessionsEnded: ended } });
      return { serviceAccount: requireInScope(orgId, id), clientSecret: secret };
    });
  };

  const remove = (by: Caller, orgId: string | null, id: string): void => {
    d.db.tx(() => {
      const sa = requireInScope(orgId, id);
      d.serviceAccounts.deleteServiceAccount(id); // sessions cascade: its tokens fail at once
      d.audit.record(by, { orgId, action: 'service_account.deleted', target: { type: 'service_account', id }, data: { name: sa.name } });
    });
  };

  const list = (orgId: string | null, limit: number, cursor?: string): Page<ServiceAccount> => {
    const list = `service-accounts:${orgId ?? ''}`;
    const from = d.cursors.decodeKeyset(cursor, list);
    return d.cursors.toPage(d.serviceAccounts.listServiceAccounts(orgId, limit, from), limit, list, (s) => [s.createdAt, s.id]);
  };

  return {
    listOrgServiceAccounts: (orgId: string, limit: number, cursor?: string) => list(orgId, limit, cursor),
    /** Creates an organization account; its role may not exceed the caller's own (403). */
    createOrgServiceAccount(by: Caller, orgId: string, input: { name: string; role: Role }): ServiceAccountWithSecret {
      const callerRole = d.access.orgRole(by.actor, orgId);
      if (!roleAtLeast(callerRole, input.role)) throw forbidden(`A service account cannot get a higher role (${input.role}) than yours (${callerRole ?? 'none'}).`);
      return create(by, { orgId, name: input.name, role: input.role, permissions: [] });
    },
    getOrgServiceAccount: (orgId: string, id: string) => requireInScope(orgId, id),
    rotateOrgServiceAccount: (by: Caller, orgId: string, id: string) => rotate(by, orgId, id),
    deleteOrgServiceAccount: (by: Caller, orgId: string, id: string) => remove(by, orgId, id),

    listInstallationServiceAccounts: (limit: number, cursor?: string) => list(null, limit, cursor),
    createInstallationServiceAccount: (by: Caller, input: { name: string; permissions: Permission[] }) =>
      create(by, { orgId: null, name: input.name, role: null, permissions: [...new Set(input.permissions)] }),
    getInstallationServiceAccount: (id: string) => requireInScope(null, id),
    rotateInstallationServiceAccount: (by: Caller, id: string) => rotate(by, null, id),
    deleteInstallationServiceAccount: (by: Caller, id: string) => remove(by, null, id),
  };
}
