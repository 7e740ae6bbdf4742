import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createReadStream } from 'node:fs';

/** `n` bytes from the CSPRNG, base64url-encoded. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

export function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/**
 * sha256 (hex) over a file's bytes, streamed, then `label` and `value`: what else makes a request
 * what it is (an upload's mapping, a feed's format). The fingerprint of a request an
 * Idempotency-Key stands for.
 */
export async function sha256FileHex(path: string, label: string, value: string): Promise<string> {
  return (await sha256FileHexes(path, label, [value]))[0]!;
}

/** sha256FileHex of the file with each of `values`, the file read once. */
export async function sha256FileHexes(path: string, label: string, values: string[]): Promise<string[]> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  hash.update(`\0${label}\0`);
  return values.map((value) => hash.copy().update(value).digest('hex'));
}

/**
 * Constant-time comparison of two secrets of any length: both sides are hashed first, because
 * timingSafeEqual throws on unequal lengths and an early length check would leak the length.
 */
export function secretsEqual(a: string | Buffer, b: string | Buffer): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb);
}

/** Constant-time comparison of two digests (already the same length when both are valid). */
export function digestsEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
