import type { Clock } from '../clock.ts';
import type { Cursors, Page } from '../cursor.ts';
import { conflict, invalidField, notFound } from '../errors.ts';
import { newId } from '../ids.ts';
import { accountEmail } from '../normalize.ts';
import type { Db } from '../storage/db.ts';
import type { Access } from './access.ts';
import type { Audit } from './audit.ts';
import type { Caller, Member, Org, Role, User } from './model.ts';
import type { OrgsRepo, OrgWithRole } from './orgs-repo.ts';
import type { PasswordHasher } from './passwords.ts';
import { checkPasswordPolicy } from './passwords.ts';
import { mayJoin, passwordOfAnotherOrg } from './password-origin.ts';
import type { UsersRepo } from './users-repo.ts';

export interface OrgDeps {
  db: Db;
  clock: Clock;
  orgs: OrgsRepo;
  users: UsersRepo;
  access: Access;
  audit: Audit;
  hasher: PasswordHasher;
  cursors: Cursors;
  /** Called inside the deleting transaction: schedules the background purge of what the org owns. */
  onOrgDeleted: (orgId: string) => void;
}

export interface NewMemberInput {
  email: string;
  role: Role;
  name?: string;
  password?: string;
}

export type OrgService = ReturnType<typeof createOrgService>;

/** Organizations and their members (SPEC §3.2). Role checks happen in the route table. */
export function createOrgService(d: OrgDeps) {
  const lastAdmin = (email: string, org: Org) =>
    conflict('last_admin', `${email} is the last admin of ${JSON.stringify(org.name)} (${org.id}) who can sign in (a disabled admin does not count); make another member admin first.`);
  const requireOrg = (orgId: string): Org => {
    const org = d.orgs.findOrgById(orgId);
    if (!org) throw notFound('organization', orgId);
    return org;
  };

  /**
   * Refuses to take away the last admin who can sign in: the rule counts active admins (a
   * disabled user can reach nothing), and a disabled admin may always be demoted or removed.
   */
  const keepsAnActiveAdmin = (org: Org, member: Member): void => {
    if (member.role !== 'admin' || d.users.findUserById(member.userId)?.disabled) return;
    if (d.orgs.countActiveAdmins(org.id) <= 1) throw lastAdmin(member.email, org);
  };

  const requireMember = (orgId: string, userId: string): Member => {
    const m = d.orgs.findMember(orgId, userId);
    if (!m) throw notFound('member', userId);
    return m;
  };

  /**
   * Inserts a new user (inside a tx); the password hash is computed beforehand. `passwordFromOrg`:
   * the organization whose admin chose the password (null when a superuser did).
   */
  const insertNewUser = (email: string, name: string, passwordHash: string, passwordFromOrg: string | null): User => {
    const now = d.clock.now();
    const user: User = { id: newId('u'), email, name, passwordHash, superuser: false, disabled: false, passwordFromOrg, createdAt: now, updatedAt: now };
    d.users.insertUser(user);
    return user;
  };

  const userExists = (email: string) => conflict('user_exists', `A user with e-mail ${email} already exists; add them without a password.`);

  /**
   * The user prepareUser resolved, inside the transaction: the existing one, or a new one made with
   * the prepared hash. A user with that e-mail created meanwhile (a concurrent request that also
   * gave a password) is the same conflict as one that existed before: its password is not replaced
   * and this one is not silently dropped.
   */
  const resolvePreparedUser = (prepared: { existing?: User; passwordHash?: string }, email: string, name: string, into: { orgId: string; by: Caller }): User => {
    // an existing account prepareUser let join (only a new account gets a password's organization)
    if (prepared.existing) return prepared.existing;
    if (d.users.findUserByEmail(email)) throw userExists(email);
    const user = insertNewUser(email, name, prepared.passwordHash!, isSuperuser(into.by) ? null : into.orgId);
    // installation-wide, as POST /users's: an organization's own entries go with it when it is
    // deleted, and with them every trace of who made the account (an org tester's case)
    d.audit.record(into.by, { orgId: null, action: 'user.created', target: { type: 'user', id: user.id }, data: { email, superuser: false, inOrg: into.orgId } });
    return user;
  };

  const isSuperuser = (by: Caller) => by.actor.type === 'user' && by.actor.superuser;

  /**
   * Resolves the user an e-mail names, preparing a password hash when a new user must be created.
   * Async work happens here, before the transaction.
   */
  const prepareUser = async (by: Caller, email: string, password: string | undefined, field: string, name: string | undefined, orgId?: string) => {
    const existing = d.users.findUserByEmail(email);
    if (existing) {
      // an account that may not join says so now, not after "add them without a password" (an upgrade tester's case)
      if (!mayJoin(existing, orgId)) throw passwordOfAnotherOrg(existing, isSuperuser(by));
      if (password !== undefined) throw userExists(email);
      return { existing };
    }
    if (password === undefined) throw invalidField(field, `no user has the e-mail ${email}; give a password to create one`);
    // the new account's own e-mail and name are no password (an org tester's admin chose the name)
    checkPasswordPolicy(password, field, { email, name });
    return { passwordHash: await d.hasher.hash(password) };
  };

  return {
    /** Organizations the caller can access, with the caller's role in each. */
    listOrgs(by: Caller, limit: number, cursor?: string): Page<OrgWithRole> {
      const a = by.actor;
      const list = `orgs:${a.id}`;
      const from = d.cursors.decodeKeyset(cursor, list);
      return d.cursors.toPage(d.access.visibleOrgs(a, limit, from), limit, list, (o) => [o.createdAt, o.id]);
    },

    /**
     * Creates an organization. Its first admin is the user named by adminEmail (created when a
     * password is given), else the creating user.
     */
    async createOrg(by: Caller, input: { name: string; adminEmail?: string; adminName?: string; adminPassword?: string }): Promise<OrgWithRole> {
      const adminEmail = input.adminEmail === undefined ? undefined : accountEmail(input.adminEmail);
      const prepared = adminEmail ? await prepareUser(by, adminEmail, input.adminPassword, 'adminPassword', input.adminName) : undefined;
      return d.db.tx(() => {
        const now = d.clock.now();
        const org: Org = { id: newId('o'), name: input.name, createdAt: now, updatedAt: now };
        d.orgs.insertOrg(org);
        let admin: User | undefined;
        if (adminEmail && prepared) {
          admin = resolvePreparedUser(prepared, adminEmail, input.adminName ?? '', { orgId: org.id, by });
          if (admin.disabled) throw conflict('user_disabled', `${adminEmail} is disabled and could not sign in to administer the organization; enable the user first or name another admin.`);
        } else if (by.actor.type === 'user') {
          admin = d.users.findUserById(by.actor.id);
        }
        if (admin) d.orgs.insertMember({ orgId: org.id, userId: admin.id, role: 'admin', addedAt: now });
        d.audit.record(by, { orgId: org.id, action: 'org.created', target: { type: 'org', id: org.id }, data: { name: org.name, adminUserId: admin?.id ?? null } });
        return { ...org, role: d.access.orgRole(by.actor, org.id) ?? null };
      });
    },

    getOrg(by: Caller, orgId: string): OrgWithRole {
      return { ...requireOrg(orgId), role: d.access.orgRole(by.actor, orgId) ?? null };
    },

    updateOrg(by: Caller, orgId: string, patch: { name?: string }): OrgWithRole {
      return d.db.tx(() => {
        const org = requireOrg(orgId);
        // the same name (also once trimmed): nothing changes, updatedAt stays and nothing is audited,
        // as for a ledger (an org tester's no-op renames filled the log)
        if (patch.name === undefined || patch.name === org.name) return { ...org, role: d.access.orgRole(by.actor, orgId) ?? null };
        const next = { ...org, name: patch.name, updatedAt: d.clock.now() };
        d.orgs.updateOrg(next);
        d.audit.record(by, { orgId, action: 'org.updated', target: { type: 'org', id: orgId }, data: { name: { from: org.name, to: next.name } } });
        return { ...next, role: d.access.orgRole(by.actor, orgId) ?? null };
      });
    },

    /**
     * Deletes the organization: gone for every caller at once (members and service accounts lose
     * access in this transaction), its ledgers are purged in the background; audited installation-wide.
     */
    deleteOrg(by: Caller, orgId: string): void {
      d.db.tx(() => {
        const org = requireOrg(orgId);
        d.orgs.markOrgDeleted(orgId, d.clock.now());
        d.onOrgDeleted(orgId);
        d.audit.record(by, { orgId: null, action: 'org.deleted', target: { type: 'org', id: orgId }, data: { name: org.name } });
      });
    },

    listMembers(orgId: string, limit: number, cursor?: string): Page<Member> {
      requireOrg(orgId);
      const list = `members:${orgId}`;
      return d.cursors.toPage(d.orgs.listMembers(orgId, limit, d.cursors.decodeKeyset(cursor, list)), limit, list, (m) => [m.addedAt, m.userId]);
    },

    /** One member of an organization (404 when the user is not one). */
    getMember(orgId: string, userId: string): Member {
      requireOrg(orgId);
      return requireMember(orgId, userId);
    },

    /**
     * Adds an existing user, or creates one when a password is given. The first member of an
     * organization becomes its admin whatever role was asked (SPEC §2).
     */
    async addMember(by: Caller, orgId: string, input: NewMemberInput): Promise<Member> {
      requireOrg(orgId);
      const email = accountEmail(input.email);
      const prepared = await prepareUser(by, email, input.password, 'password', input.name, orgId);
      return d.db.tx(() => {
        const org = requireOrg(orgId);
        const user = resolvePreparedUser(prepared, email, input.name ?? '', { orgId, by });
        // the organization by its name, as the last-admin rule says it (its id alone read as a code)
        if (d.orgs.findRole(orgId, user.id)) throw conflict('already_member', `${email} is already a member of ${JSON.stringify(org.name)}.`);
        const role: Role = d.orgs.countMembers(orgId) === 0 ? 'admin' : input.role;
        d.orgs.insertMember({ orgId, userId: user.id, role, addedAt: d.clock.now() });
        d.audit.record(by, {
          orgId,
          action: 'member.added',
          target: { type: 'user', id: user.id },
          data: { email, role, userCreated: !prepared.existing },
        });
        return requireMember(orgId, user.id);
      });
    },

    /** Changes a member's role; demoting the last admin is refused (409). */
    updateMember(by: Caller, orgId: string, userId: string, role: Role): Member {
      return d.db.tx(() => {
        const org = requireOrg(orgId);
        const member = requireMember(orgId, userId);
        if (member.role === role) return member;
        keepsAnActiveAdmin(org, member);
        d.orgs.updateMemberRole(orgId, userId, role);
        d.audit.record(by, { orgId, action: 'member.role_changed', target: { type: 'user', id: userId }, data: { email: member.email, from: member.role, to: role } });
        return requireMember(orgId, userId);
      });
    },

    /** Removes a member; removing the last admin is refused (409). */
    removeMember(by: Caller, orgId: string, userId: string): void {
      d.db.tx(() => {
        const org = requireOrg(orgId);
        const member = requireMember(orgId, userId);
        keepsAnActiveAdmin(org, member);
        d.orgs.deleteMember(orgId, userId);
        d.audit.record(by, { orgId, action: 'member.removed', target: { type: 'user', id: userId }, data: { email: member.email, role: member.role } });
      });
    },
  };
}
