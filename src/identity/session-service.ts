import type { Clock } from '../clock.ts';
import { digestsEqual, randomToken, secretsEqual, sha256 } from '../crypto.ts';
import { AppError, unauthenticated } from '../errors.ts';
import { isId, newId } from '../ids.ts';
import { accountEmail, isEmail } from '../normalize.ts';
import type { Db } from '../storage/db.ts';
import type { AccessClaims, AccessTokens } from './access-tokens.ts';
import type { Audit } from './audit.ts';
import type { Actor, Caller, RequestMeta, Role, ServiceAccount, User } from './model.ts';
import type { Access } from './access.ts';
import type { PasswordHasher } from './passwords.ts';
import type { ServiceAccountsRepo } from './service-accounts-repo.ts';
import type { SessionsRepo } from './sessions-repo.ts';
import type { SignInThrottle, ThrottleKey } from './throttle.ts';
import type { UsersRepo } from './users-repo.ts';

/** A sign-in request, already normalized from camelCase, snake_case or form fields. */
export type Grant =
  | { grantType: 'password'; email: string; password: string; client?: { clientId: string; clientSecret?: string } }
  | { grantType: 'clientCredentials'; clientId: string; clientSecret: string }
  | { grantType: 'refreshToken'; refreshToken: string; client?: { clientId: string; clientSecret?: string } };

export interface SessionPrincipal {
  user: { id: string; email: string; name: string; superuser: boolean } | null;
  serviceAccount: { id: string; name: string; orgId: string | null; role: Role | null; permissions: string[] } | null;
  orgs: { id: string; name: string; role: Role }[];
}

export interface IssuedSession extends SessionPrincipal {
  sessionId: string;
  accessToken: string;
  accessExpiresAt: number;
  /** Seconds the access token lives from its issue: the configured lifetime, or less in the last hour of its sign-in. */
  accessExpiresIn: number;
  refreshToken: string;
  refreshExpiresAt: number;
}

export interface SessionDeps {
  db: Db;
  clock: Clock;
  users: UsersRepo;
  /** Which organizations a principal can use (the rule GET /orgs applies too). */
  access: Pick<Access, 'visibleOrgs'>;
  serviceAccounts: ServiceAccountsRepo;
  sessions: SessionsRepo;
  tokens: AccessTokens;
  hasher: PasswordHasher;
  throttle: SignInThrottle;
  audit: Audit;
  refreshIdleSeconds: number;
  refreshMaxSeconds: number;
}

const REFRESH_PREFIX = 'clr_';
/** A digest no secret hashes to: compared against when the client id is unknown (same timing). */
const NO_SECRET = sha256('no service account has this secret');

const invalidGrant = (message: string) =>
  new AppError(401, 'invalid_grant', message, { extra: { error: 'invalid_grant', error_description: message } });
// RFC 6749 §5.2: a client that authenticated with HTTP Basic is told the scheme to use (the web
// application never sends client credentials, so no browser shows a password prompt for it).
export const invalidClient = (message: string) =>
  new AppError(401, 'invalid_client', message, { extra: { error: 'invalid_client', error_description: message }, headers: { 'WWW-Authenticate': 'Basic realm="contact-ledger", charset="UTF-8"' } });
// RFC 6749 §5.2: a client that may not use the grant it asked for (400)
const unauthorizedClient = (message: string) => new AppError(400, 'unauthorized_client', message, { extra: { error: 'unauthorized_client', error_description: message } });

export type SessionService = ReturnType<typeof createSessionService>;

/**
 * When an access token stops working: its `exp` (whole seconds), or its session's end when that
 * comes first — the `expiresAt` its sign-in answered (AccessTokens.sign), so that GET /session
 * gives the same time (it gave the whole second after it, a compatibility tester's case).
 */
const accessExpiry = (claims: AccessClaims, sessionExpiresAt: number) => Math.min(claims.exp * 1000, sessionExpiresAt);

/**
 * Sessions (SPEC §3.1): the password, clientCredentials and refreshToken grants, rotation with
 * re-use detection, sign-out, and the per-request resolution of an access token to an actor.
 */
export function createSessionService(d: SessionDeps) {
  const ms = (s: number) => s * 1000;

  /**
   * Organizations the principal can use, with its effective role in each — what GET /orgs lists and
   * the role checks enforce: for a superuser every organization, as admin, whatever its membership
   * (docs/decisions.md).
   */
  const orgsOf = (p: { user?: User; sa?: ServiceAccount }): SessionPrincipal['orgs'] =>
    d.access
      .visibleOrgs(p.sa ? { type: 'service_account', orgId: p.sa.orgId, role: p.sa.role } : { type: 'user', id: p.user!.id, superuser: p.user!.superuser }, 10_000)
      .map((o) => ({ id: o.id, name: o.name, role: o.role! }));

  const principalOf = (p: { user?: User; sa?: ServiceAccount }): SessionPrincipal => ({
    user: p.user ? { id: p.user.id, email: p.user.email, name: p.user.name, superuser: p.user.superuser } : null,
    serviceAccount: p.sa ? { id: p.sa.id, name: p.sa.name, orgId: p.sa.orgId, role: p.sa.role, permissions: p.sa.permissions } : null,
    orgs: orgsOf(p),
  });

  /** Inserts a refresh token for the session; returns the raw token and its expiry. Inside a tx. */
  const issueRefreshToken = (sessionId: string, sessionExpiresAt: number): { token: string; expiresAt: number } => {
    const now = d.clock.now();
    const token = REFRESH_PREFIX + randomToken(32);
    const expiresAt = Math.min(now + ms(d.refreshIdleSeconds), sessionExpiresAt);
    d.sessions.insertRefreshToken(sha256(token), sessionId, now, expiresAt);
    return { token, expiresAt };
  };

  /** Starts a new session for the principal and issues its first token pair. Inside a tx. */
  const startSession = (p: { user?: User; sa?: ServiceAccount }) => {
    const now = d.clock.now();
    const session = {
      id: newId('sf'),
      userId: p.user?.id ?? null,
      serviceAccountId: p.sa?.id ?? null,
      createdAt: now,
      lastUsedAt: now,
      expiresAt: now + ms(d.refreshMaxSeconds),
      revokedAt: null,
      revokedReason: null,
    };
    d.sessions.insertSession(session);
    return { sessionId: session.id, sessionExpiresAt: session.expiresAt, refresh: issueRefreshToken(session.id, session.expiresAt) };
  };

  /** The answer of a grant: an access token that ends at the latest with its session (REFRESH_MAX_AGE_SECONDS), and the refresh token. */
  const finish = async (sub: string, started: { sessionId: string; sessionExpiresAt: number; refresh: { token: string; expiresAt: number } }, p: { user?: User; sa?: ServiceAccount }): Promise<IssuedSession> => {
    const { sessionId, refresh } = started;
    const access = await d.tokens.sign(sub, sessionId, started.sessionExpiresAt);
    return {
      sessionId,
      accessToken: access.token,
      accessExpiresAt: access.expiresAt,
      accessExpiresIn: access.expiresIn,
      refreshToken: refresh.token,
      refreshExpiresAt: refresh.expiresAt,
      ...principalOf(p),
    };
  };

  /**
   * The password grant signs in a user, never a client: client credentials sent with it are checked
   * like any (a wrong or malformed secret is 401 invalid_client, counted against the client), and a
   * client authenticated is then refused with 400 unauthorized_client — the session would not be
   * its own, the one thing a client may hold (as the refresh grant decides: RFC 6749 §6). A client
   * id without a secret is a public client's name (RFC 6749 §2.1, which OAuth libraries send by
   * default); this server registers none, so it authenticates nothing and is not looked at.
   */
  async function passwordGrant(email: string, password: string, client: { clientId: string; clientSecret?: string } | undefined, meta: RequestMeta): Promise<IssuedSession> {
    if (client?.clientSecret !== undefined) {
      authenticateClient(client.clientId, client.clientSecret, meta, 'password');
      throw unauthorizedClient('The password grant is for users and takes no client credentials; a service account signs in with the clientCredentials grant.');
    }
    const normalized = accountEmail(email);
    const keys: ThrottleKey[] = [d.throttle.accountKey(normalized), d.throttle.addressKey(meta.ip)];
    const release = d.throttle.admit(keys);
    let started: ReturnType<typeof startSession> | undefined;
    let user: User | undefined;
    try {
      user = d.users.findUserByEmail(normalized);
      // Same work whether or not the account exists, so timing reveals nothing (RELIABILITY.md A3).
      const ok = user && !user.disabled ? await d.hasher.verify(password, user.passwordHash) : await d.hasher.verifyNothing(password);
      if (!ok || !user) {
        d.db.tx(() => {
          d.throttle.recordFailure(keys);
          // what was typed as the e-mail, unless it is no address: then it may be a password typed in the wrong field
          const email = isEmail(normalized) ? { email: normalized } : { email: null, emailNotAnAddress: true };
          d.audit.recordAnonymous(meta, { orgId: null, action: 'session.sign_in_failed', data: { grantType: 'password', ...email } });
        });
        throw invalidGrant('The e-mail or password is incorrect.');
      }
      const u = user;
      // a hash from before BCRYPT_COST was raised gets the new cost now, while the password is known
      // (else old accounts answer faster than unknown e-mails, whose dummy check runs at the new cost: A3)
      const rehashed = d.hasher.needsRehash(u.passwordHash) ? await d.hasher.hash(password) : undefined;
      started = d.db.tx(() => {
        // The account as it is now: a password reset or change, or a disable, committed while the
        // password was being checked ends every session of the old credentials, this one included (A5).
        const current = d.users.findUserById(u.id);
        if (!current || current.disabled || !secretsEqual(current.passwordHash, u.passwordHash)) return undefined;
        if (rehashed) d.users.replacePasswordHash(u.id, u.passwordHash, rehashed);
        d.throttle.recordSuccess(keys[0]!);
        d.audit.recordAnonymous(meta, { orgId: null, action: 'session.signed_in', actor: { type: 'user', id: u.id, label: u.email }, target: { type: 'user', id: u.id } });
        return startSession({ user: u });
      });
      if (!started) throw invalidGrant('The e-mail or password is incorrect.');
    } finally {
      release();
    }
    return finish(user.id, started, { user });
  }

  /**
   * A service account by its id and secret; 401 invalid_client otherwise. Failures count against
   * the client id and the address. The client id's lock holds for every attempt, the right secret
   * too (RELIABILITY.md A2d, as an account's lock). The address's lock meets only further failures:
   * a secret of 256 random bits cannot be guessed, and checking it costs one SHA-256, so the right
   * secret is taken from an address someone else's wrong attempts locked (a security tester's 50
   * bad sign-ins from a shared NAT stopped every pipeline behind it from getting tokens).
   */
  function authenticateClient(clientId: string, clientSecret: string, meta: RequestMeta, grantType: Grant['grantType']): ServiceAccount {
    const keys: ThrottleKey[] = [d.throttle.clientKey(clientId), d.throttle.addressKey(meta.ip)];
    d.throttle.assertAllowed([keys[0]!]);
    const sa = isId('sa', clientId) ? d.serviceAccounts.findServiceAccountById(clientId) : undefined;
    const match = digestsEqual(sha256(clientSecret), sa ? sa.secretHash : NO_SECRET);
    if (!sa || !match) {
      // the address locked: 429, not audited again (the lock bounds the log's growth), but counted
      // against the client id, whose own lock then holds however many addresses guess at it — a
      // service account's only, locked or not: a made-up client id each time would write a row
      // each (two reviewers' cases), and guesses at no account need no lock of their own
      const wait = d.throttle.lockedFor(keys);
      if (wait > 0) {
        if (sa) d.db.tx(() => d.throttle.recordFailure([keys[0]!]));
        throw d.throttle.lockedError(wait);
      }
      d.db.tx(() => {
        // the client id's counter only for a service account's, as above
        d.throttle.recordFailure(sa ? keys : [keys[1]!]);
        // installation-wide like every sign-in (docs/decisions.md): not in the organization's log;
        // the client id only when it is one — else it may be the secret, typed into the wrong field
        const client = isId('sa', clientId) ? { clientId } : { clientId: null, clientIdNotAnId: true };
        d.audit.recordAnonymous(meta, { orgId: null, action: 'session.sign_in_failed', data: { grantType, ...client } });
      });
      throw invalidClient('The client id or secret is incorrect.');
    }
    d.throttle.recordSuccess(keys[0]!);
    return sa;
  }

  async function clientCredentialsGrant(clientId: string, clientSecret: string, meta: RequestMeta): Promise<IssuedSession> {
    const sa = authenticateClient(clientId, clientSecret, meta, 'clientCredentials');
    const started = d.db.tx(() => {
      d.serviceAccounts.touchServiceAccount(sa.id, d.clock.now());
      d.audit.recordAnonymous(meta, {
        orgId: null,
        action: 'session.signed_in',
        actor: { type: 'service_account', id: sa.id, label: sa.name },
        target: { type: 'service_account', id: sa.id },
        data: { grantType: 'clientCredentials' },
      });
      return startSession({ sa });
    });
    return finish(sa.id, started, { sa });
  }

  /**
   * A refresh token for a new access token. A client that says who it is (clientId, with or without
   * its secret; the secret is checked when given) gets tokens only for a session of its own
   * (RFC 6749 §6, §10.4): another client's token is refused and left usable by its owner.
   */
  async function refreshTokenGrant(refreshToken: string, client: { clientId: string; clientSecret?: string } | undefined, meta: RequestMeta): Promise<IssuedSession> {
    if (client?.clientSecret !== undefined) authenticateClient(client.clientId, client.clientSecret, meta, 'refreshToken');
    const keys: ThrottleKey[] = [d.throttle.addressKey(meta.ip)];
    // A locked address is met only by a token that fails (as a client secret, above): a refresh
    // token is 256 random bits, so a valid one renews its session from behind a locked address.
    const locked = d.throttle.lockedFor(keys);
    /** A failure counts against the address unless it is locked already: then it is answered 429 (below). */
    let failedHere = false;
    const failed = () => {
      failedHere = true;
      if (!locked) d.throttle.recordFailure(keys);
    };
    const hash = sha256(refreshToken);
    const now = d.clock.now();
    // Decide inside one transaction, throw after it: a detected re-use must stay revoked.
    const outcome = d.db.tx(():
      | { kind: 'ok'; sessionId: string; sessionExpiresAt: number; refresh: { token: string; expiresAt: number }; user?: User; sa?: ServiceAccount }
      | { kind: 'reused' }
      | { kind: 'invalid'; reason: string } => {
      if (client) {
        const known = refreshToken.startsWith(REFRESH_PREFIX) ? d.sessions.findRefreshToken(hash) : undefined;
        if (known && d.sessions.findSession(known.sessionId)?.serviceAccountId !== client.clientId) {
          failed();
          return { kind: 'invalid', reason: 'The refresh token was not issued to this client.' };
        }
      }
      const used = refreshToken.startsWith(REFRESH_PREFIX) ? d.sessions.useRefreshToken(hash, now) : undefined;
      if (!used) {
        const known = refreshToken.startsWith(REFRESH_PREFIX) ? d.sessions.findRefreshToken(hash) : undefined;
        if (known && known.usedAt !== null) {
          const s = d.sessions.findSession(known.sessionId);
          // presented again after its session had ended otherwise (signed out, disabled, a password
          // reset): that is what the client is told, not a re-use — there is no family left to end
          if (!s || (s.revokedAt !== null && s.revokedReason !== 'refresh_token_reuse')) return { kind: 'invalid', reason: 'The session has ended; sign in again.' };
          // every presentation of a used token counts against the address, like any bad token
          failed();
          // the family already ended for this: nothing more to end or to audit (one row, not one per request)
          if (s.revokedAt !== null) return { kind: 'reused' };
          // A rotated token came back: someone holds a copy. End the whole family (RFC 9700 §4.14.2).
          d.sessions.revokeSession(known.sessionId, now, 'refresh_token_reuse');
          d.audit.recordAnonymous(meta, {
            orgId: null,
            action: 'session.refresh_token_reused',
            actor: s?.userId ? { type: 'user', id: s.userId, label: null } : { type: 'service_account', id: s?.serviceAccountId ?? null, label: null },
            target: { type: 'session', id: known.sessionId },
          });
          return { kind: 'reused' };
        }
        failed();
        return { kind: 'invalid', reason: 'The refresh token is not valid.' };
      }
      const session = d.sessions.findSession(used.sessionId);
      if (!session || session.revokedAt !== null) return { kind: 'invalid', reason: 'The session has ended; sign in again.' };
      if (used.expiresAt <= now || session.expiresAt <= now) {
        // the token is used up now: the session ends with it, so that a client retrying the same
        // token is told the session ended, not that its token was stolen
        d.sessions.revokeSession(session.id, now, 'expired');
        return { kind: 'invalid', reason: 'The refresh token has expired; sign in again.' };
      }
      const user = session.userId ? d.users.findUserById(session.userId) : undefined;
      const sa = session.serviceAccountId ? d.serviceAccounts.findServiceAccountById(session.serviceAccountId) : undefined;
      if (session.userId && (!user || user.disabled)) return { kind: 'invalid', reason: 'The account is disabled.' };
      if (session.serviceAccountId && !sa) return { kind: 'invalid', reason: 'The service account no longer exists.' };
      d.sessions.touchSession(session.id, now);
      // a service account's lastUsedAt is when it last got an access token, by sign-in or refresh
      if (sa) d.serviceAccounts.touchServiceAccount(sa.id, now);
      return { kind: 'ok', sessionId: session.id, sessionExpiresAt: session.expiresAt, refresh: issueRefreshToken(session.id, session.expiresAt), user, sa };
    });
    // locked: what failed is told 429 (a re-used token's session ended all the same)
    if (locked && failedHere) throw d.throttle.lockedError(locked);
    if (outcome.kind === 'reused') throw invalidGrant('The refresh token was already used; the session has been revoked. Sign in again.');
    if (outcome.kind === 'invalid') throw invalidGrant(outcome.reason);
    const p = { user: outcome.user, sa: outcome.sa };
    return finish((outcome.user ?? outcome.sa)!.id, outcome, p);
  }

  return {
    /** Runs a grant; throws 401 invalid_grant / invalid_client or 429 when throttled. */
    signIn(grant: Grant, meta: RequestMeta): Promise<IssuedSession> {
      switch (grant.grantType) {
        case 'password':
          return passwordGrant(grant.email, grant.password, grant.client, meta);
        case 'clientCredentials':
          return clientCredentialsGrant(grant.clientId, grant.clientSecret, meta);
        case 'refreshToken':
          return refreshTokenGrant(grant.refreshToken, grant.client, meta);
      }
    },

    /** The caller's session as GET /session shows it. */
    describe(by: Caller): SessionPrincipal & { refreshExpiresAt: number } {
      const a = by.actor;
      const session = d.sessions.findSession(a.sessionId)!;
      const p = a.type === 'user' ? { user: d.users.findUserById(a.id)! } : { sa: d.serviceAccounts.findServiceAccountById(a.id)! };
      // the refresh token the client holds now (the family's unused one), as the sign-in answer gave it
      return { ...principalOf(p), refreshExpiresAt: d.sessions.liveRefreshTokenExpiry(session.id) ?? session.expiresAt };
    },

    /** Revokes the caller's session: its refresh tokens and access tokens stop working. */
    signOut(by: Caller): void {
      d.db.tx(() => {
        d.sessions.revokeSession(by.actor.sessionId, d.clock.now(), 'signed_out');
        d.audit.record(by, { orgId: null, action: 'session.signed_out', target: { type: 'session', id: by.actor.sessionId } });
      });
    },

    /**
     * Turns verified access-token claims into the current actor, re-reading the session, the user
     * or service account from the database; throws 401 when any of them is gone or revoked. A
     * `recheck` of an actor resolved earlier in the same request (a long upload, index.ts
     * reloadActor) does not look at the session's lifetime again: it had not ended when the
     * request began, and reaching it meanwhile is no revocation — as the access token's own expiry.
     */
    resolveActor(claims: AccessClaims, opts: { recheck?: boolean } = {}): Actor {
      const session = d.sessions.findSession(claims.sid);
      if (!session || session.revokedAt !== null || (!opts.recheck && session.expiresAt <= d.clock.now())) {
        throw unauthenticated('The session of this access token has ended; sign in again.');
      }
      if (session.userId) {
        const u = d.users.findUserById(session.userId);
        if (!u || u.disabled || u.id !== claims.sub) throw unauthenticated('The account of this access token is disabled or gone.');
        return { type: 'user', id: u.id, email: u.email, name: u.name, superuser: u.superuser, sessionId: session.id, accessExpiresAt: accessExpiry(claims, session.expiresAt) };
      }
      const sa = d.serviceAccounts.findServiceAccountById(session.serviceAccountId!);
      if (!sa || sa.id !== claims.sub) throw unauthenticated('The service account of this access token no longer exists.');
      return { type: 'service_account', id: sa.id, name: sa.name, orgId: sa.orgId, role: sa.role, permissions: sa.permissions, sessionId: session.id, accessExpiresAt: accessExpiry(claims, session.expiresAt) };
    },
  };
}
