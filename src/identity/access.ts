import { forbidden, notFound } from '../errors.ts';
import type { Actor, Permission, Role } from './model.ts';
import { roleAtLeast } from './model.ts';
import type { Keyset } from '../cursor.ts';
import type { OrgsRepo, OrgWithRole } from './orgs-repo.ts';

export type Access = ReturnType<typeof createAccess>;

/**
 * Role checks, evaluated against the database on every request (SPEC §2): a removed member, a
 * lowered role or a deleted service account loses access on its next request. A superuser acts as
 * an admin of every organization.
 */
export function createAccess(orgs: OrgsRepo) {
  /** The caller's effective role in the organization, or undefined. */
  const orgRole = (actor: Actor, orgId: string): Role | undefined => {
    if (actor.type === 'service_account') return actor.orgId === orgId && actor.role ? actor.role : undefined;
    if (actor.superuser) return orgs.findOrgById(orgId) ? 'admin' : undefined;
    return orgs.findRole(orgId, actor.id);
  };

  /**
   * The organizations a caller can use, with its effective role in each (the rule orgRole applies to
   * one): a service account its own, a superuser every one as admin, a user its memberships. What
   * GET /orgs pages through and a session lists, so that the two cannot disagree.
   */
  const visibleOrgs = (
    who: { type: 'service_account'; orgId: string | null; role: Role | null } | { type: 'user'; id: string; superuser: boolean },
    limit: number,
    from?: Keyset,
  ): OrgWithRole[] => {
    if (who.type === 'service_account') {
      const org = who.orgId && !from ? orgs.findOrgById(who.orgId) : undefined;
      return org ? [{ ...org, role: who.role }] : [];
    }
    if (who.superuser) return orgs.listOrgs(limit, from).map((o) => ({ ...o, role: 'admin' as Role }));
    return orgs.listOrgsOfUser(who.id, limit, from);
  };

  return {
    orgRole,
    visibleOrgs,
    /**
     * Throws unless the caller has at least `need` in the organization: 403 for a non-member or a
     * lower role (also when the organization does not exist, so ids of other tenants reveal nothing),
     * 404 for a superuser asking for an organization that does not exist.
     */
    requireOrgRole(actor: Actor, orgId: string, need: Role): Role {
      const role = orgRole(actor, orgId);
      if (role === undefined) {
        if (actor.type === 'user' && actor.superuser) throw notFound('organization', orgId);
        throw forbidden(`You are not a member of organization ${orgId}.`);
      }
      if (!roleAtLeast(role, need)) throw forbidden(`The ${need} role is required on ${orgId}; you have ${role}.`);
      return role;
    },
    requireSuperuser(actor: Actor): void {
      if (actor.type !== 'user' || !actor.superuser) throw forbidden('Only a superuser may do this.');
    },
    requireUser(actor: Actor): void {
      if (actor.type !== 'user') throw forbidden('Only a signed-in user (not a service account) may do this.');
    },
    /** Superusers, or installation service accounts granted the permission. */
    requirePermission(actor: Actor, permission: Permission): void {
      if (actor.type === 'user' && actor.superuser) return;
      if (actor.type === 'service_account' && actor.orgId === null && actor.permissions.includes(permission)) return;
      throw forbidden(`The installation "${permission}" permission is required.`);
    },
  };
}
