import { randomBytes } from 'node:crypto';
import { secretsEqual } from '../crypto.ts';
import type { Clock } from '../clock.ts';
import { ConfigError } from '../config.ts';
import type { Cursors, Page } from '../cursor.ts';
import { AppError, conflict, forbidden, invalidField, notFound } from '../errors.ts';
import { newId } from '../ids.ts';
import { accountEmail } from '../normalize.ts';
import type { Db } from '../storage/db.ts';
import type { Audit } from './audit.ts';
import type { Caller, User } from './model.ts';
import type { PasswordHasher } from './passwords.ts';
import { checkPasswordPolicy, passwordPolicyProblem } from './passwords.ts';
import type { SessionsRepo } from './sessions-repo.ts';
import type { SignInThrottle, ThrottleKey } from './throttle.ts';
import { mayJoin, passwordOfAnotherOrg } from './password-origin.ts';
import type { UsersRepo } from './users-repo.ts';

/** An account the start names (exposedAccounts): where its password may come from, and where it is. */
export interface ExposedAccount {
  userId: string;
  email: string;
  /** The organization whose admin may have chosen its password, or 'unknown'. */
  passwordFrom: string;
  superuser: boolean;
  /** The organizations it is a member of besides that one. */
  memberOf: { orgId: string; name: string }[];
}

export interface UserDeps {
  db: Db;
  clock: Clock;
  users: UsersRepo;
  sessions: SessionsRepo;
  audit: Audit;
  hasher: PasswordHasher;
  cursors: Cursors;
  throttle: SignInThrottle;
}

export interface UserPatch {
  name?: string;
  superuser?: boolean;
  disabled?: boolean;
  password?: string;
}

/**
 * The first superuser's password when none is set: 24 characters of base64url (144 random bits),
 * never starting with "-". One that did (1 in 64) could not be given back to the CLI as
 * `--password <value>`, which reads it as a flag (a tester's "-b9timzrgfpb53BDjcScLxsL"). Drawn
 * again until it does not: the others stay equally likely, and the first character loses
 * log2(64/63) ≈ 0.02 of its 6 bits.
 */
export function generatePassword(): string {
  for (;;) {
    const password = randomBytes(18).toString('base64url');
    if (!password.startsWith('-')) return password;
  }
}

export type UserService = ReturnType<typeof createUserService>;

/** Installation users, the caller's own profile, and the first-start superuser (SPEC §3.2, §8). */
export function createUserService(d: UserDeps) {
  const requireUser = (id: string): User => {
    const u = d.users.findUserById(id);
    if (!u) throw notFound('user', id);
    return u;
  };

  const insertUser = (email: string, name: string, passwordHash: string, superuser: boolean): User => {
    if (d.users.findUserByEmail(email)) throw conflict('email_taken', `A user with e-mail ${email} already exists.`);
    const now = d.clock.now();
    const user: User = { id: newId('u'), email, name, passwordHash, superuser, disabled: false, passwordFromOrg: null, createdAt: now, updatedAt: now };
    d.users.insertUser(user);
    return user;
  };

  return {
    me(by: Caller): User {
      if (by.actor.type !== 'user') throw forbidden('Service accounts have no user profile.');
      return requireUser(by.actor.id);
    },

    /**
     * Updates the caller's name and/or password. A password change needs the current password and
     * ends every other session of the user (their access tokens fail on the next request). The
     * current-password check is a password guess like a sign-in, and is throttled as one, on the
     * same counters (the account's and the address's): a stolen access token must not give
     * unlimited guesses at the password behind it.
     */
    async updateMe(by: Caller, patch: { name?: string; password?: string; currentPassword?: string }): Promise<User> {
      if (by.actor.type !== 'user') throw forbidden('Service accounts have no user profile.');
      const userId = by.actor.id;
      let passwordHash: string | undefined;
      let checked: ThrottleKey | undefined; // the account whose current password was checked
      let checkedHash: string | undefined; // the hash it was checked against
      // a currentPassword that nothing checks would let a client believe it was (and a guess go uncounted)
      if (patch.currentPassword !== undefined && patch.password === undefined) throw invalidField('currentPassword', 'is only used to change the password; give password too, or leave it out');
      if (patch.password !== undefined) {
        if (patch.currentPassword === undefined) throw invalidField('currentPassword', 'is required to change the password');
        const current = requireUser(userId);
        checkedHash = current.passwordHash;
        const keys: ThrottleKey[] = [d.throttle.accountKey(current.email), d.throttle.addressKey(by.ip)];
        const release = d.throttle.admit(keys, 'wrong passwords');
        try {
          if (!(await d.hasher.verify(patch.currentPassword, current.passwordHash))) {
            d.db.tx(() => {
              d.throttle.recordFailure(keys);
              d.audit.record(by, { orgId: null, action: 'user.password_change_failed', target: { type: 'user', id: userId } });
            });
            throw new AppError(422, 'invalid_current_password', 'currentPassword is not the current password.', {
              errors: [{ path: 'currentPassword', message: 'is not the current password' }],
            });
          }
        } finally {
          release();
        }
        checked = keys[0];
        if (secretsEqual(patch.password, patch.currentPassword)) throw invalidField('password', 'is the current password; choose a new one');
        checkPasswordPolicy(patch.password, 'password', { email: current.email, name: patch.name ?? current.name });
        passwordHash = await d.hasher.hash(patch.password);
      }
      return d.db.tx(() => {
        if (checked) d.throttle.recordSuccess(checked);
        const u = requireUser(userId);
        // The password checked above is still the account's: a reset by a superuser meanwhile (which
        // ended this session too) is not overwritten by a new password of the one who knew the old
        // (a reviewer's race: an organization's admin kept the account a superuser had just set free).
        if (passwordHash && !secretsEqual(u.passwordHash, checkedHash!)) {
          throw conflict('password_changed_meanwhile', 'The password was changed or reset while this change was checked; sign in again.');
        }
        // the same name and no password: nothing changes, updatedAt stays (as for a ledger)
        if (!passwordHash && (patch.name === undefined || patch.name === u.name)) return u;
        const next: User = { ...u, name: patch.name ?? u.name, passwordHash: passwordHash ?? u.passwordHash, updatedAt: d.clock.now() };
        d.users.updateUser(next);
        if (passwordHash) {
          const ended = d.sessions.revokeSessionsOfUser(userId, by.actor.sessionId, d.clock.now(), 'password_changed');
          d.audit.record(by, { orgId: null, action: 'user.password_changed', target: { type: 'user', id: userId }, data: { otherSessionsEnded: ended } });
        }
        if (patch.name !== undefined && patch.name !== u.name) {
          d.audit.record(by, { orgId: null, action: 'user.updated', target: { type: 'user', id: userId }, data: { name: { from: u.name, to: next.name } } });
        }
        return next;
      });
    },

    /**
     * Accounts stored in an older form of an address another account has in its usual form
     * (migrations 0040, 0046 leave the second as it was), not disabled: sign-in finds the usual
     * form's account, so they cannot sign in — on purpose, as they may be look-alikes an admin made
     * of another's address (letting the password pick one let their holder clear that account's
     * sign-in throttle, and its timing told them apart: a reviewer's case). The start names them.
     */
    accountsNotFoundBySignIn(): User[] {
      return d.users.listUsersWithUnusualEmails().filter((u) => !u.disabled && accountEmail(u.email) !== u.email);
    },
    /**
     * Accounts whose password an organization's admin chose (password-origin.ts) that are members of
     * another organization or superusers: made so before migration 0047, when nothing stopped it.
     * That admin may sign in as the user there: the start names them (an upgrade tester's cases).
     */
    exposedAccounts(): ExposedAccount[] {
      const byUser = new Map<string, ExposedAccount>();
      for (const r of d.users.listExposedAccounts()) {
        const u = byUser.get(r.userId) ?? { userId: r.userId, email: r.email, passwordFrom: r.passwordFromOrg, superuser: r.superuser, memberOf: [] };
        if (r.orgId) u.memberOf.push({ orgId: r.orgId, name: r.orgName ?? '' });
        byUser.set(r.userId, u);
      }
      return [...byUser.values()];
    },
    /** The accounts stored in an older form of `email` (accountEmail's form) beside the one stored as it is (for the `user` command). */
    olderFormsOf(email: string): User[] {
      return d.users.listUsersWithUnusualEmails().filter((u) => u.email !== email && accountEmail(u.email) === email);
    },
    listUsers(limit: number, cursor?: string): Page<User> {
      const from = d.cursors.decodeKeyset(cursor, 'users');
      return d.cursors.toPage(d.users.listUsers(limit, from), limit, 'users', (u) => [u.createdAt, u.id]);
    },

    getUser(userId: string): User {
      return requireUser(userId);
    },

    async createUser(by: Caller, input: { email: string; name?: string; password: string; superuser?: boolean }): Promise<User> {
      const email = accountEmail(input.email);
      if (d.users.findUserByEmail(email)) throw conflict('email_taken', `A user with e-mail ${email} already exists.`);
      checkPasswordPolicy(input.password, 'password', { email, name: input.name });
      const hash = await d.hasher.hash(input.password);
      return d.db.tx(() => {
        const user = insertUser(email, input.name ?? '', hash, input.superuser ?? false);
        d.audit.record(by, { orgId: null, action: 'user.created', target: { type: 'user', id: user.id }, data: { email, superuser: user.superuser } });
        return user;
      });
    },

    /**
     * Superuser changes to a user. Disabling ends all their sessions; the last active superuser
     * cannot be disabled or lose the flag (409).
     */
    async updateUser(by: Caller, userId: string, patch: UserPatch): Promise<User> {
      const user = requireUser(userId);
      let passwordHash: string | undefined;
      if (patch.password !== undefined) {
        // one's own password is changed with the current one (PATCH /users/me, throttled): a
        // superuser's stolen access token set a new one here without it, ending the owner's
        // sessions everywhere (an org tester's case). Another account's, a superuser may reset.
        if (by.actor.type === 'user' && by.actor.id === userId) {
          throw invalidField('password', 'is your own: change it with PATCH /users/me, giving currentPassword');
        }
        checkPasswordPolicy(patch.password, 'password', { email: user.email, name: patch.name ?? user.name });
        passwordHash = await d.hasher.hash(patch.password);
      }
      return d.db.tx(() => {
        const u = requireUser(userId);
        const next: User = {
          ...u,
          name: patch.name ?? u.name,
          superuser: patch.superuser ?? u.superuser,
          disabled: patch.disabled ?? u.disabled,
          passwordHash: passwordHash ?? u.passwordHash,
          // a password a superuser (or the operator) set is no longer the one an organization's admin chose
          passwordFromOrg: passwordHash ? null : u.passwordFromOrg,
          updatedAt: d.clock.now(),
        };
        // a superuser is an admin of every organization: not an account an organization's admin may know the password of
        if (next.superuser && !u.superuser && !mayJoin(next)) throw passwordOfAnotherOrg(u, true);
        // nothing that changes (the same name, flags as they are): updatedAt stays and nothing is
        // audited, as for a ledger (an org tester's `{"disabled":false}` wrote an empty entry)
        if (!passwordHash && next.name === u.name && next.superuser === u.superuser && next.disabled === u.disabled) return u;
        const losesSuper = u.superuser && !u.disabled && (!next.superuser || next.disabled);
        if (losesSuper && d.users.countActiveSuperusers() <= 1) {
          throw conflict('last_superuser', 'This is the last active superuser; make another user superuser first.');
        }
        d.users.updateUser(next);
        if ((next.disabled && !u.disabled) || passwordHash) {
          d.sessions.revokeSessionsOfUser(userId, '', d.clock.now(), next.disabled ? 'user_disabled' : 'password_reset');
        }
        // a password set by an administrator (or `user passwd`) lifts the account's sign-in
        // throttle: the guesses counted there were against a password that is gone, and the reset
        // is how a locked-out user gets back in before the window ends
        if (passwordHash) d.throttle.recordSuccess(d.throttle.accountKey(u.email));
        const changes: Record<string, unknown> = {};
        for (const k of ['name', 'superuser', 'disabled'] as const) if (u[k] !== next[k]) changes[k] = { from: u[k], to: next[k] };
        if (passwordHash) changes.passwordReset = true;
        d.audit.record(by, { orgId: null, action: 'user.updated', target: { type: 'user', id: userId }, data: changes });
        return next;
      });
    },

    /** Ends every session of a user (an admin's "sign out everywhere"). */
    revokeUserSessions(by: Caller, userId: string): number {
      return d.db.tx(() => {
        requireUser(userId);
        const n = d.sessions.revokeSessionsOfUser(userId, '', d.clock.now(), 'revoked_by_admin');
        d.audit.record(by, { orgId: null, action: 'user.sessions_revoked', target: { type: 'user', id: userId }, data: { sessions: n } });
        return n;
      });
    },

    /**
     * Creates the first superuser when the installation has no user yet. Without a password one is
     * generated and returned so that the caller can print it once. Returns undefined when users exist.
     */
    async bootstrapSuperuser(input: { email?: string; password?: string }): Promise<{ user: User; generatedPassword?: string } | undefined> {
      if (d.users.countUsers() > 0) return undefined;
      const email = accountEmail(input.email ?? 'admin@contact-ledger.local');
      const generatedPassword = input.password === undefined ? generatePassword() : undefined;
      const password = input.password ?? generatedPassword!;
      // a configuration error (exit 2): restarting with the same setting cannot help
      const problem = passwordPolicyProblem(password, { email });
      if (problem) throw new ConfigError(`CONTACT_LEDGER_ADMIN_PASSWORD ${problem}`);
      const hash = await d.hasher.hash(password);
      return d.db.tx(() => {
        if (d.users.countUsers() > 0) return undefined;
        const user = insertUser(email, 'Administrator', hash, true);
        d.audit.recordAnonymous(null, { orgId: null, action: 'user.created', actor: { type: 'system', id: null, label: 'bootstrap' }, target: { type: 'user', id: user.id }, data: { email, superuser: true } });
        return { user, ...(generatedPassword ? { generatedPassword } : {}) };
      });
    },
  };
}
