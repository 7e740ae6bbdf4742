import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ConfigError } from '../config.ts';
import { StartupError } from '../storage/db.ts';
import { fsyncFile } from '../storage/durable-files.ts';
import { withFileLock } from '../storage/lock.ts';
import { notPermitted, notPermittedCode } from '../storage/access-errors.ts';
import { secretsDir } from '../storage/storage.ts';

/** One HS256 key. The newest key signs; every key in the file verifies. */
export interface SigningKey {
  kid: string;
  secret: Uint8Array;
  createdAt: number;
}

/**
 * A key as the file keeps it. What tells how long a key must stay (rotateSigningKeys): when a
 * process holding the data folder first found it the newest, so that it may have signed with it
 * (`signingFrom`), the longest token lifetime of such a process (`tokenTtlSeconds`), and when a
 * process holding the folder first found a newer key, so that no token is signed with it after
 * (`retiredAt`). Files written before these were kept have none of them.
 */
interface StoredKey {
  kid: string;
  k: string;
  createdAt: string;
  signingFrom?: string;
  tokenTtlSeconds?: number;
  retiredAt?: string;
}

interface KeyFile {
  keys: StoredKey[];
}

/** Clock skew allowed when a token's time claims are checked (access-tokens.ts). */
export const CLOCK_TOLERANCE_S = 30;
/** The longest access-token lifetime TOKEN_TTL_SECONDS allows (config.ts): for keys whose lifetime is not known. */
const MAX_TOKEN_TTL_SECONDS = 86_400;

const MIN_KEY_BYTES = 32; // RFC 7518 §3.2: an HS256 key must have at least 256 bits
export const KID_PATTERN = /^k[0-9a-z]{12}$/;


function keyFilePath(dataDir: string): string {
  return join(secretsDir(dataDir), 'jwt-keys.json');
}

function newKey(now: number): StoredKey {
  return { kid: `k${randomBytes(8).toString('hex').slice(0, 12)}`, k: randomBytes(MIN_KEY_BYTES).toString('base64url'), createdAt: new Date(now).toISOString() };
}

function writeKeyFile(dataDir: string, file: KeyFile): void {
  const dir = secretsDir(dataDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = keyFilePath(dataDir);
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, JSON.stringify(file, null, 2), { mode: 0o600 });
  chmodSync(tmp, 0o600); // also when a crash left a file of that name
  fsyncFile(tmp);
  renameSync(tmp, path); // atomic replace: a crash leaves the old or the new file, never half of one
  fsyncFile(dir);
}

function readKeyFile(path: string): KeyFile {
  const mode = statSync(path).mode & 0o777;
  if ((mode & 0o077) !== 0) {
    // a restart cannot mend it (exit 2): systemd's Restart=on-failure would start into it for ever
    throw new ConfigError(`${path} is readable by other users (mode ${mode.toString(8)}); run: chmod 600 ${path}`);
  }
  let file: KeyFile;
  try {
    file = JSON.parse(readFileSync(path, 'utf8')) as KeyFile;
  } catch (err) {
    // put there by root: the same file for every restart (exit 2), and no JSON error (an operator tester's case)
    const code = notPermittedCode(err);
    if (code) throw notPermitted('cannot read', path, code);
    throw new StartupError(`${path} is not valid JSON: ${(err as Error).message}`);
  }
  if (!Array.isArray(file.keys) || file.keys.length === 0) throw new StartupError(`${path} holds no keys`);
  return file;
}

/**
 * Loads the JWT signing keys from `<data>/secrets/jwt-keys.json`, generating the first key on
 * first start (never a constant in the code). Refuses to start when the file is readable by others
 * or holds a short key (RELIABILITY.md A4, A8).
 *
 * `signer`: the caller holds the data folder and signs access tokens of that lifetime with the
 * newest key (a server; also a command, which signs none, but the record is then only longer than
 * needed). The file records it: the newest key signs from now on, and every older one signs no
 * more from now on (no other process signs while this one holds the folder), so `keys rotate`
 * knows which keys may have signed tokens that are still alive.
 */
export function loadSigningKeys(dataDir: string, now: number = Date.now(), signer?: { tokenTtlSeconds: number }): SigningKey[] {
  return underKeyLock(dataDir, () => loadHoldingLock(dataDir, now, signer));
}

/**
 * Every reader and writer of the key file holds its lock (`jwt-keys.json.lock`): a server starting
 * and `keys rotate` beside it, or two rotations, each read the file, change it and write it whole,
 * and without the lock one's write undid the other's (a tester's racing rotations lost 116–147 of
 * ~700 new keys).
 */
function underKeyLock<T>(dataDir: string, fn: () => T): T {
  mkdirSync(secretsDir(dataDir), { recursive: true, mode: 0o700 });
  return withFileLock(keyFilePath(dataDir), fn);
}

function loadHoldingLock(dataDir: string, now: number, signer?: { tokenTtlSeconds: number }): SigningKey[] {
  const path = keyFilePath(dataDir);
  if (!existsSync(path)) writeKeyFile(dataDir, { keys: [newKey(now)] });
  const file = readKeyFile(path);
  const keys = file.keys.map((k) => {
    const secret = Buffer.from(String(k.k), 'base64url');
    if (!KID_PATTERN.test(String(k.kid))) throw new StartupError(`${path}: key id ${String(k.kid)} is malformed`);
    if (secret.length < MIN_KEY_BYTES) throw new StartupError(`${path}: key ${k.kid} has ${secret.length} bytes; at least ${MIN_KEY_BYTES} random bytes are required`);
    return { kid: k.kid, secret: new Uint8Array(secret), createdAt: Date.parse(k.createdAt) };
  });
  if (signer) {
    const at = new Date(now).toISOString();
    const newest = file.keys[file.keys.length - 1]!;
    let changed = false;
    if (!newest.signingFrom || (newest.tokenTtlSeconds ?? 0) < signer.tokenTtlSeconds || newest.retiredAt) {
      newest.signingFrom ??= at;
      newest.tokenTtlSeconds = Math.max(newest.tokenTtlSeconds ?? 0, signer.tokenTtlSeconds);
      delete newest.retiredAt; // only an older key becomes the newest by hand (a file edited or put back)
      changed = true;
    }
    for (const k of file.keys.slice(0, -1)) {
      if (k.retiredAt) continue;
      k.retiredAt = at;
      changed = true;
    }
    if (changed) writeKeyFile(dataDir, file);
  }
  return keys;
}

/** When a key's tokens may still be alive: never known to be retired, or retired less than a token lifetime (and the clock skew) ago. */
function mayVerifyLiveTokens(k: StoredKey, now: number): boolean {
  if (!k.retiredAt) return true;
  const retired = Date.parse(k.retiredAt);
  if (Number.isNaN(retired)) return true;
  // exp is rounded up to a whole second (access-tokens.ts): one more second
  return now < retired + ((k.tokenTtlSeconds ?? MAX_TOKEN_TTL_SECONDS) + CLOCK_TOLERANCE_S + 1) * 1000;
}

/**
 * Adds a new signing key, which a server signs with from its next start, and removes only the keys
 * whose tokens have all expired: those retired (a newer key found by a process holding the data
 * folder, loadSigningKeys) more than their token lifetime and the clock skew ago. Every other key
 * may have signed a token that is still alive, whether or not a server runs and however many
 * rotations came before (a tester's case: with the server stopped, the newest key was taken for
 * the one the last server signed with, which it was not after a rotation while it ran, and tokens
 * minutes old were refused after the restart). Returns the new key, the keys removed, and the key
 * the running or last server signed with when that is not the one replaced.
 */
export function rotateSigningKeys(dataDir: string, now: number = Date.now()): { kid: string; retired: string[]; signing?: string } {
  return underKeyLock(dataDir, () => {
    loadHoldingLock(dataDir, now); // checks the file (and makes the first key)
    const raw = readKeyFile(keyFilePath(dataDir));
    const kept = raw.keys.filter((k) => mayVerifyLiveTokens(k, now));
    const fresh = newKey(now);
    writeKeyFile(dataDir, { keys: [...kept, fresh] });
    const signing = kept.findLast((k) => k.signingFrom && !k.retiredAt);
    return { kid: fresh.kid, retired: raw.keys.filter((k) => !kept.includes(k)).map((k) => k.kid), ...(signing && signing !== kept[kept.length - 1] ? { signing: signing.kid } : {}) };
  });
}
