import type Koa from 'koa';
import type { z } from 'zod';
import { isoZ, sessionExpiry } from '../clock.ts';
import { AppError, badRequest } from '../errors.ts';
import { pageOf, pageQuery } from '../http/common-schemas.ts';
import { ApiRouter, RETRY_AFTER, type ResponseSpec } from '../http/route.ts';
import type { Audit } from './audit.ts';
import type { OrgService } from './org-service.ts';
import {
  AuditPage,
  AuthAliasSessionAnswer,
  InstallationServiceAccountAnswer,
  InstallationServiceAccountPage,
  InstallationServiceAccountWithSecretAnswer,
  IssuedSessionAnswer,
  MemberAnswer,
  MemberPage,
  OrgAnswer,
  OrgPage,
  OrgServiceAccountAnswer,
  OrgServiceAccountPage,
  OrgServiceAccountWithSecretAnswer,
  presentAuditEntry,
  presentMember,
  presentOrg,
  presentServiceAccount,
  presentSessionUser,
  presentUser,
  RevokedSessionsAnswer,
  SessionAnswer,
  UserAnswer,
  UserPage,
} from './presenters.ts';
import * as S from './schemas.ts';
import type { ServiceAccountService, ServiceAccountWithSecret } from './service-account-service.ts';
import { invalidClient, type Grant, type IssuedSession, type SessionPrincipal, type SessionService } from './session-service.ts';
import type { UserService } from './user-service.ts';

/**
 * The answer of a route that hashes or checks a password when the hashing thread's queue is full
 * (src/identity/passwords.ts): a burst of new users or password changes, as a storm of sign-ins.
 */
const HASHER_BUSY: ResponseSpec = { description: 'Too many passwords are being checked or set right now; retry after Retry-After seconds', headers: RETRY_AFTER };

/** The token endpoints' (POST /session and its auth_url alias) wrong credentials and throttling. */
const TOKEN_401: ResponseSpec = {
  description: 'invalid_grant / invalid_client',
  headers: { 'WWW-Authenticate': { description: 'Basic realm="contact-ledger", charset="UTF-8" with invalid_client (RFC 6749 §5.2)' } },
};
const SIGN_IN_THROTTLED: ResponseSpec = { description: 'Too many failed sign-ins for this account or address; try again after Retry-After seconds', headers: RETRY_AFTER };

export interface IdentityServices {
  sessions: SessionService;
  orgs: OrgService;
  users: UserService;
  serviceAccounts: ServiceAccountService;
  audit: Audit;
}

export const IDENTITY_PREFIX = '/api/identity/v1';

// 400, not 422: a token endpoint answers RFC 6749 §5.2's codes (RELIABILITY I7)
const invalidRequest = (message: string, path: string) =>
  new AppError(400, 'validation_failed', message, { errors: [{ path, message }], extra: { error: 'invalid_request', error_description: message } });

/** The grant types of POST /session, in every spelling SPEC §3.1 accepts. */
const GRANT_TYPES: Record<string, Grant['grantType']> = {
  password: 'password',
  clientCredentials: 'clientCredentials',
  client_credentials: 'clientCredentials',
  refreshToken: 'refreshToken',
  refresh_token: 'refreshToken',
};
const grantTypeOf = (raw: string): Grant['grantType'] | undefined => (Object.hasOwn(GRANT_TYPES, raw) ? GRANT_TYPES[raw] : undefined);

const unsupportedGrantType = (raw: string, use: string, path: string) =>
  new AppError(400, 'unsupported_grant_type', `${path} "${raw}" is not supported; use ${use}.`, {
    errors: [{ path, message: 'unsupported grant type' }],
    extra: { error: 'unsupported_grant_type', error_description: `use ${use}` },
  });

/** RFC 6749 §5.2: an error_description is printable ASCII without `"` and `\`. */
const oauthText = (s: string) =>
  s.replace(/[\u2013\u2014]/g, '-').replace(/\u2026/g, '...').replace(/"/g, "'").replace(/\\/g, '/').replace(/[^\x20-\x7e]/g, '?');

/**
 * Every error of a token endpoint as RFC 6749 §5.2 has it (RELIABILITY I7; docs/decisions.md,
 * "Status codes of sign-in failures"): the problem+json body keeps its status, message, code and
 * errors, and carries `error` and `error_description` — `invalid_request` for a malformed or
 * invalid request, which is 400 here where other routes answer 422; `temporarily_unavailable`
 * for a 429 or 503 (Retry-After kept), `server_error` for a 500. A grant type the endpoint does
 * not take is `unsupported_grant_type` whatever else the body holds (the parameters of
 * another grant, such as authorization_code's `code`, are no known fields of ours).
 */
function tokenEndpointError(e: AppError, ctx: Koa.Context, unsupported: (raw: string) => AppError | undefined): AppError {
  if (e.status === 499) return e; // the client is gone: nobody reads it
  const body = (ctx.request as { body?: unknown }).body;
  if (e.status === 422 && body !== null && typeof body === 'object' && !Array.isArray(body)) {
    for (const raw of [(body as Record<string, unknown>).grantType, (body as Record<string, unknown>).grant_type]) {
      const refused = typeof raw === 'string' && raw.length <= 64 ? unsupported(raw) : undefined;
      if (refused) return refused;
    }
  }
  const status = e.status === 422 ? 400 : e.status;
  const given = typeof e.extra.error === 'string' ? e.extra.error : undefined;
  if (given !== undefined && status === e.status) return e;
  const error = given ?? (status === 429 || status === 503 ? 'temporarily_unavailable' : status >= 500 ? 'server_error' : 'invalid_request');
  return new AppError(status, e.code, e.message, {
    errors: e.errors,
    headers: e.headers,
    extra: { ...e.extra, error, error_description: e.extra.error_description ?? oauthText(e.message) },
    cause: e.cause ?? e,
  });
}

/**
 * HTTP Basic client authentication (RFC 6749 §2.3.1): form-encoded id and secret. Undefined when
 * the request has no Basic credentials (no Authorization header, or another scheme); credentials
 * that cannot be read (not base64, no colon, bad percent-encoding) are a failed client
 * authentication, 401 invalid_client — never ignored, whatever the grant.
 */
function basicCredentials(header: string): { clientId: string; clientSecret: string } | undefined {
  if (!/^Basic(?:[ \t]|$)/i.test(header)) return undefined;
  const malformed = () => invalidClient('The HTTP Basic client credentials cannot be read; send clientId:clientSecret in base64, each part percent-encoded.');
  const m = /^Basic ([A-Za-z0-9+/]+=*)$/i.exec(header);
  if (!m) throw malformed();
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const i = decoded.indexOf(':');
  if (i < 0) throw malformed();
  try {
    return { clientId: decodeURIComponent(decoded.slice(0, i)), clientSecret: decodeURIComponent(decoded.slice(i + 1)) };
  } catch {
    throw malformed();
  }
}

/** One value of a field that has two spellings (camelCase, snake_case); 400 when they differ. */
const pick = (field: string, a: string | undefined, c: string | undefined) => {
  if (a !== undefined && c !== undefined && a !== c) throw invalidRequest(`${field} is given twice with different values`, field);
  return a ?? c;
};

/**
 * On a password grant, HTTP Basic credentials are client authentication only when they name one
 * of ours (`sa_…`): others are a reverse proxy's own login (nginx auth_basic), which the browser
 * sends along with every request, and must not turn a user's sign-in into a failed client one.
 */
const serviceAccountBasic = (basic: { clientId: string; clientSecret: string } | undefined) => (basic?.clientId.startsWith('sa_') ? basic : undefined);

/** The client a request names: from the body, or from HTTP Basic (one method of authentication, RFC 6749 §2.3). */
function requestClient(
  b: { clientId?: string; client_id?: string; clientSecret?: string; client_secret?: string },
  authorization: string,
  passwordGrant: boolean,
): { clientId: string | undefined; clientSecret: string | undefined } {
  const read = basicCredentials(authorization);
  const basic = passwordGrant ? serviceAccountBasic(read) : read;
  const bodySecret = pick('clientSecret', b.clientSecret, b.client_secret);
  if (basic && bodySecret !== undefined) throw invalidRequest('the client authenticates once: with HTTP Basic or with clientSecret in the body, not both', 'clientSecret');
  return { clientId: pick('clientId', pick('clientId', b.clientId, b.client_id), basic?.clientId), clientSecret: bodySecret ?? basic?.clientSecret };
}

/** A client the request names, for a grant that checks it (password, refreshToken); 400 for a secret without its id. */
function namedClient(clientId: string | undefined, clientSecret: string | undefined): { client?: { clientId: string; clientSecret?: string } } {
  if (clientId !== undefined) return { client: { clientId, ...(clientSecret !== undefined ? { clientSecret } : {}) } };
  if (clientSecret !== undefined) throw invalidRequest('clientSecret needs its clientId', 'clientId');
  return {};
}

const SESSION_GRANTS = 'password, clientCredentials or refreshToken';

/** Normalizes the many spellings of SPEC §3.1 into one grant; 400 on contradictions. */
export function toGrant(b: z.output<typeof S.SessionRequest>, authorization: string): Grant {
  const email = pick('email', b.email, b.username);
  const refreshToken = pick('refreshToken', b.refreshToken, b.refresh_token);
  const raw = pick('grantType', b.grantType, b.grant_type);
  // without a grantType, an e-mail and a password are the password grant, before anything else
  const named = raw === undefined ? (email !== undefined && b.password !== undefined ? 'password' : undefined) : grantTypeOf(raw);
  const { clientId, clientSecret } = requestClient(b, authorization, named === 'password');
  const grantType =
    raw !== undefined || named !== undefined
      ? named
      : clientId !== undefined && clientSecret !== undefined
        ? 'clientCredentials'
        : refreshToken !== undefined
          ? 'refreshToken'
          : undefined;
  if (raw !== undefined && grantType === undefined) throw unsupportedGrantType(raw, SESSION_GRANTS, 'grantType');
  switch (grantType) {
    case 'password':
      if (email === undefined) throw invalidRequest('email (or username) is required for the password grant', 'email');
      if (b.password === undefined) throw invalidRequest('password is required for the password grant', 'password');
      // client credentials sent with it are checked, then refused (session-service.ts passwordGrant)
      return { grantType, email, password: b.password, ...namedClient(clientId, clientSecret) };
    case 'clientCredentials':
      if (clientId === undefined) throw invalidRequest('clientId is required for the clientCredentials grant', 'clientId');
      if (clientSecret === undefined) throw invalidRequest('clientSecret is required for the clientCredentials grant', 'clientSecret');
      return { grantType, clientId, clientSecret };
    case 'refreshToken':
      if (refreshToken === undefined) throw invalidRequest('refreshToken is required for the refreshToken grant', 'refreshToken');
      // a client that authenticates or names itself gets tokens only for its own sessions (RFC 6749 §6)
      return { grantType, refreshToken, ...namedClient(clientId, clientSecret) };
    default:
      throw invalidRequest('grantType is required (password, clientCredentials or refreshToken)', 'grantType');
  }
}

const presentPrincipal = (p: SessionPrincipal) => ({
  user: p.user ? presentSessionUser(p.user) : null,
  serviceAccount: p.serviceAccount
    ? {
        id: p.serviceAccount.id,
        name: p.serviceAccount.name,
        orgId: p.serviceAccount.orgId,
        role: p.serviceAccount.role,
        ...(p.serviceAccount.orgId === null ? { permissions: p.serviceAccount.permissions } : {}),
      }
    : null,
  orgs: p.orgs,
});

/** The 200 body of POST /session (SPEC §3.1). */
export const presentIssuedSession = (s: IssuedSession) => ({
  accessToken: s.accessToken,
  expiresAt: sessionExpiry(s.accessExpiresAt),
  tokenType: 'Bearer',
  expiresIn: s.accessExpiresIn,
  refreshToken: s.refreshToken,
  refreshExpiresAt: isoZ(s.refreshExpiresAt),
  ...presentPrincipal(s),
});

const presentSecret = (r: ServiceAccountWithSecret) => ({ ...presentServiceAccount(r.serviceAccount), clientSecret: r.clientSecret });

/**
 * Cookie delivery of the refresh token, for the web application (docs/web.md, docs/decisions.md).
 * A client opts in with the request header `X-Session-Cookie: 1` on POST /session: the refresh token
 * then travels in an httpOnly, SameSite=Strict cookie limited to this path (Secure over HTTPS), the
 * body's refreshToken is null, and a refreshToken grant without a token in the body reads the cookie.
 * Without the header nothing changes. The custom header cannot be sent cross-site without a CORS
 * preflight (which never allows it), and Origin / Sec-Fetch-Site must name this site: no CSRF.
 */
export const SESSION_COOKIE = 'cl_refresh';
export const SESSION_COOKIE_HEADER = 'X-Session-Cookie';
const SESSION_COOKIE_PATH = `${IDENTITY_PREFIX}/session`;

const wantsCookie = (ctx: Koa.Context) => ctx.get(SESSION_COOKIE_HEADER) === '1';

/**
 * Cookie-mode requests must come from this site's own pages: the host the request was sent to, or
 * the one of BASE_URL (a reverse proxy that does not pass the Host header on, nginx's default).
 */
function assertSameSite(ctx: Koa.Context, publicHost: string): void {
  const site = ctx.get('Sec-Fetch-Site');
  const origin = ctx.get('Origin');
  let originHost: string | undefined;
  if (origin) {
    try {
      originHost = new URL(origin).host;
    } catch {
      originHost = '';
    }
  }
  if ((site && site !== 'same-origin') || (originHost !== undefined && originHost !== ctx.host && originHost !== publicHost)) {
    throw new AppError(403, 'cross_site_request', 'Session cookies are used only by requests from this site\'s own pages.');
  }
}

function setSessionCookie(ctx: Koa.Context, token: string, expiresAt: number, now: number): void {
  ctx.cookies.set(SESSION_COOKIE, token, {
    path: SESSION_COOKIE_PATH,
    httpOnly: true,
    sameSite: 'strict',
    secure: ctx.secure,
    maxAge: Math.max(0, expiresAt - now),
    overwrite: true,
  });
}

function clearSessionCookie(ctx: Koa.Context): void {
  ctx.cookies.set(SESSION_COOKIE, '', { path: SESSION_COOKIE_PATH, httpOnly: true, sameSite: 'strict', secure: ctx.secure, maxAge: 0, expires: new Date(0), overwrite: true });
}

const REFRESH_GRANTS = new Set(['refreshToken', 'refresh_token']);

/** Token responses must not be cached (RFC 6749 §5.1). */
function noStore(ctx: Koa.Context): void {
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Pragma', 'no-cache');
}

/** Registers every route of the identity service (SPEC §3) and the `{auth_url}/v1/session` alias. */
export function registerIdentityRoutes(r: ApiRouter, alias: ApiRouter, svc: IdentityServices, opts: { baseUrl: string; now: () => number }): void {
  const publicHost = new URL(opts.baseUrl).host;
  const location = (ctx: Koa.Context, path: string) => ctx.set('Location', `${opts.baseUrl}${IDENTITY_PREFIX}${path}`);
  const created = (ctx: Koa.Context, path: string, body: unknown) => {
    ctx.status = 201;
    location(ctx, path);
    ctx.body = body;
  };

  // ── sessions ────────────────────────────────────────────────────────────
  r.add(
    {
      method: 'post', path: '/session', access: 'public', body: S.SessionRequest, bodyTypes: ['json', 'form'],
      oauthErrors: (e, ctx) => tokenEndpointError(e, ctx, (raw) => (grantTypeOf(raw) ? undefined : unsupportedGrantType(raw, SESSION_GRANTS, 'grantType'))),
      summary: 'Sign in: password, clientCredentials or refreshToken grant',
      description:
        'Returns an access token (JWT, 1 hour) and a refresh token (rotated on every use). HTTP Basic client authentication is accepted for clientCredentials and refreshToken; ' +
        'client credentials sent with a password grant are checked (401 invalid_client when wrong or unreadable) and then refused (400 unauthorized_client: the password grant is for users). ' +
        `With the request header "${SESSION_COOKIE_HEADER}: 1" (same-site pages only) the refresh token is set as an httpOnly SameSite=Strict cookie on this path instead of in the body, ` +
        'and a refreshToken grant without a token reads that cookie. ' +
        'Every error carries RFC 6749\'s error and error_description besides the problem+json members.',
      responses: {
        200: { description: 'Signed in', schema: IssuedSessionAnswer },
        400: { description: 'invalid_request (a malformed or invalid request, with errors[] where fields are named), unsupported_grant_type, unauthorized_client' },
        401: TOKEN_401,
        403: { description: 'cross_site_request (cookie mode from another site)' },
        429: SIGN_IN_THROTTLED,
      },
    },
    async (ctx, { body, meta }) => {
      if (ctx.querystring) throw badRequest('credentials_in_url', 'Credentials must be sent in the request body, never in the URL.');
      const cookieMode = wantsCookie(ctx);
      let input = body;
      let fromCookie = false;
      if (cookieMode) {
        assertSameSite(ctx, publicHost);
        const grant = body.grantType ?? body.grant_type;
        if (grant !== undefined && REFRESH_GRANTS.has(grant) && body.refreshToken === undefined && body.refresh_token === undefined) {
          const cookie = ctx.cookies.get(SESSION_COOKIE);
          // its own code: the web app says "your session ended" after a reload only for a cookie refused, not for none
          if (!cookie) throw new AppError(401, 'no_session', 'There is no session to resume; sign in.', { extra: { error: 'invalid_grant', error_description: 'no session cookie' } });
          input = { ...body, refreshToken: cookie };
          fromCookie = true;
        }
      }
      let issued: IssuedSession;
      try {
        issued = await svc.sessions.signIn(toGrant(input, ctx.get('Authorization')), meta);
      } catch (err) {
        if (fromCookie && err instanceof AppError && err.status === 401) clearSessionCookie(ctx);
        throw err;
      }
      noStore(ctx);
      const out = presentIssuedSession(issued);
      if (cookieMode) {
        setSessionCookie(ctx, issued.refreshToken, issued.refreshExpiresAt, opts.now());
        ctx.body = { ...out, refreshToken: null };
      } else {
        ctx.body = out;
      }
    },
  );
  r.add({ method: 'get', path: '/session', access: 'authenticated', summary: 'The current session', responses: { 200: { description: 'The session, without its tokens', schema: SessionAnswer } } }, (ctx, { caller }) => {
    // the shape of POST /session's answer without its tokens (SPEC §3.1): the access token's expiry is the one this request came with
    const s = svc.sessions.describe(caller);
    const expires = caller.actor.accessExpiresAt!;
    ctx.body = { expiresAt: sessionExpiry(expires), tokenType: 'Bearer', expiresIn: Math.max(0, Math.floor((expires - opts.now()) / 1000)), refreshExpiresAt: isoZ(s.refreshExpiresAt), ...presentPrincipal(s) };
  });
  r.add(
    { method: 'delete', path: '/session', access: 'authenticated', summary: 'Sign out: revoke this session and its refresh tokens', responses: { 204: { description: 'Signed out' } } },
    (ctx, { caller }) => {
      svc.sessions.signOut(caller);
      if (ctx.cookies.get(SESSION_COOKIE) !== undefined) clearSessionCookie(ctx);
      ctx.status = 204;
    },
  );

  // ── organizations and members ───────────────────────────────────────────
  r.add({ method: 'get', path: '/orgs', access: 'authenticated', query: pageQuery, summary: 'Organizations the caller can access', responses: { 200: { description: 'A page of organizations', schema: OrgPage } } }, (ctx, { caller, query }) => {
    ctx.body = pageOf('orgs', svc.orgs.listOrgs(caller, query.limit ?? 100, query.cursor), presentOrg);
  });
  r.add({ method: 'post', path: '/orgs', access: 'superuser', body: S.NewOrg, summary: 'Create an organization', description: 'The user named by adminEmail (created when adminPassword is given), or else the creator, becomes its admin.', responses: { 201: { description: 'The organization (Location: its URL)', schema: OrgAnswer }, 409: { description: 'adminEmail names a user who exists (send no adminPassword), is disabled, or whose password an admin of another organization chose (a superuser sets a new one first)' }, 429: HASHER_BUSY } }, async (ctx, { caller, body }) => {
    const org = await svc.orgs.createOrg(caller, body);
    created(ctx, `/orgs/${org.id}`, presentOrg(org));
  });
  r.add({ method: 'get', path: '/orgs/:orgId', access: { org: 'viewer' }, summary: 'An organization', responses: { 200: { description: 'The organization', schema: OrgAnswer } } }, (ctx, { caller, params }) => {
    ctx.body = presentOrg(svc.orgs.getOrg(caller, params.orgId!));
  });
  r.add({ method: 'patch', path: '/orgs/:orgId', access: { org: 'admin' }, body: S.OrgPatch, summary: 'Rename an organization', responses: { 200: { description: 'The organization as updated', schema: OrgAnswer } } }, (ctx, { caller, params, body }) => {
    ctx.body = presentOrg(svc.orgs.updateOrg(caller, params.orgId!, body));
  });
  r.add({ method: 'delete', path: '/orgs/:orgId', access: 'superuser', summary: 'Delete an organization and everything it owns', responses: { 204: { description: 'Deleted' } } }, (ctx, { caller, params }) => {
    svc.orgs.deleteOrg(caller, params.orgId!);
    ctx.status = 204;
  });
  r.add({ method: 'get', path: '/orgs/:orgId/members', access: { org: 'viewer' }, query: pageQuery, summary: 'Members and their roles', responses: { 200: { description: 'A page of members', schema: MemberPage } } }, (ctx, { params, query }) => {
    ctx.body = pageOf('members', svc.orgs.listMembers(params.orgId!, query.limit ?? 100, query.cursor), presentMember);
  });
  r.add({ method: 'post', path: '/orgs/:orgId/members', access: { org: 'admin' }, body: S.NewMember, summary: 'Add a member (creates the user when a password is given)', responses: { 201: { description: 'The member (Location: its URL)', schema: MemberAnswer }, 409: { description: 'Already a member; a user who exists and a password; or an account whose password an admin of another organization chose (a superuser sets a new one first)' }, 429: HASHER_BUSY } }, async (ctx, { caller, params, body }) => {
    const m = await svc.orgs.addMember(caller, params.orgId!, body);
    created(ctx, `/orgs/${params.orgId}/members/${m.userId}`, presentMember(m));
  });
  // what the Location of an added member names (it answered 405: a contract tester's case)
  r.add({ method: 'get', path: '/orgs/:orgId/members/:userId', access: { org: 'viewer' }, summary: 'A member and their role', responses: { 200: { description: 'The member', schema: MemberAnswer } } }, (ctx, { params }) => {
    ctx.body = presentMember(svc.orgs.getMember(params.orgId!, params.userId!));
  });
  r.add({ method: 'patch', path: '/orgs/:orgId/members/:userId', access: { org: 'admin' }, body: S.MemberPatch, summary: "Change a member's role", responses: { 200: { description: 'The member as updated', schema: MemberAnswer }, 409: { description: 'Last admin' } } }, (ctx, { caller, params, body }) => {
    ctx.body = presentMember(svc.orgs.updateMember(caller, params.orgId!, params.userId!, body.role));
  });
  r.add({ method: 'delete', path: '/orgs/:orgId/members/:userId', access: { org: 'admin' }, summary: 'Remove a member', responses: { 204: { description: 'Removed' }, 409: { description: 'Last admin' } } }, (ctx, { caller, params }) => {
    svc.orgs.removeMember(caller, params.orgId!, params.userId!);
    ctx.status = 204;
  });

  // ── organization service accounts ───────────────────────────────────────
  r.add({ method: 'get', path: '/orgs/:orgId/service-accounts', access: { org: 'admin' }, query: pageQuery, summary: 'Service accounts (never their secrets)', responses: { 200: { description: 'A page of service accounts', schema: OrgServiceAccountPage } } }, (ctx, { params, query }) => {
    ctx.body = pageOf('serviceAccounts', svc.serviceAccounts.listOrgServiceAccounts(params.orgId!, query.limit ?? 100, query.cursor), presentServiceAccount);
  });
  r.add({ method: 'post', path: '/orgs/:orgId/service-accounts', access: { org: 'admin' }, body: S.NewOrgServiceAccount, summary: 'Create a service account; the secret is shown only in this response', responses: { 201: { description: 'The service account with its clientSecret (Location: its URL)', schema: OrgServiceAccountWithSecretAnswer } } }, (ctx, { caller, params, body }) => {
    const res = svc.serviceAccounts.createOrgServiceAccount(caller, params.orgId!, body);
    noStore(ctx);
    created(ctx, `/orgs/${params.orgId}/service-accounts/${res.serviceAccount.id}`, presentSecret(res));
  });
  r.add({ method: 'get', path: '/orgs/:orgId/service-accounts/:serviceAccountId', access: { org: 'admin' }, summary: 'A service account (never its secret)', responses: { 200: { description: 'The service account', schema: OrgServiceAccountAnswer } } }, (ctx, { params }) => {
    ctx.body = presentServiceAccount(svc.serviceAccounts.getOrgServiceAccount(params.orgId!, params.serviceAccountId!));
  });
  r.add({ method: 'post', path: '/orgs/:orgId/service-accounts/:serviceAccountId/rotate', access: { org: 'admin' }, summary: 'New secret (shown once); the old one and its sessions stop working', responses: { 200: { description: 'The service account with its new clientSecret', schema: OrgServiceAccountWithSecretAnswer } } }, (ctx, { caller, params }) => {
    noStore(ctx);
    ctx.body = presentSecret(svc.serviceAccounts.rotateOrgServiceAccount(caller, params.orgId!, params.serviceAccountId!));
  });
  r.add({ method: 'delete', path: '/orgs/:orgId/service-accounts/:serviceAccountId', access: { org: 'admin' }, summary: 'Delete a service account; its tokens stop working at once', responses: { 204: { description: 'Deleted' } } }, (ctx, { caller, params }) => {
    svc.serviceAccounts.deleteOrgServiceAccount(caller, params.orgId!, params.serviceAccountId!);
    ctx.status = 204;
  });

  r.add({ method: 'get', path: '/orgs/:orgId/audit', access: { org: 'admin' }, query: pageQuery, summary: 'Audit log of the organization, newest first', responses: { 200: { description: 'A page of audit entries', schema: AuditPage } } }, (ctx, { params, query }) => {
    ctx.body = pageOf('events', svc.audit.list(params.orgId!, query.limit ?? 100, query.cursor), presentAuditEntry);
  });

  // ── users ───────────────────────────────────────────────────────────────
  r.add({ method: 'get', path: '/users/me', access: 'user', summary: 'My profile', responses: { 200: { description: 'The user', schema: UserAnswer } } }, (ctx, { caller }) => {
    ctx.body = presentUser(svc.users.me(caller));
  });
  r.add({ method: 'patch', path: '/users/me', access: 'user', body: S.MePatch, summary: 'Change my name or password', description: 'A password change needs currentPassword and ends every other session.', responses: { 200: { description: 'The user as updated', schema: UserAnswer }, 409: { description: 'The password was changed or reset while this change was checked' }, 429: { description: 'Too many wrong current passwords (counted with sign-ins), or too many passwords being checked or set right now; retry after Retry-After seconds', headers: RETRY_AFTER } } }, async (ctx, { caller, body }) => {
    ctx.body = presentUser(await svc.users.updateMe(caller, body));
  });
  r.add({ method: 'get', path: '/users', access: 'superuser', query: pageQuery, summary: 'Installation users', responses: { 200: { description: 'A page of users', schema: UserPage } } }, (ctx, { query }) => {
    ctx.body = pageOf('users', svc.users.listUsers(query.limit ?? 100, query.cursor), presentUser);
  });
  r.add({ method: 'post', path: '/users', access: 'superuser', body: S.NewUser, summary: 'Create a user', responses: { 201: { description: 'The user (Location: its URL)', schema: UserAnswer }, 409: { description: 'E-mail taken' }, 429: HASHER_BUSY } }, async (ctx, { caller, body }) => {
    const u = await svc.users.createUser(caller, body);
    created(ctx, `/users/${u.id}`, presentUser(u));
  });
  r.add({ method: 'get', path: '/users/:userId', access: 'superuser', summary: 'A user', responses: { 200: { description: 'The user', schema: UserAnswer } } }, (ctx, { params }) => {
    ctx.body = presentUser(svc.users.getUser(params.userId!));
  });
  r.add({ method: 'patch', path: '/users/:userId', access: 'superuser', body: S.UserPatch, summary: 'Rename, disable, set superuser or reset the password of a user', responses: { 200: { description: 'The user as updated', schema: UserAnswer }, 409: { description: 'Last superuser; or superuser for an account whose password an organization\'s admin chose (set a password in the same request)' }, 429: HASHER_BUSY } }, async (ctx, { caller, params, body }) => {
    ctx.body = presentUser(await svc.users.updateUser(caller, params.userId!, body));
  });
  r.add({ method: 'delete', path: '/users/:userId/sessions', access: 'superuser', summary: 'End every session of a user', responses: { 200: { description: 'How many sessions were ended', schema: RevokedSessionsAnswer } } }, (ctx, { caller, params }) => {
    ctx.body = { revokedSessions: svc.users.revokeUserSessions(caller, params.userId!) };
  });

  // ── installation service accounts (feed pipelines) ──────────────────────
  r.add({ method: 'get', path: '/service-accounts', access: 'superuser', query: pageQuery, summary: 'Installation service accounts', responses: { 200: { description: 'A page of installation service accounts', schema: InstallationServiceAccountPage } } }, (ctx, { query }) => {
    ctx.body = pageOf('serviceAccounts', svc.serviceAccounts.listInstallationServiceAccounts(query.limit ?? 100, query.cursor), presentServiceAccount);
  });
  r.add({ method: 'post', path: '/service-accounts', access: 'superuser', body: S.NewInstallationServiceAccount, summary: 'Create an installation service account (e.g. permission feed)', responses: { 201: { description: 'The service account with its clientSecret (Location: its URL)', schema: InstallationServiceAccountWithSecretAnswer } } }, (ctx, { caller, body }) => {
    const res = svc.serviceAccounts.createInstallationServiceAccount(caller, body);
    noStore(ctx);
    created(ctx, `/service-accounts/${res.serviceAccount.id}`, presentSecret(res));
  });
  r.add({ method: 'get', path: '/service-accounts/:serviceAccountId', access: 'superuser', summary: 'An installation service account (never its secret)', responses: { 200: { description: 'The service account', schema: InstallationServiceAccountAnswer } } }, (ctx, { params }) => {
    ctx.body = presentServiceAccount(svc.serviceAccounts.getInstallationServiceAccount(params.serviceAccountId!));
  });
  r.add({ method: 'post', path: '/service-accounts/:serviceAccountId/rotate', access: 'superuser', summary: 'New secret for an installation service account', responses: { 200: { description: 'The service account with its new clientSecret', schema: InstallationServiceAccountWithSecretAnswer } } }, (ctx, { caller, params }) => {
    noStore(ctx);
    ctx.body = presentSecret(svc.serviceAccounts.rotateInstallationServiceAccount(caller, params.serviceAccountId!));
  });
  r.add({ method: 'delete', path: '/service-accounts/:serviceAccountId', access: 'superuser', summary: 'Delete an installation service account', responses: { 204: { description: 'Deleted' } } }, (ctx, { caller, params }) => {
    svc.serviceAccounts.deleteInstallationServiceAccount(caller, params.serviceAccountId!);
    ctx.status = 204;
  });
  r.add({ method: 'get', path: '/audit', access: 'superuser', query: pageQuery, summary: 'Audit log of the whole installation, newest first', responses: { 200: { description: 'A page of audit entries', schema: AuditPage } } }, (ctx, { query }) => {
    ctx.body = pageOf('events', svc.audit.list(undefined, query.limit ?? 100, query.cursor), presentAuditEntry);
  });

  // ── the hosted service's auth alias: form username + password, snake_case answer ──
  alias.add(
    {
      method: 'post', path: '/session', access: 'public', body: S.AuthAliasRequest, bodyTypes: ['form', 'json'],
      oauthErrors: (e, ctx) => tokenEndpointError(e, ctx, (raw) => (raw === 'password' ? undefined : unsupportedGrantType(raw, 'password', 'grant_type'))),
      summary: 'Sign in with form fields username and password (auth_url alias)',
      description: 'Every error carries RFC 6749\'s error and error_description besides the problem+json members.',
      responses: {
        200: { description: 'Signed in: {access_token, token_type, expires_in, expires_at, refresh_token}', schema: AuthAliasSessionAnswer },
        400: { description: 'invalid_request (a malformed or invalid request), unsupported_grant_type, unauthorized_client' },
        401: TOKEN_401,
        429: SIGN_IN_THROTTLED,
      },
    },
    async (ctx, { body, meta }) => {
      if (ctx.querystring) throw badRequest('credentials_in_url', 'Credentials must be sent in the request body, never in the URL.');
      // HTTP Basic client credentials are checked and refused as on POST /session (a password grant)
      const basic = serviceAccountBasic(basicCredentials(ctx.get('Authorization')));
      const s = await svc.sessions.signIn({ grantType: 'password', email: body.username, password: body.password, ...(basic ? { client: basic } : {}) }, meta);
      noStore(ctx);
      ctx.body = {
        access_token: s.accessToken,
        token_type: 'Bearer',
        expires_in: s.accessExpiresIn,
        expires_at: sessionExpiry(s.accessExpiresAt),
        refresh_token: s.refreshToken,
      };
    },
  );
}

