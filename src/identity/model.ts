/** Identity domain types shared by the identity repos, services and the HTTP guards. */

export const ROLES = ['viewer', 'editor', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/** viewer < editor < admin; a role includes every lower one (SPEC §2). */
export function roleAtLeast(have: Role | undefined, need: Role): boolean {
  return have !== undefined && ROLES.indexOf(have) >= ROLES.indexOf(need);
}

export const PERMISSIONS = ['feed'] as const;
export type Permission = (typeof PERMISSIONS)[number];

export interface User {
  id: string;
  email: string;
  name: string;
  passwordHash: string;
  superuser: boolean;
  disabled: boolean;
  /**
   * The organization whose admin chose this password by creating the user as a new member, until
   * a superuser sets one: that admin may know it, so the account joins no other organization
   * before (migration 0047, docs/security.md). null: a password of the user's own, a superuser's or the operator's.
   */
  passwordFromOrg: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface Org {
  id: string;
  name: string;
  createdAt: number;
  updatedAt: number;
}

export interface Member {
  orgId: string;
  userId: string;
  email: string;
  name: string;
  /** The user's account is disabled: a member who can reach nothing, and an admin who does not count as one. */
  disabled: boolean;
  role: Role;
  addedAt: number;
}

export interface ServiceAccount {
  id: string;
  orgId: string | null;
  name: string;
  role: Role | null;
  permissions: Permission[];
  secretHash: Buffer;
  createdBy: string | null;
  createdAt: number;
  rotatedAt: number | null;
  lastUsedAt: number | null;
}

export interface Session {
  id: string;
  userId: string | null;
  serviceAccountId: string | null;
  createdAt: number;
  lastUsedAt: number;
  expiresAt: number;
  revokedAt: number | null;
  revokedReason: string | null;
}

/** Who is calling, resolved from the access token and re-read from the database on every request. */
/** Who acts. `accessExpiresAt`: when the access token of the request expires (epoch ms); absent for the command line's own actor. */
export type Actor =
  | { type: 'user'; id: string; email: string; name: string; superuser: boolean; sessionId: string; accessExpiresAt?: number }
  | {
      type: 'service_account';
      id: string;
      name: string;
      orgId: string | null;
      role: Role | null;
      permissions: Permission[];
      sessionId: string;
      accessExpiresAt?: number;
    };

/** The actor plus the request facts that audit entries record. */
export interface Caller {
  actor: Actor;
  requestId: string;
  ip: string;
}

/** Request facts for unauthenticated calls (sign-in). */
export interface RequestMeta {
  requestId: string;
  ip: string;
}
