import type { Clock } from '../clock.ts';
import { throttled } from '../errors.ts';
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
export function createSignInThrottle(repo: ThrottleRepo, clock: Clock, policy: ThrottlePolicy) {
  const windowMs = policy.windowSeconds * 1000;
  const limitOf = (key: ThrottleKey) => (key.startsWith('address:') ? policy.maxFailuresPerAddress : policy.maxFailuresPerAccount);

  return {
    /** Throws 429 when any key is over its limit in its current window. */
    assertAllowed(keys: ThrottleKey[]): void {
      const now = clock.now();
      let wait = 0;
      for (const key of keys) {
        const b = repo.findBucket(key);
        if (b && now < b.windowStartedAt + windowMs && b.failures >= limitOf(key)) {
          wait = Math.max(wait, b.windowStartedAt + windowMs - now);
        }
      }
      if (wait > 0) throw throttled(wait / 1000, `Too many failed sign-in attempts; try again in ${Math.ceil(wait / 1000)} seconds.`);
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
    /** Drops counters whose window has ended. */
    prune(): number {
      return repo.pruneBuckets(clock.now() - windowMs);
    },
  };
}
