import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { StartupError } from '../storage/db.ts';
import { fsyncFile } from '../storage/durable-files.ts';

/** One HS256 key. The newest key signs; every key in the file verifies. */
export interface SigningKey {
  kid: string;
  secret: Uint8Array;
  createdAt: number;
}

interface KeyFile {
  keys: { kid: string; k: string; createdAt: string }[];
}

const MIN_KEY_BYTES = 32; // RFC 7518 §3.2: an HS256 key must have at least 256 bits
export const KID_PATTERN = /^k[0-9a-z]{12}$/;

export function secretsDir(dataDir: string): string {
  return join(dataDir, 'secrets');
}

function keyFilePath(dataDir: string): string {
  return join(secretsDir(dataDir), 'jwt-keys.json');
}

function newKey(now: number): KeyFile['keys'][number] {
  return { kid: `k${randomBytes(8).toString('hex').slice(0, 12)}`, k: randomBytes(MIN_KEY_BYTES).toString('base64url'), createdAt: new Date(now).toISOString() };
}

function writeKeyFile(dataDir: string, file: KeyFile): void {
  const dir = secretsDir(dataDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = keyFilePath(dataDir);
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, JSON.stringify(file, null, 2), { mode: 0o600 });
  fsyncFile(tmp);
  renameSync(tmp, path); // atomic replace: a crash leaves the old or the new file, never half of one
  fsyncFile(dir);
}

/**
 * Loads the JWT signing keys from `<data>/secrets/jwt-keys.json`, generating the first key on
 * first start (never a constant in the code). Refuses to start when the file is readable by others
 * or holds a short key (RELIABILITY.md A4, A8).
 */
export function loadSigningKeys(dataDir: string, now: number = Date.now()): SigningKey[] {
  const path = keyFilePath(dataDir);
  if (!existsSync(path)) writeKeyFile(dataDir, { keys: [newKey(now)] });
  const mode = statSync(path).mode & 0o777;
  if ((mode & 0o077) !== 0) {
    throw new StartupError(`${path} is readable by other users (mode ${mode.toString(8)}); run: chmod 600 ${path}`);
  }
  let file: KeyFile;
  try {
    file = JSON.parse(readFileSync(path, 'utf8')) as KeyFile;
  } catch (err) {
    throw new StartupError(`${path} is not valid JSON: ${(err as Error).message}`);
  }
  if (!Array.isArray(file.keys) || file.keys.length === 0) throw new StartupError(`${path} holds no keys`);
  return file.keys.map((k) => {
    const secret = Buffer.from(String(k.k), 'base64url');
    if (!KID_PATTERN.test(String(k.kid))) throw new StartupError(`${path}: key id ${String(k.kid)} is malformed`);
    if (secret.length < MIN_KEY_BYTES) throw new StartupError(`${path}: key ${k.kid} has ${secret.length} bytes; at least ${MIN_KEY_BYTES} random bytes are required`);
    return { kid: k.kid, secret: new Uint8Array(secret), createdAt: Date.parse(k.createdAt) };
  });
}

/**
 * Adds a new signing key and keeps the one it replaces, so tokens signed before the rotation stay
 * valid until they expire. A running server picks the new key up at its next start; until then it
 * signs with the newest key it found at its start (`running.since`: when the server holding the
 * data folder started), so that key and every later one are kept too: a second rotation before
 * the restart retired the key the server still signed with, and every token it had issued failed
 * after the restart. And while that server started less than a token lifetime ago, the keys before
 * its own are kept as well: the server before it signed with one of them until this one started,
 * and those tokens live on until they expire (seventeenth session).
 */
export function rotateSigningKeys(dataDir: string, now: number = Date.now(), running?: { since: number; tokenTtlMs: number }): { kid: string; retired: string[]; stillSigning?: string } {
  loadSigningKeys(dataDir, now); // checks the file (and makes the first key)
  const raw = JSON.parse(readFileSync(keyFilePath(dataDir), 'utf8')) as KeyFile;
  const fresh = newKey(now);
  // the newest key made before the server started; none: the server made the first one at its start
  const signing = running ? Math.max(0, raw.keys.findLastIndex((k) => Date.parse(k.createdAt) <= running.since)) : -1;
  const from = !running ? raw.keys.length - 1 : now < running.since + running.tokenTtlMs ? 0 : Math.min(raw.keys.length - 1, signing);
  writeKeyFile(dataDir, { keys: [...raw.keys.slice(from), fresh] });
  chmodSync(keyFilePath(dataDir), 0o600);
  return { kid: fresh.kid, retired: raw.keys.slice(0, from).map((k) => k.kid), ...(signing >= 0 && signing < raw.keys.length - 1 ? { stillSigning: raw.keys[signing]!.kid } : {}) };
}
