import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

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
