import { createHmac } from 'node:crypto';
import { AppError, invalidField } from '../errors.ts';
import { paths } from '../paths.ts';
import { workerCalls } from '../worker-calls.ts';
import { isCommonPassword } from './common-passwords.ts';

export const PASSWORD_MIN = 8;
export const PASSWORD_MAX = 256;

/** Whether the characters run up or down one by one (abcdefgh, 87654321): NIST SP 800-63B §3.1.1.2's "sequential characters". */
function isSequence(chars: readonly string[]): boolean {
  const points = chars.map((c) => c.codePointAt(0)!);
  const step = points[1]! - points[0]!;
  return Math.abs(step) === 1 && points.every((p, i) => i === 0 || p - points[i - 1]! === step);
}

/** The account a password is for: its identifiers are no password (ASVS 5.0 6.2.11, context-specific words). */
export interface PasswordOwner {
  email: string;
  name?: string | null;
}

/** Letters and digits only, lower case: `Ann.Lee@Acme.test` and `annlee@acmetest` are one text here. */
const identifierKey = (text: string) => text.normalize('NFKC').toLowerCase().replace(/[^\p{L}\p{N}]/gu, '');

/**
 * Whether the password is the account's e-mail address, the address's local part or the
 * account's name, whatever the case and punctuation (a security tester set their own address).
 */
function isOwnersIdentifier(password: string, owner: PasswordOwner): boolean {
  const key = identifierKey(password);
  if (!key) return false;
  const at = owner.email.lastIndexOf('@');
  return [owner.email, at > 0 ? owner.email.slice(0, at) : '', owner.name ?? ''].some((id) => identifierKey(id) === key);
}

/** Below this length a password must not be repetitive or sequential (ASVS 6.2.1 recommends 15 characters and more). */
const PATTERN_CHECKED_BELOW = 15;

/**
 * What the password policy (SPEC §3.1, RELIABILITY.md A1) finds wrong with a password: 8–256
 * characters, not one of the most common passwords, nor, under 15 characters, repetitive or
 * sequential characters (NIST SP 800-63B §3.1.1.2) — two characters or fewer over and over
 * (`aaaaaaaa`, eight spaces, `abababab`) or a run like `abcdefgh`. Longer ones are taken as they
 * are (A1's own test signs in with 64 × "é"). Undefined when it passes.
 */
export function passwordPolicyProblem(password: string, owner?: PasswordOwner): string | undefined {
  const chars = [...password];
  if (chars.length < PASSWORD_MIN) return `must be at least ${PASSWORD_MIN} characters`;
  if (chars.length > PASSWORD_MAX) return `must be at most ${PASSWORD_MAX} characters`;
  if (isCommonPassword(password)) return 'is one of the most common passwords; choose another';
  if (owner && isOwnersIdentifier(password, owner)) return "is the account's e-mail address or name, which others know; choose another";
  if (chars.length < PATTERN_CHECKED_BELOW && new Set(chars).size <= 2) return 'repeats one or two characters; choose one with more';
  if (chars.length < PATTERN_CHECKED_BELOW && isSequence(chars)) return 'is a run of consecutive characters; choose another';
  return undefined;
}

/** Throws 422 naming `field` when the password breaks the policy (passwordPolicyProblem), `owner`'s identifiers included. */
export function checkPasswordPolicy(password: string, field = 'password', owner?: PasswordOwner): void {
  const problem = passwordPolicyProblem(password, owner);
  if (problem) throw invalidField(field, problem);
}

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  verify(password: string, hash: string): Promise<boolean>;
  /** True for a hash made at a lower cost than new ones get (it is made again at the next sign-in). */
  needsRehash(hash: string): boolean;
  /** Spends the same time as a real verification and returns false (unknown accounts, A3). */
  verifyNothing(password: string): Promise<false>;
  close(): Promise<void>;
  /**
   * bcrypt operations run so far (observability and tests), and the work of the compares: the
   * sum of 2^cost, which is what their time is proportional to.
   */
  stats(): { hashes: number; compares: number; compareWork: number };
}

/** The cost a bcrypt hash was made at (0 for what is no bcrypt hash). */
/**
 * A bcrypt hash of no account at `cost`: a cost-4 hash (of "no such account") with one character
 * of its checksum changed and its cost field rewritten. A compare's work is set by the cost field
 * alone, and the checksum is no password's hash at any cost: nothing matches it. It was a real hash at the cost, made at the first
 * unknown e-mail after a start, whose answer then took a hash longer than the next ones.
 */
export const noAccountHash = (cost: number): string => `$2b$${String(cost).padStart(2, '0')}$yp9Hnpp3e43dGwUpJyAUX.qPRJb9ftGdBLHt7kuSCrTaos6yW2weG`;

const costOf = (hash: string): number => Number(/^\$2[aby]\$(\d\d)\$/.exec(hash)?.[1] ?? 0);

/** bcrypt's lowest cost. */
const MIN_COST = 4;

/**
 * bcrypt with an HMAC-SHA384 pre-hash, as OWASP's Password Storage Cheat Sheet describes: the
 * password is verified exactly as given, whatever its length (bcrypt alone truncates at 72 bytes),
 * and the installation key makes the inner hash useless outside this installation (no "shucking").
 * The work runs on one worker thread, with a bounded queue.
 */
export function createPasswordHasher(opts: { cost: number; prehashKey: Buffer; maxQueue?: number }): PasswordHasher {
  const prehash = (pw: string) => createHmac('sha384', opts.prehashKey).update(pw, 'utf8').digest('base64');
  const maxQueue = opts.maxQueue ?? 64;
  const calls = workerCalls<{ op: 'hash' | 'compare'; input: string; costOrHash: number | string }, { id: number; result?: unknown; error?: string }>(paths.bcryptWorker, 'the password hashing thread');

  const counts = { hashes: 0, compares: 0, compareWork: 0 };
  const run = async <T>(op: 'hash' | 'compare', input: string, costOrHash: number | string): Promise<T> => {
    if (calls.waiting() >= maxQueue) {
      throw new AppError(429, 'too_many_requests', 'Too many passwords are being checked or set right now; retry in a moment.', { headers: { 'Retry-After': '1' } });
    }
    if (op === 'hash') counts.hashes++;
    else {
      counts.compares++;
      counts.compareWork += 2 ** costOf(costOrHash as string);
    }
    const m = await calls.call({ op, input, costOrHash });
    if (m.error !== undefined) throw new Error(m.error);
    return m.result as T;
  };

  /** A compare at `cost` against a hash no password has (noAccountHash): the work of a real one, for nothing. */
  const compareNothing = (password: string, cost: number) => run<boolean>('compare', prehash(password), noAccountHash(cost));
  return {
    hash: (password) => run<string>('hash', prehash(password), opts.cost),
    async verify(password, hash) {
      const ok = await run<boolean>('compare', prehash(password), hash);
      // A wrong password against a hash from before BCRYPT_COST was raised takes as long as an
      // unknown e-mail's check at the new cost (A3): compares at the costs from the old one up to
      // the new one's, 2^old + 2^old + 2^(old+1) + … + 2^(new-1) = 2^new. Without them an account
      // not signed in since the raise answered 4× faster than an unknown address (cost 10 → 12),
      // and was found out (a contract tester's case). A right password is made again at the new
      // cost by the caller.
      if (!ok) for (let cost = Math.max(costOf(hash), MIN_COST); cost < opts.cost; cost++) await compareNothing(password, cost);
      return ok;
    },
    needsRehash: (hash) => costOf(hash) < opts.cost,
    async verifyNothing(password) {
      await compareNothing(password, opts.cost);
      return false;
    },
    stats: () => ({ ...counts }),
    close: () => calls.close(),
  };
}
