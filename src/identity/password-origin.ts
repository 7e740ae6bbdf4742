import { conflict } from '../errors.ts';
import type { User } from './model.ts';

/**
 * Whose password an account has (users.password_from_org, migration 0047): an account
 * whose password an organization's admin chose, making it as a member, joins no other organization
 * — nor becomes a superuser, an admin of all of them — until a superuser or the operator sets its
 * password, which the owner then gets: that admin may know it and would sign in as the user (a
 * security tester's case). docs/security.md.
 */

/** Whether the account may join `orgId` (undefined: every organization, as a superuser does). */
export function mayJoin(u: User, orgId?: string): boolean {
  const madeBy = u.passwordFromOrg; // an organization's id, no secret
  return madeBy === null || (orgId !== undefined && madeBy === orgId);
}

/**
 * The 409 of an account that may not join: what happened, and what to do. The account's id only to
 * a superuser, who can use it: an organization's admin asked to add an e-mail learns no id of
 * another organization's user (only a superuser can set the password anyway).
 */
export const passwordOfAnotherOrg = (u: User, askedBySuperuser: boolean) =>
  conflict(
    'password_set_by_another_org',
    `The account ${u.email} has a password that an organization's administrator chose when they made it, who may know it: ` +
      (askedBySuperuser
        ? `a superuser must set a new password for it first (PATCH /api/identity/v1/users/${u.id} — by another superuser, should it be a superuser's own — or contact-ledger user passwd on the server) and give it to its owner; then try again.`
        : `ask a superuser of this installation to set a new password for it (on the server: contact-ledger user passwd --email ${u.email}) and give it to its owner; then try again.`),
  );
