import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { Cursors } from '../cursor.ts';
import { deleteInChunks } from '../jobs/chunk-pacing.ts';
import type { Db } from '../storage/db.ts';
import { createSettingsRepo } from '../storage/settings-repo.ts';
import { createAccess } from './access.ts';
import { createAccessTokens } from './access-tokens.ts';
import { createAudit } from './audit.ts';
import { createAuditRepo } from './audit-repo.ts';
import { createOrgService } from './org-service.ts';
import { createOrgsRepo } from './orgs-repo.ts';
import { createPasswordHasher } from './passwords.ts';
import { createServiceAccountService } from './service-account-service.ts';
import { createServiceAccountsRepo } from './service-accounts-repo.ts';
import { createSessionService } from './session-service.ts';
import { createSessionsRepo } from './sessions-repo.ts';
import type { Actor } from './model.ts';
import type { SigningKey } from './signing-keys.ts';
import { createSignInThrottle } from './throttle.ts';
import { createThrottleRepo } from './throttle-repo.ts';
import { createUserService } from './user-service.ts';
import { createUsersRepo } from './users-repo.ts';

export type Identity = ReturnType<typeof createIdentity>;

/** Wires the identity service: repos → services. The composition root calls this once. */
export function createIdentity(deps: { db: Db; clock: Clock; config: Config; signingKeys: SigningKey[]; cursors: Cursors; onOrgDeleted: (orgId: string) => void }) {
  const { db, clock, config, cursors } = deps;
  const settings = createSettingsRepo(db);
  const prehashKey = settings.secret('password_prehash_key');
  const repos = {
    users: createUsersRepo(db),
    orgs: createOrgsRepo(db),
    serviceAccounts: createServiceAccountsRepo(db),
    sessions: createSessionsRepo(db),
  };
  const hasher = createPasswordHasher({ cost: config.bcryptCost, prehashKey });
  const access = createAccess(repos.orgs);
  const auditRepo = createAuditRepo(db);
  const audit = createAudit(auditRepo, clock, cursors);
  const throttle = createSignInThrottle(createThrottleRepo(db), clock, {
    maxFailuresPerAccount: config.loginMaxFailuresPerAccount,
    maxFailuresPerAddress: config.loginMaxFailuresPerAddress,
    windowSeconds: config.loginWindowSeconds,
  }, settings.secret('throttle_key_secret'));
  const tokens = createAccessTokens(deps.signingKeys, { issuer: config.jwtIssuer, audience: config.jwtAudience, ttlSeconds: config.tokenTtlSeconds }, clock);
  const sessions = createSessionService({
    db, clock, ...repos, access, tokens, hasher, throttle, audit,
    refreshIdleSeconds: config.refreshIdleSeconds,
    refreshMaxSeconds: config.refreshMaxSeconds,
  });
  return {
    access,
    audit,
    throttle,
    tokens,
    hasher,
    repos,
    sessions,
    orgs: createOrgService({ db, clock, cursors, orgs: repos.orgs, users: repos.users, access, audit, hasher, onOrgDeleted: deps.onOrgDeleted }),
    users: createUserService({ db, clock, cursors, users: repos.users, sessions: repos.sessions, audit, hasher, throttle }),
    serviceAccounts: createServiceAccountService({ db, clock, cursors, serviceAccounts: repos.serviceAccounts, sessions: repos.sessions, throttle, access, audit }),
    /** Verifies an access token and resolves its actor (used by every authenticated route). */
    async authenticate(token: string) {
      return sessions.resolveActor(await tokens.verify(token));
    },
    /**
     * The actor of a token verified earlier in this request, read again from the database: its
     * session, user or service account as they are now (401 when gone or revoked). Neither the
     * token's expiry nor the session's lifetime is checked again — both were valid when the request
     * began (a long upload outlives them).
     */
    reloadActor(actor: Actor) {
      return sessions.resolveActor({ sub: actor.id, sid: actor.sessionId, iat: 0, exp: Math.ceil((actor.accessExpiresAt ?? 0) / 1000) }, { recheck: true });
    },
    /**
     * Housekeeping: drops expired refresh tokens, ended sessions and throttle windows, in chunks
     * sized by their cost (jobs/chunk-pacing.ts), so that a night with many of them does not hold
     * the writer. Returns how many rows went.
     */
    async prune(ctl: { stopping: boolean } = { stopping: false }): Promise<number> {
      const now = clock.now();
      const { deleted } = await deleteInChunks(db, [
        (n) => repos.sessions.pruneTokens(now, n),
        (n) => repos.sessions.pruneSessions(now, now - 30 * 86_400_000, n),
        (n) => throttle.prune(now, n),
      ], { stopping: () => ctl.stopping });
      return deleted;
    },
    /** An organization's audit log, deleted in chunks by its purge before its row (ledger/ledger-service.ts). */
    orgData: { purgeOrgRows: (orgId: string, n: number): number => auditRepo.purgeOrgEntries(orgId, n) },
  };
}
