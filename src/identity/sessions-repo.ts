import type { Db } from '../storage/db.ts';
import type { Session } from './model.ts';

interface SessionRow {
  id: string;
  user_id: string | null;
  service_account_id: string | null;
  created_at: number;
  last_used_at: number;
  expires_at: number;
  revoked_at: number | null;
  revoked_reason: string | null;
}

const COLS = 'id, user_id, service_account_id, created_at, last_used_at, expires_at, revoked_at, revoked_reason';

const toSession = (r: SessionRow): Session => ({
  id: r.id,
  userId: r.user_id,
  serviceAccountId: r.service_account_id,
  createdAt: r.created_at,
  lastUsedAt: r.last_used_at,
  expiresAt: r.expires_at,
  revokedAt: r.revoked_at,
  revokedReason: r.revoked_reason,
});

export type SessionsRepo = ReturnType<typeof createSessionsRepo>;

/** Sessions (refresh-token families) and their refresh tokens, stored as digests only. */
export function createSessionsRepo(db: Db) {
  const q = {
    byId: db.raw.prepare<[string], SessionRow>(`SELECT ${COLS} FROM sessions WHERE id = ?`),
    insert: db.raw.prepare(
      `INSERT INTO sessions (${COLS}) VALUES (@id, @userId, @serviceAccountId, @createdAt, @lastUsedAt, @expiresAt, @revokedAt, @revokedReason)`,
    ),
    touch: db.raw.prepare<[number, string]>('UPDATE sessions SET last_used_at = ? WHERE id = ?'),
    revoke: db.raw.prepare<[number, string, string]>('UPDATE sessions SET revoked_at = ?, revoked_reason = ? WHERE id = ? AND revoked_at IS NULL'),
    revokeUser: db.raw.prepare<[number, string, string, string]>(
      'UPDATE sessions SET revoked_at = ?, revoked_reason = ? WHERE user_id = ? AND id <> ? AND revoked_at IS NULL',
    ),
    revokeServiceAccount: db.raw.prepare<[number, string, string]>(
      'UPDATE sessions SET revoked_at = ?, revoked_reason = ? WHERE service_account_id = ? AND revoked_at IS NULL',
    ),
    insertToken: db.raw.prepare<[Buffer, string, number, number]>('INSERT INTO refresh_tokens (token_hash, session_id, issued_at, expires_at) VALUES (?, ?, ?, ?)'),
    // Atomic rotation: exactly one caller can mark a token used (RELIABILITY.md A6).
    useToken: db.raw.prepare<[number, Buffer], { session_id: string; expires_at: number }>(
      'UPDATE refresh_tokens SET used_at = ? WHERE token_hash = ? AND used_at IS NULL RETURNING session_id, expires_at',
    ),
    findToken: db.raw.prepare<[Buffer], { session_id: string; used_at: number | null; expires_at: number }>(
      'SELECT session_id, used_at, expires_at FROM refresh_tokens WHERE token_hash = ?',
    ),
    liveTokenExpiry: db.raw.prepare<[string], number | null>('SELECT max(expires_at) FROM refresh_tokens WHERE session_id = ? AND used_at IS NULL').pluck(),
    pruneSessions: db.raw.prepare<[number, number, number]>('DELETE FROM sessions WHERE id IN (SELECT id FROM sessions WHERE expires_at < ? OR revoked_at < ? LIMIT ?)'),
    pruneTokens: db.raw.prepare<[number, number]>('DELETE FROM refresh_tokens WHERE token_hash IN (SELECT token_hash FROM refresh_tokens WHERE expires_at < ? LIMIT ?)'),
  };
  return {
    /** Returns undefined if there is no such session. */
    findSession: (id: string): Session | undefined => {
      const r = q.byId.get(id);
      return r && toSession(r);
    },
    insertSession: (s: Session): void => void q.insert.run(s),
    touchSession: (id: string, at: number): void => void q.touch.run(at, id),
    /** Marks the session revoked (idempotent). */
    revokeSession: (id: string, at: number, reason: string): void => void q.revoke.run(at, reason, id),
    /** Revokes every session of the user except `exceptSessionId` (pass '' for all). */
    revokeSessionsOfUser: (userId: string, exceptSessionId: string, at: number, reason: string): number =>
      q.revokeUser.run(at, reason, userId, exceptSessionId).changes,
    revokeSessionsOfServiceAccount: (serviceAccountId: string, at: number, reason: string): number =>
      q.revokeServiceAccount.run(at, reason, serviceAccountId).changes,
    /** When the session's refresh token that can still be used expires; undefined when it has none. */
    liveRefreshTokenExpiry: (sessionId: string): number | undefined => q.liveTokenExpiry.get(sessionId) ?? undefined,
    insertRefreshToken: (tokenHash: Buffer, sessionId: string, issuedAt: number, expiresAt: number): void =>
      void q.insertToken.run(tokenHash, sessionId, issuedAt, expiresAt),
    /** Marks an unused token used and returns its session; undefined if unknown or already used. */
    useRefreshToken: (tokenHash: Buffer, at: number): { sessionId: string; expiresAt: number } | undefined => {
      const r = q.useToken.get(at, tokenHash);
      return r && { sessionId: r.session_id, expiresAt: r.expires_at };
    },
    findRefreshToken: (tokenHash: Buffer): { sessionId: string; usedAt: number | null; expiresAt: number } | undefined => {
      const r = q.findToken.get(tokenHash);
      return r && { sessionId: r.session_id, usedAt: r.used_at, expiresAt: r.expires_at };
    },
    /** Deletes up to `n` expired refresh tokens; returns how many went. */
    pruneTokens: (now: number, n: number): number => q.pruneTokens.run(now, n).changes,
    /** Deletes up to `n` sessions past their absolute end or revoked before `revokedBefore` (with their refresh tokens). */
    pruneSessions: (now: number, revokedBefore: number, n: number): number => q.pruneSessions.run(now, revokedBefore, n).changes,
  };
}
