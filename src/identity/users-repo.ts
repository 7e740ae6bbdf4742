import type { Keyset } from '../cursor.ts';
import type { Db } from '../storage/db.ts';
import type { User } from './model.ts';

interface UserRow {
  id: string;
  email: string;
  name: string;
  password_hash: string;
  superuser: 0 | 1;
  disabled: 0 | 1;
  password_from_org: string | null;
  created_at: number;
  updated_at: number;
}

const COLS = 'id, email, name, password_hash, superuser, disabled, password_from_org, created_at, updated_at';

const toUser = (r: UserRow): User => ({
  id: r.id,
  email: r.email,
  name: r.name,
  passwordHash: r.password_hash,
  superuser: r.superuser === 1,
  disabled: r.disabled === 1,
  passwordFromOrg: r.password_from_org,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export type UsersRepo = ReturnType<typeof createUsersRepo>;

export function createUsersRepo(db: Db) {
  const byId = db.raw.prepare<[string], UserRow>(`SELECT ${COLS} FROM users WHERE id = ?`);
  const byEmail = db.raw.prepare<[string], UserRow>(`SELECT ${COLS} FROM users WHERE email = ?`);
  const insert = db.raw.prepare(
    'INSERT INTO users (id, email, name, password_hash, superuser, disabled, password_from_org, created_at, updated_at) VALUES (@id, @email, @name, @passwordHash, @superuser, @disabled, @passwordFromOrg, @createdAt, @updatedAt)',
  );
  const update = db.raw.prepare(
    'UPDATE users SET name = @name, password_hash = @passwordHash, superuser = @superuser, disabled = @disabled, password_from_org = @passwordFromOrg, updated_at = @updatedAt WHERE id = @id',
  );
  const rehash = db.raw.prepare<[string, string, string]>('UPDATE users SET password_hash = ? WHERE id = ? AND password_hash = ?');
  const count = db.raw.prepare<[], number>('SELECT count(*) FROM users').pluck();
  const unusual = db.raw.prepare<[], UserRow>(`SELECT ${COLS} FROM users WHERE email GLOB '*[^ -~]*' OR email LIKE '%xn--%' ORDER BY created_at, id`);
  // members of another organization, and superusers (an admin of every one), with whom and where
  const exposed = db.raw.prepare<[], { id: string; email: string; password_from_org: string; superuser: 0 | 1; org_id: string | null; org_name: string | null }>(
    `SELECT u.id, u.email, u.password_from_org, u.superuser, m.org_id, o.name AS org_name
     FROM users u LEFT JOIN members m ON m.user_id = u.id AND m.org_id <> u.password_from_org LEFT JOIN orgs o ON o.id = m.org_id
     WHERE u.password_from_org IS NOT NULL AND u.disabled = 0 AND (m.org_id IS NOT NULL OR u.superuser = 1)
     ORDER BY u.id, m.org_id`,
  );
  const countSuper = db.raw.prepare<[], number>('SELECT count(*) FROM users WHERE superuser = 1 AND disabled = 0').pluck();
  const first = db.raw.prepare<[number], UserRow>(`SELECT ${COLS} FROM users ORDER BY created_at, id LIMIT ?`);
  const after = db.raw.prepare<[number, number, string, number], UserRow>(
    `SELECT ${COLS} FROM users WHERE created_at > ? OR (created_at = ? AND id > ?) ORDER BY created_at, id LIMIT ?`,
  );

  return {
    /** Returns undefined if there is no such user. */
    findUserById: (id: string): User | undefined => {
      const r = byId.get(id);
      return r && toUser(r);
    },
    /** Users whose address has a character beyond ASCII or a Punycode label: the ones a change of accountEmail's rules may concern. */
    listUsersWithUnusualEmails: (): User[] => unusual.all().map(toUser),
    /** `email` must already be normalized (lower case). */
    findUserByEmail: (email: string): User | undefined => {
      const r = byEmail.get(email);
      return r && toUser(r);
    },
    /** The same password hashed again (a higher cost), unless the password changed meanwhile. */
    replacePasswordHash: (id: string, from: string, to: string): void => {
      rehash.run(to, id, from);
    },
    insertUser: (u: User): void => {
      insert.run({ ...u, superuser: u.superuser ? 1 : 0, disabled: u.disabled ? 1 : 0 });
    },
    /** Writes name, password hash, flags, the organization the password came from and updatedAt of `u`. */
    updateUser: (u: User): void => {
      update.run({ id: u.id, name: u.name, passwordHash: u.passwordHash, superuser: u.superuser ? 1 : 0, disabled: u.disabled ? 1 : 0, passwordFromOrg: u.passwordFromOrg, updatedAt: u.updatedAt });
    },
    countUsers: (): number => count.get()!,
    /**
     * Enabled accounts whose password an organization's admin chose that are superusers or members
     * of another organization: one row for each such membership (or one without, for a superuser).
     */
    listExposedAccounts: (): { userId: string; email: string; passwordFromOrg: string; superuser: boolean; orgId: string | null; orgName: string | null }[] =>
      exposed.all().map((r) => ({ userId: r.id, email: r.email, passwordFromOrg: r.password_from_org, superuser: r.superuser === 1, orgId: r.org_id, orgName: r.org_name })),
    countActiveSuperusers: (): number => countSuper.get()!,
    /** Users in creation order, `limit + 1` rows after the keyset position. */
    listUsers: (limit: number, from?: Keyset): User[] =>
      (from ? after.all(from.at, from.at, from.id, limit + 1) : first.all(limit + 1)).map(toUser),
  };
}
