import { randomBytes } from 'node:crypto';

/** Type prefixes of public ids (SPEC §2). */
export type IdPrefix = 'o' | 'u' | 'sa' | 'l' | 'c' | 'imp' | 'feed' | 'wh' | 'chg' | 'sf' | 'evt' | 'dlv' | 'job' | 'p';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'; // Crockford base32, lower case: URL-safe, no look-alikes

/** A random, opaque, URL-safe id with a type prefix: 128 bits of randomness, never sequential. */
export function newId(prefix: IdPrefix): string {
  const bytes = randomBytes(16);
  let out = `${prefix}_`;
  // 128 bits → 26 base32 digits (the last digit carries 3 bits)
  let acc = 0;
  let bits = 0;
  for (const b of bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(acc >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(acc << (5 - bits)) & 31];
  return out;
}

/** True when `id` looks like an id of the given type (cheap shape check before a lookup). */
export function isId(prefix: IdPrefix, id: string): boolean {
  return id.length === prefix.length + 27 && id.startsWith(`${prefix}_`) && /^[0-9a-z]+$/.test(id.slice(prefix.length + 1));
}
