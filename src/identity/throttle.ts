import { createHmac } from 'node:crypto';
import { clientOf } from '../client-address.ts';
import type { Clock } from '../clock.ts';
import { throttled } from '../errors.ts';
import { accountEmail } from '../normalize.ts';
import type { ThrottleRepo } from './throttle-repo.ts';

export interface ThrottlePolicy {
  maxFailuresPerAccount: number;
  maxFailuresPerAddress: number;
  windowSeconds: number;
}

export type ThrottleKey = `account:${string}` | `address:${string}` | `client:${string}`;

export type SignInThrottle = ReturnType<typeof createSignInThrottle>;

/**
 * Failed sign-in throttling per account (e-mail or client id) and per client address
 * (RELIABILITY.md A2): a fixed window opens at the first failure; once a key has `max` failures in
 * it, attempts are refused with 429 + Retry-After until the window ends — without checking the
 * password, so a throttled attacker learns nothing. The lockout is always time-bound.
 */
export function createSignInThrottle(repo: ThrottleRepo, clock: Clock, policy: ThrottlePolicy, keySecret: Buffer) {
  const windowMs = policy.windowSeconds * 1000;
  const limitOf = (key: ThrottleKey) => (key.startsWith('address:') ? policy.maxFailuresPerAddress : policy.maxFailuresPerAccount);
  /** Attempts admitted and still being checked, per key: each may still become a failure. */
  const inFlight = new Map<ThrottleKey, number>();

  /** Milliseconds until the keys' locks end: 0 unless failures (plus attempts still being checked) reached a key's limit in its window. */
  function lockedFor(keys: ThrottleKey[]): number {
    const now = clock.now();
    let wait = 0;
    for (const key of keys) {
      const b = repo.findBucket(key);
      const open = b !== undefined && now < b.windowStartedAt + windowMs;
      const failures = (open ? b.failures : 0) + (inFlight.get(key) ?? 0);
      if (failures >= limitOf(key)) wait = Math.max(wait, open ? b.windowStartedAt + windowMs - now : windowMs);
    }
    return wait;
  }

  /** The 429 of a lock lasting `wait` ms. */
  const lockedError = (wait: number, what = 'failed sign-in attempts') => throttled(wait / 1000, `Too many ${what}; try again in ${Math.ceil(wait / 1000)} seconds.`);

  /** Throws 429 when failures (plus attempts still being checked) reach a key's limit in its window. */
  function assertAllowed(keys: ThrottleKey[], what?: string): void {
    const wait = lockedFor(keys);
    if (wait > 0) throw lockedError(wait, what);
  }

  /**
   * The throttle key of a user account: a keyed digest (HMAC-SHA256 with a secret of the
   * installation) of its e-mail, lower case — sign-in, password changes and resets count on it
   * alike. Keyed, so that what someone typed as their e-mail, a password at times, can be read
   * back from the table neither as it is nor by trying a dictionary of digests.
   */
  const accountKey = (email: string): ThrottleKey => `account:${createHmac('sha256', keySecret).update(accountEmail(email)).digest('base64url')}`;

  /**
   * The throttle key of a client (service account): a keyed digest of the client id as sent, like
   * accountKey — what was typed there is a client secret at times (id and secret swapped), and the
   * table must hold no secret, not even one that failed.
   */
  const clientKey = (clientId: string): ThrottleKey => `client:${createHmac('sha256', keySecret).update(clientId).digest('base64url')}`;

  /**
   * The throttle key of a client address: whom it stands for (clientOf) — an IPv4 address, also one
   * carried in IPv6, or an IPv6 address's /64, whose 2^64 addresses one client may use each in turn
   * (counted by the full address, a client rotating through them was never throttled).
   */
  const addressKey = (ip: string): ThrottleKey => `address:${clientOf(ip)}`;

  return {
    accountKey,
    clientKey,
    addressKey,
    assertAllowed,
    lockedFor,
    lockedError,
    /**
     * Admits one attempt whose check takes time (a bcrypt compare): it counts as a possible
     * failure until the returned release() is called, so a burst of concurrent guesses cannot get
     * past the limit while earlier ones are still being checked. Call release() after recording
     * the outcome.
     */
    admit(keys: ThrottleKey[], what?: string): () => void {
      assertAllowed(keys, what);
      for (const key of keys) inFlight.set(key, (inFlight.get(key) ?? 0) + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        for (const key of keys) {
          const n = (inFlight.get(key) ?? 1) - 1;
          if (n <= 0) inFlight.delete(key);
          else inFlight.set(key, n);
        }
      };
    },
    /** Counts a failure against every key. Call inside a transaction. */
    recordFailure(keys: ThrottleKey[]): void {
      const now = clock.now();
      for (const key of keys) {
        const b = repo.findBucket(key);
        const fresh = !b || now >= b.windowStartedAt + windowMs;
        repo.saveBucket(key, fresh ? { failures: 1, windowStartedAt: now } : { failures: b.failures + 1, windowStartedAt: b.windowStartedAt });
      }
    },
    /** A successful sign-in clears the account's counter (not the address's). */
    recordSuccess(accountKey: ThrottleKey): void {
      repo.deleteBucket(accountKey);
    },
    /** Drops up to `n` counters whose window had ended at `now`; returns how many went. */
    prune(now: number, n: number): number {
      return repo.pruneBuckets(now - windowMs, n);
    },
  };
}
