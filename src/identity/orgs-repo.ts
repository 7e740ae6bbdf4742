import type { Keyset } from '../cursor.ts';
import type { Db } from '../storage/db.ts';
import type { Member, Org, Role } from './model.ts';

interface OrgRow {
  id: string;
  name: string;
  created_at: number;
  updated_at: number;
}
interface MemberRow {
  org_id: string;
  user_id: string;
  email: string;
  disabled: number;
  name: string;
  role: Role;
  added_at: number;
}
export interface OrgWithRole extends Org {
  role: Role | null;
}

const toOrg = (r: OrgRow): Org => ({ id: r.id, name: r.name, createdAt: r.created_at, updatedAt: r.updated_at });
const toMember = (r: MemberRow): Member => ({ orgId: r.org_id, userId: r.user_id, email: r.email, name: r.name, disabled: r.disabled === 1, role: r.role, addedAt: r.added_at });

export type OrgsRepo = ReturnType<typeof createOrgsRepo>;

/** Organizations and their members. */
export function createOrgsRepo(db: Db) {
  const q = {
    byId: db.raw.prepare<[string], OrgRow>('SELECT id, name, created_at, updated_at FROM orgs WHERE id = ? AND deleted_at IS NULL'),
    insert: db.raw.prepare('INSERT INTO orgs (id, name, created_at, updated_at) VALUES (@id, @name, @createdAt, @updatedAt)'),
    update: db.raw.prepare('UPDATE orgs SET name = @name, updated_at = @updatedAt WHERE id = @id'),
    markDeleted: db.raw.prepare<[number, string]>('UPDATE orgs SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL'),
    deleteMembers: db.raw.prepare<[string]>('DELETE FROM members WHERE org_id = ?'),
    deleteServiceAccounts: db.raw.prepare<[string]>('DELETE FROM service_accounts WHERE org_id = ?'),
    purge: db.raw.prepare<[string]>('DELETE FROM orgs WHERE id = ? AND deleted_at IS NOT NULL'),
    allFirst: db.raw.prepare<[number], OrgRow & { role: null }>(
      'SELECT id, name, created_at, updated_at, NULL AS role FROM orgs WHERE deleted_at IS NULL ORDER BY created_at, id LIMIT ?',
    ),
    allAfter: db.raw.prepare<[number, number, string, number], OrgRow & { role: null }>(
      'SELECT id, name, created_at, updated_at, NULL AS role FROM orgs WHERE deleted_at IS NULL AND (created_at > ? OR (created_at = ? AND id > ?)) ORDER BY created_at, id LIMIT ?',
    ),
    ofUserFirst: db.raw.prepare<[string, number], OrgRow & { role: Role }>(
      'SELECT o.id, o.name, o.created_at, o.updated_at, m.role FROM members m JOIN orgs o ON o.id = m.org_id WHERE m.user_id = ? ORDER BY o.created_at, o.id LIMIT ?',
    ),
    ofUserAfter: db.raw.prepare<[string, number, number, string, number], OrgRow & { role: Role }>(
      'SELECT o.id, o.name, o.created_at, o.updated_at, m.role FROM members m JOIN orgs o ON o.id = m.org_id WHERE m.user_id = ? AND (o.created_at > ? OR (o.created_at = ? AND o.id > ?)) ORDER BY o.created_at, o.id LIMIT ?',
    ),
    member: db.raw.prepare<[string, string], MemberRow>(
      'SELECT m.org_id, m.user_id, u.email, u.name, u.disabled, m.role, m.added_at FROM members m JOIN users u ON u.id = m.user_id WHERE m.org_id = ? AND m.user_id = ?',
    ),
    role: db.raw.prepare<[string, string], Role>('SELECT role FROM members WHERE org_id = ? AND user_id = ?').pluck(),
    membersFirst: db.raw.prepare<[string, number], MemberRow>(
      'SELECT m.org_id, m.user_id, u.email, u.name, u.disabled, m.role, m.added_at FROM members m JOIN users u ON u.id = m.user_id WHERE m.org_id = ? ORDER BY m.added_at, m.user_id LIMIT ?',
    ),
    membersAfter: db.raw.prepare<[string, number, number, string, number], MemberRow>(
      'SELECT m.org_id, m.user_id, u.email, u.name, u.disabled, m.role, m.added_at FROM members m JOIN users u ON u.id = m.user_id WHERE m.org_id = ? AND (m.added_at > ? OR (m.added_at = ? AND m.user_id > ?)) ORDER BY m.added_at, m.user_id LIMIT ?',
    ),
    insertMember: db.raw.prepare('INSERT INTO members (org_id, user_id, role, added_at) VALUES (@orgId, @userId, @role, @addedAt)'),
    updateRole: db.raw.prepare<[Role, string, string]>('UPDATE members SET role = ? WHERE org_id = ? AND user_id = ?'),
    deleteMember: db.raw.prepare<[string, string]>('DELETE FROM members WHERE org_id = ? AND user_id = ?'),
    countActiveAdmins: db.raw.prepare<[string], number>("SELECT count(*) FROM members m JOIN users u ON u.id = m.user_id WHERE m.org_id = ? AND m.role = 'admin' AND u.disabled = 0").pluck(),
    countMembers: db.raw.prepare<[string], number>('SELECT count(*) FROM members WHERE org_id = ?').pluck(),
    adminOrgsOfUser: db.raw.prepare<[string], string>("SELECT org_id FROM members WHERE user_id = ? AND role = 'admin'").pluck(),
  };
  const toOrgWithRole = (r: OrgRow & { role: Role | null }): OrgWithRole => ({ ...toOrg(r), role: r.role });

  return {
    /** Returns undefined if there is no such organization. */
    findOrgById: (id: string): Org | undefined => {
      const r = q.byId.get(id);
      return r && toOrg(r);
    },
    insertOrg: (o: Org): void => void q.insert.run(o),
    updateOrg: (o: Org): void => void q.update.run({ id: o.id, name: o.name, updatedAt: o.updatedAt }),
    /**
     * Hides the organization at once and takes every access away (members, service accounts);
     * its ledgers are purged in the background, then `purgeOrg` removes the row itself.
     */
    markOrgDeleted: (id: string, now: number): void => {
      q.markDeleted.run(now, id);
      q.deleteMembers.run(id);
      q.deleteServiceAccounts.run(id);
    },
    /** Removes a deleted organization's row (and, by cascade, what is left of it). */
    purgeOrg: (id: string): void => void q.purge.run(id),
    /** All organizations (superuser view), `limit + 1` rows in creation order. */
    listOrgs: (limit: number, from?: Keyset): OrgWithRole[] =>
      (from ? q.allAfter.all(from.at, from.at, from.id, limit + 1) : q.allFirst.all(limit + 1)).map(toOrgWithRole),
    /** Organizations the user is a member of, with the role, `limit + 1` rows. */
    listOrgsOfUser: (userId: string, limit: number, from?: Keyset): OrgWithRole[] =>
      (from ? q.ofUserAfter.all(userId, from.at, from.at, from.id, limit + 1) : q.ofUserFirst.all(userId, limit + 1)).map(toOrgWithRole),
    /** The member's role, or undefined when the user is not a member. */
    findRole: (orgId: string, userId: string): Role | undefined => q.role.get(orgId, userId),
    findMember: (orgId: string, userId: string): Member | undefined => {
      const r = q.member.get(orgId, userId);
      return r && toMember(r);
    },
    /** Members in the order they were added, `limit + 1` rows. */
    listMembers: (orgId: string, limit: number, from?: Keyset): Member[] =>
      (from ? q.membersAfter.all(orgId, from.at, from.at, from.id, limit + 1) : q.membersFirst.all(orgId, limit + 1)).map(toMember),
    insertMember: (m: { orgId: string; userId: string; role: Role; addedAt: number }): void => void q.insertMember.run(m),
    updateMemberRole: (orgId: string, userId: string, role: Role): void => void q.updateRole.run(role, orgId, userId),
    deleteMember: (orgId: string, userId: string): void => void q.deleteMember.run(orgId, userId),
    /** Admins who can sign in: a disabled user is no admin anyone can reach. */
    countActiveAdmins: (orgId: string): number => q.countActiveAdmins.get(orgId)!,
    countMembers: (orgId: string): number => q.countMembers.get(orgId)!,
    /** Ids of organizations where the user is an admin. */
    listAdminOrgIdsOfUser: (userId: string): string[] => q.adminOrgsOfUser.all(userId),
  };
}
